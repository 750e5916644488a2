/*
 * signature.c - from a schema to the C signature of its unboxed kernels.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "error_internal.h"
#include "schema_internal.h"
#include "signature_internal.h"

const char *disp__ctype_name(disp_ctype t) {
  static const char *const names[] = {
      "(unsupported)", "disp_tensor *", "disp_tensor * (optional)", "disp_tensor_list",
      "int64_t", "disp_opt_int", "disp_int_list", "disp_opt_int_list", "double",
      "disp_opt_double", "disp_double_list", "bool", "disp_opt_bool", "disp_bool_list",
      "const char *", "disp_scalar", "int32_t", "disp_opt_device", "void * (generator)",
      "disp_storage *", "disp_tensor_vec"};
  return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}

static int is_enum32(disp_type_kind k) {
  return k == DISP_TYPE_SCALAR_TYPE || k == DISP_TYPE_LAYOUT || k == DISP_TYPE_MEMORY_FORMAT;
}

static int is_int(disp_type_kind k) { return k == DISP_TYPE_INT || k == DISP_TYPE_SYMINT; }

/* The C type of one argument type (returns use the same mapping). */
static disp_ctype classify(const disp_type *t) {
  disp_type_kind k = t->kind;
  if (k == DISP_TYPE_OPTIONAL) {
    const disp_type *e = t->elems[0];
    switch (e->kind) {
      case DISP_TYPE_TENSOR: return DISP_CT_OPT_TENSOR;
      case DISP_TYPE_INT: case DISP_TYPE_SYMINT: return DISP_CT_OPT_INT;
      case DISP_TYPE_FLOAT: return DISP_CT_OPT_DOUBLE;
      case DISP_TYPE_BOOL: return DISP_CT_OPT_BOOL;
      case DISP_TYPE_STR: return DISP_CT_STR;
      case DISP_TYPE_SCALAR: return DISP_CT_SCALAR;
      case DISP_TYPE_DEVICE: return DISP_CT_DEVICE;
      case DISP_TYPE_GENERATOR: return DISP_CT_GENERATOR;
      case DISP_TYPE_LIST:
        if (is_int(e->elems[0]->kind)) return DISP_CT_OPT_INT_LIST;
        return DISP_CT_UNSUPPORTED;
      default:
        return is_enum32(e->kind) ? DISP_CT_ENUM : DISP_CT_UNSUPPORTED;
    }
  }
  if (k == DISP_TYPE_LIST) {
    const disp_type *e = t->elems[0];
    if (e->kind == DISP_TYPE_TENSOR) return DISP_CT_TENSOR_LIST;
    if (e->kind == DISP_TYPE_OPTIONAL && e->elems[0]->kind == DISP_TYPE_TENSOR) return DISP_CT_TENSOR_LIST;
    if (is_int(e->kind)) return DISP_CT_INT_LIST;
    if (e->kind == DISP_TYPE_FLOAT) return DISP_CT_DOUBLE_LIST;
    if (e->kind == DISP_TYPE_BOOL) return DISP_CT_BOOL_LIST;
    return DISP_CT_UNSUPPORTED;
  }
  switch (k) {
    case DISP_TYPE_TENSOR: return DISP_CT_TENSOR;
    case DISP_TYPE_INT: case DISP_TYPE_SYMINT: return DISP_CT_INT;
    case DISP_TYPE_FLOAT: return DISP_CT_DOUBLE;
    case DISP_TYPE_BOOL: return DISP_CT_BOOL;
    case DISP_TYPE_STR: return DISP_CT_STR;
    case DISP_TYPE_SCALAR: return DISP_CT_SCALAR;
    case DISP_TYPE_DEVICE: return DISP_CT_DEVICE;
    case DISP_TYPE_GENERATOR: return DISP_CT_GENERATOR;
    case DISP_TYPE_STORAGE: return DISP_CT_STORAGE;
    default: return is_enum32(k) ? DISP_CT_ENUM : DISP_CT_UNSUPPORTED;
  }
}

static disp_ctype classify_return(const disp_type *t) {
  if (t->kind == DISP_TYPE_LIST && t->elems[0]->kind == DISP_TYPE_TENSOR) return DISP_CT_TENSOR_VEC;
  disp_ctype c = classify(t);
  /* A returned Tensor? is a possibly-undefined tensor: same C type. */
  return c == DISP_CT_OPT_TENSOR ? DISP_CT_TENSOR : c;
}

static int list_of_optionals(const disp_type *t) {
  return t->kind == DISP_TYPE_LIST && t->elems[0]->kind == DISP_TYPE_OPTIONAL;
}

disp_status disp__signature_new(const disp_schema *schema, disp_signature **out) {
  if (schema->num_args > DISP_MAX_ARGS || schema->num_rets > DISP_MAX_RETS)
    return disp__fail(DISP_ERR_SCHEMA, "%s has %zu arguments and %zu returns; libdispatch supports at most %d and %d",
                      schema->qualified, schema->num_args, schema->num_rets, DISP_MAX_ARGS, DISP_MAX_RETS);
  disp_signature *sig = disp__calloc(1, sizeof *sig);
  if (!sig) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory building the signature of %s", schema->qualified);
  sig->varargs = schema->is_vararg;
  sig->varrets = schema->is_varret;
  sig->supported = !schema->is_vararg && !schema->is_varret;
  sig->nargs = (int)schema->num_args;
  sig->nrets = (int)schema->num_rets;
  for (int i = 0; i < sig->nargs; i++)
    if (schema->args[i].name && !strcmp(schema->args[i].name, "output_mask")) sig->undefined_rets_ok = 1;
  for (int i = 0; i < sig->nargs; i++) {
    const disp_type *t = schema->args[i].type;
    disp_ctype c = classify(t);
    sig->args[i] = c;
    if (c == DISP_CT_UNSUPPORTED) sig->supported = 0;
    if (c == DISP_CT_TENSOR || c == DISP_CT_OPT_TENSOR || c == DISP_CT_TENSOR_LIST)
      sig->key_args |= UINT64_C(1) << i;
    if (t->kind == DISP_TYPE_OPTIONAL) sig->nullable_args |= UINT64_C(1) << i;
    if (c == DISP_CT_SCALAR || c == DISP_CT_ENUM || c == DISP_CT_DEVICE || c == DISP_CT_GENERATOR)
      sig->box_unsure |= UINT64_C(1) << i;
    if (list_of_optionals(t)) sig->optional_elems |= UINT64_C(1) << i;
  }
  for (int i = 0; i < sig->nrets; i++) {
    disp_ctype c = classify_return(schema->rets[i].type);
    sig->rets[i] = c;
    if (c == DISP_CT_UNSUPPORTED) sig->supported = 0;
    if (schema->rets[i].type->kind == DISP_TYPE_OPTIONAL) sig->nullable_rets |= UINT64_C(1) << i;
  }
  sig->all_tensors = sig->supported;
  for (int i = 0; i < sig->nargs; i++) sig->all_tensors &= sig->args[i] == DISP_CT_TENSOR;
  for (int i = 0; i < sig->nrets; i++) sig->all_tensors &= sig->rets[i] == DISP_CT_TENSOR;
  if (sig->supported) {
    disp_status st = disp__ffi_prepare(sig, schema->qualified);
    if (st != DISP_OK) {
      disp__free(sig);
      return st;
    }
  }
  *out = sig;
  return DISP_OK;
}

void disp__signature_free(disp_signature *sig) { disp__free(sig); }

int disp__signature_same_c(const disp_signature *a, const disp_signature *b) {
  if (a == b) return 1;
  if (a->nargs != b->nargs || a->nrets != b->nrets || a->supported != b->supported) return 0;
  for (int i = 0; i < a->nargs; i++)
    if (a->args[i] != b->args[i]) return 0;
  for (int i = 0; i < a->nrets; i++)
    if (a->rets[i] != b->rets[i]) return 0;
  return 1;
}
