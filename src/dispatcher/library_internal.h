/*
 * library_internal.h - what library.c and lifecycle.c offer the rest of the
 * library beyond the public registration API: the built-in operators' definitions,
 * shutdown hooks for caches of operator handles, and the lifecycle steps the
 * runtime module (src/runtime/) puts in order.
 */
#ifndef DISP_LIBRARY_INTERNAL_H
#define DISP_LIBRARY_INTERNAL_H

#include <stddef.h>

#include "disp/library.h"

/* "DISP_LIBRARY", "DISP_LIBRARY_FRAGMENT" or "DISP_LIBRARY_IMPL", for
 * messages. */
const char *disp__library_kind_macro(disp_library_kind kind);

/* Starts a new dispatcher lifetime (lifecycle.c, at shutdown, registry lock
 * held): libraries of the old one free only their own memory. */
void disp__library_new_generation(void);

/* disp_library_def for built-in operators: also records the generated
 * adapter, so boxed calls of their unboxed kernels never need libffi. */
disp_status disp__library_def_builtin(disp_library *lib, const char *schema, disp_fn adapter);

/*
 * Note [Shutdown hooks]
 * A cache of operator handles (typed entries, BackendSelect, autocast) must
 * forget them when disp_shutdown frees the operators. Its owner registers a
 * node it provides itself, a static: the list is intrusive, so registering
 * allocates nothing, cannot fail and has no limit. A node is on the list at
 * most once (registering it again while it waits is a no-op); disp_shutdown
 * runs each waiting node once, newest first, then forgets them all, so the
 * next lifetime registers again when it fills the cache again. The hooks run
 * after every registration is gone and before the registry is torn down,
 * with no dispatcher lock held. Thread-safe.
 */
typedef struct disp_shutdown_hook {
  void (*fn)(void);
  struct disp_shutdown_hook *next; /* owned by the list */
  int linked;                      /* owned by the list */
} disp_shutdown_hook;

/* Puts `hook` (borrowed; must outlive the library: a static) on the list for
 * the next disp_shutdown, unless it is waiting there already. NULL, or a
 * node without fn, is a no-op. */
void disp__at_shutdown_hook(disp_shutdown_hook *hook);

/* disp__at_shutdown(fn): the same with a static node per call site, for a
 * function named at the call (`fn` must be a function designator). */
#define disp__at_shutdown(fn)                                 \
  do {                                                        \
    static disp_shutdown_hook disp__hook_node_ = {fn, 0, 0};  \
    disp__at_shutdown_hook(&disp__hook_node_);                \
  } while (0)

/* Runs every waiting hook once, newest first, and empties the list (the
 * runtime's disp_shutdown). */
void disp__shutdown_hooks_run(void);

/*
 * disp__library_set_builtins - the libraries the dispatcher drains ahead of
 * every queued block on its first drain (Note [Start-up] in
 * src/runtime/init.c); from then on they are drained nodes like the others,
 * kept across disp_shutdown. They come in DISP__BUILTIN_PARTS parts, one per
 * module that has built-in libraries (the kernels', then the autograd
 * module's: builtins_internal.h numbers them), drained in the order of
 * `part` whichever was offered first. Only the first list offered for a part
 * is taken; later calls, a `part` out of range or NULL `nodes` are no-ops. A
 * part offered after the first drain is ignored (every offer comes from a
 * constructor, before any drain). `nodes` is borrowed and must outlive the
 * library. Lock-free, no allocation: safe in a constructor.
 */
enum { DISP__BUILTIN_PARTS = 2 };
void disp__library_set_builtins(int part, disp_library_node *nodes, size_t count);

/* 1 once the built-in libraries were offered (lookups of aten operators
 * explain their absence). Lock-free. */
int disp__library_has_builtins(void);

/* Drains the registration queue now, as the first lookup would, and loads
 * DISP_PLUGINS once per lifetime (disp_init). */
void disp__library_init(void);

/* The dispatcher's part of disp_shutdown, after the plugins are unloaded
 * (disp__plugins_shutdown), in order: frees the static libraries newest
 * first, runs the shutdown hooks, tears the registry down (destroy callbacks
 * run outside the lock), and queues the static blocks again for the next
 * drain. Allocates nothing. Not thread-safe with respect to concurrent calls. */
void disp__library_shutdown(void);

/* A plugin's static blocks (Note [Plugin attribution] in disp/plugin.h),
 * for plugin.c, in this order:
 *   _begin  drains whatever is queued (it is not the plugin's), then holds
 *           the init lock: no drain happens until _end, on any thread;
 *   (dlopen: the plugin's constructors queue its blocks)
 *   _take   the nodes queued since _begin, in link order, not run; a caller
 *           that refuses the plugin just forgets them;
 *   _run    runs them, defs first, under the current owner: each node joins
 *           the drained list with an undo record; stops at the first block
 *           that fails: DISP_ERR_PLUGIN "DISP_LIBRARY(ns) at FILE:LINE
 *           failed: ..." (its nodes so far are recorded, to be undone);
 *   _end    releases the init lock. */
void disp__library_load_begin(void);
disp_library_node *disp__library_load_take(void);
disp_status disp__library_load_run(disp_library_node *fifo);
void disp__library_load_end(void);

#endif
