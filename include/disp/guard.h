/*
 * disp/guard.h - thread-local dispatch state and its save/restore guards.
 *
 * Each thread has an included and an excluded key set (PyTorch's
 * LocalDispatchKeySet), a grad mode and an inference mode. A call's key set
 * is (tensor keys | included) - excluded. Defaults, as PyTorch's: included
 * {BackendSelect, ADInplaceOrView}; excluded {AutocastCPU, AutocastCUDA,
 * AutocastPrivateUse1} (autocast is off until enabled); grad mode on;
 * inference mode off.
 *
 * C has no destructors, so each C++ guard is a push that returns the previous
 * state and a restore that puts it back:
 *
 *   disp_tls_state saved = disp_tls_exclude_push(disp_keyset_of(DISP_KEY_AUTOCAST_CPU));
 *   ... calls ...
 *   disp_tls_restore(saved);
 *
 * Every function here touches only the calling thread's state: thread-safe.
 * None takes a pointer, so status.h's Note [NULL arguments] never arises.
 */
#ifndef DISP_GUARD_H
#define DISP_GUARD_H

#include "export.h"
#include "keyset.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A snapshot of the calling thread's dispatch state; restore it to undo a push. */
typedef struct disp_tls_state {
  disp_keyset included;
  disp_keyset excluded;
  unsigned char grad_enabled;
  unsigned char inference_mode;
  unsigned char reserved[6];
} disp_tls_state;

/* disp_tls_get - the calling thread's current state. */
DISP_API disp_tls_state disp_tls_get(void);

/* disp_tls_restore - makes `saved` the calling thread's state again. */
DISP_API void disp_tls_restore(disp_tls_state saved);

/* disp_tls_included / disp_tls_excluded - the current sets. */
DISP_API disp_keyset disp_tls_included(void);
DISP_API disp_keyset disp_tls_excluded(void);

/*
 * disp_tls_include_push - adds `ks` to the included set (PyTorch's
 * IncludeDispatchKeyGuard). Returns the state to restore.
 */
DISP_API disp_tls_state disp_tls_include_push(disp_keyset ks);

/*
 * disp_tls_exclude_push - adds `ks` to the excluded set (PyTorch's
 * ExcludeDispatchKeyGuard). Returns the state to restore.
 */
DISP_API disp_tls_state disp_tls_exclude_push(disp_keyset ks);

/*
 * disp_tls_below_autograd_push - excludes AutogradOther and every
 * Autograd<backend> key (PyTorch's AutoDispatchBelowAutograd). Kernels that
 * handle autograd wrap their redispatch in it. Returns the state to restore.
 */
DISP_API disp_tls_state disp_tls_below_autograd_push(void);

/*
 * disp_tls_below_adinplaceorview_push - excludes the autograd keys and
 * ADInplaceOrView (PyTorch's AutoDispatchBelowADInplaceOrView).
 */
DISP_API disp_tls_state disp_tls_below_adinplaceorview_push(void);

/*
 * disp_tls_inference_mode_push - enters (enabled != 0) or leaves inference
 * mode (PyTorch's InferenceMode guard): when enabled, ADInplaceOrView leaves
 * the included set, the autograd keys join the excluded set and grad mode is
 * off; tensors created meanwhile are inference tensors. Returns the state to
 * restore.
 */
DISP_API disp_tls_state disp_tls_inference_mode_push(int enabled);

/* disp_inference_mode_enabled - whether the thread is in inference mode. */
DISP_API int disp_inference_mode_enabled(void);

/* disp_grad_mode_push - sets grad mode (PyTorch's GradMode / NoGradGuard). */
DISP_API disp_tls_state disp_grad_mode_push(int enabled);

/* disp_grad_mode_enabled - whether gradients are being recorded. */
DISP_API int disp_grad_mode_enabled(void);

/* The key sets PyTorch names: all autograd keys, and what is below them. */
DISP_API disp_keyset disp_keyset_autograd_keys(void);
/* PyTorch's after_autograd_keyset: everything of lower priority than AutogradOther. */
DISP_API disp_keyset disp_keyset_after_autograd(void);

#ifdef __cplusplus
}
#endif

#endif /* DISP_GUARD_H */
