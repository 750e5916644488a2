/*
 * formulas_nn.c - derivatives of softmax, the losses and dropout, and of
 * their backward operators (double backward), as 1.13's derivatives.yaml
 * and FunctionsManual.cpp write them. Where 1.13 calls a backward operator
 * (_log_softmax_backward_data, nll_loss_backward, mse_loss_backward,
 * native_dropout_backward) so does the formula, through the dispatcher, so
 * a backend's own kernel for it is the one that runs.
 */
#include "error_internal.h"
#include "formula.h"

/* PyTorch's at::Reduction values. */
enum { REDUCTION_NONE = 0, REDUCTION_MEAN = 1 };

/* t.sum(dim, keepdim=True). */
static disp_status sum_keep(disp_tensor *t, int64_t dim, disp_tensor **out) {
  disp_opt_int_list d = {{&dim, 1}, true};
  return disp_aten_sum_dim_IntList(t, d, true, -1, out);
}

/* (x * y).sum(dim, true), times a unless a is NULL. */
static disp_status times_sum_of_product(disp_tensor *a, disp_tensor *x, disp_tensor *y, int64_t dim,
                                        disp_tensor **out) {
  disp_tensor *p = NULL, *s = NULL;
  disp_status st = disp_aten_mul_Tensor(x, y, &p);
  if (st == DISP_OK) st = sum_keep(p, dim, a ? &s : out);
  if (st == DISP_OK && a) st = disp_aten_mul_Tensor(a, s, out);
  disp_tensor_release(p), disp_tensor_release(s);
  return st;
}

/* t cast to dtype (grad.to(output.dtype())); t retained when it has it. */
static disp_status to_dtype(disp_tensor *t, disp_dtype dtype, disp_tensor **out) {
  if (disp_tensor_dtype(t) == dtype) {
    *out = disp_tensor_retain(t);
    return DISP_OK;
  }
  return disp_aten_to_dtype(t, (int32_t)dtype, false, false, -1, out);
}

/* ---- softmax and log_softmax ---------------------------------------------- */

/* _log_softmax: _log_softmax_backward_data(grad, result, dim, self.dtype). */
AG_BACKWARD(log_softmax_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  return disp_aten__log_softmax_backward_data(g[0], ag_saved(c, 0), ag_int(c, 1), (int32_t)ag_input_dtype(c, 0),
                                              &out[0]);
}

/* _softmax: _softmax_backward_data(grad, result, dim, self.dtype). */
AG_BACKWARD(softmax_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  return disp_aten__softmax_backward_data(g[0], ag_saved(c, 0), ag_int(c, 1), (int32_t)ag_input_dtype(c, 0),
                                          &out[0]);
}

/* _softmax_backward_data(grad_output, output, dim, input_dtype):
 *   grad_output: _softmax_backward_data(grad, output, dim, input_dtype)
 *   output: softmax_double_backward = grad_output * grad
 *           - (output * grad_output).sum(dim, true) * grad
 *           - grad_output * (output * grad).sum(dim, true) */
AG_BACKWARD(softmax_data_backward) {
  disp_tensor *go = ag_saved(c, 0), *o = ag_saved(c, 1);
  int64_t dim = ag_int(c, 2);
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = disp_aten__softmax_backward_data(g[0], o, dim, ag_int(c, 3), &out[0]);
  if (st != DISP_OK || !ag_needs(c, 1)) return st;
  disp_tensor *a = NULL, *b = NULL, *d = NULL, *e = NULL;
  st = disp_aten_mul_Tensor(go, g[0], &a);
  if (st == DISP_OK) st = times_sum_of_product(g[0], o, go, dim, &b);
  if (st == DISP_OK) st = times_sum_of_product(go, o, g[0], dim, &d);
  if (st == DISP_OK) st = disp_aten_sub_Tensor(a, b, disp_scalar_int(1), &e);
  if (st == DISP_OK) st = disp_aten_sub_Tensor(e, d, disp_scalar_int(1), &out[1]);
  disp_tensor_release(a), disp_tensor_release(b), disp_tensor_release(d), disp_tensor_release(e);
  return st;
}

/* _log_softmax_backward_data(grad_output, output, dim, input_dtype), with
 * gc = grad.to(output.dtype()):
 *   grad_output: gc - (gc * output.exp()).sum(dim, true)
 *   output: -grad_output.sum(dim, true) * output.exp() * gc */
AG_BACKWARD(log_softmax_data_backward) {
  disp_tensor *go = ag_saved(c, 0), *o = ag_saved(c, 1), *gc = NULL, *ex = NULL, *s = NULL, *ns = NULL;
  int64_t dim = ag_int(c, 2);
  disp_status st = to_dtype(g[0], disp_tensor_dtype(o), &gc);
  if (st == DISP_OK) st = disp_aten_exp(o, &ex);
  if (st == DISP_OK && ag_needs(c, 0)) st = times_sum_of_product(NULL, gc, ex, dim, &s);
  if (st == DISP_OK && ag_needs(c, 0)) st = disp_aten_sub_Tensor(gc, s, disp_scalar_int(1), &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) {
    disp_tensor *sg = NULL, *t = NULL;
    st = sum_keep(go, dim, &sg);
    if (st == DISP_OK) st = disp_aten_neg(sg, &ns);
    if (st == DISP_OK) st = disp_aten_mul_Tensor(ns, ex, &t);
    if (st == DISP_OK) st = disp_aten_mul_Tensor(t, gc, &out[1]);
    disp_tensor_release(sg), disp_tensor_release(t);
  }
  disp_tensor_release(gc), disp_tensor_release(ex), disp_tensor_release(s), disp_tensor_release(ns);
  return st;
}

/* ---- nll_loss --------------------------------------------------------------- */

/* nll_loss_forward: nll_loss_backward(grad, self, target, weight,
 * reduction, ignore_index, total_weight). */
AG_BACKWARD(nll_loss_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  return disp_aten_nll_loss_backward(g[0], ag_saved(c, 0), ag_saved(c, 1), ag_saved(c, 2), ag_int(c, 3),
                                     ag_int(c, 4), ag_saved(c, 3), &out[0]);
}

/* nll_loss_backward(grad_output, self, target, weight, reduction,
 * ignore_index, total_weight):
 *   grad_output: nll_loss(grad, target, weight, reduction, ignore_index)
 *   self: zeros_like(grad) */
AG_BACKWARD(nll_loss_backward_backward) {
  disp_status st = DISP_OK;
  if (ag_needs(c, 0))
    st = disp_aten_nll_loss(g[0], ag_saved(c, 0), ag_saved(c, 1), ag_int(c, 4), ag_int(c, 5), &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) st = disp_aten_zeros_like(g[0], -1, -1, (disp_opt_device){0}, (disp_opt_bool){0}, -1, &out[1]);
  return st;
}

/* ---- mse_loss --------------------------------------------------------------- */

/* mse_loss: self: mse_loss_backward(grad, self, target, reduction);
 * target: mse_loss_backward(grad, target, self, reduction). */
AG_BACKWARD(mse_loss_backward) {
  disp_tensor *self = ag_saved(c, 0), *target = ag_saved(c, 1);
  int64_t red = ag_int(c, 2);
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = disp_aten_mse_loss_backward(g[0], self, target, red, &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) st = disp_aten_mse_loss_backward(g[0], target, self, red, &out[1]);
  return st;
}

/* mse_loss_double_backward(grad * grad_output, input, reduction): 2 * that,
 * divided by input.numel() for the mean; negated for the target. */
static disp_status mse_double(disp_tensor *gg, const disp_tensor *input, int64_t red, int negate, disp_tensor **out) {
  disp_tensor *t = NULL, *m = NULL;
  disp_status st = disp_aten_mul_Scalar(gg, disp_scalar_int(2), &t);
  if (st == DISP_OK && red == REDUCTION_MEAN) st = disp_aten_div_Scalar(t, disp_scalar_int(disp_tensor_numel(input)), &m);
  else if (st == DISP_OK) m = disp_tensor_retain(t);
  if (st == DISP_OK && negate) st = disp_aten_neg(m, out);
  else if (st == DISP_OK) *out = disp_tensor_retain(m);
  disp_tensor_release(t), disp_tensor_release(m);
  return st;
}

/* mse_loss_double_backward_grad_output: mse_loss_backward(grad, self,
 * target, none) unreduced, else (mse_loss_backward(ones_like(grad_output),
 * self, target, reduction) * grad).sum(). */
static disp_status mse_grad_output(disp_tensor *grad, disp_tensor *go, disp_tensor *self, disp_tensor *target,
                                   int64_t red, disp_tensor **out) {
  if (red == REDUCTION_NONE) return disp_aten_mse_loss_backward(grad, self, target, red, out);
  disp_tensor *ones = NULL, *r = NULL, *p = NULL;
  disp_status st = disp_aten_ones_like(go, -1, -1, (disp_opt_device){0}, (disp_opt_bool){0}, -1, &ones);
  if (st == DISP_OK) st = disp_aten_mse_loss_backward(ones, self, target, red, &r);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(r, grad, &p);
  if (st == DISP_OK) st = disp_aten_sum(p, -1, out);
  disp_tensor_release(ones), disp_tensor_release(r), disp_tensor_release(p);
  return st;
}

/* mse_loss_backward(grad_output, self, target, reduction):
 *   grad_output: mse_loss_double_backward_grad_output(grad, grad_output, self, target, reduction)
 *   self: mse_loss_double_backward(grad * grad_output, self, reduction)
 *   target: -mse_loss_double_backward(grad * grad_output, target, reduction) */
AG_BACKWARD(mse_loss_backward_backward) {
  disp_tensor *go = ag_saved(c, 0), *self = ag_saved(c, 1), *target = ag_saved(c, 2), *gg = NULL;
  int64_t red = ag_int(c, 3);
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = mse_grad_output(g[0], go, self, target, red, &out[0]);
  if (st == DISP_OK && (ag_needs(c, 1) || ag_needs(c, 2))) st = disp_aten_mul_Tensor(g[0], go, &gg);
  if (st == DISP_OK && ag_needs(c, 1)) st = mse_double(gg, self, red, 0, &out[1]);
  if (st == DISP_OK && ag_needs(c, 2)) st = mse_double(gg, target, red, 1, &out[2]);
  disp_tensor_release(gg);
  return st;
}

/* ---- dropout ------------------------------------------------------------------ */

/* grad * (mask.type_as(grad) * scale): 1.13's
 * infinitely_differentiable_native_dropout_backward and
 * native_dropout_double_backward (a MulBackward0 under create_graph). */
static disp_status masked_scale(disp_tensor *grad, disp_tensor *mask, double scale, disp_tensor **out) {
  disp_tensor *m = NULL, *ms = NULL;
  disp_status st = to_dtype(mask, disp_tensor_dtype(grad), &m);
  if (st == DISP_OK) st = disp_aten_mul_Scalar(m, disp_scalar_double(scale), &ms);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(grad, ms, out);
  disp_tensor_release(m), disp_tensor_release(ms);
  return st;
}

/* native_dropout(input, p, train): the scale 1.13's formula passes,
 * (!train.has_value() || !train.value() ? 1 : (p == 1 ? 0.0 : 1.0 / (1.0 - p))).
 * (With train None the forward drops but this scale is 1: 1.13's quirk,
 * kept; F.dropout always passes a bool.) */
static double dropout_scale(ag_ctx *c) {
  const disp_value *train = ag_arg(c, 2);
  double p = ag_double(c, 1);
  if (!train || train->tag != DISP_VALUE_BOOL || !train->u.b) return 1.0;
  return p == 1 ? 0.0 : 1.0 / (1.0 - p);
}

/* native_dropout: input: with grad mode on (create_graph), the
 * differentiable grad * (mask * scale); else native_dropout_backward(grad,
 * result1, scale). */
AG_BACKWARD(native_dropout_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  double scale = dropout_scale(c);
  if (ag_create_graph(c)) return masked_scale(g[0], ag_saved(c, 0), scale, &out[0]);
  return disp_aten_native_dropout_backward(g[0], ag_saved(c, 0), scale, &out[0]);
}

/* native_dropout_backward(grad_output, mask, scale):
 *   grad_output: native_dropout_double_backward(grad, grad_output, mask, scale)
 *   mask: not_implemented */
AG_BACKWARD(native_dropout_backward_backward) {
  if (ag_needs(c, 1))
    return disp__fail(DISP_ERR_KERNEL,
                      "the derivative for 'native_dropout_backward: mask' is not implemented.");
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *gc = NULL;
  disp_status st = to_dtype(g[0], disp_tensor_dtype(ag_saved(c, 1)), &gc); /* ggI.type_as(grad_output) */
  if (st == DISP_OK) st = masked_scale(gc, ag_saved(c, 0), ag_double(c, 2), &out[0]);
  disp_tensor_release(gc);
  return st;
}
