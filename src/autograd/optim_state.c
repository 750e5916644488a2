/*
 * optim_state.c - restoring an optimizer's per-parameter state
 * (disp_optim_set_state; PyTorch's optimizer.load_state_dict for one
 * entry), so a checkpoint resumes training exactly.
 */
#include "argcheck_internal.h"
#include "disp.h"
#include "error_internal.h"
#include "optim_internal.h"

/* value must look like the parameter: sizes, dtype, device. */
static disp_status check_like(const disp_tensor *p, const disp_tensor *v, size_t index, const char *name) {
  int same = disp_tensor_ndim(p) == disp_tensor_ndim(v) && disp_tensor_dtype(p) == disp_tensor_dtype(v) &&
             disp_device_equal(disp_tensor_device(p), disp_tensor_device(v));
  for (int64_t d = 0; same && d < disp_tensor_ndim(p); d++) same = disp_tensor_sizes(p)[d] == disp_tensor_sizes(v)[d];
  if (same) return DISP_OK;
  return disp__fail(DISP_ERR_INVALID_ARG,
                    "disp_optim_set_state: '%s' of parameter %zu must have the parameter's sizes, dtype and device",
                    name, index);
}

DISP_API disp_status disp_optim_set_state(disp_optimizer *opt, size_t index, const char *name, disp_tensor *value,
                                          int64_t step) {
  DISP_REFUSE_NULL(opt);
  DISP_REFUSE_NULL(name);
  DISP_REFUSE_NULL(value);
  if (index >= opt->n)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "disp_optim_set_state: parameter index %zu out of range (%zu parameters)", index, opt->n);
  int slot = disp__optim_state_slot(opt, name);
  if (slot == OPTIM_MAX_EXP_AVG_SQ && !opt->adam.amsgrad) slot = -1; /* no such state without amsgrad */
  if (slot < 0) return disp__fail(DISP_ERR_INVALID_ARG, "disp_optim_set_state: this optimizer has no state named '%s'", name);
  if (opt->kind != OPTIM_SGD && step < 1)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_optim_set_state: step %lld (Adam's state belongs to step 1 or later)",
                      (long long)step);
  disp_status st = check_like(opt->params[index], value, index, name);
  disp_tensor *copy = NULL;
  /* grad mode off: the state is no graph's (as torch.no_grad in step) */
  disp_tls_state g = disp_grad_mode_push(0);
  if (st == DISP_OK) st = disp_aten_clone(value, DISP_MEMORY_FORMAT_CONTIGUOUS, &copy);
  disp_tls_restore(g);
  if (st != DISP_OK) return st;
  optim_state *s = &opt->state[index];
  disp_tensor_release(s->t[slot]);
  s->t[slot] = copy;
  /* SGD counts steps only to know its first (the buffer then starts as
   * the gradient): a restored buffer is past it */
  s->step = opt->kind == OPTIM_SGD ? (s->step ? s->step : 1) : step;
  return DISP_OK;
}
