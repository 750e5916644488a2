/*
 * test_tensor_util.c - disp_tensor_format/print (PyTorch 1.13's repr, the
 * expected strings are what python3-torch 1.13 prints for the same tensors)
 * and disp_tensor_allclose.
 */
#include <math.h>

#include "disp/tensor_util.h"
#include "test.h"

static const disp_device cpu = {DISP_BACKEND_CPU, -1};

/* A CPU tensor of `dt` holding `vals` (converted) in contiguous order. */
static int make(const int64_t *sizes, int ndim, disp_dtype dt, const double *vals, disp_tensor **out) {
  disp_tensor *t;
  if (disp_tensor_empty(sizes, ndim, dt, cpu, &t) != DISP_OK) return 1;
  char *p = disp_tensor_data_ptr(t);
  size_t isz = disp_tensor_itemsize(t);
  for (int64_t i = 0; i < disp_tensor_numel(t); i++) {
    double v = vals[i];
    switch (dt) {
    case DISP_DTYPE_FLOAT32: *(float *)(p + i * isz) = (float)v; break;
    case DISP_DTYPE_FLOAT64: *(double *)(p + i * isz) = v; break;
    case DISP_DTYPE_INT64: *(int64_t *)(p + i * isz) = (int64_t)v; break;
    case DISP_DTYPE_INT32: *(int32_t *)(p + i * isz) = (int32_t)v; break;
    case DISP_DTYPE_BOOL: *(unsigned char *)(p + i * isz) = v != 0; break;
    default: return 1;
    }
  }
  *out = t;
  return 0;
}

static int check_format(const int64_t *sizes, int ndim, disp_dtype dt, const double *vals, const char *want) {
  disp_tensor *t;
  ASSERT_TRUE(make(sizes, ndim, dt, vals, &t) == 0);
  char *s;
  ASSERT_OK(disp_tensor_format(t, &s));
  ASSERT_EQ_STR(s, want);
  free(s);
  disp_tensor_release(t);
  return 0;
}

TEST(format_integer_valued_floats) {
  int64_t sz[2] = {2, 2};
  double v[4] = {1, 2, 3, 4};
  return check_format(sz, 2, DISP_DTYPE_FLOAT32, v, "tensor([[1., 2.],\n        [3., 4.]])");
}

TEST(format_fractions_and_padding) {
  int64_t sz[1] = {3};
  double v[3] = {1.5, -2.25, 10};
  return check_format(sz, 1, DISP_DTYPE_FLOAT32, v, "tensor([ 1.5000, -2.2500, 10.0000])");
}

TEST(format_scientific) {
  int64_t sz[1] = {2};
  double v[2] = {1e-5, 1.0};
  if (check_format(sz, 1, DISP_DTYPE_FLOAT64, v, "tensor([1.0000e-05, 1.0000e+00], dtype=torch.float64)")) return 1;
  double w[2] = {1, 1e4};
  return check_format(sz, 1, DISP_DTYPE_FLOAT32, w, "tensor([1.0000e+00, 1.0000e+04])");
}

TEST(format_nan_inf) {
  int64_t sz[1] = {3};
  double v[3] = {NAN, INFINITY, 1.5};
  return check_format(sz, 1, DISP_DTYPE_FLOAT32, v, "tensor([   nan,    inf, 1.5000])");
}

TEST(format_ints_and_bools) {
  int64_t sz[1] = {3};
  double v[3] = {1, -20, 3};
  if (check_format(sz, 1, DISP_DTYPE_INT64, v, "tensor([  1, -20,   3])")) return 1;
  if (check_format(sz, 1, DISP_DTYPE_INT32, v, "tensor([  1, -20,   3], dtype=torch.int32)")) return 1;
  int64_t s2[1] = {2};
  double b[2] = {1, 0};
  return check_format(s2, 1, DISP_DTYPE_BOOL, b, "tensor([ True, False])");
}

TEST(format_scalar_and_3d) {
  double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  if (check_format(NULL, 0, DISP_DTYPE_FLOAT32, v + 2, "tensor(3.)")) return 1;
  double h = 0.5;
  if (check_format(NULL, 0, DISP_DTYPE_FLOAT32, &h, "tensor(0.5000)")) return 1;
  int64_t sz[3] = {2, 2, 2};
  return check_format(sz, 3, DISP_DTYPE_INT64, v,
                      "tensor([[[1, 2],\n         [3, 4]],\n\n        [[5, 6],\n         [7, 8]]])");
}

TEST(format_empty_and_meta) {
  int64_t sz[2] = {0, 3};
  if (check_format(sz, 2, DISP_DTYPE_FLOAT32, NULL, "tensor([], size=(0, 3))")) return 1;
  if (check_format(sz, 1, DISP_DTYPE_INT64, NULL, "tensor([], dtype=torch.int64)")) return 1;
  disp_tensor *m;
  int64_t ms[2] = {2, 3};
  ASSERT_OK(disp_tensor_empty(ms, 2, DISP_DTYPE_FLOAT64, disp_device_make(DISP_BACKEND_META, -1), &m));
  char *s;
  ASSERT_OK(disp_tensor_format(m, &s));
  ASSERT_EQ_STR(s, "tensor(..., device='meta', size=(2, 3), dtype=torch.float64)");
  free(s);
  disp_tensor_release(m);
  return 0;
}

TEST(format_wraps_and_summarizes) {
  double v[2000];
  for (int i = 0; i < 2000; i++) v[i] = i;
  int64_t n = 2000;
  if (check_format(&n, 1, DISP_DTYPE_INT64, v, "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])")) return 1;
  int64_t m = 30;
  return check_format(&m, 1, DISP_DTYPE_INT64, v,
                      "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
                      "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29])");
}

TEST(format_strided_view) {
  /* a transposed view prints in logical order */
  int64_t sz[2] = {2, 3};
  double v[6] = {1, 2, 3, 4, 5, 6};
  disp_tensor *t, *tt;
  ASSERT_TRUE(make(sz, 2, DISP_DTYPE_FLOAT32, v, &t) == 0);
  ASSERT_OK(disp_aten_t(t, &tt));
  char *s;
  ASSERT_OK(disp_tensor_format(tt, &s));
  ASSERT_EQ_STR(s, "tensor([[1., 4.],\n        [2., 5.],\n        [3., 6.]])");
  free(s);
  ASSERT_OK(disp_tensor_print(stdout, tt));
  disp_tensor_release(tt);
  disp_tensor_release(t);
  ASSERT_STATUS(disp_tensor_format(NULL, &s), DISP_ERR_INVALID_ARG);
  return 0;
}

TEST(allclose) {
  int64_t sz[1] = {3};
  double a[3] = {1, 2, 3}, b[3] = {1, 2, 3.00001}, c[3] = {1, 2, 3.1}, n[3] = {NAN, 1, 2};
  disp_tensor *ta, *tb, *tc, *ti, *tn, *tn2;
  ASSERT_TRUE(make(sz, 1, DISP_DTYPE_FLOAT32, a, &ta) == 0);
  ASSERT_TRUE(make(sz, 1, DISP_DTYPE_FLOAT64, b, &tb) == 0);
  ASSERT_TRUE(make(sz, 1, DISP_DTYPE_FLOAT32, c, &tc) == 0);
  ASSERT_TRUE(make(sz, 1, DISP_DTYPE_INT64, a, &ti) == 0);
  ASSERT_TRUE(make(sz, 1, DISP_DTYPE_FLOAT64, n, &tn) == 0);
  ASSERT_TRUE(make(sz, 1, DISP_DTYPE_FLOAT64, n, &tn2) == 0);
  int r;
  ASSERT_OK(disp_tensor_allclose(ta, tb, 1e-5, 1e-8, 0, &r));
  ASSERT_EQ_INT(r, 1);
  ASSERT_OK(disp_tensor_allclose(ta, tc, 1e-5, 1e-8, 0, &r));
  ASSERT_EQ_INT(r, 0);
  ASSERT_OK(disp_tensor_allclose(ta, ti, 0, 0, 0, &r));
  ASSERT_EQ_INT(r, 1);
  ASSERT_OK(disp_tensor_allclose(tn, tn2, 0, 0, 0, &r));
  ASSERT_EQ_INT(r, 0);
  ASSERT_OK(disp_tensor_allclose(tn, tn2, 0, 0, 1, &r));
  ASSERT_EQ_INT(r, 1);
  int64_t two = 2;
  disp_tensor *short_;
  ASSERT_TRUE(make(&two, 1, DISP_DTYPE_FLOAT32, a, &short_) == 0);
  ASSERT_OK(disp_tensor_allclose(ta, short_, 1, 1, 0, &r));
  ASSERT_EQ_INT(r, 0);
  ASSERT_STATUS(disp_tensor_allclose(ta, tb, -1, 0, 0, &r), DISP_ERR_INVALID_ARG);
  disp_tensor *tl[] = {ta, tb, tc, ti, tn, tn2, short_};
  for (size_t i = 0; i < sizeof tl / sizeof *tl; i++) disp_tensor_release(tl[i]);
  return 0;
}

TEST_LIST = {TEST_ENTRY(format_integer_valued_floats), TEST_ENTRY(format_fractions_and_padding),
             TEST_ENTRY(format_scientific), TEST_ENTRY(format_nan_inf), TEST_ENTRY(format_ints_and_bools),
             TEST_ENTRY(format_scalar_and_3d), TEST_ENTRY(format_empty_and_meta),
             TEST_ENTRY(format_wraps_and_summarizes), TEST_ENTRY(format_strided_view), TEST_ENTRY(allclose),
             TEST_END};
TEST_MAIN()
