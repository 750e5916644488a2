/*
 * formulas_nn.c - derivatives of the neural-network operators. Where 1.13
 * calls a backward operator (_log_softmax_backward_data, nll_loss_backward,
 * ...) so does the formula, through the dispatcher, so a backend's own
 * kernel for it is the one that runs.
 */
#include "formula.h"

/* _log_softmax: _log_softmax_backward_data(grad, result, dim, self.dtype). */
static disp_status log_softmax_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  if (!ag_needs(c, 0)) return DISP_OK;
  return disp_aten__log_softmax_backward_data(g[0], ag_saved(c, 0), ag_int(c, 1), (int32_t)ag_input_dtype(c, 0),
                                              &out[0]);
}

/* _softmax: _softmax_backward_data(grad, result, dim, self.dtype). */
static disp_status softmax_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  if (!ag_needs(c, 0)) return DISP_OK;
  return disp_aten__softmax_backward_data(g[0], ag_saved(c, 0), ag_int(c, 1), (int32_t)ag_input_dtype(c, 0),
                                          &out[0]);
}

/* nll_loss_forward: nll_loss_backward(grad, self, target, weight,
 * reduction, ignore_index, total_weight). */
static disp_status nll_loss_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  if (!ag_needs(c, 0)) return DISP_OK;
  return disp_aten_nll_loss_backward(g[0], ag_saved(c, 0), ag_saved(c, 1), ag_saved(c, 2), ag_int(c, 3),
                                     ag_int(c, 4), ag_saved(c, 3), &out[0]);
}

static const ag_formula formulas[] = {
    {"aten::_log_softmax", "LogSoftmaxBackward0", "self", "result", log_softmax_backward, NULL},
    {"aten::_softmax", "SoftmaxBackward0", "self", "result", softmax_backward, NULL},
    {"aten::nll_loss_forward", "NllLossBackward0", "self", "self,target,weight,result1", nll_loss_backward,
     "result1"},
};

const ag_formula_set disp__ag_formulas_nn = {formulas, sizeof formulas / sizeof *formulas};
