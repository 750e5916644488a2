/*
 * aten_internal.h - what generated and hand-written built-in kernels share.
 */
#ifndef DISP_ATEN_INTERNAL_H
#define DISP_ATEN_INTERNAL_H

#include <stdatomic.h>
#include <string.h>

#include <disp.h>

#include "library_internal.h"
#include "signature_internal.h"
#include "tensor/tensor_internal.h"

/* A tensor's key set, read in place (the typed entries' hot path). */
static inline disp_keyset disp__tensor_keys(const disp_tensor *t) { return disp__tensor_head_keys(t); }

static inline disp_keyset disp__tensor_list_keys(disp_tensor_list l) {
  disp_keyset ks = {0};
  for (size_t i = 0; i < l.len; i++)
    if (l.data[i]) ks.repr |= disp__tensor_head_keys(l.data[i]).repr;
  return ks;
}

/* A boxed adapter: runs unboxed function `fn` (of the operator's exact C
 * type) on the arguments on top of the stack, replacing them by the returns;
 * on error the arguments are gone and the message names `op`. */
typedef disp_status (*disp_boxed_adapter)(const disp_op *op, disp_fn fn, int with_ks, disp_keyset ks,
                                          disp_stack *stack);

#endif
