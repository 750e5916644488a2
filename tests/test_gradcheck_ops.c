/*
 * test_gradcheck_ops.c - disp_gradcheck (float64, PyTorch's default
 * tolerances) over every differentiable built-in operator that has a
 * formula in src/autograd/formulas_*.c, and disp_gradgradcheck over those
 * whose double backward exists.
 *
 * One table of cases: an operator, a function building its inputs (small
 * random float64 values from a fixed seed, kept away from the points where
 * the operator is not differentiable: |x| >= 0.1 for relu/abs/clamp/
 * threshold_backward, positive for log/sqrt/rsqrt/pow, and continuous
 * random values make ties of max/amax/maximum/max_pool2d improbable; the
 * seed is fixed, so a pass is reproducible), and a callback calling it.
 * Integer and bool arguments (targets, indices, masks, conditions) are
 * inputs that do not require grad: gradcheck passes them through untouched.
 *
 * Every operator is gradgradchecked too; as_strided also with geometries
 * whose elements overlap, on the output side (sliding windows) and on the
 * input side (a view of an expanded tensor).
 *
 * native_dropout is checked with train=True and p=0: the mask is then all
 * ones and fixed, so the function is deterministic as gradcheck requires,
 * while the formula's mask-and-scale path still runs.
 */
#include <math.h>

#include "test.h"
#include "disp/aten.h"
#include "disp/gradcheck.h"

/* ---- inputs ----------------------------------------------------------------- */

static uint64_t rng_state;

/* xorshift64*: a uniform double in [0, 1) from a fixed stream (the test's
 * own, so the library's generator is not involved). */
static double uniform(void) {
  rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
  return (double)((rng_state * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

enum { SIGNED, POSITIVE };

/* A new contiguous CPU tensor of the given dtype (NULL on failure). */
static disp_tensor *make(disp_dtype dt, const int64_t *sizes, int ndim) {
  disp_tensor *t = NULL;
  static const int64_t none[1] = {1};
  if (disp_tensor_empty(ndim ? sizes : none, ndim, dt, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK)
    return NULL;
  return t;
}

/* A float64 leaf requiring grad: SIGNED values in +-[0.1, 1.1) (away from
 * 0), POSITIVE ones in [0.5, 1.5). */
static disp_tensor *leaf(int kind, const int64_t *sizes, int ndim) {
  disp_tensor *t = make(DISP_DTYPE_FLOAT64, sizes, ndim);
  if (t == NULL) return NULL;
  double *p = disp_tensor_data_ptr(t);
  for (int64_t i = 0; i < disp_tensor_numel(t); i++) {
    double u = uniform();
    p[i] = kind == POSITIVE ? 0.5 + u : (u < 0.5 ? -1 : 1) * (0.1 + 2 * fmod(u, 0.5));
  }
  disp_tensor_set_requires_grad(t, 1);
  return t;
}

/* t with requires_grad off: nll_loss's weight has no formula (1.13:
 * "the derivative for 'weight' is not implemented"). */
static disp_tensor *no_grad(disp_tensor *t) {
  if (t) disp_tensor_set_requires_grad(t, 0);
  return t;
}

/* An int64 (or bool when is_bool) tensor of the given values. */
static disp_tensor *ints(const int64_t *v, const int64_t *sizes, int ndim, int is_bool) {
  disp_tensor *t = make(is_bool ? DISP_DTYPE_BOOL : DISP_DTYPE_INT64, sizes, ndim);
  if (t == NULL) return NULL;
  for (int64_t i = 0; i < disp_tensor_numel(t); i++) {
    if (is_bool) ((bool *)disp_tensor_data_ptr(t))[i] = v[i] != 0;
    else ((int64_t *)disp_tensor_data_ptr(t))[i] = v[i];
  }
  return t;
}

#define DIMS(...) (const int64_t[]){__VA_ARGS__}, (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define R(...) leaf(SIGNED, DIMS(__VA_ARGS__))
#define P(...) leaf(POSITIVE, DIMS(__VA_ARGS__))
#define R0() leaf(SIGNED, NULL, 0)
#define INTS(vals, ...) ints((const int64_t[])vals, DIMS(__VA_ARGS__), 0)
#define BOOLS(vals, ...) ints((const int64_t[])vals, DIMS(__VA_ARGS__), 1)
#define V(...) {__VA_ARGS__}
#define IL(...) ((disp_int_list){(const int64_t[]){__VA_ARGS__}, sizeof((const int64_t[]){__VA_ARGS__}) / 8})
#define OIL(...) ((disp_opt_int_list){IL(__VA_ARGS__), true})
#define TL(...) ((disp_tensor_list){(disp_tensor *const[]){__VA_ARGS__}, \
                                    sizeof((disp_tensor *const[]){__VA_ARGS__}) / sizeof(disp_tensor *)})

/* Input builders: fill in[], return how many. */
typedef int (*build_fn)(disp_tensor **in);
#define BUILD(name, ...)                              \
  static int name(disp_tensor **in) {                 \
    disp_tensor *v[] = {__VA_ARGS__};                 \
    memcpy(in, v, sizeof v);                          \
    return (int)(sizeof v / sizeof *v);               \
  }
BUILD(b_r23, R(2, 3))
BUILD(b_p23, P(2, 3))
BUILD(b_r23_r23, R(2, 3), R(2, 3))
BUILD(b_r23_r3, R(2, 3), R(3))
BUILD(b_r23_p3, R(2, 3), P(3))
BUILD(b_r23_r13, R(2, 3), R(1, 3))
BUILD(b_r31, R(3, 1))
BUILD(b_r213, R(2, 1, 3))
BUILD(b_r232, R(2, 3, 2))
BUILD(b_r24, R(2, 4))
BUILD(b_r3, R(3))
BUILD(b_r5, R(5))
BUILD(b_r34, R(3, 4))
BUILD(b_r34_r34, R(3, 4), R(3, 4))
BUILD(b_cat, R(2, 3), R(1, 3))
BUILD(b_mm, R(2, 3), R(3, 2))
BUILD(b_addmm, R(2), R(2, 3), R(3, 2))
BUILD(b_bmm, R(2, 2, 3), R(2, 3, 2))
BUILD(b_where, BOOLS(V(1, 0, 0, 1, 1, 0), 2, 3), R(2, 3), R(1, 3))
BUILD(b_nll, R(3, 4), INTS(V(2, 0, 1), 3), no_grad(P(4)))
BUILD(b_mse_bw, R0(), R(2, 3), R(2, 3))
BUILD(b_conv, R(1, 2, 3, 3), R(2, 2, 2, 2), R(2))
BUILD(b_conv_bw, R(1, 2, 2, 2), R(1, 2, 3, 3), R(2, 2, 2, 2))
BUILD(b_pool, R(1, 1, 4, 4))
BUILD(b_dropout_bw, R(2, 3), BOOLS(V(1, 0, 1, 1, 0, 1), 2, 3))

/* nll_loss_backward: grad_output, self, target, weight, and total_weight
 * from the forward (not differentiable). */
static int b_nll_bw(disp_tensor **in) {
  int n = b_nll(in + 1);
  disp_tensor *loss = NULL;
  in[0] = R0();
  in[n + 1] = NULL;
  disp_aten_nll_loss_forward(in[1], in[2], in[3], 1, -100, &loss, &in[n + 1]);
  disp_tensor_release(loss);
  return n + 2;
}

/* max_pool2d_with_indices_backward: grad_output, self, and the indices of
 * the forward on self (fixed: the maxima are not tied). */
static int b_pool_bw(disp_tensor **in) {
  disp_tensor *vals = NULL;
  in[0] = R(1, 1, 2, 2);
  in[1] = R(1, 1, 4, 4);
  in[2] = NULL;
  disp_aten_max_pool2d_with_indices(in[1], IL(2, 2), IL(2, 2), IL(0, 0), IL(1, 1), false, &vals, &in[2]);
  disp_tensor_release(vals);
  return 3;
}

/* The same with padding, ceil_mode, overlapping windows and dilation, the
 * second without a batch dim: the pooling windows its double backward
 * gathers through (formulas_conv.c). */
static int pool_bw_with(disp_tensor **in, disp_tensor *grad, disp_tensor *self, disp_int_list k, disp_int_list s,
                        disp_int_list p, disp_int_list d, bool ceil) {
  disp_tensor *vals = NULL;
  in[0] = grad, in[1] = self, in[2] = NULL;
  disp_aten_max_pool2d_with_indices(self, k, s, p, d, ceil, &vals, &in[2]);
  disp_tensor_release(vals);
  return 3;
}
static int b_pool_bw_ceil(disp_tensor **in) {
  return pool_bw_with(in, R(1, 2, 3, 4), R(1, 2, 5, 6), IL(3, 3), IL(2, 2), IL(1, 1), IL(1, 1), true);
}
static int b_pool_bw_dilated(disp_tensor **in) {
  return pool_bw_with(in, R(2, 5, 5), R(2, 5, 5), IL(2, 3), IL(1, 1), IL(1, 1), IL(2, 1), false);
}

/* ---- the calls ----------------------------------------------------------------- */

typedef disp_status (*call_fn)(disp_tensor *const *in, disp_tensor **out, size_t *nout);

/* One output: the expression's status, its result in O. */
#define CALL(name, expr)                                                           \
  static disp_status name(disp_tensor *const *in, disp_tensor **out, size_t *nout) { \
    *nout = 1;                                                                     \
    return expr;                                                                   \
  }
/* k outputs (the later ones may be integer: not differentiated). */
#define CALLN(name, k, expr)                                                       \
  static disp_status name(disp_tensor *const *in, disp_tensor **out, size_t *nout) { \
    *nout = k;                                                                     \
    return expr;                                                                   \
  }
/* An in-place operator on a clone of in[0] (a leaf cannot be written in
 * place); C names the clone. */
#define CALL_INPLACE(name, expr)                                                   \
  static disp_status name(disp_tensor *const *in, disp_tensor **out, size_t *nout) { \
    disp_tensor *C = NULL;                                                         \
    disp_status st = disp_aten_clone(in[0], -1, &C);                               \
    *nout = 1;                                                                     \
    if (st == DISP_OK) st = expr;                                                  \
    disp_tensor_release(C);                                                        \
    return st;                                                                     \
  }
#define O (&out[0])
#define SC disp_scalar_double
#define NONE_INT ((disp_opt_int){0, false})

CALL(c_add, disp_aten_add_Tensor(in[0], in[1], SC(2), O))
CALL(c_add_s, disp_aten_add_Scalar(in[0], SC(3), SC(2), O))
CALL_INPLACE(c_add_, disp_aten_add__Tensor(C, in[1], SC(-1.5), O))
CALL(c_sub, disp_aten_sub_Tensor(in[0], in[1], SC(0.5), O))
CALL(c_sub_s, disp_aten_sub_Scalar(in[0], SC(3), SC(2), O))
CALL_INPLACE(c_sub_, disp_aten_sub__Tensor(C, in[1], SC(2), O))
CALL(c_mul, disp_aten_mul_Tensor(in[0], in[1], O))
CALL(c_mul_s, disp_aten_mul_Scalar(in[0], SC(1.5), O))
CALL_INPLACE(c_mul_, disp_aten_mul__Tensor(C, in[1], O))
CALL(c_div, disp_aten_div_Tensor(in[0], in[1], O))
CALL(c_div_s, disp_aten_div_Scalar(in[0], SC(4), O))
CALL_INPLACE(c_div_, disp_aten_div__Tensor(C, in[1], O))
CALL(c_neg, disp_aten_neg(in[0], O))
CALL(c_relu, disp_aten_relu(in[0], O))
CALL_INPLACE(c_relu_, disp_aten_relu_(C, O))
CALL(c_exp, disp_aten_exp(in[0], O))
CALL(c_log, disp_aten_log(in[0], O))
CALL(c_tanh, disp_aten_tanh(in[0], O))
CALL(c_sigmoid, disp_aten_sigmoid(in[0], O))
CALL(c_abs, disp_aten_abs(in[0], O))
CALL(c_clamp, disp_aten_clamp(in[0], SC(-0.5), SC(0.5), O))
CALL(c_clamp_min, disp_aten_clamp_min(in[0], SC(0.2), O))
CALL(c_maximum, disp_aten_maximum(in[0], in[1], O))
CALL(c_minimum, disp_aten_minimum(in[0], in[1], O))
CALL(c_where, disp_aten_where_self(in[0], in[1], in[2], O))
CALL(c_pow, disp_aten_pow_Tensor_Scalar(in[0], SC(2.5), O))
CALL(c_pow_int, disp_aten_pow_Tensor_Scalar(in[0], disp_scalar_int(3), O))
CALL(c_sqrt, disp_aten_sqrt(in[0], O))
CALL(c_rsqrt, disp_aten_rsqrt(in[0], O))
CALL(c_sigmoid_bw, disp_aten_sigmoid_backward(in[0], in[1], O))
CALL(c_tanh_bw, disp_aten_tanh_backward(in[0], in[1], O))
CALL(c_threshold_bw, disp_aten_threshold_backward(in[0], in[1], SC(0), O))
CALL(c_sum, disp_aten_sum(in[0], -1, O))
CALL(c_sum_dim, disp_aten_sum_dim_IntList(in[0], OIL(1), false, -1, O))
CALL(c_mean, disp_aten_mean(in[0], -1, O))
CALL(c_mean_dim, disp_aten_mean_dim(in[0], OIL(0), true, -1, O))
CALL(c_amax, disp_aten_amax(in[0], IL(1), false, O))
CALLN(c_max_dim, 2, disp_aten_max_dim(in[0], 1, true, &out[0], &out[1]))
CALL(c_mm, disp_aten_mm(in[0], in[1], O))
CALL(c_addmm, disp_aten_addmm(in[0], in[1], in[2], SC(0.5), SC(2), O))
CALL(c_bmm, disp_aten_bmm(in[0], in[1], O))
CALL(c_softmax, disp_aten__softmax(in[0], 1, false, O))
CALL(c_log_softmax, disp_aten__log_softmax(in[0], 0, false, O))
CALL(c_softmax_bw, disp_aten__softmax_backward_data(in[0], in[1], 1, DISP_DTYPE_FLOAT64, O))
CALL(c_log_softmax_bw, disp_aten__log_softmax_backward_data(in[0], in[1], 1, DISP_DTYPE_FLOAT64, O))
CALLN(c_nll, 2, disp_aten_nll_loss_forward(in[0], in[1], in[2], 1, -100, &out[0], &out[1]))
CALL(c_nll_bw, disp_aten_nll_loss_backward(in[0], in[1], in[2], in[3], 1, -100, in[4], O))
CALL(c_mse, disp_aten_mse_loss(in[0], in[1], 1, O))
CALL(c_mse_bw, disp_aten_mse_loss_backward(in[0], in[1], in[2], 1, O))
CALL(c_conv, disp_aten_convolution(in[0], in[1], in[2], IL(1, 1), IL(1, 0), IL(1, 1), false, IL(0, 0), 1, O))
CALLN(c_conv_bw, 3,
      disp_aten_convolution_backward(in[0], in[1], in[2], OIL(2), IL(1, 1), IL(0, 0), IL(1, 1), false, IL(0, 0), 1,
                                     (disp_bool_list){(const bool[]){true, true, true}, 3}, &out[0], &out[1],
                                     &out[2]))
CALLN(c_pool, 2, disp_aten_max_pool2d_with_indices(in[0], IL(2, 2), IL(2, 2), IL(0, 0), IL(1, 1), false, &out[0],
                                                   &out[1]))
CALL(c_pool_bw, disp_aten_max_pool2d_with_indices_backward(in[0], in[1], IL(2, 2), IL(2, 2), IL(0, 0), IL(1, 1),
                                                           false, in[2], O))
CALL(c_pool_bw_ceil, disp_aten_max_pool2d_with_indices_backward(in[0], in[1], IL(3, 3), IL(2, 2), IL(1, 1), IL(1, 1),
                                                                true, in[2], O))
CALL(c_pool_bw_dilated, disp_aten_max_pool2d_with_indices_backward(in[0], in[1], IL(2, 3), IL(1, 1), IL(1, 1),
                                                                   IL(2, 1), false, in[2], O))
CALLN(c_dropout, 2, disp_aten_native_dropout(in[0], 0.0, (disp_opt_bool){true, true}, &out[0], &out[1]))
CALL(c_dropout_bw, disp_aten_native_dropout_backward(in[0], in[1], 2.0, O))
CALL(c_t, disp_aten_t(in[0], O))
CALL(c_view, disp_aten_view(in[0], IL(3, 2), O))
CALL(c_reshape_alias, disp_aten__reshape_alias(in[0], IL(3, 2), IL(2, 1), O))
CALL(c_expand, disp_aten_expand(in[0], IL(2, 3, 4), false, O))
CALL(c_permute, disp_aten_permute(in[0], IL(2, 0, 1), O))
CALL(c_transpose, disp_aten_transpose_int(in[0], 0, -1, O))
CALL(c_squeeze, disp_aten_squeeze_dim(in[0], 1, O))
CALL(c_unsqueeze, disp_aten_unsqueeze(in[0], 1, O))
CALL(c_select, disp_aten_select_int(in[0], 1, -1, O))
CALL(c_slice, disp_aten_slice_Tensor(in[0], 1, (disp_opt_int){1, true}, NONE_INT, 2, O))
CALL(c_cat, disp_aten_cat(TL(in[0], in[1]), 0, O))
CALL(c_stack, disp_aten_stack(TL(in[0], in[1]), 1, O))
CALL(c_as_strided, disp_aten_as_strided(in[0], IL(3, 2), IL(1, 3), NONE_INT, O))
/* windows of 3 sliding by 1 over 5 elements: each element is in up to 3 */
CALL(c_as_strided_windows, disp_aten_as_strided(in[0], IL(3, 3), IL(1, 1), NONE_INT, O))
/* as_strided of an expanded (2, 3) view of in[0]: the input's own elements
 * meet (stride 0), so each gradient sum is split between them */
static disp_status c_as_strided_expanded(disp_tensor *const *in, disp_tensor **out, size_t *nout) {
  disp_tensor *e = NULL;
  *nout = 1;
  disp_status st = disp_aten_expand(in[0], IL(2, 3), false, &e);
  if (st == DISP_OK) st = disp_aten_as_strided(e, IL(2, 2), IL(1, 1), (disp_opt_int){0, true}, O);
  disp_tensor_release(e);
  return st;
}
CALL(c_to_copy, disp_aten__to_copy(in[0], -1, -1, (disp_opt_device){0, 0, false}, (disp_opt_bool){false, false},
                                   false, -1, O))
CALL(c_clone, disp_aten_clone(in[0], -1, O))
/* copy_ of a broadcast (3) into a clone of (2, 3): no gradient reaches the
 * overwritten self, the source's is summed over the broadcast rows */
CALL_INPLACE(c_copy_, disp_aten_copy_(C, in[1], false, O))
/* fill_ and zero_ overwrite everything: self's gradient must be zero */
CALL_INPLACE(c_fill_, disp_aten_fill__Scalar(C, SC(2.5), O))
CALL_INPLACE(c_zero_, disp_aten_zero_(C, O))

/* ---- the table ------------------------------------------------------------------ */

typedef struct gcase {
  const char *op;
  build_fn build;
  call_fn call;
  int twice; /* gradgradcheck too */
} gcase;

static const gcase cases[] = {
    {"add.Tensor", b_r23_r3, c_add, 1},
    {"add.Scalar", b_r23, c_add_s, 1},
    {"add_.Tensor", b_r23_r3, c_add_, 1},
    {"sub.Tensor", b_r23_r13, c_sub, 1},
    {"sub.Scalar", b_r23, c_sub_s, 1},
    {"sub_.Tensor", b_r23_r3, c_sub_, 1},
    {"mul.Tensor", b_r23_r3, c_mul, 1},
    {"mul.Scalar", b_r23, c_mul_s, 1},
    {"mul_.Tensor", b_r23_r23, c_mul_, 1},
    {"div.Tensor", b_r23_p3, c_div, 1},
    {"div.Scalar", b_r23, c_div_s, 1},
    {"div_.Tensor", b_r23_p3, c_div_, 1},
    {"neg", b_r23, c_neg, 1},
    {"relu", b_r23, c_relu, 1},
    {"relu_", b_r23, c_relu_, 1},
    {"exp", b_r23, c_exp, 1},
    {"log", b_p23, c_log, 1},
    {"tanh", b_r23, c_tanh, 1},
    {"sigmoid", b_r23, c_sigmoid, 1},
    {"abs", b_r23, c_abs, 1},
    {"clamp", b_r23, c_clamp, 1},
    {"clamp_min", b_r23, c_clamp_min, 1},
    {"maximum", b_r23_r3, c_maximum, 1},
    {"minimum", b_r23_r23, c_minimum, 1},
    {"where.self", b_where, c_where, 1},
    {"pow.Tensor_Scalar (2.5)", b_p23, c_pow, 1},
    {"pow.Tensor_Scalar (3)", b_r23, c_pow_int, 1},
    {"sqrt", b_p23, c_sqrt, 1},
    {"rsqrt", b_p23, c_rsqrt, 1},
    {"sigmoid_backward", b_r23_r23, c_sigmoid_bw, 1},
    {"tanh_backward", b_r23_r23, c_tanh_bw, 1},
    {"threshold_backward", b_r23_r23, c_threshold_bw, 1},
    {"sum", b_r23, c_sum, 1},
    {"sum.dim_IntList", b_r23, c_sum_dim, 1},
    {"mean", b_r23, c_mean, 1},
    {"mean.dim", b_r23, c_mean_dim, 1},
    {"amax", b_r34, c_amax, 1},
    {"max.dim", b_r34, c_max_dim, 1},
    {"mm", b_mm, c_mm, 1},
    {"addmm", b_addmm, c_addmm, 1},
    {"bmm", b_bmm, c_bmm, 1},
    {"_softmax", b_r34, c_softmax, 1},
    {"_log_softmax", b_r34, c_log_softmax, 1},
    {"_softmax_backward_data", b_r34_r34, c_softmax_bw, 1},
    {"_log_softmax_backward_data", b_r34_r34, c_log_softmax_bw, 1},
    {"nll_loss_forward", b_nll, c_nll, 1},
    {"nll_loss_backward", b_nll_bw, c_nll_bw, 1},
    {"mse_loss", b_r23_r23, c_mse, 1},
    {"mse_loss_backward", b_mse_bw, c_mse_bw, 1},
    {"convolution", b_conv, c_conv, 1},
    {"convolution_backward", b_conv_bw, c_conv_bw, 1},
    {"max_pool2d_with_indices", b_pool, c_pool, 1},
    {"max_pool2d_with_indices_backward", b_pool_bw, c_pool_bw, 1},
    {"max_pool2d_with_indices_backward (padding, ceil_mode)", b_pool_bw_ceil, c_pool_bw_ceil, 1},
    {"max_pool2d_with_indices_backward (dilation, no batch)", b_pool_bw_dilated, c_pool_bw_dilated, 1},
    {"native_dropout (train, p=0)", b_r23, c_dropout, 1},
    {"native_dropout_backward", b_dropout_bw, c_dropout_bw, 1},
    {"t", b_r23, c_t, 1},
    {"view", b_r23, c_view, 1},
    {"_reshape_alias", b_r23, c_reshape_alias, 1},
    {"expand", b_r31, c_expand, 1},
    {"permute", b_r232, c_permute, 1},
    {"transpose.int", b_r232, c_transpose, 1},
    {"squeeze.dim", b_r213, c_squeeze, 1},
    {"unsqueeze", b_r23, c_unsqueeze, 1},
    {"select.int", b_r23, c_select, 1},
    {"slice.Tensor", b_r24, c_slice, 1},
    {"cat", b_cat, c_cat, 1},
    {"stack", b_r23_r23, c_stack, 1},
    {"as_strided", b_r23, c_as_strided, 1},
    {"as_strided (overlapping output)", b_r5, c_as_strided_windows, 1},
    {"as_strided (overlapping input)", b_r3, c_as_strided_expanded, 1},
    {"_to_copy", b_r23, c_to_copy, 1},
    {"clone", b_r23, c_clone, 1},
    {"copy_", b_r23_r3, c_copy_, 1},
    {"fill_.Scalar", b_r23, c_fill_, 1},
    {"zero_", b_r23, c_zero_, 1},
};

/* ---- running them ------------------------------------------------------------- */

/* disp_gradcheck_fn: ctx is the case */
static disp_status f_case(disp_tensor *const *in, size_t n, disp_tensor **out, size_t *nout, void *ctx) {
  (void)n;
  return ((const gcase *)ctx)->call(in, out, nout);
}

#define MAX_INPUTS 8

/* Runs one case (gradgradcheck when twice) on fresh inputs from the fixed
 * seed; prints the failure. Returns 1 when it passed. */
static int run_case(const gcase *c, int twice) {
  disp_tensor *in[MAX_INPUTS] = {NULL};
  rng_state = 0x9E3779B97F4A7C15ULL;
  int n = c->build(in);
  disp_status st = twice ? disp_gradgradcheck(f_case, (void *)c, in, (size_t)n, NULL, 0, NULL)
                         : disp_gradcheck(f_case, (void *)c, in, (size_t)n, NULL);
  if (st != DISP_OK)
    fprintf(stderr, "  %s %s: %s: %s\n", twice ? "gradgradcheck" : "gradcheck", c->op, disp_status_name(st),
            disp_last_error());
  for (int k = 0; k < n; k++) disp_tensor_release(in[k]);
  return st == DISP_OK;
}

static int run_all(int twice) {
  int failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    if (!twice || cases[i].twice) failed += !run_case(&cases[i], twice);
  return failed;
}

TEST(gradcheck_passes_for_every_operator) {
  ASSERT_EQ_INT(run_all(0), 0);
  return 0;
}

TEST(gradgradcheck_passes_where_double_backward_exists) {
  ASSERT_EQ_INT(run_all(1), 0);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(gradcheck_passes_for_every_operator),
    TEST_ENTRY(gradgradcheck_passes_where_double_backward_exists),
    TEST_END,
};

TEST_MAIN()
