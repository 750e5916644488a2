/*
 * plugin_stubs.c - a backend plugin for test_stubs_plugin that brings its
 * arithmetic as a stub (disp/stub.h): an allocator, the empty_strided kernel
 * the stub kernels allocate through, and a neg loop over float32 host
 * memory. Unloading must take the loop and the library's neg kernel away.
 */
#include <stdlib.h>

#include <disp.h>

static void *device_alloc(size_t nbytes, disp_device device, void *ctx) {
  (void)device, (void)ctx;
  return nbytes ? malloc(nbytes) : NULL;
}

static void device_free(void *ptr, size_t nbytes, disp_device device, void *ctx) {
  (void)nbytes, (void)device, (void)ctx;
  free(ptr);
}

static const disp_allocator allocator = {device_alloc, device_free, NULL, NULL};

static disp_status empty_strided(disp_int_list size, disp_int_list stride, int32_t dtype, int32_t layout,
                                 disp_opt_device device, disp_opt_bool pin, disp_tensor **out) {
  (void)layout, (void)pin;
  return disp_tensor_empty_strided(size.data, stride.data, (int)size.len, dtype < 0 ? DISP_DTYPE_FLOAT32 : (disp_dtype)dtype,
                                   disp_device_make(DISP_BACKEND_PRIVATEUSE1, device.index), out);
}

static disp_status neg_loop(const disp_stub_iter *it) {
  if (it->dtype != DISP_DTYPE_FLOAT32)
    return disp_set_error(DISP_ERR_TYPE, "\"neg_plugin\" not implemented for '%s'", disp_dtype_torch_name(it->dtype));
  for (int64_t j = 0; j < it->size[1]; j++)
    for (int64_t i = 0; i < it->size[0]; i++) {
      const float *a = (const float *)((const char *)it->data[1] + i * it->stride[1][0] + j * it->stride[1][1]);
      *(float *)((char *)it->data[0] + i * it->stride[0][0] + j * it->stride[0][1]) = -*a;
    }
  return DISP_OK;
}

DISP_PLUGIN(self) {
  (void)self;
  disp_status st = disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, &allocator);
  disp_library *lib = NULL;
  if (st == DISP_OK) st = disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &lib);
  if (st == DISP_OK)
    st = disp_library_impl(lib, "empty_strided", disp_kernel_unboxed(DISP_FN(empty_strided), 0), NULL);
  if (st == DISP_OK) st = disp_stub_register(DISP_STUB_NEG, DISP_BACKEND_PRIVATEUSE1, neg_loop);
  return st;
}
