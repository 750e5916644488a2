/*
 * formulas_reduce.c - derivatives of the reductions (1.13's
 * derivatives.yaml): the gradient is spread back over the reduced
 * dimensions.
 */
#include "formula.h"

static disp_status expand_to_input(ag_ctx *c, disp_tensor *g, disp_tensor **out) {
  int nd;
  const int64_t *sizes = ag_input_sizes(c, 0, &nd);
  disp_int_list l = {sizes, (size_t)nd};
  return disp_aten_expand(g, l, false, out);
}

/* sum: grad.expand(self.sizes()). */
AG_BACKWARD(sum_backward) {
  return ag_needs(c, 0) ? expand_to_input(c, g[0], &out[0]) : DISP_OK;
}

/* grad with the reduced dims put back as size 1 (1.13's unsqueeze_multiple),
 * unless keepdim kept them. */
static disp_status unsqueeze_reduced(ag_ctx *c, disp_tensor *g, int dim_pos, int keepdim_pos, disp_tensor **out) {
  int nd;
  ag_input_sizes(c, 0, &nd);
  disp_int_list dims = ag_int_list(c, dim_pos);
  if (ag_bool(c, keepdim_pos) || nd == 0) {
    *out = disp_tensor_retain(g);
    return DISP_OK;
  }
  unsigned char reduced[64] = {0};
  if (ag_is_none(c, dim_pos) || dims.len == 0)
    for (int d = 0; d < nd && d < 64; d++) reduced[d] = 1;
  for (size_t i = 0; i < dims.len; i++) {
    int64_t d = dims.data[i] < 0 ? dims.data[i] + nd : dims.data[i];
    if (d >= 0 && d < 64) reduced[d] = 1;
  }
  disp_tensor *cur = disp_tensor_retain(g);
  disp_status st = DISP_OK;
  for (int d = 0; d < nd && st == DISP_OK; d++) {
    if (!reduced[d]) continue;
    disp_tensor *next;
    st = disp_aten_unsqueeze(cur, d, &next);
    disp_tensor_release(cur);
    cur = st == DISP_OK ? next : NULL;
  }
  *out = cur;
  return st;
}

/* sum.dim_IntList: unsqueeze the reduced dims, then expand. */
AG_BACKWARD(sum_dim_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *u;
  disp_status st = unsqueeze_reduced(c, g[0], 1, 2, &u);
  if (st == DISP_OK) st = expand_to_input(c, u, &out[0]);
  disp_tensor_release(u);
  return st;
}

/* Number of elements the mean of input 0 averaged over: the dims at
 * argument dim_pos, or all of them (dim_pos < 0). */
static int64_t mean_count(ag_ctx *c, int dim_pos) {
  int nd;
  const int64_t *sizes = ag_input_sizes(c, 0, &nd);
  int64_t n = 1;
  if (dim_pos < 0) {
    for (int d = 0; d < nd; d++) n *= sizes[d];
    return n;
  }
  disp_int_list dims = ag_int_list(c, dim_pos);
  for (size_t i = 0; i < dims.len; i++) n *= sizes[dims.data[i] < 0 ? dims.data[i] + nd : dims.data[i]];
  return n;
}

/* mean: grad.expand(sizes) / numel. */
AG_BACKWARD(mean_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *e;
  disp_status st = expand_to_input(c, g[0], &e);
  if (st == DISP_OK) st = disp_aten_div_Scalar(e, disp_scalar_int(mean_count(c, -1)), &out[0]);
  disp_tensor_release(e);
  return st;
}

/* mean.dim: mean_backward(grad, self.sym_sizes(), dim, self.sym_numel(),
 * keepdim), sum.dim's gradient divided by the count; an all-reduce (dim
 * None or empty) divides by the saved self's numel, as 1.13, which saves
 * self for it (so its version is checked). */
AG_BACKWARD(mean_dim_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *s = NULL;
  int all = ag_is_none(c, 1) || ag_int_list(c, 1).len == 0;
  int64_t n = all ? disp_tensor_numel(ag_saved(c, 0)) : mean_count(c, 1);
  disp_status st = disp__bw_sum_dim_backward(c, g, &s);
  if (st == DISP_OK) st = disp_aten_div_Scalar(s, disp_scalar_int(n), &out[0]);
  disp_tensor_release(s);
  return st;
}

/* amax: grad / (number of maxima) at every maximum, 0 elsewhere (1.13's
 * scale_grad_by_count over restore_reduced_dims). Saved: self, result. */
AG_BACKWARD(amax_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *gu = NULL, *ru = NULL, *mask = NULL, *count = NULL, *share = NULL;
  disp_opt_int_list dims = {ag_int_list(c, 1), true};
  disp_status st = unsqueeze_reduced(c, g[0], 1, 2, &gu);
  if (st == DISP_OK) st = unsqueeze_reduced(c, ag_saved(c, 1), 1, 2, &ru);
  if (st == DISP_OK) st = disp_aten_eq_Tensor(ru, ag_saved(c, 0), &mask);
  if (st == DISP_OK) st = disp_aten_sum_dim_IntList(mask, dims, true, -1, &count);
  if (st == DISP_OK) st = disp_aten_div_Tensor(gu, count, &share);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(share, mask, &out[0]);
  disp_tensor_release(gu), disp_tensor_release(ru), disp_tensor_release(mask);
  disp_tensor_release(count), disp_tensor_release(share);
  return st;
}

/* A bool mask of the input's shape, true where `index` (size 1 at dim d)
 * names the position along d: 1.13's scatter of grad by indices, built as
 * arange(size) == index so that it needs no scatter kernel. */
static disp_status index_mask(ag_ctx *c, disp_tensor *index, int64_t d, disp_tensor **out) {
  int nd;
  const int64_t *sizes = ag_input_sizes(c, 0, &nd);
  int64_t shape[64];
  for (int i = 0; i < nd && i < 64; i++) shape[i] = i == d ? sizes[i] : 1;
  disp_opt_device dev = {(int32_t)ag_input_device(c, 0).type, ag_input_device(c, 0).index, true};
  disp_opt_bool none = {false, false};
  disp_tensor *r = NULL, *rv = NULL;
  disp_status st = disp_aten_arange(disp_scalar_int(sizes[d]), DISP_DTYPE_INT64, -1, dev, none, &r);
  if (st == DISP_OK) st = disp_aten_view(r, (disp_int_list){shape, (size_t)nd}, &rv);
  if (st == DISP_OK) st = disp_aten_eq_Tensor(rv, index, out);
  disp_tensor_release(r), disp_tensor_release(rv);
  return st;
}

/* t.unsqueeze(d), or t itself when keepdim kept d. */
static disp_status unsqueeze_unless(disp_tensor *t, int keep, int64_t d, disp_tensor **out) {
  if (!keep) return disp_aten_unsqueeze(t, d, out);
  *out = disp_tensor_retain(t);
  return DISP_OK;
}

/* max.dim: grad goes to the position indices (saved result1) names
 * (1.13's value_selecting_reduction_backward); indices get none. */
AG_BACKWARD(max_dim_backward) {
  if (!ag_needs(c, 0) || !g[0]) return DISP_OK;
  int nd;
  ag_input_sizes(c, 0, &nd);
  if (nd == 0 || nd > 64) {
    out[0] = disp_tensor_retain(g[0]);
    return DISP_OK;
  }
  int64_t d = ag_wrap_dim(ag_int(c, 1), nd);
  int keep = ag_bool(c, 2);
  disp_tensor *gu = NULL, *iu = NULL, *mask = NULL, *zero = NULL;
  disp_status st = unsqueeze_unless(g[0], keep, d, &gu);
  if (st == DISP_OK) st = unsqueeze_unless(ag_saved(c, 0), keep, d, &iu);
  if (st == DISP_OK) st = index_mask(c, iu, d, &mask);
  if (st == DISP_OK) st = ag_scalar_like(g[0], disp_scalar_int(0), &zero);
  if (st == DISP_OK) st = disp_aten_where_self(mask, gu, zero, &out[0]);
  disp_tensor_release(gu), disp_tensor_release(iu), disp_tensor_release(mask), disp_tensor_release(zero);
  return st;
}
