/*
 * formula_helpers.c - small operations many formulas and the engine need.
 */
#include "error_internal.h"
#include "formula.h"

static disp_opt_device opt_device(disp_device d) {
  disp_opt_device o = {(int32_t)d.type, d.index, true};
  return o;
}

disp_status ag_zeros_like_input(ag_ctx *c, int j, disp_tensor **out) {
  int nd;
  const int64_t *sizes = ag_input_sizes(c, j, &nd);
  disp_int_list l = {sizes, (size_t)nd};
  disp_opt_bool none = {false, false};
  return disp_aten_zeros(l, (int32_t)ag_input_dtype(c, j), -1, opt_device(ag_input_device(c, j)), none, out);
}

disp_status ag_scalar_like(disp_tensor *like, disp_scalar v, disp_tensor **out) {
  disp_opt_bool none = {false, false};
  return disp_aten_scalar_tensor(v, (int32_t)disp_tensor_dtype(like), -1, opt_device(disp_tensor_device(like)), none, out);
}

disp_status ag_zeros_like(disp_tensor *t, disp_tensor **out) {
  disp_opt_device dev = {0, 0, false};
  disp_opt_bool none = {false, false};
  return disp_aten_zeros_like(t, -1, -1, dev, none, -1, out);
}

disp_status ag_zeros_sized(disp_tensor *like, const int64_t *sizes, int ndim, disp_tensor **out) {
  disp_int_list l = {sizes, (size_t)ndim};
  disp_opt_bool none = {false, false};
  return disp_aten_zeros(l, (int32_t)disp_tensor_dtype(like), -1, opt_device(disp_tensor_device(like)), none, out);
}

int64_t ag_wrap_dim(int64_t dim, int ndim) {
  int64_t n = ndim > 0 ? ndim : 1;
  return dim < 0 ? dim + n : dim;
}

/* PyTorch's at::sum_to: sums the leading dimensions grad has beyond
 * `sizes`, and those where sizes has 1 and grad does not. */
disp_status ag_sum_to(disp_tensor *grad, const int64_t *sizes, int ndim, disp_tensor **out) {
  int gd = disp_tensor_ndim(grad), lead = gd - ndim;
  const int64_t *gs = disp_tensor_sizes(grad);
  if (lead < 0)
    return disp__fail(DISP_ERR_INVALID_ARG, "sum_to: a gradient of %d dims cannot be summed to %d dims", gd, ndim);
  int64_t dims[64];
  size_t nr = 0;
  for (int i = 0; i < gd && nr < 64; i++)
    if (i < lead || (sizes[i - lead] == 1 && gs[i] != 1)) dims[nr++] = i;
  if (!nr) {
    *out = disp_tensor_retain(grad);
    return DISP_OK;
  }
  disp_opt_int_list dl = {{dims, nr}, true};
  disp_tensor *s;
  disp_status st = disp_aten_sum_dim_IntList(grad, dl, true, -1, &s);
  if (st != DISP_OK || !lead) {
    *out = st == DISP_OK ? s : NULL;
    return st;
  }
  disp_int_list shape = {sizes, (size_t)ndim};
  st = disp_aten_view(s, shape, out);
  disp_tensor_release(s);
  return st;
}
