/*
 * published_internal.h - one value per device type (an allocator, a table of
 * device hooks) that readers load without a lock while registrations replace
 * it: the shape allocator.c and device_hooks.c share.
 *
 * Note [Published per-type values]: each registration copies the value into
 * an immutable heap node and swaps a pointer to it in with a release store
 * under the mutex; readers take it with one acquire load. A replaced node is
 * kept on a retired list, never freed, because a reader may still be
 * calling through it. A later registration of the very same bytes (a
 * plugin loaded again) takes its node back off that list instead of
 * allocating another, so load/unload cycles hold memory bounded.
 *
 * Registrations per type form a stack of live owners, newest first: a
 * registration made while a plugin loads is owned (Note [Owners]) and is
 * taken off the stack, wherever it lies, when that plugin goes; the value
 * in force is always the newest live registration's (or the built-in one).
 * Unloading plugins in any order therefore never brings back a value of a
 * plugin already gone (B's undo used to restore the A it had replaced,
 * after A was unloaded). A registration made outside any plugin stays until
 * the next one made outside any plugin replaces it.
 */
#ifndef DISP_TENSOR_PUBLISHED_INTERNAL_H
#define DISP_TENSOR_PUBLISHED_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "disp/keyset.h"
#include "disp/status.h"

typedef struct disp__published_node disp__published_node;
typedef struct disp__published_entry disp__published_entry;

typedef struct disp__published {
  pthread_mutex_t lock;
  _Atomic(const void *) table[DISP_NUM_BACKENDS];
  disp__published_node *retired;        /* guarded by lock */
  disp__published_entry *live[DISP_NUM_BACKENDS]; /* registrations, newest first; guarded by lock */
  size_t size;                          /* bytes of one value */
  const void *(*builtin)(disp_backend); /* what NULL restores (may be NULL: nothing) */
} disp__published;

/*
 * disp__published_set - publishes a copy of value (NULL: builtin(type), or
 * none) for `type`. Errors: DISP_ERR_NO_MEMORY ("out of memory registering
 * <what>"), nothing changed. Thread-safe.
 */
disp_status disp__published_set(disp__published *p, disp_backend type, const void *value, const char *what);

/* disp__published_get - the value of `type` now (NULL: none); valid for the
 * life of the process. Lock-free. `type` must be valid. */
static inline const void *disp__published_get(disp__published *p, disp_backend type) {
  return atomic_load_explicit(&p->table[type], memory_order_acquire);
}

#endif
