/*
 * init.c - start-up: the order in which the library comes to life, and
 * disp_init().
 *
 * Note [Start-up]
 * The runtime module sits above every other: it is the one place that names
 * the built-in libraries of the kernels and autograd modules (the two
 * generated lists of builtins_internal.h), so that the dispatcher can be linked and used
 * without them (tests/test_dispatcher_alone.c) and no module arrow points
 * back down (.ci/check_module_cycles.sh). The order of start-up is
 *   1. the dispatcher's built-in backend fallbacks;
 *   2. the built-in libraries, ahead of every queued block, as if their
 *      constructors had run first, so that a user's kernel on an aten
 *      operator stacks above the built-in one: the kernels module's list
 *      (aten defs, each kernel kind: CPU, Meta, the composites,
 *      BackendSelect; aten_gen.c), then the autograd module's (Autocast CPU
 *      and CUDA, ADInplaceOrView, Autograd; aten_autograd_gen.c), each an
 *      offered part of its own that the dispatcher drains in that order;
 *   3. the queued DISP_LIBRARY blocks, defs before impls, in link order;
 *   4. the plugins DISP_PLUGINS names, once per lifetime.
 * Steps 1, 3 and 4 are the dispatcher's own (lifecycle.c, plugin.c); step
 * 2's lists come from here.
 *
 * First use. Any dispatcher call can be the first (a lookup, a registration,
 * a plugin load), and each drains the queue itself (disp__ensure_init), so
 * calls before disp_init() keep working. The dispatcher cannot ask this
 * module for the built-in lists at that moment without an arrow pointing up,
 * so this module hands the lists over before any call can happen: the
 * constructor below only publishes two pointers (no allocation, no
 * dispatcher work, as the DISP_LIBRARY constructors only queue a node), and
 * the lists wait in the dispatcher until its first drain. The constructor's priority
 * puts it ahead of every constructor of default priority in the same
 * program, whatever the link order; in the shared library it runs when
 * libdispatch.so is loaded, before any object that uses it. No weak symbols
 * and no link order: both libraries hold this file whatever the program
 * calls, libdispatch.so as any shared object, libdispatch.a because it is
 * ONE object, every module's objects partially linked into a unit
 * (CMakeLists.txt). An archive of members would let the linker leave this
 * file out of a program that calls only typed entries, and with it the
 * autograd module's kernels (its version counter bumps and requires_grad
 * results: tests/test_static_unit.c). Only a program linked from the
 * module objects themselves goes without it (tests/test_dispatcher_alone.c:
 * the dispatcher with no built-in operators; looking one up says so,
 * disp_op_find in registry.c).
 * disp_init() offers the lists again (no-ops when they are there already).
 */
#include "runtime/runtime_internal.h"

#include "builtins_internal.h"
#include "disp/dispatcher.h"
#include "library_internal.h"

void disp__runtime_offer_builtins(void) {
  disp__library_set_builtins(DISP_BUILTINS_KERNELS, disp__builtin_kernel_libraries,
                             disp__builtin_kernel_libraries_count);
  disp__library_set_builtins(DISP_BUILTINS_AUTOGRAD, disp__builtin_autograd_libraries,
                             disp__builtin_autograd_libraries_count);
}

__attribute__((constructor(101))) static void offer_builtins_at_load(void) { disp__runtime_offer_builtins(); }

void disp_init(void) {
  disp__runtime_offer_builtins();
  disp__library_init();
}
