/*
 * embedding.c - aten::embedding (rows of a weight table picked by integer
 * indices) and aten::embedding_dense_backward (their gradient: grad_output
 * rows summed into a zero table), as 1.13's embedding (index_select on the
 * flattened indices) and embedding_dense_backward_cpu compute them.
 *
 * One body serves the CPU and the Meta key (manifest: META_IS_CPU): for a
 * tensor that is not on the CPU only the result's geometry is made (1.13's
 * Meta index_select checks no index values either).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aten_internal.h"
#include "aten_kernels.h"
#include "tensor/dtype_cast.h"
#include "disp/keyset.h"
#include "tensor_iter.h"

#define MAX_DIMS 64

/* 1.13's name of a tensor's type in messages: CPUFloatType. */
static const char *tensor_type_name(const disp_tensor *t) {
  static _Thread_local char buf[64];
  snprintf(buf, sizeof buf, "%s%sType", disp_backend_name(disp__t_device_type(t)),
           disp_dtype_torch_name(disp__t_dtype(t)));
  return buf;
}

/* 1.13's checkScalarTypes for an index argument (Long or Int). */
static disp_status check_indices(disp_tensor *indices, int pos, const char *op) {
  disp_dtype dt = disp__t_dtype(indices);
  if (dt == DISP_DTYPE_INT64 || dt == DISP_DTYPE_INT32) return DISP_OK;
  return disp_set_error(DISP_ERR_TYPE,
                        "Expected tensor for argument #%d 'indices' to have one of the following scalar types: "
                        "Long, Int; but got %s instead (while checking arguments for %s)",
                        pos, tensor_type_name(indices), op);
}

static int64_t index_at(const char *base, disp_dtype dt, int64_t i) {
  return dt == DISP_DTYPE_INT64 ? ((const int64_t *)base)[i] : ((const int32_t *)base)[i];
}

/* Copies weight row idx[i] to out row i for every i; fails on the first
 * index outside [0, rows) as index_select does. */
static disp_status gather_rows(const char *w, const char *idx, disp_dtype idt, int64_t n, int64_t rows,
                               size_t row_bytes, char *out) {
  for (int64_t i = 0; i < n; i++) {
    int64_t k = index_at(idx, idt, i);
    if (k < 0 || k >= rows) return disp_set_error(DISP_ERR_INVALID_ARG, "index out of range in self");
    if (row_bytes) memcpy(out + (size_t)i * row_bytes, w + (size_t)k * row_bytes, row_bytes); /* no data at width 0 */
  }
  return DISP_OK;
}

disp_status disp__cpu_embedding(disp_tensor *weight, disp_tensor *indices, int64_t padding_idx,
                                bool scale_grad_by_freq, bool sparse, disp_tensor **out0) {
  (void)padding_idx, (void)scale_grad_by_freq, (void)sparse; /* they only shape the gradient */
  if (disp__t_ndim(weight) != 2) return disp_set_error(DISP_ERR_INVALID_ARG, "'weight' must be 2-D");
  disp_status st = check_indices(indices, 1, "embedding");
  if (st != DISP_OK) return st;
  if (disp__t_size(weight, 0) == 0 && disp__t_numel(indices) > 0) /* geometry alone refuses it, Meta too */
    return disp_set_error(DISP_ERR_INVALID_ARG, "index_select(): self indexing axis dim should be positive");
  int ni = disp__t_ndim(indices), nd = ni + 1;
  if (nd > MAX_DIMS) return disp_set_error(DISP_ERR_INVALID_ARG, "embedding: too many dimensions");
  int64_t sizes[MAX_DIMS];
  for (int d = 0; d < ni; d++) sizes[d] = disp__t_size(indices, d);
  sizes[ni] = disp__t_size(weight, 1);
  disp_tensor *out = NULL, *w = NULL, *ix = NULL;
  if ((st = disp_tensor_empty(sizes, nd, disp__t_dtype(weight), disp__t_device(weight), &out)) != DISP_OK) return st;
  if (disp__t_device_type(weight) != DISP_BACKEND_CPU || disp__t_numel(indices) == 0) {
    *out0 = out;
    return DISP_OK;
  }
  st = disp__titer_contiguous_as(weight, disp__t_dtype(weight), &w);
  if (st == DISP_OK) st = disp__titer_contiguous_as(indices, disp__t_dtype(indices), &ix);
  size_t row_bytes = (size_t)sizes[ni] * disp_dtype_itemsize(disp__t_dtype(weight));
  if (st == DISP_OK)
    st = gather_rows(disp__t_data(w), disp__t_data(ix), disp__t_dtype(ix), disp__t_numel(ix), disp__t_size(weight, 0),
                     row_bytes, disp__t_data(out));
  disp_tensor_release(w), disp_tensor_release(ix);
  if (st != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  *out0 = out;
  return DISP_OK;
}

/* ---- embedding_dense_backward ------------------------------------------------ */

/* The occurrences of each index value in [0, rows) (1.13 counts every
 * index, the padding index too). A new array, NULL when out of memory. */
static int64_t *count_indices(const char *idx, disp_dtype idt, int64_t n, int64_t rows) {
  int64_t *counts = calloc(rows > 0 ? (size_t)rows : 1, sizeof *counts);
  if (!counts) return NULL;
  for (int64_t i = 0; i < n; i++) {
    int64_t k = index_at(idx, idt, i);
    if (k >= 0 && k < rows) counts[k]++;
  }
  return counts;
}

/* d += alpha * s over one row of width elements of dtype dt: floats in
 * their compute type (float32 for the 16-bit ones, rounded once), integers
 * and bool with alpha cast to the integer, as 1.13's add_stub. */
static void add_row(char *d, const char *s, int64_t width, disp_dtype dt, double alpha) {
  size_t isz = disp_dtype_itemsize(dt);
  if (dt == DISP_DTYPE_FLOAT32) {
    float *df = (float *)d, a = (float)alpha;
    const float *sf = (const float *)s;
    for (int64_t j = 0; j < width; j++) df[j] += a * sf[j];
  } else if (dt == DISP_DTYPE_FLOAT64) {
    double *dd = (double *)d;
    const double *sd = (const double *)s;
    for (int64_t j = 0; j < width; j++) dd[j] += alpha * sd[j];
  } else if (dt == DISP_DTYPE_BFLOAT16 || dt == DISP_DTYPE_FLOAT16) {
    for (int64_t j = 0; j < width; j++) {
      float a = (float)disp__load_double(d + (size_t)j * isz, dt), b = (float)disp__load_double(s + (size_t)j * isz, dt);
      disp__store_double(d + (size_t)j * isz, dt, (double)(a + (float)alpha * b));
    }
  } else {
    int64_t ai = dt == DISP_DTYPE_BOOL ? alpha != 0 : disp__double_to_int64(alpha); /* Scalar.to<T>() */
    for (int64_t j = 0; j < width; j++) {
      int64_t a = disp__load_int64(d + (size_t)j * isz, dt), b = disp__load_int64(s + (size_t)j * isz, dt);
      disp__store_int64(d + (size_t)j * isz, dt, dt == DISP_DTYPE_BOOL ? (a || (ai && b)) : a + ai * b);
    }
  }
}

/* gw[k] += scale * g[i] for each index k = idx[i] other than padding_idx,
 * in index order (scale 1 / count[k] with counts, else 1). Indices
 * outside [0, rows) are skipped: 1.13 never writes them either. */
static void scatter_add_rows(const char *g, const char *idx, disp_dtype idt, int64_t n, int64_t width,
                             disp_dtype dt, int64_t padding_idx, const int64_t *counts, int64_t rows, char *gw) {
  size_t row_bytes = (size_t)width * disp_dtype_itemsize(dt);
  for (int64_t i = 0; i < n; i++) {
    int64_t k = index_at(idx, idt, i);
    if (k == padding_idx || k < 0 || k >= rows) continue;
    add_row(gw + (size_t)k * row_bytes, g + (size_t)i * row_bytes, width, dt, counts ? 1.0 / (double)counts[k] : 1.0);
  }
}

disp_status disp__cpu_embedding_dense_backward(disp_tensor *grad_output, disp_tensor *indices, int64_t num_weights,
                                               int64_t padding_idx, bool scale_grad_by_freq, disp_tensor **out0) {
  disp_status st = check_indices(indices, 2, "embedding_backward");
  if (st != DISP_OK) return st;
  int gd = disp__t_ndim(grad_output);
  if (gd == 0) return disp_set_error(DISP_ERR_INVALID_ARG, "Dimension specified as -1 but tensor has no dimensions");
  int64_t width = disp__t_size(grad_output, gd - 1), n = disp__t_numel(indices);
  if (disp__t_numel(grad_output) != n * width) /* 1.13 views grad_output as (indices, width) */
    return disp_set_error(DISP_ERR_INVALID_ARG, "shape '[%lld, %lld]' is invalid for input of size %lld", (long long)n,
                          (long long)width, (long long)disp__t_numel(grad_output));
  if (num_weights < 0) return disp_set_error(DISP_ERR_INVALID_ARG, "embedding_dense_backward: negative num_weights");
  disp_dtype dt = disp__t_dtype(grad_output);
  int64_t sizes[2] = {num_weights, width};
  disp_tensor *gw = NULL, *g = NULL, *ix = NULL;
  if ((st = disp_tensor_empty(sizes, 2, dt, disp__t_device(grad_output), &gw)) != DISP_OK) return st;
  if (disp__t_device_type(grad_output) == DISP_BACKEND_CPU && disp__t_numel(gw) > 0) /* all bits clear: zero in every dtype; no data when empty */
    memset(disp__t_data(gw), 0, (size_t)disp__t_numel(gw) * disp_dtype_itemsize(dt));
  /* nothing to add: no indices, or rows of width 0 or no rows (no data to point into) */
  if (disp__t_device_type(grad_output) != DISP_BACKEND_CPU || disp__t_numel(indices) == 0 || disp__t_numel(gw) == 0) {
    *out0 = gw;
    return DISP_OK;
  }
  st = disp__titer_contiguous_as(grad_output, dt, &g);
  if (st == DISP_OK) st = disp__titer_contiguous_as(indices, disp__t_dtype(indices), &ix);
  int64_t *counts = NULL;
  if (st == DISP_OK && scale_grad_by_freq &&
      !(counts = count_indices(disp__t_data(ix), disp__t_dtype(ix), n, num_weights)))
    st = disp_set_error(DISP_ERR_NO_MEMORY, "embedding_dense_backward: out of memory");
  if (st == DISP_OK)
    scatter_add_rows(disp__t_data(g), disp__t_data(ix), disp__t_dtype(ix), n, width, dt, padding_idx, counts,
                     num_weights, disp__t_data(gw));
  free(counts);
  disp_tensor_release(g), disp_tensor_release(ix);
  if (st != DISP_OK) {
    disp_tensor_release(gw);
    return st;
  }
  *out0 = gw;
  return DISP_OK;
}
