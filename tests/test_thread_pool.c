/*
 * test_thread_pool - the library's thread pool (src/kernels/parallel.c,
 * Note [The caller claims blocks]): a worker really takes blocks while the
 * caller works, the thread setting is honoured in both directions, every
 * index runs exactly once over many back-to-back regions and from two
 * calling threads at once, nested calls run inline on the same thread, and
 * a forked child gets a working pool of its own. Built with
 * DISP_THREADS=OFF only the cases that hold for one thread run.
 *
 * No timing: where a case needs every thread to show up, each block waits
 * until every thread holds one (up to WAIT_S seconds: a failure, not a
 * measure).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "parallel.h"
#include "test.h"

enum { WAIT_S = 30, N = 4096 };

typedef struct probe {
  atomic_uint mask;      /* bit i: thread index i ran a block */
  atomic_int calls;
  atomic_int hits[N];    /* how often each index ran */
  int want;              /* every block waits until this many indices ran one */
  atomic_int timed_out;
  atomic_int bad_nest;   /* a nested call not inline, or on another index */
} probe;

static probe g_p;

static void probe_reset(int want) {
  atomic_store(&g_p.mask, 0);
  atomic_store(&g_p.calls, 0);
  for (int i = 0; i < N; i++) atomic_store(&g_p.hits[i], 0);
  g_p.want = want;
  atomic_store(&g_p.timed_out, 0);
  atomic_store(&g_p.bad_nest, 0);
}

static int popcount(unsigned m) {
  int n = 0;
  for (; m; m &= m - 1) n++;
  return n;
}

static void note(int64_t lo, int64_t hi) {
  int t = disp__thread_index();
  atomic_fetch_or(&g_p.mask, 1u << (t < 31 ? t : 31));
  atomic_fetch_add(&g_p.calls, 1);
  for (int64_t i = lo; i < hi; i++) atomic_fetch_add(&g_p.hits[i], 1);
}

/* Marks the range, then waits until `want` thread indices have run a
 * block: with as many blocks as threads, a thread holds its block until
 * every other one took one (a barrier only a working pool passes). */
static void mark(int64_t lo, int64_t hi, void *ctx) {
  (void)ctx;
  note(lo, hi);
  if (!g_p.want) return;
  time_t until = time(NULL) + WAIT_S;
  while (popcount(atomic_load(&g_p.mask)) < g_p.want)
    if (time(NULL) > until) {
      atomic_store(&g_p.timed_out, 1);
      return;
    }
}

static int covered_once(int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (atomic_load(&g_p.hits[i]) != 1) return 0;
  return 1;
}

TEST(a_worker_takes_blocks_while_the_caller_works) {
#ifdef DISP_TEST_THREADS
  ASSERT_OK(disp_set_num_threads(2));
  probe_reset(2);
  disp__parallel_for(0, 2, 1, mark, NULL); /* two blocks: the caller holds one until a worker took the other */
  ASSERT_EQ_INT(atomic_load(&g_p.timed_out), 0);
  ASSERT_EQ_INT(atomic_load(&g_p.mask), 3);
  ASSERT_TRUE(covered_once(2));
#endif
  return 0;
}

TEST(the_thread_setting_is_honoured_both_ways) {
#ifdef DISP_TEST_THREADS
  ASSERT_OK(disp_set_num_threads(3));
  probe_reset(3);
  disp__parallel_for(0, 3, 1, mark, NULL); /* three threads take part */
  ASSERT_EQ_INT(atomic_load(&g_p.timed_out), 0);
  ASSERT_EQ_INT(atomic_load(&g_p.mask), 7);
  /* Down to 2: the third worker exists but takes no block. */
  ASSERT_OK(disp_set_num_threads(2));
  for (int r = 0; r < 200; r++) {
    probe_reset(0);
    disp__parallel_for(0, 64, 1, mark, NULL);
    ASSERT_EQ_INT(atomic_load(&g_p.mask) & ~3u, 0);
    ASSERT_TRUE(covered_once(64));
  }
#endif
  /* Down to 1: one call on the calling thread. */
  ASSERT_OK(disp_set_num_threads(1));
  probe_reset(0);
  disp__parallel_for(0, 64, 1, mark, NULL);
  ASSERT_EQ_INT(atomic_load(&g_p.mask), 1);
  ASSERT_EQ_INT(atomic_load(&g_p.calls), 1);
  return 0;
}

TEST(every_index_once_over_many_back_to_back_regions) {
  /* Workers late from one region must never run a block of the next. */
  for (int t = 1; t <= 4; t++) {
    ASSERT_OK(disp_set_num_threads(t));
    for (int r = 0; r < 500; r++) {
      int64_t n = 1 + (r * 37) % N;
      probe_reset(0);
      disp__parallel_for(0, n, 1 + r % 5, mark, NULL);
      ASSERT_TRUE(covered_once(n));
      ASSERT_TRUE(atomic_load(&g_p.calls) <= DISP_BLOCKS_PER_THREAD * t);
      ASSERT_EQ_INT(atomic_load(&g_p.mask) >> t, 0); /* indices below the setting */
    }
  }
  return 0;
}

static void nested_inner(int64_t lo, int64_t hi, void *ctx) {
  int outer_index = (int)(intptr_t)ctx;
  if (disp__thread_index() != outer_index || !disp__in_parallel_region()) atomic_fetch_add(&g_p.bad_nest, 1);
  note(lo, hi);
}

static void nested_outer(int64_t lo, int64_t hi, void *ctx) {
  (void)ctx;
  for (int64_t i = lo; i < hi; i++) {
    disp__parallel_for(i * 64, i * 64 + 64, 1, nested_inner, (void *)(intptr_t)disp__thread_index());
  }
}

TEST(nested_calls_run_inline_on_the_same_thread) {
  ASSERT_OK(disp_set_num_threads(2));
  probe_reset(0);
  ASSERT_FALSE(disp__in_parallel_region());
  disp__parallel_for(0, 16, 1, nested_outer, NULL);
  ASSERT_EQ_INT(atomic_load(&g_p.bad_nest), 0);
  ASSERT_EQ_INT(atomic_load(&g_p.calls), 16); /* one inline call per inner range */
  ASSERT_TRUE(covered_once(16 * 64));
  ASSERT_FALSE(disp__in_parallel_region()); /* the caller left the region */
  ASSERT_EQ_INT(disp__thread_index(), 0);
  return 0;
}

/* Two threads each running regions over their own half of g_p.hits. */
static void *caller_main(void *arg) {
  int64_t base = (int64_t)(intptr_t)arg;
  for (int r = 0; r < 300; r++) disp__parallel_for(base, base + N / 2, 7, mark, NULL);
  return NULL;
}

TEST(two_calling_threads_at_once) {
  ASSERT_OK(disp_set_num_threads(2));
  probe_reset(0);
  pthread_t a, b;
  ASSERT_EQ_INT(pthread_create(&a, NULL, caller_main, (void *)(intptr_t)0), 0);
  ASSERT_EQ_INT(pthread_create(&b, NULL, caller_main, (void *)(intptr_t)(N / 2)), 0);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  for (int i = 0; i < N; i++) ASSERT_EQ_INT(atomic_load(&g_p.hits[i]), 300);
  return 0;
}

/* ThreadSanitizer refuses to start threads in the child of a multithreaded
 * fork (die_after_fork): its build skips the forking case. */
#if defined(__SANITIZE_THREAD__)
#define DISP_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DISP_TEST_TSAN 1
#endif
#endif

TEST(a_forked_child_gets_a_pool_of_its_own) {
#ifdef DISP_TEST_TSAN
  return 0;
#endif
  ASSERT_OK(disp_set_num_threads(2));
  probe_reset(0);
  disp__parallel_for(0, 64, 1, mark, NULL); /* the parent's worker exists now */
  ASSERT_TRUE(covered_once(64));
  pid_t pid = fork();
  ASSERT_TRUE(pid >= 0);
  if (pid == 0) {
    int ok = 1;
    for (int r = 0; r < 50 && ok; r++) {
      probe_reset(0);
      disp__parallel_for(0, 64, 1, mark, NULL);
      ok = covered_once(64);
    }
#ifdef DISP_TEST_THREADS
    probe_reset(2); /* a worker of the child's own takes a block */
    disp__parallel_for(0, 2, 1, mark, NULL);
    ok = ok && !atomic_load(&g_p.timed_out) && atomic_load(&g_p.mask) == 3;
#endif
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ_INT(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  probe_reset(0); /* and the parent's pool still works */
  disp__parallel_for(0, 64, 1, mark, NULL);
  ASSERT_TRUE(covered_once(64));
  return 0;
}

TEST_LIST = {TEST_ENTRY(a_worker_takes_blocks_while_the_caller_works),
             TEST_ENTRY(the_thread_setting_is_honoured_both_ways),
             TEST_ENTRY(every_index_once_over_many_back_to_back_regions),
             TEST_ENTRY(nested_calls_run_inline_on_the_same_thread),
             TEST_ENTRY(two_calling_threads_at_once),
             TEST_ENTRY(a_forked_child_gets_a_pool_of_its_own),
             TEST_END};
TEST_MAIN()
