/*
 * optim_device.c - torch.optim 1.13's _single_tensor_sgd, _single_tensor_adam
 * and _single_tensor_adamw as dispatched tensor operations, for parameters
 * that are not on the CPU (Note [Optimizer devices]). Each operation is a
 * typed entry of disp/aten.h, so it reaches the parameter's device kernels
 * (or the device's CPU fallback) exactly as a user's call would, and the
 * host never touches device memory. The sequence is PyTorch's, line by line
 * (optim_sgd.c and optim_adam.c quote it).
 *
 * A Python float operand of an in-place operation (exp_avg.mul_(beta1),
 * denom.add_(eps)) is what PyTorch passes: a 0-dim float64 CPU tensor, which
 * joins tensors of any device (Note [One device check]). Three operations
 * the built-in set lacks are composed, left to right as ATen's CPU kernels
 * evaluate them:
 *   addcmul_(self, t1, t2, value):  tmp = t1 * value; tmp *= t2; self += tmp
 *   addcdiv_(self, t1, t2, value):  tmp = t1 * value; tmp /= t2; self += tmp
 *   maximum(a, b, out=a):           a.copy_(maximum(a, b))
 * addcdiv and maximum round exactly as the fused kernels; addcmul rounds the
 * product before the sum where ATen's CPU kernel uses one fused multiply-add
 * (Note [Optimizer rounding]), so exp_avg_sq may differ from the CPU loops
 * in its last bit (and each device's add rounds as it does). The
 * temporaries are the parameter's size, on its device.
 */
#include <stddef.h>

#include "disp.h"
#include "optim_internal.h"

/* A Python float as PyTorch's tensor-scalar operations receive it. */
static disp_status wrapped(double v, disp_tensor **out) {
  return disp_aten_scalar_tensor(disp_scalar_double(v), DISP_DTYPE_FLOAT64, -1,
                                 (disp_opt_device){DISP_BACKEND_CPU, -1, true}, (disp_opt_bool){false, false}, out);
}

/* What a Python float does to a tensor in place. */
typedef enum scalar_op { SCALAR_MUL, SCALAR_DIV, SCALAR_ADD } scalar_op;

/* self.mul_(v), self.div_(v) or self.add_(v), v a Python float. */
static disp_status scalar_(disp_tensor *self, scalar_op op, double v) {
  disp_tensor *s = NULL, *r = NULL;
  disp_status st = wrapped(v, &s);
  if (st == DISP_OK && op == SCALAR_MUL) st = disp_aten_mul__Tensor(self, s, &r);
  else if (st == DISP_OK && op == SCALAR_DIV) st = disp_aten_div__Tensor(self, s, &r);
  else if (st == DISP_OK) st = disp_aten_add__Tensor(self, s, disp_scalar_int(1), &r);
  disp_tensor_release(s);
  disp_tensor_release(r); /* the in-place result: self */
  return st;
}

/* self.add_(other, alpha=alpha). */
static disp_status add_(disp_tensor *self, disp_tensor *other, double alpha) {
  disp_tensor *r = NULL;
  disp_status st = disp_aten_add__Tensor(self, other, disp_scalar_double(alpha), &r);
  disp_tensor_release(r);
  return st;
}

/* *x = x.add(other, alpha=alpha): a new tensor replaces *x's reference. */
static disp_status add_into(disp_tensor **x, disp_tensor *other, double alpha) {
  disp_tensor *r = NULL;
  disp_status st = disp_aten_add_Tensor(*x, other, disp_scalar_double(alpha), &r);
  if (st != DISP_OK) return st;
  disp_tensor_release(*x);
  *x = r;
  return DISP_OK;
}

/* self.addcmul_(t1, t2, value) (mul_t2) or self.addcdiv_(t1, t2, value), composed (top of file). */
static disp_status addc_(disp_tensor *self, disp_tensor *t1, disp_tensor *t2, double value, int mul_t2) {
  disp_tensor *tmp = NULL, *r = NULL;
  disp_status st = disp_aten_mul_Scalar(t1, disp_scalar_double(value), &tmp);
  if (st == DISP_OK) st = mul_t2 ? disp_aten_mul__Tensor(tmp, t2, &r) : disp_aten_div__Tensor(tmp, t2, &r);
  disp_tensor_release(r);
  if (st == DISP_OK) st = add_(self, tmp, 1.0);
  disp_tensor_release(tmp);
  return st;
}

/* The gradient as the update reads it: -grad when maximizing (a new reference). */
static disp_status direction(disp_tensor *g, int maximize, disp_tensor **out) {
  if (!maximize) {
    *out = disp_tensor_retain(g);
    return DISP_OK;
  }
  return disp_aten_neg(g, out);
}

/* ---- SGD ------------------------------------------------------------------ */

/* The momentum part of _single_tensor_sgd: *buf is the state (NULL on the
 * first step: then it becomes clone(d_p)); *d becomes the step's direction. */
static disp_status sgd_momentum(const disp_sgd_options *o, disp_tensor **d, disp_tensor **buf) {
  disp_status st;
  if (*buf == NULL) {
    st = disp_aten_clone(*d, -1, buf);
  } else {
    st = scalar_(*buf, SCALAR_MUL, o->momentum);
    if (st == DISP_OK) st = add_(*buf, *d, 1.0 - o->dampening);
  }
  if (st != DISP_OK) return st;
  if (o->nesterov) return add_into(d, *buf, o->momentum);
  disp_tensor_release(*d);
  *d = disp_tensor_retain(*buf);
  return DISP_OK;
}

disp_status disp__optim_sgd_device_update(disp_optimizer *opt, size_t i, disp_tensor *g) {
  const disp_sgd_options *o = &opt->sgd;
  optim_state *s = &opt->state[i];
  disp_tensor *p = opt->params[i], *d = NULL;
  disp_tensor *buf = disp_tensor_retain(s->t[OPTIM_MOMENTUM_BUFFER]);
  disp_status st = direction(g, o->maximize, &d);
  if (st == DISP_OK && o->weight_decay != 0) st = add_into(&d, p, o->weight_decay);
  if (st == DISP_OK && o->momentum != 0) st = sgd_momentum(o, &d, &buf);
  if (st == DISP_OK) st = add_(p, d, -o->lr);
  disp_tensor_release(d);
  if (st == DISP_OK) {
    s->step++;
    disp_tensor_release(s->t[OPTIM_MOMENTUM_BUFFER]);
    s->t[OPTIM_MOMENTUM_BUFFER] = buf;
  } else {
    disp_tensor_release(buf);
  }
  return st;
}

/* ---- Adam, AdamW ------------------------------------------------------------ */

/* The moment updates; *g is the direction (weight decay folded in for Adam). */
static disp_status adam_moments(const optim_adam_coef *c, disp_tensor *p, disp_tensor **g, disp_tensor *m,
                                disp_tensor *v) {
  disp_status st = DISP_OK;
  if (c->adamw) st = scalar_(p, SCALAR_MUL, c->decay);
  else if (c->weight_decay != 0) st = add_into(g, p, c->weight_decay);
  if (st == DISP_OK) st = scalar_(m, SCALAR_MUL, c->beta1);
  if (st == DISP_OK) st = add_(m, *g, c->one_minus_beta1);
  if (st == DISP_OK) st = scalar_(v, SCALAR_MUL, c->beta2);
  if (st == DISP_OK) st = addc_(v, *g, *g, c->one_minus_beta2, 1);
  return st;
}

/* amsgrad: torch.maximum(vmax, v, out=vmax), composed as maximum + copy_. */
static disp_status keep_max(disp_tensor *vmax, disp_tensor *v) {
  disp_tensor *mx = NULL, *r = NULL;
  disp_status st = disp_aten_maximum(vmax, v, &mx);
  if (st == DISP_OK) st = disp_aten_copy_(vmax, mx, false, &r);
  disp_tensor_release(r);
  disp_tensor_release(mx);
  return st;
}

/* denom = (v.sqrt() / bias_correction2_sqrt).add_(eps); param.addcdiv_(m, denom, value=-step_size) */
static disp_status adam_apply(const optim_adam_coef *c, disp_tensor *p, disp_tensor *m, disp_tensor *v) {
  disp_tensor *denom = NULL;
  disp_status st = disp_aten_sqrt(v, &denom);
  if (st == DISP_OK) st = scalar_(denom, SCALAR_DIV, c->bias_correction2_sqrt);
  if (st == DISP_OK) st = scalar_(denom, SCALAR_ADD, c->eps);
  if (st == DISP_OK) st = addc_(p, m, denom, c->neg_step_size, 0);
  disp_tensor_release(denom);
  return st;
}

disp_status disp__optim_adam_device_update(disp_optimizer *opt, size_t i, disp_tensor *g) {
  optim_state *s = &opt->state[i];
  disp_tensor *p = opt->params[i], *d = NULL, *vmax = s->t[OPTIM_MAX_EXP_AVG_SQ];
  disp_tensor *m = s->t[OPTIM_EXP_AVG], *v = s->t[OPTIM_EXP_AVG_SQ];
  optim_adam_coef c = disp__optim_adam_coef(opt, ++s->step); /* step_t += 1 comes first in 1.13 */
  disp_status st = direction(g, c.maximize, &d);
  if (st == DISP_OK) st = adam_moments(&c, p, &d, m, v);
  disp_tensor_release(d);
  if (st == DISP_OK && opt->adam.amsgrad) st = keep_max(vmax, v);
  if (st == DISP_OK) st = adam_apply(&c, p, m, opt->adam.amsgrad ? vmax : v);
  return st;
}
