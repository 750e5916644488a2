/*
 * tls_internal.h - raw thread-local dispatch state, for the call path.
 */
#ifndef DISP_TLS_INTERNAL_H
#define DISP_TLS_INTERNAL_H

#include <stdint.h>

#include "disp/keyset.h"

/* XOR-with-default encoding: all zero means PyTorch's defaults. */
typedef struct disp__tls_raw {
  uint64_t included_xor;
  uint64_t excluded_xor;
  unsigned char grad_disabled;
  unsigned char inference_mode;
  int trace_depth; /* nesting level for DISP_SHOW_DISPATCH_TRACE */
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

/* (ks | included) - excluded, PyTorch's computeDispatchKeySet before the
 * fallthrough mask; the backend bits are never excluded. */
static inline disp_keyset disp__apply_tls(disp_keyset ks) {
  uint64_t inc = disp__tls.included_xor ^ DISP__DEFAULT_INCLUDED;
  uint64_t exc = disp__tls.excluded_xor ^ DISP__DEFAULT_EXCLUDED;
  ks.repr = (ks.repr | inc) & (DISP_KEYSET_BACKEND_MASK | ~exc);
  return ks;
}

/* Hidden copies of disp_keyset_slot_base / _per_backend (keyset.c). */
extern const uint8_t disp__slot_base[DISP_NUM_FUNCTIONALITIES + 1];
extern const uint8_t disp__slot_per_backend[DISP_NUM_FUNCTIONALITIES + 1];

/* disp_keyset_table_index over the hidden tables, given the backend index. */
static inline int disp__table_index(disp_keyset s, int backend) {
  int f = disp__highest_bit(((s.repr >> DISP_NUM_BACKENDS) << 1) | 1);
  return disp__slot_base[f] + (backend & disp__slot_per_backend[f]);
}

/* The trace switch for the library's own code (disp_trace_enabled mirrors it). */
extern int disp__trace_on;

#endif
