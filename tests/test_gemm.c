/*
 * test_gemm - the two matrix-multiply paths (CBLAS and the portable blocked
 * kernel) agree with each other and with a naive reference: sizes that are
 * not multiples of the blocks, transposed / sliced / expanded / column-major
 * operands, large sizes, every dtype; float64 with values that are
 * multiples of 1/8 must be bit-exact whatever the summation order; a
 * product split across threads equals the one-call product exactly.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <disp/cpu.h>

#include "cpu/kernels.h"
#include "gemm.h"
#include "test.h"

static uint64_t g_state = 12345;
static double rnd8(void) { /* a multiple of 1/8 in [-3, 3] */
  g_state = g_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)((int64_t)((g_state >> 33) % 49) - 24) / 8.0;
}

/* Reference C = alpha*A@B + beta*C in long double over strided doubles. */
static void ref_gemm(int64_t m, int64_t n, int64_t k, double alpha, const double *a, int64_t ars,
                     int64_t acs, const double *b, int64_t brs, int64_t bcs, double beta, double *c,
                     int64_t crs, int64_t ccs) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      long double s = 0;
      for (int64_t p = 0; p < k; p++) s += (long double)a[i * ars + p * acs] * b[p * brs + j * bcs];
      double *cp = &c[i * crs + j * ccs];
      *cp = (double)(alpha * s + (beta == 0 ? 0.0 : beta * *cp));
    }
}

static int bits_eq(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static double *filled(size_t n) {
  double *p = malloc(sizeof(double) * (n ? n : 1));
  for (size_t i = 0; i < n; i++) p[i] = rnd8();
  return p;
}

/* One f64 case: operands in the given layouts; both paths must equal the
 * reference exactly (1/8 multiples, sums far below 2^53). */
static int check_f64(int64_t m, int64_t n, int64_t k, int a_trans, int b_trans, int c_layout, double beta) {
  int64_t ars = a_trans ? 1 : k + 3, acs = a_trans ? m + 2 : 1; /* padded leading dims */
  int64_t brs = b_trans ? 1 : n + 1, bcs = b_trans ? k + 5 : 1;
  int64_t crs, ccs;
  if (c_layout == 0) crs = n, ccs = 1;           /* row-major */
  else if (c_layout == 1) crs = 1, ccs = m;      /* column-major */
  else crs = 2 * n, ccs = 2;                      /* neither: strided both ways */
  size_t asz = (size_t)((m - 1) * ars + (k - 1) * acs + 1), bsz = (size_t)((k - 1) * brs + (n - 1) * bcs + 1);
  size_t csz = (size_t)((m - 1) * crs + (n - 1) * ccs + 1);
  double *a = filled(asz), *b = filled(bsz), *c0 = filled(csz);
  double *cref = malloc(sizeof(double) * csz), *cb = malloc(sizeof(double) * csz), *cp = malloc(sizeof(double) * csz);
  memcpy(cref, c0, sizeof(double) * csz);
  memcpy(cb, c0, sizeof(double) * csz);
  memcpy(cp, c0, sizeof(double) * csz);
  ref_gemm(m, n, k, 1.5, a, ars, acs, b, brs, bcs, beta, cref, crs, ccs);
  disp__mat A = {a, ars, acs}, B = {b, brs, bcs}, Cb = {cb, crs, ccs}, Cp = {cp, crs, ccs};
  int old = disp__gemm_force_portable(0);
  ASSERT_OK(disp__gemm_f64(m, n, k, 1.5, A, B, beta, Cb));
  disp__gemm_force_portable(1);
  ASSERT_OK(disp__gemm_f64(m, n, k, 1.5, A, B, beta, Cp));
  disp__gemm_force_portable(old);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      int64_t o = i * crs + j * ccs;
      if (cb[o] != cref[o] || cp[o] != cref[o])
        TEST_FAIL_("f64 %lldx%lldx%lld ta=%d tb=%d c=%d at (%lld,%lld): blas %g portable %g ref %g",
                   (long long)m, (long long)n, (long long)k, a_trans, b_trans, c_layout, (long long)i,
                   (long long)j, cb[o], cp[o], cref[o]);
    }
  free(a), free(b), free(c0), free(cref), free(cb), free(cp);
  return 0;
}

TEST(f64_exact_all_layouts) {
  static const int64_t sizes[][3] = {{1, 1, 1},   {2, 3, 4},    {13, 11, 20}, {17, 1, 9},
                                     {1, 33, 7},  {65, 63, 129}, {70, 257, 3}, {130, 5, 300},
                                     {1, 300, 129}, {1, 2, 513}}; /* m = 1: gemv (Note [One row]) */
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++)
        for (int cl = 0; cl < 3; cl++)
          if (check_f64(sizes[s][0], sizes[s][1], sizes[s][2], ta, tb, cl, cl == 2 ? 0.5 : 0.0)) return 1;
  return 0;
}

TEST(beta_zero_ignores_nan) {
  double a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4] = {NAN, INFINITY, NAN, NAN};
  disp__mat A = {a, 2, 1}, B = {b, 2, 1}, C = {c, 2, 1};
  for (int portable = 0; portable < 2; portable++) {
    c[0] = NAN, c[1] = INFINITY, c[2] = NAN, c[3] = NAN;
    disp__gemm_force_portable(portable);
    ASSERT_OK(disp__gemm_f64(2, 2, 2, 1.0, A, B, 0.0, C));
    for (int i = 0; i < 4; i++) ASSERT_TRUE(c[i] == a[i]);
  }
  disp__gemm_force_portable(0);
  return 0;
}

TEST(expanded_operand_and_k_zero) {
  double a[3] = {0.375, 1.125, -0.875}, b[6] = {1.875, 0.75, -2.5, -0.625, 1.5, 2.125}, c[8], r[8];
  disp__mat A = {a, 0, 1}, B = {b, 2, 1}; /* A is (4,3) with row stride 0 */
  for (int portable = 0; portable < 2; portable++) {
    disp__gemm_force_portable(portable);
    disp__mat C = {c, 2, 1};
    ASSERT_OK(disp__gemm_f64(4, 2, 3, 1.0, A, B, 0.0, C));
    ref_gemm(4, 2, 3, 1.0, a, 0, 1, b, 2, 1, 0.0, r, 2, 1);
    for (int i = 0; i < 8; i++) ASSERT_TRUE(c[i] == r[i]);
    /* k = 0: C = beta * C */
    for (int i = 0; i < 8; i++) c[i] = i;
    ASSERT_OK(disp__gemm_f64(4, 2, 0, 1.0, A, B, 2.0, C));
    for (int i = 0; i < 8; i++) ASSERT_TRUE(c[i] == 2.0 * i);
  }
  disp__gemm_force_portable(0);
  return 0;
}

/* float32: both paths against a float64 reference, relative to the scale. */
static int check_f32(int64_t m, int64_t n, int64_t k, int trans) {
  float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
  float *c1 = malloc(sizeof(float) * (size_t)(m * n)), *c2 = malloc(sizeof(float) * (size_t)(m * n));
  double *ad = malloc(sizeof(double) * (size_t)(m * k)), *bd = malloc(sizeof(double) * (size_t)(k * n));
  double *r = malloc(sizeof(double) * (size_t)(m * n));
  for (int64_t i = 0; i < m * k; i++) ad[i] = a[i] = (float)(rnd8() * 0.37);
  for (int64_t i = 0; i < k * n; i++) bd[i] = b[i] = (float)(rnd8() * 0.91);
  int64_t ars = trans ? 1 : k, acs = trans ? m : 1;
  ref_gemm(m, n, k, 1.0, ad, ars, acs, bd, n, 1, 0.0, r, n, 1);
  disp__mat A = {a, ars, acs}, B = {b, n, 1}, C1 = {c1, n, 1}, C2 = {c2, n, 1};
  disp__gemm_force_portable(0);
  ASSERT_OK(disp__gemm_f32(m, n, k, 1.0f, A, B, 0.0f, C1));
  disp__gemm_force_portable(1);
  ASSERT_OK(disp__gemm_f32(m, n, k, 1.0f, A, B, 0.0f, C2));
  disp__gemm_force_portable(0);
  double tol = 1e-5 * sqrt((double)k) * 3.0;
  for (int64_t i = 0; i < m * n; i++) {
    if (fabs(c1[i] - r[i]) > tol * (1 + fabs(r[i])) || fabs(c2[i] - r[i]) > tol * (1 + fabs(r[i])))
      TEST_FAIL_("f32 %lldx%lldx%lld at %lld: blas %g portable %g ref %g", (long long)m, (long long)n,
                 (long long)k, (long long)i, c1[i], c2[i], r[i]);
  }
  free(a), free(b), free(c1), free(c2), free(ad), free(bd), free(r);
  return 0;
}

TEST(f32_random_and_large) {
  static const int64_t sizes[][3] = {{7, 9, 5}, {64, 64, 64}, {129, 67, 255}, {300, 200, 513}};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int t = 0; t < 2; t++)
      if (check_f32(sizes[s][0], sizes[s][1], sizes[s][2], t)) return 1;
  return 0;
}

/* Note [Small products] (gemm.c): a table's gemm_nt_f32 against a long
 * double reference and the portable product, C = alpha * A @ Bt^T + beta *
 * C, with padded leading dimensions whose padding must stay untouched and
 * beta 0 over a C of NaN. */
static int check_small(const disp__cpu_kernel_table *t, int64_t m, int64_t n, int64_t k, float alpha,
                       float beta) {
  const int64_t lda = k + 3, ldb = k + 1, ldc = n + 2;
  float *a = malloc(sizeof(float) * (size_t)(m * lda)), *bt = malloc(sizeof(float) * (size_t)(n * ldb));
  float *c = malloc(sizeof(float) * (size_t)(m * ldc)), *cp = malloc(sizeof(float) * (size_t)(m * ldc));
  float *c0 = malloc(sizeof(float) * (size_t)(m * ldc));
  for (int64_t i = 0; i < m * lda; i++) a[i] = (float)(rnd8() * 0.37);
  for (int64_t i = 0; i < n * ldb; i++) bt[i] = (float)(rnd8() * 0.91);
  for (int64_t i = 0; i < m * ldc; i++) c0[i] = i % ldc >= n ? 7.0f : beta == 0.0f ? NAN : (float)rnd8();
  memcpy(c, c0, sizeof(float) * (size_t)(m * ldc));
  memcpy(cp, c0, sizeof(float) * (size_t)(m * ldc));
  t->gemm_nt_f32(m, n, k, alpha, a, lda, bt, ldb, beta, c, ldc, c, ldc);
  disp__mat A = {a, lda, 1}, B = {bt, 1, ldb}, Cp = {cp, ldc, 1};
  int old = disp__gemm_force_portable(1);
  ASSERT_OK(disp__gemm_f32(m, n, k, alpha, A, B, beta, Cp));
  disp__gemm_force_portable(old);
  double tol = 1e-5 * sqrt((double)k) * 3.0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < ldc; j++) {
      int64_t o = i * ldc + j;
      long double s = 0;
      for (int64_t p = 0; p < k && j < n; p++) s += (long double)a[i * lda + p] * bt[j * ldb + p];
      double want = (double)(alpha * s + (beta == 0.0f ? 0.0L : (long double)beta * c0[o]));
      int ok = j >= n ? bits_eq(c[o], 7.0f) : fabs(c[o] - want) <= tol * (1 + fabs(want)) &&
                                                  fabs(cp[o] - want) <= tol * (1 + fabs(want));
      if (!ok)
        TEST_FAIL_("small %lldx%lldx%lld alpha %g beta %g at (%lld,%lld): %.9g, portable %.9g, ref %.9g",
                   (long long)m, (long long)n, (long long)k, alpha, beta, (long long)i, (long long)j, c[o], cp[o],
                   want);
    }
  free(a), free(bt), free(c), free(cp), free(c0);
  return 0;
}

TEST(small_products_match_the_reference_on_every_capability) {
  static const int64_t ms[] = {1, 2, 3, 7, 8, 9, 16}, ns[] = {1, 3, 4, 7, 8, 9, 10, 16, 17, 31, 33};
  static const int64_t ks[] = {1, 2, 7, 8, 9, 16, 17, 31, 33, 64, 100};
  static const float alphas[] = {1.0f, -0.75f}, betas[] = {0.0f, 1.0f, 0.5f};
  int tested = 0;
  for (int cap = 0; cap <= (int)disp__cpu_capability_supported(); cap++) {
    const disp__cpu_kernel_table *t = disp__cpu_kernels_for((disp__cpu_cap)cap);
    if (!t || !t->gemm_nt_f32) continue;
    tested++;
    for (size_t x = 0; x < sizeof ms / sizeof *ms; x++)
      for (size_t y = 0; y < sizeof ns / sizeof *ns; y++)
        for (size_t z = 0; z < sizeof ks / sizeof *ks; z++)
          for (int al = 0; al < 2; al++)
            for (int be = 0; be < 3; be++)
              if (check_small(t, ms[x], ns[y], ks[z], alphas[al], betas[be])) return 1;
  }
  /* the baseline has none (no FMA); x86-64 with AVX2 has one */
  ASSERT_TRUE(disp__cpu_kernels_for(DISP_CPU_DEFAULT)->gemm_nt_f32 == NULL);
  if (disp__cpu_capability_supported() > DISP_CPU_DEFAULT) ASSERT_TRUE(tested > 0);
  return 0;
}

/* disp__gemm_f32 hands a small product in linear's layout to the table in
 * use, whatever the thread count, and a larger one or another layout to
 * BLAS (or the portable kernel when forced). */
TEST(small_products_take_the_small_kernel_only) {
  const disp__cpu_kernel_table *t = disp__cpu_kernels();
  if (!t->gemm_nt_f32) return 0; /* nothing to route to on this capability */
  enum { M = 8, N = 32, K = 40 }; /* 10240 multiply-adds, 256 outputs: small */
  float a[M * K], bt[N * K], want[M * N], got[M * N];
  for (int i = 0; i < M * K; i++) a[i] = (float)(rnd8() * 0.37);
  for (int i = 0; i < N * K; i++) bt[i] = (float)(rnd8() * 0.91);
  t->gemm_nt_f32(M, N, K, 1.0f, a, K, bt, K, 0.0f, want, N, want, N);
  disp__mat A = {a, K, 1}, B = {bt, 1, K}, C = {got, N, 1};
  int threads = disp_get_num_threads();
  for (int th = 1; th <= 3; th++) {
    ASSERT_OK(disp_set_num_threads(th));
    ASSERT_OK(disp__gemm_f32(M, N, K, 1.0f, A, B, 0.0f, C));
    ASSERT_TRUE(memcmp(got, want, sizeof got) == 0);
  }
  ASSERT_OK(disp_set_num_threads(threads));
  /* B row-major (another layout) and a product one output too large: not the
   * small kernel, whose k = 40 sums associate differently */
  float b[K * N], big_want[M * (N + 1)], big[M * (N + 1)], bt1[(N + 1) * K];
  for (int p = 0; p < K; p++)
    for (int j = 0; j < N; j++) b[p * N + j] = bt[j * K + p];
  disp__mat Br = {b, N, 1};
  ASSERT_OK(disp__gemm_f32(M, N, K, 1.0f, A, Br, 0.0f, C));
  ASSERT_TRUE(memcmp(got, want, sizeof got) != 0);
  for (int i = 0; i < (N + 1) * K; i++) bt1[i] = i < N * K ? bt[i] : (float)rnd8();
  t->gemm_nt_f32(M, N + 1, K, 1.0f, a, K, bt1, K, 0.0f, big_want, N + 1, big_want, N + 1);
  disp__mat B1 = {bt1, 1, K}, C1 = {big, N + 1, 1};
  ASSERT_OK(disp__gemm_f32(M, N + 1, K, 1.0f, A, B1, 0.0f, C1));
  ASSERT_TRUE(memcmp(big, big_want, sizeof big) != 0);
  return 0;
}

/* A column of a small product has the same bits whichever group of
 * columns it is computed in (eight at a time, or four where at most four
 * are left): the sums depend on k only. */
TEST(small_products_do_not_depend_on_the_column_group) {
  const disp__cpu_kernel_table *t = disp__cpu_kernels();
  if (!t->gemm_nt_f32) return 0;
  enum { M = 5, N = 13, KMAX = 40 };
  float a[M * KMAX], bt[N * KMAX], bias[N], all[M * N], part[M * N];
  static const int64_t ks[] = {3, 8, 16, 21, 40};
  for (int i = 0; i < M * KMAX; i++) a[i] = (float)(rnd8() * 0.37);
  for (int i = 0; i < N * KMAX; i++) bt[i] = (float)(rnd8() * 0.91);
  for (int j = 0; j < N; j++) bias[j] = (float)rnd8();
  for (size_t z = 0; z < sizeof ks / sizeof *ks; z++) {
    int64_t k = ks[z];
    t->gemm_nt_f32(M, N, k, 0.5f, a, k, bt, k, 1.0f, bias, 0, all, N);
    for (int64_t j0 = 0; j0 < N; j0++)
      for (int64_t n = 1; j0 + n <= N && n <= 9; n++) {
        t->gemm_nt_f32(M, n, k, 0.5f, a, k, bt + j0 * k, k, 1.0f, bias + j0, 0, part, n);
        for (int64_t i = 0; i < M; i++)
          if (memcmp(part + i * n, all + i * N + j0, (size_t)n * sizeof(float)))
            TEST_FAIL_("k %lld: columns %lld..%lld alone differ in row %lld", (long long)k, (long long)j0,
                       (long long)(j0 + n - 1), (long long)i);
      }
  }
  return 0;
}

/* disp__gemm_small_from: a small product started from a bias row (row
 * stride 0) gives the bits of filling C with the row and multiplying in
 * place, beta 1 and not; a product or a layout the small kernel does not
 * take is refused with C untouched. */
TEST(small_products_start_from_a_bias_row) {
  if (!disp__cpu_kernels()->gemm_nt_f32) return 0;
  enum { M = 8, N = 12, K = 20 };
  float a[M * K], bt[N * K], bias[N], want[M * N], got[M * N];
  for (int i = 0; i < M * K; i++) a[i] = (float)(rnd8() * 0.37);
  for (int i = 0; i < N * K; i++) bt[i] = (float)(rnd8() * 0.91);
  for (int j = 0; j < N; j++) bias[j] = (float)rnd8();
  disp__mat A = {a, K, 1}, B = {bt, 1, K}, C = {got, N, 1}, W = {want, N, 1}, S = {bias, 0, 1};
  static const double betas[] = {1.0, 0.5};
  for (int be = 0; be < 2; be++) {
    disp_scalar beta = disp_scalar_double(betas[be]), alpha = disp_scalar_double(-0.75);
    for (int i = 0; i < M * N; i++) want[i] = bias[i % N], got[i] = NAN;
    ASSERT_OK(disp__gemm(DISP_DTYPE_FLOAT32, M, N, K, alpha, A, B, beta, W));
    ASSERT_TRUE(disp__gemm_small_from(DISP_DTYPE_FLOAT32, M, N, K, alpha, A, B, beta, S, C));
    ASSERT_TRUE(memcmp(got, want, sizeof got) == 0);
  }
  disp__mat Sc = {bias, 0, 0}, Br = {bt, N, 1}; /* a repeated element; B row-major */
  got[0] = 3.0f;
  ASSERT_TRUE(!disp__gemm_small_from(DISP_DTYPE_FLOAT32, M, N, K, disp_scalar_int(1), A, B, disp_scalar_int(1), Sc, C));
  ASSERT_TRUE(!disp__gemm_small_from(DISP_DTYPE_FLOAT32, M, N, K, disp_scalar_int(1), A, Br, disp_scalar_int(1), S, C));
  ASSERT_TRUE(!disp__gemm_small_from(DISP_DTYPE_FLOAT64, M, N, K, disp_scalar_int(1), A, B, disp_scalar_int(1), S, C));
  ASSERT_TRUE(got[0] == 3.0f);
  return 0;
}

TEST(integer_dtypes_wrap_like_the_type) {
  /* int8: 100 * 3 = 300 wraps to 44 in int8 arithmetic, as in PyTorch. */
  int8_t a[2] = {100, 1}, b[2] = {3, 1}, c[1] = {0};
  disp__mat A = {a, 2, 1}, B = {b, 1, 1}, C = {c, 1, 1};
  ASSERT_OK(disp__gemm(DISP_DTYPE_INT8, 1, 1, 2, disp_scalar_int(1), A, B, disp_scalar_int(0), C));
  ASSERT_EQ_INT(c[0], (int8_t)(uint8_t)301);
  int64_t x[6] = {-5, 4, 4, -3, -5, -2}, y[6] = {3, 5, -3, -4, 5, -1}, z[4] = {1, 1, 1, 1};
  disp__mat X = {x, 3, 1}, Y = {y, 2, 1}, Z = {z, 2, 1};
  ASSERT_OK(disp__gemm(DISP_DTYPE_INT64, 2, 2, 3, disp_scalar_int(-1), X, Y, disp_scalar_int(2), Z));
  ASSERT_EQ_INT(z[0], 2 + 7);
  ASSERT_EQ_INT(z[1], 2 + 45);
  ASSERT_EQ_INT(z[2], 2 + 4);
  ASSERT_EQ_INT(z[3], 2 - 7);
  return 0;
}

TEST(bfloat16_accumulates_in_float) {
  uint16_t a[4], b[4], c[4];
  float af[4] = {-1.75f, 0.125f, 0.375f, -1.75f}, bf[4] = {-0.75f, -0.625f, 1.75f, -2.75f};
  for (int i = 0; i < 4; i++) a[i] = disp__f32_to_bf16(af[i]), b[i] = disp__f32_to_bf16(bf[i]);
  disp__mat A = {a, 2, 1}, B = {b, 2, 1}, C = {c, 2, 1};
  ASSERT_OK(disp__gemm(DISP_DTYPE_BFLOAT16, 2, 2, 2, disp_scalar_int(1), A, B, disp_scalar_int(0), C));
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      float want = af[i * 2] * bf[j] + af[i * 2 + 1] * bf[2 + j];
      ASSERT_TRUE(disp__bf16_to_f32(c[i * 2 + j]) == disp__bf16_to_f32(disp__f32_to_bf16(want)));
    }
  /* float16 round trip of a few values, subnormals included */
  float hv[5] = {0.0f, 1.0f, -2.5f, 6.103515625e-05f, 5.960464477539063e-08f};
  for (int i = 0; i < 5; i++) ASSERT_TRUE(disp__f16_to_f32(disp__f32_to_f16(hv[i])) == hv[i]);
  return 0;
}

/* The operators on top: mm through the dispatcher, BLAS vs portable. */
static disp_tensor *tensor2(int64_t r, int64_t c, disp_dtype dt) {
  int64_t sz[2] = {r, c};
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sz, 2, dt, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK) return NULL;
  for (int64_t i = 0; i < r * c; i++)
    disp__store_f64((char *)disp_tensor_data_ptr(t) + i * (int64_t)disp_dtype_itemsize(dt), dt, rnd8());
  return t;
}

/* One float32 product at `threads` threads into c (layout from `lay`:
 * 0 row-major, 1 column-major, 2 strided both ways), A transposed or not,
 * all leading dimensions padded. */
static int split_run(int threads, int64_t m, int64_t n, int64_t k, int ta, int lay, const float *a,
                     const float *b, float *c) {
  int64_t ars = ta ? 1 : k + 3, acs = ta ? m + 2 : 1;
  int64_t crs = lay == 0 ? n : lay == 1 ? 1 : 2 * n, ccs = lay == 0 ? 1 : lay == 1 ? m : 2;
  disp__mat A = {(void *)(uintptr_t)a, ars, acs}, B = {(void *)(uintptr_t)b, n + 1, 1}, C = {c, crs, ccs};
  ASSERT_OK(disp_set_num_threads(threads));
  ASSERT_OK(disp__gemm_f32(m, n, k, 0.75f, A, B, 0.5f, C));
  return 0;
}

/* Note [Threaded gemm]: a product is cut into the same blocks (rows of C,
 * columns when C is column-major) at any thread count, so 1, 2 and 3
 * threads give the same bits, on both paths, whatever the layouts and
 * whatever kernel family OpenBLAS runs (.ci/coretypes.sh repeats this under
 * every OPENBLAS_CORETYPE the CPU executes). */
TEST(threads_do_not_change_the_product) {
  static const int64_t sizes[][3] = {{301, 97, 203}, {5, 777, 301}, {97, 64, 64},   {3, 1000, 100},
                                     {100, 1000, 100}, {1000, 3, 100}, {500, 1, 300}, {128, 256, 784},
                                     {128, 10, 256},  {32, 128, 64},  {131, 40, 150}};
  int saved = disp_get_num_threads();
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (int portable = 0; portable < 2; portable++)
      for (int ta = 0; ta < 2; ta++)
        for (int lay = 0; lay < 3; lay++) {
          int64_t m = sizes[s][0], n = sizes[s][1], k = sizes[s][2];
          size_t na = (size_t)((m + 2) * (k + 3)), nb = (size_t)(k * (n + 1)), nc = (size_t)(m * n * 4);
          float *a = malloc(sizeof(float) * na), *b = malloc(sizeof(float) * nb);
          float *c[3] = {malloc(sizeof(float) * nc), malloc(sizeof(float) * nc), malloc(sizeof(float) * nc)};
          for (size_t i = 0; i < na; i++) a[i] = (float)(rnd8() * 0.37);
          for (size_t i = 0; i < nb; i++) b[i] = (float)(rnd8() * 0.91);
          for (size_t i = 0; i < nc; i++) c[0][i] = c[1][i] = c[2][i] = (float)(rnd8() * 0.13);
          disp__gemm_force_portable(portable);
          for (int t = 0; t < 3; t++)
            if (split_run(t + 1, m, n, k, ta, lay, a, b, c[t])) return 1;
          disp__gemm_force_portable(0);
          if (memcmp(c[0], c[1], sizeof(float) * nc) || memcmp(c[0], c[2], sizeof(float) * nc))
            TEST_FAIL_("f32 %lldx%lldx%lld portable=%d ta=%d layout=%d: threads change the product",
                       (long long)m, (long long)n, (long long)k, portable, ta, lay);
          free(a), free(b), free(c[0]), free(c[1]), free(c[2]);
        }
  ASSERT_OK(disp_set_num_threads(saved));
  return 0;
}

/* The blocks disp__gemm_blocks reports for an m-row product at `threads`. */
static int blocks_at(int threads, disp_dtype dt, int64_t m, int64_t n, int64_t k, int64_t starts[4]) {
  if (disp_set_num_threads(threads) != DISP_OK) return -1;
  return disp__gemm_blocks(dt, m, n, k, starts, 4);
}

/* Note [Threaded gemm]: the partition is the product's own, the same at 1,
 * 2 and 3 threads and on both paths; block starts are multiples of 16 as
 * near an even share as that allows: the MLP's 128x256 layer is cut into
 * two blocks of 128 columns (the longer side). */
TEST(split_blocks_do_not_depend_on_threads) {
  int saved = disp_get_num_threads();
  int64_t st[4], st1[4];
  for (int portable = 0; portable < 2; portable++) {
    disp__gemm_force_portable(portable);
    for (int d = 0; d < 2; d++) {
      disp_dtype dt = d ? DISP_DTYPE_FLOAT64 : DISP_DTYPE_FLOAT32;
      for (int t = 1; t <= 3; t++) {
        ASSERT_EQ_INT(blocks_at(t, dt, 8, 8, 8, st), 1); /* too little work to split */
        ASSERT_EQ_INT(blocks_at(t, dt, 128, 256, 784, st), 2);
        ASSERT_TRUE(st[0] == 0 && st[1] == 128);
        ASSERT_EQ_INT(blocks_at(t, dt, 20, 24, 100000, st), 1); /* no side of 2 x 16 */
        for (int cm = 0; cm < 2; cm++) {
          /* 1024 rows (or columns, the longer side) of a large product: 4 blocks of 256 */
          ASSERT_EQ_INT(blocks_at(t, dt, cm ? 64 : 1024, cm ? 1024 : 64, 1024, st), 4);
          ASSERT_EQ_INT(blocks_at(1, dt, cm ? 64 : 1024, cm ? 1024 : 64, 1024, st1), 4);
          for (int i = 0; i < 4; i++) ASSERT_EQ_INT(st[i], st1[i]);
          for (int i = 0; i < 4; i++) ASSERT_EQ_INT(st[i], 256 * i);
          /* 200 rows (columns): 2 blocks meeting at a multiple of 16 */
          ASSERT_EQ_INT(blocks_at(t, dt, cm ? 17 : 200, cm ? 200 : 17, 300, st), 2);
          ASSERT_TRUE(st[1] % 16 == 0 && st[1] >= 92 && st[1] <= 108);
        }
      }
    }
  }
  disp__gemm_force_portable(0);
  ASSERT_EQ_INT(blocks_at(2, DISP_DTYPE_INT32, 128, 256, 784, st), 0);
  ASSERT_OK(disp_set_num_threads(saved));
  return 0;
}

TEST(mm_operator_paths_agree) {
  disp_dtype dts[2] = {DISP_DTYPE_FLOAT32, DISP_DTYPE_FLOAT64};
  for (int d = 0; d < 2; d++) {
    disp_tensor *a = tensor2(37, 71, dts[d]), *b = tensor2(71, 29, dts[d]), *r1 = NULL, *r2 = NULL;
    ASSERT_TRUE(a && b);
    disp__gemm_force_portable(0);
    ASSERT_OK(disp_aten_mm(a, b, &r1));
    disp__gemm_force_portable(1);
    ASSERT_OK(disp_aten_mm(a, b, &r2));
    disp__gemm_force_portable(0);
    size_t isz = disp_dtype_itemsize(dts[d]);
    ASSERT_TRUE(memcmp(disp_tensor_data_ptr(r1), disp_tensor_data_ptr(r2), isz * 37 * 29) == 0);
    disp_tensor_release(a), disp_tensor_release(b), disp_tensor_release(r1), disp_tensor_release(r2);
  }
  return 0;
}

TEST(alpha_beta_the_type_cannot_hold_are_refused) {
  /* 1.13's addmm converts alpha/beta with Scalar::to<opmath_t>(): nan for an
   * integer product, 1e300 for float, 300 for int8 are errors, and C unchanged. */
  int64_t x[1] = {2}, y[1] = {3}, z[1] = {7};
  disp__mat X = {x, 1, 1}, Y = {y, 1, 1}, Z = {z, 1, 1};
  ASSERT_TRUE(disp__gemm(DISP_DTYPE_INT64, 1, 1, 1, disp_scalar_double(NAN), X, Y, disp_scalar_int(1), Z) !=
              DISP_OK);
  ASSERT_CONTAINS(disp_last_error(), "value cannot be converted to type int64_t without overflow");
  ASSERT_TRUE(disp__gemm(DISP_DTYPE_INT64, 1, 1, 1, disp_scalar_int(1), X, Y, disp_scalar_double(-1e300), Z) !=
              DISP_OK);
  ASSERT_EQ_INT(z[0], 7);
  float f[1] = {2}, g[1] = {3}, h[1] = {7};
  disp__mat F = {f, 1, 1}, G = {g, 1, 1}, H = {h, 1, 1};
  ASSERT_TRUE(disp__gemm(DISP_DTYPE_FLOAT32, 1, 1, 1, disp_scalar_double(1e300), F, G, disp_scalar_int(0), H) !=
              DISP_OK);
  ASSERT_CONTAINS(disp_last_error(), "value cannot be converted to type float without overflow");
  int8_t p[1] = {1}, q[1] = {1}, r[1] = {0};
  disp__mat P = {p, 1, 1}, Q = {q, 1, 1}, R = {r, 1, 1};
  ASSERT_TRUE(disp__gemm(DISP_DTYPE_INT8, 1, 1, 1, disp_scalar_int(300), P, Q, disp_scalar_int(0), R) != DISP_OK);
  ASSERT_CONTAINS(disp_last_error(), "value cannot be converted to type int8_t without overflow");
  /* 1.5 truncates to 1 for an integer product, as Scalar::to<int64_t>() */
  ASSERT_OK(disp__gemm(DISP_DTYPE_INT64, 1, 1, 1, disp_scalar_double(1.5), X, Y, disp_scalar_int(0), Z));
  ASSERT_EQ_INT(z[0], 6);
  return 0;
}

TEST(mm_errors_in_pytorch_words) {
  disp_tensor *a = tensor2(2, 3, DISP_DTYPE_FLOAT32), *b = tensor2(2, 2, DISP_DTYPE_FLOAT32), *r = NULL;
  disp_tensor *d = tensor2(3, 2, DISP_DTYPE_FLOAT64), *h = tensor2(2, 2, DISP_DTYPE_FLOAT16);
  ASSERT_TRUE(disp_aten_mm(a, b, &r) != DISP_OK);
  ASSERT_CONTAINS(disp_last_error(), "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x2)");
  ASSERT_TRUE(disp_aten_mm(a, d, &r) != DISP_OK);
  ASSERT_CONTAINS(disp_last_error(), "expected scalar type Float but found Double");
  ASSERT_TRUE(disp_aten_mm(h, h, &r) != DISP_OK);
  ASSERT_CONTAINS(disp_last_error(), "not implemented for 'Half'");
  disp_tensor_release(a), disp_tensor_release(b), disp_tensor_release(d), disp_tensor_release(h);
  return 0;
}

TEST_LIST = {TEST_ENTRY(f64_exact_all_layouts), TEST_ENTRY(alpha_beta_the_type_cannot_hold_are_refused),
             TEST_ENTRY(beta_zero_ignores_nan),
             TEST_ENTRY(expanded_operand_and_k_zero),
             TEST_ENTRY(f32_random_and_large),
             TEST_ENTRY(integer_dtypes_wrap_like_the_type),
             TEST_ENTRY(bfloat16_accumulates_in_float),
             TEST_ENTRY(mm_operator_paths_agree),
             TEST_ENTRY(threads_do_not_change_the_product),
             TEST_ENTRY(small_products_match_the_reference_on_every_capability),
             TEST_ENTRY(small_products_take_the_small_kernel_only),
             TEST_ENTRY(small_products_start_from_a_bias_row),
             TEST_ENTRY(small_products_do_not_depend_on_the_column_group),
             TEST_ENTRY(split_blocks_do_not_depend_on_threads),
             TEST_ENTRY(mm_errors_in_pytorch_words),
             TEST_END};
TEST_MAIN()
