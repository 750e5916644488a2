/*
 * view_meta.c - which tensors are differentiable views, how they were made,
 * and 1.13's rules for updating them in place (DifferentiableViewMeta,
 * CreationMeta, check_inplace and handle_view_on_rebase, and the lazy
 * grad_fn of VariableHooks::grad_fn).
 *
 * Every view operator's output of a floating-point tensor is marked where
 * 1.13 marks it, in the ADInplaceOrView kernel (as_view), whatever the mode:
 * it remembers the root of its chain (the base), how it was made (grad
 * mode, no-grad mode, inference mode) and the version its grad_fn belongs
 * to. Views of inference tensors are not marked (1.13's Note [View of
 * inference tensor]), nor are detach's outputs (no differentiable view).
 */
#include "error_internal.h"
#include "record_internal.h"

/* How the view was made now, 1.13's creation_meta argument of as_view. */
static unsigned char creation_now(void) {
  if (disp_inference_mode_enabled()) return AG_VIEW_INFERENCE;
  return disp_grad_mode_enabled() ? AG_VIEW_DEFAULT : AG_VIEW_NO_GRAD;
}

/* 1.13's propagate_creation_meta: a view of a view keeps the older kind
 * unless it is made in a non-default mode itself; inference mode's sticks. */
static unsigned char propagate(unsigned char prev, unsigned char now) {
  if (now == AG_VIEW_DEFAULT) return prev;
  return prev == AG_VIEW_INFERENCE ? prev : now;
}

disp_status disp__ag_view_created(disp_tensor *input, disp_tensor *view) {
  if (!view || !input || view == input || disp__t_is_inference(input) || !disp_dtype_is_floating(disp__t_dtype(view)))
    return DISP_OK;
  ag_meta *m = disp__meta_ensure(view);
  if (!m) return DISP_ERR_NO_MEMORY;
  ag_meta *im = disp__meta_get(input);
  int of_view = im && im->view_base;
  disp_tensor *base = disp_tensor_retain(of_view ? im->view_base : input);
  disp_tensor_release(m->view_base);
  m->view_base = base;
  m->view_creation = propagate(of_view ? im->view_creation : AG_VIEW_DEFAULT, creation_now());
  m->view_version = disp_tensor_version(view);
  return DISP_OK;
}

int disp__view_is_tracked(const disp_tensor *t) {
  ag_meta *m = disp__meta_get(t);
  return m && m->view_base;
}

/* 1.13's handle_view_on_rebase: a view made in no-grad or inference mode
 * may not be part of a recorded in-place update, written itself (direct)
 * or through its base or another view of it (indirect). */
static disp_status refuse_rebase(const ag_meta *m, int indirect) {
  const char *what = indirect ? "its base or another view of its base has been" : "is being";
  int inference = m->view_creation == AG_VIEW_INFERENCE;
  const char *block = inference ? "inference_mode" : "no_grad";
  char head[160];
  if (m->grad_fn)
    snprintf(head, sizeof head, "Output %u of %s is a view and %s modified inplace.", m->output_nr,
             m->grad_fn->name, what);
  else if (inference)
    snprintf(head, sizeof head, "A view was created in inference mode and %s modified inplace in normal mode.", what);
  else
    snprintf(head, sizeof head, "A view was created in no_grad mode and %s modified inplace with grad mode enabled.",
             what);
  return disp__fail(DISP_ERR_INVALID_ARG,
                    "%s Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
                    "code by moving both the view and the inplace either both inside the %s block (if you don't "
                    "want the inplace to be tracked) or both outside (if you want the inplace to be tracked).",
                    head, block);
}

disp_status disp__view_check_inplace(disp_tensor *t) {
  ag_meta *m = disp__meta_get(t);
  if (!m || !m->view_base) return DISP_OK;
  if (m->view_creation != AG_VIEW_DEFAULT) return refuse_rebase(m, 0);
  if (disp_tensor_requires_grad(m->view_base) && disp_tensor_is_leaf(m->view_base))
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "a view of a leaf Variable that requires grad is being used in an in-place operation.");
  return DISP_OK;
}

/* 1.13's VariableHooks::grad_fn for a view: once the shared version moved
 * past the one its grad_fn was made at (the base or another view of it was
 * written in place), a view in a graph gets a new AsStridedBackward0 over
 * the base's current history, so it reads the new values' gradient. */
disp_status disp__view_refresh(const disp_tensor *t) {
  ag_meta *m = disp__meta_get(t);
  if (!m || !m->view_base || (!m->grad_fn && !disp_tensor_requires_grad(m->view_base))) return DISP_OK;
  uint64_t now = disp_tensor_version(t);
  if (now == m->view_version) return DISP_OK;
  if (m->view_creation != AG_VIEW_DEFAULT) return refuse_rebase(m, 1);
  disp_status st = disp__view_regenerate((disp_tensor *)t);
  if (st == DISP_OK) m->view_version = now;
  return st;
}
