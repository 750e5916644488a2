/*
 * test_pool - the kernel table's 2x2 max_pool2d kernels and
 * threshold_backward (cpu/pool.c, cpu/threshold.c) on every capability this
 * CPU runs, bit for bit against scalar definitions written from 1.13's
 * loops; then the operators that use them against their general paths:
 * float32 pooling against the same pooling in float64 (pool.c's general
 * loop; the values are exact in float), its backward against a zero-fill
 * and scatter, with the forward's indices and with others (in the window
 * but not the max, outside the window, outside the plane), and
 * threshold_backward against its generic loop (strided operands). Inputs
 * come from a small set of values, so ties, -0 against +0, NaNs with two
 * payloads and -inf windows are common; widths cover the scalar, 4- and
 * 8-wide groups and their overlapping tails.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <disp/aten.h>
#include <disp/cpu.h>

#include "cpu/kernels.h"
#include "test.h"

static const disp_device cpu = {DISP_BACKEND_CPU, -1};

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* A value from a set rich in ties and NaNs (two payloads, both signs). */
static float pick(uint32_t *s) {
  *s = *s * 1103515245u + 12345u;
  uint32_t r = (*s >> 16) % 13;
  static const float v[] = {0.0f, -0.0f, 1.0f, 1.0f, -1.0f, 2.0f, 0.5f, -INFINITY, INFINITY, 3.0f, -2.0f};
  if (r == 11) return from_bits(0x7fc00001u); /* NaN, payload 1 */
  if (r == 12) return from_bits(0xffc00002u); /* -NaN, payload 2 */
  return v[r];
}

static void fill(float *x, int64_t n, uint32_t seed) {
  for (int64_t i = 0; i < n; i++) x[i] = pick(&seed);
}

/* The tables this CPU can run, default first. */
static int tables(const disp__cpu_kernel_table **t) {
  int n = 0;
  for (int c = 0; c <= (int)disp__cpu_capability_supported(); c++)
    if (disp__cpu_kernels_for((disp__cpu_cap)c)) t[n++] = disp__cpu_kernels_for((disp__cpu_cap)c);
  return n;
}

/* ---- the table's kernels ------------------------------------------------- */

/* 1.13's loop over one window's taps: a later tap wins when greater or NaN. */
static void ref_max2x2(const float *x, int64_t row_step, int64_t tap_step, int64_t first, int64_t rows, int64_t cols,
                       float *y, int64_t *ix, int64_t ow) {
  const int64_t off[4] = {0, 1, tap_step, tap_step + 1};
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      const float *w = x + r * row_step + 2 * c;
      float m = w[0];
      int best = 0;
      for (int k = 1; k < 4; k++)
        if (w[off[k]] > m || isnan(w[off[k]])) m = w[off[k]], best = k;
      y[r * ow + c] = m;
      ix[r * ow + c] = first + r * row_step + 2 * c + off[best];
    }
}

enum { MAXW = 41, MAXH = 12 };

TEST(max_pool2x2_kernel_is_the_serial_loop_bit_for_bit) {
  const disp__cpu_kernel_table *t[DISP_CPU_CAP_COUNT];
  int nt = tables(t);
  static float x[MAXH * 3 * MAXW + 64], y[MAXH * MAXW], ry[MAXH * MAXW];
  static int64_t ix[MAXH * MAXW], rix[MAXH * MAXW];
  /* (row step, tap step) in input rows: stride 2 dilation 1, stride 1, stride 3 dilation 2 */
  static const int64_t steps[3][2] = {{2, 1}, {1, 1}, {3, 2}};
  for (int64_t iw = 2; iw <= MAXW; iw++)
    for (int si = 0; si < 6; si++) {
      /* outputs in rows of their own (ow == cols), or with columns beside */
      int64_t rs = steps[si % 3][0] * iw, ts = steps[si % 3][1] * iw, rows = 4, cols = iw / 2;
      int64_t ow = si < 3 ? cols : cols + 3;
      int64_t first = 5 * iw + 1; /* where x starts in its plane */
      fill(x, rows * rs + ts + 2 * cols, (uint32_t)(iw * 7 + si));
      ref_max2x2(x, rs, ts, first, rows, cols, ry, rix, ow);
      for (int k = 0; k < nt; k++) {
        for (int64_t i = 0; i < MAXH * MAXW; i++) y[i] = 42.0f, ix[i] = -7;
        t[k]->max_pool2x2_f32(x, rs, ts, first, rows, cols, y, ix, ow);
        for (int64_t r = 0; r < rows + 1; r++)
          for (int64_t c = 0; c < ow; c++) {
            int64_t o = r * ow + c;
            int in = r < rows && c < cols; /* the other columns and the row after stay untouched */
            if (bits(y[o]) != (in ? bits(ry[o]) : bits(42.0f)) || ix[o] != (in ? rix[o] : -7))
              TEST_FAIL_("%s iw %lld steps %d output (%lld, %lld): %a [%lld], want %a [%lld]",
                         disp__cpu_capability_name(t[k]->cap), (long long)iw, si, (long long)r, (long long)c, y[o],
                         (long long)ix[o], in ? ry[o] : 42.0f, (long long)(in ? rix[o] : -7));
          }
      }
    }
  return 0;
}

/* 1.13's backward of one plane: zero-fill, then dx[index] += dy in order. */
static void ref_unpool(float *dx, int64_t plane, const float *dy, const int64_t *ix, int64_t n) {
  for (int64_t i = 0; i < plane; i++) dx[i] = 0.0f;
  for (int64_t o = 0; o < n; o++) dx[ix[o]] += dy[o];
}

/* Indices of an ih x iw plane's oh x ow 2x2 windows: a random tap of each. */
static void window_indices(int64_t *ix, int64_t iw, int64_t oh, int64_t ow, uint32_t s) {
  for (int64_t r = 0; r < oh; r++)
    for (int64_t c = 0; c < ow; c++) {
      s = s * 1103515245u + 12345u;
      uint32_t k = (s >> 16) & 3;
      ix[r * ow + c] = (2 * r + (k >> 1)) * iw + 2 * c + (k & 1);
    }
}

TEST(max_pool2x2_backward_kernel_is_zero_fill_and_scatter) {
  const disp__cpu_kernel_table *t[DISP_CPU_CAP_COUNT];
  int nt = tables(t);
  static float dx[MAXH * MAXW], rdx[MAXH * MAXW], dy[MAXH * MAXW];
  static int64_t ix[MAXH * MAXW];
  for (int64_t iw = 2; iw <= MAXW; iw++)
    for (int64_t ih = 2; ih <= 5; ih++) {
      int64_t oh = ih / 2, ow = iw / 2, plane = ih * iw;
      fill(dy, oh * ow, (uint32_t)(iw + 100 * ih));
      window_indices(ix, iw, oh, ow, (uint32_t)(iw * ih));
      ref_unpool(rdx, plane, dy, ix, oh * ow);
      for (int k = 0; k < nt; k++) {
        for (int64_t i = 0; i < MAXH * MAXW; i++) dx[i] = 42.0f;
        ASSERT_TRUE(t[k]->max_pool2x2_backward_f32(dx, ih, iw, dy, ix, oh, ow));
        for (int64_t i = plane; i < MAXH * MAXW; i++) ASSERT_TRUE(dx[i] == 42.0f); /* nothing past the plane */
        for (int64_t i = 0; i < plane; i++)
          if (bits(dx[i]) != bits(rdx[i]))
            TEST_FAIL_("%s %lldx%lld dx[%lld] = %a, want %a", disp__cpu_capability_name(t[k]->cap), (long long)ih,
                       (long long)iw, (long long)i, dx[i], rdx[i]);
      }
      /* -0 grads become +0, as 0 + -0 does */
      dy[0] = -0.0f;
      for (int k = 0; k < nt; k++) {
        ASSERT_TRUE(t[k]->max_pool2x2_backward_f32(dx, ih, iw, dy, ix, oh, ow));
        ASSERT_EQ_INT(bits(dx[ix[0]]), 0);
      }
    }
  return 0;
}

TEST(max_pool2x2_backward_kernel_refuses_indices_outside_their_window) {
  const disp__cpu_kernel_table *t[DISP_CPU_CAP_COUNT];
  int nt = tables(t);
  static float dx[6 * 38], dy[3 * 19];
  static int64_t ix[3 * 19];
  static const int64_t widths[] = {38, 14, 15}; /* rows of 19, 7 and 7 outputs */
  for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++) {
    const int64_t ih = 6, iw = widths[wi], oh = 3, ow = iw / 2;
    fill(dy, oh * ow, 3);
    /* a tap of the next window, of the row below, outside the plane, and
     * the right low half with a high half set (only int64 can tell) */
    const int64_t wrong[] = {2, 2 * iw, -1, ih * iw, ((int64_t)1 << 32) + 1, INT64_MIN, INT64_MAX};
    for (size_t w = 0; w < sizeof wrong / sizeof *wrong; w++)
      for (int64_t o = 0; o < oh * ow; o++) {
        window_indices(ix, iw, oh, ow, 11);
        int64_t base = 2 * (o / ow) * iw + 2 * (o % ow);
        ix[o] = w < 2 ? base + wrong[w] : w == 4 ? base + wrong[w] : wrong[w];
        for (int k = 0; k < nt; k++)
          if (t[k]->max_pool2x2_backward_f32(dx, ih, iw, dy, ix, oh, ow))
            TEST_FAIL_("%s width %lld took index %lld for output %lld", disp__cpu_capability_name(t[k]->cap),
                       (long long)iw, (long long)ix[o], (long long)o);
      }
  }
  return 0;
}

TEST(threshold_backward_kernel_is_a_select_bit_for_bit) {
  const disp__cpu_kernel_table *t[DISP_CPU_CAP_COUNT];
  int nt = tables(t);
  enum { N = 64 };
  static float self[N], grad[N], o[N];
  static const float thresholds[] = {0.0f, -0.0f, 0.5f, -INFINITY, NAN};
  for (int64_t n = 0; n <= 70; n += (n < 20 ? 1 : 17))
    for (size_t ti = 0; ti < sizeof thresholds / sizeof *thresholds; ti++) {
      float th = thresholds[ti];
      fill(self, n, (uint32_t)n);
      fill(grad, n, (uint32_t)n + 1000);
      for (int k = 0; k < nt; k++) {
        t[k]->threshold_backward_f32(o, self, grad, th, n);
        for (int64_t i = 0; i < n; i++) {
          float want = self[i] <= th ? 0.0f : grad[i];
          if (bits(o[i]) != bits(want))
            TEST_FAIL_("%s threshold %g n=%lld: self %a grad %a gave %a", disp__cpu_capability_name(t[k]->cap), th,
                       (long long)n, self[i], grad[i], o[i]);
        }
        /* in place over grad */
        float g2[N];
        memcpy(g2, grad, sizeof(float) * (size_t)n);
        t[k]->threshold_backward_f32(g2, self, g2, th, n);
        ASSERT_TRUE(!memcmp(g2, o, sizeof(float) * (size_t)n));
      }
    }
  return 0;
}

/* ---- through the operators ----------------------------------------------- */

static disp_int_list il(const int64_t *v, size_t n) {
  disp_int_list l = {v, n};
  return l;
}

static disp_tensor *floats(const int64_t *sizes, int nd, uint32_t seed) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, nd, DISP_DTYPE_FLOAT32, cpu, &t) != DISP_OK) return NULL;
  fill(disp_tensor_data_ptr(t), disp_tensor_numel(t), seed);
  return t;
}

/* A float64 copy (exact). */
static disp_tensor *as_f64(disp_tensor *t) {
  disp_tensor *d = NULL;
  if (disp_aten__to_copy(t, DISP_DTYPE_FLOAT64, -1, (disp_opt_device){0}, (disp_opt_bool){0}, false, -1, &d) !=
      DISP_OK)
    return NULL;
  return d;
}

/* Whether a float32 and a float64 tensor (both contiguous) hold the same
 * values, NaN matching NaN. */
static int same_values(disp_tensor *f, disp_tensor *d) {
  const float *a = disp_tensor_data_ptr(f);
  const double *b = disp_tensor_data_ptr(d);
  if (disp_tensor_numel(f) != disp_tensor_numel(d)) return 0;
  for (int64_t i = 0; i < disp_tensor_numel(f); i++)
    if (!(isnan(a[i]) ? isnan(b[i]) : ((double)a[i] == b[i] && !signbit(a[i]) == !signbit(b[i])))) return 0;
  return 1;
}

typedef struct geom {
  int64_t xs[4];
  int nd;
  int64_t k[2], s[2], p[2], d[2];
  bool ceil_mode;
} geom;

/* 2x2 windows at stride 2, which the table's kernels run, with edges
 * (padding, ceil_mode, odd sizes) and rows of 1 to 21 outputs; then
 * geometries with two taps a row that only partly fit them. */
static const geom geoms[] = {
    {{3, 5, 28, 28}, 4, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
    {{2, 4, 14, 14}, 4, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
    {{2, 3, 13, 11}, 4, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
    {{2, 3, 13, 11}, 4, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true},
    {{2, 3, 9, 43}, 4, {2, 2}, {2, 2}, {1, 1}, {1, 1}, false},
    {{3, 7, 2}, 3, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
    {{1, 2, 6, 17}, 4, {2, 2}, {2, 2}, {1, 0}, {1, 1}, true},
    {{1, 2, 12, 9}, 4, {2, 2}, {1, 2}, {0, 0}, {1, 1}, false},
    {{1, 2, 12, 9}, 4, {2, 2}, {3, 2}, {0, 1}, {2, 1}, true},
    {{1, 2, 12, 30}, 4, {3, 2}, {2, 2}, {1, 0}, {1, 1}, false},
    {{1, 2, 12, 30}, 4, {3, 2}, {2, 2}, {1, 1}, {2, 1}, true},
};

static int check_forward(const geom *g, int ti) {
  disp_tensor *x = floats(g->xs, g->nd, (uint32_t)ti), *xd = as_f64(x), *o = NULL, *i = NULL, *od = NULL, *id = NULL;
  ASSERT_TRUE(x && xd);
  ASSERT_OK(disp_aten_max_pool2d_with_indices(x, il(g->k, 2), il(g->s, 2), il(g->p, 2), il(g->d, 2), g->ceil_mode,
                                              &o, &i));
  ASSERT_OK(disp_aten_max_pool2d_with_indices(xd, il(g->k, 2), il(g->s, 2), il(g->p, 2), il(g->d, 2), g->ceil_mode,
                                              &od, &id));
  if (!same_values(o, od)) TEST_FAIL_("geometry %d: float32 values differ from float64's", ti);
  if (memcmp(disp_tensor_data_ptr(i), disp_tensor_data_ptr(id), sizeof(int64_t) * (size_t)disp_tensor_numel(i)))
    TEST_FAIL_("geometry %d: float32 indices differ from float64's", ti);
  disp_tensor *all[] = {x, xd, o, i, od, id};
  for (int k = 0; k < 6; k++) disp_tensor_release(all[k]);
  return 0;
}

TEST(max_pool2d_float32_matches_the_float64_general_loop) {
  for (size_t ti = 0; ti < sizeof geoms / sizeof *geoms; ti++)
    if (check_forward(&geoms[ti], (int)ti)) return 1;
  /* a non-contiguous input (a transposed view) */
  int64_t xs[4] = {2, 3, 10, 16}, k[2] = {2, 2}, p[2] = {0, 0}, d[2] = {1, 1};
  disp_tensor *x = floats(xs, 4, 99), *xt = NULL, *xd = NULL, *o = NULL, *i = NULL, *od = NULL, *id = NULL;
  ASSERT_OK(disp_aten_transpose_int(x, 2, 3, &xt));
  xd = as_f64(xt);
  ASSERT_OK(disp_aten_max_pool2d_with_indices(xt, il(k, 2), il(k, 2), il(p, 2), il(d, 2), false, &o, &i));
  ASSERT_OK(disp_aten_max_pool2d_with_indices(xd, il(k, 2), il(k, 2), il(p, 2), il(d, 2), false, &od, &id));
  ASSERT_TRUE(same_values(o, od));
  size_t ibytes = sizeof(int64_t) * (size_t)disp_tensor_numel(i);
  ASSERT_TRUE(!memcmp(disp_tensor_data_ptr(i), disp_tensor_data_ptr(id), ibytes));
  disp_tensor *all[] = {x, xt, xd, o, i, od, id};
  for (int j = 0; j < 7; j++) disp_tensor_release(all[j]);
  return 0;
}

/* The backward of grads dy at indices ix against zero-fill and scatter per
 * plane; `bad` expects the out-of-bounds error instead. */
static int check_backward(const geom *g, disp_tensor *x, disp_tensor *dy, disp_tensor *ix, const char *bad) {
  disp_tensor *dx = NULL;
  disp_status st = disp_aten_max_pool2d_with_indices_backward(dy, x, il(g->k, 2), il(g->s, 2), il(g->p, 2),
                                                              il(g->d, 2), g->ceil_mode, ix, &dx);
  if (bad) {
    ASSERT_STATUS(st, DISP_ERR_INVALID_ARG);
    ASSERT_CONTAINS(disp_last_error(), bad);
    return 0;
  }
  ASSERT_OK(st);
  int64_t nd = g->nd, plane_in = g->xs[nd - 2] * g->xs[nd - 1];
  const int64_t *os = disp_tensor_sizes(dy);
  int64_t plane_out = os[nd - 2] * os[nd - 1], planes = disp_tensor_numel(dy) / plane_out;
  float *want = calloc((size_t)(planes * plane_in), sizeof(float));
  ASSERT_TRUE(want != NULL);
  for (int64_t p = 0; p < planes; p++)
    ref_unpool(want + p * plane_in, plane_in, (const float *)disp_tensor_data_ptr(dy) + p * plane_out,
               (const int64_t *)disp_tensor_data_ptr(ix) + p * plane_out, plane_out);
  const float *got = disp_tensor_data_ptr(dx);
  for (int64_t k = 0; k < planes * plane_in; k++)
    if (bits(got[k]) != bits(want[k]) && !(isnan(got[k]) && isnan(want[k])))
      TEST_FAIL_("dx[%lld] = %a, want %a", (long long)k, got[k], want[k]);
  free(want);
  disp_tensor_release(dx);
  return 0;
}

TEST(max_pool2d_backward_float32_is_zero_fill_and_scatter_for_any_indices) {
  for (size_t ti = 0; ti < sizeof geoms / sizeof *geoms; ti++) {
    const geom *g = &geoms[ti];
    disp_tensor *x = floats(g->xs, g->nd, (uint32_t)ti), *o = NULL, *ix = NULL, *ix2 = NULL;
    ASSERT_OK(disp_aten_max_pool2d_with_indices(x, il(g->k, 2), il(g->s, 2), il(g->p, 2), il(g->d, 2),
                                                g->ceil_mode, &o, &ix));
    fill(disp_tensor_data_ptr(o), disp_tensor_numel(o), (uint32_t)ti + 50); /* grads with -0 and NaNs */
    if (check_backward(g, x, o, ix, NULL)) TEST_FAIL_("geometry %d, the forward's indices", (int)ti);
    /* other taps of the same windows (the fast path), then one index moved
     * to a neighbouring window or another row (the scatter), then one
     * outside the plane in the last plane (the error) */
    ASSERT_OK(disp_aten_clone(ix, -1, &ix2));
    int64_t *p = disp_tensor_data_ptr(ix2), n = disp_tensor_numel(ix2), iw = g->xs[g->nd - 1];
    int64_t plane_in = g->xs[g->nd - 2] * iw;
    for (int64_t k = 0; k < n; k++)
      if (p[k] % iw % 2 == 1) p[k]--; /* without padding, the window's left column */
    if (check_backward(g, x, o, ix2, NULL)) TEST_FAIL_("geometry %d, other taps", (int)ti);
    p[n / 2] = p[n / 2] + 2 < plane_in ? p[n / 2] + 2 : 0;
    p[n / 3] = p[n / 3] + 2 * iw < plane_in ? p[n / 3] + 2 * iw : 1;
    if (check_backward(g, x, o, ix2, NULL)) TEST_FAIL_("geometry %d, indices outside their windows", (int)ti);
    p[n - 2] = plane_in, p[n - 1] = -1;
    char msg[160];
    snprintf(msg, sizeof msg, "max_pool2d_with_indices_backward: index %lld is out of bounds for an input plane of "
             "%lld elements", (long long)plane_in, (long long)plane_in);
    if (check_backward(g, x, o, ix2, msg)) TEST_FAIL_("geometry %d, an index past the plane", (int)ti);
    disp_tensor_release(x), disp_tensor_release(o), disp_tensor_release(ix), disp_tensor_release(ix2);
  }
  return 0;
}

/* The CNN's 2x2 pooling (forward and backward) and relu's backward at 1, 2
 * and 3 threads: the same bits. */
TEST(pooling_and_threshold_backward_do_not_depend_on_the_thread_count) {
  int64_t xs[4] = {8, 16, 28, 28}, k[2] = {2, 2}, p[2] = {0, 0}, d[2] = {1, 1};
  disp_tensor *x = floats(xs, 4, 5), *g = floats(xs, 4, 6), *r[3][4] = {{NULL}};
  int saved = disp_get_num_threads();
  for (int t = 0; t < 3; t++) {
    ASSERT_OK(disp_set_num_threads(t + 1));
    ASSERT_OK(disp_aten_max_pool2d_with_indices(x, il(k, 2), il(k, 2), il(p, 2), il(d, 2), false, &r[t][0], &r[t][1]));
    ASSERT_OK(disp_aten_max_pool2d_with_indices_backward(r[t][0], x, il(k, 2), il(k, 2), il(p, 2), il(d, 2), false,
                                                         r[t][1], &r[t][2]));
    ASSERT_OK(disp_aten_threshold_backward(g, x, disp_scalar_int(0), &r[t][3]));
  }
  ASSERT_OK(disp_set_num_threads(saved));
  for (int j = 0; j < 4; j++) {
    size_t bytes = (size_t)disp_tensor_numel(r[0][j]) * (j == 1 ? 8 : 4);
    for (int t = 1; t < 3; t++)
      ASSERT_TRUE(!memcmp(disp_tensor_data_ptr(r[0][j]), disp_tensor_data_ptr(r[t][j]), bytes));
  }
  for (int t = 0; t < 3; t++)
    for (int j = 0; j < 4; j++) disp_tensor_release(r[t][j]);
  disp_tensor_release(x), disp_tensor_release(g);
  return 0;
}

/* threshold_backward on dense float32 (the table's kernel) against the
 * same values as strided views (every other column: the generic loop),
 * with the threshold rounded to float as 1.13's scalar_t threshold is. */
TEST(threshold_backward_dense_matches_the_generic_loop) {
  int64_t xs[2] = {37, 82};
  disp_tensor *s = floats(xs, 2, 7), *g = floats(xs, 2, 8), *sv = NULL, *gv = NULL, *sc = NULL, *gc = NULL;
  disp_opt_int none = {0, false};
  ASSERT_OK(disp_aten_slice_Tensor(s, 1, none, none, 2, &sv));
  ASSERT_OK(disp_aten_slice_Tensor(g, 1, none, none, 2, &gv));
  ASSERT_OK(disp_aten_contiguous(sv, DISP_MEMORY_FORMAT_CONTIGUOUS, &sc));
  ASSERT_OK(disp_aten_contiguous(gv, DISP_MEMORY_FORMAT_CONTIGUOUS, &gc));
  static const double thresholds[] = {0.0, 0.5, 1.0000000001, -1.0};
  for (size_t ti = 0; ti < sizeof thresholds / sizeof *thresholds; ti++) {
    disp_tensor *a = NULL, *b = NULL;
    ASSERT_OK(disp_aten_threshold_backward(gc, sc, disp_scalar_double(thresholds[ti]), &a));
    ASSERT_OK(disp_aten_threshold_backward(gv, sv, disp_scalar_double(thresholds[ti]), &b));
    const float *pa = disp_tensor_data_ptr(a), *pb = disp_tensor_data_ptr(b);
    const float *ps = disp_tensor_data_ptr(sc), *pg = disp_tensor_data_ptr(gc);
    const int64_t *bs = disp_tensor_strides(b);
    float th = (float)thresholds[ti];
    for (int64_t i = 0; i < xs[0]; i++)
      for (int64_t j = 0; j < xs[1] / 2; j++) {
        int64_t k = i * (xs[1] / 2) + j;
        ASSERT_EQ_INT(bits(pa[k]), bits(ps[k] <= th ? 0.0f : pg[k]));
        ASSERT_EQ_INT(bits(pb[i * bs[0] + j * bs[1]]), bits(pa[k]));
      }
    disp_tensor_release(a), disp_tensor_release(b);
  }
  disp_tensor *all[] = {s, g, sv, gv, sc, gc};
  for (int k = 0; k < 6; k++) disp_tensor_release(all[k]);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(max_pool2x2_kernel_is_the_serial_loop_bit_for_bit),
    TEST_ENTRY(max_pool2x2_backward_kernel_is_zero_fill_and_scatter),
    TEST_ENTRY(max_pool2x2_backward_kernel_refuses_indices_outside_their_window),
    TEST_ENTRY(threshold_backward_kernel_is_a_select_bit_for_bit),
    TEST_ENTRY(max_pool2d_float32_matches_the_float64_general_loop),
    TEST_ENTRY(max_pool2d_backward_float32_is_zero_fill_and_scatter_for_any_indices),
    TEST_ENTRY(pooling_and_threshold_backward_do_not_depend_on_the_thread_count),
    TEST_ENTRY(threshold_backward_dense_matches_the_generic_loop),
    TEST_END};
TEST_MAIN()
