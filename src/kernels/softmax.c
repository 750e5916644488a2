/*
 * softmax.c - _softmax, _log_softmax, their backward formulas, and the
 * softmax.int/log_softmax.int composites.
 *
 * Rows along `dim` of a contiguous copy: (outer, len, inner) indexing.
 * float32 forward computes in float with the CPU kernel table's vector exp
 * (as 1.13), rows or column blocks spread over threads; the other dtypes
 * and the backward formulas go through double (float64 exact, bfloat16
 * rounding as 1.13's kernels), with the max subtracted first for
 * stability; a row of -inf gives NaN as in PyTorch.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "aten_internal.h"
#include "aten_kernels.h"
#include "cpu/kernels.h"
#include "disp/aten.h"
#include "parallel.h"
#include "tensor/dtype_cast.h"
#include "tensor_iter.h"

typedef struct rows { int64_t outer, len, inner; } rows;

static rows rows_of(const disp_tensor *t, int dim) {
  rows r = {1, 1, 1};
  for (int i = 0; i < disp__t_ndim(t); i++) {
    if (i < dim) r.outer *= disp__t_size(t, i);
    else if (i == dim) r.len = disp__t_size(t, i);
    else r.inner *= disp__t_size(t, i);
  }
  return r;
}

static char *data_of(const disp_tensor *t) { return disp__t_data(t); }

/* PyTorch computes last-dim bfloat16 softmaxes with bfloat16 vectors
 * whose maps and reductions run in float, rounding what they store to
 * bfloat16 (see softmax_fwd). Reproduce that; other dtypes keep double
 * intermediates. */
static inline double rnd(disp_dtype dt, double v) {
  return dt == DISP_DTYPE_BFLOAT16 ? disp__bf16_to_float(disp__double_to_bf16(v)) : v;
}

/* ---- float32 forward through the kernel table ---------------------------- */

/* Columns of an inner-dim softmax are handed out in blocks of this many
 * (a multiple of every vector width): the vector/scalar split of a column,
 * and so its result, never depends on the thread count. */
#define COL_BLOCK 64

typedef struct f32_job {
  const float *in;
  float *out;
  rows r;
  int64_t nblk; /* column blocks per outer slab */
  int is_log;
} f32_job;

static void lastdim_rows(int64_t b, int64_t e, void *ctx) {
  const f32_job *j = ctx;
  int64_t off = b * j->r.len;
  disp__cpu_kernels()->softmax_lastdim_f32(j->out + off, j->in + off, e - b, j->r.len, j->is_log);
}

static void inner_blocks(int64_t b, int64_t e, void *ctx) {
  const f32_job *j = ctx;
  for (int64_t i = b; i < e; i++) {
    int64_t a = i / j->nblk, c0 = i % j->nblk * COL_BLOCK;
    int64_t c1 = c0 + COL_BLOCK < j->r.inner ? c0 + COL_BLOCK : j->r.inner, off = a * j->r.len * j->r.inner;
    disp__cpu_kernels()->softmax_inner_f32(j->out + off, j->in + off, j->r.len, j->r.inner, c0, c1, j->is_log);
  }
}

/* Work per task about DISP_GRAIN_SIZE, counting 16 per element (1.13's
 * estimate for an exp and a few adds). */
static void softmax_f32(const float *in, float *out, rows r, int is_log) {
  f32_job j = {in, out, r, (r.inner + COL_BLOCK - 1) / COL_BLOCK, is_log};
  int64_t per = 16 * r.len * (r.inner == 1 ? 1 : COL_BLOCK), grain = DISP_GRAIN_SIZE / per;
  if (grain < 1) grain = 1;
  if (r.inner == 1)
    disp__parallel_for(0, r.outer, grain, lastdim_rows, &j);
  else
    disp__parallel_for(0, r.outer * j.nblk, grain, inner_blocks, &j);
}

static int supported(disp_dtype dt) {
  return dt == DISP_DTYPE_FLOAT32 || dt == DISP_DTYPE_FLOAT64 || dt == DISP_DTYPE_BFLOAT16;
}

static disp_status softmax_fwd(const char *op, int is_log, disp_tensor *self, int64_t dim, bool half_to_float,
                               disp_tensor **out0) {
  int d = 0;
  disp_status st = disp__titer_wrap_dim(op, dim, disp__t_ndim(self), &d);
  if (st != DISP_OK) return st;
  if (half_to_float)
    return disp_set_error(DISP_ERR_INVALID_ARG, "softmax with half to float conversion is not supported on CPU");
  disp_tensor *out, *x = NULL;
  if ((st = disp_tensor_empty(disp__t_sizes(self), disp__t_ndim(self), disp__t_dtype(self), disp__t_device(self),
                              &out)) != DISP_OK)
    return st;
  /* 1.13 returns before choosing a dtype kernel when there is nothing to
   * compute: a zero-size integer softmax succeeds. */
  if (disp__t_device_type(self) != DISP_BACKEND_CPU || disp__t_numel(self) == 0) {
    *out0 = out;
    return DISP_OK;
  }
  if (!supported(disp__t_dtype(self))) {
    int last = disp__t_ndim(self) == 0 || d == disp__t_ndim(self) - 1;
    disp_tensor_release(out);
    return disp_set_error(DISP_ERR_TYPE, "\"%s\" not implemented for '%s'",
                          last ? (is_log ? "log_softmax_lastdim_kernel_impl" : "softmax_lastdim_kernel_impl")
                               : "softmax_kernel_impl",
                          disp_dtype_torch_name(disp__t_dtype(self)));
  }
  if ((st = disp__titer_contiguous_as(self, disp__t_dtype(self), &x)) != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  rows r = rows_of(self, d);
  disp_dtype dt = disp__t_dtype(self);
  /* the bfloat16 roundings are those of the last-dim kernel; along another
   * dim 1.13 computes in float and rounds once */
  disp_dtype rdt = disp__t_ndim(self) == 0 || d == disp__t_ndim(self) - 1 ? dt : DISP_DTYPE_FLOAT32;
  size_t isz = disp_dtype_itemsize(dt);
  const char *in = data_of(x);
  char *o = data_of(out);
  if (dt == DISP_DTYPE_FLOAT32) {
    softmax_f32((const float *)in, (float *)o, r, is_log);
    disp_tensor_release(x);
    *out0 = out;
    return DISP_OK;
  }
  for (int64_t a = 0; a < r.outer; a++)
    for (int64_t b = 0; b < r.inner; b++) {
      int64_t base = a * r.len * r.inner + b;
      double mx = -INFINITY;
      for (int64_t j = 0; j < r.len; j++) {
        double v = disp__load_double(in + (size_t)(base + j * r.inner) * isz, dt);
        if (v > mx || isnan(v)) mx = v;
      }
      /* log_softmax sums the exps in float (bfloat16: its float map-reduce)
       * and rounds the sum and its log; softmax stores each exp, sums the
       * stored values, and multiplies by the rounded reciprocal */
      double sum = 0;
      for (int64_t j = 0; j < r.len; j++) {
        double e = exp(disp__load_double(in + (size_t)(base + j * r.inner) * isz, dt) - mx);
        sum += is_log ? e : rnd(rdt, e);
      }
      sum = rnd(rdt, sum);
      double lse = rnd(rdt, log(sum)), inv = rnd(rdt, 1.0 / sum);
      for (int64_t j = 0; j < r.len; j++) {
        size_t off = (size_t)(base + j * r.inner) * isz;
        double v = disp__load_double(in + off, dt) - mx;
        double sm = rdt == DISP_DTYPE_BFLOAT16 ? rnd(rdt, exp(v)) * inv : exp(v) / sum;
        disp__store_double(o + off, dt, is_log ? v - lse : sm);
      }
    }
  disp_tensor_release(x);
  *out0 = out;
  return DISP_OK;
}

disp_status disp__cpu__softmax(disp_tensor *self, int64_t dim, bool half_to_float, disp_tensor **out0) {
  return softmax_fwd("_softmax", 0, self, dim, half_to_float, out0);
}
disp_status disp__cpu__log_softmax(disp_tensor *self, int64_t dim, bool half_to_float, disp_tensor **out0) {
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

static void format_sizes(char *buf, size_t n, const disp_tensor *t) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < disp__t_ndim(t) && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)disp__t_size(t, i));
  if (k < n) snprintf(buf + k, n - k, "]");
}

/* 1.13's _softmax_backward_data CPU kernel passes `output` itself, not its
 * contiguous copy, to the row loops: a non-contiguous output is read as
 * numel contiguous elements from its data pointer. Reproduce that when those
 * elements lie inside its storage (else read it properly: 1.13 would read
 * past the storage). New reference in *out. */
static disp_status softmax_bwd_output(disp_tensor *output, disp_tensor **out) {
  size_t nelem = disp__storage_nbytes(disp__t_storage(output)) / disp_dtype_itemsize(disp__t_dtype(output));
  if (disp__storage_data(disp__t_storage(output)) &&
      (size_t)(disp__t_offset(output) + disp__t_numel(output)) <= nelem) {
    int64_t strides[DISP_TENSOR_MAX_DIMS];
    disp__tensor_contiguous_strides(disp__t_sizes(output), disp__t_ndim(output), strides);
    return disp_tensor_new_with_storage(disp__t_storage(output), disp__t_offset(output), disp__t_sizes(output), strides,
                                        disp__t_ndim(output), disp__t_dtype(output), disp_keyset_empty(), out);
  }
  return disp__titer_contiguous_as(output, disp__t_dtype(output), out);
}

/* The generic backward: double intermediates, any layout of rows. */
static void softmax_bwd_any(disp_tensor *out, const disp_tensor *g, const disp_tensor *y, rows r, int is_log) {
  disp_dtype gd = disp__t_dtype(g), yd = disp__t_dtype(y);
  size_t gs = disp_dtype_itemsize(gd), ys = disp_dtype_itemsize(yd);
  const char *gp = data_of(g), *yp = data_of(y);
  char *o = data_of(out);
  for (int64_t a = 0; a < r.outer; a++)
    for (int64_t b = 0; b < r.inner; b++) {
      int64_t base = a * r.len * r.inner + b;
      /* bfloat16: the vector kernels map and reduce in float and round
       * what they store, the row's sum and the result */
      double acc = 0;
      for (int64_t j = 0; j < r.len; j++) {
        size_t k = (size_t)(base + j * r.inner);
        double gv = disp__load_double(gp + k * gs, gd);
        acc += is_log ? gv : gv * disp__load_double(yp + k * ys, yd);
      }
      acc = rnd(gd, acc);
      for (int64_t j = 0; j < r.len; j++) {
        size_t k = (size_t)(base + j * r.inner);
        double gv = disp__load_double(gp + k * gs, gd), yv = disp__load_double(yp + k * ys, yd);
        disp__store_double(o + k * gs, gd, is_log ? gv - exp(yv) * acc : yv * (gv - acc));
      }
    }
}

typedef struct f32_bwd_job {
  float *o;
  const float *g, *y;
  int64_t len;
  int is_log;
} f32_bwd_job;

static void bwd_rows(int64_t b, int64_t e, void *ctx) {
  const f32_bwd_job *j = ctx;
  int64_t off = b * j->len;
  disp__cpu_kernels()->softmax_backward_lastdim_f32(j->o + off, j->g + off, j->y + off, e - b, j->len, j->is_log);
}

/* float32 rows through the kernel table, in float as 1.13's vector kernel;
 * tasks of 1.13's grain (GRAIN_SIZE / (8 len sizeof(float)) rows). */
static void softmax_bwd_f32(void *out, const void *g, const void *y, rows r, int is_log) {
  f32_bwd_job j = {out, g, y, r.len, is_log};
  int64_t grain = DISP_GRAIN_SIZE / (8 * r.len * (int64_t)sizeof(float));
  disp__parallel_for(0, r.outer, grain < 1 ? 1 : grain, bwd_rows, &j);
}

/* softmax:     grad_in = y * (g - sum(g * y))
 * log_softmax: grad_in = g - exp(y) * sum(g) */
static disp_status softmax_bwd(const char *op, int is_log, disp_tensor *grad, disp_tensor *output, int64_t dim,
                               int32_t input_dtype, disp_tensor **out0) {
  int d = 0;
  /* _softmax_backward_data checks the sizes; 1.13's _log_softmax one does
   * not: it reads contiguous(output) with grad_output's geometry, and past
   * its end when output is smaller, which libdispatch refuses. */
  if (disp__t_ndim(grad) != disp__t_ndim(output) ||
      memcmp(disp__t_sizes(grad), disp__t_sizes(output), sizeof(int64_t) * (size_t)disp__t_ndim(grad))) {
    char gs[128], os[128];
    format_sizes(gs, sizeof gs, grad);
    format_sizes(os, sizeof os, output);
    if (!is_log)
      return disp_set_error(DISP_ERR_INVALID_ARG, "Expected tensor for argument #1 'grad' to have same size as tensor "
                            "for argument #2 'output'; but %s does not equal %s (while checking arguments for "
                            "softmax_backward)", gs, os);
    if (disp__t_numel(output) < disp__t_numel(grad))
      return disp_set_error(DISP_ERR_INVALID_ARG, "output %s has fewer elements than grad_output %s", os, gs);
  }
  disp_status st = disp__titer_wrap_dim(op, dim, disp__t_ndim(grad), &d);
  if (st != DISP_OK) return st;
  /* half_to_float: a float32 grad of a float16 input gives a float16 result
   * (the CUDA rule; the CPU kernel then fails on the dtype mismatch). */
  disp_dtype out_dt = disp__t_dtype(grad) == DISP_DTYPE_FLOAT32 && input_dtype == DISP_DTYPE_FLOAT16
                          ? DISP_DTYPE_FLOAT16
                          : disp__t_dtype(grad);
  disp_tensor *out, *g = NULL, *y = NULL;
  if ((st = disp_tensor_empty(disp__t_sizes(grad), disp__t_ndim(grad), out_dt, disp__t_device(grad), &out)) != DISP_OK)
    return st;
  if (disp__t_numel(output) == 0) {
    *out0 = out;
    return DISP_OK;
  }
  int last = disp__t_ndim(grad) == 0 || d == disp__t_ndim(grad) - 1,
      cpu = disp__t_device_type(grad) == DISP_BACKEND_CPU;
  if (cpu && !supported(disp__t_dtype(grad))) {
    disp_tensor_release(out);
    return disp_set_error(DISP_ERR_TYPE, "\"%s\" not implemented for '%s'",
                          last ? (is_log ? "log_softmax_backward_lastdim_kernel_impl"
                                         : "softmax_backward_lastdim_kernel_impl")
                               : (is_log ? "log_softmax_backward" : "softmax_backward"),
                          disp_dtype_torch_name(disp__t_dtype(grad)));
  }
  /* The kernels read every tensor as grad's element type (Meta agrees). */
  disp_dtype wrong = out_dt != disp__t_dtype(grad)                  ? out_dt
                     : disp__t_dtype(output) != disp__t_dtype(grad) ? disp__t_dtype(output)
                                                                    : disp__t_dtype(grad);
  if (wrong != disp__t_dtype(grad)) {
    disp_tensor_release(out);
    return disp_set_error(DISP_ERR_TYPE, "expected scalar type %s but found %s",
                          disp_dtype_torch_name(disp__t_dtype(grad)), disp_dtype_torch_name(wrong));
  }
  if (!cpu) {
    *out0 = out;
    return DISP_OK;
  }
  st = disp__titer_contiguous_as(grad, disp__t_dtype(grad), &g);
  if (st == DISP_OK)
    st = is_log ? disp__titer_contiguous_as(output, disp__t_dtype(output), &y) : softmax_bwd_output(output, &y);
  if (st == DISP_OK) {
    rows r = rows_of(grad, d);
    if (disp__t_dtype(grad) == DISP_DTYPE_FLOAT32 && r.inner == 1)
      softmax_bwd_f32(data_of(out), data_of(g), data_of(y), r, is_log);
    else
      softmax_bwd_any(out, g, y, r, is_log);
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
disp_status disp__cpu__log_softmax_backward_data(disp_tensor *grad_output, disp_tensor *output, int64_t dim,
                                                 int32_t input_dtype, disp_tensor **out0) {
  return softmax_bwd("_log_softmax_backward_data", 1, grad_output, output, dim, input_dtype, out0);
}
