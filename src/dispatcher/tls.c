/*
 * tls.c - the thread-local included/excluded key sets, grad and inference mode.
 *
 * Every thread's copy starts from a static initializer holding PyTorch's
 * defaults (the TLS image), so no per-thread initialization code runs.
 */
#include "disp/guard.h"
#include "tls_internal.h"

_Thread_local disp__tls_raw disp__tls __attribute__((tls_model("initial-exec")));
_Thread_local disp_fast_tls disp_fast_tls_state __attribute__((tls_model("initial-exec"))) = {
    .included = DISP__DEFAULT_INCLUDED,
    .keep = DISP_KEYSET_BACKEND_MASK | ~(uint64_t)DISP__DEFAULT_EXCLUDED,
    .reading = UINT64_MAX, /* unregistered (Note [Reclaiming retired tables]) */
};

disp_keyset disp_tls_included(void) {
  disp_keyset s = {disp_fast_tls_state.included};
  return s;
}

/* Backend bits are never excluded (keep always has them), so the excluded
 * set reads back without them. */
disp_keyset disp_tls_excluded(void) {
  disp_keyset s = {~disp_fast_tls_state.keep};
  return s;
}

static void set_included(disp_keyset s) { disp_fast_tls_state.included = s.repr; }
static void set_excluded(disp_keyset s) { disp_fast_tls_state.keep = DISP_KEYSET_BACKEND_MASK | ~s.repr; }

disp_tls_state disp_tls_get(void) {
  disp_tls_state st = {disp_tls_included(), disp_tls_excluded(), (unsigned char)!disp__tls.grad_disabled,
                       disp__tls.inference_mode, {0}};
  return st;
}

void disp_tls_restore(disp_tls_state saved) {
  set_included(saved.included);
  set_excluded(saved.excluded);
  disp__tls.grad_disabled = !saved.grad_enabled;
  disp__tls.inference_mode = saved.inference_mode;
}

disp_tls_state disp_tls_include_push(disp_keyset ks) {
  disp_tls_state prev = disp_tls_get();
  set_included(disp_keyset_or(prev.included, ks));
  return prev;
}

disp_tls_state disp_tls_exclude_push(disp_keyset ks) {
  disp_tls_state prev = disp_tls_get();
  set_excluded(disp_keyset_or(prev.excluded, ks));
  return prev;
}

disp_keyset disp_keyset_autograd_keys(void) { return disp_key_runtime_keyset(DISP_KEY_AUTOGRAD); }

disp_keyset disp_keyset_after_autograd(void) { return disp_keyset_full_after(DISP_KEY_AUTOGRAD_OTHER); }

disp_tls_state disp_tls_below_autograd_push(void) {
  return disp_tls_exclude_push(disp_keyset_autograd_keys());
}

disp_tls_state disp_tls_below_adinplaceorview_push(void) {
  return disp_tls_exclude_push(
      disp_keyset_or(disp_keyset_autograd_keys(), disp_keyset_of(DISP_KEY_AD_INPLACE_OR_VIEW)));
}

disp_tls_state disp_tls_inference_mode_push(int enabled) {
  disp_tls_state prev = disp_tls_get();
  disp_keyset adiov = disp_keyset_of(DISP_KEY_AD_INPLACE_OR_VIEW);
  disp_keyset autograd = disp_keyset_autograd_keys();
  if (enabled) {
    set_included(disp_keyset_minus(prev.included, adiov));
    set_excluded(disp_keyset_or(prev.excluded, autograd));
  } else {
    set_included(disp_keyset_or(prev.included, adiov));
    set_excluded(disp_keyset_minus(prev.excluded, autograd));
  }
  disp__tls.grad_disabled = (unsigned char)(enabled != 0); /* PyTorch: GradMode = !enabled */
  disp__tls.inference_mode = (unsigned char)(enabled != 0);
  return prev;
}

int disp_inference_mode_enabled(void) { return disp__tls.inference_mode; }

disp_tls_state disp_grad_mode_push(int enabled) {
  disp_tls_state prev = disp_tls_get();
  disp__tls.grad_disabled = !enabled;
  return prev;
}

int disp_grad_mode_enabled(void) { return !disp__tls.grad_disabled; }
