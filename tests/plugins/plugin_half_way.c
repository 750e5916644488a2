/*
 * plugin_half_way.c - an init that registers a little of everything and then
 * fails: everything, its static blocks included, must be rolled back.
 */
#include <disp.h>

#include "plugin_common.h"

DISP_LIBRARY(plughalf, m) {
  disp_library_def(m, "h(Tensor self) -> Tensor", NULL);
}

static disp_status kernel(const disp_op *op, disp_keyset ks, disp_stack *stack, void *user_data) {
  (void)op, (void)ks, (void)stack, (void)user_data;
  return DISP_OK;
}

DISP_LIBRARY_IMPL(plughalf, PRIVATEUSE1, m) {
  disp_library_impl(m, "h", disp_kernel_boxed(kernel, NULL, NULL), NULL);
}

static const disp_allocator allocator = {plugin_heap_alloc, plugin_heap_free, NULL, NULL};

DISP_PLUGIN(self) {
  (void)self;
  disp_status st = plugin_setup_device("halfdev", &allocator, kernel, __FILE__);
  disp_library *more = NULL;
  if (st == DISP_OK) st = disp_library_new(DISP_LIBRARY_FRAGMENT, "plughalf", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &more);
  if (st == DISP_OK) st = disp_library_def(more, "h2(Tensor self) -> Tensor", NULL);
  if (st != DISP_OK) return st;
  return disp_set_error(DISP_ERR_KERNEL, "plugin_half_way: out of widgets");
}
