/*
 * easy_tensors.c - the concise API's tensors from C data, shapes and
 * scalars, reading results, and the autograd verbs (disp/easy.h). Each is
 * a thin layer over a public constructor or typed entry; what they add is
 * the result's owner (the current scope) and the chain rule of Note
 * [Concise errors].
 */
#include <string.h>

#include "alloc_internal.h"
#include "easy_internal.h"
#include "error_internal.h"

static const disp_device cpu = {DISP_BACKEND_CPU, -1};

/* The shape's element count, or -1 with the error set. */
static int64_t shape_numel(const char *fn, disp_dims shape) {
  if (shape.len < 0 || shape.len > DISP_DIMS_MAX)
    return disp__fail(DISP_ERR_INVALID_ARG, "%s: %lld dimensions (0 to %d)", fn, (long long)shape.len, DISP_DIMS_MAX), -1;
  int64_t n = 1;
  for (int64_t i = 0; i < shape.len; i++) {
    if (shape.v[i] < 0)
      return disp__fail(DISP_ERR_INVALID_ARG, "%s: negative size %lld in dimension %lld", fn,
                        (long long)shape.v[i], (long long)i), -1;
    if (shape.v[i] && n > INT64_MAX / shape.v[i])
      return disp__fail(DISP_ERR_INVALID_ARG, "%s: the shape has too many elements", fn), -1;
    n *= shape.v[i];
  }
  return n;
}

static int bad_dtype(const char *fn, disp_dtype dt) {
  if ((int)dt >= 0 && dt < DISP_DTYPE_COUNT && dt != DISP_DTYPE_QUINT8) return 0;
  disp__fail(DISP_ERR_INVALID_ARG, "%s: dtype %d is no plain C element type", fn, (int)dt);
  return 1;
}

disp_tensor *disp_from_data(const void *data, disp_dtype dtype, disp_dims shape) {
  int64_t n = shape_numel("disp_from", shape);
  if (n < 0 || bad_dtype("disp_from", dtype)) return disp__easy_failed();
  if (!data && n > 0) return disp__easy_null("disp_from_data", "data");
  disp_tensor *t = NULL;
  if (disp_tensor_empty(shape.v, (int)shape.len, dtype, cpu, &t) != DISP_OK) return disp__easy_failed();
  if (n) memcpy(disp_tensor_data_ptr(t), data, (size_t)n * disp_dtype_itemsize(dtype));
  return disp__easy_own(t);
}

/* The caller's deleter, run only once the tensor exists (disp_borrow
 * takes nothing when it fails). */
typedef struct borrowed {
  void (*deleter)(void *data, void *ctx);
  void *ctx;
  int armed;
} borrowed;

static void borrowed_release(void *data, void *ctx) {
  borrowed *b = ctx;
  if (b->armed && b->deleter) b->deleter(data, b->ctx);
  disp__free(b);
}

disp_tensor *disp_borrow(void *data, disp_dtype dtype, disp_dims shape, void (*deleter)(void *data, void *ctx),
                         void *ctx) {
  int64_t n = shape_numel("disp_borrow", shape);
  if (n < 0 || bad_dtype("disp_borrow", dtype)) return disp__easy_failed();
  if (!data && n > 0) return disp__easy_null("disp_borrow", "data");
  int64_t strides[DISP_DIMS_MAX];
  int64_t step = 1;
  for (int64_t i = shape.len; i-- > 0;) {
    strides[i] = step;
    step *= shape.v[i] ? shape.v[i] : 1;
  }
  borrowed *b = disp__malloc(sizeof *b);
  if (!b) return disp__fail(DISP_ERR_NO_MEMORY, "disp_borrow: out of memory"), disp__easy_failed();
  *b = (borrowed){deleter, ctx, 0};
  disp_storage *st = NULL;
  if (disp_storage_new_with_data(data, (size_t)n * disp_dtype_itemsize(dtype), cpu, borrowed_release, b, &st) !=
      DISP_OK) {
    disp__free(b);
    return disp__easy_failed();
  }
  disp_tensor *t = NULL;
  disp_keyset keys = disp_tensor_default_keyset(cpu, dtype, DISP_LAYOUT_STRIDED, disp_inference_mode_enabled());
  disp_status s = disp_tensor_new_with_storage(st, 0, shape.v, strides, (int)shape.len, dtype, keys, &t);
  b->armed = s == DISP_OK;
  disp_storage_release(st);
  return s == DISP_OK ? disp__easy_own(t) : disp__easy_failed();
}

/* ---- shapes and scalars -------------------------------------------------- */

static disp_opt_device opt_device(disp_device d) {
  disp_opt_device o = {(int32_t)d.type, d.index, true};
  return o;
}

static const disp_opt_bool no_bool = {false, false};

/* The result of a factory call (*t after status st): requires grad if
 * asked, then owned. t by address: read after the call that sets it. */
static disp_tensor *made(disp_status st, disp_tensor *const *tp, disp_new_opts o) {
  disp_tensor *t = *tp;
  if (st != DISP_OK) return disp__easy_failed();
  if (o.requires_grad && disp_tensor_set_requires_grad(t, 1) != DISP_OK) {
    disp_tensor_release(t);
    return disp__easy_failed();
  }
  return disp__easy_own(t);
}

disp_tensor *disp_zeros_with(disp_dims shape, disp_new_opts o) {
  disp_tensor *t = NULL;
  return made(disp_aten_zeros(disp__easy_ints(&shape), (int32_t)o.dtype, -1, opt_device(o.device), no_bool, &t), &t, o);
}

disp_tensor *disp_ones_with(disp_dims shape, disp_new_opts o) {
  disp_tensor *t = NULL;
  return made(disp_aten_ones(disp__easy_ints(&shape), (int32_t)o.dtype, -1, opt_device(o.device), no_bool, &t), &t, o);
}

disp_tensor *disp_rand_with(disp_dims shape, disp_new_opts o) {
  disp_tensor *t = NULL;
  return made(disp_aten_rand(disp__easy_ints(&shape), (int32_t)o.dtype, -1, opt_device(o.device), no_bool, &t), &t, o);
}

disp_tensor *disp_randn_with(disp_dims shape, disp_new_opts o) {
  disp_tensor *t = NULL;
  return made(disp_aten_randn(disp__easy_ints(&shape), (int32_t)o.dtype, -1, opt_device(o.device), no_bool, &t), &t, o);
}

disp_tensor *disp_full_with(disp_dims shape, double value, disp_new_opts o) {
  disp_tensor *t = NULL;
  return made(disp_aten_full(disp__easy_ints(&shape), disp_scalar_double(value), (int32_t)o.dtype, -1, opt_device(o.device), no_bool, &t), &t, o);
}

disp_tensor *disp_scalar_with(double value, disp_new_opts o) {
  disp_tensor *t = NULL;
  return made(disp_aten_scalar_tensor(disp_scalar_double(value), (int32_t)o.dtype, -1, opt_device(o.device), no_bool,
                                      &t), &t, o);
}

disp_tensor *disp_requires_grad(disp_tensor *t) {
  if (!t) return disp__easy_null("disp_requires_grad", "t");
  return disp_tensor_set_requires_grad(t, 1) == DISP_OK ? t : disp__easy_failed();
}

/* ---- results and autograd ------------------------------------------------ */

/* The status for a NULL argument of a status function (Note [Concise errors]). */
static disp_status null_status(const char *fn, const char *arg) {
  disp__easy_null(fn, arg);
  disp_status st = disp__last_status();
  return st != DISP_OK ? st : DISP_ERR_INVALID_ARG;
}

double disp_item(disp_tensor *t) {
  if (!t) return null_status("disp_item", "t"), NAN;
  disp_scalar v;
  if (disp_aten_item(t, &v) != DISP_OK) return disp__easy_failed(), NAN;
  return disp_scalar_to_double(v);
}

disp_status disp_print(disp_tensor *t) {
  if (!t) return null_status("disp_print", "t");
  disp_status st = disp_tensor_print(stdout, t);
  if (st != DISP_OK) disp__easy_failed();
  return st;
}

disp_status disp_backward(disp_tensor *loss) {
  disp_status st;
  if (disp__easy_scope_failed(&st)) return st;
  if (!loss) return null_status("disp_backward", "loss");
  st = disp_autograd_backward(&loss, 1, NULL, 0, 0);
  if (st != DISP_OK) disp__easy_failed();
  return st;
}

disp_tensor *disp_grad(disp_tensor *t) {
  if (!t) return disp__easy_null("disp_grad", "t");
  disp_tensor *g = disp_tensor_grad(t);
  if (!g) return disp__fail(DISP_ERR_INVALID_ARG, "disp_grad: the tensor has no gradient"), disp__easy_failed();
  return disp__easy_own(disp_tensor_retain(g));
}
