/*
 * autograd_fallback.c - the built-in boxed fallback on the autograd keys.
 *
 * The dispatcher knows only the "nothing" mode: redispatch below autograd
 * with PyTorch's after_autograd_keyset, as if the operator had an Autograd
 * fallthrough (the key stays visible). The autograd module installs the
 * handler that adds the "warn" and "error" modes
 * (disp__autograd_fallback_set_handler), so the tables never change.
 */
#include <stdatomic.h>

#include "autograd_fallback_internal.h"
#include "disp/guard.h"
#include "error_internal.h"
#include "registry_internal.h"

static _Atomic(disp_boxed_fn) handler;

void disp__autograd_fallback_set_handler(disp_boxed_fn fn) { atomic_store_explicit(&handler, fn, memory_order_release); }

disp_status disp__autograd_fallback_boxed(const disp_op *op, disp_keyset ks, disp_stack *stack, void *user_data);

disp_status disp__autograd_fallback_boxed(const disp_op *op, disp_keyset ks, disp_stack *stack, void *user_data) {
  disp_boxed_fn h = atomic_load_explicit(&handler, memory_order_acquire);
  if (h) return h(op, ks, stack, user_data);
  return disp_redispatch_boxed(op, disp_keyset_and(ks, disp_keyset_after_autograd()), stack);
}
