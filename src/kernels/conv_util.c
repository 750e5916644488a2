/*
 * conv_util.c - shared helpers of conv.c and pool.c (see conv_util.h).
 */
#include "conv_util.h"

#include <stdio.h>
#include <stdlib.h>

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
  if (t->ndim != 4 || !t->has_strides) return 0;
  static const int order[4] = {1, 3, 2, 0};
  int64_t min = 0;
  if (t->strides[1] == 0) return 0;
  for (int i = 0; i < 4; i++) {
    int d = order[i];
    if (t->sizes[d] == 0) return 0;
    if (t->strides[d] < min) return 0;
    /* Ambiguous layouts count as NCHW. */
    if (d == 0 && min == t->strides[1]) return 0;
    min = t->strides[d];
    /* past int64 no later stride can reach min */
    if (t->sizes[d] > 1 && disp__mul_i64(min, t->sizes[d], &min)) return i == 3;
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

/* Calls f(elem_ptr, logical_index, ctx) for every element in row-major order. */
static void each(const disp_tensor *t, void (*f)(char *p, int64_t i, void *ctx), void *ctx) {
  if (t->numel == 0) return;
  char *base = disp_tensor_data_ptr(t);
  int64_t isz = (int64_t)disp_dtype_itemsize(t->dtype);
  int64_t idx[DISP_TENSOR_MAX_DIMS] = {0};
  int64_t off = 0;
  for (int64_t i = 0; i < t->numel; i++) {
    f(base + off * isz, i, ctx);
    for (int d = t->ndim - 1; d >= 0; d--) {
      if (++idx[d] < t->sizes[d]) {
        off += t->strides[d];
        break;
      }
      off -= t->strides[d] * (idx[d] - 1);
      idx[d] = 0;
    }
  }
}

typedef struct io_ctx { double *v; disp_dtype dt; } io_ctx;
static void load_one(char *p, int64_t i, void *ctx) {
  io_ctx *c = ctx;
  c->v[i] = disp__load_f64(p, c->dt);
}
static void store_one(char *p, int64_t i, void *ctx) {
  io_ctx *c = ctx;
  disp__store_f64(p, c->dt, c->v[i]);
}

double *disp__conv_load(const disp_tensor *t) {
  double *v = malloc(sizeof(double) * (size_t)(t->numel > 0 ? t->numel : 1));
  if (!v) return NULL;
  io_ctx c = {v, t->dtype};
  each(t, load_one, &c);
  return v;
}

void disp__conv_store(disp_tensor *t, const double *v) {
  io_ctx c = {(double *)v, t->dtype};
  each(t, store_one, &c);
}
