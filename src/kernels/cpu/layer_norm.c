/*
 * cpu/layer_norm.c - float32 layer norm rows for the kernel table
 * (cpu/kernels.h), compiled once per capability.
 *
 * A row (a GPT's is 128 floats, half an L1 line set) is read while cached:
 * its sum, then its squared deviations from the mean (two passes, exact
 * enough without Welford's serial dependency), then the normalised output.
 * Two vector accumulators hide the add latency; lanes are combined by
 * disp__hsum and the tail added in scalar. A row holding inf or NaN gets
 * NaN moments (1.13's Welford gives NaN there too).
 */
#include "cpu_kernels_internal.h"

/* sum of a[j] * (b ? b[j] : 1) * (c ? c[j] : 1) over a row */
static float row_dot3(const float *a, const float *b, const float *c, int64_t n) {
  V s0 = VSET1(0.0f), s1 = VSET1(0.0f);
  int64_t j = 0;
  for (; j + 2 * W <= n; j += 2 * W) {
    V a0 = VLOAD(a + j), a1 = VLOAD(a + j + W);
    if (b) a0 = VMUL(a0, VLOAD(b + j)), a1 = VMUL(a1, VLOAD(b + j + W));
    if (c) a0 = VMUL(a0, VLOAD(c + j)), a1 = VMUL(a1, VLOAD(c + j + W));
    s0 = VADD(s0, a0), s1 = VADD(s1, a1);
  }
  float s = disp__hsum(VADD(s0, s1));
  for (; j < n; j++) s += a[j] * (b ? b[j] : 1.0f) * (c ? c[j] : 1.0f);
  return s;
}

/* sum of (x[j] - mu)^2 over a row */
static float row_sqdev(const float *x, float mu, int64_t n) {
  V m = VSET1(mu), s0 = VSET1(0.0f), s1 = VSET1(0.0f);
  int64_t j = 0;
  for (; j + 2 * W <= n; j += 2 * W) {
    V d0 = VSUB(VLOAD(x + j), m), d1 = VSUB(VLOAD(x + j + W), m);
    s0 = VADD(s0, VMUL(d0, d0)), s1 = VADD(s1, VMUL(d1, d1));
  }
  float s = disp__hsum(VADD(s0, s1));
  for (; j < n; j++) s += (x[j] - mu) * (x[j] - mu);
  return s;
}

/* o[j] = (x[j] * p + q) * g[j] + b[j] (g, b optional) */
static void row_affine(float *o, const float *x, float p, float q, const float *g, const float *b, int64_t n) {
  V vp = VSET1(p), vq = VSET1(q);
  int64_t j = 0;
  for (; j + W <= n; j += W) {
    V v = VADD(VMUL(VLOAD(x + j), vp), vq);
    if (g) v = VMUL(v, VLOAD(g + j));
    if (b) v = VADD(v, VLOAD(b + j));
    VSTORE(o + j, v);
  }
  for (; j < n; j++) {
    float v = x[j] * p + q;
    if (g) v *= g[j];
    if (b) v += b[j];
    o[j] = v;
  }
}

void DISP_CPU_FN(layer_norm_rows_f32)(const float *x, int64_t rows, int64_t n, const float *g, const float *b,
                                      float eps, float *y, float *mean, float *rstd) {
  for (int64_t i = 0; i < rows; i++) {
    const float *xr = x + i * n;
    float sum = row_dot3(xr, NULL, NULL, n), mu = NAN, var = NAN;
    if (isfinite(sum)) mu = sum / (float)n, var = row_sqdev(xr, mu, n) / (float)n;
    float r = 1.0f / sqrtf((var < 0 ? 0 : var) + eps); /* NaN stays NaN, as std::max(var, 0) */
    row_affine(y + i * n, xr, r, -r * mu, g, b, n);
    mean[i] = mu, rstd[i] = r;
  }
}

void DISP_CPU_FN(layer_norm_backward_rows_f32)(const float *dy, const float *x, int64_t rows, int64_t n,
                                               const float *g, const float *mean, const float *rstd, float *dx) {
  float inv_n = 1.0f / (float)n;
  for (int64_t i = 0; i < rows; i++) {
    const float *dyr = dy + i * n, *xr = x + i * n;
    float ds = row_dot3(dyr, g, xr, n), db = row_dot3(dyr, g, NULL, n), a = rstd[i];
    float bb = (db * mean[i] - ds) * a * a * a * inv_n, c = -bb * mean[i] - db * a * inv_n;
    V va = VSET1(a), vb = VSET1(bb), vc = VSET1(c);
    float *o = dx + i * n;
    int64_t j = 0;
    for (; j + W <= n; j += W) {
      V d = VLOAD(dyr + j);
      if (g) d = VMUL(d, VLOAD(g + j));
      VSTORE(o + j, VADD(VADD(VMUL(va, d), VMUL(vb, VLOAD(xr + j))), vc));
    }
    for (; j < n; j++) o[j] = a * dyr[j] * (g ? g[j] : 1.0f) + bb * xr[j] + c;
  }
}

void DISP_CPU_FN(layer_norm_param_grads_f32)(const float *dy, const float *x, const float *mean, const float *rstd,
                                             int64_t rows, int64_t n, int64_t c0, int64_t c1, float *dg, float *db) {
  for (int64_t j = c0; j < c1; j++) {
    if (dg) dg[j] = 0;
    if (db) db[j] = 0;
  }
  for (int64_t i = 0; i < rows; i++) {
    const float *dyr = dy + i * n, *xr = x + i * n;
    float r = rstd[i], sh = -rstd[i] * mean[i];
    V vr = VSET1(r), vs = VSET1(sh);
    int64_t j = c0;
    for (; j + W <= c1; j += W) {
      V d = VLOAD(dyr + j);
      if (dg) VSTORE(dg + j, VADD(VLOAD(dg + j), VMUL(d, VADD(VMUL(VLOAD(xr + j), vr), vs))));
      if (db) VSTORE(db + j, VADD(VLOAD(db + j), d));
    }
    for (; j < c1; j++) {
      if (dg) dg[j] += dyr[j] * (xr[j] * r + sh);
      if (db) db[j] += dyr[j];
    }
  }
}
