/*
 * formulas_split.c - the derivative of split.Tensor (1.13's split_backward
 * in derivatives.yaml): the pieces' gradients concatenated along dim, an
 * undefined one (a piece that got no gradient) as zeros of its shape.
 */
#include "alloc_internal.h"
#include "formula.h"

AG_BACKWARD(split_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  int ndim = 0;
  const int64_t *sizes = ag_input_sizes(c, 0, &ndim);
  int64_t split_size = ag_int(c, 1), dim = ag_wrap_dim(ag_int(c, 2), ndim);
  int n = ag_num_outputs(c);
  if (n < 1) return DISP_OK; /* no piece, no gradient (split always makes one) */
  disp_tensor *ref = NULL;
  for (int i = 0; i < n && !ref; i++) ref = g[i];
  disp_tensor **parts = disp__calloc((size_t)n, sizeof *parts);
  if (!parts) return disp_set_error(DISP_ERR_NO_MEMORY, "SplitBackward0: out of memory");
  disp_status st = DISP_OK;
  for (int i = 0; i < n && st == DISP_OK; i++) {
    if (g[i]) {
      parts[i] = disp_tensor_retain(g[i]);
      continue;
    }
    int64_t shape[DISP_TENSOR_MAX_DIMS];
    for (int k = 0; k < ndim; k++) shape[k] = sizes[k];
    shape[dim] = i < n - 1 ? split_size : sizes[dim] - split_size * (n - 1);
    st = ag_zeros_sized(ref, shape, ndim, &parts[i]);
  }
  if (st == DISP_OK) st = disp_aten_cat((disp_tensor_list){parts, (size_t)n}, dim, &out[0]);
  for (int i = 0; i < n; i++) disp_tensor_release(parts[i]);
  disp__free(parts);
  return st;
}
