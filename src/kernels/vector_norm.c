/*
 * vector_norm.c - aten::linalg_vector_norm: the ord-norm of self over dims
 * (all when dim is None or empty).
 *
 * ord 0 counts the nonzero elements, inf and -inf take the largest and
 * smallest |x| (NaN propagates), any other ord is (sum |x|^ord)^(1/ord),
 * 1 and 2 without the powers. As 1.13's structured kernel: self must be
 * floating; `dtype` (floating, not narrower than self's) is the result's
 * dtype and self is converted to it first; an empty tensor has no inf or
 * negative-ord norm over all dims or over an empty one. Sums run in double
 * and round once to the result's dtype (1.13 sums float32 in float32: the
 * reference cases' values are exact either way, and check-ops's float32
 * tolerance covers the rest).
 *
 * One body serves the CPU and the Meta key (manifest: META_IS_CPU).
 */
#include <math.h>
#include <stdio.h>

#include "alloc_internal.h"
#include "aten_internal.h"
#include "aten_kernels.h"
#include "disp/promotion.h"
#include "tensor/dtype_cast.h"
#include "tensor_iter.h"

#define OP "linalg.vector_norm"

/* 1.13's checks before any shape is computed (its meta function). */
static disp_status check_args(disp_tensor *self, double ord, disp_opt_int_list dim, int32_t dtype) {
  disp_dtype st_dt = disp__t_dtype(self);
  if (!disp_dtype_is_floating(st_dt))
    return disp_set_error(DISP_ERR_TYPE, OP ": Expected a floating point or complex tensor as input. Got %s",
                          disp_dtype_torch_name(st_dt));
  if (disp__t_numel(self) == 0 && (ord < 0 || ord == INFINITY)) {
    if (!dim.has_value || dim.value.len == 0)
      return disp_set_error(DISP_ERR_INVALID_ARG,
                            OP " cannot compute the %g norm on an empty tensor because the operation does not have "
                               "an identity", ord);
    for (size_t i = 0; i < dim.value.len; i++) {
      int d = 0;
      disp_status st = disp__titer_wrap_dim(OP, dim.value.data[i], disp__t_ndim(self), &d);
      if (st != DISP_OK) return st;
      if (disp__t_ndim(self) > 0 && disp__t_size(self, d) == 0)
        return disp_set_error(DISP_ERR_INVALID_ARG,
                              OP " cannot compute the %g norm on the dimension %lld" /* 1.13 has no space here */
                                 "because this dimension is empty and the operation does not have an identity",
                              ord, (long long)dim.value.data[i]);
    }
  }
  if (dtype >= 0) {
    disp_dtype want = (disp_dtype)dtype, common;
    if (!disp_dtype_is_floating(want))
      return disp_set_error(DISP_ERR_TYPE, OP ": dtype should be floating point or complex, but got %s",
                            disp_dtype_torch_name(want));
    disp_status st = disp_promote_types(st_dt, want, &common);
    if (st != DISP_OK) return st;
    if (common != want)
      return disp_set_error(DISP_ERR_TYPE,
                            OP ": the dtype of the input (%s) should be convertible without narrowing to the "
                               "specified dtype (%s)", disp_dtype_torch_name(st_dt), disp_dtype_torch_name(want));
  }
  return DISP_OK;
}

/* acc folded with |x| for ord */
static double fold(double acc, double x, double ord) {
  double a = fabs(x);
  if (ord == 0) return acc + (x != 0);
  if (ord == INFINITY) return isnan(a) || isnan(acc) ? NAN : (a > acc ? a : acc);
  if (ord == -INFINITY) return isnan(a) || isnan(acc) ? NAN : (a < acc ? a : acc);
  if (ord == 1) return acc + a;
  if (ord == 2) return acc + a * a;
  return acc + pow(a, ord);
}

static double finish(double acc, double ord) {
  if (ord == 0 || ord == 1 || isinf(ord)) return acc;
  if (ord == 2) return sqrt(acc);
  return pow(acc, 1.0 / ord);
}

/* Every element of the contiguous x folded into out's element that its
 * index maps to (the reduced dims dropped). */
static disp_status reduce(disp_tensor *x, uint64_t mask, double ord, disp_tensor *out) {
  int nd = disp__t_ndim(x);
  int64_t nout = disp__t_numel(out);
  double *acc = disp__calloc((size_t)(nout ? nout : 1), sizeof *acc);
  if (!acc) return disp_set_error(DISP_ERR_NO_MEMORY, OP ": out of memory");
  for (int64_t o = 0; o < nout; o++) acc[o] = ord == -INFINITY ? INFINITY : 0;
  /* out's element stride of each input dim (0 for a reduced one) */
  int64_t ostride[DISP_TENSOR_MAX_DIMS], idx[DISP_TENSOR_MAX_DIMS] = {0}, step = 1;
  for (int i = nd - 1; i >= 0; i--) {
    int reduced = (mask >> i) & 1;
    ostride[i] = reduced ? 0 : step;
    if (!reduced) step *= disp__t_size(x, i);
  }
  disp_dtype dt = disp__t_dtype(x);
  const char *p = disp__t_data(x);
  size_t isz = disp_dtype_itemsize(dt);
  int64_t o = 0;
  for (int64_t e = 0; e < disp__t_numel(x); e++) {
    acc[o] = fold(acc[o], disp__load_double(p + (size_t)e * isz, dt), ord);
    for (int i = nd - 1; i >= 0; i--) { /* next index, row-major */
      o += ostride[i];
      if (++idx[i] < disp__t_size(x, i)) break;
      o -= ostride[i] * idx[i];
      idx[i] = 0;
    }
  }
  char *q = disp__t_data(out);
  for (int64_t k = 0; k < nout; k++) disp__store_double(q + (size_t)k * isz, dt, finish(acc[k], ord));
  disp__free(acc);
  return DISP_OK;
}

disp_status disp__cpu_linalg_vector_norm(disp_tensor *self, disp_scalar ord, disp_opt_int_list dim, bool keepdim,
                                         int32_t dtype, disp_tensor **out0) {
  double p = disp_scalar_to_double(ord);
  disp_status st = check_args(self, p, dim, dtype);
  if (st != DISP_OK) return st;
  int64_t shape[DISP_TENSOR_MAX_DIMS];
  int ndim = 0;
  uint64_t mask = 0;
  const int64_t *dims = dim.has_value ? dim.value.data : NULL;
  size_t ndims = dim.has_value ? dim.value.len : 0;
  if ((st = disp__reduce_shape(OP, self, dims, ndims, keepdim, &mask, shape, &ndim)) != DISP_OK) return st;
  disp_dtype odt = dtype >= 0 ? (disp_dtype)dtype : disp__t_dtype(self);
  disp_tensor *out = NULL, *x = NULL;
  if ((st = disp_tensor_empty(shape, ndim, odt, disp__t_device(self), &out)) != DISP_OK) return st;
  if (disp__t_device_type(self) != DISP_BACKEND_CPU || disp__t_numel(out) == 0) {
    *out0 = out;
    return DISP_OK;
  }
  st = disp__titer_contiguous_as(self, odt, &x);
  if (st == DISP_OK) st = reduce(x, mask, p, out);
  disp_tensor_release(x);
  if (st != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  *out0 = out;
  return DISP_OK;
}
