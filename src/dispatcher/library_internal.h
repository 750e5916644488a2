/*
 * library_internal.h - what library.c offers the rest of the library
 * beyond the public registration API: the built-in operators' definitions
 * and shutdown hooks for caches of operator handles.
 */
#ifndef DISP_LIBRARY_INTERNAL_H
#define DISP_LIBRARY_INTERNAL_H

#include "disp/library.h"

/* disp_library_def for built-in operators: also records the generated
 * adapter, so boxed calls of their unboxed kernels never need libffi. */
disp_status disp__library_def_builtin(disp_library *lib, const char *schema, disp_fn adapter);

/* Runs `fn` once at the next disp_shutdown, before the registry is torn
 * down (for caches of op handles). At most 16 distinct hooks; registering
 * the same one twice keeps one. Thread-safe. */
void disp__at_shutdown(void (*fn)(void));

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
