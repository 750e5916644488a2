/*
 * autograd_fallback.c - the built-in boxed fallback on the autograd keys.
 *
 * In its "nothing" mode it redispatches below autograd, boxed, with
 * PyTorch's after_autograd_keyset: the operator runs as if it had an
 * Autograd fallthrough, but the key stays visible (and the autograd layer
 * can later add "warn"/"error" modes without changing the tables).
 */
#include "disp/guard.h"
#include "error_internal.h"
#include "registry_internal.h"

disp_status disp__autograd_fallback_boxed(const disp_op *op, disp_keyset ks, disp_stack *stack,
                                          void *user_data);

disp_status disp__autograd_fallback_boxed(const disp_op *op, disp_keyset ks, disp_stack *stack,
                                          void *user_data) {
  (void)user_data;
  return disp_redispatch_boxed(op, disp_keyset_and(ks, disp_keyset_after_autograd()), stack);
}
