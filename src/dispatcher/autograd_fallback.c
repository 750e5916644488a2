/*
 * autograd_fallback.c - the built-in boxed fallback on the autograd keys.
 *
 * In its "nothing" mode it only redispatches below autograd, boxed. Calls
 * arrive with the calls issue; until then calling it reports so.
 */
#include "error_internal.h"
#include "registry_internal.h"

disp_status disp__autograd_fallback_boxed(const disp_op *op, disp_keyset ks, disp_stack *stack,
                                          void *user_data);

disp_status disp__autograd_fallback_boxed(const disp_op *op, disp_keyset ks, disp_stack *stack,
                                          void *user_data) {
  (void)ks, (void)stack, (void)user_data;
  return disp__fail(DISP_ERR_NO_KERNEL, "%s: the autograd fallback cannot run yet", disp_op_name(op));
}
