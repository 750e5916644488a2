/*
 * error_internal.h - helpers to fail with a message and to warn.
 */
#ifndef DISP_ERROR_INTERNAL_H
#define DISP_ERROR_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include "disp/status.h"

/* Set the thread-local message and return `status`. */
disp_status disp__fail(disp_status status, const char *fmt, ...) DISP_PRINTF(2, 3);
disp_status disp__vfail(disp_status status, const char *fmt, va_list ap);

/* Prepend text to the current thread-local message (keeps the status). */
void disp__error_prefix(const char *fmt, ...) DISP_PRINTF(1, 2);

/* Send a warning through the installed handler. */
void disp__warn(const char *fmt, ...) DISP_PRINTF(1, 2);

/* Internal invariant check: aborts with file and line. Never for bad input. */
#define DISP_ASSERT(cond)                                                   \
  do {                                                                      \
    if (!(cond)) disp__assert_fail(#cond, __FILE__, __LINE__);              \
  } while (0)
_Noreturn void disp__assert_fail(const char *expr, const char *file, int line);

#endif
