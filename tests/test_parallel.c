/*
 * test_parallel - the thread setting and disp__parallel_for's contract:
 * every index exactly once, in chunks of at least the grain, inline when
 * small or nested, and the errors of disp_set_num_threads.
 */
#include <stdatomic.h>

#include "parallel.h"
#include "test.h"

#define N 200000

typedef struct {
  atomic_int hits[N];
  atomic_int calls;
  atomic_int outer_chunks;
} cover;

static void mark(int64_t b, int64_t e, void *ctx) {
  cover *c = ctx;
  atomic_fetch_add(&c->calls, 1);
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&c->hits[i], 1);
}

static cover *run(int threads, int64_t begin, int64_t end, int64_t grain) {
  static cover c;
  memset(&c, 0, sizeof c);
  if (disp_set_num_threads(threads) != DISP_OK) return NULL;
  disp__parallel_for(begin, end, grain, mark, &c);
  return &c;
}

static int covered_once(const cover *c, int64_t begin, int64_t end) {
  for (int64_t i = 0; i < N; i++)
    if (atomic_load(&c->hits[i]) != (i >= begin && i < end)) return 0;
  return 1;
}

TEST(every_index_exactly_once_at_any_thread_count) {
  for (int t = 1; t <= 4; t++) {
    cover *c = run(t, 3, N, 1000);
    ASSERT_TRUE(c != NULL);
    ASSERT_TRUE(covered_once(c, 3, N));
    ASSERT_TRUE(atomic_load(&c->calls) >= 1 && atomic_load(&c->calls) <= DISP_BLOCKS_PER_THREAD * t);
  }
  return 0;
}

TEST(small_ranges_and_one_thread_run_inline) {
  cover *c = run(4, 0, 100, DISP_GRAIN_SIZE);
  ASSERT_EQ_INT(atomic_load(&c->calls), 1);
  ASSERT_TRUE(covered_once(c, 0, 100));
  c = run(1, 0, N, 10);
  ASSERT_EQ_INT(atomic_load(&c->calls), 1);
  c = run(4, 5, 5, 1); /* empty range: fn never called */
  ASSERT_EQ_INT(atomic_load(&c->calls), 0);
  return 0;
}

TEST(chunks_respect_the_grain) {
  /* 3 chunks of 10 would be below a grain of 15: at most 2 chunks. */
  cover *c = run(3, 0, 30, 15);
  ASSERT_TRUE(atomic_load(&c->calls) <= 2);
  ASSERT_TRUE(covered_once(c, 0, 30));
  return 0;
}

static void outer(int64_t b, int64_t e, void *ctx) {
  cover *c = ctx;
  atomic_fetch_add(&c->outer_chunks, 1);
  /* A kernel called from a region runs on this thread: one call, whatever
   * the range and grain. */
  disp__parallel_for(b * 1000, e * 1000, 1, mark, c);
}

TEST(regions_never_nest) {
  static cover c;
  memset(&c, 0, sizeof c);
  ASSERT_OK(disp_set_num_threads(2));
  disp__parallel_for(0, 2, 1, outer, &c);
  ASSERT_EQ_INT(atomic_load(&c.calls), atomic_load(&c.outer_chunks));
  ASSERT_TRUE(covered_once(&c, 0, 2000));
  return 0;
}

TEST(thread_setting_and_its_errors) {
  ASSERT_OK(disp_set_num_threads(3));
  ASSERT_EQ_INT(disp_get_num_threads(), 3);
  ASSERT_EQ_INT(disp_set_num_threads(0), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_set_num_threads: Expected positive number of threads, got 0");
  ASSERT_EQ_INT(disp_set_num_threads(-2), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_INT(disp_get_num_threads(), 3); /* unchanged */
  return 0;
}

TEST_LIST = {TEST_ENTRY(every_index_exactly_once_at_any_thread_count), TEST_ENTRY(small_ranges_and_one_thread_run_inline),
             TEST_ENTRY(chunks_respect_the_grain), TEST_ENTRY(regions_never_nest),
             TEST_ENTRY(thread_setting_and_its_errors), TEST_END};
TEST_MAIN()
