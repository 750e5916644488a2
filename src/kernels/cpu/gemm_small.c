/*
 * cpu/gemm_small.c - float32 products too small for BLAS to do well, in the
 * layout linear gives them (Note [Small products] in gemm.c):
 *
 *   C = alpha * A @ B + beta * C   A m x k with rows contiguous, B k x n
 *                                  with columns contiguous (B^T's rows, a
 *                                  weight's rows), C row-major
 *
 * Each element of C is then a dot product of two contiguous rows. Eight of
 * them (one row of A, eight columns of B; four where at most four columns
 * are left) are computed at once, the k loop
 * in vectors of 8 with fused multiply-adds and a masked tail, and the eight
 * accumulators reduced to one vector of eight sums by a tree of horizontal
 * adds: lane l of an accumulator sums the products p = l mod 8 in order,
 * then the lanes pair as ((0+1)+(2+3))+((4+5)+(6+7)). The result depends on
 * k only: not on m, n, where a row sits in a group, or the thread count.
 * C gets beta * S + alpha * dot as BLAS computes it (S not read when beta is
 * 0), where S is C itself (s == c, lds == ldc: BLAS's in-place form) or
 * another matrix with contiguous rows: addmm's bias, one row for every row
 * of C (lds 0), so C need not be filled with it first.
 *
 * Only the AVX2 and AVX-512 copies have it (the baseline has no FMA nor
 * horizontal add); their table entry is NULL elsewhere and gemm.c keeps BLAS.
 */
#include "cpu_kernels_internal.h"

#if defined(__AVX2__)

/* The first n lanes set (0 <= n <= 8). */
static inline __m256i lanes(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Lane q of the result is the sum of the lanes of s_q. */
static inline __m256 reduce8(__m256 s0, __m256 s1, __m256 s2, __m256 s3, __m256 s4, __m256 s5, __m256 s6,
                             __m256 s7) {
  __m256 h0123 = _mm256_hadd_ps(_mm256_hadd_ps(s0, s1), _mm256_hadd_ps(s2, s3));
  __m256 h4567 = _mm256_hadd_ps(_mm256_hadd_ps(s4, s5), _mm256_hadd_ps(s6, s7));
  /* each 128-bit half of h holds 4-lane partial sums: low lanes of every
   * accumulator in the low halves, high lanes in the high halves */
  return _mm256_add_ps(_mm256_permute2f128_ps(h0123, h4567, 0x20), _mm256_permute2f128_ps(h0123, h4567, 0x31));
}

/* reduce8 for four accumulators: the same pairs in the same order. */
static inline __m128 reduce4(__m256 s0, __m256 s1, __m256 s2, __m256 s3) {
  __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(s0, s1), _mm256_hadd_ps(s2, s3));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* s_q += x[p..p+8) * b_q[p..p+8), q = 0..3 (and 4..7 in DOT8_STEP),
 * through LOAD (written out: GCC keeps an array of accumulators in memory). */
#define DOT4_STEP(LOAD, p)                                                                      \
  do {                                                                                          \
    xv = LOAD(x + (p));                                                                         \
    s0 = _mm256_fmadd_ps(xv, LOAD(b0 + (p)), s0), s1 = _mm256_fmadd_ps(xv, LOAD(b1 + (p)), s1); \
    s2 = _mm256_fmadd_ps(xv, LOAD(b2 + (p)), s2), s3 = _mm256_fmadd_ps(xv, LOAD(b3 + (p)), s3); \
  } while (0)
#define DOT8_STEP(LOAD, p)                                                                      \
  do {                                                                                          \
    DOT4_STEP(LOAD, p);                                                                         \
    s4 = _mm256_fmadd_ps(xv, LOAD(b4 + (p)), s4), s5 = _mm256_fmadd_ps(xv, LOAD(b5 + (p)), s5); \
    s6 = _mm256_fmadd_ps(xv, LOAD(b6 + (p)), s6), s7 = _mm256_fmadd_ps(xv, LOAD(b7 + (p)), s7); \
  } while (0)
#define MASKED(ptr) _mm256_maskload_ps((ptr), kmask) /* masked lanes load as 0 and add 0 * 0 */

/* The g <= 4 columns of C from column j on, every row: four accumulators
 * (half the work of eight for a classifier's few outputs). */
static void cols4(int64_t m, int64_t g, int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                  int64_t ldb, float beta, const float *s, int64_t lds, float *c, int64_t ldc, int64_t j) {
  const __m256i kmask = lanes(k % 8);
  const __m128i omask = _mm256_castsi256_si128(lanes(g));
  /* columns past the g-th repeat column j: their sums are never stored */
  const float *b0 = b + j * ldb, *b1 = g > 1 ? b0 + ldb : b0, *b2 = g > 2 ? b0 + 2 * ldb : b0;
  const float *b3 = g > 3 ? b0 + 3 * ldb : b0;
  for (int64_t i = 0; i < m; i++) {
    const float *x = a + i * lda;
    __m256 xv, s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t p = 0;
    for (; p + 8 <= k; p += 8) DOT4_STEP(_mm256_loadu_ps, p);
    if (p < k) DOT4_STEP(MASKED, p);
    __m128 r = _mm_mul_ps(_mm_set1_ps(alpha), reduce4(s0, s1, s2, s3));
    if (beta != 0.0f) {
      __m128 cv = _mm_maskload_ps(s + i * lds + j, omask);
      r = _mm_add_ps(beta == 1.0f ? cv : _mm_mul_ps(_mm_set1_ps(beta), cv), r);
    }
    _mm_maskstore_ps(c + i * ldc + j, omask, r);
  }
}

void DISP_CPU_FN(gemm_nt_f32)(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                              const float *b, int64_t ldb, float beta, const float *s, int64_t lds, float *c,
                              int64_t ldc) {
  const __m256i kmask = lanes(k % 8);
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  for (int64_t j = 0; j < n; j += 8) { /* eight columns of B stay in L1 across the rows of A */
    const int64_t g = n - j < 8 ? n - j : 8;
    if (g <= 4) {
      cols4(m, g, k, alpha, a, lda, b, ldb, beta, s, lds, c, ldc, j);
      continue;
    }
    const __m256i omask = lanes(g);
    /* columns past the g-th repeat column j: their sums are never stored */
    const float *b0 = b + j * ldb, *b1 = b0 + ldb, *b2 = b0 + 2 * ldb, *b3 = b0 + 3 * ldb;
    const float *b4 = b0 + 4 * ldb, *b5 = g > 5 ? b0 + 5 * ldb : b0;
    const float *b6 = g > 6 ? b0 + 6 * ldb : b0, *b7 = g > 7 ? b0 + 7 * ldb : b0;
    for (int64_t i = 0; i < m; i++) {
      const float *x = a + i * lda;
      __m256 xv, s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
      int64_t p = 0;
      for (; p + 8 <= k; p += 8) DOT8_STEP(_mm256_loadu_ps, p);
      if (p < k) DOT8_STEP(MASKED, p);
      __m256 r = _mm256_mul_ps(va, reduce8(s0, s1, s2, s3, s4, s5, s6, s7));
      float *cr = c + i * ldc + j;
      if (beta != 0.0f) {
        const float *sr = s + i * lds + j;
        __m256 cv = g == 8 ? _mm256_loadu_ps(sr) : _mm256_maskload_ps(sr, omask);
        r = _mm256_add_ps(beta == 1.0f ? cv : _mm256_mul_ps(vb, cv), r);
      }
      if (g == 8)
        _mm256_storeu_ps(cr, r);
      else
        _mm256_maskstore_ps(cr, omask, r);
    }
  }
}
#undef MASKED

#endif
