/*
 * alloc.c - the counting allocation seam of fault-injection builds
 * (Note [Allocation seam] in alloc_internal.h). A normal build compiles
 * nothing here: the seam is inline calls to the C library.
 */
#include "alloc_internal.h"

#include <stdlib.h>

#ifdef DISP_FAULT_INJECTION

#include <stdatomic.h>
#include <stdio.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define PRINT_STACK() __sanitizer_print_stack_trace()
#else
#define PRINT_STACK() ((void)0)
#endif

static atomic_long g_seen;    /* allocations asked for since the last arm */
static atomic_long g_fail_at; /* 1-based number that fails; 0: none */
static atomic_int g_persist;  /* fail every one from g_fail_at on */
static atomic_long g_failed;

void disp__fault_arm(long n, int persist) {
  atomic_store(&g_fail_at, 0);
  atomic_store(&g_seen, 0);
  atomic_store(&g_failed, 0);
  atomic_store(&g_persist, persist);
  atomic_store(&g_fail_at, n > 0 ? n : 0);
}

long disp__fault_count(void) { return atomic_load(&g_seen); }
long disp__fault_failed(void) { return atomic_load(&g_failed); }

/* Whether this allocation is the one (or one of those) to fail. */
static int should_fail(void) {
  long at = atomic_load(&g_fail_at);
  long k = atomic_fetch_add(&g_seen, 1) + 1;
  if (at <= 0 || k < at || (k > at && !atomic_load(&g_persist))) return 0;
  atomic_fetch_add(&g_failed, 1);
  /* Where it failed, for whoever debugs a sweep (sanitizer builds: symbolized). */
  if (k == at && getenv("DISP_FAULT_TRACE")) {
    fprintf(stderr, "disp fault injection: failing allocation %ld\n", k);
    PRINT_STACK();
  }
  return 1;
}

void *disp__malloc(size_t size) { return should_fail() ? NULL : malloc(size); }
void *disp__calloc(size_t count, size_t size) { return should_fail() ? NULL : calloc(count, size); }

/* A failed realloc leaves the block as it was, as the C library's does. */
void *disp__realloc(void *ptr, size_t size) { return should_fail() ? NULL : realloc(ptr, size); }

char *disp__strdup(const char *s) { return should_fail() ? NULL : strdup(s); }
char *disp__strndup(const char *s, size_t n) { return should_fail() ? NULL : strndup(s, n); }

#else
/* ISO C wants something in a translation unit. */
typedef int disp__alloc_unused;
#endif
