/*
 * formulas_pointwise.c - derivatives of the elementwise operators
 * (1.13's tools/autograd/derivatives.yaml). The engine reduces broadcast
 * gradients and casts dtypes, so these return grad in the output's shape.
 */
#include <string.h>

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

/* ---- gelu ----------------------------------------------------------------- */

/* The approximate argument at schema position pos ("none" when absent). */
static const char *approximate_arg(ag_ctx *c, int pos) {
  const disp_value *v = ag_arg(c, pos);
  return v && v->tag == DISP_VALUE_STRING ? v->u.str : "none";
}

/* gelu(self, approximate): self gets gelu_backward(grad, self, approximate). */
AG_BACKWARD(gelu_backward) {
  return ag_needs(c, 0) ? disp_aten_gelu_backward(g[0], ag_saved(c, 0), approximate_arg(c, 1), &out[0]) : DISP_OK;
}

/* A chain of operator calls whose intermediates are released together:
 * STEP(st, var, call) runs call (which writes var) while st is DISP_OK. */
#define STEP(st, var, call)               \
  do {                                    \
    if ((st) == DISP_OK) (st) = (call);   \
  } while (0)

/* gelu''(x) of the exact form: phi(x) (2 - x^2), as operator calls (so that
 * a graph is recorded with create_graph). */
static disp_status gelu_exact_second(disp_tensor *x, disp_tensor **out) {
  disp_tensor *x2 = NULL, *e = NULL, *phi = NULL, *two_minus = NULL, *neg = NULL;
  disp_status st = DISP_OK;
  STEP(st, x2, disp_aten_mul_Tensor(x, x, &x2));
  STEP(st, e, disp_aten_mul_Scalar(x2, disp_scalar_double(-0.5), &e));
  STEP(st, phi, disp_aten_exp(e, &phi));
  STEP(st, neg, disp_aten_mul_Scalar(x2, disp_scalar_double(-1.0), &neg));
  STEP(st, two_minus, disp_aten_add_Scalar(neg, disp_scalar_double(2.0), disp_scalar_int(1), &two_minus));
  disp_tensor *prod = NULL;
  STEP(st, prod, disp_aten_mul_Tensor(phi, two_minus, &prod));
  STEP(st, *out, disp_aten_mul_Scalar(prod, disp_scalar_double(0.39894228040143267794), out));
  disp_tensor_release(x2), disp_tensor_release(e), disp_tensor_release(phi);
  disp_tensor_release(neg), disp_tensor_release(two_minus), disp_tensor_release(prod);
  return st;
}

/* gelu''(x) of the tanh form: (1 - t^2) (u' + x/2 (u'' - 2 t u'^2)) with
 * u = k (x + c x^3), t = tanh(u), u' = k (1 + 3 c x^2), u'' = 6 k c x. */
static disp_status gelu_tanh_second(disp_tensor *x, disp_tensor **out) {
  const double k = 0.79788456080286535588, cc = 0.044715;
  disp_tensor *t[15] = {0};
  disp_status st = DISP_OK;
  STEP(st, t[0], disp_aten_mul_Tensor(x, x, &t[0]));                                           /* x^2 */
  STEP(st, t[1], disp_aten_mul_Tensor(t[0], x, &t[1]));                                        /* x^3 */
  STEP(st, t[2], disp_aten_add_Tensor(x, t[1], disp_scalar_double(cc), &t[2]));                /* x + c x^3 */
  STEP(st, t[3], disp_aten_mul_Scalar(t[2], disp_scalar_double(k), &t[3]));                   /* u */
  STEP(st, t[4], disp_aten_tanh(t[3], &t[4]));                                                 /* t */
  STEP(st, t[5], disp_aten_mul_Scalar(t[0], disp_scalar_double(3 * cc * k), &t[5]));
  STEP(st, t[6], disp_aten_add_Scalar(t[5], disp_scalar_double(k), disp_scalar_int(1), &t[6])); /* u' */
  STEP(st, t[7], disp_aten_mul_Scalar(x, disp_scalar_double(6 * k * cc), &t[7]));              /* u'' */
  STEP(st, t[8], disp_aten_mul_Tensor(t[6], t[6], &t[8]));                                     /* u'^2 */
  STEP(st, t[9], disp_aten_mul_Tensor(t[4], t[8], &t[9]));                                     /* t u'^2 */
  STEP(st, t[10], disp_aten_sub_Tensor(t[7], t[9], disp_scalar_double(2.0), &t[10]));          /* u'' - 2 t u'^2 */
  STEP(st, t[11], disp_aten_mul_Tensor(x, t[10], &t[11]));
  STEP(st, t[12], disp_aten_add_Tensor(t[6], t[11], disp_scalar_double(0.5), &t[12]));
  STEP(st, t[13], disp_aten_mul_Tensor(t[4], t[4], &t[13]));                                   /* t^2 */
  STEP(st, t[14], disp_aten_mul_Tensor(t[13], t[12], &t[14]));                                 /* t^2 (...) */
  STEP(st, *out, disp_aten_sub_Tensor(t[12], t[14], disp_scalar_int(1), out));                /* (1 - t^2)(...) */
  for (int i = 0; i < 15; i++) disp_tensor_release(t[i]);
  return st;
}

/* gelu_backward(grad_output, self, approximate): grad_output gets
 * gelu_backward(grad, self); self gets grad * grad_output * gelu''(self). */
AG_BACKWARD(gelu_backward_backward) {
  const char *approximate = approximate_arg(c, 2);
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = disp_aten_gelu_backward(g[0], ag_saved(c, 0), approximate, &out[0]);
  if (st != DISP_OK || !ag_needs(c, 1)) return st;
  disp_tensor *second = NULL, *scaled = NULL;
  st = strcmp(approximate, "tanh") ? gelu_exact_second(ag_saved(c, 0), &second)
                                   : gelu_tanh_second(ag_saved(c, 0), &second);
  STEP(st, scaled, disp_aten_mul_Tensor(g[0], ag_saved(c, 1), &scaled));
  STEP(st, out[1], disp_aten_mul_Tensor(scaled, second, &out[1]));
  disp_tensor_release(second), disp_tensor_release(scaled);
  return st;
}
