/*
 * disp/dispatcher.h - operators, kernels and the registry.
 *
 * The dispatcher is one process-wide registry of operators, keyed by
 * "ns::name.overload". Each operator has a schema (from a def), kernels per
 * dispatch key (from impls, stacked: newest wins) and a computed dispatch
 * table with one kernel per runtime key, recomputed on every registration
 * change with PyTorch's precedence rules (direct kernel, then
 * CompositeExplicitAutogradNonFunctional, CompositeExplicitAutograd,
 * CompositeImplicitAutograd, Autograd, backend fallback, missing).
 *
 * Registration goes through libraries (disp/library.h). This header has the
 * kernel type, operator handles, inspection and lifecycle. NULL arguments
 * follow status.h's Note [NULL arguments].
 */
#ifndef DISP_DISPATCHER_H
#define DISP_DISPATCHER_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "keyset.h"
#include "schema.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An operator. Owned by the dispatcher; a handle stays valid until
 * disp_shutdown(), even after every registration of the operator is gone. */
typedef struct disp_op disp_op;

/* A stack of boxed values (disp/value.h). */
typedef struct disp_stack disp_stack;

/* One registration (a def, an impl, a fallback); owned by its library. */
typedef struct disp_registration disp_registration;

/*
 * A boxed kernel: takes its arguments from the stack and leaves its returns
 * there. `ks` is the key set the call dispatched with (for redispatch).
 * Returns DISP_OK, or an error status after disp_set_error().
 */
typedef disp_status (*disp_boxed_fn)(const disp_op *op, disp_keyset ks, disp_stack *stack,
                                     void *user_data);

/* An unboxed kernel: a plain C function whose signature follows from the
 * schema (see disp/value.h). Stored type-erased, like libffi's FFI_FN. */
typedef void (*disp_fn)(void);
#define DISP_FN(f) ((disp_fn)(void (*)(void))(f))

/* Kernel flags. */
enum {
  DISP_KERNEL_FALLTHROUGH = 1u << 0, /* skip this key: dispatch goes on below */
  DISP_KERNEL_WITH_KEYSET = 1u << 1  /* the unboxed function takes the key set first */
};

/*
 * A kernel to register, passed by value. At least one of `boxed`, `unboxed`
 * is set unless the kernel is a fallthrough.
 *   user_data/destroy: handed to the boxed function; `destroy` (may be NULL)
 *     runs when the registration is removed or the dispatcher shuts down.
 *     The registry owns user_data from a successful registration on; on a
 *     failed registration it stays the caller's.
 *   debug: optional text shown in dumps instead of "registered at FILE:LINE".
 *     Copied.
 *   schema: optional schema text the kernel was written for; it must agree
 *     with the operator's def (PyTorch's inferred-schema check), and for an
 *     unboxed kernel map to the same C types (`int` is int64_t, ScalarType
 *     int32_t, though PyTorch's check takes one for the other). Copied.
 *     The library cannot see a C function's type: for built-in operators
 *     disp/aten_impl.h checks it at compile time.
 */
typedef struct disp_kernel {
  disp_boxed_fn boxed;
  disp_fn unboxed;
  unsigned flags;
  void *user_data;
  void (*destroy)(void *user_data);
  const char *debug;
  const char *schema;
} disp_kernel;

/* A boxed kernel. */
static inline disp_kernel disp_kernel_boxed(disp_boxed_fn fn, void *user_data,
                                            void (*destroy)(void *)) {
  disp_kernel k = {fn, 0, 0, user_data, destroy, 0, 0};
  return k;
}
/* An unboxed kernel; flags may hold DISP_KERNEL_WITH_KEYSET. */
static inline disp_kernel disp_kernel_unboxed(disp_fn fn, unsigned flags) {
  disp_kernel k = {0, fn, flags, 0, 0, 0, 0};
  return k;
}
/* A fallthrough: the dispatcher skips this key (PyTorch's makeFallthrough). */
static inline disp_kernel disp_kernel_fallthrough(void) {
  disp_kernel k = {0, 0, DISP_KERNEL_FALLTHROUGH, 0, 0, 0, 0};
  return k;
}

/* ---- lifecycle -------------------------------------------------------- */

/*
 * disp_init - runs every pending static registration (DISP_LIBRARY blocks of
 * the program and of loaded libraries): every def first, then impls and
 * fallbacks. Called implicitly by the first lookup; calling it again runs
 * only blocks added since. Failures of static blocks are kept and reported
 * by disp_registry_check(). Thread-safe.
 *
 * One copy of the library per process: a copy that finds another already
 * loaded when it first initialises (libdispatch.a in the program and a plugin
 * linked against libdispatch.so) registers nothing, and its lookups,
 * registrations and disp_registry_check() fail with DISP_ERR_DUPLICATE,
 * "libdispatch: a second copy of the library was loaded into this process
 * (static and shared?) ...", naming both objects.
 */
DISP_API void disp_init(void);

/*
 * disp_shutdown - removes every registration and frees every operator,
 * kernel and table. Handles become invalid. No call may be in flight. A
 * later disp_init() starts over from the built-in registrations. Not
 * thread-safe with respect to concurrent calls.
 */
DISP_API void disp_shutdown(void);

/*
 * disp_registry_check - reports problems that only show once everything is
 * registered: static registration blocks that failed, and impls whose
 * operator was never defined (PyTorch's findDanglingImpls). Returns DISP_OK
 * when there are none; otherwise DISP_ERR_OP_NOT_FOUND (dangling impls) or the
 * first failing block's status, with every problem listed in the message,
 * one per line. Thread-safe.
 */
DISP_API disp_status disp_registry_check(void);

/* ---- operators -------------------------------------------------------- */

/*
 * disp_op_find - the defined operator named "ns::name.overload" ("ns::name"
 * for the empty overload). Borrowed handle. Errors: DISP_ERR_OP_NOT_FOUND
 * ("Could not find schema for ns::name.overload"). Thread-safe.
 */
DISP_API disp_status disp_op_find(const char *qualified_name, const disp_op **out);

/* disp_op_name - "ns::name.overload". Borrowed; NULL for a NULL op. Thread-safe. */
DISP_API const char *disp_op_name(const disp_op *op);

/*
 * disp_op_schema - the operator's schema, NULL while it has only impls (and,
 * with the message, for a NULL op). Borrowed; valid while the def is
 * registered. Thread-safe.
 */
DISP_API const disp_schema *disp_op_schema(const disp_op *op);

/*
 * disp_op_has_kernel - whether a kernel (fallthroughs included) is registered
 * directly on `key` (a runtime or alias key) for the operator, not counting
 * fallbacks or alias-derived entries (PyTorch's _dispatch_has_kernel_for_dispatch_key).
 * `op` must not be NULL (a NULL op has no kernels: 0). Thread-safe.
 */
DISP_API int disp_op_has_kernel(const disp_op *op, disp_key key);

/*
 * disp_op_dump_table - the computed dispatch table in PyTorch's
 * dumpComputedTable() format: one line "Key: [fallthrough ]<debug>
 * [<provenance>]" per runtime key that has a kernel. New string (free()),
 * NULL on OOM or for a NULL op. Thread-safe.
 */
DISP_API char *disp_op_dump_table(const disp_op *op);

/*
 * disp_op_dump_state - the registration state in PyTorch's dumpState()
 * format (name, schema, debug, alias analysis kind, then every registered
 * kernel per key, newest first, older ones marked "(inactive)"). Kernel
 * pointers are printed as "[ boxed unboxed ]" flags rather than addresses so
 * the output can be diffed. New string (free()), NULL on OOM or for a NULL
 * op. Thread-safe.
 */
DISP_API char *disp_op_dump_state(const disp_op *op);

/*
 * disp_op_list - names of every operator that has a def, sorted. Writes a new
 * array of `*count` borrowed names (free() the array, not the names; they
 * stay valid until the operator's def goes away). Thread-safe.
 */
DISP_API disp_status disp_op_list(const char ***names, size_t *count);

/* ---- registrations ---------------------------------------------------- */

/*
 * disp_registration_remove - undoes one registration: an impl's kernel leaves
 * its key's stack (the previous kernel becomes active again), a def's schema
 * goes away, a fallback is removed (a built-in default comes back). Tables
 * are recomputed. Kernels of the registration must not be running. NULL is a
 * no-op; removing twice is a no-op. The handle stays owned by its library.
 * Thread-safe.
 */
DISP_API void disp_registration_remove(disp_registration *reg);

/*
 * disp_registration_debug - "registered at FILE:LINE" (or the kernel's debug
 * text). Borrowed; NULL for a NULL reg. Thread-safe.
 */
DISP_API const char *disp_registration_debug(const disp_registration *reg);

/* ---- backend fallbacks ------------------------------------------------ */

/*
 * disp_fallback_dump - one line per runtime key that has a backend fallback:
 * "Key: [fallthrough ]<debug> [backend fallback]". New string (free()).
 * Thread-safe.
 */
DISP_API char *disp_fallback_dump(void);

#ifdef __cplusplus
}
#endif

#endif /* DISP_DISPATCHER_H */
