/*
 * aten_internal.h - what generated and hand-written built-in kernels share.
 */
#ifndef DISP_ATEN_INTERNAL_H
#define DISP_ATEN_INTERNAL_H

#include <stdatomic.h>
#include <string.h>

#include <disp.h>

#include "signature_internal.h"
#include "tensor/tensor_internal.h"

/* A tensor's key set, read in place (the typed entries' hot path). */
static inline disp_keyset disp__tensor_keys(const disp_tensor *t) { return t->keyset; }

static inline disp_keyset disp__tensor_list_keys(disp_tensor_list l) {
  disp_keyset ks = {0};
  for (size_t i = 0; i < l.len; i++)
    if (l.data[i]) ks.repr |= l.data[i]->keyset.repr;
  return ks;
}

/* A boxed adapter: runs unboxed function `fn` (of the operator's exact C
 * type) on the arguments on top of the stack, replacing them by the returns;
 * on error the arguments are gone and the message names `op`. */
typedef disp_status (*disp_boxed_adapter)(const disp_op *op, disp_fn fn, int with_ks, disp_keyset ks,
                                          disp_stack *stack);

/* disp_library_def for built-in operators: also records the generated
 * adapter, so boxed calls of their unboxed kernels never need libffi. */
disp_status disp__library_def_builtin(disp_library *lib, const char *schema, disp_fn adapter);

/* After an adapter's call: pushes the returns (st == DISP_OK) or releases
 * them (on error), and returns st. */
disp_status disp__push_returns(disp_stack *stack, disp_status st, disp_cvalue *rets,
                               const disp_ctype *types, int n);

/* Runs `fn` once at the next disp_shutdown (for caches of op handles). */
void disp__at_shutdown(void (*fn)(void));

#endif
