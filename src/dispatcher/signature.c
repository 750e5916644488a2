/*
 * signature.c - from a schema to the C signature of its unboxed kernels.
 */
#include <stdlib.h>
#include <string.h>

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

disp_status disp__signature_new(const disp_schema *schema, disp_signature **out) {
  disp_signature *sig = calloc(1, sizeof *sig);
  if (!sig) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory building the signature of %s", schema->qualified);
  sig->supported = !schema->is_vararg && !schema->is_varret && schema->num_args <= DISP_MAX_ARGS &&
                   schema->num_rets <= DISP_MAX_RETS;
  sig->nargs = (int)(schema->num_args <= DISP_MAX_ARGS ? schema->num_args : DISP_MAX_ARGS);
  sig->nrets = (int)(schema->num_rets <= DISP_MAX_RETS ? schema->num_rets : DISP_MAX_RETS);
  for (int i = 0; i < sig->nargs; i++) {
    disp_ctype c = classify(schema->args[i].type);
    sig->args[i] = c;
    if (c == DISP_CT_UNSUPPORTED) sig->supported = 0;
    if (c == DISP_CT_TENSOR || c == DISP_CT_OPT_TENSOR || c == DISP_CT_TENSOR_LIST)
      sig->key_args |= UINT64_C(1) << i;
  }
  for (int i = 0; i < sig->nrets; i++) {
    disp_ctype c = classify_return(schema->rets[i].type);
    sig->rets[i] = c;
    if (c == DISP_CT_UNSUPPORTED) sig->supported = 0;
  }
  if (sig->supported) {
    disp_status st = disp__ffi_prepare(sig, schema->qualified);
    if (st != DISP_OK) {
      free(sig);
      return st;
    }
  }
  *out = sig;
  return DISP_OK;
}

void disp__signature_free(disp_signature *sig) { free(sig); }
