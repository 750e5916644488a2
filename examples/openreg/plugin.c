/*
 * plugin.c - the openreg plugin's entry point (disp/plugin.h): the device
 * name, memory, hooks and the CPU fallback for every operator openreg has
 * no kernel for. Its kernels are registered by the static blocks of
 * minimal.c, native.c and extra.c, which the loader runs first; unloading
 * the plugin takes all of it back.
 *
 * Load it with disp_plugin_load("libopenreg.so", &h) or DISP_PLUGINS.
 */
#include "openreg.h"

#include <disp/backend.h>
#include <disp/cpu_fallback.h>
#include <disp/plugin.h>

extern const disp_device_hooks or_hooks;
extern const disp_allocator or_allocator;

/* Scenario five of seed 003: the global fallback, one line. */
DISP_LIBRARY_IMPL(_, PRIVATEUSE1, m) {
  disp_library_fallback(m, disp_cpu_fallback_kernel(0), NULL);
}

/* ... and the per-operator route: convolution's CompositeExplicitAutograd
 * kernel would win over the global fallback and refuse a device it has no
 * kernel for (1.13 sends such a device to convolution_overrideable, which
 * refuses too), so openreg sends convolution and its backward to the CPU
 * by name. */
DISP_LIBRARY_IMPL(aten, PRIVATEUSE1, m) {
  disp_library_impl(m, "convolution", disp_cpu_fallback_kernel(0), NULL);
  disp_library_impl(m, "convolution_backward", disp_cpu_fallback_kernel(0), NULL);
}

DISP_PLUGIN(self) {
  (void)self;
  disp_status st = or_memory_init();
  if (st == DISP_OK) st = disp_device_rename_privateuse1("openreg");
  if (st == DISP_OK) st = disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, &or_allocator);
  if (st == DISP_OK) st = disp_device_hooks_register(DISP_BACKEND_PRIVATEUSE1, &or_hooks);
  if (st == DISP_OK) st = or_register_stubs();
  return st;
}

/* dlclose: every tensor on openreg is gone by then (disp_plugin_unload's
 * contract), so the arenas can go. */
__attribute__((destructor)) static void or_unload(void) { or_memory_shutdown(); }
