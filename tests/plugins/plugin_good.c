/*
 * plugin_good.c - a well-behaved backend plugin for test_plugin: a static
 * DISP_LIBRARY block defining plugtest::f, a static DISP_LIBRARY_IMPL block
 * with its PrivateUse1 kernel, and an init that names the device "plugdev",
 * registers an allocator, a kernel for aten::abs and a backend fallback on a
 * library of its own. All of it must go away on unload.
 */
#include <stdlib.h>

#include <disp.h>

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

static void *device_alloc(size_t nbytes, disp_device device, void *ctx) {
  (void)device, (void)ctx;
  return nbytes ? malloc(nbytes) : NULL;
}

static void device_free(void *ptr, size_t nbytes, disp_device device, void *ctx) {
  (void)nbytes, (void)device, (void)ctx;
  free(ptr);
}

static const disp_allocator allocator = {device_alloc, device_free, NULL};

DISP_PLUGIN(self) {
  (void)self;
  disp_status st = disp_device_rename_privateuse1("plugdev");
  if (st == DISP_OK) st = disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, &allocator);
  disp_library *lib = NULL;
  if (st == DISP_OK)
    st = disp_library_new(DISP_LIBRARY_IMPL, "_", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &lib);
  if (st == DISP_OK) st = disp_library_fallback(lib, disp_kernel_boxed(fallback, NULL, NULL), NULL);
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
