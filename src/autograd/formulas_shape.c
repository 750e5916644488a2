/*
 * formulas_shape.c - derivatives of the view and shape operators (1.13's
 * derivatives.yaml): the gradient takes the input's shape back.
 */
#include "formula.h"

/* t: grad.t(). */
static disp_status t_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  return ag_needs(c, 0) ? disp_aten_t(g[0], &out[0]) : DISP_OK;
}

/* view, _reshape_alias: grad.reshape(self.sizes()). */
static disp_status reshape_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  if (!ag_needs(c, 0)) return DISP_OK;
  int nd;
  const int64_t *sizes = ag_input_sizes(c, 0, &nd);
  disp_int_list l = {sizes, (size_t)nd};
  return disp_aten_reshape(g[0], l, out);
}

/* expand: at::sum_to(grad, self.sizes()) - which the engine does. */
static disp_status expand_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  if (ag_needs(c, 0)) out[0] = disp_tensor_retain(g[0]);
  return DISP_OK;
}

static const ag_formula formulas[] = {
    {"aten::t", "TBackward0", "self", "", t_backward, NULL},
    {"aten::view", "ViewBackward0", "self", "", reshape_backward, NULL},
    {"aten::_reshape_alias", "ReshapeAliasBackward0", "self", "", reshape_backward, NULL},
    {"aten::expand", "ExpandBackward0", "self", "", expand_backward, NULL},
};

const ag_formula_set disp__ag_formulas_shape = {formulas, sizeof formulas / sizeof *formulas};
