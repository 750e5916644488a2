/*
 * formulas_copy.c - derivatives of the copying and overwriting operators
 * (1.13's derivatives.yaml, and CopyBackwards of its VariableTypeManual
 * for copy_). A copy passes grad through; the engine casts it to the
 * input's dtype and sums it to the input's shape (_to_copy's
 * _to_copy_backward, copy_'s broadcast src). An overwritten value gets
 * zeros: nothing of it is left in the result.
 */
#include "formula.h"

/* _to_copy, clone: grad. */
AG_BACKWARD(pass_backward) {
  if (ag_needs(c, 0)) out[0] = disp_tensor_retain(g[0]);
  return DISP_OK;
}

/* fill_.Scalar, zero_: self gets zeros_like(grad). */
AG_BACKWARD(overwrite_backward) {
  return ag_needs(c, 0) ? ag_zeros_like(g[0], &out[0]) : DISP_OK;
}

/* copy_(self, src): self gets zeros_like(grad), src gets grad. */
AG_BACKWARD(copy_backward) {
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = ag_zeros_like(g[0], &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) out[1] = disp_tensor_retain(g[0]);
  return st;
}

/* Names as 1.13's grad_fn->name() gives them (tests/test_node_names.c):
 * fill_.Scalar is FillBackward2 (fill.Scalar and fill.Tensor come first in
 * derivatives.yaml); copy_'s node is hand-written in 1.13, and the name() of
 * such nodes is their C++ type's, namespace included. */
