/*
 * test_stubs.c - stub loops of a backend (disp/stub.h) on a fake PrivateUse1
 * device defined here: memory from mmap, kept PROT_NONE except while this
 * file's own kernels and loops run, so any host access by the library to
 * device memory faults. The device has only empty, empty_strided and
 * _copy_from kernels, plus abs, add and sum loops that count their calls.
 * Every result is compared with the CPU kernels': values, dtype, shape and
 * strides.
 */
#include <math.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "owner_internal.h"
#include "test.h"

#define PU DISP_BACKEND_PRIVATEUSE1

/* ---- device memory: mmap'd blocks, inaccessible unless unlocked --------- */

enum { MAX_BLOCKS = 256 };
static struct { void *p; size_t n; } g_blocks[MAX_BLOCKS];
static int g_unlocked;

static size_t round_up(size_t n) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  return (n + pg - 1) / pg * pg;
}

static void protect_all(int prot) {
  for (int i = 0; i < MAX_BLOCKS; i++)
    if (g_blocks[i].p) mprotect(g_blocks[i].p, round_up(g_blocks[i].n), prot);
}
static void dev_unlock(void) {
  if (g_unlocked++ == 0) protect_all(PROT_READ | PROT_WRITE);
}
static void dev_lock(void) {
  if (--g_unlocked == 0) protect_all(PROT_NONE);
}

static void *dev_alloc(size_t n, disp_device d, void *ctx) {
  (void)d, (void)ctx;
  if (n == 0) return NULL;
  void *p = mmap(NULL, round_up(n), g_unlocked ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED) return NULL;
  for (int i = 0; i < MAX_BLOCKS; i++)
    if (!g_blocks[i].p) {
      g_blocks[i].p = p;
      g_blocks[i].n = n;
      return p;
    }
  munmap(p, round_up(n));
  return NULL;
}

static void dev_free(void *p, size_t n, disp_device d, void *ctx) {
  (void)d, (void)ctx;
  if (!p) return;
  for (int i = 0; i < MAX_BLOCKS; i++)
    if (g_blocks[i].p == p) g_blocks[i].p = NULL;
  munmap(p, round_up(n));
}

/* ---- the device's kernels: empty, empty_strided, _copy_from --------------- */

static disp_device dev0(void) { return disp_device_make(PU, 0); }

static disp_dtype dtype_or_default(int32_t dt) { return dt < 0 ? DISP_DTYPE_FLOAT32 : (disp_dtype)dt; }

static disp_status dev_empty(disp_int_list size, int32_t dtype, int32_t layout, disp_opt_device device,
                             disp_opt_bool pin, int32_t memory_format, disp_tensor **out) {
  (void)layout, (void)device, (void)pin, (void)memory_format;
  return disp_tensor_empty(size.data, (int)size.len, dtype_or_default(dtype), dev0(), out);
}

static int g_empty_strided_calls;
static disp_status dev_empty_strided(disp_int_list size, disp_int_list stride, int32_t dtype, int32_t layout,
                                     disp_opt_device device, disp_opt_bool pin, disp_tensor **out) {
  (void)layout, (void)device, (void)pin;
  g_empty_strided_calls++;
  return disp_tensor_empty_strided(size.data, stride.data, (int)size.len, dtype_or_default(dtype), dev0(), out);
}

/* A CPU tensor over the same memory as t (device memory is host memory here). */
static disp_status host_alias(disp_tensor *t, disp_tensor **out) {
  if (disp_tensor_device(t).type == DISP_BACKEND_CPU) {
    *out = disp_tensor_retain(t);
    return DISP_OK;
  }
  disp_storage *s = disp_tensor_storage(t), *alias = NULL;
  disp_status st = disp_storage_new_with_data(disp_storage_data(s), disp_storage_nbytes(s),
                                              disp_device_make(DISP_BACKEND_CPU, -1), NULL, NULL, &alias);
  if (st != DISP_OK) return st;
  disp_keyset none = {0};
  st = disp_tensor_new_with_storage(alias, disp_tensor_storage_offset(t), disp_tensor_sizes(t), disp_tensor_strides(t),
                                    disp_tensor_ndim(t), disp_tensor_dtype(t), none, out);
  disp_storage_release(alias);
  return st;
}

static disp_status dev_copy_from(disp_tensor *self, disp_tensor *dst, bool non_blocking, disp_tensor **out) {
  (void)non_blocking;
  disp_tensor *s = NULL, *d = NULL, *r = NULL;
  disp_status st = host_alias(self, &s);
  if (st == DISP_OK) st = host_alias(dst, &d);
  dev_unlock();
  if (st == DISP_OK) st = disp_aten_copy_(d, s, false, &r);
  dev_lock();
  disp_tensor_release(r);
  disp_tensor_release(s);
  disp_tensor_release(d);
  if (st == DISP_OK) *out = disp_tensor_retain(dst);
  return st;
}

/* ---- the loops ------------------------------------------------------------ */

static int g_abs_calls, g_add_calls, g_sum_calls, g_sum_accumulating;

static int supported(disp_dtype dt) {
  return dt == DISP_DTYPE_FLOAT32 || dt == DISP_DTYPE_FLOAT64 || dt == DISP_DTYPE_INT64 || dt == DISP_DTYPE_INT32;
}

static double ld(const char *p, disp_dtype dt) {
  switch (dt) {
  case DISP_DTYPE_FLOAT32: return *(const float *)p;
  case DISP_DTYPE_FLOAT64: return *(const double *)p;
  case DISP_DTYPE_INT32: return *(const int32_t *)p;
  case DISP_DTYPE_BOOL: return *(const uint8_t *)p;
  default: return (double)*(const int64_t *)p;
  }
}

static void st(char *p, disp_dtype dt, double v) {
  switch (dt) {
  case DISP_DTYPE_FLOAT32: *(float *)p = (float)v; break;
  case DISP_DTYPE_FLOAT64: *(double *)p = v; break;
  case DISP_DTYPE_INT32: *(int32_t *)p = (int32_t)v; break;
  case DISP_DTYPE_BOOL: *(uint8_t *)p = v != 0; break;
  default: *(int64_t *)p = (int64_t)v; break;
  }
}

#define AT(it, k, i, j) ((char *)(it)->data[k] + (i) * (it)->stride[k][0] + (j) * (it)->stride[k][1])

static disp_status refuse(const char *kname, disp_dtype dt) {
  return disp_set_error(DISP_ERR_TYPE, "\"%s\" not implemented for '%s'", kname, disp_dtype_torch_name(dt));
}

static disp_status abs_loop(const disp_stub_iter *it) {
  g_abs_calls++;
  if (!supported(it->dtype)) return refuse("abs_test", it->dtype);
  dev_unlock();
  for (int64_t j = 0; j < it->size[1]; j++)
    for (int64_t i = 0; i < it->size[0]; i++) st(AT(it, 0, i, j), it->dtype, fabs(ld(AT(it, 1, i, j), it->dtype)));
  dev_lock();
  return DISP_OK;
}

static disp_status add_loop(const disp_stub_iter *it) {
  g_add_calls++;
  if (!supported(it->dtype)) return refuse("add_test", it->dtype);
  double alpha = disp_scalar_to_double(it->alpha);
  dev_unlock();
  for (int64_t j = 0; j < it->size[1]; j++)
    for (int64_t i = 0; i < it->size[0]; i++)
      st(AT(it, 0, i, j), it->dtype, ld(AT(it, 1, i, j), it->dtype) + alpha * ld(AT(it, 2, i, j), it->dtype));
  dev_lock();
  return DISP_OK;
}

static disp_status sum_loop(const disp_stub_iter *it) {
  g_sum_calls++;
  g_sum_accumulating += it->accumulate;
  if (!supported(it->dtype)) return refuse("sum_test", it->dtype);
  if (it->stride[0][0] != 0) return disp_set_error(DISP_ERR_INVALID_ARG, "sum_test: output moves along a row");
  dev_unlock();
  for (int64_t j = 0; j < it->size[1]; j++) {
    double acc = it->accumulate ? ld(AT(it, 0, 0, j), it->dtype) : 0;
    for (int64_t i = 0; i < it->size[0]; i++) acc += ld(AT(it, 1, i, j), it->dtype);
    st(AT(it, 0, 0, j), it->dtype, acc);
  }
  dev_lock();
  return DISP_OK;
}

/* ---- set-up ---------------------------------------------------------------- */

static disp_library *g_dev_lib;

static int dev_setup(void) {
  disp_allocator a = {dev_alloc, dev_free, NULL, NULL};
  if (disp_allocator_register(PU, &a) != DISP_OK) return 1;
  if (disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &g_dev_lib) != DISP_OK)
    return 1;
  disp_status s = disp_library_impl(g_dev_lib, "empty.memory_format", disp_kernel_unboxed(DISP_FN(dev_empty), 0), NULL);
  if (s == DISP_OK)
    s = disp_library_impl(g_dev_lib, "empty_strided", disp_kernel_unboxed(DISP_FN(dev_empty_strided), 0), NULL);
  if (s == DISP_OK) s = disp_library_impl(g_dev_lib, "_copy_from", disp_kernel_unboxed(DISP_FN(dev_copy_from), 0), NULL);
  if (s == DISP_OK) s = disp_stub_register(DISP_STUB_ABS, PU, abs_loop);
  if (s == DISP_OK) s = disp_stub_register(DISP_STUB_ADD, PU, add_loop);
  if (s == DISP_OK) s = disp_stub_register(DISP_STUB_SUM, PU, sum_loop);
  g_abs_calls = g_add_calls = g_sum_calls = g_sum_accumulating = 0;
  return s != DISP_OK;
}

static void dev_teardown(void) {
  disp_stub_register(DISP_STUB_ABS, PU, NULL);
  disp_stub_register(DISP_STUB_ADD, PU, NULL);
  disp_stub_register(DISP_STUB_SUM, PU, NULL);
  disp_library_free(g_dev_lib);
  g_dev_lib = NULL;
}

/* ---- tensors --------------------------------------------------------------- */

/* A CPU tensor of dtype dt holding v[0..numel), contiguous (other dtypes
 * than ld/st know are converted from float64 by the CPU). */
static disp_tensor *cpu_of(const double *v, const int64_t *sizes, int nd, disp_dtype dt) {
  disp_tensor *t = NULL, *conv = NULL;
  disp_dtype made = supported(dt) || dt == DISP_DTYPE_BOOL ? dt : DISP_DTYPE_FLOAT64;
  if (disp_tensor_empty(sizes, nd, made, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK) return NULL;
  char *p = disp_tensor_data_ptr(t);
  for (int64_t i = 0; i < disp_tensor_numel(t); i++) st(p + i * (int64_t)disp_tensor_itemsize(t), made, v[i]);
  if (made == dt) return t;
  disp_opt_device none = {0, 0, false};
  disp_opt_bool pin = {false, false};
  if (disp_aten__to_copy(t, (int32_t)dt, -1, none, pin, false, -1, &conv) != DISP_OK) conv = NULL;
  disp_tensor_release(t);
  return conv;
}

static disp_tensor *moved(disp_tensor *t, disp_device d) {
  disp_tensor *r = NULL;
  disp_opt_device od = {d.type, d.index, true};
  disp_opt_bool pin = {false, false};
  if (t && disp_aten__to_copy(t, -1, -1, od, pin, false, -1, &r) != DISP_OK) r = NULL;
  return r;
}

/* t on the device (a contiguous copy). */
static disp_tensor *dev_of(disp_tensor *t) { return moved(t, dev0()); }

/* A view of t with the given geometry (no dispatch: the device has no view kernels). */
static disp_tensor *view_of(disp_tensor *t, const int64_t *sizes, const int64_t *strides, int nd, int64_t off) {
  disp_tensor *v = NULL;
  disp_keyset none = {0};
  if (disp_tensor_new_with_storage(disp_tensor_storage(t), off, sizes, strides, nd, disp_tensor_dtype(t), none, &v) !=
      DISP_OK)
    return NULL;
  return v;
}

/* dev_result (on the device) equals cpu_result: dtype, sizes, strides, values. */
static int same_as_cpu(disp_tensor *dev_result, disp_tensor *cpu_result) {
  if (!dev_result || !cpu_result) TEST_FAIL_("missing result");
  if (disp_tensor_device(dev_result).type != PU) TEST_FAIL_("result not on the device");
  ASSERT_EQ_INT(disp_tensor_dtype(dev_result), disp_tensor_dtype(cpu_result));
  ASSERT_EQ_INT(disp_tensor_ndim(dev_result), disp_tensor_ndim(cpu_result));
  for (int i = 0; i < disp_tensor_ndim(cpu_result); i++) {
    ASSERT_EQ_INT(disp_tensor_sizes(dev_result)[i], disp_tensor_sizes(cpu_result)[i]);
    if (disp_tensor_sizes(cpu_result)[i] > 1)
      ASSERT_EQ_INT(disp_tensor_strides(dev_result)[i], disp_tensor_strides(cpu_result)[i]);
  }
  disp_tensor *back = moved(dev_result, disp_device_make(DISP_BACKEND_CPU, -1));
  int close = 0;
  ASSERT_TRUE(back != NULL);
  ASSERT_OK(disp_tensor_allclose(back, cpu_result, 1e-6, 1e-6, 1, &close)); /* NaN where the CPU has NaN */
  disp_tensor_release(back);
  ASSERT_TRUE(close);
  return 0;
}

static void release_all(disp_tensor **ts, int n) {
  for (int i = 0; i < n; i++) disp_tensor_release(ts[i]);
}

/* ---- cases ------------------------------------------------------------------ */

TEST(register_checks_arguments) {
  ASSERT_EQ_STR(disp_stub_name(DISP_STUB_ABS), "abs_stub");
  ASSERT_EQ_STR(disp_stub_name(DISP_STUB_DIV), "div_true_stub");
  ASSERT_TRUE(disp_stub_name(DISP_STUB_COUNT) == NULL);
  ASSERT_STATUS(disp_stub_register(DISP_STUB_COUNT, PU, abs_loop), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "unknown stub");
  ASSERT_STATUS(disp_stub_register((disp_stub)-1, PU, abs_loop), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_stub_register(DISP_STUB_ABS, DISP_BACKEND_CPU, abs_loop), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_stub_register: abs_stub cannot be registered for CPU; stubs are for the "
                                   "PrivateUse1, PrivateUse2 and PrivateUse3 backends");
  ASSERT_STATUS(disp_stub_register(DISP_STUB_ABS, DISP_NUM_BACKENDS, abs_loop), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(disp_stub_get(DISP_STUB_ABS, DISP_BACKEND_META) == NULL);
  ASSERT_TRUE(disp_stub_get(DISP_STUB_ABS, PU) == NULL);
  ASSERT_OK(disp_stub_register(DISP_STUB_ABS, PU, NULL)); /* nothing to unregister */
  ASSERT_OK(disp_stub_register(DISP_STUB_ABS, PU, abs_loop));
  ASSERT_TRUE(disp_stub_get(DISP_STUB_ABS, PU) == abs_loop);
  ASSERT_STATUS(disp_stub_register(DISP_STUB_ABS, PU, add_loop), DISP_ERR_DUPLICATE);
  ASSERT_EQ_STR(disp_last_error(), "disp_stub_register: abs_stub already has a PrivateUse1 kernel; unregister it first");
  ASSERT_TRUE(disp_stub_get(DISP_STUB_ABS, PU) == abs_loop);
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("aten::abs", &op));
  ASSERT_TRUE(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1));
  ASSERT_OK(disp_stub_register(DISP_STUB_ABS, PU, NULL));
  ASSERT_TRUE(disp_stub_get(DISP_STUB_ABS, PU) == NULL);
  ASSERT_FALSE(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1));
  /* PrivateUse2 is a backend of its own */
  ASSERT_OK(disp_stub_register(DISP_STUB_ABS, DISP_BACKEND_PRIVATEUSE2, abs_loop));
  ASSERT_TRUE(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE2));
  ASSERT_FALSE(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1));
  ASSERT_OK(disp_stub_register(DISP_STUB_ABS, DISP_BACKEND_PRIVATEUSE2, NULL));
  ASSERT_FALSE(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE2));
  return 0;
}

TEST(abs_matches_cpu) {
  ASSERT_FALSE(dev_setup());
  const double v[6] = {-1.5, 2, -3, 0, 4.25, -6};
  disp_tensor *t[12] = {NULL};
  /* float32 and int64, contiguous */
  t[0] = cpu_of(v, (int64_t[]){2, 3}, 2, DISP_DTYPE_FLOAT32);
  t[1] = dev_of(t[0]);
  ASSERT_OK(disp_aten_abs(t[1], &t[2]));
  ASSERT_OK(disp_aten_abs(t[0], &t[3]));
  if (same_as_cpu(t[2], t[3])) return 1;
  ASSERT_EQ_INT(g_abs_calls, 1); /* dense: one block */
  t[4] = cpu_of(v, (int64_t[]){6}, 1, DISP_DTYPE_INT64);
  t[5] = dev_of(t[4]);
  ASSERT_OK(disp_aten_abs(t[5], &t[6]));
  ASSERT_OK(disp_aten_abs(t[4], &t[7]));
  if (same_as_cpu(t[6], t[7])) return 1;
  /* a transposed view: the output takes the input's layout, as on the CPU */
  disp_tensor *tv = view_of(t[1], (int64_t[]){3, 2}, (int64_t[]){1, 3}, 2, 0);
  disp_tensor *cv = view_of(t[0], (int64_t[]){3, 2}, (int64_t[]){1, 3}, 2, 0);
  ASSERT_OK(disp_aten_abs(tv, &t[8]));
  ASSERT_OK(disp_aten_abs(cv, &t[9]));
  if (same_as_cpu(t[8], t[9])) return 1;
  /* every other element of a row: strided, not dense */
  disp_tensor *sv = view_of(t[1], (int64_t[]){2, 2}, (int64_t[]){3, 2}, 2, 0);
  disp_tensor *scv = view_of(t[0], (int64_t[]){2, 2}, (int64_t[]){3, 2}, 2, 0);
  ASSERT_OK(disp_aten_abs(sv, &t[10]));
  ASSERT_OK(disp_aten_abs(scv, &t[11]));
  if (same_as_cpu(t[10], t[11])) return 1;
  release_all(t, 12);
  disp_tensor *views[4] = {tv, cv, sv, scv};
  release_all(views, 4);
  /* 0-dim and empty */
  disp_tensor *z[8] = {NULL};
  z[0] = cpu_of(v, NULL, 0, DISP_DTYPE_FLOAT64);
  z[1] = dev_of(z[0]);
  ASSERT_OK(disp_aten_abs(z[1], &z[2]));
  ASSERT_OK(disp_aten_abs(z[0], &z[3]));
  if (same_as_cpu(z[2], z[3])) return 1;
  int calls = g_abs_calls;
  z[4] = cpu_of(v, (int64_t[]){2, 0}, 2, DISP_DTYPE_FLOAT32);
  z[5] = dev_of(z[4]);
  ASSERT_OK(disp_aten_abs(z[5], &z[6]));
  ASSERT_OK(disp_aten_abs(z[4], &z[7]));
  if (same_as_cpu(z[6], z[7])) return 1;
  ASSERT_EQ_INT(g_abs_calls, calls); /* nothing to compute: no call */
  release_all(z, 8);
  dev_teardown();
  return 0;
}

/* The loop's own dtype refusal is the operator's error; a fresh output is not leaked. */
TEST(loop_errors_reach_the_caller) {
  ASSERT_FALSE(dev_setup());
  const double v[2] = {1, -2};
  disp_tensor *c = cpu_of(v, (int64_t[]){2}, 1, DISP_DTYPE_FLOAT16), *d = dev_of(c), *r = NULL;
  ASSERT_STATUS(disp_aten_abs(d, &r), DISP_ERR_TYPE);
  ASSERT_CONTAINS(disp_last_error(), "\"abs_test\" not implemented for 'Half'");
  ASSERT_TRUE(r == NULL);
  /* neg's device-independent rule is the library's, before any loop */
  disp_tensor_release(c);
  disp_tensor_release(d);
  dev_teardown();
  return 0;
}

static disp_scalar int_alpha(int64_t a) { return disp_scalar_int(a); }

TEST(add_broadcasts_and_promotes_as_cpu) {
  ASSERT_FALSE(dev_setup());
  const double v[6] = {1, 2, 3, 4, 5, 6}, w[3] = {0.5, -1, 10};
  disp_tensor *a = cpu_of(v, (int64_t[]){2, 3}, 2, DISP_DTYPE_FLOAT32), *b = cpu_of(w, (int64_t[]){3}, 1, DISP_DTYPE_FLOAT64);
  disp_tensor *ai = cpu_of(v, (int64_t[]){2, 3}, 2, DISP_DTYPE_INT64), *col = cpu_of(w, (int64_t[]){2, 1}, 2, DISP_DTYPE_FLOAT32);
  disp_tensor *da = dev_of(a), *db = dev_of(b), *dai = dev_of(ai), *dcol = dev_of(col);
  disp_tensor *r[12] = {NULL};
  /* float32 (2,3) + float64 (3), alpha 2: float64 result, broadcast */
  ASSERT_OK(disp_aten_add_Tensor(da, db, disp_scalar_double(2), &r[0]));
  ASSERT_OK(disp_aten_add_Tensor(a, b, disp_scalar_double(2), &r[1]));
  if (same_as_cpu(r[0], r[1])) return 1;
  /* int64 + float32 column (2,1): float32 */
  ASSERT_OK(disp_aten_add_Tensor(dai, dcol, int_alpha(1), &r[2]));
  ASSERT_OK(disp_aten_add_Tensor(ai, col, int_alpha(1), &r[3]));
  if (same_as_cpu(r[2], r[3])) return 1;
  /* a Python scalar: add.Scalar wraps it in a 0-dim CPU tensor, moved onto the device */
  ASSERT_OK(disp_aten_add_Scalar(dai, disp_scalar_double(2.5), int_alpha(1), &r[4]));
  ASSERT_OK(disp_aten_add_Scalar(ai, disp_scalar_double(2.5), int_alpha(1), &r[5]));
  if (same_as_cpu(r[4], r[5])) return 1;
  /* sub without a sub loop: the add loop with -alpha, as 1.13's sub */
  int before = g_add_calls;
  ASSERT_OK(disp_aten_sub_Tensor(dai, dcol, int_alpha(3), &r[6]));
  ASSERT_OK(disp_aten_sub_Tensor(ai, col, int_alpha(3), &r[7]));
  if (same_as_cpu(r[6], r[7])) return 1;
  ASSERT_TRUE(g_add_calls > before);
  /* the CPU's rules, before any loop */
  ASSERT_STATUS(disp_aten_add_Tensor(dai, dai, disp_scalar_double(0.5), &r[8]), DISP_ERR_TYPE);
  ASSERT_CONTAINS(disp_last_error(), "For integral input tensors, argument alpha must not be a floating point number.");
  ASSERT_STATUS(disp_aten_add_Tensor(da, dcol, int_alpha(1), &r[8]), DISP_OK);
  disp_tensor *three = cpu_of(v, (int64_t[]){3, 1}, 2, DISP_DTYPE_FLOAT32), *d3 = dev_of(three);
  ASSERT_STATUS(disp_aten_add_Tensor(da, d3, int_alpha(1), &r[9]), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0");
  /* a CPU tensor that is not 0-dim: the CPU kernels' device rule */
  ASSERT_STATUS(disp_aten_add_Tensor(da, b, int_alpha(1), &r[9]), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "Expected all tensors to be on the same device, but found at least two devices");
  disp_tensor *all[] = {a, b, ai, col, da, db, dai, dcol, three, d3};
  release_all(all, 10);
  release_all(r, 12);
  dev_teardown();
  return 0;
}

TEST(add_in_place_and_out_as_cpu) {
  ASSERT_FALSE(dev_setup());
  const double v[6] = {1, 2, 3, 4, 5, 6}, w[3] = {0.5, -1, 10};
  disp_tensor *a = cpu_of(v, (int64_t[]){2, 3}, 2, DISP_DTYPE_FLOAT32), *b = cpu_of(w, (int64_t[]){3}, 1, DISP_DTYPE_FLOAT64);
  disp_tensor *da = dev_of(a), *db = dev_of(b), *r[8] = {NULL};
  /* in place: float32 self += float64 other (the result dtype casts back) */
  ASSERT_OK(disp_aten_add__Tensor(da, db, int_alpha(1), &r[0]));
  ASSERT_TRUE(r[0] == da);
  ASSERT_OK(disp_aten_add__Tensor(a, b, int_alpha(1), &r[1]));
  if (same_as_cpu(da, a)) return 1;
  /* the written tensor must have the broadcast shape */
  ASSERT_STATUS(disp_aten_add__Tensor(db, da, int_alpha(1), &r[2]), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "output with shape [3] doesn't match the broadcast shape [2, 3]");
  /* out=: an empty out of the wrong shape and dtype is resized; float64 out of a float64 result */
  const double none[1] = {0};
  disp_tensor *co = cpu_of(none, (int64_t[]){0}, 1, DISP_DTYPE_FLOAT64), *dout = dev_of(co);
  ASSERT_OK(disp_aten_add_out(da, db, int_alpha(2), dout, &r[3]));
  ASSERT_TRUE(r[3] == dout);
  ASSERT_OK(disp_aten_add_out(a, b, int_alpha(2), co, &r[4]));
  if (same_as_cpu(dout, co)) return 1;
  /* a float64 out of a float32 result: written through a temporary */
  disp_tensor *c6 = cpu_of(v, (int64_t[]){6}, 1, DISP_DTYPE_FLOAT64), *d6 = dev_of(c6);
  ASSERT_OK(disp_aten_add_out(da, da, int_alpha(1), d6, &r[5]));
  ASSERT_OK(disp_aten_add_out(a, a, int_alpha(1), c6, &r[6]));
  if (same_as_cpu(d6, c6)) return 1;
  /* an int64 out of a float result is refused */
  disp_tensor *ci = cpu_of(v, (int64_t[]){2, 3}, 2, DISP_DTYPE_INT64), *di = dev_of(ci);
  ASSERT_STATUS(disp_aten_add_out(da, db, int_alpha(1), di, &r[7]), DISP_ERR_TYPE);
  ASSERT_CONTAINS(disp_last_error(), "result type Double can't be cast to the desired output type Long");
  disp_tensor *all[] = {a, b, da, db, co, dout, c6, d6, ci, di};
  release_all(all, 10);
  release_all(r, 8);
  dev_teardown();
  return 0;
}

/* Sums over dims given as (list, n), keepdim, compared with the CPU. */
static int check_sum(disp_tensor *cpu, disp_tensor *dev, const int64_t *dims, size_t n, bool keepdim, int32_t dt) {
  disp_opt_int_list dl = {{dims, n}, dims != NULL};
  disp_tensor *r = NULL, *c = NULL;
  ASSERT_OK(disp_aten_sum_dim_IntList(dev, dl, keepdim, dt, &r));
  ASSERT_OK(disp_aten_sum_dim_IntList(cpu, dl, keepdim, dt, &c));
  int bad = same_as_cpu(r, c);
  disp_tensor_release(r);
  disp_tensor_release(c);
  return bad;
}

TEST(sum_matches_cpu) {
  ASSERT_FALSE(dev_setup());
  double v[24];
  for (int i = 0; i < 24; i++) v[i] = i % 2 ? i : -0.5 * i;
  disp_tensor *c = cpu_of(v, (int64_t[]){2, 3, 4}, 3, DISP_DTYPE_FLOAT32), *d = dev_of(c);
  if (check_sum(c, d, (int64_t[]){1}, 1, false, -1)) return 1;
  ASSERT_EQ_INT(g_sum_accumulating, 0);
  if (check_sum(c, d, (int64_t[]){-1, 0}, 2, true, -1)) return 1;
  if (check_sum(c, d, (int64_t[]){0, 2}, 2, false, -1)) return 1;
  ASSERT_TRUE(g_sum_accumulating > 0); /* dims 0 and 2 do not merge: blocks add up */
  if (check_sum(c, d, NULL, 0, false, -1)) return 1;
  if (check_sum(c, d, (int64_t[]){2}, 1, false, DISP_DTYPE_FLOAT64)) return 1;
  /* a permuted view */
  disp_tensor *cv = view_of(c, (int64_t[]){4, 3, 2}, (int64_t[]){1, 4, 12}, 3, 0);
  disp_tensor *dv = view_of(d, (int64_t[]){4, 3, 2}, (int64_t[]){1, 4, 12}, 3, 0);
  if (check_sum(cv, dv, (int64_t[]){0}, 1, false, -1)) return 1;
  if (check_sum(cv, dv, (int64_t[]){1, 2}, 2, true, -1)) return 1;
  /* int32 sums to int64 */
  disp_tensor *ci = cpu_of(v, (int64_t[]){4, 6}, 2, DISP_DTYPE_INT32), *di = dev_of(ci);
  if (check_sum(ci, di, (int64_t[]){1}, 1, false, -1)) return 1;
  /* 0-dim, and an empty reduction giving zeros */
  disp_tensor *c0 = cpu_of(v + 3, NULL, 0, DISP_DTYPE_FLOAT64), *d0 = dev_of(c0);
  if (check_sum(c0, d0, NULL, 0, false, -1)) return 1;
  disp_tensor *ce = cpu_of(v, (int64_t[]){3, 0}, 2, DISP_DTYPE_FLOAT32), *de = dev_of(ce);
  if (check_sum(ce, de, (int64_t[]){1}, 1, false, -1)) return 1;
  if (check_sum(ce, de, (int64_t[]){0}, 1, false, -1)) return 1; /* empty result: no call needed */
  /* sum (no dims) is CompositeExplicitAutograd over sum.dim_IntList */
  disp_tensor *r = NULL, *rc = NULL;
  ASSERT_OK(disp_aten_sum(d, -1, &r));
  ASSERT_OK(disp_aten_sum(c, -1, &rc));
  if (same_as_cpu(r, rc)) return 1;
  ASSERT_STATUS(disp_aten_sum_dim_IntList(d, (disp_opt_int_list){{(int64_t[]){3}, 1}, true}, false, -1, &r),
                DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  disp_tensor *all[] = {c, d, cv, dv, ci, di, c0, d0, ce, de, r, rc};
  release_all(all, 12);
  dev_teardown();
  return 0;
}

/* One loop for every elementwise stub, in double: what a backend with a
 * generic kernel would register for each. */
static disp_status any_loop(const disp_stub_iter *it) {
  if (!supported(it->dtype)) return refuse("any_test", it->dtype);
  double alpha = disp_scalar_to_double(it->alpha);
  dev_unlock();
  for (int64_t j = 0; j < it->size[1]; j++)
    for (int64_t i = 0; i < it->size[0]; i++) {
      double a = ld(AT(it, 1, i, j), it->dtype), b = it->noperands > 2 ? ld(AT(it, 2, i, j), it->dtype) : 0, r;
      switch (it->stub) {
      case DISP_STUB_EXP: r = exp(a); break;
      case DISP_STUB_LOG: r = log(a); break;
      case DISP_STUB_TANH: r = tanh(a); break;
      case DISP_STUB_SIGMOID: r = 1 / (1 + exp(-a)); break;
      case DISP_STUB_SQRT: r = sqrt(a); break;
      case DISP_STUB_NEG: r = -a; break;
      case DISP_STUB_RELU: r = a < 0 ? 0 : a; break;
      case DISP_STUB_SUB: r = a - alpha * b; break;
      case DISP_STUB_MUL: r = a * b; break;
      case DISP_STUB_DIV: r = a / b; break;
      default: r = NAN; break;
      }
      st(AT(it, 0, i, j), it->dtype, r);
    }
  dev_lock();
  return DISP_OK;
}

typedef disp_status (*unary_fn)(disp_tensor *, disp_tensor **);
typedef disp_status (*binary_fn)(disp_tensor *, disp_tensor *, disp_tensor **);

/* Every elementwise stub's operators against the CPU's, including float
 * promotion of integers (exp of int64), in place (relu_, mul_, div_, sub_)
 * and a registered sub loop taking sub from the add loop. */
TEST(every_elementwise_stub_matches_cpu) {
  ASSERT_FALSE(dev_setup());
  const disp_stub ids[] = {DISP_STUB_EXP, DISP_STUB_LOG, DISP_STUB_TANH, DISP_STUB_SIGMOID, DISP_STUB_SQRT,
                           DISP_STUB_NEG, DISP_STUB_RELU, DISP_STUB_SUB, DISP_STUB_MUL, DISP_STUB_DIV};
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) ASSERT_OK(disp_stub_register(ids[i], PU, any_loop));
  const double v[6] = {0.5, 2, 3.25, 1, 4, 0.125}, w[6] = {-1, 2, -3, 4, -5, 6};
  disp_tensor *c = cpu_of(v, (int64_t[]){2, 3}, 2, DISP_DTYPE_FLOAT32), *d = dev_of(c);
  disp_tensor *ci = cpu_of(w, (int64_t[]){2, 3}, 2, DISP_DTYPE_INT64), *di = dev_of(ci);
  const unary_fn un[] = {disp_aten_exp, disp_aten_log, disp_aten_tanh, disp_aten_sigmoid, disp_aten_sqrt,
                         disp_aten_neg, disp_aten_relu};
  for (size_t i = 0; i < sizeof un / sizeof un[0]; i++) {
    disp_tensor *r[4] = {NULL};
    ASSERT_OK(un[i](d, &r[0]));
    ASSERT_OK(un[i](c, &r[1]));
    if (same_as_cpu(r[0], r[1])) return 1;
    ASSERT_OK(un[i](di, &r[2])); /* int64: float32 results for exp..sqrt */
    ASSERT_OK(un[i](ci, &r[3]));
    if (same_as_cpu(r[2], r[3])) return 1;
    release_all(r, 4);
  }
  const binary_fn bin[] = {disp_aten_mul_Tensor, disp_aten_div_Tensor, disp_aten_mul__Tensor, disp_aten_div__Tensor};
  for (size_t i = 0; i < sizeof bin / sizeof bin[0]; i++) {
    disp_tensor *r[2] = {NULL};
    ASSERT_OK(bin[i](d, di, &r[0])); /* float32 with int64: float32 */
    ASSERT_OK(bin[i](c, ci, &r[1]));
    if (same_as_cpu(r[0], r[1])) return 1;
    release_all(r, 2);
  }
  disp_tensor *r[6] = {NULL};
  int adds = g_add_calls;
  ASSERT_OK(disp_aten_sub__Tensor(d, di, disp_scalar_int(2), &r[0]));
  ASSERT_OK(disp_aten_sub__Tensor(c, ci, disp_scalar_int(2), &r[1]));
  if (same_as_cpu(d, c)) return 1;
  ASSERT_EQ_INT(g_add_calls, adds); /* the sub loop, not add's */
  ASSERT_OK(disp_aten_relu_(d, &r[2]));
  ASSERT_OK(disp_aten_relu_(c, &r[3]));
  if (same_as_cpu(d, c)) return 1;
  /* the CPU's device-independent refusals come first */
  disp_tensor *cb = cpu_of(v, (int64_t[]){2}, 1, DISP_DTYPE_BOOL), *db = dev_of(cb);
  ASSERT_STATUS(disp_aten_neg(db, &r[4]), DISP_ERR_TYPE);
  ASSERT_CONTAINS(disp_last_error(), "Negation, the `-` operator, on a bool tensor is not supported.");
  ASSERT_STATUS(disp_aten_relu(db, &r[4]), DISP_ERR_TYPE);
  ASSERT_CONTAINS(disp_last_error(), "Boolean inputs not supported for relu");
  ASSERT_STATUS(disp_aten_sub_Tensor(db, db, disp_scalar_int(1), &r[4]), DISP_ERR_TYPE);
  ASSERT_CONTAINS(disp_last_error(), "Subtraction, the `-` operator, with two bool tensors is not supported.");
  release_all(r, 6);
  disp_tensor *all[] = {c, d, ci, di, cb, db};
  release_all(all, 6);
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) ASSERT_OK(disp_stub_register(ids[i], PU, NULL));
  dev_teardown();
  return 0;
}

static int g_fallback_calls;
static disp_status counting_fallback(const disp_op *op, disp_keyset ks, disp_stack *stack, void *ud) {
  (void)ks, (void)ud;
  g_fallback_calls++;
  disp_stack_clear(stack);
  return disp_set_error(DISP_ERR_NO_KERNEL, "fallback reached for %s", disp_op_name(op));
}

/* No loop for an op: the dispatcher's missing-kernel error, or the backend's fallback. */
TEST(missing_stub_is_a_missing_kernel) {
  ASSERT_FALSE(dev_setup());
  const double v[2] = {1, 2};
  disp_tensor *c = cpu_of(v, (int64_t[]){2}, 1, DISP_DTYPE_FLOAT32), *d = dev_of(c), *r = NULL;
  ASSERT_STATUS(disp_aten_exp(d, &r), DISP_ERR_NO_KERNEL);
  ASSERT_CONTAINS(disp_last_error(), "Could not run 'aten::exp' with arguments from the 'PrivateUse1' backend");
  disp_library *fb = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "_", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &fb));
  ASSERT_OK(disp_library_fallback(fb, disp_kernel_boxed(counting_fallback, NULL, NULL), NULL));
  g_fallback_calls = 0;
  ASSERT_STATUS(disp_aten_exp(d, &r), DISP_ERR_NO_KERNEL);
  ASSERT_EQ_INT(g_fallback_calls, 1);
  ASSERT_CONTAINS(disp_last_error(), "fallback reached for aten::exp");
  /* with the sum loop gone, sum goes to the fallback too */
  ASSERT_OK(disp_stub_register(DISP_STUB_SUM, PU, NULL));
  ASSERT_STATUS(disp_aten_sum(d, -1, &r), DISP_ERR_NO_KERNEL);
  ASSERT_EQ_INT(g_fallback_calls, 2);
  disp_library_free(fb);
  ASSERT_STATUS(disp_aten_sum(d, -1, &r), DISP_ERR_NO_KERNEL);
  ASSERT_CONTAINS(disp_last_error(), "Could not run 'aten::sum.dim_IntList' with arguments from the 'PrivateUse1' backend");
  ASSERT_TRUE(r == NULL);
  disp_tensor_release(c);
  disp_tensor_release(d);
  dev_teardown();
  return 0;
}

static int g_own_abs_calls;
static disp_status own_abs(disp_tensor *self, disp_tensor **out) {
  g_own_abs_calls++;
  *out = disp_tensor_retain(self);
  return DISP_OK;
}

/* A kernel the backend registered itself before the stub keeps precedence. */
TEST(own_kernel_keeps_precedence) {
  disp_library *own = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &own));
  ASSERT_OK(disp_library_impl(own, "abs", disp_kernel_unboxed(DISP_FN(own_abs), 0), NULL));
  ASSERT_FALSE(dev_setup());
  const double v[2] = {-1, 2};
  disp_tensor *c = cpu_of(v, (int64_t[]){2}, 1, DISP_DTYPE_FLOAT32), *d = dev_of(c), *r = NULL;
  g_own_abs_calls = 0;
  ASSERT_OK(disp_aten_abs(d, &r));
  ASSERT_EQ_INT(g_own_abs_calls, 1);
  ASSERT_EQ_INT(g_abs_calls, 0);
  disp_tensor_release(r);
  dev_teardown();
  /* its kernel survives the stub's unregistration */
  ASSERT_OK(disp_aten_abs(d, &r));
  ASSERT_EQ_INT(g_own_abs_calls, 2);
  disp_tensor_release(r);
  disp_library_free(own);
  disp_tensor_release(c);
  disp_tensor_release(d);
  return 0;
}

/* A stub registered while a plugin's owner is current goes with the plugin. */
TEST(plugin_owner_undoes_its_stubs) {
  disp_owner *o = disp__owner_new("fake plugin");
  ASSERT_TRUE(o != NULL);
  disp_owner *prev = disp__owner_swap(o);
  ASSERT_OK(disp_stub_register(DISP_STUB_MUL, PU, add_loop));
  ASSERT_OK(disp_stub_register(DISP_STUB_ABS, PU, abs_loop));
  disp__owner_swap(prev);
  /* explicitly unregistered: the record is cancelled, never run twice */
  ASSERT_OK(disp_stub_register(DISP_STUB_ABS, PU, NULL));
  const disp_op *mul = NULL;
  ASSERT_OK(disp_op_find("aten::mul.Tensor", &mul));
  ASSERT_TRUE(disp_op_has_kernel(mul, DISP_KEY_PRIVATEUSE1));
  disp__owner_undo_all(o);
  ASSERT_TRUE(disp_stub_get(DISP_STUB_MUL, PU) == NULL);
  ASSERT_FALSE(disp_op_has_kernel(mul, DISP_KEY_PRIVATEUSE1));
  disp__owner_free(o);
  /* the slot is free again */
  ASSERT_OK(disp_stub_register(DISP_STUB_MUL, PU, add_loop));
  ASSERT_OK(disp_stub_register(DISP_STUB_MUL, PU, NULL));
  return 0;
}

/* disp_shutdown forgets stubs with the kernels; registering again works. */
TEST(shutdown_forgets_stubs) {
  ASSERT_OK(disp_stub_register(DISP_STUB_DIV, PU, add_loop));
  disp_shutdown();
  disp_init();
  ASSERT_TRUE(disp_stub_get(DISP_STUB_DIV, PU) == NULL);
  const disp_op *div = NULL;
  ASSERT_OK(disp_op_find("aten::div.Tensor", &div));
  ASSERT_FALSE(disp_op_has_kernel(div, DISP_KEY_PRIVATEUSE1));
  ASSERT_OK(disp_stub_register(DISP_STUB_DIV, PU, add_loop));
  ASSERT_TRUE(disp_op_has_kernel(div, DISP_KEY_PRIVATEUSE1));
  ASSERT_OK(disp_stub_register(DISP_STUB_DIV, PU, NULL));
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(register_checks_arguments),
    TEST_ENTRY(abs_matches_cpu),
    TEST_ENTRY(loop_errors_reach_the_caller),
    TEST_ENTRY(add_broadcasts_and_promotes_as_cpu),
    TEST_ENTRY(add_in_place_and_out_as_cpu),
    TEST_ENTRY(sum_matches_cpu),
    TEST_ENTRY(every_elementwise_stub_matches_cpu),
    TEST_ENTRY(missing_stub_is_a_missing_kernel),
    TEST_ENTRY(own_kernel_keeps_precedence),
    TEST_ENTRY(plugin_owner_undoes_its_stubs),
    TEST_ENTRY(shutdown_forgets_stubs),
    TEST_END};
TEST_MAIN()
