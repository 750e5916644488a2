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

#endif
