/*
 * ffi_bridge.c - calling unboxed kernels whose C signature is known only at
 * run time, with libffi.
 *
 * Built-in operators never come here (their adapters are generated C). This
 * path serves operators a program or plugin defines at run time: a boxed
 * call of their unboxed kernel goes through ffi_call over the ffi_cif that
 * the operator's def prepared once.
 */
#include <stddef.h>
#include <string.h>

#include "error_internal.h"
#include "signature_internal.h"

/* libffi descriptions of the value structs of disp/value.h. Each element
 * array is NULL-terminated; size and alignment are filled by ffi_prep_cif. */
#define STRUCT_TYPE(name, ...)                                            \
  static ffi_type *name##_elems[] = {__VA_ARGS__, NULL};                 \
  static ffi_type name = {0, 0, FFI_TYPE_STRUCT, name##_elems}

STRUCT_TYPE(t_list, &ffi_type_pointer, &ffi_type_uint64);           /* {ptr, size_t} lists */
STRUCT_TYPE(t_opt_int, &ffi_type_sint64, &ffi_type_uint8);
STRUCT_TYPE(t_opt_double, &ffi_type_double, &ffi_type_uint8);
STRUCT_TYPE(t_opt_bool, &ffi_type_uint8, &ffi_type_uint8);
STRUCT_TYPE(t_opt_int_list, &t_list, &ffi_type_uint8);
STRUCT_TYPE(t_opt_device, &ffi_type_sint32, &ffi_type_sint32, &ffi_type_uint8);
/* disp_scalar: an enum, then a union of int64/double/bool. A union mixing
 * an integer and a double in one eightbyte is passed in integer registers on
 * the ABIs we build for, exactly like an int64, so it is described as one. */
STRUCT_TYPE(t_scalar, &ffi_type_sint32, &ffi_type_sint64);
STRUCT_TYPE(t_keyset, &ffi_type_uint64);

_Static_assert(sizeof(size_t) == 8, "the list descriptions assume a 64-bit size_t");
_Static_assert(sizeof(disp_scalar) == 16 && offsetof(disp_scalar, v) == 8,
               "t_scalar must match disp_scalar's layout");

static ffi_type *ffi_type_of(disp_ctype t) {
  switch (t) {
    case DISP_CT_TENSOR: case DISP_CT_OPT_TENSOR: case DISP_CT_STR: case DISP_CT_GENERATOR:
    case DISP_CT_STORAGE:
      return &ffi_type_pointer;
    case DISP_CT_TENSOR_LIST: case DISP_CT_INT_LIST: case DISP_CT_DOUBLE_LIST: case DISP_CT_BOOL_LIST:
      return &t_list;
    case DISP_CT_INT: return &ffi_type_sint64;
    case DISP_CT_OPT_INT: return &t_opt_int;
    case DISP_CT_OPT_INT_LIST: return &t_opt_int_list;
    case DISP_CT_DOUBLE: return &ffi_type_double;
    case DISP_CT_OPT_DOUBLE: return &t_opt_double;
    case DISP_CT_BOOL: return &ffi_type_uint8;
    case DISP_CT_OPT_BOOL: return &t_opt_bool;
    case DISP_CT_SCALAR: return &t_scalar;
    case DISP_CT_ENUM: return &ffi_type_sint32;
    case DISP_CT_DEVICE: return &t_opt_device;
    default: return NULL;
  }
}

disp_status disp__ffi_prepare(disp_signature *sig, const char *op_name) {
  for (int with_ks = 0; with_ks < 2; with_ks++) {
    ffi_type **at = sig->atypes[with_ks];
    unsigned n = 0;
    if (with_ks) at[n++] = &t_keyset;
    for (int i = 0; i < sig->nargs; i++) {
      ffi_type *ft = ffi_type_of(sig->args[i]);
      if (!ft) return disp__fail(DISP_ERR_SCHEMA, "%s: argument %d has no C type", op_name, i + 1);
      at[n++] = ft;
    }
    for (int i = 0; i < sig->nrets; i++) at[n++] = &ffi_type_pointer; /* out-pointers */
    if (ffi_prep_cif(&sig->cif[with_ks], FFI_DEFAULT_ABI, n, &ffi_type_sint32, at) != FFI_OK)
      return disp__fail(DISP_ERR_SCHEMA, "%s: libffi cannot describe its C signature", op_name);
  }
  return DISP_OK;
}

disp_status disp__ffi_call_unboxed(const disp_signature *sig, disp_fn fn, int with_keyset,
                                   disp_keyset ks, disp_cvalue *args, void **outs) {
  void *avalues[1 + DISP_MAX_ARGS + DISP_MAX_RETS];
  unsigned n = 0;
  if (with_keyset) avalues[n++] = &ks;
  for (int i = 0; i < sig->nargs; i++) avalues[n++] = &args[i];
  /* Each out-pointer is an argument: libffi wants the address of each. */
  for (int i = 0; i < sig->nrets; i++) avalues[n++] = &outs[i];
  ffi_arg result = 0;
  ffi_call((ffi_cif *)&sig->cif[with_keyset != 0], fn, &result, avalues);
  return (disp_status)(int32_t)result;
}
