/*
 * test_overflow.c - issue 8 case 11: sizes, counts, strides and offsets
 * computed from extreme arguments either get their exact value (1.13's
 * clamped slices, exact arange lengths) or fail with a message; none wraps.
 * Run under the ASan+UBSan build (-DDISP_SANITIZE=ON), where a wrap that
 * slipped through is a test failure too.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "test.h"

/* expr fails with DISP_ERR_INVALID_ARG and a message containing msg. */
#define ASSERT_FAILS(expr, msg)                \
  do {                                         \
    ASSERT_STATUS(expr, DISP_ERR_INVALID_ARG); \
    ASSERT_CONTAINS(disp_last_error(), msg);   \
  } while (0)

static const disp_opt_device no_device = {0, 0, false};
static const disp_opt_device meta_device = {DISP_BACKEND_META, -1, true};
static const disp_opt_bool no_pin = {false, false};
static const disp_opt_int none = {0, false};

static disp_int_list ints(const int64_t *v, size_t n) {
  disp_int_list l = {v, n};
  return l;
}

static disp_opt_int some(int64_t v) {
  disp_opt_int o = {v, true};
  return o;
}

/* A float32 tensor of sizes on dev (uninitialized: only shapes matter). */
static disp_tensor *make(const int64_t *sizes, int nd, disp_backend dev) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, nd, DISP_DTYPE_FLOAT32, disp_device_make(dev, -1), &t) != DISP_OK) return NULL;
  return t;
}

/* slice(t, dim, start, end, step) -> size and stride along dim, and offset. */
static int slice_geom(disp_tensor *t, int64_t dim, disp_opt_int s, disp_opt_int e, int64_t step, int64_t *size,
                      int64_t *stride, int64_t *offset) {
  disp_tensor *r = NULL;
  if (disp_aten_slice_Tensor(t, dim, s, e, step, &r) != DISP_OK) return 1;
  *size = disp_tensor_sizes(r)[dim];
  *stride = disp_tensor_strides(r)[dim];
  *offset = disp_tensor_storage_offset(r);
  disp_tensor_release(r);
  return 0;
}

TEST(slice_extreme_bounds_clamp) {
  int64_t sz[2] = {4, 3}, n, st, off;
  disp_tensor *t = make(sz, 2, DISP_BACKEND_CPU);
  ASSERT_TRUE(t != NULL);
  /* INT64_MIN .. INT64_MAX is the whole dimension */
  ASSERT_TRUE(slice_geom(t, 0, some(INT64_MIN), some(INT64_MAX), 1, &n, &st, &off) == 0);
  ASSERT_EQ_INT(n, 4);
  ASSERT_EQ_INT(off, 0);
  /* a start of INT64_MAX means "no start" in 1.13 */
  ASSERT_TRUE(slice_geom(t, 0, some(INT64_MAX), none, 1, &n, &st, &off) == 0);
  ASSERT_EQ_INT(n, 4);
  /* INT64_MAX - 1 is past the end: empty, offset at the end */
  ASSERT_TRUE(slice_geom(t, 0, some(INT64_MAX - 1), some(INT64_MAX), 1, &n, &st, &off) == 0);
  ASSERT_EQ_INT(n, 0);
  ASSERT_EQ_INT(off, 12);
  /* an end of INT64_MIN clamps to the start */
  ASSERT_TRUE(slice_geom(t, 1, some(1), some(INT64_MIN), 1, &n, &st, &off) == 0);
  ASSERT_EQ_INT(n, 0);
  ASSERT_EQ_INT(off, 1);
  /* step INT64_MAX: one element (1.13's len + step - 1 would wrap); the
   * stride 3 * INT64_MAX has no int64 value and keeps the input's */
  ASSERT_TRUE(slice_geom(t, 0, none, none, INT64_MAX, &n, &st, &off) == 0);
  ASSERT_EQ_INT(n, 1);
  ASSERT_EQ_INT(st, 3);
  ASSERT_TRUE(slice_geom(t, 1, some(-2), some(INT64_MAX), INT64_MAX, &n, &st, &off) == 0);
  ASSERT_EQ_INT(n, 1);
  ASSERT_EQ_INT(st, INT64_MAX);
  ASSERT_EQ_INT(off, 1);
  disp_tensor *r = NULL;
  ASSERT_FAILS(disp_aten_slice_Tensor(t, 0, none, none, 0, &r), "slice step must be positive");
  ASSERT_FAILS(disp_aten_slice_Tensor(t, 0, none, none, INT64_MIN, &r), "slice step must be positive");
  ASSERT_TRUE(r == NULL);
  disp_tensor_release(t);
  return 0;
}

TEST(view_offsets_and_strides_do_not_wrap) {
  /* a size-1 dim may have any stride: unsqueeze in front of it would need
   * size * stride, select and slice an offset past int64 */
  int64_t one = 1, eight = 8, huge = INT64_MAX;
  disp_tensor *t = make(&eight, 1, DISP_BACKEND_META), *v = NULL, *r = NULL;
  ASSERT_TRUE(t != NULL);
  ASSERT_OK(disp_aten_as_strided(t, ints(&one, 1), ints(&huge, 1), some(5), &v));
  ASSERT_OK(disp_aten_unsqueeze(v, 0, &r)); /* 1 * INT64_MAX fits */
  ASSERT_EQ_INT(disp_tensor_strides(r)[0], INT64_MAX);
  disp_tensor_release(r);
  r = NULL;
  /* slicing past the end moves the offset by size * stride = INT64_MAX */
  ASSERT_FAILS(disp_aten_slice_Tensor(v, 0, some(1), none, 1, &r),
               "slice: the storage offset of the result overflows int64");
  ASSERT_TRUE(r == NULL);
  disp_tensor_release(v);
  /* an empty tensor's strides and offset address nothing, so any are
   * allowed; what unsqueeze, expand and select derive from them is not */
  int64_t es[2] = {2, 0}, est[2] = {INT64_MAX, INT64_MAX};
  ASSERT_OK(disp_aten_as_strided(t, ints(es, 2), ints(est, 2), some(1), &v));
  ASSERT_FAILS(disp_aten_unsqueeze(v, 0, &r), "unsqueeze: the stride of the result overflows int64");
  int64_t ex[3] = {3, 2, 0};
  ASSERT_FAILS(disp_aten_expand(v, ints(ex, 3), false, &r), "expand: the stride of the result overflows int64");
  ASSERT_FAILS(disp_aten_select_int(v, 0, 1, &r), "select: the storage offset of the result overflows int64");
  ASSERT_TRUE(r == NULL);
  disp_tensor_release(v);
  disp_tensor_release(t);
  return 0;
}

TEST(memory_format_checks_do_not_wrap) {
  /* channel dim of size 2 with stride 2^62 + 1 (a uint8 Meta storage of
   * 2^62 + 2 bytes holds it): 1.13's channels_last test multiplies stride
   * by size, past int64; such a tensor is simply not channels_last */
  int64_t n = (INT64_C(1) << 62) + 2, sz[4] = {1, 2, 1, 1}, st[4] = {1, (INT64_C(1) << 62) + 1, 1, 1};
  disp_tensor *base = NULL, *v = NULL, *r = NULL;
  ASSERT_OK(disp_tensor_empty(&n, 1, DISP_DTYPE_UINT8, disp_device_make(DISP_BACKEND_META, -1), &base));
  ASSERT_OK(disp_aten_as_strided(base, ints(sz, 4), ints(st, 4), none, &v));
  disp_tensor_list l = {&v, 1};
  ASSERT_OK(disp_aten_cat(l, 0, &r));
  ASSERT_EQ_INT(disp_tensor_strides(r)[1], 1);
  disp_tensor_release(r);
  disp_tensor_release(v);
  disp_tensor_release(base);
  return 0;
}

TEST(double_scalar_past_int64_is_not_converted) {
  /* a float op with alpha = 1e300: the operands' int64 copy of alpha
   * (used by integer loops only) must not be a C conversion out of range.
   * -fsanitize=undefined leaves float-cast-overflow out, so this checks
   * the result only; build with -fsanitize=float-cast-overflow to see it. */
  int64_t two = 2;
  disp_tensor *x = NULL, *r = NULL;
  ASSERT_OK(disp_aten_ones(ints(&two, 1), DISP_DTYPE_FLOAT64, -1, no_device, no_pin, &x));
  ASSERT_OK(disp_aten_add_Scalar(x, disp_scalar_double(1e-300), disp_scalar_double(1e300), &r));
  ASSERT_TRUE(((const double *)disp_tensor_data_ptr(r))[1] == 2.0);
  disp_tensor_release(r);
  disp_tensor_release(x);
  return 0;
}

static disp_status arange3(disp_scalar s, disp_scalar e, disp_scalar step, int32_t dtype, disp_tensor **out) {
  return disp_aten_arange_start_step(s, e, step, dtype, -1, meta_device, no_pin, out);
}

TEST(arange_extreme_bounds) {
  disp_tensor *r = NULL;
  /* the exact length 2^64 - 1 is past int64 (1.13's int64 formula wraps) */
  ASSERT_FAILS(arange3(disp_scalar_int(INT64_MIN), disp_scalar_int(INT64_MAX), disp_scalar_int(1), -1, &r),
               "invalid size, possible overflow?");
  ASSERT_FAILS(arange3(disp_scalar_int(INT64_MAX), disp_scalar_int(INT64_MIN), disp_scalar_int(-1), -1, &r),
               "invalid size, possible overflow?");
  /* a step as large as the distance: two elements, no wrap in end - start + step */
  ASSERT_OK(arange3(disp_scalar_int(INT64_MIN), disp_scalar_int(INT64_MAX), disp_scalar_int(INT64_MAX), -1, &r));
  ASSERT_EQ_INT(disp_tensor_numel(r), 3);
  disp_tensor_release(r);
  ASSERT_OK(arange3(disp_scalar_int(INT64_MAX), disp_scalar_int(INT64_MIN), disp_scalar_int(INT64_MIN), -1, &r));
  ASSERT_EQ_INT(disp_tensor_numel(r), 2);
  disp_tensor_release(r);
  r = NULL;
  /* computed on the CPU: the values themselves must not wrap either */
  disp_tensor *c = NULL;
  ASSERT_OK(disp_aten_arange_start_step(disp_scalar_int(INT64_MAX - 2), disp_scalar_int(INT64_MAX),
                                        disp_scalar_int(1), -1, -1, no_device, no_pin, &c));
  ASSERT_EQ_INT(disp_tensor_numel(c), 2);
  ASSERT_EQ_INT(((const int64_t *)disp_tensor_data_ptr(c))[1], INT64_MAX - 1);
  disp_tensor_release(c);
  ASSERT_FAILS(arange3(disp_scalar_int(0), disp_scalar_int(INT64_MIN), disp_scalar_int(1), -1, &r),
               "upper bound and larger bound inconsistent with step sign");
  /* a double bound outside int64 for an int64 result: 1.13's Scalar::to */
  ASSERT_FAILS(arange3(disp_scalar_int(0), disp_scalar_double(1e30), disp_scalar_int(1), DISP_DTYPE_INT64, &r),
               "value cannot be converted to type int64_t without overflow");
  /* floating: a length of 2^63 or more, and a nan step */
  ASSERT_FAILS(arange3(disp_scalar_double(0), disp_scalar_double(9223372036854775808.0), disp_scalar_double(1),
                       DISP_DTYPE_FLOAT64, &r),
               "invalid size, possible overflow?");
  ASSERT_FAILS(arange3(disp_scalar_double(-1e308), disp_scalar_double(1e308), disp_scalar_double(1e-300),
                       DISP_DTYPE_FLOAT64, &r),
               "invalid size, possible overflow?");
  ASSERT_FAILS(arange3(disp_scalar_double(0), disp_scalar_double(1), disp_scalar_double(NAN), DISP_DTYPE_FLOAT64, &r),
               "step must be nonzero");
  ASSERT_TRUE(r == NULL);
  return 0;
}

static disp_status conv(disp_tensor *x, disp_tensor *w, int64_t stride, int64_t pad, int64_t dil, disp_tensor **out) {
  return disp_aten_conv2d(x, w, NULL, ints(&stride, 1), ints(&pad, 1), ints(&dil, 1), 1, out);
}

TEST(conv2d_huge_padding_and_dilation) {
  int64_t xs[4] = {1, 1, 4, 4}, ws[4] = {1, 1, 3, 3};
  disp_tensor *x = make(xs, 4, DISP_BACKEND_META), *w = make(ws, 4, DISP_BACKEND_META), *r = NULL;
  ASSERT_TRUE(x && w);
  /* dilation * (k - 1) + 1 is past int64: the kernel is larger than any input */
  ASSERT_FAILS(conv(x, w, 1, 0, INT64_MAX, &r),
               "Calculated padded input size per channel: (4 x 4). Kernel size: (18446744073709551615 x "
               "18446744073709551615). Kernel size can't be greater than actual input size");
  ASSERT_FAILS(conv(x, w, 1, INT64_C(1) << 61, INT64_MAX / 2, &r),
               "Kernel size: (9223372036854775807 x 9223372036854775807)");
  /* huge padding: 4 + 2^62 per dim fits, the output's element count does not */
  ASSERT_FAILS(conv(x, w, 1, INT64_C(1) << 61, 1, &r),
               "Storage size calculation overflowed with sizes=[1, 1, 4611686018427387906, 4611686018427387906]");
  /* a large stride makes that output small: it is computed exactly */
  ASSERT_OK(conv(x, w, INT64_C(1) << 61, INT64_C(1) << 61, 1, &r));
  ASSERT_EQ_INT(disp_tensor_sizes(r)[2], 3);
  ASSERT_EQ_INT(disp_tensor_sizes(r)[3], 3);
  disp_tensor_release(r);
  r = NULL;
  /* padding so large the padded input is past int64: refused, not wrapped */
  ASSERT_FAILS(conv(x, w, INT64_MAX, INT64_MAX / 2 + 2, 1, &r),
               "Calculated padded input size per channel: (9223372036854775814 x 9223372036854775814). Padded "
               "sizes past 9223372036854775807 are not supported");
  ASSERT_TRUE(r == NULL);
  /* transposed: the output size formula, exact */
  int64_t st = INT64_MAX, pad = 0, dil = 1, op = 0, big = INT64_MAX / 2;
  ASSERT_FAILS(
      disp_aten_convolution(x, w, NULL, ints(&st, 1), ints(&pad, 1), ints(&dil, 1), true, ints(&op, 1), 1, &r),
      "Calculated output size per channel (27670116110564327424) plus padding is "
      "past 9223372036854775807, which is not supported");
  st = 1;
  ASSERT_FAILS(
      disp_aten_convolution(x, w, NULL, ints(&st, 1), ints(&big, 1), ints(&dil, 1), true, ints(&op, 1), 1, &r),
      "Calculated output size per channel is non-positive "
      "(-9223372036854775800). Output size is too small");
  ASSERT_TRUE(r == NULL);
  disp_tensor_release(x);
  disp_tensor_release(w);
  return 0;
}

TEST(max_pool2d_huge_kernel_and_dilation) {
  int64_t xs[4] = {1, 1, 4, 4};
  disp_tensor *x = make(xs, 4, DISP_BACKEND_META), *r = NULL;
  ASSERT_TRUE(x != NULL);
  int64_t k = 3, s = 1, p = 0, d = INT64_MAX;
  ASSERT_FAILS(disp_aten_max_pool2d(x, ints(&k, 1), ints(&s, 1), ints(&p, 1), ints(&d, 1), false, &r),
               "Given input size: (1x4x4). Calculated output size: "
               "(1x-18446744073709551610x-18446744073709551610). Output size is too small");
  ASSERT_TRUE(r == NULL);
  disp_tensor_release(x);
  return 0;
}

TEST(max_pool2d_huge_window_runs_in_bounded_time) {
  /* kernel 2^62 with padding 2^61 over a 5 x 5 input: a 6 x 6 output
   * whose every window covers the input. Stepping to the first tap one
   * dilation at a time (1.13's loop) would take 2^61 steps per window. */
  int64_t sizes[4] = {1, 1, 5, 5}, k = INT64_C(1) << 62, s = 1, p = INT64_C(1) << 61, d = 1;
  disp_tensor *a = NULL, *x = NULL, *y = NULL, *idx = NULL;
  ASSERT_OK(disp_aten_arange(disp_scalar_int(25), DISP_DTYPE_FLOAT32, -1, no_device, no_pin, &a));
  ASSERT_OK(disp_aten_view(a, ints(sizes, 4), &x));
  ASSERT_OK(
      disp_aten_max_pool2d_with_indices(x, ints(&k, 1), ints(&s, 1), ints(&p, 1), ints(&d, 1), false, &y, &idx));
  ASSERT_EQ_INT(disp_tensor_sizes(y)[2], 6);
  ASSERT_EQ_INT(disp_tensor_sizes(y)[3], 6);
  const float *yv = disp_tensor_data_ptr(y);
  const int64_t *iv = disp_tensor_data_ptr(idx);
  for (int i = 0; i < 36; i++) {
    ASSERT_TRUE(yv[i] == 24.0f);
    ASSERT_EQ_INT(iv[i], 24);
  }
  /* a dilation near INT64_MAX: the tap after the first is past the input */
  int64_t k2 = 2, s2 = INT64_MAX, d2 = INT64_MAX - 1, p0 = 0;
  disp_tensor_release(y);
  disp_tensor_release(idx);
  ASSERT_OK(
      disp_aten_max_pool2d_with_indices(x, ints(&k2, 1), ints(&s2, 1), ints(&p0, 1), ints(&d2, 1), true, &y, &idx));
  ASSERT_EQ_INT(disp_tensor_numel(y), 1);
  ASSERT_TRUE(((const float *)disp_tensor_data_ptr(y))[0] == 0.0f);
  disp_tensor_release(y);
  disp_tensor_release(idx);
  /* padding 1 puts the first tap at -1, the next past the input: no tap
   * at all, and 1.13's index hs * W + ws would pass int64 */
  int64_t p1 = 1;
  ASSERT_OK(
      disp_aten_max_pool2d_with_indices(x, ints(&k2, 1), ints(&s2, 1), ints(&p1, 1), ints(&d2, 1), true, &y, &idx));
  ASSERT_EQ_INT(disp_tensor_numel(y), 1);
  ASSERT_TRUE(isinf(((const float *)disp_tensor_data_ptr(y))[0]));
  ASSERT_EQ_INT(((const int64_t *)disp_tensor_data_ptr(idx))[0], -1);
  /* backward refuses indices outside the plane, INT64_MAX included */
  disp_tensor *gi = NULL;
  for (int i = 0; i < 2; i++) {
    ((int64_t *)disp_tensor_data_ptr(idx))[0] = i ? INT64_MAX : -1;
    ASSERT_FAILS(disp_aten_max_pool2d_with_indices_backward(y, x, ints(&k2, 1), ints(&s2, 1), ints(&p1, 1),
                                                            ints(&d2, 1), true, idx, &gi),
                 i ? "index 9223372036854775808 is out of bounds for an input plane of 25 "
                     "elements"
                   : "index -1 is out of bounds for an input plane of 25 elements");
  }
  ASSERT_TRUE(gi == NULL);
  disp_tensor_release(y);
  disp_tensor_release(idx);
  disp_tensor_release(x);
  disp_tensor_release(a);
  return 0;
}

TEST(dim_count_above_the_limit_is_refused) {
  /* A list longer than DISP_TENSOR_MAX_DIMS is refused by its length
   * alone: the array holds 65 values and a length of 2^32 + 2 must not be
   * read (ASan would see it) nor narrowed to 2 dims. */
  int64_t sizes[DISP_TENSOR_MAX_DIMS + 1];
  for (int i = 0; i <= DISP_TENSOR_MAX_DIMS; i++) sizes[i] = 1;
  disp_tensor *r = NULL;
  size_t lens[2] = {DISP_TENSOR_MAX_DIMS + 1, ((size_t)1 << 32) + 2};
  char want[96];
  for (int i = 0; i < 2; i++) {
    disp_int_list l = ints(sizes, lens[i]);
    snprintf(want, sizeof want, "empty: the number of dimensions must be between 0 and 64, got %zu", lens[i]);
    ASSERT_FAILS(disp_aten_ones(l, -1, -1, no_device, no_pin, &r), want);
    ASSERT_FAILS(disp_aten_empty_memory_format(l, -1, -1, meta_device, no_pin, -1, &r), want);
    snprintf(want, sizeof want, "empty_strided: the number of dimensions must be between 0 and 64, got %zu", lens[i]);
    ASSERT_FAILS(disp_aten_empty_strided(l, l, -1, -1, no_device, no_pin, &r), want);
  }
  int64_t one = 1;
  disp_tensor *t = make(&one, 1, DISP_BACKEND_CPU);
  ASSERT_TRUE(t != NULL);
  disp_int_list l = ints(sizes, lens[1]);
  ASSERT_FAILS(disp_aten_rand(l, -1, -1, no_device, no_pin, &r),
               "rand: the number of dimensions must be between 0 and 64, got 4294967298");
  ASSERT_FAILS(disp_aten_resize_(t, l, -1, &r),
               "resize_: the number of dimensions must be between 0 and 64, got 4294967298");
  ASSERT_EQ_INT(disp_tensor_ndim(t), 1);
  ASSERT_FAILS(disp_aten_view(t, l, &r), "view: the number of dimensions must be between 0 and 64, got 4294967298");
  ASSERT_FAILS(disp_aten_reshape(t, l, &r),
               "reshape: the number of dimensions must be between 0 and 64, got 4294967298");
  ASSERT_FAILS(disp_aten_expand(t, l, false, &r),
               "expand: the number of dimensions must be between 0 and 64, got 4294967298");
  ASSERT_FAILS(disp_aten_as_strided(t, l, l, none, &r),
               "as_strided: the number of dimensions must be between 0 and 64, got 4294967298");
  ASSERT_TRUE(r == NULL);
  disp_tensor_release(t);
  return 0;
}

TEST(numel_overflow) {
  int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40}, zeros[2] = {0, 0}, ones[2] = {1, 1};
  disp_tensor *r = NULL;
  /* contiguous allocation: 1.13's computeStorageNbytesContiguous */
  ASSERT_FAILS(disp_aten_ones(ints(huge, 2), -1, -1, meta_device, no_pin, &r),
               "Storage size calculation overflowed with sizes=[1099511627776, 1099511627776]");
  /* strides 0 need one element of storage; the count fails as 1.13's
   * TensorImpl::safe_compute_numel does */
  ASSERT_FAILS(disp_aten_empty_strided(ints(huge, 2), ints(zeros, 2), -1, -1, meta_device, no_pin, &r),
               "numel: integer multiplication overflow");
  disp_tensor *t = make(ones, 1, DISP_BACKEND_CPU);
  ASSERT_TRUE(t != NULL);
  ASSERT_FAILS(disp_aten_as_strided(t, ints(huge, 2), ints(zeros, 2), none, &r),
               "numel: integer multiplication overflow");
  /* a view whose shape's product passes int64 matches no element count */
  ASSERT_FAILS(disp_aten_view(t, ints(huge, 2), &r),
               "shape '[1099511627776, 1099511627776]' is invalid for input of size 1");
  ASSERT_TRUE(r == NULL);
  disp_tensor_release(t);
  /* cat along a dim whose sizes sum past int64: 8 x 2^60 */
  int64_t big = INT64_C(1) << 60;
  disp_tensor *a = make(&big, 1, DISP_BACKEND_META);
  ASSERT_TRUE(a != NULL);
  disp_tensor *eight[8] = {a, a, a, a, a, a, a, a};
  disp_tensor_list l = {eight, 8};
  ASSERT_FAILS(disp_aten_cat(l, 0, &r),
               "torch.cat(): the sum of the sizes in dimension 0 overflows int64 at tensor number 7 in the list");
  ASSERT_TRUE(r == NULL);
  disp_tensor_release(a);
  return 0;
}

TEST(storage_extent_overflow) {
  int64_t sz[2] = {3, 2}, st[2] = {INT64_C(1) << 62, 1}, one = 1;
  disp_tensor *r = NULL;
  /* 1 + 2 * 2^62 + 1 elements: past int64 */
  ASSERT_FAILS(disp_aten_empty_strided(ints(sz, 2), ints(st, 2), DISP_DTYPE_UINT8, -1, meta_device, no_pin, &r),
               "Storage size calculation overflowed with sizes=[3, 2] and strides=[4611686018427387904, 1]");
  /* fits in elements, not in bytes */
  int64_t st2[2] = {INT64_C(1) << 61, 1};
  ASSERT_FAILS(disp_aten_empty_strided(ints(sz, 2), ints(st2, 2), DISP_DTYPE_FLOAT64, -1, meta_device, no_pin, &r),
               "Storage size calculation overflowed with sizes=[3, 2] and strides=");
  /* as_strided: the extent from a huge offset */
  disp_tensor *t = make(&one, 1, DISP_BACKEND_CPU);
  ASSERT_TRUE(t != NULL);
  ASSERT_FAILS(disp_aten_as_strided(t, ints(sz, 2), ints(st, 2), none, &r),
               "Storage size calculation overflowed with sizes=[3, 2] and strides=[4611686018427387904, 1]");
  int64_t s1 = 2, st1 = 1;
  ASSERT_FAILS(disp_aten_as_strided(t, ints(&s1, 1), ints(&st1, 1), some(INT64_MAX), &r),
               "Storage size calculation overflowed with sizes=[2] and strides=[1]");
  ASSERT_TRUE(r == NULL);
  disp_tensor_release(t);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(slice_extreme_bounds_clamp),
    TEST_ENTRY(view_offsets_and_strides_do_not_wrap),
    TEST_ENTRY(memory_format_checks_do_not_wrap),
    TEST_ENTRY(double_scalar_past_int64_is_not_converted),
    TEST_ENTRY(arange_extreme_bounds),
    TEST_ENTRY(conv2d_huge_padding_and_dilation),
    TEST_ENTRY(max_pool2d_huge_kernel_and_dilation),
    TEST_ENTRY(max_pool2d_huge_window_runs_in_bounded_time),
    TEST_ENTRY(dim_count_above_the_limit_is_refused),
    TEST_ENTRY(numel_overflow),
    TEST_ENTRY(storage_extent_overflow),
    TEST_END,
};

TEST_MAIN()
