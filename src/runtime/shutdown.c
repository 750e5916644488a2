/*
 * shutdown.c - disp_shutdown(): the order in which the library is taken
 * apart, the reverse of start-up (Note [Start-up] in init.c).
 *
 *   1. plugins, newest first (their libraries, static blocks and stubs go
 *      with them: Note [Owners]);
 *   2. the static libraries, newest first, the built-in ones last;
 *   3. the shutdown hooks: caches of operator handles forget them (Note
 *      [Shutdown hooks] in library_internal.h);
 *   4. the registry (operators, kernels, fallbacks, retired memory);
 *   5. the CPU allocator's cached blocks, after the destroy callbacks of
 *      step 4, which may free tensors.
 * Steps 2 to 4 are one dispatcher call, under its init lock, so that no
 * drain starts half-way. Shutting down allocates nothing.
 */
#include "disp/dispatcher.h"
#include "library_internal.h"
#include "plugin_internal.h"
#include "runtime/runtime_internal.h"
#include "tensor/host_cache.h"

void disp_shutdown(void) {
  disp__plugins_shutdown(); /* before the dispatcher's lock: unloading takes it */
  disp__library_shutdown();
  disp__host_cache_release();
  /* The next first use starts over from the built-in libraries; with
   * libdispatch.a this reference is what links init.c's constructor into a
   * program that only ever shuts down. */
  disp__runtime_offer_builtins();
}
