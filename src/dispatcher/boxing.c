/*
 * boxing.c - moving arguments and returns between C values and the stack.
 *
 * Unboxing borrows: a C value viewed from a stack value points into it (the
 * tensor pointer, the list array), so the stack must outlive the call.
 * Boxing copies: the stack takes its own references and arrays.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "tensor/tensor_ref_internal.h"
#include "error_internal.h"
#include "signature_internal.h"

void disp__cvalue_from_va(disp_ctype t, va_list *ap, disp_cvalue *out) {
  memset(out, 0, sizeof *out);
  switch (t) {
    case DISP_CT_TENSOR: case DISP_CT_OPT_TENSOR: out->tensor = va_arg(*ap, disp_tensor *); break;
    case DISP_CT_TENSOR_LIST: out->tensors = va_arg(*ap, disp_tensor_list); break;
    case DISP_CT_INT: out->i = va_arg(*ap, int64_t); break;
    case DISP_CT_OPT_INT: out->opt_i = va_arg(*ap, disp_opt_int); break;
    case DISP_CT_INT_LIST: out->ints = va_arg(*ap, disp_int_list); break;
    case DISP_CT_OPT_INT_LIST: out->opt_ints = va_arg(*ap, disp_opt_int_list); break;
    case DISP_CT_DOUBLE: out->d = va_arg(*ap, double); break;
    case DISP_CT_OPT_DOUBLE: out->opt_d = va_arg(*ap, disp_opt_double); break;
    case DISP_CT_DOUBLE_LIST: out->doubles = va_arg(*ap, disp_double_list); break;
    case DISP_CT_BOOL: out->b = va_arg(*ap, int) != 0; break; /* promoted to int */
    case DISP_CT_OPT_BOOL: out->opt_b = va_arg(*ap, disp_opt_bool); break;
    case DISP_CT_BOOL_LIST: out->bools = va_arg(*ap, disp_bool_list); break;
    case DISP_CT_STR: out->str = va_arg(*ap, const char *); break;
    case DISP_CT_SCALAR: out->scalar = va_arg(*ap, disp_scalar); break;
    case DISP_CT_ENUM: out->e = va_arg(*ap, int32_t); break;
    case DISP_CT_DEVICE: out->device = va_arg(*ap, disp_opt_device); break;
    case DISP_CT_GENERATOR: out->ptr = va_arg(*ap, void *); break;
    case DISP_CT_STORAGE: out->storage = va_arg(*ap, disp_storage *); break;
    case DISP_CT_TENSOR_VEC: case DISP_CT_UNSUPPORTED: break;
  }
}

disp_status disp__cvalue_box(disp_ctype t, const disp_cvalue *v, disp_stack *s) {
  switch (t) {
    case DISP_CT_TENSOR: case DISP_CT_OPT_TENSOR: return disp_stack_push_tensor(s, v->tensor);
    case DISP_CT_TENSOR_LIST: return disp_stack_push_tensor_list(s, v->tensors.data, v->tensors.len);
    case DISP_CT_INT: return disp_stack_push_int(s, v->i);
    case DISP_CT_OPT_INT: return v->opt_i.has_value ? disp_stack_push_int(s, v->opt_i.value) : disp_stack_push_none(s);
    case DISP_CT_INT_LIST: return disp_stack_push_int_list(s, v->ints.data, v->ints.len);
    case DISP_CT_OPT_INT_LIST:
      return v->opt_ints.has_value ? disp_stack_push_int_list(s, v->opt_ints.value.data, v->opt_ints.value.len)
                                   : disp_stack_push_none(s);
    case DISP_CT_DOUBLE: return disp_stack_push_double(s, v->d);
    case DISP_CT_OPT_DOUBLE: return v->opt_d.has_value ? disp_stack_push_double(s, v->opt_d.value) : disp_stack_push_none(s);
    case DISP_CT_DOUBLE_LIST: return disp_stack_push_double_list(s, v->doubles.data, v->doubles.len);
    case DISP_CT_BOOL: return disp_stack_push_bool(s, v->b);
    case DISP_CT_OPT_BOOL: return v->opt_b.has_value ? disp_stack_push_bool(s, v->opt_b.value) : disp_stack_push_none(s);
    case DISP_CT_BOOL_LIST: return disp_stack_push_bool_list(s, v->bools.data, v->bools.len);
    case DISP_CT_STR: return disp_stack_push_string(s, v->str);
    case DISP_CT_SCALAR: return disp_stack_push_scalar(s, v->scalar);
    case DISP_CT_ENUM: return v->e == -1 ? disp_stack_push_none(s) : disp_stack_push_int(s, v->e);
    case DISP_CT_DEVICE:
      return v->device.has_value ? disp_stack_push_device(s, v->device.type, v->device.index) : disp_stack_push_none(s);
    case DISP_CT_GENERATOR: return disp_stack_push_generator(s, v->ptr);
    case DISP_CT_STORAGE: return disp_stack_push_storage(s, v->storage);
    case DISP_CT_TENSOR_VEC: case DISP_CT_UNSUPPORTED: break;
  }
  return disp__fail(DISP_ERR_TYPE, "cannot box a value of C type %s", disp__ctype_name(t));
}

static disp_status wrong(disp_ctype t, const disp_value *v) {
  return disp__fail(DISP_ERR_TYPE, "expected a value of type %s but got %s", disp__ctype_name(t),
                    disp_value_tag_name(v->tag));
}

disp_status disp__cvalue_unbox(disp_ctype t, const disp_value *v, disp_cvalue *out) {
  memset(out, 0, sizeof *out);
  int none = v->tag == DISP_VALUE_NONE;
  switch (t) {
    case DISP_CT_TENSOR:
      if (v->tag != DISP_VALUE_TENSOR) return wrong(t, v);
      out->tensor = v->u.tensor;
      return DISP_OK;
    case DISP_CT_OPT_TENSOR:
      if (!none && v->tag != DISP_VALUE_TENSOR) return wrong(t, v);
      out->tensor = none ? NULL : v->u.tensor;
      return DISP_OK;
    case DISP_CT_TENSOR_LIST:
      if (v->tag != DISP_VALUE_TENSOR_LIST) return wrong(t, v);
      out->tensors.data = v->u.tensors.data;
      out->tensors.len = v->u.tensors.len;
      return DISP_OK;
    case DISP_CT_INT:
      if (v->tag != DISP_VALUE_INT) return wrong(t, v);
      out->i = v->u.i;
      return DISP_OK;
    case DISP_CT_OPT_INT:
      if (!none && v->tag != DISP_VALUE_INT) return wrong(t, v);
      out->opt_i.has_value = !none;
      out->opt_i.value = none ? 0 : v->u.i;
      return DISP_OK;
    case DISP_CT_INT_LIST:
    case DISP_CT_OPT_INT_LIST: {
      if (t == DISP_CT_OPT_INT_LIST && none) return DISP_OK;
      if (v->tag != DISP_VALUE_INT_LIST) return wrong(t, v);
      disp_int_list l = {v->u.ints.data, v->u.ints.len};
      if (t == DISP_CT_INT_LIST) {
        out->ints = l;
      } else {
        out->opt_ints.value = l;
        out->opt_ints.has_value = true;
      }
      return DISP_OK;
    }
    case DISP_CT_DOUBLE:
      /* PyTorch accepts an int where a float is expected. */
      if (v->tag == DISP_VALUE_INT) out->d = (double)v->u.i;
      else if (v->tag == DISP_VALUE_DOUBLE) out->d = v->u.d;
      else return wrong(t, v);
      return DISP_OK;
    case DISP_CT_OPT_DOUBLE:
      if (none) return DISP_OK;
      if (v->tag == DISP_VALUE_INT) out->opt_d.value = (double)v->u.i;
      else if (v->tag == DISP_VALUE_DOUBLE) out->opt_d.value = v->u.d;
      else return wrong(t, v);
      out->opt_d.has_value = true;
      return DISP_OK;
    case DISP_CT_DOUBLE_LIST:
      if (v->tag != DISP_VALUE_DOUBLE_LIST) return wrong(t, v);
      out->doubles.data = v->u.doubles.data;
      out->doubles.len = v->u.doubles.len;
      return DISP_OK;
    case DISP_CT_BOOL:
      if (v->tag != DISP_VALUE_BOOL) return wrong(t, v);
      out->b = v->u.b;
      return DISP_OK;
    case DISP_CT_OPT_BOOL:
      if (!none && v->tag != DISP_VALUE_BOOL) return wrong(t, v);
      out->opt_b.has_value = !none;
      out->opt_b.value = none ? false : v->u.b;
      return DISP_OK;
    case DISP_CT_BOOL_LIST:
      if (v->tag != DISP_VALUE_BOOL_LIST) return wrong(t, v);
      out->bools.data = v->u.bools.data;
      out->bools.len = v->u.bools.len;
      return DISP_OK;
    case DISP_CT_STR:
      if (!none && v->tag != DISP_VALUE_STRING) return wrong(t, v);
      out->str = none ? NULL : v->u.str;
      return DISP_OK;
    case DISP_CT_SCALAR:
      if (none) out->scalar.kind = DISP_SCALAR_NONE;
      else if (v->tag == DISP_VALUE_INT) out->scalar = disp_scalar_int(v->u.i);
      else if (v->tag == DISP_VALUE_DOUBLE) out->scalar = disp_scalar_double(v->u.d);
      else if (v->tag == DISP_VALUE_BOOL) out->scalar = disp_scalar_bool(v->u.b);
      else return wrong(t, v);
      return DISP_OK;
    case DISP_CT_ENUM:
      if (!none && v->tag != DISP_VALUE_INT) return wrong(t, v);
      out->e = none ? -1 : (int32_t)v->u.i;
      return DISP_OK;
    case DISP_CT_DEVICE:
      if (!none && v->tag != DISP_VALUE_DEVICE) return wrong(t, v);
      out->device.has_value = !none;
      if (!none) {
        out->device.type = v->u.device.type;
        out->device.index = v->u.device.index;
      }
      return DISP_OK;
    case DISP_CT_GENERATOR:
      if (!none && v->tag != DISP_VALUE_GENERATOR) return wrong(t, v);
      out->ptr = none ? NULL : v->u.ptr;
      return DISP_OK;
    case DISP_CT_STORAGE:
      if (v->tag != DISP_VALUE_STORAGE) return wrong(t, v);
      out->storage = v->u.storage;
      return DISP_OK;
    case DISP_CT_TENSOR_VEC: case DISP_CT_UNSUPPORTED: break;
  }
  return wrong(t, v);
}

disp_status disp__cvalue_box_return(disp_ctype t, disp_cvalue *v, disp_stack *s) {
  disp_status st;
  switch (t) {
    case DISP_CT_TENSOR:
      st = disp_stack_push_tensor_steal(s, v->tensor);
      v->tensor = NULL;
      return st;
    case DISP_CT_TENSOR_VEC: {
      disp_value val = {.tag = DISP_VALUE_TENSOR_LIST};
      val.u.tensors.data = v->vec.data;
      val.u.tensors.len = v->vec.len;
      if (!val.u.tensors.data) val.u.tensors.data = disp__calloc(1, sizeof(disp_tensor *));
      memset(&v->vec, 0, sizeof v->vec);
      return disp_stack_push_value_steal(s, &val);
    }
    default:
      return disp__cvalue_box(t, v, s);
  }
}

void disp__cvalue_release_return(disp_ctype t, disp_cvalue *v) {
  if (t == DISP_CT_TENSOR) {
    disp_tensor_release(v->tensor);
    v->tensor = NULL;
  } else if (t == DISP_CT_TENSOR_VEC) {
    for (size_t i = 0; i < v->vec.len; i++) disp_tensor_release(v->vec.data[i]);
    disp__free(v->vec.data);
    memset(&v->vec, 0, sizeof v->vec);
  }
}

disp_status disp__value_to_out(disp_ctype t, disp_value *v, void *out_ptr) {
  switch (t) {
    case DISP_CT_TENSOR:
      if (v->tag != DISP_VALUE_TENSOR && v->tag != DISP_VALUE_NONE) return wrong(t, v);
      *(disp_tensor **)out_ptr = v->tag == DISP_VALUE_TENSOR ? v->u.tensor : NULL;
      memset(v, 0, sizeof *v);
      return DISP_OK;
    case DISP_CT_TENSOR_VEC: {
      if (v->tag != DISP_VALUE_TENSOR_LIST) return wrong(t, v);
      disp_tensor_vec *vec = out_ptr;
      vec->data = v->u.tensors.data;
      vec->len = v->u.tensors.len;
      memset(v, 0, sizeof *v);
      return DISP_OK;
    }
    case DISP_CT_INT:
      if (v->tag != DISP_VALUE_INT) return wrong(t, v);
      *(int64_t *)out_ptr = v->u.i;
      return DISP_OK;
    case DISP_CT_DOUBLE:
      if (v->tag != DISP_VALUE_DOUBLE && v->tag != DISP_VALUE_INT) return wrong(t, v);
      *(double *)out_ptr = v->tag == DISP_VALUE_DOUBLE ? v->u.d : (double)v->u.i;
      return DISP_OK;
    case DISP_CT_BOOL:
      if (v->tag != DISP_VALUE_BOOL) return wrong(t, v);
      *(bool *)out_ptr = v->u.b;
      return DISP_OK;
    default: {
      disp_cvalue c;
      disp_status st = disp__cvalue_unbox(t, v, &c);
      if (st != DISP_OK) return st;
      switch (t) {
        case DISP_CT_SCALAR: *(disp_scalar *)out_ptr = c.scalar; return DISP_OK;
        case DISP_CT_ENUM: *(int32_t *)out_ptr = c.e; return DISP_OK;
        case DISP_CT_DEVICE: *(disp_opt_device *)out_ptr = c.device; return DISP_OK;
        default: break;
      }
      return disp__fail(DISP_ERR_TYPE, "a return of C type %s cannot be handed out unboxed",
                        disp__ctype_name(t));
    }
  }
}

disp_keyset disp__value_keys(const disp_value *v) {
  disp_keyset ks = {0};
  if (v->tag == DISP_VALUE_TENSOR) return disp__tensor_head_keys(v->u.tensor);
  if (v->tag == DISP_VALUE_TENSOR_LIST)
    for (size_t i = 0; i < v->u.tensors.len; i++)
      if (v->u.tensors.data[i]) ks.repr |= disp_tensor_keyset(v->u.tensors.data[i]).repr;
  return ks;
}

disp_keyset disp__cvalue_keys(disp_ctype t, const disp_cvalue *v) {
  disp_keyset ks = {0};
  if ((t == DISP_CT_TENSOR || t == DISP_CT_OPT_TENSOR) && v->tensor) return disp__tensor_head_keys(v->tensor);
  if (t == DISP_CT_TENSOR_LIST)
    for (size_t i = 0; i < v->tensors.len; i++)
      if (v->tensors.data[i]) ks.repr |= disp_tensor_keyset(v->tensors.data[i]).repr;
  return ks;
}

disp_status disp__push_returns(disp_stack *stack, disp_status st, disp_cvalue *rets,
                               const disp_ctype *types, int n) {
  for (int i = 0; i < n; i++) {
    if (st == DISP_OK) {
      st = disp__cvalue_box_return(types[i], &rets[i], stack);
      if (st != DISP_OK) disp_stack_drop(stack, (size_t)i);
    } else {
      disp__cvalue_release_return(types[i], &rets[i]);
    }
  }
  return st;
}
