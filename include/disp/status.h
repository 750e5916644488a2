/*
 * disp/status.h - status codes and the thread-local error message.
 *
 * Every fallible call returns a disp_status (DISP_OK on success) and writes
 * its result through an out-parameter. On failure a thread-local message,
 * worded like PyTorch's, says which operator, which key and what went wrong.
 */
#ifndef DISP_STATUS_H
#define DISP_STATUS_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum disp_status {
  DISP_OK = 0,
  DISP_ERR_INVALID_ARG,  /* a caller passed something unusable */
  DISP_ERR_NO_MEMORY,    /* an allocation failed; nothing was changed */
  DISP_ERR_SCHEMA,       /* a schema or operator name did not parse */
  DISP_ERR_OP_NOT_FOUND, /* no operator of that name */
  DISP_ERR_NO_KERNEL,    /* no kernel for the key a call dispatched to */
  DISP_ERR_DUPLICATE,    /* a second def / LIBRARY / fallback */
  DISP_ERR_MISMATCH,     /* a kernel's schema disagrees with the def */
  DISP_ERR_KERNEL,       /* a kernel reported an error */
  DISP_ERR_TYPE,         /* an argument of the wrong type */
  DISP_ERR_PLUGIN,       /* a backend plugin failed to load */
  DISP_ERR_IO            /* a file could not be read */
} disp_status;

/*
 * disp_status_name - the enum constant's name, e.g. "DISP_ERR_NO_KERNEL".
 * Returns a static string ("DISP_ERR_UNKNOWN" for values outside the enum).
 * Thread-safe.
 */
DISP_API const char *disp_status_name(disp_status s);

/*
 * disp_last_error - the message of the last failure on this thread.
 * Borrowed; valid until the next failing disp_ call on this thread. Never
 * NULL: "" when nothing has failed yet. Thread-safe (the message is per thread).
 */
DISP_API const char *disp_last_error(void);

/*
 * disp_clear_error - forget this thread's last error message.
 * Thread-safe.
 */
DISP_API void disp_clear_error(void);

/*
 * disp_set_error - set this thread's error message (printf format) and return
 * `status`. For kernels and plugins that report a failure through the
 * dispatcher; the caller then sees the message with the operator's name added.
 * Thread-safe.
 */
DISP_API disp_status disp_set_error(disp_status status, const char *fmt, ...)
    DISP_PRINTF(2, 3);

/*
 * Warnings (PyTorch's TORCH_WARN): the library reports non-fatal surprises,
 * such as overriding a kernel, through one process-wide handler. The default
 * handler prints "Warning: <message>" to stderr. Passing NULL restores it.
 * Returns the previous handler. Thread-safe; the handler may be called from
 * any thread and must be thread-safe itself.
 */
typedef void (*disp_warning_handler)(const char *message, void *user_data);
DISP_API disp_warning_handler disp_set_warning_handler(disp_warning_handler h,
                                                       void *user_data);

#ifdef __cplusplus
}
#endif

#endif /* DISP_STATUS_H */
