/*
 * conv_util.c - shared helpers of conv.c and pool.c (see conv_util.h).
 */
#include "alloc_internal.h"
#include "conv_util.h"

#include <stdio.h>
#include <stdlib.h>

#include "elementwise_copy.h"
#include "gemm.h"
#include "tensor/checked_math_internal.h"

void disp__conv_format_list(char *buf, size_t n, const int64_t *v, int len) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < len && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)v[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
}

void disp__conv_format_i128(char *buf, size_t n, disp__conv_i128 v) {
  char digits[48];
  int k = (int)sizeof digits;
  digits[--k] = '\0';
  /* digits of |v| from the lowest; v's sign kept apart so INT128_MIN works */
  int neg = v < 0;
  do {
    int d = (int)(v % 10);
    digits[--k] = (char)('0' + (d < 0 ? -d : d));
    v /= 10;
  } while (v != 0);
  if (neg) digits[--k] = '-';
  snprintf(buf, n, "%s", digits + k);
}

int disp__conv_channels_last(const disp_tensor *t) {
  if (disp__t_ndim(t) != 4 || !disp__t_has_strides(t)) return 0;
  static const int order[4] = {1, 3, 2, 0};
  int64_t min = 0;
  if (disp__t_stride(t, 1) == 0) return 0;
  for (int i = 0; i < 4; i++) {
    int d = order[i];
    if (disp__t_size(t, d) == 0) return 0;
    if (disp__t_stride(t, d) < min) return 0;
    /* Ambiguous layouts count as NCHW. */
    if (d == 0 && min == disp__t_stride(t, 1)) return 0;
    min = disp__t_stride(t, d);
    /* past int64 no later stride can reach min */
    if (disp__t_size(t, d) > 1 && disp__mul_i64(min, disp__t_size(t, d), &min)) return i == 3;
  }
  return 1;
}

disp_status disp__conv_empty(const int64_t *sizes, int ndim, disp_dtype dt, disp_device dev, int cl,
                             disp_tensor **out) {
  if (!cl || ndim != 4) return disp_tensor_empty(sizes, ndim, dt, dev, out);
  int64_t c = sizes[1] > 1 ? sizes[1] : 1, h = sizes[2] > 1 ? sizes[2] : 1, w = sizes[3] > 1 ? sizes[3] : 1;
  int64_t strides[4] = {h * w * c, 1, w * c, c};
  return disp_tensor_empty_strided(sizes, strides, 4, dt, dev, out);
}

/* Both directions are the one strided copy (elementwise_copy.c: ordered,
 * coalesced, parallel when large); its conversions to and from float64
 * are the ones disp__load_f64/disp__store_f64 make. */
void *disp__conv_load_as(const disp_tensor *t, disp_dtype ct) {
  size_t isz = disp_dtype_itemsize(ct);
  void *v = disp__malloc(isz * (size_t)(disp__t_numel(t) > 0 ? disp__t_numel(t) : 1));
  if (!v) return NULL;
  if (disp__t_numel(t) == 0) return v;
  int64_t cs[DISP_TENSOR_MAX_DIMS];
  disp__tensor_contiguous_strides(disp__t_sizes(t), disp__t_ndim(t), cs);
  disp__ew_copy_strided(v, cs, ct, disp_tensor_data_ptr(t), disp__t_strides(t), disp__t_dtype(t), disp__t_sizes(t),
                        disp__t_ndim(t));
  return v;
}

void disp__conv_store_from(disp_tensor *t, const void *v, disp_dtype ct) {
  if (disp__t_numel(t) == 0) return;
  int64_t cs[DISP_TENSOR_MAX_DIMS];
  disp__tensor_contiguous_strides(disp__t_sizes(t), disp__t_ndim(t), cs);
  disp__ew_copy_strided(disp_tensor_data_ptr(t), disp__t_strides(t), disp__t_dtype(t), v, cs, ct, disp__t_sizes(t),
                        disp__t_ndim(t));
}

double *disp__conv_load(const disp_tensor *t) { return disp__conv_load_as(t, DISP_DTYPE_FLOAT64); }

void disp__conv_store(disp_tensor *t, const double *v) { disp__conv_store_from(t, v, DISP_DTYPE_FLOAT64); }

/* Whether t's own data is already the row-major array of ct. */
static int direct(const disp_tensor *t, disp_dtype ct) {
  return disp__t_numel(t) > 0 && disp__t_dtype(t) == ct && disp_tensor_is_contiguous(t);
}

const void *disp__conv_view_as(const disp_tensor *t, disp_dtype ct, void **owned) {
  *owned = NULL;
  if (direct(t, ct)) return disp_tensor_data_ptr(t);
  return *owned = disp__conv_load_as(t, ct);
}

void *disp__conv_out_as(disp_tensor *t, disp_dtype ct, void **owned) {
  *owned = NULL;
  if (direct(t, ct)) return disp_tensor_data_ptr(t);
  return *owned = disp__malloc(disp_dtype_itemsize(ct) * (size_t)(disp__t_numel(t) > 0 ? disp__t_numel(t) : 1));
}

void disp__conv_out_done(disp_tensor *t, void *owned, disp_dtype ct, int store) {
  if (owned && store) disp__conv_store_from(t, owned, ct);
  disp__free(owned);
}
