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

/* NaN-propagating max of a row: four vector accumulators (a max does not
 * depend on the order; one accumulator made the loop wait on its own
 * latency, a fifth of a 1000-wide softmax), scalar tail. */
static float row_max(const float *x, int64_t len) {
  int64_t j = 0;
  float m = -INFINITY;
  if (len >= W) {
    V a0 = VLOAD(x), a1 = a0, a2 = a0, a3 = a0;
    for (j = W; j + 4 * W <= len; j += 4 * W) {
      a0 = VMAXN(a0, VLOAD(x + j));
      a1 = VMAXN(a1, VLOAD(x + j + W));
      a2 = VMAXN(a2, VLOAD(x + j + 2 * W));
      a3 = VMAXN(a3, VLOAD(x + j + 3 * W));
    }
    for (; j + W <= len; j += W) a0 = VMAXN(a0, VLOAD(x + j));
    m = disp__hmaxn(VMAXN(VMAXN(a0, a1), VMAXN(a2, a3)));
  }
  for (; j < len; j++) m = disp__smaxn(m, x[j]);
  return m;
}

/* y = exp(x - mx) over a row (the tail as one padded vector, as 1.13's
 * vec::map), returning their sum in 1.13's map_reduce_all / reduce_all
 * order (one vector accumulator, the tail padded with zeros, then the lanes
 * as disp__hsum's tree): the sum rides along
 * with the exps, whose calls it waits behind anyway (a separate summing
 * pass cost 6% of a 1000-wide softmax). The next row is prefetched
 * meanwhile: the exps leave the memory idle, and the next row's max pass
 * is the one that waits for it (2% here). */
static float row_exp_sum(float *y, const float *x, int64_t len, float mx) {
  const V vm = VSET1(mx);
  V acc = VSET1(0.0f);
  int64_t j = 0;
  for (; j + W <= len; j += W) {
    __builtin_prefetch(x + len + j);
    V e = VEXP(VSUB(VLOAD(x + j), vm));
    VSTORE(y + j, e);
    acc = VADD(acc, e);
  }
  if (j < len) {
    disp__vstore_part(y + j, VEXP(VSUB(disp__vload_part(x + j, len - j, mx), vm)), len - j);
    acc = VADD(acc, disp__vload_part(y + j, len - j, 0.0f));
  }
  return disp__hsum(acc);
}

/* Rows shorter than two vectors (a classifier's few classes), W rows at a
 * time turned on their side: vector j holds element j of each of the W
 * rows, so the max, the exps, the sums and the outputs of W rows take one
 * vector operation per column (a row a vector left most lanes idle and ran
 * a scalar loop per row). Each lane does what the row-by-row kernel does to
 * its element - the same exp, the same x - max, and the sum in row_exp_sum's
 * order: lanes l and l + W of a row first, then disp__hsum's tree (lane i
 * with lane i + w, w = W/2, ..., 1), the missing lanes zeros as there - so
 * the bits are the row-by-row ones. n <= W rows; the rest of the side is
 * zeros whose results are dropped. */
static void short_rows(float *o, const float *in, int64_t n, int64_t len, int is_log) {
  float t[2 * W][W] = {{0.0f}};
  V c[2 * W], e[2 * W];
  for (int64_t j = 0; j < len; j++)
    for (int64_t r = 0; r < n; r++) t[j][r] = in[r * len + j];
  V mx = VLOAD(t[0]);
  for (int64_t j = 1; j < len; j++) mx = VMAXN(mx, VLOAD(t[j]));
  for (int64_t j = 0; j < len; j++) e[j] = VEXP(VSUB(VLOAD(t[j]), mx));
  for (int64_t l = 0; l < W; l++) c[l] = l >= len ? VSET1(0.0f) : l + W < len ? VADD(e[l], e[l + W]) : e[l];
  for (int w = W / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; l++) c[l] = VADD(c[l], c[l + w]);
  const V lg = is_log ? VLOG(c[0]) : VDIV(VSET1(1.0f), c[0]); /* log(sum) or 1/sum */
  for (int64_t j = 0; j < len; j++)
    VSTORE(t[j], is_log ? VSUB(VSUB(VLOAD(t[j]), mx), lg) : VMUL(e[j], lg));
  for (int64_t j = 0; j < len; j++)
    for (int64_t r = 0; r < n; r++) o[r * len + j] = t[j][r];
}

/* Rows of a block whose exps are in o, maxima mx and exp sums s: softmax
 * scales the exps by 1/sum; log_softmax computes x - max - log(sum), the
 * logs W sums at a time (1.13's vec::map(log) over its per-chunk sums; each
 * lane's log is the same function, so grouping never changes a bit). */
static void finish_rows(float *o, const float *in, int64_t n, int64_t len, const float *mx, const float *s,
                        int is_log) {
  for (int64_t k0 = 0; k0 < n; k0 += W) {
    float lg[W];
    int64_t m = n - k0 < W ? n - k0 : W;
    if (is_log) disp__vstore_part(lg, VLOG(disp__vload_part(s + k0, m, 1.0f)), m);
    for (int64_t k = k0; k < k0 + m; k++) {
      const float *x = in + k * len;
      float *y = o + k * len;
      int64_t j = 0;
      if (is_log) { /* x - max - log(sum), in that order (1.13 keeps it for precision) */
        const V vm = VSET1(mx[k]), vl = VSET1(lg[k - k0]);
        for (; j + W <= len; j += W) VSTORE(y + j, VSUB(VSUB(VLOAD(x + j), vm), vl));
        for (; j < len; j++) y[j] = x[j] - mx[k] - lg[k - k0];
      } else {
        const float inv = 1.0f / s[k];
        const V vi = VSET1(inv);
        for (; j + W <= len; j += W) VSTORE(y + j, VMUL(VLOAD(y + j), vi));
        for (; j < len; j++) y[j] *= inv;
      }
    }
  }
}

/* Blocks of rows: short ones W at a time (short_rows); long ones W at a
 * time for log_softmax (for its grouped logs), one at a time for softmax
 * (its exps still in L1 when they are scaled). log_softmax keeps its exps
 * in the output row until x - max - log(sum) overwrites them. */
void DISP_CPU_FN(softmax_lastdim_f32)(float *o, const float *in, int64_t rows, int64_t len, int is_log) {
  const int is_short = len < 2 * W;
  const int64_t block = is_short || is_log ? W : 1;
  for (int64_t r = 0; r < rows; r += block) {
    float mx[W], s[W];
    int64_t n = rows - r < block ? rows - r : block;
    const float *x = in + r * len;
    float *y = o + r * len;
    if (is_short) {
      short_rows(y, x, n, len, is_log);
      continue;
    }
    for (int64_t k = 0; k < n; k++) {
      mx[k] = row_max(x + k * len, len);
      s[k] = row_exp_sum(y + k * len, x + k * len, len, mx[k]);
    }
    finish_rows(y, x, n, len, mx, s, is_log);
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

/* sum of a[j] * (b ? b[j] : 1) over a row in 1.13's map2_reduce_all /
 * reduce_all order: a row shorter than a vector lane by lane; else one
 * vector accumulator from the first vector on, the tail padded with zeros,
 * then the lanes as disp__hsum's tree. */
static float row_dot(const float *a, const float *b, int64_t len) {
  if (len < W) {
    float s = b ? a[0] * b[0] : a[0];
    for (int64_t j = 1; j < len; j++) s += b ? a[j] * b[j] : a[j];
    return s;
  }
  V acc = b ? VMUL(VLOAD(a), VLOAD(b)) : VLOAD(a);
  int64_t j = W;
  for (; j + W <= len; j += W) acc = VADD(acc, b ? VMUL(VLOAD(a + j), VLOAD(b + j)) : VLOAD(a + j));
  if (j < len) {
    V t = disp__vload_part(a + j, len - j, 0.0f);
    acc = VADD(acc, b ? VMUL(t, disp__vload_part(b + j, len - j, 0.0f)) : t);
  }
  return disp__hsum(acc);
}

static inline V softmax_grad(V g, V y, V sum, int is_log) {
  return is_log ? VSUB(g, VMUL(VEXP(y), sum)) : VMUL(VSUB(g, sum), y);
}

void DISP_CPU_FN(softmax_backward_lastdim_f32)(float *o, const float *g, const float *y, int64_t rows, int64_t len,
                                               int is_log) {
  for (int64_t r = 0; r < rows; r++, o += len, g += len, y += len) {
    const V sum = VSET1(row_dot(g, is_log ? NULL : y, len));
    int64_t j = 0;
    for (; j + W <= len; j += W) VSTORE(o + j, softmax_grad(VLOAD(g + j), VLOAD(y + j), sum, is_log));
    if (j < len)
      disp__vstore_part(o + j,
                        softmax_grad(disp__vload_part(g + j, len - j, 0.0f), disp__vload_part(y + j, len - j, 0.0f),
                                     sum, is_log),
                        len - j);
  }
}
