/*
 * formulas_pointwise.c - derivatives of the elementwise operators
 * (1.13's tools/autograd/derivatives.yaml). The engine reduces broadcast
 * gradients and casts dtypes, so these return grad in the output's shape.
 */
#include "formula.h"

/* grad * s, or grad itself (retained) when s is 1. */
static disp_status scaled(disp_tensor *g, disp_scalar s, disp_tensor **out) {
  if (disp_scalar_to_double(s) == 1.0) {
    *out = disp_tensor_retain(g);
    return DISP_OK;
  }
  return disp_aten_mul_Scalar(g, s, out);
}

/* add.Tensor / add_.Tensor: self: grad; other: grad * alpha. */
static disp_status add_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) out[0] = disp_tensor_retain(g[0]);
  if (ag_needs(c, 1)) st = scaled(g[0], ag_scalar(c, 2), &out[1]);
  return st;
}

/* add.Scalar, and everything whose gradient is grad unchanged. */
static disp_status identity_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  if (ag_needs(c, 0)) out[0] = disp_tensor_retain(g[0]);
  return DISP_OK;
}

/* sub.Tensor: self: grad; other: -grad * alpha. */
static disp_status sub_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) out[0] = disp_tensor_retain(g[0]);
  if (ag_needs(c, 1)) st = disp_aten_mul_Scalar(g[0], disp_scalar_double(-disp_scalar_to_double(ag_scalar(c, 2))), &out[1]);
  return st;
}

/* mul.Tensor: self: grad * other; other: grad * self (each saved only for
 * the other's gradient). */
static disp_status mul_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = disp_aten_mul_Tensor(g[0], ag_saved(c, 1), &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) st = disp_aten_mul_Tensor(g[0], ag_saved(c, 0), &out[1]);
  return st;
}

/* mul.Scalar: self: grad * other. */
static disp_status mul_scalar_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  return ag_needs(c, 0) ? disp_aten_mul_Scalar(g[0], ag_scalar(c, 1), &out[0]) : DISP_OK;
}

/* div.Tensor: self: grad / other; other: -grad * self / (other * other)
 * (self saved only for other's gradient). */
static disp_status div_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  disp_tensor *self = ag_saved(c, 0), *other = ag_saved(c, 1);
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = disp_aten_div_Tensor(g[0], other, &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) {
    disp_tensor *q = NULL, *q2 = NULL, *n = NULL;
    st = disp_aten_div_Tensor(self, other, &q);          /* self / other */
    if (st == DISP_OK) st = disp_aten_div_Tensor(q, other, &q2); /* self / other^2 */
    if (st == DISP_OK) st = disp_aten_mul_Tensor(g[0], q2, &n);
    if (st == DISP_OK) st = disp_aten_neg(n, &out[1]);
    disp_tensor_release(q), disp_tensor_release(q2), disp_tensor_release(n);
  }
  return st;
}

/* div.Scalar: self: grad / other. */
static disp_status div_scalar_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  return ag_needs(c, 0) ? disp_aten_div_Scalar(g[0], ag_scalar(c, 1), &out[0]) : DISP_OK;
}

static disp_status neg_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  return ag_needs(c, 0) ? disp_aten_neg(g[0], &out[0]) : DISP_OK;
}

/* relu / relu_: threshold_backward(grad, result, 0). */
static disp_status relu_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  return ag_needs(c, 0) ? disp_aten_threshold_backward(g[0], ag_saved(c, 0), disp_scalar_int(0), &out[0]) : DISP_OK;
}

/* exp: grad * result. */
static disp_status exp_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  return ag_needs(c, 0) ? disp_aten_mul_Tensor(g[0], ag_saved(c, 0), &out[0]) : DISP_OK;
}

/* log: grad / self. */
static disp_status log_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  return ag_needs(c, 0) ? disp_aten_div_Tensor(g[0], ag_saved(c, 0), &out[0]) : DISP_OK;
}

static disp_status tanh_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  return ag_needs(c, 0) ? disp_aten_tanh_backward(g[0], ag_saved(c, 0), &out[0]) : DISP_OK;
}

static disp_status sigmoid_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  return ag_needs(c, 0) ? disp_aten_sigmoid_backward(g[0], ag_saved(c, 0), &out[0]) : DISP_OK;
}

/* pow.Tensor_Scalar: zeros when exponent == 0, else
 * grad * (exponent * self.pow(exponent - 1)) in double exponents. */
static disp_status pow_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  if (!ag_needs(c, 0)) return DISP_OK;
  double e = disp_scalar_to_double(ag_scalar(c, 1));
  if (e == 0.0) return ag_zeros_like_input(c, 0, &out[0]);
  disp_tensor *p = NULL, *d = NULL;
  disp_status st = disp_aten_pow_Tensor_Scalar(ag_saved(c, 0), disp_scalar_double(e - 1.0), &p);
  if (st == DISP_OK) st = disp_aten_mul_Scalar(p, disp_scalar_double(e), &d);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(g[0], d, &out[0]);
  disp_tensor_release(p), disp_tensor_release(d);
  return st;
}

/* sqrt: grad / (2 * result). */
static disp_status sqrt_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *twice = NULL;
  disp_status st = disp_aten_mul_Scalar(ag_saved(c, 0), disp_scalar_int(2), &twice);
  if (st == DISP_OK) st = disp_aten_div_Tensor(g[0], twice, &out[0]);
  disp_tensor_release(twice);
  return st;
}

/* rsqrt: -0.5 * grad * result.pow(3). */
static disp_status rsqrt_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *h = NULL, *cube = NULL;
  disp_status st = disp_aten_mul_Scalar(g[0], disp_scalar_double(-0.5), &h);
  if (st == DISP_OK) st = disp_aten_pow_Tensor_Scalar(ag_saved(c, 0), disp_scalar_int(3), &cube);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(h, cube, &out[0]);
  disp_tensor_release(h), disp_tensor_release(cube);
  return st;
}

/* -2 * output, the factor both second derivatives below share. */
static disp_status minus_twice(ag_ctx *c, int saved, disp_tensor **out) {
  return disp_aten_mul_Scalar(ag_saved(c, saved), disp_scalar_int(-2), out);
}

/* sigmoid_backward(grad_output, output): grad_output gets
 * sigmoid_backward(grad, output); output gets
 * grad * grad_output * (-2 * output + 1). Saved: output, grad_output. */
static disp_status sigmoid_backward_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = disp_aten_sigmoid_backward(g[0], ag_saved(c, 0), &out[0]);
  if (st != DISP_OK || !ag_needs(c, 1)) return st;
  disp_tensor *m = NULL, *f = NULL, *gg = NULL;
  st = minus_twice(c, 0, &m);
  if (st == DISP_OK) st = disp_aten_add_Scalar(m, disp_scalar_int(1), disp_scalar_int(1), &f);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(g[0], ag_saved(c, 1), &gg);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(gg, f, &out[1]);
  disp_tensor_release(m), disp_tensor_release(f), disp_tensor_release(gg);
  return st;
}

/* tanh_backward(grad_output, output): grad_output gets
 * tanh_backward(grad, output); output gets grad * (-2 * output * grad_output). */
static disp_status tanh_backward_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = disp_aten_tanh_backward(g[0], ag_saved(c, 0), &out[0]);
  if (st != DISP_OK || !ag_needs(c, 1)) return st;
  disp_tensor *m = NULL, *f = NULL;
  st = minus_twice(c, 0, &m);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(m, ag_saved(c, 1), &f);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(g[0], f, &out[1]);
  disp_tensor_release(m), disp_tensor_release(f);
  return st;
}

/* threshold_backward(grad_output, self, threshold): grad_output gets
 * threshold_backward(grad, self, threshold); self gets zeros_like(grad). */
static disp_status threshold_backward_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = disp_aten_threshold_backward(g[0], ag_saved(c, 0), ag_scalar(c, 2), &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) st = ag_zeros_like(g[0], &out[1]);
  return st;
}

static const ag_formula formulas[] = {
    {"aten::add.Tensor", "AddBackward0", "self,other", "", add_backward, NULL},
    {"aten::add_.Tensor", "AddBackward0", "self,other", "", add_backward, NULL},
    {"aten::add.Scalar", "AddBackward1", "self", "", identity_backward, NULL},
    {"aten::sub.Tensor", "SubBackward0", "self,other", "", sub_backward, NULL},
    {"aten::sub_.Tensor", "SubBackward0", "self,other", "", sub_backward, NULL},
    {"aten::sub.Scalar", "SubBackward1", "self", "", identity_backward, NULL},
    {"aten::mul.Tensor", "MulBackward0", "self,other", "self@other,other@self", mul_backward, NULL},
    {"aten::mul_.Tensor", "MulBackward0", "self,other", "self@other,other@self", mul_backward, NULL},
    {"aten::mul.Scalar", "MulBackward1", "self", "", mul_scalar_backward, NULL},
    {"aten::div.Tensor", "DivBackward0", "self,other", "self@other,other", div_backward, NULL},
    {"aten::div_.Tensor", "DivBackward0", "self,other", "self@other,other", div_backward, NULL},
    {"aten::div.Scalar", "DivBackward1", "self", "", div_scalar_backward, NULL},
    {"aten::neg", "NegBackward0", "self", "", neg_backward, NULL},
    {"aten::relu", "ReluBackward0", "self", "result", relu_backward, NULL},
    {"aten::relu_", "ReluBackward0", "self", "result", relu_backward, NULL},
    {"aten::exp", "ExpBackward0", "self", "result", exp_backward, NULL},
    {"aten::log", "LogBackward0", "self", "self", log_backward, NULL},
    {"aten::tanh", "TanhBackward0", "self", "result", tanh_backward, NULL},
    {"aten::sigmoid", "SigmoidBackward0", "self", "result", sigmoid_backward, NULL},
    {"aten::pow.Tensor_Scalar", "PowBackward0", "self", "self", pow_backward, NULL},
    {"aten::sqrt", "SqrtBackward0", "self", "result", sqrt_backward, NULL},
    {"aten::rsqrt", "RsqrtBackward0", "self", "result", rsqrt_backward, NULL},
    {"aten::sigmoid_backward", "SigmoidBackwardBackward0", "grad_output,output", "output,grad_output",
     sigmoid_backward_backward, NULL},
    {"aten::tanh_backward", "TanhBackwardBackward0", "grad_output,output", "output,grad_output",
     tanh_backward_backward, NULL},
    {"aten::threshold_backward", "ThresholdBackwardBackward0", "grad_output,self", "self",
     threshold_backward_backward, NULL},
};

const ag_formula_set disp__ag_formulas_pointwise = {formulas, sizeof formulas / sizeof *formulas};
