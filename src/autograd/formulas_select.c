/*
 * formulas_select.c - derivatives of the operators whose gradient picks
 * where it flows by comparing values (1.13's derivatives.yaml: abs, clamp,
 * clamp_min, maximum, minimum, where.self). The masks come from the saved
 * forward inputs and are not differentiable, so with create_graph the
 * gradient stays a function of grad only, as in PyTorch.
 */
#include "formula.h"

typedef disp_status (*cmp_fn)(disp_tensor *, disp_tensor *, disp_tensor **);

/* where(cmp(a, b), yes, no), no = NULL meaning 0 in yes's dtype. */
static disp_status where_cmp(cmp_fn cmp, disp_tensor *a, disp_tensor *b, disp_tensor *yes, disp_tensor *no,
                             disp_tensor **out) {
  disp_tensor *mask = NULL, *zero = NULL;
  disp_status st = cmp(a, b, &mask);
  if (st == DISP_OK && !no) st = ag_scalar_like(yes, disp_scalar_int(0), &zero);
  if (st == DISP_OK) st = disp_aten_where_self(mask, yes, no ? no : zero, out);
  disp_tensor_release(mask), disp_tensor_release(zero);
  return st;
}

/* where(cmp(a, b), 0, yes): 1.13's masked_fill_(cmp(a, b), 0). */
static disp_status zero_where(cmp_fn cmp, disp_tensor *a, disp_tensor *b, disp_tensor *yes, disp_tensor **out) {
  disp_tensor *zero = NULL, *mask = NULL;
  disp_status st = ag_scalar_like(yes, disp_scalar_int(0), &zero);
  if (st == DISP_OK) st = cmp(a, b, &mask);
  if (st == DISP_OK) st = disp_aten_where_self(mask, zero, yes, out);
  disp_tensor_release(mask), disp_tensor_release(zero);
  return st;
}

/* where(cmp(self, v), yes, 0) with v a Scalar, compared in self's dtype
 * as PyTorch compares a tensor with a wrapped number. */
static disp_status where_cmp_scalar(cmp_fn cmp, disp_tensor *self, disp_scalar v, disp_tensor *yes,
                                    disp_tensor **out) {
  disp_tensor *b = NULL;
  disp_status st = ag_scalar_like(self, v, &b);
  if (st == DISP_OK) st = where_cmp(cmp, self, b, yes, NULL, out);
  disp_tensor_release(b);
  return st;
}

/* abs: grad * self.sgn(); sgn of a real tensor is 1, -1 or 0 (NaN: 0). */
AG_BACKWARD(abs_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *self = ag_saved(c, 0), *zero = NULL, *one = NULL, *minus = NULL, *neg = NULL, *sgn = NULL;
  disp_status st = ag_scalar_like(self, disp_scalar_int(0), &zero);
  if (st == DISP_OK) st = ag_scalar_like(self, disp_scalar_int(1), &one);
  if (st == DISP_OK) st = ag_scalar_like(self, disp_scalar_int(-1), &minus);
  if (st == DISP_OK) st = where_cmp(disp_aten_lt_Tensor, self, zero, minus, zero, &neg);
  if (st == DISP_OK) st = where_cmp(disp_aten_gt_Tensor, self, zero, one, neg, &sgn);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(g[0], sgn, &out[0]);
  disp_tensor_release(zero), disp_tensor_release(one), disp_tensor_release(minus);
  disp_tensor_release(neg), disp_tensor_release(sgn);
  return st;
}

/* clamp: grad where min <= self <= max (each bound only when given). */
AG_BACKWARD(clamp_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *self = ag_saved(c, 0), *low = NULL;
  disp_scalar min = ag_scalar(c, 1), max = ag_scalar(c, 2);
  disp_status st = DISP_OK;
  if (min.kind == DISP_SCALAR_NONE) low = disp_tensor_retain(g[0]);
  else st = where_cmp_scalar(disp_aten_ge_Tensor, self, min, g[0], &low);
  if (st == DISP_OK && max.kind == DISP_SCALAR_NONE) out[0] = disp_tensor_retain(low);
  else if (st == DISP_OK) st = where_cmp_scalar(disp_aten_le_Tensor, self, max, low, &out[0]);
  disp_tensor_release(low);
  return st;
}

/* clamp_min: where(self >= min, grad, 0). */
AG_BACKWARD(clamp_min_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  return where_cmp_scalar(disp_aten_ge_Tensor, ag_saved(c, 0), ag_scalar(c, 1), g[0], &out[0]);
}

/* maximum/minimum: ties share grad / 2; the smaller (larger) side gets 0.
 * self_loses(self, other) is the comparison that zeroes self's gradient. */
static disp_status extremum_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out, cmp_fn self_loses,
                                     cmp_fn other_loses) {
  disp_tensor *self = ag_saved(c, 0), *other = ag_saved(c, 1), *half = NULL, *shared = NULL;
  disp_status st = disp_aten_div_Scalar(g[0], disp_scalar_int(2), &half);
  if (st == DISP_OK) st = where_cmp(disp_aten_eq_Tensor, self, other, half, g[0], &shared);
  if (st == DISP_OK && ag_needs(c, 0)) st = zero_where(self_loses, self, other, shared, &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) st = zero_where(other_loses, self, other, shared, &out[1]);
  disp_tensor_release(half), disp_tensor_release(shared);
  return st;
}

AG_BACKWARD(maximum_backward) {
  return extremum_backward(c, g, out, disp_aten_lt_Tensor, disp_aten_gt_Tensor);
}

AG_BACKWARD(minimum_backward) {
  return extremum_backward(c, g, out, disp_aten_gt_Tensor, disp_aten_lt_Tensor);
}

/* where.self: self gets where(condition, grad, 0), other where(condition,
 * 0, grad); the condition is not differentiable. */
AG_BACKWARD(where_backward) {
  disp_tensor *cond = ag_saved(c, 0), *zero = NULL;
  disp_status st = ag_scalar_like(g[0], disp_scalar_int(0), &zero);
  if (st == DISP_OK && ag_needs(c, 0)) st = disp_aten_where_self(cond, g[0], zero, &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) st = disp_aten_where_self(cond, zero, g[0], &out[1]);
  disp_tensor_release(zero);
  return st;
}
