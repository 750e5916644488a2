/*
 * cpu/conv_small.c - the two products of a convolution whose input channels
 * x taps (k below) are few, such as a CNN's first layer (one channel, 3x3:
 * k = 9), on conv_prim.h's im2col columns (cols, k rows of n positions):
 *
 *   forward      y[i][p]   = start[i] + sum_t w[i][t] * cols[t][p]  (i < m, p < n)
 *   weight grad  dw[i][t] += sum_p dy[i][p] * cols[t][p]   (i < m, t < k)
 *
 * OpenBLAS's kernels and packing are built for long k; here the forward's
 * k is 9 and the weight gradient's output 9 columns wide (OpenBLAS 0.3.21,
 * Zen, m 32, n 784, k 9, in cache: forward 7.3 us there, 6.4 here; weight
 * gradient 15 us there, 8 here). All arrays are contiguous row-major
 * (cols' and dy's rows n long).
 *
 * Forward: each y[i][p] is sum_t in tap order, one fused multiply-add per
 * tap from 0, then added to start[i] (as a BLAS kernel accumulates a
 * product and adds it to C set to the bias: the same bits, without the
 * pass that sets C). Weight grad: each dw[i][t] is one 8-lane accumulator over
 * p (lane l sums the p = l mod 8 in order, fused), its lanes added as
 * ((0+4)+(2+6))+((1+5)+(3+7)), then added to dw. Both depend on the shapes
 * only: not on where a row sits in a block, nor the thread count.
 *
 * Only the AVX2 and AVX-512 copies have them (the baseline has no FMA);
 * their table entries are NULL elsewhere and conv_prim.h keeps BLAS.
 */
#include "cpu_kernels_internal.h"

#if defined(__AVX2__)

/* The first r lanes set (0 <= r <= 8). */
static inline __m256i first_lanes(int64_t r) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Four rows of the forward: their weights, starting values and outputs
 * (a row repeated when fewer are left: it computes and stores the same
 * values twice). */
typedef struct fwd_rows {
  const float *w[4];
  __m256 v[4];
  float *y[4];
} fwd_rows;

/* Loads and stores of the three vectors of a block: whole, or the lanes
 * of masks mk (the last block: masked lanes read as 0, are not stored). */
#define LOAD3(masked, p, j) ((masked) ? _mm256_maskload_ps((p) + 8 * (j), mk[j]) : _mm256_loadu_ps((p) + 8 * (j)))
#define STORE3(masked, p, v, a0, a1, a2)                                                               \
  do {                                                                                                 \
    if (masked) {                                                                                      \
      _mm256_maskstore_ps((p), mk[0], _mm256_add_ps((v), (a0)));                                       \
      _mm256_maskstore_ps((p) + 8, mk[1], _mm256_add_ps((v), (a1)));                                   \
      _mm256_maskstore_ps((p) + 16, mk[2], _mm256_add_ps((v), (a2)));                                  \
    } else {                                                                                           \
      _mm256_storeu_ps((p), _mm256_add_ps((v), (a0)));                                                 \
      _mm256_storeu_ps((p) + 8, _mm256_add_ps((v), (a1)));                                             \
      _mm256_storeu_ps((p) + 16, _mm256_add_ps((v), (a2)));                                            \
    }                                                                                                  \
  } while (0)

/* The four rows over positions [p, p + 24): three vectors each, twelve
 * independent chains of fused multiply-adds sharing each load of cols
 * (written out: GCC keeps an array of accumulators in memory). Always
 * inlined, so that masked is a constant. */
static inline __attribute__((always_inline)) void fwd_block24(const fwd_rows *r, int64_t k, const float *cols,
                                                               int64_t n, int64_t p, int masked,
                                                               const __m256i *mk) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, b0 = a0, b1 = a0, b2 = a0;
  __m256 c0 = a0, c1 = a0, c2 = a0, d0 = a0, d1 = a0, d2 = a0;
  const float *w0 = r->w[0], *w1 = r->w[1], *w2 = r->w[2], *w3 = r->w[3];
  for (int64_t t = 0; t < k; t++) {
    const float *c = cols + t * n + p;
    const __m256 x0 = LOAD3(masked, c, 0), x1 = LOAD3(masked, c, 1), x2 = LOAD3(masked, c, 2);
    __m256 u = _mm256_set1_ps(w0[t]);
    a0 = _mm256_fmadd_ps(u, x0, a0), a1 = _mm256_fmadd_ps(u, x1, a1), a2 = _mm256_fmadd_ps(u, x2, a2);
    u = _mm256_set1_ps(w1[t]);
    b0 = _mm256_fmadd_ps(u, x0, b0), b1 = _mm256_fmadd_ps(u, x1, b1), b2 = _mm256_fmadd_ps(u, x2, b2);
    u = _mm256_set1_ps(w2[t]);
    c0 = _mm256_fmadd_ps(u, x0, c0), c1 = _mm256_fmadd_ps(u, x1, c1), c2 = _mm256_fmadd_ps(u, x2, c2);
    u = _mm256_set1_ps(w3[t]);
    d0 = _mm256_fmadd_ps(u, x0, d0), d1 = _mm256_fmadd_ps(u, x1, d1), d2 = _mm256_fmadd_ps(u, x2, d2);
  }
  STORE3(masked, r->y[0] + p, r->v[0], a0, a1, a2);
  STORE3(masked, r->y[1] + p, r->v[1], b0, b1, b2);
  STORE3(masked, r->y[2] + p, r->v[2], c0, c1, c2);
  STORE3(masked, r->y[3] + p, r->v[3], d0, d1, d2);
}

void DISP_CPU_FN(conv_small_forward_f32)(int64_t m, int64_t n, int64_t k, const float *w, const float *cols,
                                         const float *start, float *y) {
  for (int64_t i = 0; i < m; i += 4) {
    fwd_rows r;
    for (int j = 0; j < 4; j++) {
      int64_t row = i + j < m ? i + j : m - 1;
      r.w[j] = w + row * k, r.v[j] = _mm256_set1_ps(start[row]), r.y[j] = y + row * n;
    }
    int64_t p = 0;
    for (; p + 24 <= n; p += 24) fwd_block24(&r, k, cols, n, p, 0, NULL);
    if (p < n) {
      const int64_t q = n - p; /* 1..23 */
      const __m256i mk[3] = {first_lanes(q < 8 ? q : 8), first_lanes(q < 8 ? 0 : q < 16 ? q - 8 : 8),
                             first_lanes(q < 16 ? 0 : q - 16)};
      fwd_block24(&r, k, cols, n, p, 1, mk);
    }
  }
}

/* The sum of v's lanes, ((0+4)+(2+6))+((1+5)+(3+7)). */
static inline float lane_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}

/* s_rq += d_r * c_q over positions [p, p + 8) through LOAD (rows r = 0, 1
 * of dy, taps q = 0..2 of cols), written out: GCC keeps an array of
 * accumulators in memory. */
#define WGRAD_STEP(LOAD, p)                                                                         \
  do {                                                                                              \
    const __m256 d0 = LOAD(dy0 + (p)), d1 = LOAD(dy1 + (p));                                        \
    const __m256 c0 = LOAD(t0 + (p)), c1 = LOAD(t1 + (p)), c2 = LOAD(t2 + (p));                     \
    s00 = _mm256_fmadd_ps(d0, c0, s00), s01 = _mm256_fmadd_ps(d0, c1, s01), s02 = _mm256_fmadd_ps(d0, c2, s02); \
    s10 = _mm256_fmadd_ps(d1, c0, s10), s11 = _mm256_fmadd_ps(d1, c1, s11), s12 = _mm256_fmadd_ps(d1, c2, s12); \
  } while (0)

/* dw[i][t..t+3) and dw[i+1][t..t+3) (rows and taps past m, k repeat the
 * last real one: computed, not stored). */
static void wgrad_block(int64_t m, int64_t n, int64_t k, const float *dy, const float *cols, int64_t i, int64_t t,
                        float *dw) {
  const int64_t rows = m - i < 2 ? m - i : 2, taps = k - t < 3 ? k - t : 3;
  const float *dy0 = dy + i * n, *dy1 = dy0 + (rows - 1) * n;
  const float *t0 = cols + t * n, *t1 = t0 + (taps > 1) * n, *t2 = t0 + (taps - 1) * n;
  __m256 s00 = _mm256_setzero_ps(), s01 = s00, s02 = s00, s10 = s00, s11 = s00, s12 = s00;
  int64_t p = 0;
  for (; p + 8 <= n; p += 8) WGRAD_STEP(_mm256_loadu_ps, p);
  if (p < n) {
    const __m256i mask = first_lanes(n - p);
#define MASKED(ptr) _mm256_maskload_ps((ptr), mask)
    WGRAD_STEP(MASKED, p); /* masked lanes load as 0 and add 0 * 0 */
#undef MASKED
  }
  const __m256 s[2][3] = {{s00, s01, s02}, {s10, s11, s12}};
  for (int64_t r = 0; r < rows; r++)
    for (int64_t q = 0; q < taps; q++) dw[(i + r) * k + t + q] += lane_sum(s[r][q]);
}

void DISP_CPU_FN(conv_small_weight_grad_f32)(int64_t m, int64_t n, int64_t k, const float *dy, const float *cols,
                                             float *dw) {
  /* two rows of dy by three taps: six chains, five loads per six
   * multiply-adds */
  for (int64_t i = 0; i < m; i += 2)
    for (int64_t t = 0; t < k; t += 3) wgrad_block(m, n, k, dy, cols, i, t, dw);
}

#endif
