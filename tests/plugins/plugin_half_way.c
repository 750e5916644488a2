/*
 * plugin_half_way.c - an init that registers a little of everything and then
 * fails: everything, its static blocks included, must be rolled back.
 */
#include <disp.h>

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

static void *no_alloc(size_t nbytes, disp_device device, void *ctx) {
  (void)nbytes, (void)device, (void)ctx;
  return NULL;
}

static void no_free(void *ptr, size_t nbytes, disp_device device, void *ctx) {
  (void)ptr, (void)nbytes, (void)device, (void)ctx;
}

static const disp_allocator allocator = {no_alloc, no_free, NULL};

DISP_PLUGIN(self) {
  (void)self;
  disp_status st = disp_device_rename_privateuse1("halfdev");
  if (st == DISP_OK) st = disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, &allocator);
  disp_library *lib = NULL;
  if (st == DISP_OK)
    st = disp_library_new(DISP_LIBRARY_IMPL, "_", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &lib);
  if (st == DISP_OK) st = disp_library_fallback(lib, disp_kernel_boxed(kernel, NULL, NULL), NULL);
  disp_library *more = NULL;
  if (st == DISP_OK) st = disp_library_new(DISP_LIBRARY_FRAGMENT, "plughalf", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &more);
  if (st == DISP_OK) st = disp_library_def(more, "h2(Tensor self) -> Tensor", NULL);
  if (st != DISP_OK) return st;
  return disp_set_error(DISP_ERR_KERNEL, "plugin_half_way: out of widgets");
}
