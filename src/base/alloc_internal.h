/*
 * alloc_internal.h - the one seam every allocation of the library goes through.
 *
 * Note [Allocation seam]
 * The library allocates only through disp__malloc, disp__calloc,
 * disp__realloc, disp__strdup and disp__strndup, and gives memory back with
 * disp__free (uthash is configured onto the same pair in uthash_internal.h).
 * In a normal build they are the C library's functions, inlined. In a build
 * with -DDISP_FAULT_INJECTION=ON (CMake option of the same name, for tests
 * only, as SQLite's SQLITE_TEST malloc) each allocation is counted and the
 * test can make the Nth one fail, once or from then on, to prove that every
 * failure is reported (DISP_ERR_NO_MEMORY naming what was being allocated),
 * leaks nothing and leaves the library able to run the same work again
 * (tests/test_alloc_fail.c, .ci/alloc_sweep.sh).
 *
 * Not counted: memory a user's allocator or a backend hands out (it is
 * theirs), libffi's and the dynamic loader's own allocations, and the
 * per-thread message of error.c, formatted on the stack or in plain
 * malloc memory (reporting an out-of-memory must not depend on the counted
 * allocations that just failed).
 */
#ifndef DISP_ALLOC_INTERNAL_H
#define DISP_ALLOC_INTERNAL_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifdef DISP_FAULT_INJECTION

#include "disp/export.h"

void *disp__malloc(size_t size);
void *disp__calloc(size_t count, size_t size);
void *disp__realloc(void *ptr, size_t size);
char *disp__strdup(const char *s);
char *disp__strndup(const char *s, size_t n);

/* Test control (fault-injection builds only). disp__fault_arm(n, persist):
 * counting restarts at zero and allocation number n (1-based) fails; with
 * persist every later one fails too; n == 0 disarms. Counts every thread's
 * allocations, so a sweep runs the library at one thread to be repeatable.
 * disp__fault_count: allocations asked for since the last arm (failed ones
 * included). disp__fault_failed: how many were failed since the last arm.
 * Exported from the shared library of these builds only, so a test that
 * loads plugins against it can drive them. Thread-safe. */
DISP_API void disp__fault_arm(long n, int persist);
DISP_API long disp__fault_count(void);
DISP_API long disp__fault_failed(void);

#else

static inline void *disp__malloc(size_t size) { return malloc(size); }
static inline void *disp__calloc(size_t count, size_t size) { return calloc(count, size); }
static inline void *disp__realloc(void *ptr, size_t size) { return realloc(ptr, size); }
static inline char *disp__strdup(const char *s) { return strdup(s); }
static inline char *disp__strndup(const char *s, size_t n) { return strndup(s, n); }

#endif

/* Memory from any of the above (or from the C library: they are the same heap). */
static inline void disp__free(void *ptr) { free(ptr); }

#endif
