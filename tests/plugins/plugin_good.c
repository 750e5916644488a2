/*
 * plugin_good.c - a well-behaved backend plugin for test_plugin: a static
 * DISP_LIBRARY block defining plugtest::f, a static DISP_LIBRARY_IMPL block
 * with its PrivateUse1 kernel, and an init that names the device "plugdev",
 * registers an allocator, a kernel for aten::abs and a backend fallback on a
 * library of its own. All of it must go away on unload.
 */
#include <stdlib.h>
#include <string.h>

#include <disp.h>

#include "plugin_common.h"

DISP_LIBRARY(plugtest, m) {
  disp_library_def(m, "f(Tensor self) -> Tensor", NULL);
}

/* plugtest::f on the plugin's device: returns its argument. */
static disp_status f_kernel(const disp_op *op, disp_keyset ks, disp_stack *stack, void *user_data) {
  (void)op, (void)ks, (void)user_data;
  (void)stack; /* self stays on the stack: it is the result */
  return DISP_OK;
}

DISP_LIBRARY_IMPL(plugtest, PRIVATEUSE1, m) {
  disp_library_impl(m, "f", disp_kernel_boxed(f_kernel, NULL, NULL), NULL);
}

/* Every other operator on the device: fails, saying it ran. */
static disp_status fallback(const disp_op *op, disp_keyset ks, disp_stack *stack, void *user_data) {
  (void)ks, (void)stack, (void)user_data;
  return disp_set_error(DISP_ERR_KERNEL, "plugin_good's fallback ran for %s", disp_op_name(op));
}

/* A kernel whose user_data is freed by its destroy callback, which lives in
 * this plugin: it must run before the plugin is dlclosed. */
static disp_status abs_kernel(const disp_op *op, disp_keyset ks, disp_stack *stack, void *user_data) {
  (void)op, (void)ks, (void)stack, (void)user_data;
  return DISP_OK;
}

static void free_user_data(void *p) { free(p); }

static const disp_allocator allocator = {plugin_heap_alloc, plugin_heap_free, NULL, NULL};

DISP_PLUGIN(self) {
  /* The handle works from init (no deadlock); it counts as loaded once init
   * has returned. */
  if (strcmp(disp_plugin_name(self), "plugin_good") != 0 || disp_plugin_is_loaded(self))
    return disp_set_error(DISP_ERR_INVALID_ARG, "plugin_good: unexpected handle in init");
  disp_status st = plugin_setup_device("plugdev", &allocator, fallback, __FILE__);
  disp_library *aten = NULL;
  if (st == DISP_OK)
    st = disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &aten);
  if (st == DISP_OK) {
    void *data = malloc(16);
    st = disp_library_impl(aten, "abs", disp_kernel_boxed(abs_kernel, data, free_user_data), NULL);
    if (st != DISP_OK) free(data);
  }
  return st;
}
