/*
 * softmax.c - _softmax, _log_softmax, their backward formulas, and the
 * softmax.int/log_softmax.int composites.
 *
 * Rows along `dim` of a contiguous copy: (outer, len, inner) indexing.
 * Values go through double (float32 and bfloat16 round once at the store),
 * with the max subtracted first for stability; a row of -inf gives NaN as
 * in PyTorch.
 */
#include <math.h>

#include "aten_internal.h"
#include "aten_kernels.h"
#include "disp/aten.h"
#include "dtype_cast.h"
#include "tensor_iter.h"

typedef struct rows { int64_t outer, len, inner; } rows;

static rows rows_of(const disp_tensor *t, int dim) {
  rows r = {1, 1, 1};
  for (int i = 0; i < t->ndim; i++) {
    if (i < dim) r.outer *= t->sizes[i];
    else if (i == dim) r.len = t->sizes[i];
    else r.inner *= t->sizes[i];
  }
  return r;
}

static char *data_of(const disp_tensor *t) {
  char *base = (char *)t->storage->data; /* NULL for zero bytes: no arithmetic on it */
  return base ? base + t->storage_offset * (int64_t)disp_dtype_itemsize(t->dtype) : NULL;
}

/* PyTorch computes bfloat16 softmaxes with bfloat16 vectors: every
 * intermediate (each exp, the row's float sum, the log) is rounded to
 * bfloat16.
 * Reproduce that; other dtypes keep double intermediates. */
static inline double rnd(disp_dtype dt, double v) {
  return dt == DISP_DTYPE_BFLOAT16 ? disp__bf16_to_float(disp__double_to_bf16(v)) : v;
}

static int supported(disp_dtype dt) {
  return dt == DISP_DTYPE_FLOAT32 || dt == DISP_DTYPE_FLOAT64 || dt == DISP_DTYPE_BFLOAT16;
}

static disp_status softmax_fwd(const char *op, int is_log, disp_tensor *self, int64_t dim, bool half_to_float,
                               disp_tensor **out0) {
  int d = 0;
  disp_status st = disp__titer_wrap_dim(op, dim, self->ndim, &d);
  if (st != DISP_OK) return st;
  if (half_to_float)
    return disp_set_error(DISP_ERR_INVALID_ARG, "softmax with half to float conversion is not supported on CPU");
  if (!supported(self->dtype)) {
    int last = self->ndim == 0 || d == self->ndim - 1;
    return disp_set_error(DISP_ERR_TYPE, "\"%s\" not implemented for '%s'",
                          last ? (is_log ? "log_softmax_lastdim_kernel_impl" : "softmax_lastdim_kernel_impl")
                               : "softmax_kernel_impl",
                          disp_dtype_torch_name(self->dtype));
  }
  disp_tensor *out, *x = NULL;
  if ((st = disp_tensor_empty(self->sizes, self->ndim, self->dtype, self->device, &out)) != DISP_OK) return st;
  if (self->device.type != DISP_BACKEND_CPU || self->numel == 0) {
    *out0 = out;
    return DISP_OK;
  }
  if ((st = disp__titer_contiguous_as(self, self->dtype, &x)) != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  rows r = rows_of(self, d);
  disp_dtype dt = self->dtype;
  size_t isz = disp_dtype_itemsize(dt);
  const char *in = data_of(x);
  char *o = data_of(out);
  for (int64_t a = 0; a < r.outer; a++)
    for (int64_t b = 0; b < r.inner; b++) {
      int64_t base = a * r.len * r.inner + b;
      double mx = -INFINITY;
      for (int64_t j = 0; j < r.len; j++) {
        double v = disp__load_double(in + (size_t)(base + j * r.inner) * isz, dt);
        if (v > mx || isnan(v)) mx = v;
      }
      double sum = 0;
      for (int64_t j = 0; j < r.len; j++)
        sum += rnd(dt, exp(disp__load_double(in + (size_t)(base + j * r.inner) * isz, dt) - mx));
      sum = rnd(dt, sum);
      double lse = rnd(dt, log(sum));
      for (int64_t j = 0; j < r.len; j++) {
        size_t off = (size_t)(base + j * r.inner) * isz;
        double v = disp__load_double(in + off, dt) - mx;
        disp__store_double(o + off, dt, is_log ? v - lse : rnd(dt, exp(v)) / sum);
      }
    }
  disp_tensor_release(x);
  *out0 = out;
  return DISP_OK;
}

disp_status disp__cpu__softmax(disp_tensor *self, int64_t dim, bool half_to_float, disp_tensor **out0) {
  return softmax_fwd("_softmax", 0, self, dim, half_to_float, out0);
}
disp_status disp__meta__softmax(disp_tensor *self, int64_t dim, bool half_to_float, disp_tensor **out0) {
  return softmax_fwd("_softmax", 0, self, dim, half_to_float, out0);
}
disp_status disp__cpu__log_softmax(disp_tensor *self, int64_t dim, bool half_to_float, disp_tensor **out0) {
  return softmax_fwd("_log_softmax", 1, self, dim, half_to_float, out0);
}
disp_status disp__meta__log_softmax(disp_tensor *self, int64_t dim, bool half_to_float, disp_tensor **out0) {
  return softmax_fwd("_log_softmax", 1, self, dim, half_to_float, out0);
}

/* softmax.int / log_softmax.int: convert to dtype (if given), then the
 * underscore op. */
static disp_status softmax_int(int is_log, disp_tensor *self, int64_t dim, int32_t dtype, disp_tensor **out0) {
  disp_tensor *x = NULL;
  disp_status st;
  if (dtype >= 0) {
    if ((st = disp_aten_to_dtype(self, dtype, false, false, -1, &x)) != DISP_OK) return st;
  } else {
    x = disp_tensor_retain(self);
  }
  st = is_log ? disp_aten__log_softmax(x, dim, false, out0) : disp_aten__softmax(x, dim, false, out0);
  disp_tensor_release(x);
  return st;
}
disp_status disp__cia_softmax_int(disp_tensor *self, int64_t dim, int32_t dtype, disp_tensor **out0) {
  return softmax_int(0, self, dim, dtype, out0);
}
disp_status disp__cia_log_softmax_int(disp_tensor *self, int64_t dim, int32_t dtype, disp_tensor **out0) {
  return softmax_int(1, self, dim, dtype, out0);
}

/* softmax:     grad_in = y * (g - sum(g * y))
 * log_softmax: grad_in = g - exp(y) * sum(g) */
static disp_status softmax_bwd(const char *op, int is_log, disp_tensor *grad, disp_tensor *output, int64_t dim,
                               int32_t input_dtype, disp_tensor **out0) {
  int d = 0;
  disp_status st = disp__titer_wrap_dim(op, dim, output->ndim, &d);
  if (st != DISP_OK) return st;
  (void)input_dtype; /* only matters for half_to_float, which the CPU lacks */
  if (grad->ndim != output->ndim || memcmp(grad->sizes, output->sizes, sizeof(int64_t) * (size_t)grad->ndim))
    return disp_set_error(DISP_ERR_INVALID_ARG, "grad_output and output must have the same shape");
  if (!supported(grad->dtype))
    return disp_set_error(DISP_ERR_TYPE, "\"%s\" not implemented for '%s'",
                          is_log ? "log_softmax_backward_lastdim_kernel_impl" : "softmax_backward_lastdim_kernel_impl",
                          disp_dtype_torch_name(grad->dtype));
  disp_tensor *out, *g = NULL, *y = NULL;
  if ((st = disp_tensor_empty(grad->sizes, grad->ndim, grad->dtype, grad->device, &out)) != DISP_OK) return st;
  if (grad->device.type != DISP_BACKEND_CPU || grad->numel == 0) {
    *out0 = out;
    return DISP_OK;
  }
  st = disp__titer_contiguous_as(grad, grad->dtype, &g);
  if (st == DISP_OK) st = disp__titer_contiguous_as(output, output->dtype, &y);
  if (st == DISP_OK) {
    rows r = rows_of(grad, d);
    disp_dtype gd = grad->dtype, yd = output->dtype;
    size_t gs = disp_dtype_itemsize(gd), ys = disp_dtype_itemsize(yd);
    const char *gp = data_of(g), *yp = data_of(y);
    char *o = data_of(out);
    for (int64_t a = 0; a < r.outer; a++)
      for (int64_t b = 0; b < r.inner; b++) {
        int64_t base = a * r.len * r.inner + b;
        double acc = 0;
        for (int64_t j = 0; j < r.len; j++) {
          size_t k = (size_t)(base + j * r.inner);
          double gv = disp__load_double(gp + k * gs, gd);
          acc += is_log ? gv : rnd(gd, gv * disp__load_double(yp + k * ys, yd));
        }
        acc = rnd(gd, acc);
        for (int64_t j = 0; j < r.len; j++) {
          size_t k = (size_t)(base + j * r.inner);
          double gv = disp__load_double(gp + k * gs, gd), yv = disp__load_double(yp + k * ys, yd);
          disp__store_double(o + k * gs, gd, is_log ? gv - rnd(gd, exp(yv) * acc) : yv * rnd(gd, gv - acc));
        }
      }
  }
  disp_tensor_release(g);
  disp_tensor_release(y);
  if (st != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  *out0 = out;
  return DISP_OK;
}

disp_status disp__cpu__softmax_backward_data(disp_tensor *grad_output, disp_tensor *output, int64_t dim,
                                             int32_t input_dtype, disp_tensor **out0) {
  return softmax_bwd("_softmax_backward_data", 0, grad_output, output, dim, input_dtype, out0);
}
disp_status disp__meta__softmax_backward_data(disp_tensor *grad_output, disp_tensor *output, int64_t dim,
                                              int32_t input_dtype, disp_tensor **out0) {
  return softmax_bwd("_softmax_backward_data", 0, grad_output, output, dim, input_dtype, out0);
}
disp_status disp__cpu__log_softmax_backward_data(disp_tensor *grad_output, disp_tensor *output, int64_t dim,
                                                 int32_t input_dtype, disp_tensor **out0) {
  return softmax_bwd("_log_softmax_backward_data", 1, grad_output, output, dim, input_dtype, out0);
}
disp_status disp__meta__log_softmax_backward_data(disp_tensor *grad_output, disp_tensor *output, int64_t dim,
                                                  int32_t input_dtype, disp_tensor **out0) {
  return softmax_bwd("_log_softmax_backward_data", 1, grad_output, output, dim, input_dtype, out0);
}
