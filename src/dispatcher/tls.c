/*
 * tls.c - the thread-local included/excluded key sets, grad and inference mode.
 *
 * Stored as "difference from the default" (PyTorch stores included XOR its
 * default), so zero-initialized thread-local storage means the defaults and
 * no per-thread initialization is needed.
 */
#include "disp/guard.h"
#include "tls_internal.h"

_Thread_local disp__tls_raw disp__tls __attribute__((tls_model("initial-exec")));

static uint64_t default_included(void) { return DISP__DEFAULT_INCLUDED; }
static uint64_t default_excluded(void) { return DISP__DEFAULT_EXCLUDED; }

disp_keyset disp_tls_included(void) {
  disp_keyset s = {disp__tls.included_xor ^ default_included()};
  return s;
}

disp_keyset disp_tls_excluded(void) {
  disp_keyset s = {disp__tls.excluded_xor ^ default_excluded()};
  return s;
}

static void set_included(disp_keyset s) { disp__tls.included_xor = s.repr ^ default_included(); }
static void set_excluded(disp_keyset s) { disp__tls.excluded_xor = s.repr ^ default_excluded(); }

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
