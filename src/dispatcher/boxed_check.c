/*
 * boxed_check.c - what a boxed call's stack must hold, checked against the
 * schema before anything touches it.
 *
 * Note [Checking boxed values]
 * A boxed value carries a tag; an unboxed kernel trusts the C type its
 * signature gives. Between the two the dispatcher must check every tag once,
 * as PyTorch's IValue accessors do, or a `None` where a Tensor belongs
 * becomes a NULL pointer inside a kernel. Arguments are checked when a boxed
 * call starts (disp_call_boxed, disp_redispatch_boxed, and the packing of C
 * arguments for a boxed kernel), so adapters, libffi and boxed kernels only
 * ever see well-typed stacks (packed C arguments already passed the C check
 * of c_args_check.c, so only the types whose box that check does not vouch
 * for, signature.c's box_unsure, are checked again); what a boxed kernel leaves behind is checked
 * against the declared returns before anyone reads it. The rules are those
 * of unboxing (boxing.c): None only for optional types, an int where a float
 * is expected, int/float/bool for a Scalar, Tensor[] elements None only in a
 * Tensor?[]. Types without a C mapping (Dict, ...) are the kernel's to check.
 */
#include <stdint.h>
#include <stdio.h>

#include "tensor/tensor_ref_internal.h"
#include "error_internal.h"
#include "registry_internal.h"
#include "boxed_check_internal.h"
#include "returns_check_internal.h"
#include "stack_internal.h"

/* Why a value does not fit, for the message. */
typedef enum misfit_kind { WRONG_TAG, NULL_PAYLOAD, NONE_ELEMENT, OUT_OF_RANGE } misfit_kind;
typedef struct misfit {
  misfit_kind kind;
  const disp_value *value;
  size_t element; /* NONE_ELEMENT: which one */
} misfit;

static int fail_as(misfit *why, misfit_kind kind) {
  why->kind = kind;
  return 0;
}

/* A list value's array may only be NULL when it is empty. */
static int list_ok(const void *data, size_t len, misfit *why) {
  return len == 0 || data != NULL ? 1 : fail_as(why, NULL_PAYLOAD);
}

static int tensors_ok(const disp_value *v, int optional_elems, misfit *why) {
  if (!list_ok(v->u.tensors.data, v->u.tensors.len, why)) return 0;
  if (optional_elems) return 1;
  for (size_t i = 0; i < v->u.tensors.len; i++)
    if (!v->u.tensors.data[i]) {
      why->element = i;
      return fail_as(why, NONE_ELEMENT);
    }
  return 1;
}

/* Nonzero when `v` may be passed where C type `t` is expected; else *why says why. */
static int value_fits(disp_ctype t, int nullable, int optional_elems, const disp_value *v, misfit *why) {
  why->kind = WRONG_TAG;
  why->value = v;
  if (v->tag == DISP_VALUE_NONE) return nullable || t == DISP_CT_UNSUPPORTED;
  switch (t) {
    case DISP_CT_TENSOR: case DISP_CT_OPT_TENSOR:
      if (v->tag != DISP_VALUE_TENSOR) return 0;
      return v->u.tensor ? 1 : fail_as(why, NULL_PAYLOAD);
    case DISP_CT_TENSOR_LIST: case DISP_CT_TENSOR_VEC:
      return v->tag == DISP_VALUE_TENSOR_LIST && tensors_ok(v, optional_elems, why);
    case DISP_CT_INT: case DISP_CT_OPT_INT:
      return v->tag == DISP_VALUE_INT;
    case DISP_CT_INT_LIST: case DISP_CT_OPT_INT_LIST:
      return v->tag == DISP_VALUE_INT_LIST && list_ok(v->u.ints.data, v->u.ints.len, why);
    case DISP_CT_DOUBLE: case DISP_CT_OPT_DOUBLE: /* as unboxing: an int is a float */
      return v->tag == DISP_VALUE_DOUBLE || v->tag == DISP_VALUE_INT;
    case DISP_CT_DOUBLE_LIST:
      return v->tag == DISP_VALUE_DOUBLE_LIST && list_ok(v->u.doubles.data, v->u.doubles.len, why);
    case DISP_CT_BOOL: case DISP_CT_OPT_BOOL:
      return v->tag == DISP_VALUE_BOOL;
    case DISP_CT_BOOL_LIST:
      return v->tag == DISP_VALUE_BOOL_LIST && list_ok(v->u.bools.data, v->u.bools.len, why);
    case DISP_CT_STR:
      if (v->tag != DISP_VALUE_STRING) return 0;
      return v->u.str ? 1 : fail_as(why, NULL_PAYLOAD);
    case DISP_CT_SCALAR:
      return v->tag == DISP_VALUE_INT || v->tag == DISP_VALUE_DOUBLE || v->tag == DISP_VALUE_BOOL;
    case DISP_CT_ENUM: /* the C type is an int32_t: a wider value would be cut silently */
      if (v->tag != DISP_VALUE_INT) return 0;
      return v->u.i >= 0 && v->u.i <= INT32_MAX ? 1 : fail_as(why, OUT_OF_RANGE);
    case DISP_CT_DEVICE:
      return v->tag == DISP_VALUE_DEVICE;
    case DISP_CT_GENERATOR:
      return v->tag == DISP_VALUE_GENERATOR;
    case DISP_CT_STORAGE:
      if (v->tag != DISP_VALUE_STORAGE) return 0;
      return v->u.storage ? 1 : fail_as(why, NULL_PAYLOAD);
    case DISP_CT_UNSUPPORTED:
      return 1;
  }
  return 0;
}

/* "op: argument 'mat2' (position 2) must be Tensor, not None", and the like. */
static disp_status misfit_fail(disp_status st, const char *op_name, const char *what, const char *type,
                               const misfit *why) {
  const char *actual = disp_value_tag_name(why->value->tag);
  switch (why->kind) {
    case NONE_ELEMENT:
      return disp__fail(st, "%s: %s must be %s, but its element %zu is None", op_name, what, type, why->element + 1);
    case NULL_PAYLOAD:
      return disp__fail(st, "%s: %s must be %s, not a %s value holding NULL", op_name, what, type, actual);
    case OUT_OF_RANGE:
      return disp__fail(st, "%s: %s must be %s, not the int %lld (out of range)", op_name, what, type,
                        (long long)why->value->u.i);
    case WRONG_TAG: break;
  }
  return disp__fail(st, "%s: %s must be %s, not %s", op_name, what, type, actual);
}

static disp_status arg_fail(const disp_op *op, int i, const misfit *why) {
  const disp_schema *s = disp_op_schema(op);
  char what[160];
  const char *name = s ? disp_schema_argument_name(s, (size_t)i) : NULL;
  snprintf(what, sizeof what, "argument '%s' (position %d)", name ? name : "?", i + 1);
  const char *type = s ? disp_schema_argument_type_str(s, (size_t)i) : NULL;
  return misfit_fail(DISP_ERR_TYPE, op->name, what, type ? type : "?", why);
}

static int arg_fits(const disp_signature *sig, int i, const disp_value *v, misfit *why) {
  uint64_t bit = UINT64_C(1) << i;
  return value_fits(sig->args[i], (sig->nullable_args & bit) != 0, (sig->optional_elems & bit) != 0, v, why);
}

disp_status disp__check_boxed_args(const disp_op *op, const disp_signature *sig, const disp_value *av,
                                   disp_keyset *keys) {
  uint64_t ks = 0;
  for (int i = 0; i < sig->nargs; i++) {
    misfit why;
    if (!arg_fits(sig, i, &av[i], &why)) return arg_fail(op, i, &why);
    if (sig->key_args & (UINT64_C(1) << i)) ks |= disp__value_keys(&av[i]).repr;
  }
  keys->repr = ks;
  return DISP_OK;
}

disp_status disp__check_boxed_some(const disp_op *op, const disp_signature *sig, const disp_value *av,
                                   uint64_t which) {
  for (int i = 0; i < sig->nargs; i++) {
    misfit why;
    if ((which & (UINT64_C(1) << i)) && !arg_fits(sig, i, &av[i], &why)) return arg_fail(op, i, &why);
  }
  return DISP_OK;
}

disp_status disp__check_boxed_count(const disp_op *op, const disp_signature *sig, const disp_stack *stack) {
  size_t have = disp_stack_size(stack);
  if (have >= (size_t)sig->nargs) return DISP_OK;
  return disp__fail(DISP_ERR_INVALID_ARG, "%s expects %d argument%s on the stack, found %zu", op->name, sig->nargs,
                    sig->nargs == 1 ? "" : "s", have);
}

disp_status disp__check_boxed_returns(const disp_op *op, const disp_signature *sig, disp_stack *stack,
                                      size_t base, disp_keyset ks) {
  if (sig->varrets) return DISP_OK;
  size_t have = disp_stack_size(stack);
  if (have < base)
    return disp__fail(DISP_ERR_KERNEL, "%s: the kernel took %zu values off the stack below its arguments",
                      op->name, base - have);
  if (have - base != (size_t)sig->nrets)
    return disp__fail(DISP_ERR_KERNEL, "%s: the kernel left %zu value%s on the stack, but the schema declares %d return%s",
                      op->name, have - base, have - base == 1 ? "" : "s", sig->nrets, sig->nrets == 1 ? "" : "s");
  for (int i = 0; i < sig->nrets; i++) {
    disp_ctype t = sig->rets[i];
    /* A returned Tensor is undefined (None) only where output_mask allows it. */
    const disp_value *v = &stack->v[base + (size_t)i];
    if (t == DISP_CT_TENSOR && ((v->tag == DISP_VALUE_NONE && sig->undefined_rets_ok) ||
                                (v->tag == DISP_VALUE_TENSOR && v->u.tensor)))
      continue; /* the common case, inline */
    int optional = (sig->nullable_rets & (UINT64_C(1) << i)) != 0; /* Tensor? */
    if (t == DISP_CT_TENSOR && !optional && (v->tag == DISP_VALUE_NONE || v->tag == DISP_VALUE_TENSOR))
      return disp__no_tensor_returned(op, ks, 0, i);
    int nullable = t == DISP_CT_TENSOR || (sig->nullable_rets & (UINT64_C(1) << i)) != 0;
    misfit why;
    if (value_fits(t, nullable, 1, v, &why)) continue;
    const disp_schema *s = disp_op_schema(op);
    const char *type = s ? disp_schema_return_type_str(s, (size_t)i) : NULL;
    char what[64];
    snprintf(what, sizeof what, "the kernel's return %d", i + 1);
    return misfit_fail(DISP_ERR_KERNEL, op->name, what, type ? type : "?", &why);
  }
  return DISP_OK;
}
