/*
 * error_internal.h - helpers to fail with a message and to warn.
 */
#ifndef DISP_ERROR_INTERNAL_H
#define DISP_ERROR_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "disp/status.h"

/* Set the thread-local message and return `status`. */
disp_status disp__fail(disp_status status, const char *fmt, ...) DISP_PRINTF(2, 3);
disp_status disp__vfail(disp_status status, const char *fmt, va_list ap);

/* The status the thread's current message was set with (DISP_OK after
 * disp_clear_error): how a caller that only sees a message (a static
 * registration block's body returns nothing) tells out of memory apart. */
disp_status disp__last_status(void);

/* Prepend text to the current thread-local message (keeps the status). */
void disp__error_prefix(const char *fmt, ...) DISP_PRINTF(1, 2);

/* Naming a failed call after its operator (Note [Whose message is it] in
 * error.c). disp__error_seq counts this thread's messages: read it before
 * running a kernel, then on failure call disp__error_name_op, which uses the
 * kernel's message, prefixed with "op: " once, or says that the kernel set
 * none. disp__error_add_op_after is for callers that did not read it. */
extern _Thread_local uint64_t disp__error_seq __attribute__((tls_model("initial-exec"), visibility("hidden")));
void disp__error_name_op(const char *op_name, disp_status st, uint64_t seq_before);
void disp__error_add_op_after(const char *op_name);
/* For a message that names its operator in its own words (PyTorch's "... for
 * schema ns::op."): no call adds a prefix to it. */
void disp__error_mark_named(void);

/* Send a warning through the installed handler. */
void disp__warn(const char *fmt, ...) DISP_PRINTF(1, 2);

/* Internal invariant check: aborts with file and line. Never for bad input. */
#define DISP_ASSERT(cond)                                                   \
  do {                                                                      \
    if (!(cond)) disp__assert_fail(#cond, __FILE__, __LINE__);              \
  } while (0)
_Noreturn void disp__assert_fail(const char *expr, const char *file, int line);

#endif
