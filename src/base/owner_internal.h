/*
 * owner_internal.h - who registered what, so a plugin's state can be undone.
 *
 * Note [Owners]
 * Everything a plugin changes while it loads - libraries, kernels, fallbacks,
 * static registration blocks, its allocator, its device name, device hooks -
 * must go away when it is unloaded, and when its init fails half way. The
 * modules that hold that state do not know about plugins (the tensor module
 * may not even include a dispatcher header), so the plugin loader makes an
 * owner current on its thread around dlopen, the static blocks' drain and
 * the plugin's init, and every module that changes global state records how
 * to undo the change with disp__owner_defer(). With no owner current (the
 * program's own registrations) nothing is recorded. Unloading runs the
 * owner's records newest first, so later changes are undone before the ones
 * they built on, then dlcloses the plugin.
 *
 * Rules for a module that records undo actions:
 *   - record before (or atomically with) the change, so that a failure to
 *     record (out of memory) can fail the call with nothing changed;
 *   - if the change is undone by other means (disp_library_free), cancel the
 *     record with disp__owner_cancel() so it never runs twice;
 *   - an undo action runs with no library lock held and takes what it needs;
 *     it must not fail (it frees or restores what was recorded).
 * Only the loading thread's changes are attributed: a plugin that registers
 * from a thread of its own, or later from a kernel, owns nothing by this.
 */
#ifndef DISP_OWNER_INTERNAL_H
#define DISP_OWNER_INTERNAL_H

#include "disp/status.h"

typedef struct disp_owner disp_owner;
typedef struct disp_undo disp_undo;

/* A new owner with no records; `name` (copied) is what messages call it, as
 * "plugin 'openreg'". NULL when out of memory. Thread-safe. */
disp_owner *disp__owner_new(const char *name);

/* Frees an owner; its records must have run (disp__owner_undo_all). NULL ok. */
void disp__owner_free(disp_owner *o);

/* Makes `o` (or NULL) the calling thread's current owner and returns the
 * previous one, to be restored by a second call. */
disp_owner *disp__owner_swap(disp_owner *o);

/* The calling thread's current owner, or NULL. */
disp_owner *disp__owner_current(void);

/* What messages call the owner ("" for NULL); valid while it lives. */
const char *disp__owner_name(const disp_owner *o);

/*
 * disp__owner_defer - records undo(ctx) on the current owner. With no owner
 * current: DISP_OK and *out = NULL, nothing recorded. Out of memory:
 * DISP_ERR_NO_MEMORY with a message; the caller must then fail its call
 * without changing anything. `out` (may be NULL) receives the record, for
 * disp__owner_cancel(). Thread-safe.
 */
disp_status disp__owner_defer(void (*undo)(void *ctx), void *ctx, disp_undo **out);

/* Forgets a record whose change was undone by other means; its action never
 * runs. NULL ok. Thread-safe. */
void disp__owner_cancel(disp_undo *u);

/* Runs every record of `o`, newest first, each once, and forgets them. An
 * action may record or cancel other records meanwhile. Thread-safe, but two
 * threads must not undo the same owner. */
void disp__owner_undo_all(disp_owner *o);

#endif
