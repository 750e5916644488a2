/*
 * layer_norm.c - aten::native_layer_norm, aten::native_layer_norm_backward
 * and the aten::layer_norm composite, as 1.13's layer_norm_cpu,
 * layer_norm_backward_cpu and layer_norm_symint compute them.
 *
 * The input is M rows of N elements (N the product of normalized_shape).
 * A row is read twice while it sits in the cache: its mean, then the sum of
 * squared deviations from that mean (two passes are as sound as 1.13's
 * Welford moments and vectorise without a serial dependency), and written
 * once. Rows are spread over threads; each row's result is independent of
 * the thread count. float32 computes in float, as 1.13; float64 in double.
 * bfloat16 is widened to float32, but its moments are 1.13's: a Welford
 * pass in bfloat16 arithmetic (reference cases show its rounding), the
 * normalisation in float. Sums use LANES partial accumulators so the
 * compiler can keep them in one vector register. A row holding inf or NaN
 * gets NaN moments, as 1.13's Welford gives.
 *
 * The backward reads mean and rstd as 1.13 does: the first M elements
 * from their data pointers, whatever their strides.
 *
 * mean and rstd have the input's dtype and the shape input.shape[:axis] +
 * [1] * len(normalized_shape). One body serves the CPU and the Meta key
 * (manifest: META_IS_CPU): off the CPU only geometry is made.
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

#define MAX_DIMS 64
#define LANES 8
#define SIZES_TEXT 512

/* [2, 3] as PyTorch prints an IntArrayRef. */
static void format_list(char *buf, size_t n, const int64_t *v, size_t len) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (size_t i = 0; i < len && k < n; i++) k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)v[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
}

static int same_shape(const disp_tensor *t, disp_int_list shape) {
  if ((size_t)disp__t_ndim(t) != shape.len) return 0;
  for (size_t i = 0; i < shape.len; i++)
    if (disp__t_size(t, (int)i) != shape.data[i]) return 0;
  return 1;
}

/* 1.13's _check_layer_norm_inputs, its messages; sets *m and *n. */
static disp_status check_inputs(disp_tensor *input, disp_int_list ns, disp_tensor *weight, disp_tensor *bias,
                                int64_t *m, int64_t *n) {
  char a[SIZES_TEXT], b[SIZES_TEXT];
  format_list(a, sizeof a, ns.data, ns.len);
  if (ns.len < 1)
    return disp_set_error(DISP_ERR_INVALID_ARG, "Expected normalized_shape to be at least 1-dimensional, i.e., "
                          "containing at least one element, but got normalized_shape = %s", a);
  const char *which[2] = {"weight", "bias"};
  disp_tensor *params[2] = {weight, bias};
  for (int p = 0; p < 2; p++) {
    if (!params[p] || same_shape(params[p], ns)) continue;
    format_list(b, sizeof b, disp__t_sizes(params[p]), (size_t)disp__t_ndim(params[p]));
    return disp_set_error(DISP_ERR_INVALID_ARG, "Expected %s to be of same shape as normalized_shape, but got %s of "
                          "shape %s and normalized_shape = %s", which[p], which[p], b, a);
  }
  int nd = disp__t_ndim(input), axis = nd - (int)ns.len;
  int ok = axis >= 0;
  for (size_t i = 0; ok && i < ns.len; i++) ok = disp__t_size(input, axis + (int)i) == ns.data[i];
  if (!ok) {
    char tail[SIZES_TEXT];
    size_t k = 0;
    tail[0] = 0;
    for (size_t i = 0; i < ns.len && k < sizeof tail; i++)
      k += (size_t)snprintf(tail + k, sizeof tail - k, ", %lld", (long long)ns.data[i]);
    format_list(b, sizeof b, disp__t_sizes(input), (size_t)nd);
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "Given normalized_shape=%s, expected input with shape [*%s], but got input of size%s", a, tail, b);
  }
  *m = 1, *n = 1;
  for (int d = 0; d < nd; d++) *(d < axis ? m : n) *= disp__t_size(input, d);
  return DISP_OK;
}

/* 1.13's kernels read every tensor as the input's type (data_ptr<T>):
 * another dtype is refused with its message. */
static disp_status check_dtypes(disp_tensor *input, disp_tensor *const *ts, int n) {
  disp_dtype dt = disp__t_dtype(input);
  for (int i = 0; i < n; i++)
    if (ts[i] && disp__t_dtype(ts[i]) != dt)
      return disp_set_error(DISP_ERR_TYPE, "expected scalar type %s but found %s", disp_dtype_torch_name(dt),
                            disp_dtype_torch_name(disp__t_dtype(ts[i])));
  return DISP_OK;
}

static int supported(disp_dtype dt) {
  return dt == DISP_DTYPE_FLOAT32 || dt == DISP_DTYPE_FLOAT64 || dt == DISP_DTYPE_BFLOAT16;
}

/* ---- the row kernels, one copy per compute type ------------------------------ */

/* Sum of f(x[j]) over a row with LANES partial sums (vectorisable). */
#define ROW_SUM(T, n, expr, out)                                         \
  do {                                                                   \
    T acc_[LANES] = {0};                                                 \
    int64_t j = 0;                                                       \
    for (; j + LANES <= (n); j += LANES)                                 \
      for (int l_ = 0; l_ < LANES; l_++) {                               \
        int64_t jj = j + l_;                                             \
        acc_[l_] += (expr);                                              \
      }                                                                  \
    T s_ = 0;                                                            \
    for (int l_ = 0; l_ < LANES; l_++) s_ += acc_[l_];                   \
    for (; j < (n); j++) {                                               \
      int64_t jj = j;                                                    \
      s_ += (expr);                                                      \
    }                                                                    \
    (out) = s_;                                                          \
  } while (0)

/* y = (x * rstd - mean * rstd) * gamma + beta over one row; mean and rstd
 * by two passes over the cached row. */
#define DEF_FWD_ROW(T, S, SQRT)                                                                              \
  static void fwd_row_##S(const T *x, int64_t n, const T *g, const T *b, T eps, T *y, T *mean, T *rstd,     \
                          T (*round_stat)(T)) {                                                              \
    T sum, sq, mu, var;                                                                                      \
    ROW_SUM(T, n, x[jj], sum);                                                                               \
    if (round_stat) { /* bfloat16: 1.13's Welford updates in bfloat16, each step rounded */                 \
      T (*r_)(T) = round_stat;                                                                               \
      mu = 0, sq = 0;                                                                                        \
      for (int64_t j = 0; j < n; j++) {                                                                      \
        T d = r_(x[j] - mu);                                                                                 \
        mu = r_(mu + r_(d / (T)(j + 1)));                                                                    \
        sq = r_(sq + r_(d * r_(x[j] - mu)));                                                                 \
      }                                                                                                      \
      var = r_(sq / (T)n);                                                                                   \
    } else if (isfinite(sum)) {                                                                              \
      mu = sum / (T)n;                                                                                       \
      ROW_SUM(T, n, (x[jj] - mu) * (x[jj] - mu), sq);                                                        \
      var = sq / (T)n;                                                                                       \
    } else { /* inf or NaN in the row: 1.13's moments are NaN */                                           \
      mu = var = (T)NAN;                                                                                     \
    }                                                                                                        \
    T r = (T)1 / SQRT((var < 0 ? 0 : var) + eps); /* NaN stays NaN, as std::max(var, 0) */                   \
    if (round_stat) r = round_stat((T)1 / round_stat(SQRT(round_stat((var < 0 ? 0 : var) + eps))));          \
    T shift = -r * mu;                                                                                       \
    if (round_stat) shift = round_stat(shift);                                                               \
    for (int64_t j = 0; j < n; j++) {                                                                        \
      T v = x[j] * r + shift;                                                                                \
      if (g) v *= g[j];                                                                                      \
      if (b) v += b[j];                                                                                      \
      y[j] = v;                                                                                              \
    }                                                                                                        \
    *mean = mu, *rstd = r;                                                                                   \
  }

/* dx of one row: with dyg = dy * gamma, ds = sum(dyg * x), db = sum(dyg),
 * dx = rstd * dyg + b * x + c, b = (db * mean - ds) * rstd^3 / N,
 * c = -b * mean - db * rstd / N. */
#define DEF_BWD_ROW(T, S)                                                                                     \
  static void bwd_row_##S(const T *dy, const T *x, int64_t n, const T *g, T mean, T rstd, T *dx) {           \
    T ds, db;                                                                                                 \
    if (g) {                                                                                                  \
      ROW_SUM(T, n, dy[jj] * g[jj] * x[jj], ds);                                                              \
      ROW_SUM(T, n, dy[jj] * g[jj], db);                                                                      \
    } else {                                                                                                  \
      ROW_SUM(T, n, dy[jj] * x[jj], ds);                                                                      \
      ROW_SUM(T, n, dy[jj], db);                                                                              \
    }                                                                                                         \
    T scale = (T)1 / (T)n, bb = (db * mean - ds) * rstd * rstd * rstd * scale, c = -bb * mean - db * rstd * scale; \
    for (int64_t j = 0; j < n; j++) dx[j] = rstd * dy[j] * (g ? g[j] : (T)1) + bb * x[j] + c;                 \
  }

/* dgamma[j] += dy * (x - mean) * rstd and dbeta[j] += dy over rows, for
 * the columns [c0, c1): row order fixed, so thread-count independent. */
#define DEF_PARAM_COLS(T, S)                                                                                  \
  static void param_cols_##S(const T *dy, const T *x, const T *mean, const T *rstd, int64_t m, int64_t n,     \
                             int64_t c0, int64_t c1, T *dg, T *dbeta) {                                       \
    for (int64_t j = c0; j < c1; j++) {                                                                       \
      if (dg) dg[j] = 0;                                                                                      \
      if (dbeta) dbeta[j] = 0;                                                                                \
    }                                                                                                         \
    for (int64_t i = 0; i < m; i++) {                                                                         \
      const T *dyr = dy + i * n, *xr = x + i * n;                                                             \
      T r = rstd[i], sh = -rstd[i] * mean[i];                                                                 \
      if (dg)                                                                                                 \
        for (int64_t j = c0; j < c1; j++) dg[j] += dyr[j] * (xr[j] * r + sh);                                 \
      if (dbeta)                                                                                              \
        for (int64_t j = c0; j < c1; j++) dbeta[j] += dyr[j];                                                 \
    }                                                                                                         \
  }

/* 1.13 computes a bfloat16 row's moments in bfloat16 (Welford, every step
 * rounded) and normalises it as x * rstd + (-rstd * mean) with that shift
 * rounded to bfloat16 too, the rest in float. */
static float round_bf16(float v) { return disp__bf16_to_float(disp__float_to_bf16(v)); }

DEF_FWD_ROW(float, f32, sqrtf)
DEF_FWD_ROW(double, f64, sqrt)
DEF_BWD_ROW(double, f64)
DEF_PARAM_COLS(double, f64)

/* ---- threading ------------------------------------------------------------- */

typedef struct ln_job {
  const void *x, *dy, *g, *b, *mean_in, *rstd_in;
  void *y, *mean, *rstd, *dx, *dg, *dbeta;
  int64_t m, n;
  double eps;
  int is_f64, is_bf16;
} ln_job;

#define COL_BLOCK 64

static void fwd_rows(int64_t b0, int64_t b1, void *ctx) {
  const ln_job *j = ctx;
  if (!j->is_f64 && !j->is_bf16) { /* float32: the kernel table's vector rows */
    disp__cpu_kernels()->layer_norm_rows_f32((const float *)j->x + b0 * j->n, b1 - b0, j->n, j->g, j->b,
                                             (float)j->eps, (float *)j->y + b0 * j->n, (float *)j->mean + b0,
                                             (float *)j->rstd + b0);
    return;
  }
  for (int64_t i = b0; i < b1; i++) {
    if (j->is_f64)
      fwd_row_f64((const double *)j->x + i * j->n, j->n, j->g, j->b, j->eps, (double *)j->y + i * j->n,
                  (double *)j->mean + i, (double *)j->rstd + i, NULL);
    else
      fwd_row_f32((const float *)j->x + i * j->n, j->n, j->g, j->b, (float)j->eps, (float *)j->y + i * j->n,
                  (float *)j->mean + i, (float *)j->rstd + i, j->is_bf16 ? round_bf16 : NULL);
  }
}

static void bwd_rows(int64_t b0, int64_t b1, void *ctx) {
  const ln_job *j = ctx;
  if (!j->is_f64) {
    disp__cpu_kernels()->layer_norm_backward_rows_f32((const float *)j->dy + b0 * j->n, (const float *)j->x + b0 * j->n,
                                                      b1 - b0, j->n, j->g, (const float *)j->mean_in + b0,
                                                      (const float *)j->rstd_in + b0, (float *)j->dx + b0 * j->n);
    return;
  }
  for (int64_t i = b0; i < b1; i++)
    bwd_row_f64((const double *)j->dy + i * j->n, (const double *)j->x + i * j->n, j->n, j->g,
                ((const double *)j->mean_in)[i], ((const double *)j->rstd_in)[i], (double *)j->dx + i * j->n);
}

static void param_blocks(int64_t b0, int64_t b1, void *ctx) {
  const ln_job *j = ctx;
  for (int64_t blk = b0; blk < b1; blk++) {
    int64_t c0 = blk * COL_BLOCK, c1 = c0 + COL_BLOCK < j->n ? c0 + COL_BLOCK : j->n;
    if (j->is_f64)
      param_cols_f64(j->dy, j->x, j->mean_in, j->rstd_in, j->m, j->n, c0, c1, j->dg, j->dbeta);
    else
      disp__cpu_kernels()->layer_norm_param_grads_f32(j->dy, j->x, j->mean_in, j->rstd_in, j->m, j->n, c0, c1, j->dg,
                                                      j->dbeta);
  }
}

/* Rows per task: about DISP_GRAIN_SIZE elements (at least one row). */
static int64_t row_grain(int64_t n) { return n > 0 && DISP_GRAIN_SIZE / n > 0 ? DISP_GRAIN_SIZE / n : 1; }

/* ---- tensors ----------------------------------------------------------------- */

/* A contiguous copy of t in the compute type (float64 stays, the rest
 * float32), or NULL for a NULL t. */
static disp_status compute_copy(disp_tensor *t, disp_dtype ct, disp_tensor **out) {
  *out = NULL;
  return t ? disp__titer_contiguous_as(t, ct, out) : DISP_OK;
}

/* mean or rstd as 1.13's backward reads it: the first m elements of its
 * memory from its data pointer, whatever its strides (a strided mean is
 * read as if contiguous), converted to the compute type. Where the storage
 * holds fewer than that (1.13 would read past it) the strided values are
 * used instead. */
static disp_status stats_copy(disp_tensor *t, int64_t m, disp_dtype ct, disp_tensor **out) {
  size_t isz = disp_dtype_itemsize(disp__t_dtype(t));
  size_t have = disp__storage_nbytes(disp__t_storage(t)) / isz;
  if (disp_tensor_is_contiguous(t) || have < (size_t)disp__t_offset(t) + (size_t)m) return compute_copy(t, ct, out);
  disp_tensor *raw = NULL;
  disp_status st = disp_tensor_empty(&m, 1, disp__t_dtype(t), disp__t_device(t), &raw);
  if (st != DISP_OK) return st;
  if (m > 0) memcpy(disp__t_data(raw), disp__t_data(t), (size_t)m * isz);
  st = compute_copy(raw, ct, out);
  disp_tensor_release(raw);
  return st;
}

static void *data_or_null(disp_tensor *t) { return t ? disp__t_data(t) : NULL; }

/* Releases every tensor of ts[0..n). */
static void release_all(disp_tensor **ts, int n) {
  for (int i = 0; i < n; i++) disp_tensor_release(ts[i]), ts[i] = NULL;
}

/* *dst = src converted to dt (src consumed; retained as is when already dt). */
static disp_status cast_into(disp_tensor **src, disp_dtype dt, disp_tensor **dst) {
  if (disp__t_dtype(*src) == dt) {
    *dst = *src, *src = NULL;
    return DISP_OK;
  }
  disp_status st = disp__titer_contiguous_as(*src, dt, dst);
  disp_tensor_release(*src), *src = NULL;
  return st;
}

/* mean and rstd's shape: input.shape[:axis] + [1] * normalized dims. */
static void stat_shape(const disp_tensor *input, size_t nn, int64_t *shape) {
  int nd = disp__t_ndim(input);
  for (int d = 0; d < nd; d++) shape[d] = d < nd - (int)nn ? disp__t_size(input, d) : 1;
}

static disp_status ln_forward_compute(disp_tensor *input, disp_tensor *weight, disp_tensor *bias, double eps,
                                      int64_t m, int64_t n, disp_tensor *outs[3]) {
  disp_dtype dt = disp__t_dtype(input), ct = dt == DISP_DTYPE_FLOAT64 ? dt : DISP_DTYPE_FLOAT32;
  disp_tensor *t[6] = {0}; /* x, gamma, beta, y, mean, rstd in the compute type */
  disp_status st = compute_copy(input, ct, &t[0]);
  if (st == DISP_OK) st = compute_copy(weight, ct, &t[1]);
  if (st == DISP_OK) st = compute_copy(bias, ct, &t[2]);
  int64_t ms = m;
  for (int k = 0; k < 3 && st == DISP_OK; k++) /* results straight into outs when no rounding follows */
    if (ct == dt) t[3 + k] = disp_tensor_retain(outs[k]);
    else st = disp_tensor_empty(k ? &ms : disp__t_sizes(input), k ? 1 : disp__t_ndim(input), ct, disp__t_device(input),
                                &t[3 + k]);
  if (st == DISP_OK) {
    ln_job j = {.x = disp__t_data(t[0]), .g = data_or_null(t[1]), .b = data_or_null(t[2]), .y = disp__t_data(t[3]),
                .mean = disp__t_data(t[4]), .rstd = disp__t_data(t[5]), .m = m, .n = n, .eps = eps,
                .is_f64 = ct == DISP_DTYPE_FLOAT64, .is_bf16 = dt == DISP_DTYPE_BFLOAT16};
    disp__parallel_for(0, m, row_grain(n), fwd_rows, &j);
  }
  disp_tensor *r[3] = {0};
  for (int k = 0; k < 3 && st == DISP_OK && ct != dt; k++) st = cast_into(&t[3 + k], dt, &r[k]);
  for (int k = 0; k < 3 && st == DISP_OK && ct != dt; k++) /* same element count, so a plain copy */
    if (disp__t_numel(outs[k]) > 0) memcpy(disp__t_data(outs[k]), disp__t_data(r[k]), (size_t)disp__t_numel(outs[k]) * disp_dtype_itemsize(dt));
  release_all(t, 6), release_all(r, 3);
  return st;
}

disp_status disp__cpu_native_layer_norm(disp_tensor *input, disp_int_list normalized_shape, disp_tensor *weight,
                                        disp_tensor *bias, double eps, disp_tensor **out0, disp_tensor **out1,
                                        disp_tensor **out2) {
  int64_t m = 0, n = 0, shape[MAX_DIMS];
  disp_status st = check_inputs(input, normalized_shape, weight, bias, &m, &n);
  if (st != DISP_OK) return st;
  int nd = disp__t_ndim(input);
  disp_dtype dt = disp__t_dtype(input);
  int on_cpu = disp__t_device_type(input) == DISP_BACKEND_CPU;
  if (nd > MAX_DIMS) return disp_set_error(DISP_ERR_INVALID_ARG, "native_layer_norm: too many dimensions");
  if (on_cpu && !supported(dt))
    return disp_set_error(DISP_ERR_TYPE, "\"LayerNormKernelImpl\" not implemented for '%s'", disp_dtype_torch_name(dt));
  if ((st = check_dtypes(input, (disp_tensor *[]){weight, bias}, 2)) != DISP_OK) return st;
  stat_shape(input, normalized_shape.len, shape);
  disp_tensor *outs[3] = {0};
  st = disp_tensor_empty(disp__t_sizes(input), nd, dt, disp__t_device(input), &outs[0]);
  for (int k = 1; k < 3 && st == DISP_OK; k++) st = disp_tensor_empty(shape, nd, dt, disp__t_device(input), &outs[k]);
  if (st == DISP_OK && on_cpu && m > 0) st = ln_forward_compute(input, weight, bias, eps, m, n, outs);
  if (st != DISP_OK) {
    release_all(outs, 3);
    return st;
  }
  *out0 = outs[0], *out1 = outs[1], *out2 = outs[2];
  return DISP_OK;
}

/* ---- backward ---------------------------------------------------------------- */

/* The tensors of one backward call in the compute type: dy, x, mean, rstd,
 * gamma, then the results dx, dgamma, dbeta. */
enum { B_DY, B_X, B_MEAN, B_RSTD, B_G, B_DX, B_DG, B_DB, B_COUNT };

static disp_status ln_backward_compute(disp_tensor *const in[5], const bool mask[3], int64_t m, int64_t n,
                                       disp_tensor *outs[3]) {
  disp_dtype dt = disp__t_dtype(in[B_X]), ct = dt == DISP_DTYPE_FLOAT64 ? dt : DISP_DTYPE_FLOAT32;
  disp_tensor *t[B_COUNT] = {0};
  disp_status st = DISP_OK;
  for (int k = 0; k < 5 && st == DISP_OK; k++)
    st = k == B_MEAN || k == B_RSTD ? stats_copy(in[k], m, ct, &t[k]) : compute_copy(in[k], ct, &t[k]);
  for (int k = 0; k < 3 && st == DISP_OK; k++)
    if (outs[k] && ct == dt) t[B_DX + k] = disp_tensor_retain(outs[k]);
    else if (outs[k])
      st = disp_tensor_empty(disp__t_sizes(outs[k]), disp__t_ndim(outs[k]), ct, disp__t_device(outs[k]), &t[B_DX + k]);
  if (st == DISP_OK) {
    ln_job j = {.dy = disp__t_data(t[B_DY]), .x = disp__t_data(t[B_X]), .mean_in = disp__t_data(t[B_MEAN]),
                .rstd_in = disp__t_data(t[B_RSTD]), .g = data_or_null(t[B_G]), .dx = data_or_null(t[B_DX]),
                .dg = data_or_null(t[B_DG]), .dbeta = data_or_null(t[B_DB]), .m = m, .n = n,
                .is_f64 = ct == DISP_DTYPE_FLOAT64};
    if (mask[0] && m > 0) disp__parallel_for(0, m, row_grain(n), bwd_rows, &j);
    if (j.dg || j.dbeta) disp__parallel_for(0, (n + COL_BLOCK - 1) / COL_BLOCK, 1, param_blocks, &j);
  }
  for (int k = 0; k < 3 && st == DISP_OK; k++) {
    if (!outs[k] || ct == dt) continue;
    disp_tensor *r = NULL;
    st = cast_into(&t[B_DX + k], dt, &r);
    if (st == DISP_OK && disp__t_numel(outs[k]) > 0)
      memcpy(disp__t_data(outs[k]), disp__t_data(r), (size_t)disp__t_numel(outs[k]) * disp_dtype_itemsize(dt));
    disp_tensor_release(r);
  }
  release_all(t, B_COUNT);
  return st;
}

disp_status disp__cpu_native_layer_norm_backward(disp_tensor *grad_out, disp_tensor *input,
                                                 disp_int_list normalized_shape, disp_tensor *mean, disp_tensor *rstd,
                                                 disp_tensor *weight, disp_tensor *bias, disp_bool_list output_mask,
                                                 disp_tensor **out0, disp_tensor **out1, disp_tensor **out2) {
  int64_t m = 0, n = 0;
  disp_status st = check_inputs(input, normalized_shape, weight, bias, &m, &n);
  if (st != DISP_OK) return st;
  disp_dtype dt = disp__t_dtype(input);
  int on_cpu = disp__t_device_type(input) == DISP_BACKEND_CPU;
  if (on_cpu && !supported(dt))
    return disp_set_error(DISP_ERR_TYPE, "\"LayerNormBackwardKernelImpl\" not implemented for '%s'",
                          disp_dtype_torch_name(dt));
  disp_tensor *read[5] = {grad_out, mean, rstd, weight, output_mask.data[2] ? bias : NULL}; /* dbeta: like bias */
  if ((st = check_dtypes(input, read, 5)) != DISP_OK) return st;
  if ((output_mask.data[1] && !weight) || (output_mask.data[2] && !bias)) /* 1.13: empty_like(undefined) */
    return disp_set_error(DISP_ERR_INVALID_ARG, "tensor does not have a device");
  /* 1.13 reads the first M * N elements of grad_out and M of mean and rstd
   * without checking their shapes; fewer would be read past their end */
  if (disp__t_numel(grad_out) < m * n || disp__t_numel(mean) < m || disp__t_numel(rstd) < m)
    return disp_set_error(DISP_ERR_INVALID_ARG, "native_layer_norm_backward: grad_out, mean or rstd has fewer "
                          "elements than input's %lld rows of %lld", (long long)m, (long long)n);
  bool mask[3] = {output_mask.data[0], output_mask.data[1], output_mask.data[2]};
  disp_tensor *params[3] = {input, weight, bias}, *outs[3] = {0};
  for (int k = 0; k < 3 && st == DISP_OK; k++) /* no gradient for an absent parameter */
    if (mask[k] && params[k])
      st = disp_tensor_empty(disp__t_sizes(params[k]), disp__t_ndim(params[k]), dt, disp__t_device(input), &outs[k]);
  if (st == DISP_OK && on_cpu) {
    if (m > 0 && n > 0) {
      disp_tensor *in[5] = {grad_out, input, mean, rstd, weight};
      st = ln_backward_compute(in, mask, m, n, outs);
    } else { /* nothing to sum: zero parameter gradients */
      for (int k = 1; k < 3; k++)
        if (outs[k] && disp__t_numel(outs[k]) > 0) memset(disp__t_data(outs[k]), 0, (size_t)disp__t_numel(outs[k]) * disp_dtype_itemsize(dt));
    }
  }
  if (st != DISP_OK) {
    release_all(outs, 3);
    return st;
  }
  *out0 = outs[0], *out1 = outs[1], *out2 = outs[2];
  return DISP_OK;
}

/* ---- layer_norm ---------------------------------------------------------------- */

/* 1.13's layer_norm_symint: native_layer_norm's first result. */
disp_status disp__cia_layer_norm(disp_tensor *input, disp_int_list normalized_shape, disp_tensor *weight,
                                 disp_tensor *bias, double eps, bool cudnn_enable, disp_tensor **out0) {
  (void)cudnn_enable; /* deprecated in 1.13, ignored there too */
  disp_tensor *mean = NULL, *rstd = NULL;
  disp_status st = disp_aten_native_layer_norm(input, normalized_shape, weight, bias, eps, out0, &mean, &rstd);
  disp_tensor_release(mean), disp_tensor_release(rstd);
  return st;
}
