/*
 * formulas_mask.c - derivatives of the operators that keep some elements
 * and zero, fill or drop the rest (tril, triu, masked_fill, topk), from
 * 1.13's derivatives.yaml: the gradient passes where the forward kept the
 * input and is zero elsewhere, so each backward puts grad back through
 * the same mask (topk's: the positions its indices name).
 */
#include "formula.h"

/* tril: grad.tril(diagonal) */
AG_BACKWARD(tril_backward) {
  return ag_needs(c, 0) ? disp_aten_tril(g[0], ag_int(c, 1), &out[0]) : DISP_OK;
}

/* triu: grad.triu(diagonal) */
AG_BACKWARD(triu_backward) {
  return ag_needs(c, 0) ? disp_aten_triu(g[0], ag_int(c, 1), &out[0]) : DISP_OK;
}

/* masked_fill.Scalar: grad.masked_fill(mask, 0) (mask is not
 * differentiable); the engine sums it down to self's shape */
AG_BACKWARD(masked_fill_backward) {
  return ag_needs(c, 0) ? disp_aten_masked_fill_Scalar(g[0], ag_saved(c, 0), disp_scalar_int(0), &out[0]) : DISP_OK;
}

/* topk: value_selecting_reduction_backward(grad, dim, indices, sizes,
 * keepdim=true), zeros with grad scattered to where indices point. Written
 * with dispatched operators (no scatter here): with dim moved last, a
 * (..., k, n) mask indices == arange(n) picks each gradient into its
 * place, and a sum over k merges them (topk's indices in a slice are
 * distinct, so nothing adds up). */
AG_BACKWARD(topk_backward) {
  if (!ag_needs(c, 0) || !g[0]) return DISP_OK;
  int nd;
  const int64_t *sizes = ag_input_sizes(c, 0, &nd);
  if (nd == 0) return disp_tensor_numel(g[0]) ? (out[0] = disp_tensor_retain(g[0]), DISP_OK) : ag_zeros_like_input(c, 0, &out[0]);
  int64_t d = ag_wrap_dim(ag_int(c, 2), nd);
  disp_opt_device dev = {(int32_t)ag_input_device(c, 0).type, ag_input_device(c, 0).index, true};
  disp_opt_bool none = {false, false};
  disp_tensor *gt = NULL, *it = NULL, *gu = NULL, *iu = NULL, *ar = NULL, *mask = NULL, *zero = NULL, *sel = NULL,
              *sum = NULL;
  int64_t kdim = -2;
  disp_status st = disp_aten_transpose_int(g[0], d, -1, &gt);
  if (st == DISP_OK) st = disp_aten_transpose_int(ag_saved(c, 0), d, -1, &it);
  if (st == DISP_OK) st = disp_aten_unsqueeze(gt, -1, &gu);
  if (st == DISP_OK) st = disp_aten_unsqueeze(it, -1, &iu);
  if (st == DISP_OK) st = disp_aten_arange(disp_scalar_int(sizes[d]), DISP_DTYPE_INT64, -1, dev, none, &ar);
  if (st == DISP_OK) st = disp_aten_eq_Tensor(iu, ar, &mask);
  if (st == DISP_OK) st = ag_scalar_like(g[0], disp_scalar_int(0), &zero);
  if (st == DISP_OK) st = disp_aten_where_self(mask, gu, zero, &sel);
  if (st == DISP_OK) st = disp_aten_sum_dim_IntList(sel, (disp_opt_int_list){{&kdim, 1}, true}, false, -1, &sum);
  if (st == DISP_OK) st = disp_aten_transpose_int(sum, d, -1, &out[0]);
  disp_tensor_release(gt), disp_tensor_release(it), disp_tensor_release(gu), disp_tensor_release(iu);
  disp_tensor_release(ar), disp_tensor_release(mask), disp_tensor_release(zero), disp_tensor_release(sel);
  disp_tensor_release(sum);
  return st;
}
