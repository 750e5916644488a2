/*
 * test_host_cache.c - the CPU allocator's cache of large freed blocks
 * (src/tensor/host_cache.h): reuse of a block of the same size class, the
 * byte, block and age bounds, the switch off, disp_shutdown's release, and
 * threads giving blocks back and taking them concurrently.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <disp.h>
#include <disp/tensor.h>

#include "tensor/host_cache.h"
#include "test.h"

enum { MB = 1024 * 1024 };

/* A float32 CPU tensor of n elements (NULL on failure). */
static disp_tensor *floats(int64_t n) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK)
    return NULL;
  return t;
}

static size_t cached_blocks(void) {
  size_t n = 0;
  disp__host_cache_stats(&n, NULL);
  return n;
}

static size_t cached_bytes(void) {
  size_t n = 0;
  disp__host_cache_stats(NULL, &n);
  return n;
}

/* An empty cache with `mb` MiB of room; returns the old limit. */
static size_t fresh_cache(size_t mb) {
  size_t old = disp__host_cache_set_limit(0);
  disp__host_cache_set_limit(mb * MB);
  return old;
}

TEST(reuses_a_freed_block_of_the_same_class) {
  size_t old = fresh_cache(64);
  disp_tensor *a = floats(MB / 4);
  ASSERT_TRUE(a);
  void *pa = disp_tensor_data_ptr(a);
  disp_tensor_release(a);
  ASSERT_EQ_INT(cached_blocks(), 1);
  ASSERT_TRUE(cached_bytes() >= MB);
  /* a few bytes more: the same 4 KiB class, so the same block, whose data
   * starts less than a page from where it did (Note [Large block
   * colouring] in allocator.c: the offset changes with each allocation) */
  disp_tensor *b = floats(MB / 4 + 3);
  ASSERT_TRUE(b);
  intptr_t moved = (intptr_t)disp_tensor_data_ptr(b) - (intptr_t)pa;
  ASSERT_TRUE(moved > -4096 && moved < 4096);
  ASSERT_EQ_INT(cached_blocks(), 0);
  /* the block is usable to its end */
  memset(disp_tensor_data_ptr(b), 0x7f, (size_t)(MB / 4 + 3) * 4);
  disp_tensor_release(b);
  disp__host_cache_set_limit(old);
  return 0;
}

/* Large tensors made one after the other start at different offsets in
 * their pages, a multiple of 64 bytes, so the operands of an op do not walk
 * the same cache sets together. */
TEST(large_blocks_start_at_staggered_page_offsets) {
  size_t old = fresh_cache(64);
  disp_tensor *t[3];
  uintptr_t off[3];
  for (int i = 0; i < 3; i++) {
    ASSERT_TRUE((t[i] = floats(MB / 4)));
    off[i] = (uintptr_t)disp_tensor_data_ptr(t[i]) % 4096;
    ASSERT_EQ_INT(off[i] % 64, 0);
  }
  ASSERT_TRUE(off[0] != off[1] && off[1] != off[2] && off[0] != off[2]);
  for (int i = 0; i < 3; i++) disp_tensor_release(t[i]);
  disp__host_cache_set_limit(old);
  return 0;
}

TEST(other_classes_and_small_blocks_are_not_reused) {
  size_t old = fresh_cache(64);
  disp_tensor *a = floats(MB / 4), *small = floats(100);
  ASSERT_TRUE(a && small);
  void *pa = disp_tensor_data_ptr(a);
  disp_tensor_release(a);
  disp_tensor_release(small);
  ASSERT_EQ_INT(cached_blocks(), 1); /* 400 bytes: malloc's business */
  disp_tensor *b = floats(MB / 2);
  ASSERT_TRUE(b);
  ASSERT_TRUE(disp_tensor_data_ptr(b) != pa);
  ASSERT_EQ_INT(cached_blocks(), 1);
  disp_tensor_release(b);
  ASSERT_EQ_INT(cached_blocks(), 2);
  disp__host_cache_set_limit(old);
  return 0;
}

TEST(keeps_within_the_byte_and_block_bounds) {
  size_t old = fresh_cache(3);
  disp_tensor *t[4];
  for (int i = 0; i < 4; i++) ASSERT_TRUE((t[i] = floats(MB / 4)));
  for (int i = 0; i < 4; i++) disp_tensor_release(t[i]);
  ASSERT_TRUE(cached_bytes() <= 3 * MB);
  ASSERT_EQ_INT(cached_blocks(), 2); /* each is 1 MiB and a page */
  /* more blocks than slots: the oldest go */
  fresh_cache(1024);
  enum { N = DISP__HOST_CACHE_BLOCKS + 8 };
  void *blocks[N];
  for (int i = 0; i < N; i++) ASSERT_TRUE((blocks[i] = disp__host_cache_get(DISP__HOST_CACHE_MIN)));
  for (int i = 0; i < N; i++) disp__host_cache_put(blocks[i], DISP__HOST_CACHE_MIN);
  ASSERT_EQ_INT(cached_blocks(), DISP__HOST_CACHE_BLOCKS);
  /* a block larger than the whole limit is freed at once */
  fresh_cache(1);
  void *big = disp__host_cache_get(2 * MB);
  ASSERT_TRUE(big);
  disp__host_cache_put(big, 2 * MB);
  ASSERT_EQ_INT(cached_blocks(), 0);
  disp__host_cache_set_limit(old);
  return 0;
}

TEST(frees_blocks_nobody_reuses) {
  size_t old = fresh_cache(64);
  disp__host_cache_put(disp__host_cache_get(2 * MB), 2 * MB);
  ASSERT_EQ_INT(cached_bytes(), 2 * MB);
  /* large allocations of another class, each given back: the 2 MiB block
   * grows old and goes; the other class stays, reused each time */
  for (int i = 0; i <= DISP__HOST_CACHE_AGE; i++) {
    void *b = disp__host_cache_get(DISP__HOST_CACHE_MIN);
    ASSERT_TRUE(b);
    disp__host_cache_put(b, DISP__HOST_CACHE_MIN);
  }
  ASSERT_EQ_INT(cached_blocks(), 1);
  ASSERT_EQ_INT(cached_bytes(), DISP__HOST_CACHE_MIN);
  disp__host_cache_set_limit(old);
  return 0;
}

/* Makes and frees a 4 MiB tensor; `kept` blocks cached after. */
static int free_one(size_t kept) {
  disp_tensor *a = floats(MB);
  ASSERT_TRUE(a);
  disp_tensor_release(a);
  ASSERT_EQ_INT(cached_blocks(), kept);
  return 0;
}

TEST(limit_zero_turns_it_off) {
  size_t old = fresh_cache(64);
  if (free_one(1)) return 1;
  disp__host_cache_set_limit(0); /* frees what it held */
  ASSERT_EQ_INT(cached_blocks(), 0);
  if (free_one(0)) return 1;
  disp__host_cache_set_limit(old);
  return 0;
}

TEST(shutdown_releases_everything) {
  size_t old = fresh_cache(64);
  if (free_one(1)) return 1;
  disp_shutdown();
  ASSERT_EQ_INT(cached_blocks(), 0);
  ASSERT_EQ_INT(cached_bytes(), 0);
  disp_init();
  disp__host_cache_set_limit(old);
  return 0;
}

/* Each thread takes and gives back blocks of two classes, writing them
 * whole: a block handed to two threads at once would show as a torn
 * pattern (and to the sanitizers as a race). */
static void *churn(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  for (int i = 0; i < 200; i++) {
    size_t cls = (i + id) % 2 ? DISP__HOST_CACHE_MIN : 2 * DISP__HOST_CACHE_MIN;
    unsigned char *b = disp__host_cache_get(cls);
    if (!b) return (void *)1;
    memset(b, (int)id, cls);
    for (size_t k = 0; k < cls; k += 4096)
      if (b[k] != (unsigned char)id) return (void *)1;
    disp__host_cache_put(b, cls);
  }
  return NULL;
}

TEST(threads_share_it_safely) {
  size_t old = fresh_cache(64);
  enum { T = 4 };
  pthread_t th[T];
  for (uintptr_t i = 0; i < T; i++) ASSERT_EQ_INT(pthread_create(&th[i], NULL, churn, (void *)(i + 1)), 0);
  int bad = 0;
  for (int i = 0; i < T; i++) {
    void *r = NULL;
    pthread_join(th[i], &r);
    bad |= r != NULL;
  }
  ASSERT_FALSE(bad);
  ASSERT_TRUE(cached_blocks() <= 2 * T);
  disp__host_cache_set_limit(old);
  return 0;
}

TEST_LIST = {
    /* first: before any large free raises glibc's mmap threshold, so that
     * without the colouring the three blocks would share an offset */
    TEST_ENTRY(large_blocks_start_at_staggered_page_offsets),
    TEST_ENTRY(reuses_a_freed_block_of_the_same_class),
    TEST_ENTRY(other_classes_and_small_blocks_are_not_reused),
    TEST_ENTRY(keeps_within_the_byte_and_block_bounds),
    TEST_ENTRY(frees_blocks_nobody_reuses),
    TEST_ENTRY(limit_zero_turns_it_off),
    TEST_ENTRY(shutdown_releases_everything),
    TEST_ENTRY(threads_share_it_safely),
    TEST_END};
TEST_MAIN()
