/*
 * tls_internal.h - raw thread-local dispatch state, for the call path.
 */
#ifndef DISP_TLS_INTERNAL_H
#define DISP_TLS_INTERNAL_H

#include <stdint.h>

#include "disp/call.h"
#include "disp/keyset.h"

/* Stored in the form the call path uses: `keep` is ~excluded with the
 * backend bits always set, so a call does (ks | included) & keep. Every
 * thread starts from the static initializer in tls.c (PyTorch's defaults). */
typedef struct disp__tls_raw {
  unsigned char grad_disabled;
  unsigned char inference_mode;
  int trace_depth; /* nesting level for DISP_SHOW_DISPATCH_TRACE */
  /* While tracing, the kernel a typed dispatch chose (call.c, Note [Tracing
   * typed calls]). */
  disp_kernel_slot traced_slot;
} disp__tls_raw;

/* initial-exec: one %fs-relative load instead of a __tls_get_addr call on
 * the hot path (Note [The hot path]). The block is small enough for the
 * static TLS surplus glibc keeps for libraries loaded with dlopen. */
extern _Thread_local disp__tls_raw disp__tls __attribute__((tls_model("initial-exec")));

/* The defaults, as constants: functionality key k is bit NB + k - 1. */
#define DISP__FUNC_BIT(k) (UINT64_C(1) << (DISP_NUM_BACKENDS + (int)(k) - 1))
#define DISP__DEFAULT_INCLUDED (DISP__FUNC_BIT(DISP_KEY_BACKEND_SELECT) | DISP__FUNC_BIT(DISP_KEY_AD_INPLACE_OR_VIEW))
#define DISP__DEFAULT_EXCLUDED                                                  \
  (DISP__FUNC_BIT(DISP_KEY_AUTOCAST_CPU) | DISP__FUNC_BIT(DISP_KEY_AUTOCAST_CUDA) | \
   DISP__FUNC_BIT(DISP_KEY_AUTOCAST_PRIVATEUSE1))

/* Note [Excluding keys around a redispatch]
 * PyTorch's AutoDispatchBelowAutograd and AutoDispatchBelowADInplaceOrView
 * for the generated autograd kernels, which wrap every call of an operator
 * whose inputs carry the autograd keys: only the excluded set changes, so
 * only `keep` is saved and restored (disp_tls_below_*_push save a whole
 * disp_tls_state, more than the redispatch they would wrap costs). */
#define DISP__AUTOGRAD_BITS (DISP__FUNC_BIT(DISP_KEY_AUTOGRAD_OTHER) | DISP__FUNC_BIT(DISP_KEY_AUTOGRAD_FUNCTIONALITY))
#define DISP__BELOW_AUTOGRAD DISP__AUTOGRAD_BITS
#define DISP__BELOW_AD_INPLACE_OR_VIEW (DISP__AUTOGRAD_BITS | DISP__FUNC_BIT(DISP_KEY_AD_INPLACE_OR_VIEW))

/* Excludes `bits` (one of the two above); returns what to restore. */
static inline uint64_t disp__tls_exclude_fast(uint64_t bits) {
  uint64_t keep = disp_fast_tls_state.keep;
  disp_fast_tls_state.keep = keep & ~bits;
  return keep;
}

static inline void disp__tls_exclude_restore(uint64_t keep) { disp_fast_tls_state.keep = keep; }

/* (ks | included) - excluded, PyTorch's computeDispatchKeySet before the
 * fallthrough mask; the backend bits are never excluded. */

/* The sets themselves live in the exported disp_fast_tls_state, which the
 * inline fast path of disp/call.h reads too. */
static inline disp_keyset disp__apply_tls(disp_keyset ks) {
  ks.repr = (ks.repr | disp_fast_tls_state.included) & disp_fast_tls_state.keep;
  return ks;
}

/* Note [The grid]: the call path looks kernels up in a grid with one row per
 * functionality (row 0: Undefined) and one column per backend; a single
 * functionality's row repeats its one kernel in every column. Then the cell
 * of a key set is (highest functionality, highest backend), found with two
 * bit scans and the backend's column start (disp__fast_lookup in
 * disp/call.h); columns are stored one after the other. */
#define DISP__GRID_COLS DISP_FAST_GRID_COLS
#define DISP__GRID_ROWS DISP_FAST_GRID_ROWS
_Static_assert(DISP_NUM_BACKENDS <= DISP__GRID_COLS, "a grid row holds every backend");

/* The trace switch (disp_trace_set/get). Written under the registry lock,
 * read by calls on any thread: always through disp__tracing(). */
extern int disp__trace_on;
static inline int disp__tracing(void) { return __atomic_load_n(&disp__trace_on, __ATOMIC_RELAXED); }

#endif
