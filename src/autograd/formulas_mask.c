/*
 * formulas_mask.c - derivatives of the operators that keep some elements
 * and zero or fill the rest (tril, triu, masked_fill), from 1.13's
 * derivatives.yaml: the gradient passes where the forward kept the input
 * and is zero elsewhere, so each backward applies the same mask to grad.
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
