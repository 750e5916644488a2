/*
 * cpu/softmax.c - float32 softmax and log_softmax of the kernel table,
 * in float with vector exp (1.13's SoftMaxKernel.cpp computes float32 this
 * way): over the last dim (rows) and over an inner dim (columns).
 *
 * A row of -inf gives NaN (-inf - -inf), a NaN anywhere in a row makes the
 * row NaN, as in 1.13.
 */
#include <stddef.h>

#include "cpu_kernels_internal.h"

/* NaN-propagating max of a row: one vector accumulator, scalar tail. */
static float row_max(const float *x, int64_t len) {
  int64_t j = 0;
  float m = -INFINITY;
  if (len >= W) {
    V acc = VLOAD(x);
    for (j = W; j + W <= len; j += W) acc = VMAXN(acc, VLOAD(x + j));
    m = disp__hmaxn(acc);
  }
  for (; j < len; j++) m = disp__smaxn(m, x[j]);
  return m;
}

/* The sum of exp(x - mx) over a row, storing the exps to o when o is not
 * NULL. The tail is one padded vector whose extra lanes are masked out of
 * the sum (1.13's map_reduce_all). */
static float row_exp_sum(float *o, const float *x, int64_t len, float mx) {
  const V vm = VSET1(mx);
  V acc = VSET1(0.0f);
  int64_t j = 0;
  for (; j + W <= len; j += W) {
    V e = VEXP(VSUB(VLOAD(x + j), vm));
    if (o) VSTORE(o + j, e);
    acc = VADD(acc, e);
  }
  if (j < len) {
    float t[W];
    VSTORE(t, VEXP(VSUB(disp__vload_part(x + j, len - j, mx), vm)));
    if (o)
      for (int64_t k = 0; k < len - j; k++) o[j + k] = t[k];
    acc = VADD(acc, disp__vload_part(t, len - j, 0.0f));
  }
  return disp__hsum(acc);
}

/* log_softmax of up to W rows: the sums of the rows go through one vector
 * log (1.13's vec::map(log) over its per-chunk sums), not one call a row;
 * each lane's log is the same function, so grouping never changes a bit. */
static void log_rows(float *o, const float *in, int64_t n, int64_t len) {
  float mx[W], lg[W];
  for (int64_t k = 0; k < W; k++) lg[k] = 1.0f;
  for (int64_t k = 0; k < n; k++) {
    mx[k] = row_max(in + k * len, len);
    lg[k] = row_exp_sum(NULL, in + k * len, len, mx[k]);
  }
  VSTORE(lg, VLOG(VLOAD(lg)));
  for (int64_t k = 0; k < n; k++) {
    const float *x = in + k * len;
    float *y = o + k * len;
    /* x - max - log(sum), in that order (1.13 keeps it for precision) */
    const V vm = VSET1(mx[k]), vl = VSET1(lg[k]);
    int64_t j = 0;
    for (; j + W <= len; j += W) VSTORE(y + j, VSUB(VSUB(VLOAD(x + j), vm), vl));
    for (; j < len; j++) y[j] = x[j] - mx[k] - lg[k];
  }
}

void DISP_CPU_FN(softmax_lastdim_f32)(float *o, const float *in, int64_t rows, int64_t len, int is_log) {
  if (is_log) {
    for (int64_t r = 0; r < rows; r += W) log_rows(o + r * len, in + r * len, rows - r < W ? rows - r : W, len);
    return;
  }
  for (int64_t r = 0; r < rows; r++) {
    const float *x = in + r * len;
    float *y = o + r * len;
    float inv = 1.0f / row_exp_sum(y, x, len, row_max(x, len));
    const V vi = VSET1(inv);
    int64_t j = 0;
    for (; j + W <= len; j += W) VSTORE(y + j, VMUL(VLOAD(y + j), vi));
    for (; j < len; j++) y[j] *= inv;
  }
}

/* W columns at once: the column max, the exps and their sum down the dim,
 * then a division by the sum (softmax) or x - max - log(sum). */
static void columns_vec(float *o, const float *in, int64_t len, int64_t inner, int is_log) {
  V mx = VLOAD(in);
  for (int64_t d = 1; d < len; d++) mx = VMAXN(mx, VLOAD(in + d * inner));
  V s = VSET1(0.0f);
  for (int64_t d = 0; d < len; d++) {
    V e = VEXP(VSUB(VLOAD(in + d * inner), mx));
    if (!is_log) VSTORE(o + d * inner, e);
    s = VADD(s, e);
  }
  if (is_log) {
    V lg = VLOG(s);
    for (int64_t d = 0; d < len; d++) VSTORE(o + d * inner, VSUB(VSUB(VLOAD(in + d * inner), mx), lg));
  } else {
    for (int64_t d = 0; d < len; d++) VSTORE(o + d * inner, VDIV(VLOAD(o + d * inner), s));
  }
}

/* One column with libm, as 1.13's scalar tail of these kernels. */
static void column_scalar(float *o, const float *in, int64_t len, int64_t inner, int is_log) {
  float mx = in[0], s = 0.0f;
  for (int64_t d = 1; d < len; d++) mx = disp__smaxn(mx, in[d * inner]);
  for (int64_t d = 0; d < len; d++) {
    float e = expf(in[d * inner] - mx);
    if (!is_log) o[d * inner] = e;
    s += e;
  }
  float lg = logf(s);
  for (int64_t d = 0; d < len; d++) o[d * inner] = is_log ? in[d * inner] - mx - lg : o[d * inner] / s;
}

void DISP_CPU_FN(softmax_inner_f32)(float *o, const float *in, int64_t len, int64_t inner, int64_t c0, int64_t c1,
                                    int is_log) {
  int64_t c = c0;
  for (; c + W <= c1; c += W) columns_vec(o + c, in + c, len, inner, is_log);
  for (; c < c1; c++) column_scalar(o + c, in + c, len, inner, is_log);
}
