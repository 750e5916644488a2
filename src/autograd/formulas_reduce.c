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
static disp_status sum_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
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
static disp_status sum_dim_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *u;
  disp_status st = unsqueeze_reduced(c, g[0], 1, 2, &u);
  if (st == DISP_OK) st = expand_to_input(c, u, &out[0]);
  disp_tensor_release(u);
  return st;
}

/* Number of elements the mean of input 0 averaged over. */
static int64_t mean_count(ag_ctx *c, int dim_pos) {
  int nd;
  const int64_t *sizes = ag_input_sizes(c, 0, &nd);
  int64_t n = 1;
  disp_int_list dims = dim_pos >= 0 ? ag_int_list(c, dim_pos) : (disp_int_list){0, 0};
  if (dim_pos < 0 || ag_is_none(c, dim_pos) || dims.len == 0) {
    for (int d = 0; d < nd; d++) n *= sizes[d];
    return n;
  }
  for (size_t i = 0; i < dims.len; i++) n *= sizes[dims.data[i] < 0 ? dims.data[i] + nd : dims.data[i]];
  return n;
}

/* mean: grad.expand(sizes) / numel. */
static disp_status mean_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *e;
  disp_status st = expand_to_input(c, g[0], &e);
  if (st == DISP_OK) st = disp_aten_div_Scalar(e, disp_scalar_int(mean_count(c, -1)), &out[0]);
  disp_tensor_release(e);
  return st;
}

/* mean.dim: sum.dim's gradient divided by the count. */
static disp_status mean_dim_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *s = NULL;
  disp_status st = sum_dim_backward(c, g, &s);
  if (st == DISP_OK) st = disp_aten_div_Scalar(s, disp_scalar_int(mean_count(c, 1)), &out[0]);
  disp_tensor_release(s);
  return st;
}

static const ag_formula formulas[] = {
    {"aten::sum", "SumBackward0", "self", "", sum_backward, NULL},
    {"aten::sum.dim_IntList", "SumBackward1", "self", "", sum_dim_backward, NULL},
    {"aten::mean", "MeanBackward0", "self", "", mean_backward, NULL},
    {"aten::mean.dim", "MeanBackward1", "self", "", mean_dim_backward, NULL},
};

const ag_formula_set disp__ag_formulas_reduce = {formulas, sizeof formulas / sizeof *formulas};
