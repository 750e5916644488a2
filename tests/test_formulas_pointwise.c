/*
 * test_formulas_pointwise.c - what the PyTorch 1.13 reference gradients of
 * tests/data/ops (run by `disp check-ops --grad`) do not show: the node
 * names the pointwise, reduction, shape and copy formulas record, outputs
 * and inputs that are not differentiable, and second derivatives through
 * create_graph (values worked out by hand).
 */
#include <math.h>

#include "test.h"
#include "disp/aten.h"

static disp_tensor *vec(const double *v, int64_t n, int requires_grad) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT64, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK) return NULL;
  memcpy(disp_tensor_data_ptr(t), v, (size_t)n * sizeof *v);
  if (requires_grad && disp_tensor_set_requires_grad(t, 1) != DISP_OK) {
    disp_tensor_release(t);
    return NULL;
  }
  return t;
}
#define VEC(rg, ...) vec((const double[]){__VA_ARGS__}, (int64_t)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)), rg)

/* Whether t (borrowed; float64, any layout) holds want[0..n). */
static int holds(disp_tensor *t, const double *want, int64_t n) {
  if (!t || disp_tensor_numel(t) != n || disp_tensor_dtype(t) != DISP_DTYPE_FLOAT64) return 0;
  disp_tensor *c = NULL;
  if (disp_aten_contiguous(t, DISP_MEMORY_FORMAT_CONTIGUOUS, &c) != DISP_OK) return 0;
  const double *d = disp_tensor_data_ptr(c);
  int ok = 1;
  for (int64_t i = 0; i < n; i++)
    if (fabs(d[i] - want[i]) > 1e-12 * (1 + fabs(want[i]))) ok = 0;
  disp_tensor_release(c);
  return ok;
}
#define HOLDS(t, ...) holds(t, (const double[]){__VA_ARGS__}, (int64_t)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)))

static const char *fn_name(const disp_tensor *t) {
  disp_node *n = disp_tensor_grad_fn(t);
  return n ? disp_node_name(n) : "(none)";
}

/* d/dx of sum(y) with create_graph, then d/dx of sum(that): both kept. */
static int two_grads(disp_tensor *y, disp_tensor *x, disp_tensor **g1, disp_tensor **g2) {
  disp_tensor *s = NULL, *s1 = NULL;
  int ok = disp_aten_sum(y, -1, &s) == DISP_OK && disp_autograd_grad(&s, 1, &x, 1, NULL, -1, 1, 0, g1) == DISP_OK &&
           disp_aten_sum(*g1, -1, &s1) == DISP_OK && disp_autograd_grad(&s1, 1, &x, 1, NULL, -1, 0, 0, g2) == DISP_OK;
  disp_tensor_release(s), disp_tensor_release(s1);
  return ok;
}

TEST(pointwise_node_names) {
  disp_tensor *x = VEC(1, 0.5, -1.5, 2.0), *o = VEC(1, 1.0, -2.0, 2.0), *y = NULL;
  disp_opt_device nodev = {0, 0, false};
  disp_opt_bool nob = {false, false};
  ASSERT_OK(disp_aten_abs(x, &y));
  ASSERT_EQ_STR(fn_name(y), "AbsBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_clamp(x, disp_scalar_double(-1), disp_scalar_double(1), &y));
  ASSERT_EQ_STR(fn_name(y), "ClampBackward1"); /* clamp.Tensor is ClampBackward0 */
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_clamp_min(x, disp_scalar_int(0), &y));
  ASSERT_EQ_STR(fn_name(y), "ClampMinBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_maximum(x, o, &y));
  ASSERT_EQ_STR(fn_name(y), "MaximumBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_minimum(x, o, &y));
  ASSERT_EQ_STR(fn_name(y), "MinimumBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_pow_Tensor_Scalar(x, disp_scalar_int(2), &y));
  ASSERT_EQ_STR(fn_name(y), "PowBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_rsqrt(o, &y));
  ASSERT_EQ_STR(fn_name(y), "RsqrtBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_sqrt(o, &y));
  ASSERT_EQ_STR(fn_name(y), "SqrtBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_clone(x, -1, &y));
  ASSERT_EQ_STR(fn_name(y), "CloneBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten__to_copy(x, DISP_DTYPE_FLOAT32, -1, nodev, nob, false, -1, &y));
  ASSERT_EQ_STR(fn_name(y), "ToCopyBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_tanh_backward(x, o, &y));
  ASSERT_EQ_STR(fn_name(y), "TanhBackwardBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_sigmoid_backward(x, o, &y));
  ASSERT_EQ_STR(fn_name(y), "SigmoidBackwardBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_threshold_backward(x, o, disp_scalar_int(0), &y));
  ASSERT_EQ_STR(fn_name(y), "ThresholdBackwardBackward0");
  disp_tensor_release(y);
  disp_tensor_release(x), disp_tensor_release(o);
  return 0;
}

TEST(shape_and_reduction_node_names) {
  disp_tensor *x = VEC(1, 1, 2, 3, 4, 5, 6), *m = NULL, *y = NULL, *idx = NULL;
  ASSERT_OK(disp_aten_view(x, (disp_int_list){(const int64_t[]){2, 3}, 2}, &m));
  ASSERT_OK(disp_aten_permute(m, (disp_int_list){(const int64_t[]){1, 0}, 2}, &y));
  ASSERT_EQ_STR(fn_name(y), "PermuteBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_transpose_int(m, 0, 1, &y));
  ASSERT_EQ_STR(fn_name(y), "TransposeBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_unsqueeze(m, 1, &y));
  ASSERT_EQ_STR(fn_name(y), "UnsqueezeBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_squeeze_dim(m, 0, &y));
  ASSERT_EQ_STR(fn_name(y), "SqueezeBackward1"); /* squeeze() is SqueezeBackward0 */
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_select_int(m, 1, -1, &y));
  ASSERT_EQ_STR(fn_name(y), "SelectBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_slice_Tensor(m, 1, (disp_opt_int){0, true}, (disp_opt_int){0, false}, 2, &y));
  ASSERT_EQ_STR(fn_name(y), "SliceBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_amax(m, (disp_int_list){(const int64_t[]){1}, 1}, false, &y));
  ASSERT_EQ_STR(fn_name(y), "AmaxBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_max_dim(m, 1, false, &y, &idx));
  ASSERT_EQ_STR(fn_name(y), "MaxBackward0");
  ASSERT_FALSE(disp_tensor_requires_grad(idx)); /* indices are not differentiable */
  ASSERT_TRUE(disp_tensor_grad_fn(idx) == NULL);
  disp_tensor_release(y), disp_tensor_release(idx);
  disp_tensor *both[2] = {x, m};
  ASSERT_OK(disp_aten_stack((disp_tensor_list){both, 1}, 0, &y));
  ASSERT_EQ_STR(fn_name(y), "StackBackward0");
  disp_tensor_release(y);
  ASSERT_OK(disp_aten_cat((disp_tensor_list){both, 1}, 0, &y));
  ASSERT_EQ_STR(fn_name(y), "CatBackward0");
  disp_tensor_release(y);
  disp_tensor_release(m), disp_tensor_release(x);
  return 0;
}

/* copy_ is CopyBackwards (1.13's hand-written node): the overwritten self
 * gets zeros, src the gradient; fill_ and zero_ give zeros. */
TEST(overwrites_give_zeros) {
  disp_tensor *x = VEC(1, 1, 2, 3), *src = VEC(1, 4, 5, 6), *a = NULL, *r = NULL, *s = NULL, *g[2] = {0};
  ASSERT_OK(disp_aten_mul_Scalar(x, disp_scalar_int(3), &a));
  ASSERT_OK(disp_aten_copy_(a, src, false, &r));
  ASSERT_EQ_STR(fn_name(a), "CopyBackwards");
  ASSERT_OK(disp_aten_sum(a, -1, &s));
  disp_tensor *in[2] = {x, src};
  ASSERT_OK(disp_autograd_grad(&s, 1, in, 2, NULL, 0, 0, 0, g));
  ASSERT_TRUE(HOLDS(g[0], 0, 0, 0));
  ASSERT_TRUE(HOLDS(g[1], 1, 1, 1));
  for (int i = 0; i < 2; i++) disp_tensor_release(g[i]), g[i] = NULL;
  disp_tensor_release(r), disp_tensor_release(s), disp_tensor_release(a);
  ASSERT_OK(disp_aten_mul_Scalar(x, disp_scalar_int(3), &a));
  ASSERT_OK(disp_aten_fill__Scalar(a, disp_scalar_int(7), &r));
  ASSERT_EQ_STR(fn_name(a), "FillBackward2"); /* after fill.Scalar and fill.Tensor */
  disp_tensor_release(r);
  ASSERT_OK(disp_aten_zero_(a, &r));
  ASSERT_EQ_STR(fn_name(a), "ZeroBackward0");
  ASSERT_OK(disp_aten_sum(a, -1, &s));
  ASSERT_OK(disp_autograd_grad(&s, 1, &x, 1, NULL, 0, 0, 0, g));
  ASSERT_TRUE(HOLDS(g[0], 0, 0, 0));
  disp_tensor_release(g[0]), disp_tensor_release(r), disp_tensor_release(s), disp_tensor_release(a);
  disp_tensor_release(src), disp_tensor_release(x);
  return 0;
}

/* where.self: the bool condition gets no edge that needs a gradient. */
TEST(where_condition_is_not_differentiable) {
  disp_tensor *x = VEC(1, 1, 2, 3), *o = VEC(1, 10, 20, 30), *cond = NULL, *zero = NULL, *y = NULL, *s = NULL;
  disp_tensor *g[2] = {0};
  ASSERT_OK(disp_aten_scalar_tensor(disp_scalar_double(1.5), DISP_DTYPE_FLOAT64, -1, (disp_opt_device){0, 0, false},
                                    (disp_opt_bool){false, false}, &zero));
  ASSERT_OK(disp_aten_gt_Tensor(x, zero, &cond));
  ASSERT_FALSE(disp_tensor_requires_grad(cond));
  ASSERT_OK(disp_aten_where_self(cond, x, o, &y));
  ASSERT_EQ_STR(fn_name(y), "WhereBackward0");
  ASSERT_EQ_INT(disp_node_num_next(disp_tensor_grad_fn(y)), 2); /* self, other */
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  disp_tensor *in[2] = {x, o};
  ASSERT_OK(disp_autograd_grad(&s, 1, in, 2, NULL, 0, 0, 0, g));
  ASSERT_TRUE(HOLDS(g[0], 0, 1, 1));
  ASSERT_TRUE(HOLDS(g[1], 1, 0, 0));
  disp_tensor_release(g[0]), disp_tensor_release(g[1]);
  disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(cond), disp_tensor_release(zero);
  disp_tensor_release(o), disp_tensor_release(x);
  return 0;
}

/* pow(x, 3): 3x^2 then 6x, the first through PowBackward0's mul/pow. */
TEST(pow_second_derivative) {
  disp_tensor *x = VEC(1, 1, -2, 0.5), *y = NULL, *g1 = NULL, *g2 = NULL;
  ASSERT_OK(disp_aten_pow_Tensor_Scalar(x, disp_scalar_int(3), &y));
  ASSERT_TRUE(two_grads(y, x, &g1, &g2));
  ASSERT_TRUE(HOLDS(g1, 3, 12, 0.75));
  ASSERT_TRUE(disp_tensor_requires_grad(g1));
  ASSERT_TRUE(HOLDS(g2, 6, -12, 3));
  disp_tensor_release(g1), disp_tensor_release(g2), disp_tensor_release(y), disp_tensor_release(x);
  return 0;
}

/* tanh: 1 - t^2, then -2 t (1 - t^2) through TanhBackwardBackward0. */
TEST(tanh_second_derivative_goes_through_tanh_backward) {
  disp_tensor *x = VEC(1, 0.25, -1.0), *y = NULL, *g1 = NULL, *g2 = NULL;
  ASSERT_OK(disp_aten_tanh(x, &y));
  ASSERT_TRUE(two_grads(y, x, &g1, &g2));
  ASSERT_EQ_STR(fn_name(g1), "TanhBackwardBackward0");
  double t0 = tanh(0.25), t1 = tanh(-1.0);
  ASSERT_TRUE(HOLDS(g1, 1 - t0 * t0, 1 - t1 * t1));
  ASSERT_TRUE(HOLDS(g2, -2 * t0 * (1 - t0 * t0), -2 * t1 * (1 - t1 * t1)));
  disp_tensor_release(g1), disp_tensor_release(g2), disp_tensor_release(y), disp_tensor_release(x);
  return 0;
}

/* sigmoid: s (1 - s), then s (1 - s)(1 - 2 s). */
TEST(sigmoid_second_derivative) {
  disp_tensor *x = VEC(1, 0.5, -2.0), *y = NULL, *g1 = NULL, *g2 = NULL;
  ASSERT_OK(disp_aten_sigmoid(x, &y));
  ASSERT_TRUE(two_grads(y, x, &g1, &g2));
  double s0 = 1 / (1 + exp(-0.5)), s1 = 1 / (1 + exp(2.0));
  ASSERT_TRUE(HOLDS(g2, s0 * (1 - s0) * (1 - 2 * s0), s1 * (1 - s1) * (1 - 2 * s1)));
  disp_tensor_release(g1), disp_tensor_release(g2), disp_tensor_release(y), disp_tensor_release(x);
  return 0;
}

/* relu(x) * x = x^2 where x > 0: 2x then 2, the relu mask through
 * ThresholdBackwardBackward0 (whose self gets zeros). */
TEST(relu_second_derivative_goes_through_threshold_backward) {
  disp_tensor *x = VEC(1, 1.5, -2.0, 3.0), *r = NULL, *y = NULL, *g1 = NULL, *g2 = NULL;
  ASSERT_OK(disp_aten_relu(x, &r));
  ASSERT_OK(disp_aten_mul_Tensor(r, x, &y));
  ASSERT_TRUE(two_grads(y, x, &g1, &g2));
  ASSERT_TRUE(HOLDS(g1, 3, 0, 6));
  ASSERT_TRUE(HOLDS(g2, 2, 0, 2));
  disp_tensor_release(g1), disp_tensor_release(g2), disp_tensor_release(y), disp_tensor_release(r);
  disp_tensor_release(x);
  return 0;
}

/* A strided slice of x*x: the slice's backward is built from recorded ops,
 * so the second derivative is 2 at the taken elements, 0 elsewhere. */
TEST(slice_and_select_backward_are_differentiable) {
  disp_tensor *x = VEC(1, 1, 2, 3, 4, 5), *sq = NULL, *y = NULL, *g1 = NULL, *g2 = NULL;
  ASSERT_OK(disp_aten_mul_Tensor(x, x, &sq));
  ASSERT_OK(disp_aten_slice_Tensor(sq, 0, (disp_opt_int){1, true}, (disp_opt_int){0, false}, 2, &y));
  ASSERT_TRUE(two_grads(y, x, &g1, &g2));
  ASSERT_TRUE(HOLDS(g1, 0, 4, 0, 8, 0));
  ASSERT_TRUE(HOLDS(g2, 0, 2, 0, 2, 0));
  disp_tensor_release(g1), disp_tensor_release(g2), disp_tensor_release(y);
  ASSERT_OK(disp_aten_select_int(sq, 0, -2, &y));
  ASSERT_TRUE(two_grads(y, x, &g1, &g2));
  ASSERT_TRUE(HOLDS(g1, 0, 0, 0, 8, 0));
  ASSERT_TRUE(HOLDS(g2, 0, 0, 0, 2, 0));
  disp_tensor_release(g1), disp_tensor_release(g2), disp_tensor_release(y);
  disp_tensor_release(sq), disp_tensor_release(x);
  return 0;
}

/* amax shares the gradient among tied maxima; max.dim gives it to the one
 * its index names. */
TEST(amax_splits_ties_max_dim_picks_one) {
  disp_tensor *x = VEC(1, 3, 1, 3, 2), *y = NULL, *idx = NULL, *s = NULL, *g = NULL;
  disp_int_list all = {NULL, 0};
  ASSERT_OK(disp_aten_amax(x, all, false, &y));
  ASSERT_OK(disp_autograd_grad(&y, 1, &x, 1, NULL, 0, 0, 0, &g));
  ASSERT_TRUE(HOLDS(g, 0.5, 0, 0.5, 0));
  disp_tensor_release(g), disp_tensor_release(y);
  ASSERT_OK(disp_aten_max_dim(x, 0, true, &y, &idx));
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_OK(disp_autograd_grad(&s, 1, &x, 1, NULL, 0, 0, 0, &g));
  double want[4] = {0, 0, 0, 0};
  want[*(const int64_t *)disp_tensor_data_ptr(idx)] = 1;
  ASSERT_TRUE(holds(g, want, 4));
  disp_tensor_release(g), disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(idx);
  disp_tensor_release(x);
  return 0;
}

/* y = x.as_strided(sizes, strides, offset); its gradient for grad_output
 * go, written to *g (NULL and the status on error). */
static disp_status strided_grad(disp_tensor *x, disp_tensor *base, const int64_t *sz, const int64_t *st, size_t n,
                                disp_opt_int off, disp_tensor *go, disp_tensor **g) {
  disp_tensor *y = NULL;
  *g = NULL;
  disp_status s = disp_aten_as_strided(base, (disp_int_list){sz, n}, (disp_int_list){st, n}, off, &y);
  if (s == DISP_OK && strcmp(fn_name(y), "AsStridedBackward0")) s = DISP_ERR_KERNEL;
  if (s == DISP_OK) s = disp_autograd_grad(&y, 1, &x, 1, &go, 0, 0, 0, g);
  disp_tensor_release(y);
  return s;
}

/* as_strided: grad goes back through the output's geometry (offset,
 * expanded dims summed, elements that meet added) and the input's (a
 * transposed view; an expanded one). The values are 1.13's. */
TEST(as_strided_backward_follows_both_geometries) {
  disp_tensor *x = VEC(1, 1, 2, 3, 4, 5, 6), *go = NULL, *g = NULL, *m = NULL, *mt = NULL;
  disp_tensor *flat = VEC(0, 1, 2, 3, 4);
  ASSERT_OK(disp_aten_view(flat, (disp_int_list){(const int64_t[]){2, 2}, 2}, &go));
  ASSERT_OK(strided_grad(x, x, (const int64_t[]){2, 2}, (const int64_t[]){1, 2}, 2, (disp_opt_int){1, true}, go, &g));
  ASSERT_TRUE(HOLDS(g, 0, 1, 3, 2, 4, 0));
  disp_tensor_release(g), disp_tensor_release(go), disp_tensor_release(flat);
  disp_tensor *ones = VEC(0, 1, 1, 1, 1, 1, 1);
  ASSERT_OK(disp_aten_view(ones, (disp_int_list){(const int64_t[]){3, 2}, 2}, &go));
  ASSERT_OK(strided_grad(x, x, (const int64_t[]){3, 2}, (const int64_t[]){0, 1}, 2, (disp_opt_int){0, false}, go, &g));
  ASSERT_TRUE(HOLDS(g, 3, 3, 0, 0, 0, 0)); /* the stride-0 dim is summed */
  disp_tensor_release(g), disp_tensor_release(go);
  disp_tensor *w = VEC(0, 1, 2, 3, 4, 5, 6);
  ASSERT_OK(disp_aten_view(x, (disp_int_list){(const int64_t[]){2, 3}, 2}, &m));
  ASSERT_OK(disp_aten_t(m, &mt));
  ASSERT_OK(strided_grad(x, mt, (const int64_t[]){6}, (const int64_t[]){1}, 1, (disp_opt_int){0, true}, w, &g));
  ASSERT_TRUE(HOLDS(g, 1, 2, 3, 4, 5, 6)); /* storage order read back through the transpose */
  disp_tensor_release(g);
  /* Output elements that meet add up (1.13's index_add_): [1, 5, 4, 0, 0, 0] */
  disp_tensor *flat4 = VEC(0, 1, 2, 3, 4), *go4 = NULL;
  ASSERT_OK(disp_aten_view(flat4, (disp_int_list){(const int64_t[]){2, 2}, 2}, &go4));
  ASSERT_OK(strided_grad(x, x, (const int64_t[]){2, 2}, (const int64_t[]){1, 1}, 2, (disp_opt_int){0, true}, go4, &g));
  ASSERT_TRUE(HOLDS(g, 1, 5, 4, 0, 0, 0));
  disp_tensor_release(g);
  /* an input whose elements meet (expanded) splits each sum among them:
   * x3.expand(2, 3).as_strided((2, 2), (1, 1), 0) gives x3 [1, 5, 4] */
  disp_tensor *x3 = VEC(1, 1, 2, 3), *e = NULL;
  ASSERT_OK(disp_aten_expand(x3, (disp_int_list){(const int64_t[]){2, 3}, 2}, false, &e));
  ASSERT_OK(strided_grad(x3, e, (const int64_t[]){2, 2}, (const int64_t[]){1, 1}, 2, (disp_opt_int){0, true}, go4, &g));
  ASSERT_TRUE(HOLDS(g, 1, 5, 4));
  disp_tensor_release(g), disp_tensor_release(e), disp_tensor_release(x3);
  disp_tensor_release(go4), disp_tensor_release(flat4), disp_tensor_release(ones), disp_tensor_release(w);
  disp_tensor_release(mt), disp_tensor_release(m), disp_tensor_release(x);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(pointwise_node_names),
    TEST_ENTRY(shape_and_reduction_node_names),
    TEST_ENTRY(overwrites_give_zeros),
    TEST_ENTRY(where_condition_is_not_differentiable),
    TEST_ENTRY(pow_second_derivative),
    TEST_ENTRY(tanh_second_derivative_goes_through_tanh_backward),
    TEST_ENTRY(sigmoid_second_derivative),
    TEST_ENTRY(relu_second_derivative_goes_through_threshold_backward),
    TEST_ENTRY(slice_and_select_backward_are_differentiable),
    TEST_ENTRY(amax_splits_ties_max_dim_picks_one),
    TEST_ENTRY(as_strided_backward_follows_both_geometries),
    TEST_END,
};

TEST_MAIN()
