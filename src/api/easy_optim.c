/*
 * easy_optim.c - the optimizer verbs of the concise API (disp/easy.h):
 * PyTorch's optimizer.zero_grad() and optimizer.step() over disp/optim.h,
 * under the rule of Note [Failed scopes].
 */
#include "easy_internal.h"
#include "error_internal.h"

/* Runs one optimizer verb, unless the innermost scope failed already:
 * stepping after a failed backward would move the parameters by stale or
 * zeroed gradients (Adam's moments move even then), a silent wrong model. */
static disp_status verb(const char *fn, disp_optimizer *opt, disp_status (*run)(disp_optimizer *)) {
  disp_status st;
  if (disp__easy_scope_failed(&st)) return st;
  if (!opt) {
    disp__fail(DISP_ERR_INVALID_ARG, "%s: opt is NULL", fn);
    disp__easy_failed();
    return DISP_ERR_INVALID_ARG;
  }
  st = run(opt);
  if (st != DISP_OK) disp__easy_failed();
  return st;
}

/* 1.13's default: gradients are zeroed in place (set_to_none=False). */
static disp_status zero_grad(disp_optimizer *opt) { return disp_optim_zero_grad(opt, 0); }

disp_status disp_zero_grad(disp_optimizer *opt) { return verb("disp_zero_grad", opt, zero_grad); }

disp_status disp_step(disp_optimizer *opt) { return verb("disp_step", opt, disp_optim_step); }
