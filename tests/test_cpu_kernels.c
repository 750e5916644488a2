/*
 * test_cpu_kernels - the per-capability kernel tables (cpu/kernels.h):
 * every table this CPU can run against a scalar or double-precision
 * reference and against the default capability's table (GELU, softmax
 * backward: against double within their approximation), on odd lengths
 * (vector tails), NaN, infinities, -0 and denormals; then the ops wired to
 * them through the public API: add's alpha fast paths for float, int and
 * bool, relu(nan), and results that do not depend on the thread count.
 */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <disp/aten.h>
#include <disp/cpu.h>

#include "cpu/kernels.h"
#include "test.h"

enum { MAXN = 1100 };

/* The special values first, then pseudo-random ones of mixed magnitude. */
static void fill(float *x, int64_t n, unsigned seed, float scale) {
  static const float special[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e-40f, -1e-40f, 1.0f, -1.0f, 88.0f,
                                  -100.0f, 3e38f};
  unsigned s = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1103515245u + 12345u;
    float r = (float)((s >> 8) & 0xffff) / 65536.0f - 0.5f;
    x[i] = seed % 2 == 0 && i < (int64_t)(sizeof special / sizeof *special) ? special[i] : r * scale;
  }
}

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* Equal bits, or both NaN (a NaN's sign and payload are not specified). */
static int same(float a, float b) { return (isnan(a) && isnan(b)) || bits(a) == bits(b); }

/* Distance in units in the last place; NaN only matches NaN. */
static int64_t ulps(float a, float b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) ? 0 : INT64_MAX;
  if (a == b) return 0;
  int32_t ia = (int32_t)bits(a), ib = (int32_t)bits(b);
  int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia : ia, ob = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
  return oa > ob ? oa - ob : ob - oa;
}

/* The tables this CPU can run, default first. */
static int tables(const disp__cpu_kernel_table **t) {
  int n = 0;
  for (int c = 0; c <= (int)disp__cpu_capability_supported(); c++)
    if (disp__cpu_kernels_for((disp__cpu_cap)c)) t[n++] = disp__cpu_kernels_for((disp__cpu_cap)c);
  return n;
}

static const int64_t lengths[] = {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 67, 129, 1001};
#define FOR_LENGTHS(n) for (size_t li_ = 0; li_ < sizeof lengths / sizeof *lengths && ((n) = lengths[li_], 1); li_++)

TEST(the_table_in_use_is_the_capability_in_use) {
  const disp__cpu_kernel_table *k = disp__cpu_kernels();
  ASSERT_TRUE(k != NULL);
  ASSERT_EQ_INT(k->cap, disp__cpu_capability());
  ASSERT_TRUE(disp__cpu_kernels_for(DISP_CPU_DEFAULT) != NULL);
  ASSERT_TRUE(disp__cpu_kernels_for(DISP_CPU_CAP_COUNT) == NULL);
  return 0;
}

TEST(binary_kernels_are_bit_exact_on_every_capability) {
  const disp__cpu_kernel_table *t[DISP_CPU_CAP_COUNT];
  int nt = tables(t);
  static float a[MAXN], b[MAXN], o[MAXN];
  static const float alphas[] = {1.0f, -1.0f, 2.5f, 0.0f};
  int64_t n;
  FOR_LENGTHS(n) {
    fill(a, n, 2, 1e3f);
    fill(b, n, 3, 7.0f);
    for (int k = 0; k < nt; k++)
      for (int64_t sb = 0; sb <= 1; sb++) {
        for (size_t ai = 0; ai < sizeof alphas / sizeof *alphas; ai++) {
          float al = alphas[ai];
          t[k]->add_f32(o, a, b, sb, al, n);
          for (int64_t i = 0; i < n; i++) {
            float p = b[i * sb] * al, want = al == 1.0f ? a[i] + b[i * sb] : a[i] + p;
            if (!same(o[i], want))
              TEST_FAIL_("%s add n=%lld i=%lld alpha=%g: %a vs %a", disp__cpu_capability_name(t[k]->cap),
                         (long long)n, (long long)i, al, o[i], want);
          }
        }
        t[k]->mul_f32(o, a, b, sb, n);
        for (int64_t i = 0; i < n; i++) ASSERT_TRUE(same(o[i], a[i] * b[i * sb]));
        t[k]->div_f32(o, a, b, sb, n);
        for (int64_t i = 0; i < n; i++) ASSERT_TRUE(same(o[i], a[i] / b[i * sb]));
      }
  }
  return 0;
}

/* where: the bits of a or b as the condition byte says (uint8 conditions:
 * any nonzero byte is true), a or b contiguous or one broadcast value. */
TEST(select_is_bit_exact_on_every_capability) {
  const disp__cpu_kernel_table *t[DISP_CPU_CAP_COUNT];
  int nt = tables(t);
  static float a[MAXN], b[MAXN], o[MAXN];
  static uint8_t c[MAXN];
  int64_t n;
  FOR_LENGTHS(n) {
    fill(a, n, 2, 10.0f);
    fill(b, n, 3, 10.0f);
    for (int64_t i = 0; i < n; i++) c[i] = (uint8_t)(i % 3 == 0 ? 0 : i % 5 == 0 ? 200 : 1);
    for (int k = 0; k < nt; k++)
      for (int64_t sa = 0; sa <= 1; sa++)
        for (int64_t sb = 0; sb <= 1; sb++) {
          t[k]->select_f32(o, c, a, sa, b, sb, n);
          for (int64_t i = 0; i < n; i++)
            if (!same(o[i], c[i] ? a[i * sa] : b[i * sb]))
              TEST_FAIL_("%s select n=%lld sa=%lld sb=%lld [%lld]: %a", disp__cpu_capability_name(t[k]->cap),
                         (long long)n, (long long)sa, (long long)sb, (long long)i, o[i]);
        }
  }
  return 0;
}

TEST(clamp_min_is_std_max_bit_for_bit_and_relu_keeps_nan) {
  const disp__cpu_kernel_table *t[DISP_CPU_CAP_COUNT];
  int nt = tables(t);
  static float a[MAXN], o[MAXN];
  int64_t n;
  FOR_LENGTHS(n) {
    fill(a, n, 4, 10.0f);
    for (int k = 0; k < nt; k++)
      for (int lo_i = 0; lo_i < 3; lo_i++) {
        float lo = lo_i == 0 ? 0.0f : lo_i == 1 ? -0.0f : 0.25f;
        t[k]->clamp_min_f32(o, a, lo, n);
        for (int64_t i = 0; i < n; i++) {
          float want = a[i] < lo ? lo : a[i]; /* std::max(a, lo) */
          ASSERT_TRUE(same(o[i], want));
        }
      }
  }
  float x[17] = {NAN, -0.0f, -1.0f, 2.0f, -INFINITY, 1e-40f, -1e-40f}, y[17];
  for (int k = 0; k < nt; k++) {
    t[k]->clamp_min_f32(y, x, 0.0f, 17); /* 17: the specials land in the vector body and the tail */
    t[k]->clamp_min_f32(y + 10, x, 0.0f, 7);
    ASSERT_TRUE(isnan(y[0]) && isnan(y[10]));
    ASSERT_EQ_INT(bits(y[1]), bits(-0.0f)); /* std::max(-0.0, 0) is its first operand */
    ASSERT_TRUE(y[2] == 0.0f && y[3] == 2.0f && y[4] == 0.0f && y[5] == 1e-40f && y[6] == 0.0f);
  }
  return 0;
}

typedef double (*ref_fn)(double);
/* 1.13 computes 1 / (1 + exp(-x)) in float: exp(-x) overflows to inf below
 * x = -88.7 and the result is 0, not the denormal the double formula gives */
static double sigmoid_ref(double x) {
  double e = exp(-x);
  return 1.0 / (1.0 + (e > FLT_MAX ? INFINITY : e));
}

/* f against ref within max_ulps, and within 2 * max_ulps of the default
 * table's f (every capability is within 1.13's accuracy of the truth). */
static int check_unary(const char *name, size_t off, ref_fn ref, int64_t max_ulps) {
  const disp__cpu_kernel_table *t[DISP_CPU_CAP_COUNT];
  int nt = tables(t);
  static float a[MAXN], o[MAXN], d[MAXN];
  int64_t n;
  FOR_LENGTHS(n) {
    for (unsigned seed = 0; seed < 2; seed++) {
      fill(a, n, seed * 2 + 6, strcmp(name, "log") ? 30.0f : 1e4f);
      if (!strcmp(name, "log"))
        for (int64_t i = 12; i < n; i++) a[i] = fabsf(a[i]) + (i % 3 ? 1e-38f : 0.0f);
      disp__k_un_f32 fd = *(const disp__k_un_f32 *)((const char *)t[0] + off);
      fd(d, a, n);
      for (int k = 0; k < nt; k++) {
        disp__k_un_f32 f = *(const disp__k_un_f32 *)((const char *)t[k] + off);
        f(o, a, n);
        for (int64_t i = 0; i < n; i++) {
          float want = (float)ref((double)a[i]);
          if (ulps(o[i], want) > max_ulps || ulps(o[i], d[i]) > 2 * max_ulps)
            TEST_FAIL_("%s %s(%a) n=%lld: %a, want %a, default %a", disp__cpu_capability_name(t[k]->cap), name, a[i],
                       (long long)n, o[i], want, d[i]);
        }
      }
    }
  }
  return 0;
}

TEST(exp_log_tanh_within_one_ulp_sigmoid_within_three) {
  ASSERT_EQ_INT(check_unary("exp", offsetof(disp__cpu_kernel_table, exp_f32), exp, 1), 0);
  ASSERT_EQ_INT(check_unary("log", offsetof(disp__cpu_kernel_table, log_f32), log, 1), 0);
  ASSERT_EQ_INT(check_unary("tanh", offsetof(disp__cpu_kernel_table, tanh_f32), tanh, 1), 0);
  ASSERT_EQ_INT(check_unary("sigmoid", offsetof(disp__cpu_kernel_table, sigmoid_f32), sigmoid_ref, 3), 0);
  return 0;
}

/* (log_)softmax of one strided row in double, NaN as 1.13 gives it. */
static void softmax_ref(double *y, const float *x, int64_t len, int64_t stride, int is_log) {
  double mx = -INFINITY, s = 0;
  for (int64_t j = 0; j < len; j++) {
    double v = x[j * stride];
    if (isnan(v)) mx = v;
    else if (v > mx) mx = v; /* false once mx is NaN */
  }
  for (int64_t j = 0; j < len; j++) s += exp(x[j * stride] - mx);
  for (int64_t j = 0; j < len; j++) y[j] = is_log ? x[j * stride] - mx - log(s) : exp(x[j * stride] - mx) / s;
}

/* float's rounding of each step: relative 4e-6, absolute atol near 0;
 * NaN and infinities exactly. */
static int close_to(float got, double want, double atol) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
  if (isinf(want) || isinf(got)) return got == want;
  return fabs(got - want) <= 4e-6 * fabs(want) + atol;
}

TEST(softmax_lastdim_and_inner_match_double_reference) {
  const disp__cpu_kernel_table *t[DISP_CPU_CAP_COUNT];
  int nt = tables(t);
  static float x[3 * MAXN], o[3 * MAXN];
  static double ref[MAXN];
  int64_t n;
  FOR_LENGTHS(n) {
    if (n == 0) continue;
    fill(x, 3 * n, 9, 20.0f);
    x[n] = NAN;              /* row 1: NaN everywhere */
    for (int64_t j = 0; j < n; j++) x[2 * n + j] = -INFINITY; /* row 2: -inf, NaN as 1.13 */
    if (n > 2) x[2 * n + 1] = 0.5f; /* unless one finite value: then a one-hot row */
    for (int k = 0; k < nt; k++)
      for (int is_log = 0; is_log <= 1; is_log++) {
        t[k]->softmax_lastdim_f32(o, x, 3, n, is_log);
        for (int r = 0; r < 3; r++) {
          softmax_ref(ref, x + r * n, n, 1, is_log);
          for (int64_t j = 0; j < n; j++)
            if (!close_to(o[r * n + j], ref[j], is_log ? 1e-5 : 1e-7))
              TEST_FAIL_("%s %ssoftmax lastdim n=%lld row %d [%lld]: %.9g vs %.9g",
                         disp__cpu_capability_name(t[k]->cap), is_log ? "log_" : "", (long long)n, r, (long long)j,
                         o[r * n + j], ref[j]);
        }
        /* as a (len 3, inner n) slab, columns in two calls */
        t[k]->softmax_inner_f32(o, x, 3, n, 0, n / 2, is_log);
        t[k]->softmax_inner_f32(o, x, 3, n, n / 2, n, is_log);
        for (int64_t c = 0; c < n; c++) {
          softmax_ref(ref, x + c, 3, n, is_log);
          for (int d = 0; d < 3; d++) ASSERT_TRUE(close_to(o[d * n + c], ref[d], is_log ? 1e-5 : 1e-7));
        }
      }
  }
  return 0;
}

/* Short rows go through the kernel a block of rows at a time: a row's bits
 * must not depend on the rows beside it (how many, or where the threads
 * split them), for every length up to two vectors and a partial block. */
TEST(softmax_short_rows_do_not_depend_on_their_neighbours) {
  const disp__cpu_kernel_table *t[DISP_CPU_CAP_COUNT];
  int nt = tables(t);
  enum { ROWS = 37, LEN = 33 };
  static float x[ROWS * LEN], whole[ROWS * LEN], alone[LEN];
  for (int64_t len = 1; len <= LEN; len++) {
    fill(x, ROWS * len, 5, 15.0f);
    x[3 * len] = NAN;
    for (int k = 0; k < nt; k++)
      for (int is_log = 0; is_log <= 1; is_log++) {
        t[k]->softmax_lastdim_f32(whole, x, ROWS, len, is_log);
        for (int r = 0; r < ROWS; r++) {
          t[k]->softmax_lastdim_f32(alone, x + r * len, 1, len, is_log);
          if (memcmp(alone, whole + r * len, (size_t)len * sizeof *alone))
            TEST_FAIL_("%s %ssoftmax len %lld: row %d alone differs", disp__cpu_capability_name(t[k]->cap),
                       is_log ? "log_" : "", (long long)len, r);
        }
      }
  }
  return 0;
}

/* GELU in double (the exact erf), and its gradient. */
static double gelu_ref(double x) { return x * 0.5 * (1 + erf(x * M_SQRT1_2)); }
static double gelu_grad_ref(double dy, double x) {
  return dy * (0.5 * (1 + erf(x * M_SQRT1_2)) + x * exp(-0.5 * x * x) / sqrt(2 * M_PI));
}

/* The vector copies take erf from Abramowitz and Stegun 7.1.26 (absolute
 * error 1.5e-7, as 1.13 and oneDNN do): allow that times |x| / 2 (|dy| / 2
 * for the gradient) beside float's rounding. */
TEST(gelu_and_its_gradient_within_the_erf_approximation) {
  const disp__cpu_kernel_table *t[DISP_CPU_CAP_COUNT];
  int nt = tables(t);
  static float x[MAXN], dy[MAXN], o[MAXN];
  int64_t n;
  FOR_LENGTHS(n) {
    fill(x, n, 4, 12.0f);
    fill(dy, n, 7, 4.0f);
    for (int k = 0; k < nt; k++) {
      t[k]->gelu_f32(o, x, n);
      for (int64_t i = 0; i < n; i++)
        if (!close_to(o[i], gelu_ref(x[i]), 1e-7 * fabs(x[i]) + 1e-37))
          TEST_FAIL_("%s gelu(%a) n=%lld: %.9g, want %.9g", disp__cpu_capability_name(t[k]->cap), x[i], (long long)n,
                     o[i], gelu_ref(x[i]));
      memcpy(o, dy, (size_t)n * sizeof *o); /* o may be dy */
      t[k]->gelu_backward_f32(o, o, x, n);
      for (int64_t i = 0; i < n; i++) {
        double want = gelu_grad_ref(dy[i], x[i]);
        if (!close_to(o[i], want, 1e-7 * fabs(dy[i]) + 1e-37))
          TEST_FAIL_("%s gelu_backward(%a, %a) n=%lld: %.9g, want %.9g", disp__cpu_capability_name(t[k]->cap), dy[i],
                     x[i], (long long)n, o[i], want);
      }
    }
  }
  return 0;
}

/* Rows of softmax (or log_softmax) outputs y and gradients g: the input
 * gradient in double, y * (g - sum g y) or g - exp(y) sum g. */
static double softmax_grad_ref(const float *g, const float *y, int64_t len, int64_t j, int is_log) {
  double s = 0;
  for (int64_t i = 0; i < len; i++) s += is_log ? (double)g[i] : (double)g[i] * y[i];
  return is_log ? g[j] - exp(y[j]) * s : y[j] * (g[j] - s);
}

TEST(softmax_backward_lastdim_matches_double_reference) {
  const disp__cpu_kernel_table *t[DISP_CPU_CAP_COUNT];
  int nt = tables(t);
  static float x[2 * MAXN], y[2 * MAXN], g[2 * MAXN], o[2 * MAXN];
  int64_t n;
  FOR_LENGTHS(n) {
    if (n == 0) continue;
    fill(x, 2 * n, 3, 8.0f);
    fill(g, 2 * n, 5, 2.0f);
    for (int k = 0; k < nt; k++)
      for (int is_log = 0; is_log <= 1; is_log++) {
        t[k]->softmax_lastdim_f32(y, x, 2, n, is_log);
        memcpy(o, g, (size_t)(2 * n) * sizeof *o); /* o may be g */
        t[k]->softmax_backward_lastdim_f32(o, o, y, 2, n, is_log);
        for (int r = 0; r < 2; r++)
          for (int64_t j = 0; j < n; j++) {
            double want = softmax_grad_ref(g + r * n, y + r * n, n, j, is_log);
            if (!close_to(o[r * n + j], want, 2e-6))
              TEST_FAIL_("%s %ssoftmax_backward n=%lld row %d [%lld]: %.9g vs %.9g",
                         disp__cpu_capability_name(t[k]->cap), is_log ? "log_" : "", (long long)n, r, (long long)j,
                         o[r * n + j], want);
          }
      }
  }
  return 0;
}

TEST(sum_is_accurate_on_every_capability) {
  const disp__cpu_kernel_table *t[DISP_CPU_CAP_COUNT];
  int nt = tables(t);
  static float x[100003];
  int64_t sizes[] = {0, 1, 7, 63, 65, 1001, 4099, 100003};
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    int64_t n = sizes[si];
    fill(x, n, 11, 100.0f);
    double want = 0, mag = 0;
    for (int64_t i = 0; i < n; i++) want += x[i], mag += fabs(x[i]);
    for (int k = 0; k < nt; k++) {
      float got = t[k]->sum_f32(x, n);
      if (fabs(got - want) > 1e-6 * mag + 1e-30)
        TEST_FAIL_("%s sum n=%lld: %.9g vs %.9g", disp__cpu_capability_name(t[k]->cap), (long long)n, got, want);
    }
  }
  float s[19] = {1.0f, 2.0f, INFINITY};
  for (int k = 0; k < nt; k++) {
    ASSERT_TRUE(t[k]->sum_f32(s, 19) == INFINITY);
    s[18] = NAN;
    ASSERT_TRUE(isnan(t[k]->sum_f32(s, 19)));
    s[18] = 0.0f;
    ASSERT_TRUE(t[k]->sum_f32(s, 0) == 0.0f);
  }
  return 0;
}

/* ---- through the operators ----------------------------------------------- */

static disp_tensor *tensor1(disp_dtype dt, int64_t n) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(&n, 1, dt, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK) return NULL;
  return t;
}

TEST(add_and_sub_alpha_fast_paths_for_float_int_bool) {
  enum { N = 37 };
  disp_tensor *fa = tensor1(DISP_DTYPE_FLOAT32, N), *fb = tensor1(DISP_DTYPE_FLOAT32, N);
  disp_tensor *ia = tensor1(DISP_DTYPE_INT64, N), *ib = tensor1(DISP_DTYPE_INT64, N);
  disp_tensor *ba = tensor1(DISP_DTYPE_BOOL, N), *bb = tensor1(DISP_DTYPE_BOOL, N);
  ASSERT_TRUE(fa && fb && ia && ib && ba && bb);
  float *pfa = disp_tensor_data_ptr(fa), *pfb = disp_tensor_data_ptr(fb);
  int64_t *pia = disp_tensor_data_ptr(ia), *pib = disp_tensor_data_ptr(ib);
  uint8_t *pba = disp_tensor_data_ptr(ba), *pbb = disp_tensor_data_ptr(bb);
  for (int i = 0; i < N; i++) {
    pfa[i] = (float)i * 0.37f - 5.0f, pfb[i] = (float)(i % 5) * 1.3f;
    pia[i] = i * 1000003 - 7, pib[i] = (i % 7) - 3;
    pba[i] = (uint8_t)(i % 2), pbb[i] = (uint8_t)(i % 3 == 0);
  }
  static const int64_t alphas[] = {1, -1, 3};
  for (int s = 0; s < 2; s++)
    for (int k = 0; k < 3; k++) {
      int64_t al = alphas[k];
      disp_tensor *r = NULL;
      disp_scalar alpha = disp_scalar_int(al);
      ASSERT_OK((s ? disp_aten_sub_Tensor : disp_aten_add_Tensor)(fa, fb, alpha, &r));
      const float *pr = disp_tensor_data_ptr(r);
      for (int i = 0; i < N; i++) {
        float p = pfb[i] * (float)(s ? -al : al), want = al == 1 && !s ? pfa[i] + pfb[i] : pfa[i] + p;
        ASSERT_TRUE(same(pr[i], want));
      }
      disp_tensor_release(r);
      ASSERT_OK((s ? disp_aten_sub_Tensor : disp_aten_add_Tensor)(ia, ib, alpha, &r));
      const int64_t *pi = disp_tensor_data_ptr(r);
      for (int i = 0; i < N; i++) ASSERT_EQ_INT(pi[i], pia[i] + (s ? -al : al) * pib[i]);
      disp_tensor_release(r);
    }
  for (int k = 0; k < 3; k++) {
    disp_tensor *r = NULL;
    disp_scalar alpha = k == 0 ? disp_scalar_bool(true) : disp_scalar_int(k == 1 ? 1 : 0);
    ASSERT_OK(disp_aten_add_Tensor(ba, bb, alpha, &r));
    const uint8_t *pr = disp_tensor_data_ptr(r);
    for (int i = 0; i < N; i++) ASSERT_EQ_INT(pr[i], k == 2 ? pba[i] : (pba[i] || pbb[i]));
    disp_tensor_release(r);
  }
  disp_tensor *all[] = {fa, fb, ia, ib, ba, bb};
  for (int i = 0; i < 6; i++) disp_tensor_release(all[i]);
  return 0;
}

TEST(relu_of_nan_is_nan_and_of_minus_zero_is_minus_zero) {
  disp_tensor *x = tensor1(DISP_DTYPE_FLOAT32, 19), *r = NULL;
  ASSERT_TRUE(x != NULL);
  float *p = disp_tensor_data_ptr(x);
  for (int i = 0; i < 19; i++) p[i] = i % 4 == 0 ? NAN : i % 4 == 1 ? -0.0f : i % 4 == 2 ? -3.0f : 3.0f;
  ASSERT_OK(disp_aten_relu(x, &r));
  const float *q = disp_tensor_data_ptr(r);
  for (int i = 0; i < 19; i++) {
    if (i % 4 == 0) ASSERT_TRUE(isnan(q[i]));
    if (i % 4 == 1) ASSERT_EQ_INT(bits(q[i]), bits(-0.0f));
    if (i % 4 == 2) ASSERT_TRUE(q[i] == 0.0f);
    if (i % 4 == 3) ASSERT_TRUE(q[i] == 3.0f);
  }
  disp_tensor_release(r);
  disp_tensor_release(x);
  return 0;
}

/* sum, softmax, log_softmax and exp of a large float32 tensor: the same bits
 * at 1 and at 2 threads (fixed blocks, not per-thread partials). */
TEST(results_do_not_depend_on_the_thread_count) {
  int64_t sz[2] = {300, 1001};
  disp_tensor *x = NULL;
  ASSERT_OK(disp_tensor_empty(sz, 2, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &x));
  fill(disp_tensor_data_ptr(x), 300 * 1001, 13, 10.0f);
  int saved = disp_get_num_threads();
  disp_tensor *r[2][5];
  for (int t = 0; t < 2; t++) {
    ASSERT_OK(disp_set_num_threads(t + 1));
    ASSERT_OK(disp_aten_sum(x, -1, &r[t][0]));
    ASSERT_OK(disp_aten__softmax(x, 1, false, &r[t][1]));
    ASSERT_OK(disp_aten__log_softmax(x, 0, false, &r[t][2]));
    ASSERT_OK(disp_aten_exp(x, &r[t][3]));
    disp_opt_int_list dim1 = {{(int64_t[]){1}, 1}, true};
    ASSERT_OK(disp_aten_mean_dim(x, dim1, false, -1, &r[t][4]));
  }
  ASSERT_OK(disp_set_num_threads(saved));
  for (int k = 0; k < 5; k++) {
    ASSERT_EQ_INT(disp_tensor_numel(r[0][k]), disp_tensor_numel(r[1][k]));
    ASSERT_TRUE(!memcmp(disp_tensor_data_ptr(r[0][k]), disp_tensor_data_ptr(r[1][k]),
                        (size_t)disp_tensor_numel(r[0][k]) * 4));
    disp_tensor_release(r[0][k]);
    disp_tensor_release(r[1][k]);
  }
  disp_tensor_release(x);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(the_table_in_use_is_the_capability_in_use),
    TEST_ENTRY(binary_kernels_are_bit_exact_on_every_capability),
    TEST_ENTRY(select_is_bit_exact_on_every_capability),
    TEST_ENTRY(clamp_min_is_std_max_bit_for_bit_and_relu_keeps_nan),
    TEST_ENTRY(exp_log_tanh_within_one_ulp_sigmoid_within_three),
    TEST_ENTRY(softmax_lastdim_and_inner_match_double_reference),
    TEST_ENTRY(softmax_short_rows_do_not_depend_on_their_neighbours),
    TEST_ENTRY(gelu_and_its_gradient_within_the_erf_approximation),
    TEST_ENTRY(softmax_backward_lastdim_matches_double_reference),
    TEST_ENTRY(sum_is_accurate_on_every_capability),
    TEST_ENTRY(add_and_sub_alpha_fast_paths_for_float_int_bool),
    TEST_ENTRY(relu_of_nan_is_nan_and_of_minus_zero_is_minus_zero),
    TEST_ENTRY(results_do_not_depend_on_the_thread_count),
    TEST_END};
TEST_MAIN()
