/*
 * parallel.c - the thread setting, and disp__parallel_for over the
 * library's own pool of worker threads (one concept: the threads that
 * run kernels).
 *
 * Note [One pool]: the library's threads are this pool's; OpenBLAS is held
 * at one thread (gemm.c splits a product across this pool instead). Two
 * pools on the same cores each spin waiting for work after a call and
 * steal the cores from the other: libtorch with OpenMP 2 and OpenBLAS 2 on
 * 2 cores trains an MLP 2.7x slower than on one thread.
 *
 * Note [The caller claims blocks] (issue 18): a region is cut into blocks
 * (up to BLOCKS_PER_THREAD per thread) that any thread of the team claims
 * from one counter, the calling thread too, and the region ends when every
 * block is FINISHED, not when every worker has checked in. A worker the OS
 * has not scheduled (another process holds its core) then costs nothing:
 * the caller takes its blocks. OpenMP's fork-join (libgomp, and LLVM's
 * libomp) waits at the closing barrier for every thread of the team, so on
 * 2 cores beside one busy process the default 2 threads ran slower than 1
 * (bench/contention: add of 1M floats 1.4x, an MLP forward 1.5x). Idle
 * workers look for the next job for a microsecond or two (SPIN_PAUSES),
 * then sleep on a condition variable: a worker spinning longer shares a
 * core with the caller or the busy process and either slows the caller or
 * is preempted inside a block it claimed (measured with spins of 5 to 200
 * us: every one ran slower than 1 thread under contention; a worker that
 * slept is favoured by the scheduler when woken). The cost is a wake-up
 * per region on a quiet machine when calls are not back to back, which
 * the caller does not wait for: it starts on the blocks at once. libgomp's
 * OMP_WAIT_POLICY=passive and libomp's KMP_BLOCKTIME=0 also sleep, but
 * their barrier waits for the wake-up: add of 64k floats 2x slower than 1
 * thread, quiet or not. A worker reads the job and claims a block with one
 * CAS on a word holding (generation, next block): a worker late from an
 * old job fails its CAS and never runs a block of the new one.
 *
 * One region at a time: a second thread calling in while the pool is busy
 * (a user's threads calling kernels at once) runs its range inline, as a
 * nested call does. The pool grows on demand to disp_get_num_threads() - 1
 * workers (at most MAX_WORKERS), is rebuilt empty in a forked child, and
 * is stopped and joined when the library is unloaded or the process exits.
 *
 * Note [Fixed partitions]: disp__parallel_for hands out ranges whose
 * bounds depend on the thread count, so every caller whose floating result
 * could depend on where a range starts cuts its work into blocks chosen
 * from the problem (shape, layout, dtype) alone and lets each thread take
 * whole blocks; 1, 2 or 3 threads then do the same operations in the same
 * order (and make the same BLAS calls: Note [Threaded gemm]). Which thread
 * runs a range does not matter either. Audited (issue 18), every call site
 * of disp__parallel_for / disp__gemm_blocks:
 *   gemm.c         fixed row/column blocks of C, never k (Note [Threaded gemm])
 *   linalg.c       bmm: one whole product per batch, each one BLAS call set
 *   reduce.c       sum/mean: block_len(len) from the row length; rows whole
 *   softmax.c      whole rows, or COL_BLOCK column blocks
 *   loss.c         nll_loss: NLL_BLOCK samples a block, block sums in order
 *                  (Note [Deterministic loss sums]); grad rows independent
 *   conv_prim.h    im2col/col2im by channel (copies, each x element gets its
 *                  taps in tap order); samples whole; weight grad in
 *                  wgrad_chunks(shape) chunks added in chunk order; bias
 *                  grad per channel, planes in sample order
 *   pool.c         whole planes (max and its scatter: no sums across planes)
 *   tensor_iter.c  pointwise runs in TITER_BLOCK-aligned blocks (Note
 *                  [Parallel pointwise]); reductions into operand 0 serial
 *   cpu/ kernels   kernels run on one thread's range; their vector/tail
 *                  split depends on the range, which the callers above fix
 * Pointwise work whose elements are independent needs no more than that.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <disp/cpu.h>

#include "error_internal.h"

/* 0 until first read: the environment decides then. */
static atomic_int g_num_threads;

/* A positive count from environment variable `name`, or 0. */
static int env_threads(const char *name) {
  const char *s = getenv(name);
  if (!s || !*s) return 0;
  char *end;
  long v = strtol(s, &end, 10);
  return (*end == '\0' && v >= 1 && v <= 4096) ? (int)v : 0;
}

/* The cores this process may run on (its affinity mask), as
 * omp_get_num_procs counts them. */
static int available_cores(void) {
#ifdef CPU_COUNT
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n >= 1 ? (int)n : 1;
}

static int default_threads(void) {
  int n = env_threads("DISP_NUM_THREADS");
  if (!n) n = env_threads("OMP_NUM_THREADS");
  if (!n) n = available_cores();
  return n >= 1 ? n : 1;
}

int disp_get_num_threads(void) {
  int n = atomic_load_explicit(&g_num_threads, memory_order_relaxed);
  if (n) return n;
  int zero = 0;
  atomic_compare_exchange_strong(&g_num_threads, &zero, default_threads());
  return atomic_load(&g_num_threads);
}

disp_status disp_set_num_threads(int n) {
  if (n < 1)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_set_num_threads: Expected positive number of threads, got %d",
                      n);
  atomic_store(&g_num_threads, n);
  return DISP_OK;
}

/* The calling thread's index in the region it runs a range of (workers:
 * their number, fixed), and whether it runs one now. */
static _Thread_local int tl_index;
static _Thread_local int tl_in_region;

int disp__in_parallel_region(void) {
#ifdef _OPENMP
  if (omp_in_parallel()) return 1; /* a user's OpenMP team calling us */
#endif
  return tl_in_region;
}

int disp__thread_index(void) { return tl_in_region ? tl_index : 0; }

#ifndef DISP_SERIAL

/* An idle worker looks for the next job this many times (a pause each,
 * 1-3 us in all) before it sleeps: enough for the next region of
 * back-to-back calls, far too short to hold a core another process needs
 * (Note [The caller claims blocks]). */
enum { BLOCKS_PER_THREAD = DISP_BLOCKS_PER_THREAD, MAX_WORKERS = 255, SPIN_PAUSES = 64 };
/* The job word: generation in the high 32 bits, the next unclaimed block
 * below. Everything else of a job is written before the word publishes it
 * and is stable until its blocks are all finished (workers read it with
 * relaxed atomics and trust it only after a successful claim). */
static struct {
  _Atomic uint64_t word;
  _Atomic(disp__range_fn) fn;
  _Atomic(void *) ctx;
  _Atomic int64_t begin, end, chunk;
  atomic_int nblocks, team;
  atomic_int done;         /* blocks finished in this generation */
  atomic_flag busy;        /* a caller owns the pool */
  atomic_int sleepers;     /* workers waiting on `wake` */
  atomic_int stop;         /* set once: workers return */
  pthread_mutex_t mu;      /* guards the sleep of a worker only */
  pthread_cond_t wake;
  int workers;             /* started, owned by the caller holding busy */
  pthread_t tid[MAX_WORKERS];
  uint32_t first_gen[MAX_WORKERS]; /* the generation a worker starts after */
} g_pool = {.busy = ATOMIC_FLAG_INIT, .mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static uint32_t word_gen(uint64_t w) { return (uint32_t)(w >> 32); }

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Claims and runs blocks of the job `w` was read from, as thread `me`,
 * until none is left or the job is no longer current. */
static void run_blocks(int me, uint64_t w) {
  uint32_t gen = word_gen(w);
  for (;;) {
    int n = atomic_load_explicit(&g_pool.nblocks, memory_order_relaxed);
    int team = atomic_load_explicit(&g_pool.team, memory_order_relaxed);
    if (word_gen(w) != gen || me >= team || (int64_t)(uint32_t)w >= n) return;
    if (!atomic_compare_exchange_weak_explicit(&g_pool.word, &w, w + 1, memory_order_acquire,
                                               memory_order_acquire))
      continue; /* w reloaded: another claim, or a newer job */
    /* Claimed: the job cannot change until this block is counted done. */
    int64_t begin = atomic_load_explicit(&g_pool.begin, memory_order_relaxed);
    int64_t end = atomic_load_explicit(&g_pool.end, memory_order_relaxed);
    int64_t chunk = atomic_load_explicit(&g_pool.chunk, memory_order_relaxed);
    int64_t lo = begin + (int64_t)(uint32_t)w * chunk, hi = lo + chunk < end ? lo + chunk : end;
    atomic_load_explicit(&g_pool.fn, memory_order_relaxed)(lo, hi,
                                                           atomic_load_explicit(&g_pool.ctx, memory_order_relaxed));
    atomic_fetch_add_explicit(&g_pool.done, 1, memory_order_release);
    w = atomic_load_explicit(&g_pool.word, memory_order_acquire);
  }
}

/* Waits for a job word of a generation after `seen`: SPIN_PAUSES looks,
 * then asleep. Returns the word, or 0 when the pool stops. */
static uint64_t wait_for_job(uint32_t seen) {
  for (int i = 0; i < SPIN_PAUSES; i++) {
    uint64_t w = atomic_load_explicit(&g_pool.word, memory_order_acquire);
    if (atomic_load_explicit(&g_pool.stop, memory_order_relaxed)) return 0;
    if (word_gen(w) != seen) return w;
    cpu_relax();
  }
  pthread_mutex_lock(&g_pool.mu);
  atomic_fetch_add(&g_pool.sleepers, 1); /* seq_cst: pairs with publish() */
  uint64_t w;
  while (word_gen(w = atomic_load(&g_pool.word)) == seen && !atomic_load(&g_pool.stop))
    pthread_cond_wait(&g_pool.wake, &g_pool.mu);
  atomic_fetch_sub(&g_pool.sleepers, 1);
  pthread_mutex_unlock(&g_pool.mu);
  return atomic_load(&g_pool.stop) ? 0 : w;
}

static void *worker_main(void *arg) {
  int me = (int)(intptr_t)arg;
  tl_index = me;
  tl_in_region = 1; /* a worker only ever runs ranges: kernels it calls run inline */
  uint32_t seen = g_pool.first_gen[me - 1];
  for (;;) {
    uint64_t w = wait_for_job(seen);
    if (!w) return NULL;
    seen = word_gen(w);
    run_blocks(me, w);
  }
}

/* Stops and joins the workers (process exit, library unload). */
__attribute__((destructor)) static void pool_stop(void) {
  if (!g_pool.workers) return;
  pthread_mutex_lock(&g_pool.mu);
  atomic_store(&g_pool.stop, 1);
  pthread_cond_broadcast(&g_pool.wake);
  pthread_mutex_unlock(&g_pool.mu);
  for (int i = 0; i < g_pool.workers; i++) pthread_join(g_pool.tid[i], NULL);
  g_pool.workers = 0;
}

/* In a forked child the workers do not exist: start over with none. */
static void pool_after_fork(void) {
  g_pool.workers = 0;
  atomic_store(&g_pool.sleepers, 0);
  atomic_store(&g_pool.stop, 0);
  atomic_flag_clear(&g_pool.busy);
  pthread_mutex_init(&g_pool.mu, NULL);
  pthread_cond_init(&g_pool.wake, NULL);
}

static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;
static void register_atfork(void) { pthread_atfork(NULL, NULL, pool_after_fork); }

/* Starts workers until `want` run (fewer if the system refuses threads).
 * Called by the owner of the pool. Returns how many run. */
static int grow(int want, uint32_t gen) {
  if (want > MAX_WORKERS) want = MAX_WORKERS;
  if (g_pool.workers >= want) return g_pool.workers;
  pthread_once(&g_atfork_once, register_atfork);
  pthread_attr_t attr;
  if (pthread_attr_init(&attr)) return g_pool.workers;
  while (g_pool.workers < want) {
    int i = g_pool.workers;
    g_pool.first_gen[i] = gen;
    if (pthread_create(&g_pool.tid[i], &attr, worker_main, (void *)(intptr_t)(i + 1))) break;
    g_pool.workers++;
  }
  pthread_attr_destroy(&attr);
  return g_pool.workers;
}

/* Publishes a job and wakes sleeping workers. Owner only. */
static void publish(uint64_t word) {
  atomic_store(&g_pool.word, word); /* seq_cst: pairs with wait_for_job() */
  if (atomic_load(&g_pool.sleepers) > 0) {
    pthread_mutex_lock(&g_pool.mu);
    pthread_cond_broadcast(&g_pool.wake);
    pthread_mutex_unlock(&g_pool.mu);
  }
}

/* Runs fn over [begin, end) on the pool in blocks of `chunk`; 0, or -1
 * when the pool is taken (the caller then runs the range itself). */
static int pool_run(int64_t begin, int64_t end, int64_t chunk, int threads, disp__range_fn fn, void *ctx) {
  if (atomic_flag_test_and_set_explicit(&g_pool.busy, memory_order_acquire)) return -1;
  uint64_t old = atomic_load_explicit(&g_pool.word, memory_order_relaxed);
  uint32_t gen = word_gen(old) + 1;
  if (gen == 0) gen = 1; /* word 0 means "stop" to a waiting worker */
  int team = grow(threads - 1, word_gen(old)) + 1;
  if (team > threads) team = threads;
  int n = (int)((end - begin + chunk - 1) / chunk);
  atomic_store_explicit(&g_pool.fn, fn, memory_order_relaxed);
  atomic_store_explicit(&g_pool.ctx, ctx, memory_order_relaxed);
  atomic_store_explicit(&g_pool.begin, begin, memory_order_relaxed);
  atomic_store_explicit(&g_pool.end, end, memory_order_relaxed);
  atomic_store_explicit(&g_pool.chunk, chunk, memory_order_relaxed);
  atomic_store_explicit(&g_pool.nblocks, n, memory_order_relaxed);
  atomic_store_explicit(&g_pool.team, team, memory_order_relaxed);
  atomic_store_explicit(&g_pool.done, 0, memory_order_relaxed);
  if (team > 1) publish((uint64_t)gen << 32);
  else atomic_store(&g_pool.word, (uint64_t)gen << 32);
  tl_in_region = 1, tl_index = 0;
  run_blocks(0, (uint64_t)gen << 32);
  /* Every block is claimed: wait for the ones still running elsewhere
   * (a worker preempted in a block may need the caller's core: yield). */
  for (int i = 0; atomic_load_explicit(&g_pool.done, memory_order_acquire) < n; i++)
    if (i < 1024) cpu_relax();
    else sched_yield();
  tl_in_region = 0;
  atomic_flag_clear_explicit(&g_pool.busy, memory_order_release);
  return 0;
}

#endif /* DISP_SERIAL */

void disp__parallel_for(int64_t begin, int64_t end, int64_t grain, disp__range_fn fn, void *ctx) {
  if (begin >= end) return;
  int64_t n = end - begin;
  int64_t threads = disp_get_num_threads();
  if (grain < 1) grain = 1;
  if (n <= grain || threads <= 1 || disp__in_parallel_region()) {
    fn(begin, end, ctx);
    return;
  }
#ifndef DISP_SERIAL
  int64_t most = (n + grain - 1) / grain;
  if (threads > most) threads = most;
  if (threads > MAX_WORKERS + 1) threads = MAX_WORKERS + 1;
  int64_t blocks = threads * BLOCKS_PER_THREAD < most ? threads * BLOCKS_PER_THREAD : most;
  if (pool_run(begin, end, (n + blocks - 1) / blocks, (int)threads, fn, ctx) == 0) return;
#endif
  fn(begin, end, ctx);
}
