/*
 * disp/library.h - registering operators, kernels and fallbacks.
 *
 * The counterpart of PyTorch's torch::Library. A library is a group of
 * registrations made from one place (FILE:LINE), in one namespace:
 *   DISP_LIBRARY(ns, m)              defines operators of namespace ns; one
 *                                    per namespace in the whole program
 *   DISP_LIBRARY_FRAGMENT(ns, m)     defines more operators of ns; any number
 *   DISP_LIBRARY_IMPL(ns, KEY, m)    registers kernels on KEY for ops of ns
 *                                    (ns "_" registers backend fallbacks)
 * The macros build a static node that a constructor pushes onto a queue; the
 * body runs when the queue is drained (disp_init() or the first lookup), every
 * def before any impl. The same calls work at run time on a library made with
 * disp_library_new(), and everything it registered goes away with
 * disp_library_free().
 *
 *   DISP_LIBRARY(myops, m) {
 *     disp_library_def(m, "myadd(Tensor self, Tensor other) -> Tensor", NULL);
 *   }
 *   DISP_LIBRARY_IMPL(myops, CPU, m) {
 *     disp_library_impl(m, "myadd", disp_kernel_unboxed(DISP_FN(myadd_cpu), 0), NULL);
 *   }
 *   DISP_LIBRARY_IMPL(myops, AUTOGRAD, m) {
 *     disp_library_impl(m, "myadd", disp_kernel_fallthrough(), NULL);
 *   }
 *
 * Every failure leaves the registry as it was and sets disp_last_error() with
 * PyTorch's wording. NULL arguments follow status.h's Note [NULL arguments];
 * the `reg` out-parameters and disp_library_new's `file` may be NULL.
 */
#ifndef DISP_LIBRARY_H
#define DISP_LIBRARY_H

#include "dispatcher.h"
#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum disp_library_kind {
  DISP_LIBRARY_DEF,      /* DISP_LIBRARY: owns the namespace */
  DISP_LIBRARY_FRAGMENT, /* DISP_LIBRARY_FRAGMENT: adds defs to a namespace */
  DISP_LIBRARY_IMPL      /* DISP_LIBRARY_IMPL: kernels for one key */
} disp_library_kind;

typedef struct disp_library disp_library;

/*
 * disp_library_new - opens a library. `key` is the dispatch key of an IMPL
 * library (DISP_KEY_UNDEFINED otherwise); `ns` "_" in an IMPL library means
 * any namespace (for fallbacks). `file`/`line` become the "registered at"
 * text of its registrations. A DEF library claims its namespace: a second
 * one fails with DISP_ERR_DUPLICATE ("Only a single TORCH_LIBRARY can be used
 * to register the namespace ns; ..."). `ns` must be a valid identifier (a
 * letter or '_', then letters, digits or '_'), as the `ns` of `ns::op`:
 * NULL, "", "a b", "x::y" or "1abc" fail with DISP_ERR_INVALID_ARG
 * ("DISP_LIBRARY: invalid namespace \"a b\"; a namespace must be a valid
 * identifier ..."); the static macros' blocks go through here too.
 * `file` may be NULL ("<unknown>"). New
 * object; free with disp_library_free(). Thread-safe.
 */
DISP_API disp_status disp_library_new(disp_library_kind kind, const char *ns, disp_key key,
                                      const char *file, int line, disp_library **out);

/*
 * disp_library_free - removes every registration the library made (newest
 * first) and frees it. NULL ok. Thread-safe.
 */
DISP_API void disp_library_free(disp_library *lib);

/*
 * disp_library_def - defines an operator from its schema ("name.overload(...)
 * -> ..." in the library's namespace, or fully qualified with the same
 * namespace). DEF and FRAGMENT libraries only. Errors: DISP_ERR_SCHEMA (the
 * parser's located message), DISP_ERR_DUPLICATE ("Tried to register an
 * operator (...) with the same name and overload name multiple times..."),
 * DISP_ERR_MISMATCH (a kernel registered earlier was written for another
 * schema). `reg` (may be NULL) receives a borrowed handle. Thread-safe.
 */
DISP_API disp_status disp_library_def(disp_library *lib, const char *schema,
                                      disp_registration **reg);

/*
 * disp_library_impl - registers `kernel` for operator `name` ("name.overload"
 * or qualified) on the library's key; in a DEF or FRAGMENT library on
 * CompositeImplicitAutograd, as PyTorch does for an impl without a key. The
 * operator need not be defined yet (disp_registry_check() reports one that
 * never is). A key that already has a kernel keeps it underneath (PyTorch's
 * override warning is issued); removing the new one restores it. Errors:
 * DISP_ERR_SCHEMA (bad name, namespace mismatch), DISP_ERR_MISMATCH (the
 * kernel's schema disagrees with the def), DISP_ERR_INVALID_ARG (an empty
 * kernel). On error the kernel's user_data stays the caller's. Thread-safe.
 */
DISP_API disp_status disp_library_impl(disp_library *lib, const char *name, disp_kernel kernel,
                                       disp_registration **reg);

/*
 * disp_library_impl_key - as disp_library_impl on an explicit key (PyTorch's
 * m.impl(name, torch::dispatch(key, fn))), in any kind of library.
 */
DISP_API disp_status disp_library_impl_key(disp_library *lib, const char *name, disp_key key,
                                           disp_kernel kernel, disp_registration **reg);

/*
 * disp_library_fallback - registers a backend fallback, boxed or fallthrough,
 * for every operator on the library's key (an alias key registers on each of
 * its runtime keys). IMPL libraries only. A user fallback replaces the
 * library's built-in default for that key until removed; a second user
 * fallback fails with DISP_ERR_DUPLICATE ("Tried to register multiple backend
 * fallbacks for the same dispatch key ..."). Thread-safe.
 */
DISP_API disp_status disp_library_fallback(disp_library *lib, disp_kernel kernel,
                                           disp_registration **reg);

/* disp_library_namespace / disp_library_key - what the library was opened
 * with. `lib` must not be NULL: NULL (with the message) and DISP_KEY_UNDEFINED. */
DISP_API const char *disp_library_namespace(const disp_library *lib);
DISP_API disp_key disp_library_key(const disp_library *lib);

/* ---- static registration --------------------------------------------- */

/* A queued static library block. Filled by the macros; never touch fields. */
typedef struct disp_library_node {
  disp_library_kind kind;
  const char *ns;
  disp_key key;
  void (*body)(disp_library *lib);
  const char *file;
  int line;
  struct disp_library_node *next; /* queue link */
  disp_library *lib;              /* set when drained */
  int state;                      /* 0 queued, 1 ran, negative: failed */
  char *error;                    /* the failure's message, when state is negative */
} disp_library_node;

/*
 * disp_library_enqueue - called by the macros' constructors; only links the
 * node into a lock-free list (no allocation, no dispatcher work). NULL is a
 * no-op.
 */
DISP_API void disp_library_enqueue(disp_library_node *node);

#define DISP__CAT2(a, b) a##b
#define DISP__CAT(a, b) DISP__CAT2(a, b)
#define DISP__UID(prefix) DISP__CAT(prefix, __COUNTER__)

#define DISP__LIBRARY_BLOCK(KIND, NS, KEY, LIB, UID)                          \
  static void DISP__CAT(disp__body_, UID)(disp_library * LIB);                \
  static disp_library_node DISP__CAT(disp__node_, UID) = {                    \
      .kind = KIND, .ns = #NS, .key = KEY, .body = DISP__CAT(disp__body_, UID), \
      .file = __FILE__, .line = __LINE__};                                    \
  __attribute__((constructor)) static void DISP__CAT(disp__ctor_, UID)(void) { \
    disp_library_enqueue(&DISP__CAT(disp__node_, UID));                       \
  }                                                                           \
  static void DISP__CAT(disp__body_, UID)(disp_library * LIB)

/* Parameters are upper-case so they cannot capture the node's field names. */
#define DISP_LIBRARY(NS, LIB) \
  DISP__LIBRARY_BLOCK(DISP_LIBRARY_DEF, NS, DISP_KEY_UNDEFINED, LIB, DISP__CAT(NS, __COUNTER__))
#define DISP_LIBRARY_FRAGMENT(NS, LIB) \
  DISP__LIBRARY_BLOCK(DISP_LIBRARY_FRAGMENT, NS, DISP_KEY_UNDEFINED, LIB, DISP__CAT(NS, __COUNTER__))
#define DISP_LIBRARY_IMPL(NS, KEY, LIB) \
  DISP__LIBRARY_BLOCK(DISP_LIBRARY_IMPL, NS, DISP_KEY_##KEY, LIB, DISP__CAT(NS, __COUNTER__))

#ifdef __cplusplus
}
#endif

#endif /* DISP_LIBRARY_H */
