/*
 * disp/autocast.h - automatic mixed precision: PyTorch 1.13's autocast
 * (torch.autocast, aten/src/ATen/autocast_mode.{h,cpp}) from C.
 *
 * Autocast is on for a device type when the thread's excluded key set lacks
 * that device type's Autocast key (AutocastCPU, AutocastCUDA,
 * AutocastPrivateUse1). Tensors of those device types always carry the key,
 * and the default thread state excludes all three, so autocast starts off.
 * While it is on, an operator with a kernel on the Autocast key runs that
 * kernel first: it casts its floating-point arguments by a policy and calls
 * the operator again with the key excluded. Operators without one fall
 * through the key untouched.
 *
 * The built-in aten library registers 1.13's kernels for the operators it
 * has (per device type, as 1.13's lists): on AutocastCPU mm, addmm, bmm,
 * matmul, linear, conv2d run in the autocast dtype; mse_loss, nll_loss,
 * cross_entropy_loss in float32; cat and stack in the widest floating
 * type of their inputs. On AutocastCUDA the same minus cross_entropy_loss,
 * cat and stack. AutocastPrivateUse1 (a key 1.13 lacks) has only the
 * built-in fallthrough: a backend registers its own kernels there with the
 * helpers below, as an operator author does for its own operators:
 *
 *   static disp_status myadd_autocast(disp_tensor *a, disp_tensor *b, disp_tensor **out) {
 *     disp_tls_state saved = disp_autocast_exclude_push(DISP_BACKEND_CPU);
 *     disp_dtype to;
 *     disp_tensor *ca = NULL, *cb = NULL;
 *     disp_status st = disp_autocast_get_dtype(DISP_BACKEND_CPU, &to);
 *     if (st == DISP_OK) st = disp_autocast_cached_cast(to, a, DISP_BACKEND_CPU, &ca);
 *     if (st == DISP_OK) st = disp_autocast_cached_cast(to, b, DISP_BACKEND_CPU, &cb);
 *     if (st == DISP_OK) st = myadd(ca, cb, out);        // a full call: dispatches again
 *     disp_tensor_release(ca);
 *     disp_tensor_release(cb);
 *     disp_tls_restore(saved);
 *     return st;
 *   }
 *
 * Turning autocast on for a region, as `with torch.autocast("cpu"):` does:
 *
 *   disp_autocast_guard g;
 *   if (disp_autocast_enter(DISP_BACKEND_CPU, DISP_DTYPE_BFLOAT16, 1, 1, &g) == DISP_OK) {
 *     ... calls ...
 *     disp_autocast_exit(&g);
 *   }
 *
 * Device types with autocast: DISP_BACKEND_CPU, DISP_BACKEND_CUDA and
 * DISP_BACKEND_PRIVATEUSE1; the functions that take another one fail with
 * DISP_ERR_INVALID_ARG (or answer 0 / DISP_KEY_UNDEFINED, as documented).
 *
 * Thread safety: the enabled flags, the autocast dtypes, the cache-enabled
 * flag and the nesting depth are per thread; every function touching only
 * them is thread-safe. The cast cache is one per process, as in 1.13, and
 * locked: the cache functions are thread-safe too.
 *
 * NULL arguments follow status.h's Note [NULL arguments]; a NULL tensor is
 * None where a comment says so (disp_autocast_cached_cast, the entries of
 * disp_autocast_promote_type's array).
 */
#ifndef DISP_AUTOCAST_H
#define DISP_AUTOCAST_H

#include "export.h"
#include "guard.h"
#include "keyset.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * disp_autocast_key - the Autocast key of a device type (AutocastCPU,
 * AutocastCUDA, AutocastPrivateUse1), or DISP_KEY_UNDEFINED for a device
 * type without one. Thread-safe.
 */
DISP_API disp_key disp_autocast_key(disp_backend device_type);

/*
 * disp_autocast_is_enabled - whether autocast is on for `device_type` in
 * the calling thread (its Autocast key is not excluded). 0 for device types
 * without autocast. Thread-safe.
 */
DISP_API int disp_autocast_is_enabled(disp_backend device_type);

/*
 * disp_autocast_set_enabled - turns autocast on or off for `device_type` in
 * the calling thread (takes the key out of, or puts it into, the excluded
 * set). Nothing else changes: no nesting, no cache clearing - that is
 * disp_autocast_enter's job. Errors: DISP_ERR_INVALID_ARG for a device type
 * without autocast (state unchanged). Thread-safe.
 */
DISP_API disp_status disp_autocast_set_enabled(disp_backend device_type, int enabled);

/*
 * disp_autocast_get_dtype - the calling thread's autocast dtype for
 * `device_type` (the "lower_precision_fp" its kernels cast to); defaults as
 * 1.13: bfloat16 for CPU, float16 for CUDA and PrivateUse1. Errors:
 * DISP_ERR_INVALID_ARG for a device type without autocast (*out
 * untouched). Thread-safe.
 */
DISP_API disp_status disp_autocast_get_dtype(disp_backend device_type, disp_dtype *out);

/*
 * disp_autocast_set_dtype - sets it for the calling thread only. Accepted:
 * bfloat16 for CPU (1.13: "Currently, AutocastCPU only support Bfloat16 as
 * the autocast_cpu_dtype"); float16 or bfloat16 for CUDA and PrivateUse1.
 * Errors: DISP_ERR_INVALID_ARG naming the device type and the dtype (state
 * unchanged). Thread-safe.
 */
DISP_API disp_status disp_autocast_set_dtype(disp_backend device_type, disp_dtype dtype);

/*
 * disp_autocast_is_cache_enabled / disp_autocast_set_cache_enabled - the
 * calling thread's permission to cache casts (on by default; 1.13's
 * torch.is_autocast_cache_enabled). Thread-safe.
 */
DISP_API int disp_autocast_is_cache_enabled(void);
DISP_API void disp_autocast_set_cache_enabled(int enabled);

/*
 * disp_autocast_increment_nesting / disp_autocast_decrement_nesting - the
 * calling thread's count of open autocast regions; each returns the new
 * count. disp_autocast_enter/exit keep it; a caller managing regions by hand
 * clears the cache when decrementing returns 0. Thread-safe.
 */
DISP_API int disp_autocast_increment_nesting(void);
DISP_API int disp_autocast_decrement_nesting(void);

/*
 * disp_autocast_clear_cache - drops every cached cast (the process-wide
 * cache, as 1.13's clear_cache) and the references it held. Thread-safe.
 */
DISP_API void disp_autocast_clear_cache(void);

/* disp_autocast_cache_size - the number of cached casts, for tests. Thread-safe. */
DISP_API size_t disp_autocast_cache_size(void);

/*
 * An open autocast region (torch.autocast's saved state). Filled by
 * disp_autocast_enter; pass it (or a copy) to disp_autocast_exit once, on
 * the same thread. Fields are private.
 */
typedef struct disp_autocast_guard {
  disp_backend device_type;
  disp_dtype prev_dtype;
  unsigned char prev_enabled;
  unsigned char prev_cache_enabled;
  unsigned char active;
  unsigned char reserved[5];
  uint64_t region; /* the region's number (unique in the process); 0: none */
} disp_autocast_guard;

/*
 * disp_autocast_enter - torch.autocast(device_type, dtype, enabled,
 * cache_enabled).__enter__ for the calling thread: saves the device type's
 * enabled flag and dtype and the cache flag into *guard, then sets them and
 * increments the nesting depth (also when enabled is 0, as 1.13 does).
 * Errors: DISP_ERR_INVALID_ARG (NULL guard, a device type without autocast,
 * a dtype disp_autocast_set_dtype refuses, more than 64 regions open on the
 * thread); nothing changes, and disp_autocast_exit refuses the guard. The
 * guard's old contents are never read (it is usually a fresh local), so do
 * not enter a guard that is still open: its region could not be exited.
 * Thread-safe.
 */
DISP_API disp_status disp_autocast_enter(disp_backend device_type, disp_dtype dtype, int enabled,
                                         int cache_enabled, disp_autocast_guard *guard);

/*
 * disp_autocast_exit - __exit__: decrements the nesting depth, clears the
 * cast cache when that leaves the outermost region, and restores what
 * enter saved. In Python a `with` block cannot close regions out of order;
 * in C each restore would undo the wrong region's changes, so only the
 * calling thread's innermost open region may be exited. Errors, with
 * nothing changed: DISP_ERR_INVALID_ARG "disp_autocast_exit: autocast
 * regions must be exited in reverse order of entry" when the guard is open
 * but a region entered after it still is; "...: the guard is not an open
 * autocast region of this thread" for a guard never entered (or whose enter
 * failed), one already exited, one entered on another thread, or NULL.
 * Thread-safe.
 */
DISP_API disp_status disp_autocast_exit(disp_autocast_guard *guard);

/*
 * disp_autocast_exclude_push - excludes the device type's Autocast key
 * (PyTorch's ExcludeDispatchKeyGuard(get_autocast_dispatch_key_from_
 * device_type(...))); an autocast kernel wraps its redispatch in it.
 * Returns the state to give disp_tls_restore. A device type without
 * autocast excludes nothing. Thread-safe.
 */
DISP_API disp_tls_state disp_autocast_exclude_push(disp_backend device_type);

/*
 * disp_autocast_is_eligible - whether autocast may cast `t` for
 * `device_type` (1.13's is_eligible): a defined (non-NULL) floating-point
 * tensor, not float64, on that device type (CUDA also accepts XLA tensors,
 * as 1.13). `t` is borrowed. Thread-safe.
 */
DISP_API int disp_autocast_is_eligible(const disp_tensor *t, disp_backend device_type);

/*
 * disp_autocast_promote_type - the widest floating type among `current` and
 * the eligible tensors of tensors[0..n) (1.13's promote_type, used by the
 * `promote` policy): float64 tensors are ignored, float32 wins over the
 * autocast dtype, and the autocast dtype stays when all agree. NULL entries
 * (None arguments) are skipped. Errors (DISP_ERR_INVALID_ARG, *out
 * untouched): a device type without autocast, NULL out or tensors with
 * n > 0, `current` float64 ("promote type is double in
 * at::autocast::prioritize"), or another floating type than float32 and the
 * autocast dtype ("Unexpected floating ScalarType in
 * at::autocast::prioritize"). Thread-safe.
 */
DISP_API disp_status disp_autocast_promote_type(disp_dtype current, disp_backend device_type,
                                                disp_tensor *const *tensors, size_t n, disp_dtype *out);

/*
 * disp_autocast_cached_cast - `t` as dtype `to` for an autocast kernel of
 * `device_type` (1.13's cached_cast). *out is always a new reference the
 * caller releases: `t` itself (retained) when it is not eligible or already
 * has dtype `to`; else `t` converted through the dispatcher (aten::to.dtype,
 * so any backend with a _to_copy kernel works). A float32 leaf tensor that
 * requires grad, cast to the device type's autocast dtype, is cached while
 * the thread is inside an autocast region (nesting > 0) with the cache
 * enabled: later casts of it return the same tensor until the outermost
 * region exits. The cache holds a reference to `t` and to the cast until
 * then. t == NULL (a None argument) gives *out = NULL. Errors: the cast's
 * own (its message names aten::_to_copy), DISP_ERR_INVALID_ARG for a device
 * type without autocast, a bad dtype or NULL out; *out is NULL then.
 * Thread-safe (t's data must not change meanwhile, as for any cast).
 */
DISP_API disp_status disp_autocast_cached_cast(disp_dtype to, disp_tensor *t, disp_backend device_type,
                                               disp_tensor **out);

#ifdef __cplusplus
}
#endif

#endif /* DISP_AUTOCAST_H */
