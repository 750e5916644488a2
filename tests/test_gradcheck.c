/*
 * test_gradcheck.c - disp_gradcheck / disp_gradgradcheck (torch.autograd's
 * gradcheck and gradgradcheck, 1.13): the formulas on main pass, a wrong
 * analytical gradient fails with PyTorch's message, bad inputs are refused.
 */
#include <math.h>

#include "test.h"
#include "disp/aten.h"
#include "disp/gradcheck.h"

/* A float64 leaf of the given shape and values that requires grad. */
static disp_tensor *leaf(const double *v, const int64_t *sizes, int ndim) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, ndim, DISP_DTYPE_FLOAT64, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK)
    return NULL;
  memcpy(disp_tensor_data_ptr(t), v, (size_t)disp_tensor_numel(t) * sizeof *v);
  if (disp_tensor_set_requires_grad(t, 1) != DISP_OK) {
    disp_tensor_release(t);
    return NULL;
  }
  return t;
}
#define LEAF(sizes, ...) leaf((const double[]){__VA_ARGS__}, (const int64_t[])sizes, \
                              (int)(sizeof((const int64_t[])sizes) / sizeof(int64_t)))
#define S(...) {__VA_ARGS__}

/* ---- the functions checked (disp_gradcheck_fn) ---------------------------- */

typedef disp_status (*unary_op)(disp_tensor *self, disp_tensor **out0);
typedef disp_status (*binary_op)(disp_tensor *self, disp_tensor *other, disp_tensor **out0);

/* ctx: a unary_op applied to inputs[0] */
static disp_status f_unary(disp_tensor *const *in, size_t n, disp_tensor **out, size_t *nout, void *ctx) {
  (void)n;
  *nout = 1;
  return (*(unary_op *)ctx)(in[0], &out[0]);
}

/* ctx: a binary_op applied to inputs[0], inputs[1] */
static disp_status f_binary(disp_tensor *const *in, size_t n, disp_tensor **out, size_t *nout, void *ctx) {
  (void)n;
  *nout = 1;
  return (*(binary_op *)ctx)(in[0], in[1], &out[0]);
}

static disp_status f_sum(disp_tensor *const *in, size_t n, disp_tensor **out, size_t *nout, void *ctx) {
  (void)n, (void)ctx;
  *nout = 1;
  return disp_aten_sum(in[0], -1, &out[0]);
}

static disp_status f_mean(disp_tensor *const *in, size_t n, disp_tensor **out, size_t *nout, void *ctx) {
  (void)n, (void)ctx;
  *nout = 1;
  return disp_aten_mean(in[0], -1, &out[0]);
}

static disp_status f_addmm(disp_tensor *const *in, size_t n, disp_tensor **out, size_t *nout, void *ctx) {
  (void)n, (void)ctx;
  *nout = 1;
  return disp_aten_addmm(in[0], in[1], in[2], disp_scalar_double(0.5), disp_scalar_int(2), &out[0]);
}

static disp_status f_log_softmax(disp_tensor *const *in, size_t n, disp_tensor **out, size_t *nout, void *ctx) {
  (void)n, (void)ctx;
  *nout = 1;
  return disp_aten__log_softmax(in[0], 1, false, &out[0]);
}

/* log_softmax then nll_loss (mean over a fixed target): two outputs, the
 * second (total_weight) not differentiable. */
static disp_status f_nll(disp_tensor *const *in, size_t n, disp_tensor **out, size_t *nout, void *ctx) {
  (void)n, (void)ctx;
  int64_t len = 3;
  disp_tensor *target = NULL, *ls = NULL;
  disp_status st = disp_tensor_empty(&len, 1, DISP_DTYPE_INT64, disp_device_make(DISP_BACKEND_CPU, -1), &target);
  if (st != DISP_OK) return st;
  memcpy(disp_tensor_data_ptr(target), (const int64_t[]){2, 0, 1}, sizeof(int64_t[3]));
  st = disp_aten__log_softmax(in[0], 1, false, &ls);
  if (st == DISP_OK) st = disp_aten_nll_loss_forward(ls, target, NULL, 1, -100, &out[0], &out[1]);
  *nout = st == DISP_OK ? 2 : 0;
  disp_tensor_release(ls), disp_tensor_release(target);
  return st;
}

/* view as (3, 2), then t, then expand to (2, 2, 3): three views in a row */
static disp_status f_views(disp_tensor *const *in, size_t n, disp_tensor **out, size_t *nout, void *ctx) {
  (void)n, (void)ctx;
  disp_tensor *v = NULL, *t = NULL;
  disp_status st = disp_aten_view(in[0], (disp_int_list){(const int64_t[]){3, 2}, 2}, &v);
  if (st == DISP_OK) st = disp_aten_t(v, &t);
  if (st == DISP_OK) st = disp_aten_expand(t, (disp_int_list){(const int64_t[]){2, 2, 3}, 3}, false, &out[0]);
  *nout = st == DISP_OK;
  disp_tensor_release(t), disp_tensor_release(v);
  return st;
}

/* x * detach(x): the value is x^2 but the analytical gradient only sees one
 * factor (x, not 2x) - a deliberately wrong derivative. */
static disp_status f_wrong(disp_tensor *const *in, size_t n, disp_tensor **out, size_t *nout, void *ctx) {
  (void)n, (void)ctx;
  disp_tensor *d = NULL;
  disp_status st = disp_aten_detach(in[0], &d);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(in[0], d, &out[0]);
  *nout = st == DISP_OK;
  disp_tensor_release(d);
  return st;
}

/* exp(detach(x)): nothing requires grad, yet the value depends on x */
static disp_status f_detached(disp_tensor *const *in, size_t n, disp_tensor **out, size_t *nout, void *ctx) {
  (void)n, (void)ctx;
  disp_tensor *d = NULL;
  disp_status st = disp_aten_detach(in[0], &d);
  if (st == DISP_OK) st = disp_aten_exp(d, &out[0]);
  *nout = st == DISP_OK;
  disp_tensor_release(d);
  return st;
}

static disp_status f_fails(disp_tensor *const *in, size_t n, disp_tensor **out, size_t *nout, void *ctx) {
  (void)in, (void)n, (void)out, (void)ctx;
  *nout = 0;
  return disp_set_error(DISP_ERR_KERNEL, "the function failed on purpose");
}

/* ---- gradcheck passes for the formulas on main ---------------------------- */

static int check_unary(unary_op op, disp_tensor *x, int twice) {
  disp_status st = disp_gradcheck(f_unary, &op, &x, 1, NULL);
  if (st == DISP_OK && twice) st = disp_gradgradcheck(f_unary, &op, &x, 1, NULL, 0, NULL);
  if (st != DISP_OK) fprintf(stderr, "  %s\n", disp_last_error());
  disp_tensor_release(x);
  return st == DISP_OK;
}

TEST(pointwise_unary_formulas_pass) {
  ASSERT_TRUE(check_unary(disp_aten_exp, LEAF(S(2, 3), 0.5, -1.25, 0.75, 1.5, -0.25, 0.125), 1));
  ASSERT_TRUE(check_unary(disp_aten_tanh, LEAF(S(2, 3), 0.5, -1.25, 0.75, 1.5, -0.25, 0.125), 0));
  ASSERT_TRUE(check_unary(disp_aten_log, LEAF(S(4), 0.5, 1.25, 2.75, 3.5), 0));
  ASSERT_TRUE(check_unary(disp_aten_sigmoid, LEAF(S(4), 0.5, -1.25, 2.75, -3.5), 0));
  /* relu away from 0, where it is not differentiable */
  ASSERT_TRUE(check_unary(disp_aten_relu, LEAF(S(2, 2), 0.5, -1.25, 2.75, -3.5), 0));
  return 0;
}

TEST(mul_and_div_pass_with_broadcasting) {
  binary_op mul = disp_aten_mul_Tensor, div = disp_aten_div_Tensor;
  disp_tensor *in[2] = {LEAF(S(2, 3), 0.5, -1.25, 0.75, 1.5, -0.25, 0.125), LEAF(S(3), 1.5, -0.75, 2.0)};
  ASSERT_OK(disp_gradcheck(f_binary, &mul, in, 2, NULL));
  ASSERT_OK(disp_gradcheck(f_binary, &div, in, 2, NULL));
  ASSERT_OK(disp_gradgradcheck(f_binary, &mul, in, 2, NULL, 0, NULL));
  disp_tensor_release(in[0]), disp_tensor_release(in[1]);
  return 0;
}

TEST(reductions_pass) {
  disp_tensor *x = LEAF(S(2, 3), 0.5, -1.25, 0.75, 1.5, -0.25, 0.125);
  ASSERT_OK(disp_gradcheck(f_sum, NULL, &x, 1, NULL));
  ASSERT_OK(disp_gradcheck(f_mean, NULL, &x, 1, NULL));
  disp_tensor_release(x);
  return 0;
}

TEST(mm_and_addmm_pass) {
  binary_op mm = disp_aten_mm;
  disp_tensor *in[3] = {LEAF(S(3), 0.25, -0.5, 1.0), LEAF(S(2, 4), 0.5, -1.25, 0.75, 1.5, -0.25, 0.125, 2.0, -1.0),
                        LEAF(S(4, 3), 1.5, -0.75, 2.0, 0.25, 0.5, -1.5, 1.0, 0.75, -0.25, -2.0, 1.25, 0.5)};
  ASSERT_OK(disp_gradcheck(f_binary, &mm, in + 1, 2, NULL));
  ASSERT_OK(disp_gradgradcheck(f_binary, &mm, in + 1, 2, NULL, 0, NULL));
  ASSERT_OK(disp_gradcheck(f_addmm, NULL, in, 3, NULL)); /* bias broadcast over rows */
  for (int k = 0; k < 3; k++) disp_tensor_release(in[k]);
  return 0;
}

TEST(log_softmax_and_nll_loss_pass) {
  disp_tensor *x = LEAF(S(3, 4), 0.5, -1.25, 0.75, 1.5, -0.25, 0.125, 2.0, -1.0, 1.5, -0.75, 0.25, 1.0);
  ASSERT_OK(disp_gradcheck(f_log_softmax, NULL, &x, 1, NULL));
  ASSERT_OK(disp_gradcheck(f_nll, NULL, &x, 1, NULL));
  disp_tensor_release(x);
  return 0;
}

TEST(views_pass_and_inputs_are_restored) {
  const double v[6] = {0.5, -1.25, 0.75, 1.5, -0.25, 0.125};
  disp_tensor *x = LEAF(S(2, 3), 0.5, -1.25, 0.75, 1.5, -0.25, 0.125);
  ASSERT_OK(disp_gradcheck(f_views, NULL, &x, 1, NULL));
  ASSERT_TRUE(memcmp(disp_tensor_data_ptr(x), v, sizeof v) == 0); /* every element put back exactly */
  ASSERT_TRUE(disp_tensor_grad(x) == NULL);                        /* grad, not backward: no leaf touched */
  disp_tensor_release(x);
  return 0;
}

/*
 * Double backward through the backward operators of tanh and log_softmax
 * (tanh_backward, _log_softmax_backward_data): their formulas come with the
 * formula helpers' branches, so these run when tests/CMakeLists.txt sets
 * DISP_TEST_BACKWARD_OP_FORMULAS to 1 (the lead, after merging them).
 */
#if DISP_TEST_BACKWARD_OP_FORMULAS
TEST(tanh_double_backward_passes) {
  disp_tensor *x = LEAF(S(2, 3), 0.5, -1.25, 0.75, 1.5, -0.25, 0.125), *go = LEAF(S(2, 3), 1.5, -0.5, 0.25, 1, 2, -1);
  unary_op op = disp_aten_tanh;
  ASSERT_OK(disp_gradgradcheck(f_unary, &op, &x, 1, NULL, 0, NULL));
  ASSERT_OK(disp_gradgradcheck(f_unary, &op, &x, 1, &go, 1, NULL)); /* given grad_outputs */
  disp_tensor_release(x), disp_tensor_release(go);
  return 0;
}

TEST(log_softmax_double_backward_passes) {
  disp_tensor *x = LEAF(S(3, 4), 0.5, -1.25, 0.75, 1.5, -0.25, 0.125, 2.0, -1.0, 1.5, -0.75, 0.25, 1.0);
  ASSERT_OK(disp_gradgradcheck(f_log_softmax, NULL, &x, 1, NULL, 0, NULL));
  disp_tensor_release(x);
  return 0;
}
#endif

TEST(given_grad_outputs_are_used) {
  disp_tensor *x = LEAF(S(2), 0.5, -1.25), *go = LEAF(S(2), 1.5, -0.5);
  unary_op op = disp_aten_exp;
  ASSERT_OK(disp_gradgradcheck(f_unary, &op, &x, 1, &go, 1, NULL));
  ASSERT_STATUS(disp_gradgradcheck(f_unary, &op, &x, 1, (disp_tensor *const[]){go, go}, 2, NULL),
                DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "2 grad_outputs for 1 differentiable outputs");
  disp_tensor_release(x), disp_tensor_release(go);
  return 0;
}

/* ---- failures ---------------------------------------------------------------- */

TEST(a_wrong_derivative_fails_with_pytorchs_message) {
  disp_tensor *x = LEAF(S(3), 0.5, -1.25, 2.0);
  ASSERT_STATUS(disp_gradcheck(f_wrong, NULL, &x, 1, NULL), DISP_ERR_MISMATCH);
  ASSERT_STARTS_WITH(disp_last_error(), "Jacobian mismatch for output 0 with respect to input 0,\nnumerical:tensor([[");
  /* numerical d(x^2)/dx = 2x on the diagonal, analytical x */
  ASSERT_CONTAINS(disp_last_error(), "[1.0000, 0.0000, 0.0000]");
  ASSERT_CONTAINS(disp_last_error(), "[0.0000, -2.5000, 0.0000],\n        [0.0000, 0.0000, 4.0000]]");
  ASSERT_CONTAINS(disp_last_error(), "\nanalytical:tensor([[0.5000, 0.0000, 0.0000],\n");
  ASSERT_CONTAINS(disp_last_error(), "-1.2500");
  ASSERT_CONTAINS(disp_last_error(), "2.0000]], dtype=torch.float64)\n");
  ASSERT_TRUE(disp_tensor_grad(x) == NULL);
  disp_tensor_release(x);
  return 0;
}

TEST(no_differentiable_output_must_not_depend_on_the_inputs) {
  disp_tensor *x = LEAF(S(2), 0.5, -1.25);
  ASSERT_STATUS(disp_gradcheck(f_detached, NULL, &x, 1, NULL), DISP_ERR_MISMATCH);
  ASSERT_EQ_STR(disp_last_error(), "Numerical gradient for function expected to be zero");
  disp_tensor_release(x);
  return 0;
}

TEST(bad_inputs_are_refused) {
  disp_tensor *x = LEAF(S(3), 0.5, -1.25, 2.0), *e = NULL;
  unary_op op = disp_aten_exp;
  ASSERT_OK(disp_tensor_set_requires_grad(x, 0));
  ASSERT_STATUS(disp_gradcheck(f_unary, &op, &x, 1, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "gradcheck expects at least one input tensor to require gradient, but none of "
                                   "the them have requires_grad=True.");
  ASSERT_OK(disp_aten_expand(x, (disp_int_list){(const int64_t[]){2, 3}, 2}, false, &e));
  ASSERT_OK(disp_tensor_set_requires_grad(e, 1));
  ASSERT_STATUS(disp_gradcheck(f_unary, &op, &e, 1, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_STARTS_WITH(disp_last_error(), "The 0th input has a dimension with stride 0. gradcheck only supports");
  ASSERT_OK(disp_tensor_set_requires_grad(x, 1));
  ASSERT_STATUS(disp_gradcheck(f_fails, NULL, &x, 1, NULL), DISP_ERR_KERNEL);
  ASSERT_EQ_STR(disp_last_error(), "the function failed on purpose");
  ASSERT_STATUS(disp_gradcheck(NULL, NULL, &x, 1, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_gradcheck: fn is NULL");
  disp_tensor_release(e), disp_tensor_release(x);
  return 0;
}

TEST(tolerances_are_options) {
  disp_tensor *x = LEAF(S(3), 0.5, -1.25, 2.0);
  disp_gradcheck_options o = disp_gradcheck_default_options();
  ASSERT_TRUE(o.eps == 1e-6 && o.atol == 1e-5 && o.rtol == 1e-3 && o.nondet_tol == 0.0);
  o.atol = 10; /* the wrong derivative is off by |x| <= 2 */
  ASSERT_OK(disp_gradcheck(f_wrong, NULL, &x, 1, &o));
  disp_tensor_release(x);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(pointwise_unary_formulas_pass),
    TEST_ENTRY(mul_and_div_pass_with_broadcasting),
    TEST_ENTRY(reductions_pass),
    TEST_ENTRY(mm_and_addmm_pass),
    TEST_ENTRY(log_softmax_and_nll_loss_pass),
    TEST_ENTRY(views_pass_and_inputs_are_restored),
#if DISP_TEST_BACKWARD_OP_FORMULAS
    TEST_ENTRY(tanh_double_backward_passes),
    TEST_ENTRY(log_softmax_double_backward_passes),
#endif
    TEST_ENTRY(given_grad_outputs_are_used),
    TEST_ENTRY(a_wrong_derivative_fails_with_pytorchs_message),
    TEST_ENTRY(no_differentiable_output_must_not_depend_on_the_inputs),
    TEST_ENTRY(bad_inputs_are_refused),
    TEST_ENTRY(tolerances_are_options),
    TEST_END,
};

TEST_MAIN()
