/*
 * disp/status.h - status codes and the thread-local error message.
 *
 * Every fallible call returns a disp_status (DISP_OK on success) and writes
 * its result through an out-parameter. On failure a thread-local message,
 * worded like PyTorch's, says which operator, which key and what went wrong.
 *
 * Note [NULL arguments]
 * One rule for every function of the API and every pointer it takes (an
 * object, a string, an array, a callback, an out-parameter):
 *   (a) A function returning disp_status returns DISP_ERR_INVALID_ARG for a
 *       NULL argument, with the message "<function>: <argument> is NULL"
 *       ("disp_op_find: out is NULL"), and changes nothing: no registration,
 *       thread-local state, reference count or stack changes. (A function
 *       documented to set *out = NULL on every failure still does.)
 *   (b) A function returning a pointer returns NULL and sets the same message.
 *   (c) An accessor returning a plain value (a number, a flag, a key, a key
 *       set, a small struct) has no way to report an error: its comment says
 *       the argument must not be NULL, and a NULL still gets a harmless value
 *       (0, false, the empty set, DISP_KEY_UNDEFINED, as documented there)
 *       without a message. A (buffer, size) pair with a NULL buffer is
 *       measured but not written, as snprintf(NULL, 0).
 *   (d) Functions that release, free, remove or clear, and every other
 *       function returning void, take NULL as a no-op; retain(NULL) returns
 *       NULL.
 *   (e) An out-parameter is an argument like the others: NULL is refused.
 * Exceptions are written where they apply: a parameter whose comment gives
 * NULL a meaning (None, "no handle wanted", the default) takes it as that;
 * an array whose count is 0 may be NULL; and the inline fast path
 * (DISP_CALL, disp_op_dispatch_inline, disp_tensor_keys) does not check,
 * because a check would cost every call: its operator and tensors must not
 * be NULL. tests/test_null_args.c calls every exported function with each
 * pointer argument NULL in turn and checks this rule.
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
 * A NULL fmt is refused (Note [NULL arguments]): DISP_ERR_INVALID_ARG, whatever
 * `status` was. Thread-safe.
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
