/*
 * test_backend_device.c - what a backend provides and gets (disp/backend.h):
 * device hooks, the device guard, copies, metadata setters with views
 * following a resize, memory statistics, printing and comparing through the
 * hooks, per-device generators, and every bad input.
 *
 * The fake device is PrivateUse1 with two devices. Its memory comes from
 * mmap and stays PROT_NONE except inside its own hooks, so any host access
 * by the library to device memory faults (the test crashes, it cannot pass
 * by accident). Every hook counts its calls and checks that the device
 * pointers it gets lie in a live block of its allocator.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "owner_internal.h"
#include "test.h"

/* ---- the fake device ------------------------------------------------------ */

#define MAX_BLOCKS 64

typedef struct block {
  char *base;
  size_t mapped;
  disp_device dev;
} block;

static struct {
  block blocks[MAX_BLOCKS];
  int h2d, d2h, d2d, alloc_copy, syncs, bad_ptr;
  int fail_set; /* set_device fails when nonzero */
} fake;

static _Thread_local int fake_current;

static size_t page_round(size_t n) {
  size_t p = (size_t)sysconf(_SC_PAGESIZE);
  return (n + p - 1) / p * p;
}

static block *find_block(const void *p, size_t n) {
  for (int i = 0; i < MAX_BLOCKS; i++) {
    block *b = &fake.blocks[i];
    if (b->base && (const char *)p >= b->base && (const char *)p + n <= b->base + b->mapped) return b;
  }
  fake.bad_ptr++;
  return NULL;
}

static void open_block(block *b, int prot) {
  if (b) mprotect(b->base, b->mapped, prot);
}

static void *fake_allocate(size_t nbytes, disp_device device, void *ctx) {
  (void)ctx;
  if (nbytes == 0) return NULL;
  for (int i = 0; i < MAX_BLOCKS; i++) {
    block *b = &fake.blocks[i];
    if (b->base) continue;
    size_t m = page_round(nbytes);
    void *p = mmap(NULL, m, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    b->base = p, b->mapped = m, b->dev = device;
    return p;
  }
  return NULL;
}

static void fake_deallocate(void *ptr, size_t nbytes, disp_device device, void *ctx) {
  (void)nbytes, (void)device, (void)ctx;
  if (!ptr) return;
  block *b = find_block(ptr, 1);
  if (!b) return;
  munmap(b->base, b->mapped);
  b->base = NULL;
}

static void fake_alloc_copy(void *dst, const void *src, size_t nbytes, disp_device device, void *ctx) {
  (void)device, (void)ctx;
  fake.alloc_copy++;
  block *d = find_block(dst, nbytes), *s = find_block(src, nbytes);
  open_block(d, PROT_READ | PROT_WRITE);
  open_block(s, PROT_READ | PROT_WRITE);
  if (d && s) memcpy(dst, src, nbytes);
  open_block(d, PROT_NONE);
  open_block(s, PROT_NONE);
}

static int fake_count(void *ctx) {
  (void)ctx;
  return 2;
}

static int fake_get(void *ctx) {
  (void)ctx;
  return fake_current;
}

static disp_status fake_set(int index, void *ctx) {
  (void)ctx;
  if (fake.fail_set) return disp_set_error(DISP_ERR_KERNEL, "fake: cannot set device %d", index);
  fake_current = index;
  return DISP_OK;
}

static disp_status fake_sync(int index, void *ctx) {
  (void)index, (void)ctx;
  fake.syncs++;
  return DISP_OK;
}

static disp_status fake_h2d(void *dst, disp_device dst_dev, const void *src, size_t nbytes, void *ctx) {
  (void)dst_dev, (void)ctx;
  fake.h2d++;
  block *b = find_block(dst, nbytes);
  if (!b) return disp_set_error(DISP_ERR_INVALID_ARG, "fake: not device memory");
  open_block(b, PROT_READ | PROT_WRITE);
  memcpy(dst, src, nbytes);
  open_block(b, PROT_NONE);
  return DISP_OK;
}

static disp_status fake_d2h(void *dst, const void *src, disp_device src_dev, size_t nbytes, void *ctx) {
  (void)src_dev, (void)ctx;
  fake.d2h++;
  block *b = find_block(src, nbytes);
  if (!b) return disp_set_error(DISP_ERR_INVALID_ARG, "fake: not device memory");
  open_block(b, PROT_READ);
  memcpy(dst, src, nbytes);
  open_block(b, PROT_NONE);
  return DISP_OK;
}

static disp_status fake_d2d(void *dst, disp_device dst_dev, const void *src, disp_device src_dev, size_t nbytes,
                            void *ctx) {
  (void)dst_dev, (void)src_dev, (void)ctx;
  fake.d2d++;
  fake.alloc_copy--; /* the same copy, counted once as d2d */
  fake_alloc_copy(dst, src, nbytes, dst_dev, NULL);
  return DISP_OK;
}

static const disp_device_hooks fake_hooks = {fake_count, fake_get, fake_set, fake_sync,
                                             fake_h2d,   fake_d2h, fake_d2d, NULL};
static const disp_allocator fake_allocator = {fake_allocate, fake_deallocate, NULL, fake_alloc_copy};

#define PU1 DISP_BACKEND_PRIVATEUSE1
static disp_device dev0, dev1, cpu;

static int setup(void) {
  memset(&fake, 0, sizeof fake);
  fake_current = 0;
  dev0 = disp_device_make(PU1, 0), dev1 = disp_device_make(PU1, 1), cpu = disp_device_make(DISP_BACKEND_CPU, -1);
  ASSERT_OK(disp_device_hooks_register(PU1, &fake_hooks));
  ASSERT_OK(disp_allocator_register(PU1, &fake_allocator));
  return 0;
}

static int teardown(void) {
  ASSERT_OK(disp_device_hooks_register(PU1, NULL));
  ASSERT_OK(disp_allocator_register(PU1, NULL));
  for (int i = 0; i < MAX_BLOCKS; i++) ASSERT_TRUE(fake.blocks[i].base == NULL); /* nothing leaked */
  ASSERT_EQ_INT(fake.bad_ptr, 0);
  return 0;
}

/* A float tensor on dev holding vals (n of them). */
static int device_tensor(const float *vals, int64_t n, disp_device dev, disp_tensor **out) {
  ASSERT_OK(disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, dev, out));
  ASSERT_OK(disp_device_copy(disp_tensor_data_ptr(*out), dev, vals, cpu, (size_t)n * sizeof(float)));
  return 0;
}

/* The n floats t's storage holds from element off on, read through d2h. */
static int read_device(const disp_tensor *t, int64_t off, float *vals, int64_t n) {
  const char *p = disp_storage_data(disp_tensor_storage(t));
  ASSERT_OK(disp_device_copy(vals, cpu, p + off * 4, disp_tensor_device(t), (size_t)n * sizeof(float)));
  return 0;
}

/* ---- hooks and the guard ---------------------------------------------------- */

TEST(hooks_register_replace_restore) {
  ASSERT_TRUE(disp_device_hooks_get(PU1) == NULL);
  ASSERT_EQ_INT(disp_device_count(PU1), 0);
  disp_device d;
  ASSERT_STATUS(disp_device_current(PU1, &d), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "no device hooks registered for device type privateuseone");
  if (setup()) return 1;
  const disp_device_hooks *h = disp_device_hooks_get(PU1);
  ASSERT_TRUE(h && h != &fake_hooks && h->device_count == fake_count); /* copied */
  ASSERT_EQ_INT(disp_device_count(PU1), 2);
  ASSERT_EQ_INT(disp_device_count(DISP_BACKEND_CPU), 1);
  ASSERT_EQ_INT(disp_device_count(DISP_BACKEND_META), 1);
  ASSERT_EQ_INT(disp_device_count(DISP_BACKEND_PRIVATEUSE2), 0);

  /* replacing: the new hooks answer */
  disp_device_hooks one = fake_hooks;
  one.device_count = NULL;
  ASSERT_STATUS(disp_device_hooks_register(PU1, &one), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_device_hooks_register: the hooks of privateuseone need device_count");
  ASSERT_TRUE(disp_device_hooks_get(PU1) == h); /* unchanged */
  ASSERT_STATUS(disp_device_hooks_register(DISP_BACKEND_CPU, &fake_hooks), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_device_hooks_register: the cpu device hooks are built in");
  ASSERT_STATUS(disp_device_hooks_register(DISP_BACKEND_META, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_device_hooks_register(DISP_NUM_BACKENDS, &fake_hooks), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_device_hooks_register: invalid device type 14");
  ASSERT_STATUS(disp_device_hooks_register((disp_backend)-1, &fake_hooks), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(disp_device_hooks_get(DISP_NUM_BACKENDS) == NULL);
  ASSERT_EQ_INT(disp_device_count(DISP_NUM_BACKENDS), 0);
  ASSERT_OK(disp_device_hooks_register(PU1, &fake_hooks));
  ASSERT_TRUE(disp_device_hooks_get(PU1) != h);
  return teardown();
}

TEST(guard_restores_previous_device) {
  if (setup()) return 1;
  disp_device cur;
  ASSERT_OK(disp_device_current(PU1, &cur));
  ASSERT_TRUE(disp_device_equal(cur, dev0));
  disp_device_guard outer, inner;
  ASSERT_OK(disp_device_guard_begin(&outer, dev1));
  ASSERT_TRUE(outer.active && disp_device_equal(outer.original, dev0));
  ASSERT_EQ_INT(fake_current, 1);
  ASSERT_OK(disp_device_guard_begin(&inner, dev0));
  ASSERT_EQ_INT(fake_current, 0);
  ASSERT_OK(disp_device_guard_end(&inner));
  ASSERT_EQ_INT(fake_current, 1);
  ASSERT_OK(disp_device_guard_end(&outer));
  ASSERT_EQ_INT(fake_current, 0);
  ASSERT_OK(disp_device_guard_end(&outer)); /* ended: a no-op */
  ASSERT_EQ_INT(fake_current, 0);

  /* CPU, Meta and "privateuseone" (no index) guard nothing */
  ASSERT_OK(disp_device_guard_begin(&outer, cpu));
  ASSERT_FALSE(outer.active);
  ASSERT_OK(disp_device_guard_begin(&outer, disp_device_make(PU1, -1)));
  ASSERT_FALSE(outer.active);
  ASSERT_OK(disp_device_guard_end(&outer));

  /* a device that does not exist: refused, inactive, current unchanged */
  ASSERT_STATUS(disp_device_guard_begin(&outer, disp_device_make(PU1, 2)), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Device index out of range: privateuseone:2 (2 devices)");
  ASSERT_FALSE(outer.active);
  ASSERT_EQ_INT(fake_current, 0);
  ASSERT_STATUS(disp_device_guard_begin(&outer, disp_device_make(PU1, -2)), DISP_ERR_INVALID_ARG);

  /* exchange returns the previous device */
  disp_device prev;
  ASSERT_OK(disp_device_exchange(dev1, &prev));
  ASSERT_TRUE(disp_device_equal(prev, dev0));
  ASSERT_OK(disp_device_exchange(dev0, &prev));
  ASSERT_TRUE(disp_device_equal(prev, dev1));

  /* a failing hook keeps its own message */
  fake.fail_set = 1;
  ASSERT_STATUS(disp_device_set_current(dev1), DISP_ERR_KERNEL);
  ASSERT_EQ_STR(disp_last_error(), "fake: cannot set device 1");
  ASSERT_STATUS(disp_device_guard_begin(&outer, dev1), DISP_ERR_KERNEL);
  ASSERT_FALSE(outer.active);
  fake.fail_set = 0;
  ASSERT_EQ_INT(fake_current, 0);

  ASSERT_OK(disp_device_synchronize(dev1));
  ASSERT_OK(disp_device_synchronize(disp_device_make(PU1, -1)));
  ASSERT_OK(disp_device_synchronize(cpu));
  ASSERT_EQ_INT(fake.syncs, 2);
  ASSERT_STATUS(disp_device_synchronize(disp_device_make(PU1, 7)), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_device_synchronize(disp_device_make(DISP_BACKEND_PRIVATEUSE2, 0)), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "no device hooks registered for device type privateusetwo");
  return teardown();
}

/* ---- copies ------------------------------------------------------------------- */

TEST(copies_go_through_the_hooks) {
  if (setup()) return 1;
  float in[4] = {1, 2, 3, 4}, out[4] = {0};
  void *a = fake_allocate(16, dev0, NULL), *b = fake_allocate(16, dev1, NULL);
  ASSERT_OK(disp_device_copy(a, dev0, in, cpu, sizeof in));
  ASSERT_OK(disp_device_copy(b, dev1, a, dev0, sizeof in));
  ASSERT_OK(disp_device_copy(out, cpu, b, dev1, sizeof out));
  ASSERT_TRUE(memcmp(in, out, sizeof in) == 0);
  ASSERT_EQ_INT(fake.h2d, 1);
  ASSERT_EQ_INT(fake.d2d, 1);
  ASSERT_EQ_INT(fake.d2h, 1);
  float host[4] = {0};
  ASSERT_OK(disp_device_copy(host, cpu, in, cpu, sizeof in)); /* no hook */
  ASSERT_TRUE(memcmp(in, host, sizeof in) == 0);
  ASSERT_EQ_INT(fake.h2d + fake.d2h + fake.d2d, 3);
  ASSERT_OK(disp_device_copy(NULL, dev0, NULL, cpu, 0)); /* nothing to copy */

  ASSERT_STATUS(disp_device_copy(out, cpu, NULL, dev0, 4), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_device_copy: src is NULL");
  ASSERT_STATUS(disp_device_copy(out, disp_device_make(DISP_BACKEND_META, -1), in, cpu, 4), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_device_copy: meta tensors have no memory to copy");
  ASSERT_STATUS(disp_device_copy(out, disp_device_make(DISP_BACKEND_PRIVATEUSE2, 0), a, dev0, 4),
                DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "needs a copy through the CPU");
  ASSERT_STATUS(disp_device_copy(out, cpu, a, disp_device_make(PU1, -2), 4), DISP_ERR_INVALID_ARG);

  /* a direction without a hook */
  disp_device_hooks no_d2h = fake_hooks;
  no_d2h.copy_d2h = NULL;
  ASSERT_OK(disp_device_hooks_register(PU1, &no_d2h));
  ASSERT_STATUS(disp_device_copy(out, cpu, a, dev0, 4), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(),
                "no device-to-host copy hook registered for device type privateuseone (copying with privateuseone:0)");
  fake_deallocate(a, 16, dev0, NULL);
  fake_deallocate(b, 16, dev1, NULL);
  return teardown();
}

/* ---- metadata setters ------------------------------------------------------- */

TEST(resize_moves_data_and_views_follow) {
  if (setup()) return 1;
  float vals[4] = {1, 2, 3, 4};
  disp_tensor *t, *view;
  if (device_tensor(vals, 4, dev0, &t)) return 1;
  int64_t two = 2;
  ASSERT_OK(disp_tensor_new_view(t, &two, NULL, 1, 2, &view)); /* t[2:] */
  void *old = disp_tensor_data_ptr(t);
  uint64_t version = disp_tensor_version(t);
  disp_keyset keys = disp_tensor_keyset(t);

  int64_t big = 1000;
  ASSERT_OK(disp_tensor_resize(t, &big, NULL, 1));
  ASSERT_EQ_INT(disp_tensor_numel(t), 1000);
  ASSERT_EQ_INT(disp_storage_nbytes(disp_tensor_storage(t)), 4000);
  ASSERT_TRUE(disp_tensor_data_ptr(t) != old);
  ASSERT_EQ_INT(fake.alloc_copy, 1); /* the old bytes moved on the device */
  /* the view sees the new block, at its offset */
  ASSERT_TRUE((char *)disp_tensor_data_ptr(view) == (char *)disp_tensor_data_ptr(t) + 8);
  float got[2];
  if (read_device(view, 2, got, 2)) return 1;
  ASSERT_TRUE(got[0] == 3 && got[1] == 4);
  ASSERT_EQ_INT(disp_tensor_version(t), version); /* geometry only */
  ASSERT_TRUE(disp_keyset_equal(disp_tensor_keyset(t), keys));

  /* shrinking keeps the memory (resize_ never shrinks a storage) */
  ASSERT_OK(disp_tensor_resize(t, &two, NULL, 1));
  ASSERT_EQ_INT(disp_storage_nbytes(disp_tensor_storage(t)), 4000);
  ASSERT_EQ_INT(fake.alloc_copy, 1);

  /* an allocator without a copy function cannot carry data over */
  disp_tensor *u;
  disp_allocator nocopy = fake_allocator;
  nocopy.copy = NULL;
  ASSERT_OK(disp_allocator_register(PU1, &nocopy));
  if (device_tensor(vals, 4, dev0, &u)) return 1;
  ASSERT_STATUS(disp_tensor_resize(u, &big, NULL, 1), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(),
                "Trying to resize a privateuseone storage holding data, but its allocator has no copy function");
  ASSERT_EQ_INT(disp_tensor_numel(u), 4); /* unchanged */
  ASSERT_EQ_INT(disp_storage_nbytes(disp_tensor_storage(u)), 16);
  disp_tensor_release(u);
  disp_tensor_release(view);
  disp_tensor_release(t);
  return teardown();
}

TEST(set_overloads_through_the_setters) {
  if (setup()) return 1;
  float vals[6] = {0, 1, 2, 3, 4, 5};
  disp_tensor *self, *source;
  if (device_tensor(vals, 2, dev0, &self) || device_tensor(vals, 6, dev0, &source)) return 1;
  disp_storage *st = disp_tensor_storage(source);
  size_t refs = disp_storage_refcount(st);

  /* set_.source_Storage_storage_offset: a [2, 2] window at offset 1, strides (1, 2) */
  int64_t sizes[2] = {2, 2}, strides[2] = {1, 2};
  ASSERT_OK(disp_tensor_set_storage(self, st, 1, sizes, strides, 2));
  ASSERT_TRUE(disp_tensor_storage(self) == st);
  ASSERT_EQ_INT(disp_storage_refcount(st), refs + 1);
  ASSERT_EQ_INT(disp_tensor_storage_offset(self), 1);
  ASSERT_EQ_INT(disp_tensor_strides(self)[1], 2);
  ASSERT_FALSE(disp_tensor_is_contiguous(self));

  /* set_.source_Storage: the whole storage, 1-d */
  int64_t six = 6;
  ASSERT_OK(disp_tensor_set_storage(self, st, 0, &six, NULL, 1));
  ASSERT_EQ_INT(disp_tensor_numel(self), 6);
  ASSERT_TRUE(disp_tensor_is_contiguous(self));

  /* set_.source_Tensor: the source's own geometry */
  ASSERT_OK(disp_tensor_set_storage(self, disp_tensor_storage(source), disp_tensor_storage_offset(source),
                                    disp_tensor_sizes(source), disp_tensor_strides(source), disp_tensor_ndim(source)));

  /* sizes and strides within the storage */
  int64_t three = 3, one = 1;
  ASSERT_OK(disp_tensor_set_sizes_strides(self, &three, &one, 1, 3));
  float got[3];
  if (read_device(self, disp_tensor_storage_offset(self), got, 3)) return 1;
  ASSERT_TRUE(got[0] == 3 && got[2] == 5);

  /* refusals leave self as it was */
  int64_t seven = 7;
  ASSERT_STATUS(disp_tensor_set_sizes_strides(self, &seven, NULL, 1, 0), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(),
                "setStorage: sizes [7], strides [1], storage offset 0, and itemsize 4 requiring a storage size of 28 "
                "are out of bounds for storage of size 24");
  ASSERT_STATUS(disp_tensor_set_sizes_strides(self, &three, NULL, 1, -1), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Tensor: invalid storage offset -1");
  int64_t neg = -1;
  ASSERT_STATUS(disp_tensor_set_sizes_strides(self, &neg, NULL, 1, 0), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_INT(disp_tensor_numel(self), 3);
  ASSERT_EQ_INT(disp_tensor_storage_offset(self), 3);

  disp_storage *host;
  ASSERT_OK(disp_storage_new(64, cpu, &host));
  ASSERT_STATUS(disp_tensor_set_storage(self, host, 0, &three, NULL, 1), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(),
                "Attempted to set the storage of a tensor on device \"privateuseone:0\" to a storage on different "
                "device \"cpu\".  This is no longer allowed; the devices must match.");
  ASSERT_TRUE(disp_tensor_storage(self) == st);
  disp_storage_release(host);

  /* opaque tensors have no storage to set */
  disp_tensor *opaque;
  ASSERT_OK(disp_tensor_new_opaque(&three, 1, DISP_DTYPE_FLOAT32, DISP_LAYOUT_STRIDED, dev0, NULL, NULL, &opaque));
  ASSERT_STATUS(disp_tensor_set_sizes_strides(opaque, &three, NULL, 1, 0), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "set_sizes_and_strides: tensor has no storage (opaque tensor)");
  ASSERT_STATUS(disp_tensor_resize(opaque, &three, NULL, 1), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_tensor_set_storage(opaque, st, 0, &three, NULL, 1), DISP_ERR_INVALID_ARG);
  disp_tensor_release(opaque);

  /* wrapped memory is not resizable */
  static float blob[2];
  disp_storage *wrapped;
  disp_tensor *w;
  ASSERT_OK(disp_storage_new_with_data(blob, sizeof blob, cpu, NULL, NULL, &wrapped));
  ASSERT_OK(disp_tensor_new_with_storage(wrapped, 0, &one, NULL, 1, DISP_DTYPE_FLOAT32, disp_keyset_empty(), &w));
  ASSERT_STATUS(disp_tensor_resize(w, &six, NULL, 1), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Trying to resize storage that is not resizable");
  ASSERT_STATUS(disp_storage_resize(wrapped, 64), DISP_ERR_INVALID_ARG);
  disp_tensor_release(w);
  disp_storage_release(wrapped);

  disp_tensor_release(self);
  disp_tensor_release(source);
  return teardown();
}

/* ---- memory statistics ------------------------------------------------------ */

TEST(memory_stats_follow_allocations) {
  if (setup()) return 1;
  disp_memory_stats s0, s;
  ASSERT_OK(disp_memory_stats_get(dev1, &s0));
  disp_tensor *a, *b;
  int64_t n = 100;
  ASSERT_OK(disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, dev1, &a));
  ASSERT_OK(disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT64, dev1, &b));
  ASSERT_OK(disp_memory_stats_get(dev1, &s));
  ASSERT_EQ_INT(s.allocated_bytes - s0.allocated_bytes, 1200);
  ASSERT_EQ_INT(s.num_allocs - s0.num_allocs, 2);
  ASSERT_EQ_INT(s.live_blocks - s0.live_blocks, 2);
  ASSERT_TRUE(s.peak_bytes >= s.allocated_bytes);
  int64_t peak = s.peak_bytes;
  disp_tensor_release(b);
  ASSERT_OK(disp_memory_stats_get(dev1, &s));
  ASSERT_EQ_INT(s.allocated_bytes - s0.allocated_bytes, 400);
  ASSERT_EQ_INT(s.peak_bytes, peak); /* the peak stays */
  ASSERT_EQ_INT(s.num_frees - s0.num_frees, 1);
  ASSERT_OK(disp_memory_reset_peak(dev1));
  ASSERT_OK(disp_memory_stats_get(dev1, &s));
  ASSERT_EQ_INT(s.peak_bytes, s.allocated_bytes);

  /* a resize is one allocation and one free */
  int64_t m = 200;
  ASSERT_OK(disp_tensor_resize(a, &m, NULL, 1));
  ASSERT_OK(disp_memory_stats_get(dev1, &s));
  ASSERT_EQ_INT(s.allocated_bytes - s0.allocated_bytes, 800);
  ASSERT_EQ_INT(s.num_allocs - s0.num_allocs, 3);
  ASSERT_EQ_INT(s.num_frees - s0.num_frees, 2);
  ASSERT_EQ_INT(s.peak_bytes, s0.allocated_bytes + 1200); /* old and new blocks were both held */

  /* the other device and the current-device query */
  disp_memory_stats other;
  ASSERT_OK(disp_memory_stats_get(disp_device_make(PU1, -1), &other)); /* current: device 0 */
  ASSERT_OK(disp_memory_stats_get(dev0, &s));
  ASSERT_EQ_INT(other.allocated_bytes, s.allocated_bytes);
  disp_tensor_release(a);
  ASSERT_OK(disp_memory_stats_get(dev1, &s));
  ASSERT_EQ_INT(s.allocated_bytes, s0.allocated_bytes);
  ASSERT_EQ_INT(s.live_blocks, s0.live_blocks);

  /* CPU counts too; wrapped memory does not */
  disp_memory_stats c0, c;
  ASSERT_OK(disp_memory_stats_get(cpu, &c0));
  disp_tensor *h;
  ASSERT_OK(disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, cpu, &h));
  ASSERT_OK(disp_memory_stats_get(disp_device_make(DISP_BACKEND_CPU, 0), &c));
  ASSERT_EQ_INT(c.allocated_bytes - c0.allocated_bytes, 400);
  disp_tensor_release(h);
  static char blob[32];
  disp_storage *w;
  ASSERT_OK(disp_storage_new_with_data(blob, sizeof blob, cpu, NULL, NULL, &w));
  ASSERT_OK(disp_memory_stats_get(cpu, &c));
  ASSERT_EQ_INT(c.allocated_bytes, c0.allocated_bytes);
  disp_storage_release(w);

  /* bad devices */
  ASSERT_STATUS(disp_memory_stats_get(disp_device_make(PU1, DISP_MAX_DEVICES_PER_TYPE), &s), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "beyond the 64 devices per type");
  ASSERT_STATUS(disp_memory_stats_get(disp_device_make(DISP_NUM_BACKENDS, 0), &s), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_memory_reset_peak(disp_device_make(DISP_BACKEND_PRIVATEUSE3, -1)), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "no device hooks registered for device type privateusethree");
  ASSERT_STATUS(disp_memory_stats_get(dev0, NULL), DISP_ERR_INVALID_ARG);
  return teardown();
}

/* Threads allocating and freeing at once lose no count and no peak. */
static void *churn(void *arg) {
  disp_device d = *(disp_device *)arg;
  for (int i = 0; i < 500; i++) {
    disp_storage *st;
    if (disp_storage_new(64, d, &st) != DISP_OK) return (void *)1;
    disp_storage_release(st);
  }
  return NULL;
}

static void *host_allocate(size_t n, disp_device d, void *ctx) {
  (void)d, (void)ctx;
  return n ? malloc(n) : NULL;
}

static void host_deallocate(void *p, size_t n, disp_device d, void *ctx) {
  (void)n, (void)d, (void)ctx;
  free(p);
}

TEST(memory_stats_are_thread_safe) {
  disp_device pu2 = disp_device_make(DISP_BACKEND_PRIVATEUSE2, 3);
  disp_allocator host = {host_allocate, host_deallocate, NULL, NULL};
  ASSERT_OK(disp_allocator_register(DISP_BACKEND_PRIVATEUSE2, &host));
  disp_memory_stats s0, s;
  ASSERT_OK(disp_memory_reset_peak(pu2));
  ASSERT_OK(disp_memory_stats_get(pu2, &s0));
  disp_storage *held;
  ASSERT_OK(disp_storage_new(1000, pu2, &held));
  pthread_t th[4];
  for (int i = 0; i < 4; i++) ASSERT_EQ_INT(pthread_create(&th[i], NULL, churn, &pu2), 0);
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(th[i], &r);
    ASSERT_TRUE(r == NULL);
  }
  ASSERT_OK(disp_memory_stats_get(pu2, &s));
  ASSERT_EQ_INT(s.allocated_bytes - s0.allocated_bytes, 1000);
  ASSERT_EQ_INT(s.num_allocs - s0.num_allocs, 2001);
  ASSERT_EQ_INT(s.num_frees - s0.num_frees, 2000);
  ASSERT_TRUE(s.peak_bytes >= s0.allocated_bytes + 1064 && s.peak_bytes <= s0.allocated_bytes + 1256);
  disp_storage_release(held);
  ASSERT_OK(disp_allocator_register(DISP_BACKEND_PRIVATEUSE2, NULL));
  return 0;
}

/* ---- reading device memory on the host -------------------------------------- */

TEST(print_compare_item_copy_through_hooks) {
  if (setup()) return 1;
  float vals[3] = {1, 2, 3.5f};
  disp_tensor *t, *h;
  if (device_tensor(vals, 3, dev0, &t)) return 1;
  int d2h = fake.d2h;
  char *s;
  ASSERT_OK(disp_tensor_format(t, &s));
  ASSERT_EQ_STR(s, "tensor([1.0000, 2.0000, 3.5000], device='privateuseone:0')");
  free(s);
  ASSERT_EQ_INT(fake.d2h - d2h, 1); /* one copy of the bytes t spans */

  int64_t three = 3;
  ASSERT_OK(disp_tensor_empty(&three, 1, DISP_DTYPE_FLOAT32, cpu, &h));
  memcpy(disp_tensor_data_ptr(h), vals, sizeof vals);
  int close = 0;
  ASSERT_OK(disp_tensor_allclose(t, h, 0, 0, 0, &close));
  ASSERT_TRUE(close);
  ASSERT_EQ_INT(fake.d2h - d2h, 2);
  ((float *)disp_tensor_data_ptr(h))[2] = 3;
  ASSERT_OK(disp_tensor_allclose(h, t, 0, 0, 0, &close));
  ASSERT_FALSE(close);

  /* item (issue 11): the element is copied through d2h, never read on the
   * host, even though this device has no _local_scalar_dense kernel */
  disp_tensor *one;
  ASSERT_OK(disp_tensor_new_view(t, NULL, NULL, 0, 2, &one)); /* t[2] */
  disp_scalar v;
  ASSERT_OK(disp_aten_item(one, &v));
  ASSERT_TRUE(disp_scalar_to_double(v) == 3.5);
  ASSERT_EQ_INT(fake.d2h - d2h, 4); /* the two allclose calls above, and item's */
  disp_tensor_release(one);

  /* a device without a d2h hook: a clear error, nothing read */
  disp_device_hooks no_d2h = fake_hooks;
  no_d2h.copy_d2h = NULL;
  ASSERT_OK(disp_device_hooks_register(PU1, &no_d2h));
  ASSERT_STATUS(disp_tensor_format(t, &s), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(),
                "disp_tensor_format: cannot read privateuseone:0 memory on the host: no device-to-host copy hook "
                "registered for device type privateuseone");
  ASSERT_STATUS(disp_tensor_print(stdout, t), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_tensor_allclose(h, t, 0, 0, 0, &close), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "allclose: cannot read privateuseone:0 memory on the host");
  ASSERT_OK(disp_device_hooks_register(PU1, NULL));
  ASSERT_STATUS(disp_tensor_format(t, &s), DISP_ERR_INVALID_ARG);

  /* empty and meta tensors need no copy */
  disp_tensor *e;
  int64_t zero = 0;
  ASSERT_OK(disp_tensor_empty(&zero, 1, DISP_DTYPE_FLOAT32, dev0, &e));
  ASSERT_OK(disp_tensor_format(e, &s));
  ASSERT_EQ_STR(s, "tensor([], device='privateuseone:0')");
  free(s);
  disp_tensor_release(e);
  disp_tensor_release(h);
  disp_tensor_release(t);
  return teardown();
}

/* ---- generators -------------------------------------------------------------- */

TEST(generators_per_device_seeded_together) {
  if (setup()) return 1;
  disp_generator *g0 = disp_device_generator(dev0), *g1 = disp_device_generator(dev1);
  disp_generator *gc = disp_device_generator(cpu);
  ASSERT_TRUE(g0 && g1 && gc && g0 != g1 && g0 != gc);
  ASSERT_TRUE(disp_device_generator(disp_device_make(PU1, -1)) == g0); /* current device */
  ASSERT_TRUE(disp_device_generator(disp_device_make(DISP_BACKEND_CPU, 0)) == gc);

  disp_manual_seed(1234); /* torch.manual_seed seeds every device */
  ASSERT_EQ_INT(disp_generator_initial_seed(g0), 1234);
  ASSERT_EQ_INT(disp_generator_initial_seed(g1), 1234);
  ASSERT_EQ_INT(disp_initial_seed(), 1234);
  ASSERT_OK(disp_generator_manual_seed(g1, 99));
  ASSERT_EQ_INT(disp_generator_initial_seed(g1), 99);
  ASSERT_EQ_INT(disp_generator_initial_seed(g0), 1234);
  ASSERT_EQ_INT(disp_initial_seed(), 1234);

  /* state round trip: the same draws again */
  disp_generator_state saved, r1, r2;
  ASSERT_OK(disp_generator_get_state(g0, &saved));
  ASSERT_EQ_INT(saved.seed, 1234);
  ASSERT_EQ_INT(saved.offset, 0);
  ASSERT_OK(disp_generator_reserve(g0, 10, &r1));
  ASSERT_OK(disp_generator_reserve(g0, 5, &r2));
  ASSERT_EQ_INT(r2.offset, 10);
  ASSERT_OK(disp_generator_set_state(g0, &saved));
  ASSERT_OK(disp_generator_reserve(g0, 10, &r2));
  ASSERT_EQ_INT(r2.offset, r1.offset);
  ASSERT_TRUE(disp_generator_draw(r1.seed, r1.offset) == disp_generator_draw(r2.seed, r2.offset));
  ASSERT_TRUE(disp_generator_draw(1, 0) != disp_generator_draw(2, 0));

  /* the CPU's random operators draw from the CPU generator only */
  disp_generator_state c0, c1, d0;
  ASSERT_OK(disp_generator_get_state(gc, &c0));
  ASSERT_OK(disp_generator_get_state(g0, &d0));
  int64_t four = 4;
  disp_tensor *r;
  disp_opt_device none = {0, 0, false};
  ASSERT_OK(disp_aten_rand((disp_int_list){&four, 1}, -1, -1, none, (disp_opt_bool){false, false}, &r));
  ASSERT_OK(disp_generator_get_state(gc, &c1));
  ASSERT_EQ_INT(c1.offset - c0.offset, 4);
  ASSERT_OK(disp_generator_get_state(g0, &c1));
  ASSERT_EQ_INT(c1.offset, d0.offset);
  disp_tensor_release(r);

  /* bad input */
  ASSERT_TRUE(disp_device_generator(disp_device_make(PU1, DISP_MAX_DEVICES_PER_TYPE)) == NULL);
  ASSERT_CONTAINS(disp_last_error(), "disp_device_generator: device privateuseone:64 is beyond");
  ASSERT_TRUE(disp_device_generator(disp_device_make(DISP_BACKEND_PRIVATEUSE2, -1)) == NULL);
  ASSERT_TRUE(disp_device_generator(disp_device_make(DISP_NUM_BACKENDS, 0)) == NULL);
  ASSERT_STATUS(disp_generator_manual_seed(NULL, 1), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_generator_manual_seed: g is NULL");
  ASSERT_STATUS(disp_generator_get_state(g0, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_generator_set_state(g0, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_generator_reserve(NULL, 1, &r1), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_INT(disp_generator_initial_seed(NULL), 0);
  disp_manual_seed(67280421310721ull);
  return teardown();
}

TEST(null_and_bad_arguments) {
  if (setup()) return 1;
  disp_device d;
  ASSERT_STATUS(disp_device_current(PU1, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_device_current: out is NULL");
  ASSERT_STATUS(disp_device_current(DISP_NUM_BACKENDS, &d), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_device_exchange(dev1, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_INT(fake_current, 0);
  ASSERT_STATUS(disp_device_set_current(disp_device_make(DISP_NUM_BACKENDS, 0)), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_device_guard_begin(NULL, dev1), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_device_guard_end(NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_INT(fake_current, 0);
  ASSERT_STATUS(disp_storage_resize(NULL, 4), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_storage_resize: st is NULL");
  int64_t two = 2;
  disp_tensor *t;
  ASSERT_OK(disp_tensor_empty(&two, 1, DISP_DTYPE_FLOAT32, dev0, &t));
  ASSERT_STATUS(disp_tensor_set_sizes_strides(NULL, &two, NULL, 1, 0), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_tensor_set_sizes_strides(t, NULL, NULL, 1, 0), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_tensor_set_sizes_strides: sizes is NULL");
  ASSERT_STATUS(disp_tensor_set_storage(t, NULL, 0, &two, NULL, 1), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_tensor_set_storage: st is NULL");
  ASSERT_STATUS(disp_tensor_resize(t, NULL, NULL, 1), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_tensor_resize(NULL, &two, NULL, 1), DISP_ERR_INVALID_ARG);
  int64_t bad = -3;
  ASSERT_STATUS(disp_tensor_resize(t, &bad, NULL, 1), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_tensor_resize(t, &two, NULL, 65), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_INT(disp_tensor_numel(t), 2);
  disp_tensor_release(t);
  return teardown();
}

/* Note [Owners]: hooks registered while a plugin's owner is current go
 * away with it, and what they replaced comes back. */
TEST(owned_hooks_are_undone) {
  if (setup()) return 1;
  const disp_device_hooks *program = disp_device_hooks_get(PU1);
  disp_device_hooks other = fake_hooks;
  other.synchronize = NULL;
  disp_owner *o = disp__owner_new("fakeplugin");
  ASSERT_TRUE(o != NULL);
  disp_owner *prev = disp__owner_swap(o);
  ASSERT_OK(disp_device_hooks_register(PU1, &other));
  ASSERT_OK(disp_device_hooks_register(DISP_BACKEND_PRIVATEUSE2, &fake_hooks));
  disp__owner_swap(prev);
  ASSERT_TRUE(disp_device_hooks_get(PU1)->synchronize == NULL);
  ASSERT_EQ_INT(disp_device_count(DISP_BACKEND_PRIVATEUSE2), 2);
  disp__owner_undo_all(o);
  disp__owner_free(o);
  ASSERT_TRUE(disp_device_hooks_get(PU1) == program); /* the program's hooks again */
  ASSERT_TRUE(disp_device_hooks_get(DISP_BACKEND_PRIVATEUSE2) == NULL);
  ASSERT_EQ_INT(disp_device_count(DISP_BACKEND_PRIVATEUSE2), 0);

  /* replaced after the plugin's registration: the newer hooks stay */
  o = disp__owner_new("fakeplugin");
  prev = disp__owner_swap(o);
  ASSERT_OK(disp_device_hooks_register(PU1, &other));
  disp__owner_swap(prev);
  ASSERT_OK(disp_device_hooks_register(PU1, &fake_hooks));
  const disp_device_hooks *newer = disp_device_hooks_get(PU1);
  disp__owner_undo_all(o);
  disp__owner_free(o);
  ASSERT_TRUE(disp_device_hooks_get(PU1) == newer);
  return teardown();
}

/* ---- issue 18, class 3: no fast path skips a device check ----------------- */

/* A backend (PrivateUse3) whose hooks can be told to have no device, or to
 * fail without a message (returning an error after clearing it). */
static struct {
  int count, silent;
} quiet;
static int quiet_count(void *ctx) { return (void)ctx, quiet.count; }
static int quiet_get(void *ctx) { return (void)ctx, 0; } /* says 0 even with no device */
static disp_status quiet_fail(void) {
  disp_clear_error();
  return DISP_ERR_KERNEL;
}
static disp_status quiet_set(int index, void *ctx) { return (void)index, (void)ctx, quiet.silent ? quiet_fail() : DISP_OK; }
static disp_status quiet_sync(int index, void *ctx) { return (void)index, (void)ctx, quiet.silent ? quiet_fail() : DISP_OK; }
static disp_status quiet_h2d(void *dst, disp_device dd, const void *src, size_t n, void *ctx) {
  (void)dst, (void)dd, (void)src, (void)n, (void)ctx;
  return quiet_fail();
}
static disp_status quiet_d2h(void *dst, const void *src, disp_device sd, size_t n, void *ctx) {
  (void)dst, (void)sd, (void)src, (void)n, (void)ctx;
  return quiet_fail();
}
static disp_status quiet_d2d(void *dst, disp_device dd, const void *src, disp_device sd, size_t n, void *ctx) {
  (void)dst, (void)dd, (void)src, (void)sd, (void)n, (void)ctx;
  return quiet_fail();
}
static const disp_device_hooks quiet_hooks = {quiet_count, quiet_get, quiet_set, quiet_sync,
                                              quiet_h2d,   quiet_d2h, quiet_d2d, NULL};

/* Every entry that takes a device with an index refuses one that does not
 * exist, even when the hooks call it current; nothing is left half done. */
TEST(a_device_that_does_not_exist_is_refused_on_every_path) {
  disp_device pu3 = disp_device_make(DISP_BACKEND_PRIVATEUSE3, 0), prev = cpu;
  quiet.count = 0, quiet.silent = 0;
  ASSERT_OK(disp_device_hooks_register(DISP_BACKEND_PRIVATEUSE3, &quiet_hooks));
  disp_device_guard g;
  ASSERT_STATUS(disp_device_guard_begin(&g, pu3), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "Device index out of range");
  ASSERT_FALSE(g.active);
  ASSERT_STATUS(disp_device_exchange(pu3, &prev), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(prev.type == DISP_BACKEND_CPU); /* untouched */
  ASSERT_STATUS(disp_device_set_current(pu3), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_device_synchronize(pu3), DISP_ERR_INVALID_ARG);
  quiet.count = 1; /* now it exists: the same calls work */
  ASSERT_OK(disp_device_guard_begin(&g, pu3));
  ASSERT_OK(disp_device_guard_end(&g));
  ASSERT_OK(disp_device_synchronize(pu3));
  ASSERT_OK(disp_device_hooks_register(DISP_BACKEND_PRIVATEUSE3, NULL));
  return 0;
}

/* A hook that fails without a message: the error names the hook and the
 * backend, for every hook the library calls. */
TEST(a_hook_failing_silently_is_named) {
  disp_device pu3 = disp_device_make(DISP_BACKEND_PRIVATEUSE3, 0), pu3b = disp_device_make(DISP_BACKEND_PRIVATEUSE3, 1);
  quiet.count = 2, quiet.silent = 1;
  ASSERT_OK(disp_device_hooks_register(DISP_BACKEND_PRIVATEUSE3, &quiet_hooks));
  char buf[4] = {0}, host[4] = {0};
  ASSERT_STATUS(disp_device_set_current(pu3b), DISP_ERR_KERNEL);
  ASSERT_CONTAINS(disp_last_error(), "set_device hook");
  ASSERT_CONTAINS(disp_last_error(), "PrivateUse3");
  ASSERT_STATUS(disp_device_synchronize(pu3), DISP_ERR_KERNEL);
  ASSERT_CONTAINS(disp_last_error(), "synchronize hook");
  ASSERT_STATUS(disp_device_copy(buf, pu3, host, cpu, 4), DISP_ERR_KERNEL);
  ASSERT_CONTAINS(disp_last_error(), "copy_h2d hook");
  ASSERT_STATUS(disp_device_copy(host, cpu, buf, pu3, 4), DISP_ERR_KERNEL);
  ASSERT_CONTAINS(disp_last_error(), "copy_d2h hook");
  ASSERT_STATUS(disp_device_copy(buf, pu3b, host, pu3, 4), DISP_ERR_KERNEL);
  ASSERT_CONTAINS(disp_last_error(), "copy_d2d hook");
  disp_device_guard g;
  ASSERT_STATUS(disp_device_guard_begin(&g, pu3b), DISP_ERR_KERNEL);
  ASSERT_CONTAINS(disp_last_error(), "set_device hook");
  ASSERT_FALSE(g.active);
  ASSERT_OK(disp_device_hooks_register(DISP_BACKEND_PRIVATEUSE3, NULL));
  return 0;
}

/* set_ with a storage of another device (type or index) is refused and the
 * tensor keeps its storage. */
TEST(set_storage_of_another_device_index_is_refused) {
  if (setup()) return 1;
  int64_t n = 4;
  disp_tensor *t = NULL, *u = NULL;
  ASSERT_OK(disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, dev0, &t));
  ASSERT_OK(disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, dev1, &u));
  disp_storage *mine = disp_tensor_storage(t);
  ASSERT_STATUS(disp_tensor_set_storage(t, disp_tensor_storage(u), 0, &n, NULL, 1), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "the devices must match");
  ASSERT_TRUE(disp_tensor_storage(t) == mine);
  disp_tensor *r = NULL;
  ASSERT_TRUE(disp_aten_set__source_Tensor(t, u, &r) != DISP_OK);
  ASSERT_TRUE(disp_tensor_storage(t) == mine);
  disp_tensor_release(t), disp_tensor_release(u);
  return teardown();
}

TEST_LIST = {
    TEST_ENTRY(a_device_that_does_not_exist_is_refused_on_every_path),
    TEST_ENTRY(a_hook_failing_silently_is_named),
    TEST_ENTRY(set_storage_of_another_device_index_is_refused),
    TEST_ENTRY(hooks_register_replace_restore),
    TEST_ENTRY(guard_restores_previous_device),
    TEST_ENTRY(copies_go_through_the_hooks),
    TEST_ENTRY(resize_moves_data_and_views_follow),
    TEST_ENTRY(set_overloads_through_the_setters),
    TEST_ENTRY(memory_stats_follow_allocations),
    TEST_ENTRY(memory_stats_are_thread_safe),
    TEST_ENTRY(print_compare_item_copy_through_hooks),
    TEST_ENTRY(generators_per_device_seeded_together),
    TEST_ENTRY(null_and_bad_arguments),
    TEST_ENTRY(owned_hooks_are_undone),
    TEST_END};
TEST_MAIN()
