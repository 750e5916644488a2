/*
 * formulas_shape.c - derivatives of the view and shape operators (1.13's
 * derivatives.yaml): the gradient takes the input's shape back.
 */
#include "formula.h"

/* t: grad.t(). */
AG_BACKWARD(t_backward) {
  return ag_needs(c, 0) ? disp_aten_t(g[0], &out[0]) : DISP_OK;
}

/* view, _reshape_alias: grad.reshape(self.sizes()). */
AG_BACKWARD(reshape_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  int nd;
  const int64_t *sizes = ag_input_sizes(c, 0, &nd);
  disp_int_list l = {sizes, (size_t)nd};
  return disp_aten_reshape(g[0], l, out);
}

/* expand: at::sum_to(grad, self.sizes()) - which the engine does. */
AG_BACKWARD(expand_backward) {
  if (ag_needs(c, 0)) out[0] = disp_tensor_retain(g[0]);
  return DISP_OK;
}

/* permute: grad.permute(the inverse permutation). */
AG_BACKWARD(permute_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_int_list dims = ag_int_list(c, 1);
  int64_t inv[64] = {0};
  if (dims.len > 64) return disp_aten_permute(g[0], dims, &out[0]); /* unreachable: ndim <= 64 */
  for (size_t i = 0; i < dims.len; i++) {
    int64_t d = ag_wrap_dim(dims.data[i], (int)dims.len);
    if (d >= 0 && d < (int64_t)dims.len) inv[d] = (int64_t)i; /* the forward refused others */
  }
  return disp_aten_permute(g[0], (disp_int_list){inv, dims.len}, &out[0]);
}

/* transpose.int: grad.transpose(dim0, dim1). */
AG_BACKWARD(transpose_backward) {
  return ag_needs(c, 0) ? disp_aten_transpose_int(g[0], ag_int(c, 1), ag_int(c, 2), &out[0]) : DISP_OK;
}

/* unsqueeze: grad.squeeze(dim). */
AG_BACKWARD(unsqueeze_backward) {
  return ag_needs(c, 0) ? disp_aten_squeeze_dim(g[0], ag_int(c, 1), &out[0]) : DISP_OK;
}

/* squeeze.dim: 1.13's unsqueeze_to - grad.unsqueeze(dim) when self had
 * size 1 there (the dim was squeezed), else grad. */
AG_BACKWARD(squeeze_dim_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  int nd;
  const int64_t *sizes = ag_input_sizes(c, 0, &nd);
  int64_t d = ag_wrap_dim(ag_int(c, 1), nd);
  if (nd > 0 && d >= 0 && d < nd && sizes[d] == 1) return disp_aten_unsqueeze(g[0], d, &out[0]);
  out[0] = disp_tensor_retain(g[0]);
  return DISP_OK;
}
