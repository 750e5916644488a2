/*
 * single_copy_internal.h - one libdispatch per process (Note [A second copy]
 * in single_copy.c).
 */
#ifndef DISP_SINGLE_COPY_INTERNAL_H
#define DISP_SINGLE_COPY_INTERNAL_H

#include <stddef.h>

#include "disp/status.h"

/* Looks, once, for another copy of the library among the loaded objects.
 * Called by the first drain (lifecycle.c), under its init lock. */
void disp__single_copy_check(void);

/* Looks again, now: how many loaded objects other than this copy's carry
 * the library's note (a plugin just loaded may have brought one); the name
 * of the newest is written to `where` when there is one. */
int disp__single_copy_find_other(char *where, size_t size);

/* 1 when this copy found another at its first initialisation and refuses. */
int disp__is_second_copy(void);

/* For every lookup and registration entry: initialises the dispatcher, then
 * DISP_OK, or DISP_ERR_DUPLICATE with "libdispatch: a second copy of the
 * library was loaded into this process ..." when this copy refuses.
 * Thread-safe. */
disp_status disp__refuse_second_copy(void);

#endif
