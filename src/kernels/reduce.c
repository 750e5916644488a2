/*
 * reduce.c - reductions over any set of dims: sum, mean, amax, max.dim,
 * argmax.
 *
 * One engine: an accumulator tensor (float64 for floating results, int64
 * otherwise) of the result's shape, viewed with stride 0 along the reduced
 * dims, iterated together with the input by the shared strided loop (which
 * puts the reduced dims innermost); the accumulator is then converted into
 * the contiguous result. Arg-reductions add a second accumulator for the
 * index and an index operand (0, 1, ... along the reduced dim, stride 0
 * elsewhere). A float32 sum (or mean) of contiguous rows, the common case,
 * instead sums in float with the CPU kernel table (1.13's cascade sum).
 */
#include <math.h>

#include "aten_internal.h"
#include "aten_kernels.h"
#include "cpu/kernels.h"
#include "disp/aten.h"
#include "parallel.h"
#include "tensor/dtype_cast.h"
#include "op_rules.h"
#include "tensor_iter.h"

typedef struct red_ctx { disp_dtype in; } red_ctx;

static inline __attribute__((always_inline)) void sum_f_body(char **d, const int64_t *s, int64_t n,
                                                              disp_dtype dt) {
  double acc = *(double *)d[0];
  if (s[0] == 0) {
    for (int64_t i = 0; i < n; i++) acc += disp__load_double(d[1] + i * s[1], dt);
    *(double *)d[0] = acc;
    return;
  }
  for (int64_t i = 0; i < n; i++) *(double *)(d[0] + i * s[0]) += disp__load_double(d[1] + i * s[1], dt);
}

static void sum_f_loop(char **d, const int64_t *s, int64_t n, const void *ctx) {
  sum_f_body(d, s, n, ((const red_ctx *)ctx)->in);
}

/* float32 input (a bias gradient's sum over the batch): the load's dtype
 * switch out of the loop, the same additions. */
static void sum_f32_in_loop(char **d, const int64_t *s, int64_t n, const void *ctx) {
  (void)ctx;
  sum_f_body(d, s, n, DISP_DTYPE_FLOAT32);
}

static void sum_i_loop(char **d, const int64_t *s, int64_t n, const void *ctx) {
  disp_dtype dt = ((const red_ctx *)ctx)->in;
  for (int64_t i = 0; i < n; i++) {
    uint64_t *a = (uint64_t *)(d[0] + i * s[0]);
    *a += (uint64_t)disp__load_int64(d[1] + i * s[1], dt);
  }
}

/* operands: value acc, index acc, input, index */
static void max_f_loop(char **d, const int64_t *s, int64_t n, const void *ctx) {
  disp_dtype dt = ((const red_ctx *)ctx)->in;
  for (int64_t i = 0; i < n; i++) {
    double *v = (double *)(d[0] + i * s[0]);
    int64_t *ix = (int64_t *)(d[1] + i * s[1]);
    double x = disp__load_double(d[2] + i * s[2], dt);
    if (*ix < 0 || (!isnan(*v) && (isnan(x) || x > *v))) {
      *v = x;
      *ix = *(const int64_t *)(d[3] + i * s[3]);
    }
  }
}

static void max_i_loop(char **d, const int64_t *s, int64_t n, const void *ctx) {
  disp_dtype dt = ((const red_ctx *)ctx)->in;
  for (int64_t i = 0; i < n; i++) {
    int64_t *v = (int64_t *)(d[0] + i * s[0]);
    int64_t *ix = (int64_t *)(d[1] + i * s[1]);
    int64_t x = disp__load_int64(d[2] + i * s[2], dt);
    if (*ix < 0 || x > *v) {
      *v = x;
      *ix = *(const int64_t *)(d[3] + i * s[3]);
    }
  }
}

static char *data_of(const disp_tensor *t) { return disp__t_data(t); }

static void input_strides(const disp_tensor *t, int64_t *s) {
  int64_t isz = (int64_t)disp_dtype_itemsize(disp__t_dtype(t));
  for (int i = 0; i < disp__t_ndim(t); i++) s[i] = disp__t_stride(t, i) * isz;
}

/* A zero-filled accumulator of the result's element count. */
static disp_status new_acc(const int64_t *shape, int nd, disp_dtype dt, disp_tensor **out) {
  disp_status st = disp_tensor_empty(shape, nd, dt, disp_device_make(DISP_BACKEND_CPU, -1), out);
  if (st == DISP_OK && disp__t_numel(*out) > 0)
    memset(disp__storage_data(disp__t_storage(*out)), 0, (size_t)disp__t_numel(*out) * 8);
  return st;
}

/* ---- float32 sums of contiguous rows --------------------------------------- */

/* A long row is summed in blocks whose size depends only on its length (at
 * most MAX_BLOCKS of them, each at least DISP_GRAIN_SIZE), the block sums
 * then summed again: the same association on any number of threads. */
enum { MAX_BLOCKS = 1024 };

static int64_t block_len(int64_t n) {
  int64_t b = (n + MAX_BLOCKS - 1) / MAX_BLOCKS;
  b = (b + DISP_GRAIN_SIZE - 1) / DISP_GRAIN_SIZE * DISP_GRAIN_SIZE;
  return b ? b : DISP_GRAIN_SIZE;
}

typedef struct sum_job {
  const float *in;
  float *out, *part;
  int64_t len, blen;
  float count; /* mean: out[i] = sum / count, as 1.13's sum then div_ */
  int is_mean;
} sum_job;

static void sum_blocks(int64_t b, int64_t e, void *ctx) {
  const sum_job *j = ctx;
  for (int64_t i = b; i < e; i++) {
    int64_t n = j->len - i * j->blen < j->blen ? j->len - i * j->blen : j->blen;
    j->part[i] = disp__cpu_kernels()->sum_f32(j->in + i * j->blen, n);
  }
}

/* One row: its blocks (on this thread), then their sum. */
static float row_sum(const float *p, int64_t len) {
  const disp__cpu_kernel_table *k = disp__cpu_kernels();
  int64_t bl = block_len(len), nb = (len + bl - 1) / bl;
  if (nb <= 1) return k->sum_f32(p, len);
  float part[MAX_BLOCKS];
  sum_job j = {p, NULL, part, len, bl, 0, 0};
  sum_blocks(0, nb, &j);
  return k->sum_f32(part, nb);
}

static void sum_rows(int64_t b, int64_t e, void *ctx) {
  const sum_job *j = ctx;
  for (int64_t i = b; i < e; i++) {
    float v = row_sum(j->in + i * j->len, j->len);
    j->out[i] = j->is_mean ? v / j->count : v;
  }
}

/* out[i] = the sum (mean) of row i of `rows` contiguous rows of len. One
 * row is split into blocks across threads; several rows go whole to a
 * thread each. */
static void sum_f32_rows(const float *in, float *out, int64_t rows, int64_t len, int is_mean) {
  sum_job j = {in, out, NULL, len, block_len(len), (float)len, is_mean};
  if (len == 0) { /* no data pointer to offset: 0, or 0 / 0 for a mean */
    for (int64_t i = 0; i < rows; i++) out[i] = is_mean ? 0.0f / j.count : 0.0f;
    return;
  }
  if (rows == 1 && len > j.blen) {
    float part[MAX_BLOCKS];
    int64_t nb = (len + j.blen - 1) / j.blen;
    j.part = part;
    disp__parallel_for(0, nb, 1, sum_blocks, &j);
    float v = disp__cpu_kernels()->sum_f32(part, nb);
    out[0] = is_mean ? v / j.count : v;
    return;
  }
  int64_t grain = DISP_GRAIN_SIZE / len;
  disp__parallel_for(0, rows, grain < 1 ? 1 : grain, sum_rows, &j);
}

/* Whether self is contiguous float32 with every reduced dim after every
 * kept one (size-1 dims aside): the result's elements are then sums of
 * contiguous rows, *rows of *len. */
static int f32_rows(const disp_tensor *self, uint64_t mask, int64_t *rows, int64_t *len) {
  if (disp__t_dtype(self) != DISP_DTYPE_FLOAT32 || !disp_tensor_is_contiguous(self)) return 0;
  int seen_reduced = 0;
  *rows = *len = 1;
  for (int i = 0; i < disp__t_ndim(self); i++) {
    int red = (mask >> i) & 1;
    if (disp__t_size(self, i) == 1) continue;
    if (!red && seen_reduced) return 0;
    seen_reduced |= red;
    *(red ? len : rows) *= disp__t_size(self, i);
  }
  return 1;
}

/* ---- sum / mean ------------------------------------------------------------ */

disp_dtype disp__sum_dtype(const disp_tensor *self, int32_t dtype, int is_mean) {
  if (dtype >= 0) return (disp_dtype)dtype;
  if (!is_mean && disp_dtype_is_integral(disp__t_dtype(self), 1)) return DISP_DTYPE_INT64;
  return disp__t_dtype(self);
}

static disp_status sum_mean(const char *op, int is_mean, disp_tensor *self, disp_opt_int_list dim, bool keepdim,
                            int32_t dtype, disp_tensor **out0) {
  disp_dtype out_dt = disp__sum_dtype(self, dtype, is_mean);
  if (is_mean && !disp_dtype_is_floating(out_dt))
    return disp_set_error(DISP_ERR_TYPE,
                          "mean(): could not infer output dtype. %s dtype must be either a floating point or "
                          "complex dtype. Got: %s",
                          dtype >= 0 ? "Optional" : "Input", disp_dtype_torch_name(out_dt));
  uint64_t mask;
  int64_t shape[DISP_TITER_MAX_DIMS], nshape[DISP_TITER_MAX_DIMS];
  int nd, nnd;
  const int64_t *dims = dim.has_value ? dim.value.data : NULL;
  size_t ndims = dim.has_value ? dim.value.len : 0;
  disp_status st = disp__reduce_shape(op, self, dims, ndims, keepdim, &mask, shape, &nd);
  if (st != DISP_OK) return st;
  disp_tensor *out;
  if ((st = disp_tensor_empty(shape, nd, out_dt, disp__t_device(self), &out)) != DISP_OK) return st;
  if (disp__t_device_type(self) != DISP_BACKEND_CPU) {
    *out0 = out;
    return DISP_OK;
  }
  /* With dtype= 1.13 converts every element to it first (self.to(dtype)),
   * then reduces: sum(x, dtype=int8) truncates each float. */
  disp_tensor *conv = NULL;
  if (dtype >= 0 && out_dt != disp__t_dtype(self)) {
    if ((st = disp__titer_contiguous_as(self, out_dt, &conv)) != DISP_OK) {
      disp_tensor_release(out);
      return st;
    }
    self = conv;
  }
  /* the accumulator has the result's kept dims (no keepdim ones) */
  disp__reduce_shape(op, self, dims, ndims, false, &mask, nshape, &nnd);
  int64_t rows, len;
  if (out_dt == DISP_DTYPE_FLOAT32 && disp__t_numel(out) > 0 && f32_rows(self, mask, &rows, &len)) {
    sum_f32_rows(len ? (const float *)data_of(self) : NULL, (float *)data_of(out), rows, len, is_mean);
    disp_tensor_release(conv);
    *out0 = out;
    return DISP_OK;
  }
  int fl = disp_dtype_is_floating(out_dt) || disp_dtype_is_floating(disp__t_dtype(self));
  disp_tensor *acc;
  if ((st = new_acc(nshape, nnd, fl ? DISP_DTYPE_FLOAT64 : DISP_DTYPE_INT64, &acc)) != DISP_OK) {
    disp_tensor_release(conv);
    disp_tensor_release(out);
    return st;
  }
  int n = disp__t_ndim(self);
  int64_t strides[2 * DISP_TITER_MAX_DIMS];
  disp__reduce_acc_strides(self, mask, 8, strides);
  input_strides(self, strides + n);
  char *data[2] = {data_of(acc), data_of(self)};
  red_ctx c = {disp__t_dtype(self)};
  disp_titer_loop loop = !fl ? sum_i_loop : disp__t_dtype(self) == DISP_DTYPE_FLOAT32 ? sum_f32_in_loop : sum_f_loop;
  disp__titer_loop_raw(2, data, strides, disp__t_sizes(self), n, loop, &c);
  if (is_mean) {
    int64_t count = 1;
    for (int i = 0; i < n; i++)
      if (mask & ((uint64_t)1 << i)) count *= disp__t_size(self, i);
    double *a = (double *)disp__storage_data(disp__t_storage(acc));
    for (int64_t i = 0; i < disp__t_numel(acc); i++) a[i] /= (double)count;
  }
  /* same element order: copy through a view of out with the acc's shape */
  disp_tensor *ov;
  st = disp_tensor_new_view(out, nshape, NULL, nnd, 0, &ov);
  if (st == DISP_OK) {
    st = disp__titer_copy(ov, acc);
    disp_tensor_release(ov);
  }
  disp_tensor_release(acc);
  disp_tensor_release(conv);
  if (st != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  *out0 = out;
  return DISP_OK;
}

disp_status disp__cpu_sum_dim_IntList(disp_tensor *self, disp_opt_int_list dim, bool keepdim, int32_t dtype,
                                      disp_tensor **out0) {
  return sum_mean("sum", 0, self, dim, keepdim, dtype, out0);
}
disp_status disp__cpu_mean_dim(disp_tensor *self, disp_opt_int_list dim, bool keepdim, int32_t dtype,
                               disp_tensor **out0) {
  return sum_mean("mean", 1, self, dim, keepdim, dtype, out0);
}

disp_status disp__cea_sum(disp_tensor *self, int32_t dtype, disp_tensor **out0) {
  disp_opt_int_list all = {{NULL, 0}, true};
  return disp_aten_sum_dim_IntList(self, all, false, dtype, out0);
}
disp_status disp__cea_mean(disp_tensor *self, int32_t dtype, disp_tensor **out0) {
  disp_opt_int_list all = {{NULL, 0}, true};
  return disp_aten_mean_dim(self, all, false, dtype, out0);
}

/* ---- max-like ---------------------------------------------------------------- */

/* The max over the dims of `mask` of self: values (self's dtype) and/or
 * indices (int64, position along the single reduced dim `idim`). */
static disp_status max_reduce(const char *op, disp_tensor *self, uint64_t mask, int idim, bool keepdim,
                              disp_tensor **values, disp_tensor **indices) {
  int n = disp__t_ndim(self);
  for (int i = 0; i < n; i++)
    if ((mask & ((uint64_t)1 << i)) && disp__t_size(self, i) == 0)
      return disp_set_error(DISP_ERR_INVALID_ARG, "%s(): Expected reduction dim %d to have non-zero size.", op, i);
  int64_t shape[DISP_TITER_MAX_DIMS], nshape[DISP_TITER_MAX_DIMS];
  int nd = 0, nnd = 0;
  for (int i = 0; i < n; i++) {
    int red = (mask & ((uint64_t)1 << i)) != 0;
    if (!red) nshape[nnd++] = disp__t_size(self, i);
    if (!red || keepdim) shape[nd++] = red ? 1 : disp__t_size(self, i);
  }
  disp_tensor *vout = NULL, *iout = NULL, *vacc = NULL, *iacc = NULL, *idx = NULL;
  disp_status st = DISP_OK;
  if (values) st = disp_tensor_empty(shape, nd, disp__t_dtype(self), disp__t_device(self), &vout);
  if (st == DISP_OK && indices) st = disp_tensor_empty(shape, nd, DISP_DTYPE_INT64, disp__t_device(self), &iout);
  if (st != DISP_OK || disp__t_device_type(self) != DISP_BACKEND_CPU) goto done;
  int fl = disp_dtype_is_floating(disp__t_dtype(self));
  if ((st = new_acc(nshape, nnd, fl ? DISP_DTYPE_FLOAT64 : DISP_DTYPE_INT64, &vacc)) != DISP_OK) goto done;
  if ((st = new_acc(nshape, nnd, DISP_DTYPE_INT64, &iacc)) != DISP_OK) goto done;
  int64_t *ia = (int64_t *)disp__storage_data(disp__t_storage(iacc));
  for (int64_t i = 0; i < disp__t_numel(iacc); i++) ia[i] = -1;
  int64_t len = idim >= 0 && n > 0 ? disp__t_size(self, idim) : 1;
  if ((st = disp_tensor_empty(&len, 1, DISP_DTYPE_INT64, disp_device_make(DISP_BACKEND_CPU, -1), &idx)) != DISP_OK)
    goto done;
  for (int64_t i = 0; i < len; i++) ((int64_t *)disp__storage_data(disp__t_storage(idx)))[i] = i;
  int64_t strides[4 * DISP_TITER_MAX_DIMS];
  disp__reduce_acc_strides(self, mask, 8, strides);
  disp__reduce_acc_strides(self, mask, 8, strides + n);
  input_strides(self, strides + 2 * n);
  for (int i = 0; i < n; i++) strides[3 * n + i] = i == idim ? 8 : 0;
  char *data[4] = {data_of(vacc), data_of(iacc), data_of(self), data_of(idx)};
  red_ctx c = {disp__t_dtype(self)};
  disp__titer_loop_raw(4, data, strides, disp__t_sizes(self), n, fl ? max_f_loop : max_i_loop, &c);
  disp_tensor *view;
  if (vout) {
    if ((st = disp_tensor_new_view(vout, nshape, NULL, nnd, 0, &view)) != DISP_OK) goto done;
    st = disp__titer_copy(view, vacc);
    disp_tensor_release(view);
  }
  if (st == DISP_OK && iout) {
    if ((st = disp_tensor_new_view(iout, nshape, NULL, nnd, 0, &view)) != DISP_OK) goto done;
    st = disp__titer_copy(view, iacc);
    disp_tensor_release(view);
  }
done:
  disp_tensor_release(vacc);
  disp_tensor_release(iacc);
  disp_tensor_release(idx);
  if (st != DISP_OK) {
    disp_tensor_release(vout);
    disp_tensor_release(iout);
    return st;
  }
  if (values) *values = vout;
  if (indices) *indices = iout;
  return DISP_OK;
}

static disp_status max_dim_impl(disp_tensor *self, int64_t dim, bool keepdim, disp_tensor **v, disp_tensor **i) {
  int d = 0;
  disp_status st = disp__titer_wrap_dim("max", dim, disp__t_ndim(self), &d);
  if (st != DISP_OK) return st;
  uint64_t mask = disp__t_ndim(self) ? (uint64_t)1 << d : 0;
  return max_reduce("max", self, mask, disp__t_ndim(self) ? d : -1, keepdim, v, i);
}
disp_status disp__cpu_max_dim(disp_tensor *self, int64_t dim, bool keepdim, disp_tensor **out0, disp_tensor **out1) {
  return max_dim_impl(self, dim, keepdim, out0, out1);
}

static disp_status amax_impl(disp_tensor *self, disp_int_list dim, bool keepdim, disp_tensor **out0) {
  uint64_t mask;
  int64_t shape[DISP_TITER_MAX_DIMS];
  int nd;
  disp_status st = disp__reduce_shape("amax", self, dim.data, dim.len, keepdim, &mask, shape, &nd);
  if (st != DISP_OK) return st;
  return max_reduce("amax", self, mask, -1, keepdim, out0, NULL);
}
disp_status disp__cpu_amax(disp_tensor *self, disp_int_list dim, bool keepdim, disp_tensor **out0) {
  return amax_impl(self, dim, keepdim, out0);
}

static disp_status argmax_impl(disp_tensor *self, disp_opt_int dim, bool keepdim, disp_tensor **out0) {
  if (dim.has_value) {
    int d = 0;
    disp_status st = disp__titer_wrap_dim("argmax", dim.value, disp__t_ndim(self), &d);
    if (st != DISP_OK) return st;
    uint64_t mask = disp__t_ndim(self) ? (uint64_t)1 << d : 0;
    return max_reduce("argmax", self, mask, disp__t_ndim(self) ? d : -1, keepdim, NULL, out0);
  }
  if (disp__t_numel(self) == 0)
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  /* no dim: the index into the flattened tensor */
  disp_tensor *flat = NULL, *c = NULL, *r = NULL;
  disp_status st = disp__titer_contiguous_as(self, disp__t_dtype(self), &c);
  int64_t numel = disp__t_numel(self);
  if (st == DISP_OK) st = disp_tensor_new_view(c, &numel, NULL, 1, disp__t_offset(c), &flat);
  if (st == DISP_OK) st = max_reduce("argmax", flat, 1, 0, false, NULL, &r);
  disp_tensor_release(flat);
  disp_tensor_release(c);
  if (st != DISP_OK) return st;
  if (keepdim && disp__t_ndim(self) > 0) {
    int64_t ones[DISP_TITER_MAX_DIMS];
    for (int i = 0; i < disp__t_ndim(self); i++) ones[i] = 1;
    disp_tensor *k;
    st = disp_tensor_new_view(r, ones, NULL, disp__t_ndim(self), 0, &k);
    disp_tensor_release(r);
    if (st != DISP_OK) return st;
    r = k;
  }
  *out0 = r;
  return DISP_OK;
}
disp_status disp__cpu_argmax(disp_tensor *self, disp_opt_int dim, bool keepdim, disp_tensor **out0) {
  return argmax_impl(self, dim, keepdim, out0);
}
