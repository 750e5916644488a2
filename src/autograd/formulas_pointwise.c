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
AG_BACKWARD(add_backward) {
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) out[0] = disp_tensor_retain(g[0]);
  if (ag_needs(c, 1)) st = scaled(g[0], ag_scalar(c, 2), &out[1]);
  return st;
}

/* add.Scalar, and everything whose gradient is grad unchanged. */
AG_BACKWARD(identity_backward) {
  if (ag_needs(c, 0)) out[0] = disp_tensor_retain(g[0]);
  return DISP_OK;
}

/* sub.Tensor: self: grad; other: -grad * alpha. */
AG_BACKWARD(sub_backward) {
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) out[0] = disp_tensor_retain(g[0]);
  if (ag_needs(c, 1)) st = disp_aten_mul_Scalar(g[0], disp_scalar_double(-disp_scalar_to_double(ag_scalar(c, 2))), &out[1]);
  return st;
}

/* mul.Tensor: self: grad * other; other: grad * self (each saved only for
 * the other's gradient). */
AG_BACKWARD(mul_backward) {
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = disp_aten_mul_Tensor(g[0], ag_saved(c, 1), &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) st = disp_aten_mul_Tensor(g[0], ag_saved(c, 0), &out[1]);
  return st;
}

/* mul.Scalar: self: grad * other. */
AG_BACKWARD(mul_scalar_backward) {
  return ag_needs(c, 0) ? disp_aten_mul_Scalar(g[0], ag_scalar(c, 1), &out[0]) : DISP_OK;
}

/* div.Tensor: self: grad / other; other: -grad * self / (other * other)
 * (self saved only for other's gradient). */
AG_BACKWARD(div_backward) {
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
AG_BACKWARD(div_scalar_backward) {
  return ag_needs(c, 0) ? disp_aten_div_Scalar(g[0], ag_scalar(c, 1), &out[0]) : DISP_OK;
}

AG_BACKWARD(neg_backward) {
  return ag_needs(c, 0) ? disp_aten_neg(g[0], &out[0]) : DISP_OK;
}

/* relu / relu_: threshold_backward(grad, result, 0). */
AG_BACKWARD(relu_backward) {
  return ag_needs(c, 0) ? disp_aten_threshold_backward(g[0], ag_saved(c, 0), disp_scalar_int(0), &out[0]) : DISP_OK;
}

/* exp: grad * result. */
AG_BACKWARD(exp_backward) {
  return ag_needs(c, 0) ? disp_aten_mul_Tensor(g[0], ag_saved(c, 0), &out[0]) : DISP_OK;
}

/* log: grad / self. */
AG_BACKWARD(log_backward) {
  return ag_needs(c, 0) ? disp_aten_div_Tensor(g[0], ag_saved(c, 0), &out[0]) : DISP_OK;
}

AG_BACKWARD(tanh_backward) {
  return ag_needs(c, 0) ? disp_aten_tanh_backward(g[0], ag_saved(c, 0), &out[0]) : DISP_OK;
}

AG_BACKWARD(sigmoid_backward) {
  return ag_needs(c, 0) ? disp_aten_sigmoid_backward(g[0], ag_saved(c, 0), &out[0]) : DISP_OK;
}

/* pow.Tensor_Scalar: zeros when exponent == 0, else
 * grad * (exponent * self.pow(exponent - 1)) in double exponents. */
AG_BACKWARD(pow_backward) {
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
AG_BACKWARD(sqrt_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *twice = NULL;
  disp_status st = disp_aten_mul_Scalar(ag_saved(c, 0), disp_scalar_int(2), &twice);
  if (st == DISP_OK) st = disp_aten_div_Tensor(g[0], twice, &out[0]);
  disp_tensor_release(twice);
  return st;
}

/* rsqrt: -0.5 * grad * result.pow(3). */
AG_BACKWARD(rsqrt_backward) {
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
AG_BACKWARD(sigmoid_backward_backward) {
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
AG_BACKWARD(tanh_backward_backward) {
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
AG_BACKWARD(threshold_backward_backward) {
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = disp_aten_threshold_backward(g[0], ag_saved(c, 0), ag_scalar(c, 2), &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) st = ag_zeros_like(g[0], &out[1]);
  return st;
}
