/*
 * disp/aten_impl.h - type-checked kernel registration for the built-in aten
 * operators.
 *
 * disp_kernel_unboxed() stores a kernel type-erased (DISP_FN), so a kernel
 * whose C signature is not the one its operator's schema maps to (the table
 * of disp/value.h) registers silently and is undefined behaviour when it is
 * called. For the built-in operators the signature is known when a backend
 * is compiled - disp/aten.h has the C function type of every operator's
 * kernel - so these forms check it there, as PyTorch's m.impl infers a
 * schema from the C++ type of the function it is given:
 *
 *   DISP_IMPL_ATEN(lib, ID, fn)           registers fn for the operator on
 *                                         the library's key (disp_library_impl)
 *   DISP_IMPL_ATEN_KEY(lib, key, ID, fn)  on an explicit disp_key
 *                                         (disp_library_impl_key)
 *   DISP_ATEN_KERNEL(ID, fn)              the disp_kernel itself, for calls
 *                                         that want the registration handle
 *
 *   static disp_aten_add_Tensor_kernel my_add;   (declares it with the right type)
 *   DISP_LIBRARY_IMPL(aten, PRIVATEUSE1, m) {
 *     DISP_IMPL_ATEN(m, add_Tensor, my_add);
 *   }
 *
 * ID names the operator as its typed entry in disp/aten.h does: add_Tensor
 * for aten::add.Tensor (disp_aten_add_Tensor). `fn` (a function or a
 * function pointer) must have the type disp_aten_ID_kernel, or
 * disp_aten_ID_kernel_ks - the key set first, registered with
 * DISP_KERNEL_WITH_KEYSET. Anything else does not compile; the static
 * assertion names the operator and the expected type:
 *   DISP_IMPL_ATEN: my_add is not a kernel of aten::add.Tensor: expected
 *   disp_aten_add_Tensor_kernel, disp_status(disp_tensor *, disp_tensor *,
 *   disp_scalar, disp_tensor **) (or disp_aten_add_Tensor_kernel_ks: the
 *   same with disp_keyset first)
 * A parameter type that differs only in C (`const disp_tensor *` for
 * `disp_tensor *`, `int` for `int64_t`) is refused too, where a plain
 * assignment of the pointer would only warn. An unknown ID does not compile
 * either (no such type). The check is C11 _Generic; in C++ (the header
 * compiles as C++11) a static_assert on the same types.
 *
 * At run time the kernel carries its operator's schema (DISP_ATEN_SCHEMA_ID,
 * disp_kernel.schema), which the registry checks against the def as it does
 * every kernel schema (for an unboxed kernel down to the C types): a backend
 * built against another version's aten.h whose operator has other types is
 * refused (DISP_ERR_MISMATCH, "Inferred operator schema for a C++ kernel
 * function doesn't match the expected function schema. ..."). `lib` must be a library of namespace aten (an
 * IMPL library; a DEF or FRAGMENT registers on CompositeImplicitAutograd);
 * another namespace is refused (DISP_ERR_SCHEMA). The forms return
 * disp_library_impl's status; errors and thread safety are its own.
 *
 * Operators known only at run time (other namespaces, schemas read from
 * text) keep the type-erased path, disp_kernel_unboxed(DISP_FN(fn), flags);
 * giving such a kernel a `schema` is the only run-time check the library can
 * make, since a C function pointer carries no type.
 */
#ifndef DISP_ATEN_IMPL_H
#define DISP_ATEN_IMPL_H

#include "disp/aten.h"
#include "dispatcher.h"
#include "library.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel DISP_ATEN_KERNEL builds: unboxed, with the operator's schema. */
static inline disp_kernel disp__aten_kernel(disp_fn fn, unsigned flags, const char *schema) {
  disp_kernel k = disp_kernel_unboxed(fn, flags);
  k.schema = schema;
  return k;
}

#ifdef __cplusplus
}
#endif

#define DISP__ATEN_MESSAGE(ID, FN)                                                          \
  "DISP_IMPL_ATEN: " #FN " is not a kernel of " DISP_ATEN_NAME_##ID ": expected disp_aten_" \
  #ID "_kernel, " DISP_ATEN_CTYPE_##ID " (or disp_aten_" #ID "_kernel_ks: the same with "   \
  "disp_keyset first)"

#ifndef __cplusplus
/* 1 for the plain kernel type, 2 for the one taking the key set, 0 for
 * anything else. _Generic compares compatible types after the function (or
 * pointer) decays: exactly the C signature. */
#define DISP__ATEN_FN_KIND(ID, FN) \
  _Generic((FN), disp_aten_##ID##_kernel *: 1, disp_aten_##ID##_kernel_ks *: 2, default: 0)
/* A _Static_assert is a declaration; a struct member list is the place C11
 * allows one inside an expression. */
#define DISP__ATEN_CHECK(ID, FN)                                                  \
  ((void)sizeof(struct {                                                          \
    _Static_assert(DISP__ATEN_FN_KIND(ID, FN) != 0, DISP__ATEN_MESSAGE(ID, FN)); \
    int disp__unused;                                                             \
  }))
#else
template <typename A, typename B> struct disp__aten_same { static const bool value = false; };
template <typename A> struct disp__aten_same<A, A> { static const bool value = true; };
/* Unary + decays a function to its pointer, as _Generic does in C. */
#define DISP__ATEN_FN_KIND(ID, FN)                                                  \
  (disp__aten_same<decltype(+(FN)), disp_aten_##ID##_kernel *>::value      ? 1      \
   : disp__aten_same<decltype(+(FN)), disp_aten_##ID##_kernel_ks *>::value ? 2 : 0)
/* static_assert is a statement: a lambda gives it a place in an expression. */
#define DISP__ATEN_CHECK(ID, FN) \
  ([] { static_assert(DISP__ATEN_FN_KIND(ID, FN) != 0, DISP__ATEN_MESSAGE(ID, FN)); }())
#endif

/* DISP_ATEN_KERNEL - the checked disp_kernel for `fn` as a kernel of ID. */
#define DISP_ATEN_KERNEL(ID, FN)                                                         \
  (DISP__ATEN_CHECK(ID, FN),                                                             \
   disp__aten_kernel(DISP_FN(FN),                                                        \
                     DISP__ATEN_FN_KIND(ID, FN) == 2 ? (unsigned)DISP_KERNEL_WITH_KEYSET : 0u, \
                     DISP_ATEN_SCHEMA_##ID))

/* DISP_IMPL_ATEN - registers `fn` for ID on the library's key; a disp_status. */
#define DISP_IMPL_ATEN(LIB, ID, FN) disp_library_impl((LIB), DISP_ATEN_NAME_##ID, DISP_ATEN_KERNEL(ID, FN), NULL)

/* DISP_IMPL_ATEN_KEY - registers `fn` for ID on `key` (a disp_key); a disp_status. */
#define DISP_IMPL_ATEN_KEY(LIB, KEY, ID, FN) \
  disp_library_impl_key((LIB), DISP_ATEN_NAME_##ID, (KEY), DISP_ATEN_KERNEL(ID, FN), NULL)

#endif /* DISP_ATEN_IMPL_H */
