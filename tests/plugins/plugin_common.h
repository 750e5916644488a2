/*
 * plugin_common.h - what the test plugins (and test_plugin itself) share: a
 * heap allocator standing in for device memory, and the first steps of a
 * backend's init.
 */
#ifndef PLUGIN_COMMON_H
#define PLUGIN_COMMON_H

#include <stdlib.h>

#include <disp.h>

static inline void *plugin_heap_alloc(size_t nbytes, disp_device device, void *ctx) {
  (void)device, (void)ctx;
  return nbytes ? malloc(nbytes) : NULL;
}

static inline void plugin_heap_free(void *ptr, size_t nbytes, disp_device device, void *ctx) {
  (void)nbytes, (void)device, (void)ctx;
  free(ptr);
}

/* Names PrivateUse1, installs `allocator` on it and registers `fallback`
 * as its backend fallback from a library of the plugin's own, registered at
 * `file` (the plugin's source, as dumps show it). */
static inline disp_status plugin_setup_device(const char *name, const disp_allocator *allocator,
                                              disp_boxed_fn fallback, const char *file) {
  disp_status st = disp_device_rename_privateuse1(name);
  if (st == DISP_OK) st = disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, allocator);
  disp_library *lib = NULL;
  if (st == DISP_OK)
    st = disp_library_new(DISP_LIBRARY_IMPL, "_", DISP_KEY_PRIVATEUSE1, file, 1, &lib);
  if (st == DISP_OK) st = disp_library_fallback(lib, disp_kernel_boxed(fallback, NULL, NULL), NULL);
  return st;
}

#endif
