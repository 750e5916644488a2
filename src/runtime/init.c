/*
 * init.c - start-up: the order in which the library comes to life, and
 * disp_init().
 *
 * Note [Start-up]
 * The runtime module sits above every other: it is the one place that names
 * the built-in libraries of the kernels and autograd modules (the generated
 * list of builtins_internal.h), so that the dispatcher can be linked and used
 * without them (tests/test_dispatcher_alone.c) and no module arrow points
 * back down (.ci/check_module_cycles.sh). The order of start-up is
 *   1. the dispatcher's built-in backend fallbacks;
 *   2. the built-in libraries (aten defs, each kernel kind, ADInplaceOrView,
 *      Autograd), ahead of every queued block, as if their constructors had
 *      run first, so that a user's kernel on an aten operator stacks above
 *      the built-in one;
 *   3. the queued DISP_LIBRARY blocks, defs before impls, in link order;
 *   4. the plugins DISP_PLUGINS names, once per lifetime.
 * Steps 1, 3 and 4 are the dispatcher's own (lifecycle.c, plugin.c); step
 * 2's list comes from here.
 *
 * First use. Any dispatcher call can be the first (a lookup, a registration,
 * a plugin load), and each drains the queue itself (disp__ensure_init), so
 * calls before disp_init() keep working. The dispatcher cannot ask this
 * module for the built-in list at that moment without an arrow pointing up,
 * so this module hands the list over before any call can happen: the
 * constructor below only publishes a pointer (no allocation, no dispatcher
 * work, as the DISP_LIBRARY constructors only queue a node), and the list
 * waits in the dispatcher until its first drain. The constructor's priority
 * puts it ahead of every constructor of default priority in the same
 * program, whatever the link order; in the shared library it runs when
 * libdispatch.so is loaded, before any object that uses it. No weak symbols:
 * this file is linked whenever the program refers to disp_init() or
 * disp_shutdown() (every program that cleans up does; shutdown.c refers to
 * this file), and libdispatch.so always holds it. The generated file of the
 * built-in operators (aten_gen.c) makes the same offer from its own
 * constructor, so a program linking libdispatch.a that calls a typed entry
 * (disp_aten_add_Tensor) gets them without disp_init() as well. One that
 * refers to neither, and finds operators only by name, gets the dispatcher
 * without the built-in operators, and looking one up says so (disp_op_find
 * in registry.c).
 * disp_init() offers the list again (a no-op when it is there already).
 */
#include "runtime/runtime_internal.h"

#include "builtins_internal.h"
#include "disp/dispatcher.h"
#include "library_internal.h"

void disp__runtime_offer_builtins(void) {
  disp__library_set_builtins(disp__builtin_libraries, disp__builtin_library_count);
}

__attribute__((constructor(101))) static void offer_builtins_at_load(void) { disp__runtime_offer_builtins(); }

void disp_init(void) {
  disp__runtime_offer_builtins();
  disp__library_init();
}
