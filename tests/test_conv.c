/*
 * test_conv - convolution (1-D, 2-D, 3-D, groups, stride, padding,
 * dilation, transposed; with a bias) against a naive direct loop,
 * convolution_backward against the adjoint identities <conv(x) + b, dy> =
 * <x, dX> + <b, db> = <w, dW> + <b, db>, both GEMM paths, Meta geometry
 * against CPU, and max-pooling corner cases.
 * Inputs are multiples of 1/8, so float64 results are exact.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "disp/random.h"
#include "gemm.h"
#include "test.h"

static uint64_t g_state = 99;
static double rnd8(void) {
  g_state = g_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)((int64_t)((g_state >> 33) % 49) - 24) / 8.0;
}

static disp_device cpu(void) { return disp_device_make(DISP_BACKEND_CPU, -1); }

static disp_tensor *randt(const int64_t *sz, int nd) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sz, nd, DISP_DTYPE_FLOAT64, cpu(), &t) != DISP_OK) return NULL;
  double *p = disp_tensor_data_ptr(t);
  for (int64_t i = 0; i < disp_tensor_numel(t); i++) p[i] = rnd8();
  return t;
}

static disp_int_list il(const int64_t *v, int n) {
  disp_int_list l = {v, (size_t)n};
  return l;
}

/* Naive regular convolution over 3 padded spatial dims (contiguous float64). */
typedef struct cfg {
  int sd;
  int64_t n, ci, co, g, in[3], k[3], s[3], p[3], d[3], op[3];
} cfg;

static int64_t outsz(const cfg *c, int i, int transposed) {
  return transposed ? (c->in[i] - 1) * c->s[i] - 2 * c->p[i] + c->d[i] * (c->k[i] - 1) + c->op[i] + 1
                    : (c->in[i] + 2 * c->p[i] - c->d[i] * (c->k[i] - 1) - 1) / c->s[i] + 1;
}

/* y[n][co][o] += x[n][ci][i] * w[...] for every (input, kernel) pair: the
 * regular conv gathers, the transposed one scatters through the same pairs. */
static void naive(const cfg *c, int transposed, const double *x, const double *w, double *y) {
  int64_t o[3], ci_g = c->ci / c->g, co_g = c->co / c->g;
  for (int i = 0; i < 3; i++) o[i] = outsz(c, i, transposed);
  int64_t IN = c->in[0] * c->in[1] * c->in[2], OUT = o[0] * o[1] * o[2], K = c->k[0] * c->k[1] * c->k[2];
  memset(y, 0, sizeof(double) * (size_t)(c->n * c->co * OUT));
  for (int64_t n = 0; n < c->n; n++)
    for (int64_t g = 0; g < c->g; g++)
      for (int64_t a = 0; a < co_g; a++)
        for (int64_t b = 0; b < ci_g; b++)
          for (int64_t kd = 0; kd < c->k[0]; kd++)
            for (int64_t kh = 0; kh < c->k[1]; kh++)
              for (int64_t kw = 0; kw < c->k[2]; kw++) {
                int64_t kk = (kd * c->k[1] + kh) * c->k[2] + kw;
                /* regular: w[co][ci/g][k]; transposed: w[ci][co/g][k] */
                double wv = transposed ? w[((g * ci_g + b) * co_g + a) * K + kk] : w[((g * co_g + a) * ci_g + b) * K + kk];
                const int64_t *lo = transposed ? c->in : o; /* the gathered-from side */
                for (int64_t u0 = 0; u0 < lo[0]; u0++)
                  for (int64_t u1 = 0; u1 < lo[1]; u1++)
                    for (int64_t u2 = 0; u2 < lo[2]; u2++) {
                      int64_t v0 = u0 * c->s[0] - c->p[0] + kd * c->d[0];
                      int64_t v1 = u1 * c->s[1] - c->p[1] + kh * c->d[1];
                      int64_t v2 = u2 * c->s[2] - c->p[2] + kw * c->d[2];
                      const int64_t *hi = transposed ? o : c->in;
                      if (v0 < 0 || v1 < 0 || v2 < 0 || v0 >= hi[0] || v1 >= hi[1] || v2 >= hi[2]) continue;
                      int64_t ui = (u0 * lo[1] + u1) * lo[2] + u2, vi = (v0 * hi[1] + v1) * hi[2] + v2;
                      if (!transposed)
                        y[(n * c->co + g * co_g + a) * OUT + ui] += wv * x[(n * c->ci + g * ci_g + b) * IN + vi];
                      else
                        y[(n * c->co + g * co_g + a) * OUT + vi] += wv * x[(n * c->ci + g * ci_g + b) * IN + ui];
                    }
              }
}

static void sizes_of(const cfg *c, int transposed, int64_t *xs, int64_t *ws, int *nd) {
  int sd = c->sd;
  xs[0] = c->n, xs[1] = c->ci;
  if (!transposed) ws[0] = c->co, ws[1] = c->ci / c->g;
  else ws[0] = c->ci, ws[1] = c->co / c->g;
  for (int i = 0; i < sd; i++) xs[2 + i] = c->in[3 - sd + i], ws[2 + i] = c->k[3 - sd + i];
  *nd = sd + 2;
}

static double dot(const disp_tensor *a, const disp_tensor *b) {
  const double *p = disp_tensor_data_ptr(a), *q = disp_tensor_data_ptr(b);
  double s = 0;
  for (int64_t i = 0; i < disp_tensor_numel(a); i++) s += p[i] * q[i];
  return s;
}

static int run_case(const cfg *c, int transposed) {
  int64_t xs[5], ws[5];
  int nd;
  sizes_of(c, transposed, xs, ws, &nd);
  int64_t nb = c->co;
  disp_tensor *x = randt(xs, nd), *w = randt(ws, nd), *b = randt(&nb, 1), *y = NULL, *y2 = NULL;
  int sd = c->sd;
  int64_t st[3], pd[3], dl[3], op[3];
  for (int i = 0; i < sd; i++) st[i] = c->s[3 - sd + i], pd[i] = c->p[3 - sd + i], dl[i] = c->d[3 - sd + i], op[i] = c->op[3 - sd + i];
  ASSERT_OK(disp_aten_convolution(x, w, b, il(st, sd), il(pd, sd), il(dl, sd), transposed, il(op, sd), c->g, &y));
  disp__gemm_force_portable(1);
  ASSERT_OK(disp_aten_convolution(x, w, b, il(st, sd), il(pd, sd), il(dl, sd), transposed, il(op, sd), c->g, &y2));
  disp__gemm_force_portable(0);
  int64_t n = disp_tensor_numel(y), plane = n / (c->n * c->co);
  double *ref = malloc(sizeof(double) * (size_t)(n + 1));
  naive(c, transposed, disp_tensor_data_ptr(x), disp_tensor_data_ptr(w), ref);
  for (int64_t i = 0; i < n; i++) ref[i] += ((const double *)disp_tensor_data_ptr(b))[i / plane % c->co];
  const double *got = disp_tensor_data_ptr(y), *got2 = disp_tensor_data_ptr(y2);
  for (int64_t i = 0; i < n; i++)
    if (got[i] != ref[i] || got2[i] != ref[i])
      TEST_FAIL_("sd=%d transposed=%d at %lld: blas %g portable %g want %g", sd, transposed, (long long)i,
                 got[i], got2[i], ref[i]);
  /* Backward through the adjoint identities. */
  disp_tensor *dy = NULL, *gi = NULL, *gw = NULL, *gb = NULL;
  dy = randt(disp_tensor_sizes(y), disp_tensor_ndim(y));
  bool mask[3] = {true, true, true};
  disp_bool_list ml = {mask, 3};
  int64_t bsz = disp_tensor_sizes(y)[1];
  disp_opt_int_list bs = {{&bsz, 1}, true};
  /* output_padding only means something transposed; backward refuses it otherwise */
  int64_t nopad[3] = {0, 0, 0};
  ASSERT_OK(disp_aten_convolution_backward(dy, x, w, bs, il(st, sd), il(pd, sd), il(dl, sd), transposed,
                                           il(transposed ? op : nopad, sd), c->g, ml, &gi, &gw, &gb));
  if (!transposed && sd == 2) {
    disp_tensor *e0 = NULL, *e1 = NULL, *e2 = NULL;
    int64_t pad1[2] = {1, 1};
    ASSERT_STATUS(disp_aten_convolution_backward(dy, x, w, bs, il(st, sd), il(pd, sd), il(dl, sd), false,
                                                 il(pad1, 2), c->g, ml, &e0, &e1, &e2),
                  DISP_ERR_INVALID_ARG);
    ASSERT_CONTAINS(disp_last_error(), "output_padding is not supported for non-transposed convolutions; got: [1, 1]");
    ASSERT_TRUE(e0 == NULL && e1 == NULL && e2 == NULL);
  }
  /* <conv(x) + b, dy> = <x, dX> + <b, db> = <w, dW> + <b, db> */
  double lhs = dot(y, dy) - dot(b, gb);
  ASSERT_TRUE(lhs == dot(x, gi));
  ASSERT_TRUE(lhs == dot(w, gw));
  double sum = 0;
  const double *dyp = disp_tensor_data_ptr(dy), *gbp = disp_tensor_data_ptr(gb);
  for (int64_t i = 0; i < disp_tensor_numel(dy); i++) sum += dyp[i];
  double gsum = 0;
  for (int64_t i = 0; i < bsz; i++) gsum += gbp[i];
  ASSERT_TRUE(sum == gsum);
  free(ref);
  disp_tensor_release(x), disp_tensor_release(w), disp_tensor_release(b), disp_tensor_release(y);
  disp_tensor_release(y2), disp_tensor_release(dy), disp_tensor_release(gi), disp_tensor_release(gw), disp_tensor_release(gb);
  return 0;
}

TEST(conv_matches_naive_and_adjoints) {
  static const cfg cases[] = {
      /* sd  n ci co g   in        k        s        p        d        op */
      {2, 1, 2, 3, 1, {1, 4, 4}, {1, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}},
      {2, 2, 4, 6, 2, {1, 7, 5}, {1, 3, 2}, {1, 2, 1}, {0, 1, 2}, {1, 1, 2}, {0, 0, 0}},
      {2, 1, 3, 3, 3, {1, 6, 6}, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}, {1, 1, 1}, {0, 1, 1}},
      {1, 2, 2, 4, 1, {1, 1, 9}, {1, 1, 3}, {1, 1, 2}, {0, 0, 1}, {1, 1, 2}, {0, 0, 1}},
      {3, 1, 2, 2, 1, {4, 5, 3}, {2, 2, 2}, {1, 2, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 0}},
      {2, 3, 6, 4, 2, {1, 9, 8}, {1, 4, 3}, {1, 3, 2}, {0, 2, 1}, {1, 2, 1}, {0, 2, 1}},
      /* stride 1, output as wide as the input: conv_prim.h's shifted-plane
       * path (padding, dilation, a height that shrinks, depth stride 2,
       * padding wider than the row: only the centre tap inside) */
      {2, 2, 3, 4, 1, {1, 6, 5}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}, {1, 1, 1}, {0, 0, 0}},
      {2, 1, 4, 2, 2, {1, 5, 7}, {1, 3, 3}, {1, 1, 1}, {0, 2, 2}, {1, 2, 2}, {0, 0, 0}},
      {2, 1, 2, 2, 1, {1, 5, 6}, {1, 2, 3}, {1, 1, 1}, {0, 0, 1}, {1, 1, 1}, {0, 0, 0}},
      {3, 1, 2, 3, 1, {4, 5, 6}, {3, 3, 3}, {2, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}},
      {2, 1, 1, 2, 1, {1, 4, 2}, {1, 3, 3}, {1, 1, 1}, {0, 3, 3}, {1, 3, 3}, {0, 0, 0}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int t = 0; t < 2; t++)
      if (run_case(&cases[i], t)) return 1;
  return 0;
}

/* A float32 copy of a float64 tensor. */
static disp_tensor *as_f32(const disp_tensor *t) {
  disp_tensor *f = NULL;
  if (disp_tensor_empty(disp_tensor_sizes(t), disp_tensor_ndim(t), DISP_DTYPE_FLOAT32, cpu(), &f) != DISP_OK)
    return NULL;
  const double *p = disp_tensor_data_ptr(t);
  float *q = disp_tensor_data_ptr(f);
  for (int64_t i = 0; i < disp_tensor_numel(t); i++) q[i] = (float)p[i];
  return f;
}

/* Elementwise equal: a float32 result and the float64 one (multiples of
 * 1/64 with small sums: exact in both). */
static int same_values(const disp_tensor *f, const disp_tensor *d) {
  const float *p = disp_tensor_data_ptr(f);
  const double *q = disp_tensor_data_ptr(d);
  for (int64_t i = 0; i < disp_tensor_numel(d); i++)
    if ((double)p[i] != q[i]) TEST_FAIL_("at %lld: float32 %g, float64 %g", (long long)i, (double)p[i], q[i]);
  return 0;
}

/* Float32 against float64 (exact in both) on geometry c: the forward with
 * a bias and the three gradients. */
static int f32_matches_f64(const cfg *c, int transposed) {
  int64_t xs[5], ws[5];
  int nd, sd = c->sd;
  sizes_of(c, transposed, xs, ws, &nd);
  int64_t st[3], pd[3], dl[3], op[3] = {0, 0, 0}, nb = c->co;
  for (int i = 0; i < sd; i++) st[i] = c->s[3 - sd + i], pd[i] = c->p[3 - sd + i], dl[i] = c->d[3 - sd + i];
  for (int i = 0; i < sd && transposed; i++) op[i] = c->op[3 - sd + i]; /* (backward refuses it otherwise) */
  disp_tensor *d[3] = {randt(xs, nd), randt(ws, nd), randt(&nb, 1)}, *f[3];
  for (int i = 0; i < 3; i++) f[i] = as_f32(d[i]);
  disp_tensor *r[2][4] = {{NULL}}, *dy[2] = {NULL};
  bool mask[3] = {true, true, true};
  disp_bool_list ml = {mask, 3};
  disp_opt_int_list bsz = {{&nb, 1}, true};
  for (int k = 0; k < 2; k++) {
    disp_tensor **t = k ? f : d;
    ASSERT_OK(disp_aten_convolution(t[0], t[1], t[2], il(st, sd), il(pd, sd), il(dl, sd), transposed, il(op, sd),
                                    c->g, &r[k][0]));
    dy[k] = k ? as_f32(dy[0]) : randt(disp_tensor_sizes(r[0][0]), nd);
    ASSERT_OK(disp_aten_convolution_backward(dy[k], t[0], t[1], bsz, il(st, sd), il(pd, sd), il(dl, sd), transposed,
                                             il(op, sd), c->g, ml, &r[k][1], &r[k][2], &r[k][3]));
  }
  for (int k = 0; k < 4; k++)
    if (same_values(r[1][k], r[0][k])) return 1;
  for (int k = 0; k < 4; k++) disp_tensor_release(r[0][k]), disp_tensor_release(r[1][k]);
  for (int i = 0; i < 3; i++) disp_tensor_release(d[i]), disp_tensor_release(f[i]);
  disp_tensor_release(dy[0]), disp_tensor_release(dy[1]);
  return 0;
}

/* Note [Small convolutions] (conv.c): few input channels x taps (ck <=
 * 16) take the kernel table's conv_small kernels in float32 (in AVX2 and
 * AVX-512; BLAS in the baseline, as past the bound): against float64 on
 * many geometries, transposed too (whose forward is a regular input
 * gradient: BLAS), with output rows and positions past the kernels'
 * blocks (odd channel counts, planes of 117, 70, 9, 1). */
TEST(small_convolutions_match_float64) {
  static const cfg cases[] = {
      /* sd  n ci co g   in          k        s        p        d        op */
      {2, 3, 1, 5, 1, {1, 9, 13}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}, {1, 1, 1}, {0, 0, 0}},  /* the CNN's first layer */
      {2, 2, 4, 6, 2, {1, 7, 5}, {1, 3, 2}, {1, 2, 1}, {0, 1, 2}, {1, 1, 2}, {0, 0, 0}},   /* groups, ck 6 */
      {1, 2, 2, 3, 1, {1, 1, 40}, {1, 1, 5}, {1, 1, 2}, {0, 0, 2}, {1, 1, 1}, {0, 0, 1}},  /* 1-D, ck 10 */
      {3, 1, 2, 3, 1, {3, 4, 5}, {2, 2, 2}, {1, 1, 1}, {1, 0, 1}, {1, 1, 1}, {0, 0, 0}},   /* 3-D, ck 16 */
      {2, 1, 1, 7, 1, {1, 6, 70}, {1, 4, 4}, {1, 1, 1}, {0, 2, 1}, {1, 1, 2}, {0, 0, 0}},  /* ck 16, dilation */
      {2, 2, 17, 3, 1, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}},  /* ck 17: BLAS */
      {2, 2, 3, 3, 3, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}},   /* one position, row, tap */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int t = 0; t < 2; t++)
      if (f32_matches_f64(&cases[i], t)) TEST_FAIL_("case %zu transposed=%d", i, t);
  return 0;
}

/* The float32 primitives (sgemm, the vector row add of col2im, the vector
 * plane sums of the bias gradient, planes of 117: tails past the vectors)
 * on a CNN's 3x3 "same" convolution, forward and the three gradients,
 * against float64. */
TEST(conv_float32_matches_float64) {
  const int64_t xs[4] = {3, 4, 9, 13}, ws[4] = {5, 4, 3, 3}, ys[4] = {3, 5, 9, 13}, one[2] = {1, 1}, nb = 5;
  disp_tensor *x = randt(xs, 4), *w = randt(ws, 4), *dy = randt(ys, 4);
  disp_tensor *xf = as_f32(x), *wf = as_f32(w), *dyf = as_f32(dy);
  ASSERT_TRUE(x && w && dy && xf && wf && dyf);
  bool mask[3] = {true, true, true};
  disp_bool_list ml = {mask, 3};
  disp_opt_int_list bsz = {{&nb, 1}, true};
  const int64_t zero[2] = {0, 0};
  disp_tensor *r[2][4] = {{NULL}};
  for (int f = 0; f < 2; f++) {
    ASSERT_OK(disp_aten_convolution(f ? xf : x, f ? wf : w, NULL, il(one, 2), il(one, 2), il(one, 2), false,
                                    il(zero, 2), 1, &r[f][0]));
    ASSERT_OK(disp_aten_convolution_backward(f ? dyf : dy, f ? xf : x, f ? wf : w, bsz, il(one, 2), il(one, 2),
                                             il(one, 2), false, il(zero, 2), 1, ml, &r[f][1], &r[f][2], &r[f][3]));
  }
  for (int k = 0; k < 4; k++)
    if (same_values(r[1][k], r[0][k])) return 1;
  for (int f = 0; f < 2; f++)
    for (int k = 0; k < 4; k++) disp_tensor_release(r[f][k]);
  disp_tensor_release(x), disp_tensor_release(w), disp_tensor_release(dy);
  disp_tensor_release(xf), disp_tensor_release(wf), disp_tensor_release(dyf);
  return 0;
}

TEST(meta_geometry_matches_cpu) {
  int64_t xs[4] = {2, 3, 7, 6}, ws[4] = {4, 3, 3, 2};
  disp_tensor *x = randt(xs, 4), *w = randt(ws, 4), *xm = NULL, *wm = NULL, *y = NULL, *ym = NULL;
  disp_device meta = disp_device_make(DISP_BACKEND_META, -1);
  ASSERT_OK(disp_tensor_empty(xs, 4, DISP_DTYPE_FLOAT64, meta, &xm));
  ASSERT_OK(disp_tensor_empty(ws, 4, DISP_DTYPE_FLOAT64, meta, &wm));
  int64_t s[2] = {2, 1}, p[2] = {1, 0}, d[2] = {1, 2}, op[2] = {0, 0};
  ASSERT_OK(disp_aten_convolution(x, w, NULL, il(s, 2), il(p, 2), il(d, 2), false, il(op, 2), 1, &y));
  ASSERT_OK(disp_aten_convolution(xm, wm, NULL, il(s, 2), il(p, 2), il(d, 2), false, il(op, 2), 1, &ym));
  ASSERT_EQ_INT(disp_tensor_ndim(y), disp_tensor_ndim(ym));
  for (int i = 0; i < 4; i++) {
    ASSERT_EQ_INT(disp_tensor_sizes(y)[i], disp_tensor_sizes(ym)[i]);
    ASSERT_EQ_INT(disp_tensor_strides(y)[i], disp_tensor_strides(ym)[i]);
  }
  disp_tensor *o1 = NULL, *i1 = NULL, *o2 = NULL, *i2 = NULL;
  int64_t k[2] = {3, 2};
  ASSERT_OK(disp_aten_max_pool2d_with_indices(x, il(k, 2), il(s, 2), il(p, 2), il(d, 2), true, &o1, &i1));
  ASSERT_OK(disp_aten_max_pool2d_with_indices(xm, il(k, 2), il(s, 2), il(p, 2), il(d, 2), true, &o2, &i2));
  for (int i = 0; i < 4; i++) {
    ASSERT_EQ_INT(disp_tensor_sizes(o1)[i], disp_tensor_sizes(o2)[i]);
    ASSERT_EQ_INT(disp_tensor_strides(i1)[i], disp_tensor_strides(i2)[i]);
  }
  ASSERT_EQ_INT(disp_tensor_dtype(i2), DISP_DTYPE_INT64);
  disp_tensor *ts[] = {x, w, xm, wm, y, ym, o1, i1, o2, i2};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) disp_tensor_release(ts[i]);
  return 0;
}

TEST(conv_errors) {
  int64_t xs[4] = {1, 2, 5, 5}, ws[4] = {4, 3, 3, 3}, big[4] = {1, 2, 7, 7};
  disp_tensor *x = randt(xs, 4), *w = randt(ws, 4), *w2 = randt(big, 4), *y = NULL;
  int64_t one[2] = {1, 1}, zero[2] = {0, 0};
  ASSERT_TRUE(disp_aten_convolution(x, w, NULL, il(one, 2), il(zero, 2), il(one, 2), false, il(zero, 2), 1, &y) != DISP_OK);
  ASSERT_CONTAINS(disp_last_error(), "expected input[1, 2, 5, 5] to have 3 channels, but got 2 channels instead");
  big[0] = 1, big[1] = 2;
  disp_tensor *wk = NULL;
  int64_t wks[4] = {1, 2, 7, 7};
  wk = randt(wks, 4);
  ASSERT_TRUE(disp_aten_convolution(x, wk, NULL, il(one, 2), il(zero, 2), il(one, 2), false, il(zero, 2), 1, &y) != DISP_OK);
  ASSERT_CONTAINS(disp_last_error(), "Kernel size can't be greater than actual input size");
  int64_t three[3] = {1, 1, 1};
  ASSERT_TRUE(disp_aten_convolution(x, wk, NULL, il(three, 3), il(zero, 2), il(one, 2), false, il(zero, 2), 1, &y) != DISP_OK);
  ASSERT_CONTAINS(disp_last_error(), "expected stride to be a single integer value or a list of 2 values");
  disp_tensor_release(x), disp_tensor_release(w), disp_tensor_release(w2), disp_tensor_release(wk);
  return 0;
}

TEST(max_pool_nan_and_channels_last) {
  int64_t xs[4] = {1, 2, 4, 4};
  disp_tensor *x = randt(xs, 4), *o = NULL, *idx = NULL;
  double *p = disp_tensor_data_ptr(x);
  p[5] = NAN;
  int64_t k[1] = {2};
  disp_int_list none = {NULL, 0};
  int64_t zero[1] = {0}, one[1] = {1};
  ASSERT_OK(disp_aten_max_pool2d_with_indices(x, il(k, 1), none, il(zero, 1), il(one, 1), false, &o, &idx));
  ASSERT_TRUE(isnan(((double *)disp_tensor_data_ptr(o))[0]));
  ASSERT_EQ_INT(((int64_t *)disp_tensor_data_ptr(idx))[0], 5);
  disp_tensor_release(o), disp_tensor_release(idx);
  /* channels_last in, channels_last out */
  int64_t cls[4] = {32, 1, 8, 2};
  disp_tensor *xc = NULL;
  ASSERT_OK(disp_tensor_empty_strided(xs, cls, 4, DISP_DTYPE_FLOAT64, cpu(), &xc));
  double *q = disp_tensor_data_ptr(xc);
  for (int i = 0; i < 32; i++) q[i] = rnd8();
  ASSERT_OK(disp_aten_max_pool2d_with_indices(xc, il(k, 1), none, il(zero, 1), il(one, 1), false, &o, &idx));
  ASSERT_EQ_INT(disp_tensor_strides(o)[1], 1);
  ASSERT_EQ_INT(disp_tensor_strides(idx)[1], 1);
  disp_tensor_release(o), disp_tensor_release(idx), disp_tensor_release(xc), disp_tensor_release(x);
  return 0;
}

/* max_pool2d's float32 forward and backward against a direct loop over
 * every window (ties: the first tap wins; nan wins; an all -inf window
 * reports its first tap). Inputs are multiples of 1/8, so ties are common;
 * rows wider than the kernel's 64-output chunks are included. */
static void naive_pool(const float *x, int64_t planes, int64_t ih, int64_t iw, const int64_t *k, const int64_t *s,
                       const int64_t *p, const int64_t *d, int64_t oh, int64_t ow, float *y, int64_t *ix) {
  for (int64_t pl = 0; pl < planes; pl++)
    for (int64_t a = 0; a < oh; a++)
      for (int64_t b = 0; b < ow; b++) {
        float mv = -INFINITY;
        int64_t best = -1;
        for (int64_t i = 0; i < k[0]; i++)
          for (int64_t j = 0; j < k[1]; j++) {
            int64_t h = a * s[0] - p[0] + i * d[0], w = b * s[1] - p[1] + j * d[1];
            if (h < 0 || h >= ih || w < 0 || w >= iw) continue;
            float v = x[pl * ih * iw + h * iw + w];
            if (best < 0) best = h * iw + w; /* the first tap inside */
            if (v > mv || isnan(v)) mv = v, best = h * iw + w;
          }
        y[(pl * oh + a) * ow + b] = mv;
        ix[(pl * oh + a) * ow + b] = best;
      }
}

static int check_pool_f32(const int64_t *xs, const int64_t *k, const int64_t *s, const int64_t *p, const int64_t *d,
                          bool ceil_mode) {
  disp_tensor *x = NULL, *o = NULL, *idx = NULL, *gi = NULL;
  ASSERT_OK(disp_tensor_empty(xs, 4, DISP_DTYPE_FLOAT32, cpu(), &x));
  float *xp = disp_tensor_data_ptr(x);
  int64_t n = disp_tensor_numel(x);
  for (int64_t i = 0; i < n; i++) xp[i] = (float)rnd8();
  xp[7] = NAN, xp[n / 2] = NAN;
  for (int64_t i = 0; i < 3 * xs[3]; i++) xp[n - 1 - i] = -INFINITY; /* the last plane's last rows */
  ASSERT_OK(disp_aten_max_pool2d_with_indices(x, il(k, 2), il(s, 2), il(p, 2), il(d, 2), ceil_mode, &o, &idx));
  const int64_t *os = disp_tensor_sizes(o);
  int64_t m = disp_tensor_numel(o), planes = xs[0] * xs[1];
  float *ry = malloc(sizeof(float) * (size_t)m), *rg = calloc((size_t)n, sizeof(float));
  int64_t *ri = malloc(sizeof(int64_t) * (size_t)m);
  naive_pool(xp, planes, xs[2], xs[3], k, s, p, d, os[2], os[3], ry, ri);
  const float *y = disp_tensor_data_ptr(o);
  const int64_t *ix = disp_tensor_data_ptr(idx);
  for (int64_t i = 0; i < m; i++) {
    ASSERT_TRUE(isnan(ry[i]) ? isnan(y[i]) : y[i] == ry[i]);
    ASSERT_EQ_INT(ix[i], ri[i]);
  }
  /* backward: grads gathered in output order, summed in float */
  for (int64_t i = 0; i < m; i++) ((float *)disp_tensor_data_ptr(o))[i] = (float)rnd8();
  ASSERT_OK(disp_aten_max_pool2d_with_indices_backward(o, x, il(k, 2), il(s, 2), il(p, 2), il(d, 2), ceil_mode, idx, &gi));
  int64_t plane_out = os[2] * os[3], plane_in = xs[2] * xs[3];
  for (int64_t i = 0; i < m; i++) rg[(i / plane_out) * plane_in + ri[i]] += y[i];
  const float *g = disp_tensor_data_ptr(gi);
  for (int64_t i = 0; i < n; i++) ASSERT_TRUE(g[i] == rg[i]);
  free(ry), free(rg), free(ri);
  disp_tensor_release(x), disp_tensor_release(o), disp_tensor_release(idx), disp_tensor_release(gi);
  return 0;
}

TEST(max_pool_float32_matches_direct_loop) {
  int64_t wide[4] = {2, 3, 6, 150}, sq[4] = {1, 4, 13, 11};
  int64_t k2[2] = {2, 2}, k3[2] = {3, 3}, k23[2] = {2, 3}, s1[2] = {1, 1}, s2[2] = {2, 2}, s13[2] = {1, 3};
  int64_t p0[2] = {0, 0}, p1[2] = {1, 1}, d1[2] = {1, 1}, d2[2] = {2, 2}, d21[2] = {2, 1};
  if (check_pool_f32(wide, k2, s2, p0, d1, false)) return 1;
  if (check_pool_f32(wide, k3, s1, p1, d1, false)) return 1;
  if (check_pool_f32(sq, k3, s2, p1, d1, true)) return 1;
  if (check_pool_f32(sq, k3, s1, p1, d2, true)) return 1;
  if (check_pool_f32(sq, k23, s13, p1, d21, true)) return 1;
  /* pool.c's vector path for 2x2 at stride 2: a last group overlapping the
   * one before (5 outputs), padded edges around it, taps two rows apart */
  if (check_pool_f32(sq, k2, s2, p0, d1, false)) return 1;
  if (check_pool_f32(sq, k2, s2, p1, d21, true)) return 1;
  if (check_pool_f32(wide, k2, s2, p1, d1, true)) return 1;
  return 0;
}

TEST(seeded_random_is_reproducible) {
  int64_t sz[2] = {3, 5};
  disp_int_list s = {sz, 2};
  disp_opt_device nodev = {0, 0, false};
  disp_opt_bool nopin = {false, false};
  disp_tensor *a = NULL, *b = NULL, *n = NULL;
  disp_manual_seed(7);
  ASSERT_OK(disp_aten_rand(s, -1, -1, nodev, nopin, &a));
  disp_manual_seed(7);
  ASSERT_OK(disp_aten_rand(s, -1, -1, nodev, nopin, &b));
  ASSERT_TRUE(memcmp(disp_tensor_data_ptr(a), disp_tensor_data_ptr(b), 15 * sizeof(float)) == 0);
  const float *f = disp_tensor_data_ptr(a);
  for (int i = 0; i < 15; i++) ASSERT_TRUE(f[i] >= 0.0f && f[i] < 1.0f);
  ASSERT_OK(disp_aten_randn(s, DISP_DTYPE_FLOAT64, -1, nodev, nopin, &n));
  ASSERT_EQ_INT(disp_tensor_dtype(n), DISP_DTYPE_FLOAT64);
  disp_tensor_release(a), disp_tensor_release(b), disp_tensor_release(n);
  /* dropout: every element is 0 or x / (1 - p), the mask says which */
  int64_t ds[1] = {1000};
  disp_tensor *x = randt(ds, 1), *out = NULL, *mask = NULL;
  disp_opt_bool tr = {true, true};
  ASSERT_OK(disp_aten_native_dropout(x, 0.25, tr, &out, &mask));
  const double *xv = disp_tensor_data_ptr(x), *ov = disp_tensor_data_ptr(out);
  const unsigned char *mv = disp_tensor_data_ptr(mask);
  int kept = 0;
  for (int i = 0; i < 1000; i++) {
    ASSERT_TRUE(mv[i] ? fabs(ov[i] - xv[i] / 0.75) <= 1e-12 : ov[i] == 0.0);
    kept += mv[i];
  }
  ASSERT_TRUE(kept > 650 && kept < 850);
  disp_tensor_release(x), disp_tensor_release(out), disp_tensor_release(mask);
  return 0;
}

TEST_LIST = {TEST_ENTRY(conv_matches_naive_and_adjoints),
             TEST_ENTRY(conv_float32_matches_float64),
             TEST_ENTRY(small_convolutions_match_float64),
             TEST_ENTRY(meta_geometry_matches_cpu),
             TEST_ENTRY(conv_errors),
             TEST_ENTRY(max_pool_nan_and_channels_last),
             TEST_ENTRY(max_pool_float32_matches_direct_loop),
             TEST_ENTRY(seeded_random_is_reproducible),
             TEST_END};
TEST_MAIN()
