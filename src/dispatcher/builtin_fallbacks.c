/*
 * builtin_fallbacks.c - the backend fallbacks the library registers itself.
 *
 * As PyTorch 1.13: fallthroughs on BackendSelect, ADInplaceOrView and the
 * Autocast keys (a kernel registered there for an operator takes over; every
 * other operator skips the key). Unlike 1.13 (see README, "Differences"), a
 * boxed autograd fallback on AutogradOther and every Autograd<backend> key,
 * as newer PyTorch does: an operator without an autograd kernel then runs
 * below autograd instead of failing on out-of-tree backends, and gradients
 * never silently vanish once the autograd layer reports them. A user's
 * fallback on one of these keys replaces the default until it is removed.
 */
#include <stdint.h>
#include <stdlib.h>

#include "disp/call.h"
#include "error_internal.h"
#include "registry_internal.h"

/* Where the autograd fallback's behaviour lives. The dispatcher module only
 * knows the "nothing" mode (redispatch below autograd); the autograd module
 * replaces the hook to add "warn" and "error". */
disp_status disp__autograd_fallback_boxed(const disp_op *op, disp_keyset ks, disp_stack *stack,
                                          void *user_data);

/* The error kernel of an empty table slot (call.c). */
disp_status disp__missing_kernel_boxed(const disp_op *op, disp_keyset ks, disp_stack *stack,
                                       void *user_data);

/* The kernel every cell of a traced twin holds (call.c). */
disp_status disp__traced_call_boxed(const disp_op *op, disp_keyset ks, disp_stack *stack, void *user_data);

static disp_status ambiguous_autogradother(const disp_op *op, disp_keyset ks, disp_stack *stack,
                                           void *user_data) {
  (void)ks, (void)stack, (void)user_data;
  return disp__fail(
      DISP_ERR_NO_KERNEL,
      "%s has kernels registered to both CompositeImplicitAutograd and a backend mapped to "
      "AutogradOther. This makes the backend kernel unreachable; the dispatcher will always "
      "prefer the CompositeImplicitAutograd lowering (see Note: [Ambiguity in AutogradOther "
      "kernel]). If you want to override CompositeImplicitAutograd, please open an issue to "
      "request a dedicated Autograd dispatch key for the backend.\nIf you only want to run "
      "inference instead of training, in C++, add `c10::InferenceMode mode;` before model.forward(). "
      "Note this guard is only available in C++ but not Python at present.",
      disp_op_name(op));
}

/* The boxed function of every proxy (Note [Fallback proxies]): runs the
 * key's current fallback, read under a lookup bracket like a table. */
static disp_status fallback_proxy(const disp_op *op, disp_keyset ks, disp_stack *stack, void *user_data) {
  int i = (int)(intptr_t)user_data;
  uint64_t seq = disp__read_begin();
  const disp_kernel_entry *e = atomic_load_explicit(&disp__registry.fallbacks[i].current, memory_order_acquire);
  disp_kernel_slot k = {0};
  if (e) k = e->slot;
  disp__read_end(seq);
  /* A fallthrough whose tables are not republished yet: do what it means. */
  if (k.flags & DISP_KERNEL_FALLTHROUGH) return disp_redispatch_boxed(op, disp_keyset_below(ks), stack);
  if (!k.boxed) return disp__missing_kernel_boxed(op, ks, stack, NULL);
  return k.boxed(op, ks, stack, k.user_data);
}

void disp__proxies_init(void) {
  for (int i = 0; i < DISP_NUM_RUNTIME_ENTRIES; i++) {
    disp_kernel_entry *p = &disp__registry.proxies[i];
    p->boxed = fallback_proxy;
    p->unboxed = NULL;
    p->flags = DISP_ENTRY_PROXY | DISP__KERNEL_INDIRECT; /* boxed only (Note [Direct kernels]) */
    p->user_data = (void *)(intptr_t)i;
    p->debug = (char *)"backend fallback proxy";
  }
}

static disp_status set_builtin(disp_key key, disp_kernel k) {
  disp_status st;
  disp_kernel_entry *e = disp__kernel_entry_new(&k, k.debug, &st);
  if (!e) return st;
  e->flags |= DISP_ENTRY_BUILTIN;
  int i = disp_key_table_index(key);
  disp_fallback_slot *slot = &disp__registry.fallbacks[i];
  disp_kernel_entry *old = slot->builtin;
  slot->builtin = e;
  atomic_store_explicit(&slot->current, disp__fallback_of(i), memory_order_release);
  disp__kernel_entry_retire(old);
  return DISP_OK;
}

/* Precondition: disp__registry.lock held. */
disp_status disp__install_builtin_fallbacks(void) {
  static const disp_key fallthrough_keys[] = {
      DISP_KEY_BACKEND_SELECT, DISP_KEY_AD_INPLACE_OR_VIEW, DISP_KEY_AUTOCAST_CPU,
      DISP_KEY_AUTOCAST_CUDA, DISP_KEY_AUTOCAST_PRIVATEUSE1};
  disp_status st;
  disp__proxies_init();
  for (size_t i = 0; i < sizeof fallthrough_keys / sizeof fallthrough_keys[0]; i++) {
    disp_kernel k = disp_kernel_fallthrough();
    k.debug = "registered by libdispatch (built-in fallthrough)";
    if ((st = set_builtin(fallthrough_keys[i], k)) != DISP_OK) return st;
  }
  disp_kernel ag = disp_kernel_boxed(disp__autograd_fallback_boxed, NULL, NULL);
  ag.debug = "registered by libdispatch (built-in autograd fallback)";
  if ((st = set_builtin(DISP_KEY_AUTOGRAD_OTHER, ag)) != DISP_OK) return st;
  for (int b = 0; b < DISP_NUM_BACKENDS; b++) {
    disp_key k = disp_key_for_backend(DISP_KEY_AUTOGRAD_FUNCTIONALITY, (disp_backend)b);
    if ((st = set_builtin(k, ag)) != DISP_OK) return st;
  }
  if (!disp__registry.missing) {
    disp_kernel missing = disp_kernel_boxed(disp__missing_kernel_boxed, NULL, NULL);
    missing.debug = "missing";
    disp__registry.missing = disp__kernel_entry_new(&missing, missing.debug, &st);
    if (!disp__registry.missing) return st;
    disp__registry.missing->flags |= DISP_ENTRY_MISSING;
  }
  if (!disp__registry.traced) {
    disp_kernel traced = disp_kernel_boxed(disp__traced_call_boxed, NULL, NULL);
    traced.debug = "trace";
    disp__registry.traced = disp__kernel_entry_new(&traced, traced.debug, &st);
    if (!disp__registry.traced) return st;
  }
  if (!disp__registry.ambiguous) {
    disp_kernel amb = disp_kernel_boxed(ambiguous_autogradother, NULL, NULL);
    amb.debug = "ambiguous_autogradother";
    disp__registry.ambiguous = disp__kernel_entry_new(&amb, amb.debug, &st);
    if (!disp__registry.ambiguous) return st;
    disp__registry.ambiguous->flags |= DISP_ENTRY_AMBIGUOUS;
  }
  return disp__ops_update_all();
}
