/*
 * promotion.c - PyTorch's type promotion: promoteTypes, result_type, and
 * the wrapped-number mark of zero-dim tensors made from Python scalars.
 */
#include "disp/promotion.h"

#include "aten_internal.h"
#include "argcheck_internal.h"
#include "tensor_iter.h"

/* Rank inside a category; integers also need signedness. */
static int float_rank(disp_dtype t) {
  switch (t) {
  case DISP_DTYPE_FLOAT16: case DISP_DTYPE_BFLOAT16: return 0;
  case DISP_DTYPE_FLOAT32: return 1;
  default: return 2;
  }
}

disp_status disp_promote_types(disp_dtype a, disp_dtype b, disp_dtype *out) {
  DISP_REFUSE_NULL(out);
  if (!disp__dtype_valid(a) || !disp__dtype_valid(b))
    return disp_set_error(DISP_ERR_INVALID_ARG, "promote_types: invalid dtype");
  if (a == b) {
    *out = a;
    return DISP_OK;
  }
  if (disp_dtype_is_quantized(a) || disp_dtype_is_quantized(b))
    return disp_set_error(DISP_ERR_TYPE, "Promotion for %s types is not supported, attempted to promote %s and %s",
                          disp_dtype_torch_name(disp_dtype_is_quantized(a) ? a : b),
                          disp_dtype_torch_name(a), disp_dtype_torch_name(b));
  if (a == DISP_DTYPE_BOOL) {
    *out = b;
    return DISP_OK;
  }
  if (b == DISP_DTYPE_BOOL) {
    *out = a;
    return DISP_OK;
  }
  int fa = disp_dtype_is_floating(a), fb = disp_dtype_is_floating(b);
  if (fa && fb) {
    int ra = float_rank(a), rb = float_rank(b);
    *out = ra == 0 && rb == 0 ? DISP_DTYPE_FLOAT32 : ra > rb ? a : b;
    return DISP_OK;
  }
  if (fa || fb) {
    *out = fa ? a : b;
    return DISP_OK;
  }
  /* two different integer types */
  size_t sa = disp_dtype_itemsize(a), sb = disp_dtype_itemsize(b);
  if (a == DISP_DTYPE_UINT8 || b == DISP_DTYPE_UINT8) {
    disp_dtype other = a == DISP_DTYPE_UINT8 ? b : a;
    *out = other == DISP_DTYPE_INT8 ? DISP_DTYPE_INT16 : other;
    return DISP_OK;
  }
  *out = sa >= sb ? a : b;
  return DISP_OK;
}

/* ---- result_type ----------------------------------------------------------- */

#define UNDEF (-1)

static int promote_skip_undefined(int a, int b) {
  if (a == UNDEF) return b;
  if (b == UNDEF) return a;
  disp_dtype r = DISP_DTYPE_FLOAT32;
  if (disp_promote_types((disp_dtype)a, (disp_dtype)b, &r) != DISP_OK) return UNDEF;
  return (int)r;
}

/* at::native's combine_categories (no complex dtypes here). */
static int combine_categories(int higher, int lower) {
  if (higher != UNDEF && disp_dtype_is_floating((disp_dtype)higher)) return higher;
  if (higher == DISP_DTYPE_BOOL || (lower != UNDEF && disp_dtype_is_floating((disp_dtype)lower)))
    return promote_skip_undefined(higher, lower);
  if (higher != UNDEF) return higher;
  return lower;
}

void disp__result_state_init(disp__result_state *s) {
  s->dim = s->zero = s->wrapped = UNDEF;
}

void disp__result_state_tensor(disp__result_state *s, const disp_tensor *t) {
  if (!t) return;
  int dt = (int)disp__t_dtype(t);
  if (disp__t_ndim(t) > 0) s->dim = promote_skip_undefined(s->dim, dt);
  else if (disp__is_wrapped_number(t)) {
    /* a wrapped float counts as the default dtype, int as int64 */
    if (disp_dtype_is_floating(disp__t_dtype(t))) dt = DISP_DTYPE_FLOAT32;
    s->wrapped = promote_skip_undefined(s->wrapped, dt);
  } else s->zero = promote_skip_undefined(s->zero, dt);
}

void disp__result_state_scalar(disp__result_state *s, disp_scalar v) {
  int dt = v.kind == DISP_SCALAR_DOUBLE ? DISP_DTYPE_FLOAT32
         : v.kind == DISP_SCALAR_INT ? DISP_DTYPE_INT64
         : v.kind == DISP_SCALAR_BOOL ? DISP_DTYPE_BOOL : UNDEF;
  s->wrapped = promote_skip_undefined(s->wrapped, dt);
}

int disp__result_state_get(const disp__result_state *s) {
  return combine_categories(s->dim, combine_categories(s->zero, s->wrapped));
}

disp_status disp_result_type(disp_tensor *const *tensors, size_t ntensors, const disp_scalar *scalars,
                             size_t nscalars, disp_dtype *out) {
  DISP_REFUSE_NULL_ARRAY(tensors, ntensors);
  DISP_REFUSE_NULL_ARRAY(scalars, nscalars);
  DISP_REFUSE_NULL(out);
  disp__result_state s;
  disp__result_state_init(&s);
  for (size_t i = 0; i < ntensors; i++) {
    const disp_tensor *t = tensors[i];
    if (t && disp_dtype_is_quantized(disp__t_dtype(t)))
      return disp_set_error(DISP_ERR_TYPE, "result_type: Promotion for QUInt8 types is not supported");
    disp__result_state_tensor(&s, t);
  }
  for (size_t i = 0; i < nscalars; i++) disp__result_state_scalar(&s, scalars[i]);
  int r = disp__result_state_get(&s);
  if (r == UNDEF) return disp_set_error(DISP_ERR_INVALID_ARG, "result_type: no tensors or scalars given");
  *out = (disp_dtype)r;
  return DISP_OK;
}

/* ---- wrapped numbers ------------------------------------------------------- */

/* PyTorch marks the zero-dim tensor it makes from a Python scalar as a
 * "wrapped number" (it promotes like a scalar). disp_tensor has no such
 * flag, so the composites that wrap a scalar register the tensor here for
 * the duration of their call; kernels on the same thread see the mark. */
#define MAX_WRAPPED 8
static _Thread_local const disp_tensor *wrapped[MAX_WRAPPED];
static _Thread_local int nwrapped;

int disp__is_wrapped_number(const disp_tensor *t) {
  for (int i = 0; i < nwrapped; i++)
    if (wrapped[i] == t) return 1;
  return 0;
}

disp_status disp__wrap_scalar(disp_scalar v, disp_device dev, disp_tensor **out) {
  disp_dtype dt = v.kind == DISP_SCALAR_DOUBLE ? DISP_DTYPE_FLOAT64
                : v.kind == DISP_SCALAR_BOOL ? DISP_DTYPE_BOOL : DISP_DTYPE_INT64;
  if (nwrapped == MAX_WRAPPED) return disp_set_error(DISP_ERR_INVALID_ARG, "too many nested wrapped scalars");
  disp_tensor *t;
  disp_status st = disp_tensor_empty(NULL, 0, dt, dev, &t);
  if (st != DISP_OK) return st;
  if (dev.type == DISP_BACKEND_CPU) {
    void *p = disp_tensor_data_ptr(t);
    if (dt == DISP_DTYPE_FLOAT64) *(double *)p = v.v.d;
    else if (dt == DISP_DTYPE_BOOL) *(uint8_t *)p = v.v.b;
    else *(int64_t *)p = v.v.i;
  }
  wrapped[nwrapped++] = t;
  *out = t;
  return DISP_OK;
}

void disp__unwrap_scalar(disp_tensor *t) {
  if (!t) return;
  for (int i = nwrapped - 1; i >= 0; i--)
    if (wrapped[i] == t) {
      wrapped[i] = wrapped[--nwrapped];
      break;
    }
  disp_tensor_release(t);
}
