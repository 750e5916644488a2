/*
 * c_args_check.c - Note [NULL arguments] for the C arguments of a call.
 *
 * Note [Checking C arguments]
 * A boxed value says None with its tag, and boxed_check.c checks that tag
 * against the schema. A C argument is a bare pointer that an unboxed kernel
 * trusts, so disp_call, disp_redispatch, disp_call_kernel and the typed
 * entries check each pointer the schema does not let be None before anyone
 * reads it (the key-set computation included): a Tensor, str or Storage
 * must not be NULL, a list's data may be NULL only when its length is 0,
 * and a Tensor[] may hold NULL elements only when it is a Tensor?[]. The
 * inline fast path (DISP_CALL) does not come here: status.h documents that
 * its arguments must be right.
 */
#include <stdint.h>

#include "c_args_check_internal.h"
#include "error_internal.h"
#include "registry_internal.h"

typedef enum fault { FINE, NULL_POINTER, NULL_DATA, NULL_ELEMENT } fault;

/* What is wrong with *v as C type t; *len, *elem and *field say where. */
static fault find_fault(disp_ctype t, int nullable, int optional_elems, const disp_cvalue *v, size_t *len,
                        size_t *elem, const char **field) {
  const void *data = NULL;
  *field = ".data";
  switch (t) {
    case DISP_CT_TENSOR: return v->tensor ? FINE : NULL_POINTER;
    case DISP_CT_STR: return v->str || nullable ? FINE : NULL_POINTER;
    case DISP_CT_STORAGE: return v->storage || nullable ? FINE : NULL_POINTER;
    case DISP_CT_TENSOR_LIST:
      *len = v->tensors.len;
      if (*len > 0 && !v->tensors.data) return NULL_DATA;
      for (*elem = 0; !optional_elems && *elem < *len; ++*elem)
        if (!v->tensors.data[*elem]) return NULL_ELEMENT;
      return FINE;
    case DISP_CT_INT_LIST: data = v->ints.data, *len = v->ints.len; break;
    case DISP_CT_DOUBLE_LIST: data = v->doubles.data, *len = v->doubles.len; break;
    case DISP_CT_BOOL_LIST: data = v->bools.data, *len = v->bools.len; break;
    case DISP_CT_OPT_INT_LIST:
      if (!v->opt_ints.has_value) return FINE;
      data = v->opt_ints.value.data, *len = v->opt_ints.value.len, *field = ".value.data";
      break;
    default: return FINE;
  }
  return *len > 0 && !data ? NULL_DATA : FINE;
}

disp_status disp__check_c_arg(const char *fn, const disp_op *op, const disp_signature *sig, int i,
                              const disp_cvalue *v) {
  uint64_t bit = UINT64_C(1) << i;
  size_t len = 0, elem = 0;
  const char *field;
  fault f = find_fault(sig->args[i], (sig->nullable_args & bit) != 0, (sig->optional_elems & bit) != 0, v, &len,
                       &elem, &field);
  if (f == FINE) return DISP_OK;
  const disp_schema *s = disp_op_schema(op);
  const char *name = s ? disp_schema_argument_name(s, (size_t)i) : NULL;
  const char *type = s ? disp_schema_argument_type_str(s, (size_t)i) : NULL;
  name = name ? name : "?";
  type = type ? type : "?";
  if (f == NULL_POINTER)
    return disp__fail(DISP_ERR_INVALID_ARG, "%s: %s is NULL (argument %d of %s, type %s)", fn, name, i + 1, op->name,
                      type);
  if (f == NULL_DATA)
    return disp__fail(DISP_ERR_INVALID_ARG, "%s: %s%s is NULL with len %zu (argument %d of %s, type %s)", fn, name,
                      field, len, i + 1, op->name, type);
  return disp__fail(DISP_ERR_INVALID_ARG,
                    "%s: %s.data[%zu] is NULL (argument %d of %s, type %s: only a Tensor?[] may hold None)", fn, name,
                    elem, i + 1, op->name, type);
}
