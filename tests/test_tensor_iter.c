/*
 * test_tensor_iter.c - the shared elementwise/reduction layer through the
 * operators that use it: broadcasting errors, non-contiguous inputs giving
 * the same values as contiguous copies, the layout of fresh outputs
 * (TensorIterator's rule), Meta agreeing with CPU, overlap refusal, and
 * tensors too large for any fast path to hide a bug.
 */
#include <math.h>

#include "test.h"

static const disp_device cpu = {DISP_BACKEND_CPU, -1};

static disp_int_list ints(const int64_t *v, size_t n) {
  disp_int_list l = {v, n};
  return l;
}

/* A contiguous float64 tensor of `sizes` holding f(i) at flat index i. */
static disp_tensor *filled(const int64_t *sizes, int nd, double (*f)(int64_t)) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, nd, DISP_DTYPE_FLOAT64, cpu, &t) != DISP_OK) return NULL;
  double *p = disp_tensor_data_ptr(t);
  for (int64_t i = 0; i < disp_tensor_numel(t); i++) p[i] = f(i);
  return t;
}

static double wave(int64_t i) { return (double)((i * 37) % 23) / 8.0 - 1.375; }
static double ramp(int64_t i) { return (double)(i % 13) / 4.0 - 1.5; }

/* Element at logical (row-major) index k of any strided float64 tensor. */
static double elem(const disp_tensor *t, int64_t k) {
  int nd = disp_tensor_ndim(t);
  const int64_t *s = disp_tensor_sizes(t), *st = disp_tensor_strides(t);
  int64_t off = 0;
  for (int d = nd - 1; d >= 0; d--) {
    off += (k % s[d]) * st[d];
    k /= s[d];
  }
  return ((const double *)disp_tensor_data_ptr(t))[off];
}

static int same_values(const disp_tensor *a, const disp_tensor *b) {
  if (disp_tensor_numel(a) != disp_tensor_numel(b)) return 0;
  for (int64_t k = 0; k < disp_tensor_numel(a); k++) {
    double x = elem(a, k), y = elem(b, k);
    if (!(x == y || (isnan(x) && isnan(y)))) return 0;
  }
  return 1;
}

TEST(broadcast_errors_name_the_dims) {
  int64_t a[2] = {2, 3}, b[1] = {4};
  disp_tensor *x = filled(a, 2, wave), *y = filled(b, 1, ramp), *r = NULL;
  ASSERT_STATUS(disp_aten_add_Tensor(x, y, disp_scalar_int(1), &r), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "The size of tensor a (3) must match the size of tensor b (4) at "
                                     "non-singleton dimension 1");
  ASSERT_TRUE(r == NULL);
  /* in-place: self cannot grow to the broadcast shape */
  int64_t c[2] = {3, 1}, d[2] = {1, 3};
  disp_tensor *p = filled(c, 2, wave), *q = filled(d, 2, ramp);
  ASSERT_STATUS(disp_aten_mul__Tensor(p, q, &r), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "output with shape [3, 1] doesn't match the broadcast shape [3, 3]");
  disp_tensor_release(x);
  disp_tensor_release(y);
  disp_tensor_release(p);
  disp_tensor_release(q);
  return 0;
}

/* Every op on a permuted view gives what it gives on a contiguous copy. */
TEST(non_contiguous_inputs_match_contiguous_copies) {
  int64_t sz[3] = {6, 5, 4}, perm[3] = {2, 0, 1}, bsz[2] = {6, 1};
  disp_tensor *base = filled(sz, 3, wave), *v = NULL, *c = NULL, *o = filled(bsz, 2, ramp);
  ASSERT_OK(disp_aten_permute(base, ints(perm, 3), &v)); /* (4, 6, 5), not contiguous */
  ASSERT_FALSE(disp_tensor_is_contiguous(v));
  ASSERT_OK(disp_aten_contiguous(v, 0, &c));
  ASSERT_TRUE(disp_tensor_is_contiguous(c));
  disp_tensor *r1, *r2;
  ASSERT_OK(disp_aten_sub_Tensor(v, o, disp_scalar_double(0.5), &r1));
  ASSERT_OK(disp_aten_sub_Tensor(c, o, disp_scalar_double(0.5), &r2));
  ASSERT_TRUE(same_values(r1, r2));
  disp_tensor_release(r1);
  disp_tensor_release(r2);
  ASSERT_OK(disp_aten_exp(v, &r1));
  ASSERT_OK(disp_aten_exp(c, &r2));
  ASSERT_TRUE(same_values(r1, r2));
  disp_tensor_release(r1);
  disp_tensor_release(r2);
  int64_t dims[2] = {0, 2};
  disp_opt_int_list dl = {{dims, 2}, true};
  ASSERT_OK(disp_aten_sum_dim_IntList(v, dl, true, -1, &r1));
  ASSERT_OK(disp_aten_sum_dim_IntList(c, dl, true, -1, &r2));
  ASSERT_EQ_INT(disp_tensor_ndim(r1), 3);
  ASSERT_EQ_INT(disp_tensor_sizes(r1)[1], 6);
  ASSERT_TRUE(same_values(r1, r2));
  /* and against a naive sum */
  for (int64_t j = 0; j < 6; j++) {
    double want = 0;
    for (int64_t i = 0; i < 4; i++)
      for (int64_t k = 0; k < 5; k++) want += elem(c, i * 30 + j * 5 + k);
    ASSERT_TRUE(elem(r1, j) == want);
  }
  disp_tensor_release(r1);
  disp_tensor_release(r2);
  disp_tensor *i1, *i2;
  ASSERT_OK(disp_aten_max_dim(v, 1, false, &r1, &i1));
  ASSERT_OK(disp_aten_max_dim(c, 1, false, &r2, &i2));
  ASSERT_TRUE(same_values(r1, r2));
  ASSERT_EQ_INT(memcmp(disp_tensor_data_ptr(i1), disp_tensor_data_ptr(i2), 20 * sizeof(int64_t)), 0);
  disp_tensor_release(r1);
  disp_tensor_release(r2);
  disp_tensor_release(i1);
  disp_tensor_release(i2);
  ASSERT_OK(disp_aten__softmax(v, 1, false, &r1));
  ASSERT_OK(disp_aten__softmax(c, 1, false, &r2));
  ASSERT_TRUE(same_values(r1, r2));
  disp_tensor_release(r1);
  disp_tensor_release(r2);
  disp_tensor_release(base);
  disp_tensor_release(v);
  disp_tensor_release(c);
  disp_tensor_release(o);
  return 0;
}

static int strides_are(const disp_tensor *t, const int64_t *want) {
  for (int i = 0; i < disp_tensor_ndim(t); i++)
    if (disp_tensor_strides(t)[i] != want[i]) return 0;
  return 1;
}

/* Fresh outputs follow the inputs' layout (TensorIterator's rule), on the
 * CPU and on Meta alike. */
TEST(output_layout_follows_inputs) {
  int64_t sz[2] = {3, 2}, row[1] = {3};
  disp_tensor *a = filled(sz, 2, wave), *t = NULL, *b = filled(row, 1, ramp), *r = NULL;
  ASSERT_OK(disp_aten_t(a, &t)); /* (2,3) strides (1,2) */
  ASSERT_OK(disp_aten_add_Tensor(t, b, disp_scalar_int(1), &r));
  ASSERT_TRUE(strides_are(r, (int64_t[]){1, 2}));
  disp_tensor_release(r);
  ASSERT_OK(disp_aten_mul_Tensor(t, t, &r));
  ASSERT_TRUE(strides_are(r, (int64_t[]){1, 2}));
  disp_tensor_release(r);
  /* channels_last stays channels_last */
  int64_t nchw[4] = {1, 2, 3, 3}, nhwc[4] = {1, 3, 3, 2}, p[4] = {0, 3, 1, 2};
  disp_tensor *x = filled(nhwc, 4, wave), *cl = NULL;
  ASSERT_OK(disp_aten_permute(x, ints(p, 4), &cl));
  ASSERT_EQ_INT(disp_tensor_sizes(cl)[1], nchw[1]);
  ASSERT_OK(disp_aten_neg(cl, &r));
  ASSERT_TRUE(strides_are(r, (int64_t[]){18, 1, 6, 2}));
  disp_tensor_release(r);
  /* the same shapes and strides on Meta */
  disp_tensor *m = NULL, *mt = NULL, *mb = NULL;
  ASSERT_OK(disp_tensor_empty(sz, 2, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_META, -1), &m));
  ASSERT_OK(disp_tensor_empty(row, 1, DISP_DTYPE_INT64, disp_device_make(DISP_BACKEND_META, -1), &mb));
  ASSERT_OK(disp_aten_t(m, &mt));
  ASSERT_OK(disp_aten_add_Tensor(mt, mb, disp_scalar_int(1), &r));
  ASSERT_EQ_INT(disp_tensor_device(r).type, DISP_BACKEND_META);
  ASSERT_EQ_INT(disp_tensor_dtype(r), DISP_DTYPE_FLOAT32);
  ASSERT_TRUE(strides_are(r, (int64_t[]){1, 2}));
  disp_tensor_release(r);
  disp_tensor_release(m);
  disp_tensor_release(mt);
  disp_tensor_release(mb);
  disp_tensor_release(x);
  disp_tensor_release(cl);
  disp_tensor_release(a);
  disp_tensor_release(t);
  disp_tensor_release(b);
  return 0;
}

TEST(overlapping_destinations_are_refused) {
  int64_t one[1] = {1}, four[2] = {3, 4};
  disp_tensor *s = filled(one, 1, wave), *e = NULL, *o = filled(four, 2, ramp), *r = NULL;
  ASSERT_OK(disp_aten_expand(s, ints(four, 2), false, &e));
  ASSERT_STATUS(disp_aten_add__Tensor(e, o, disp_scalar_int(1), &r), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "more than one element of the written-to tensor refers to a single memory");
  ASSERT_STATUS(disp_aten_add_out(o, o, disp_scalar_int(1), e, &r), DISP_ERR_INVALID_ARG);
  /* reading a different view of the written memory is refused too; the
   * very same view is fine */
  disp_tensor *tr = NULL, *sq = filled((int64_t[]){3, 3}, 2, wave);
  ASSERT_OK(disp_aten_t(sq, &tr));
  ASSERT_STATUS(disp_aten_add__Tensor(sq, tr, disp_scalar_int(1), &r), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "some elements of the input tensor and the written-to tensor refer to a single");
  double before = elem(sq, 4);
  ASSERT_OK(disp_aten_add__Tensor(sq, sq, disp_scalar_int(1), &r));
  ASSERT_TRUE(r == sq && elem(sq, 4) == 2 * before);
  disp_tensor_release(r);
  disp_tensor_release(tr);
  disp_tensor_release(sq);
  /* out= of the wrong size is resized, then written */
  disp_tensor *out = filled(one, 1, wave);
  ASSERT_OK(disp_aten_add_out(o, o, disp_scalar_int(1), out, &r));
  ASSERT_TRUE(r == out);
  ASSERT_EQ_INT(disp_tensor_numel(out), 12);
  ASSERT_TRUE(elem(out, 11) == 2 * elem(o, 11));
  disp_tensor_release(r);
  disp_tensor_release(out);
  disp_tensor_release(s);
  disp_tensor_release(e);
  disp_tensor_release(o);
  return 0;
}

/* Millions of elements: every path (fast, strided, reduction) agrees with
 * plain loops. */
TEST(large_tensors) {
  int64_t sz[2] = {1024, 2048};
  disp_tensor *a = filled(sz, 2, wave), *b = filled(sz, 2, ramp), *r = NULL, *t = NULL;
  ASSERT_OK(disp_aten_add_Tensor(a, b, disp_scalar_int(2), &r));
  const double *pa = disp_tensor_data_ptr(a), *pb = disp_tensor_data_ptr(b), *pr = disp_tensor_data_ptr(r);
  for (int64_t i = 0; i < 1024 * 2048; i++)
    if (pr[i] != pa[i] + 2 * pb[i]) TEST_FAIL_("add differs at %lld", (long long)i);
  disp_tensor_release(r);
  ASSERT_OK(disp_aten_t(a, &t));
  ASSERT_OK(disp_aten_mul_Tensor(t, t, &r)); /* strided in, strided out */
  for (int64_t k = 0; k < 1024 * 2048; k += 4099)
    if (elem(r, k) != elem(t, k) * elem(t, k)) TEST_FAIL_("mul differs at %lld", (long long)k);
  disp_tensor_release(r);
  ASSERT_OK(disp_aten_sum(t, -1, &r));
  double want = 0;
  for (int64_t i = 0; i < 1024 * 2048; i++) want += pa[i];
  ASSERT_TRUE(fabs(*(double *)disp_tensor_data_ptr(r) - want) <= 1e-9 * fabs(want) + 1e-6);
  disp_tensor_release(r);
  /* float32 ones: an exact count far beyond float32's 2^24 step */
  int64_t big[1] = {(int64_t)1 << 25};
  disp_tensor *ones = NULL;
  disp_opt_device dev = {DISP_BACKEND_CPU, -1, true};
  disp_opt_bool pin = {false, false};
  ASSERT_OK(disp_aten_ones(ints(big, 1), DISP_DTYPE_FLOAT32, -1, dev, pin, &ones));
  ASSERT_OK(disp_aten_sum(ones, -1, &r));
  ASSERT_TRUE(*(float *)disp_tensor_data_ptr(r) == (float)((int64_t)1 << 25));
  disp_tensor_release(r);
  disp_tensor_release(ones);
  disp_tensor_release(t);
  disp_tensor_release(a);
  disp_tensor_release(b);
  return 0;
}

TEST_LIST = {TEST_ENTRY(broadcast_errors_name_the_dims), TEST_ENTRY(non_contiguous_inputs_match_contiguous_copies),
             TEST_ENTRY(output_layout_follows_inputs), TEST_ENTRY(overlapping_destinations_are_refused),
             TEST_ENTRY(large_tensors), TEST_END};
TEST_MAIN()
