/*
 * cpu/pool.c - max_pool2d's 2x2 windows at stride 2, forward and backward,
 * for the kernel table (cpu/kernels.h), compiled once per capability.
 *
 * Forward: each output looks at its taps in 1.13's order (top-left,
 * top-right, bottom-left, bottom-right), and a later tap replaces the best
 * so far when it is greater or NaN (`val > max || isnan(val)`): ties keep
 * the first tap, the last NaN wins. Every copy makes that choice with the
 * same branch-free compares and selects, so values (NaN payloads included)
 * and indices are the same in every copy and the same as pool.c's general
 * loop.
 *
 * Backward: 2x2 windows at stride 2 do not overlap, so when every index
 * lies in its own window, 1.13's zero-fill then `dx[index] += dy` gives
 * each input element either 0 + dy of its window's output or 0. These
 * write exactly that, every element once; an index outside its window
 * makes them report failure and the caller falls back to the scatter.
 *
 * Widths: 8 outputs a vector in the AVX2 and AVX-512 copies (256-bit in
 * both: the loops are memory-bound, and the AVX-512 copy then runs the code
 * the AVX2 machines test), 4 for rows shorter than that and in the SSE2
 * baseline, 1 below 4 and on other CPUs. A row's last vector may overlap
 * the one before: those outputs are written twice with the same bits.
 */
#include "cpu_kernels_internal.h"

/* ---- one output (short rows; non-x86 builds) ----------------------------- */

static void max_one(const float *x, int64_t dt, float *y, int64_t *ix, int64_t at) {
  const float t[4] = {x[0], x[1], x[dt], x[dt + 1]};
  const int64_t off[4] = {0, 1, dt, dt + 1};
  float m = t[0];
  int best = 0;
  for (int k = 1; k < 4; k++)
    if (t[k] > m || t[k] != t[k]) m = t[k], best = k;
  *y = m;
  *ix = at + off[best];
}

/* The backward of one output: index k, its window's top-left at. Returns
 * whether k is one of the window's taps. */
static int unpool_one(float *dx, int64_t iw, float g, int64_t k, int64_t at) {
  float v = 0.0f + g; /* 1.13's 0 + dy: -0 becomes +0 */
  dx[0] = k == at ? v : 0.0f;
  dx[1] = k == at + 1 ? v : 0.0f;
  dx[iw] = k == at + iw ? v : 0.0f;
  dx[iw + 1] = k == at + iw + 1 ? v : 0.0f;
  return k == at || k == at + 1 || k == at + iw || k == at + iw + 1;
}

#if defined(__SSE2__)
/* ---- four outputs (SSE2; the x86 copies) -------------------------------- */

/* a where m is clear, b where it is set (m all ones or all zeros a lane) */
static inline __m128 sel4(__m128 a, __m128 b, __m128 m) {
#ifdef __SSE4_1__
  return _mm_blendv_ps(a, b, m);
#else
  return _mm_or_ps(_mm_andnot_ps(m, a), _mm_and_ps(m, b));
#endif
}

/* One tap of the forward: where v is greater than m or NaN, m takes v and
 * k takes the tap's index. */
#define MAX4_STEP(v, tap_k)                                                    \
  do {                                                                         \
    __m128 take_ = _mm_or_ps(_mm_cmpgt_ps((v), m), _mm_cmpunord_ps((v), (v))); \
    m = sel4(m, (v), take_);                                                   \
    k = _mm_castps_si128(sel4(_mm_castsi128_ps(k), _mm_castsi128_ps(tap_k), take_)); \
  } while (0)

/* Outputs 0..3 of x (the first one's top-left tap, at its index; its
 * bottom taps dt further). */
static inline void max_four(const float *x, int64_t dt, float *y, int64_t *ix, int32_t at) {
  __m128 a = _mm_loadu_ps(x), b = _mm_loadu_ps(x + 4), c = _mm_loadu_ps(x + dt), d = _mm_loadu_ps(x + dt + 4);
  __m128i base = _mm_add_epi32(_mm_set1_epi32(at), _mm_setr_epi32(0, 2, 4, 6));
  __m128 m = _mm_shuffle_ps(a, b, 0x88); /* the even elements: top-left taps */
  __m128i k = base;
  MAX4_STEP(_mm_shuffle_ps(a, b, 0xDD), _mm_add_epi32(base, _mm_set1_epi32(1)));
  MAX4_STEP(_mm_shuffle_ps(c, d, 0x88), _mm_add_epi32(base, _mm_set1_epi32((int32_t)dt)));
  MAX4_STEP(_mm_shuffle_ps(c, d, 0xDD), _mm_add_epi32(base, _mm_set1_epi32((int32_t)dt + 1)));
  _mm_storeu_ps(y, m);
  /* indices are >= 0: zero-extended to int64 */
  _mm_storeu_si128((__m128i *)ix, _mm_unpacklo_epi32(k, _mm_setzero_si128()));
  _mm_storeu_si128((__m128i *)(ix + 2), _mm_unpackhi_epi32(k, _mm_setzero_si128()));
}

/* The backward of outputs 0..3 (at: the first window's top-left index).
 * Returns a bit an output, set where its index is in its window: the
 * index's high half zero and its low half one of the four taps. */
static inline int unpool_four(float *dx, int64_t iw, const float *dy, const int64_t *ix, int32_t at) {
  __m128 p = _mm_loadu_ps((const float *)ix), q = _mm_loadu_ps((const float *)(ix + 2));
  __m128i lo = _mm_castps_si128(_mm_shuffle_ps(p, q, 0x88)), hi = _mm_castps_si128(_mm_shuffle_ps(p, q, 0xDD));
  __m128i d = _mm_sub_epi32(lo, _mm_add_epi32(_mm_set1_epi32(at), _mm_setr_epi32(0, 2, 4, 6)));
  __m128i m0 = _mm_cmpeq_epi32(d, _mm_setzero_si128()), m1 = _mm_cmpeq_epi32(d, _mm_set1_epi32(1));
  __m128i m2 = _mm_cmpeq_epi32(d, _mm_set1_epi32((int32_t)iw));
  __m128i m3 = _mm_cmpeq_epi32(d, _mm_set1_epi32((int32_t)iw + 1));
  __m128i ok = _mm_and_si128(_mm_cmpeq_epi32(hi, _mm_setzero_si128()),
                             _mm_or_si128(_mm_or_si128(m0, m1), _mm_or_si128(m2, m3)));
  __m128 v = _mm_add_ps(_mm_setzero_ps(), _mm_loadu_ps(dy)); /* 0 + dy, as the scatter adds */
  __m128 t0 = _mm_and_ps(_mm_castsi128_ps(m0), v), t1 = _mm_and_ps(_mm_castsi128_ps(m1), v);
  __m128 t2 = _mm_and_ps(_mm_castsi128_ps(m2), v), t3 = _mm_and_ps(_mm_castsi128_ps(m3), v);
  _mm_storeu_ps(dx, _mm_unpacklo_ps(t0, t1));
  _mm_storeu_ps(dx + 4, _mm_unpackhi_ps(t0, t1));
  _mm_storeu_ps(dx + iw, _mm_unpacklo_ps(t2, t3));
  _mm_storeu_ps(dx + iw + 4, _mm_unpackhi_ps(t2, t3));
  return _mm_movemask_ps(_mm_castsi128_ps(ok));
}
#endif

#if defined(__AVX2__)
/* ---- eight outputs (AVX2; also the AVX-512 copy) ------------------------ */

/* The taps come out of _mm256_shuffle_ps with their outputs in the lane
 * order 0 1 4 5 2 3 6 7 (it shuffles each 128-bit half on its own);
 * swapping the middle 64-bit quarters (0xD8) restores the order. */
#define MAX8_STEP(v, tap_k)                                                                            \
  do {                                                                                                 \
    __m256 take_ = _mm256_or_ps(_mm256_cmp_ps((v), m, _CMP_GT_OQ), _mm256_cmp_ps((v), (v), _CMP_UNORD_Q)); \
    m = _mm256_blendv_ps(m, (v), take_);                                                               \
    k = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(k), _mm256_castsi256_ps(tap_k), take_)); \
  } while (0)

static inline void max_eight(const float *x, int64_t dt, float *y, int64_t *ix, int32_t at) {
  __m256 a = _mm256_loadu_ps(x), b = _mm256_loadu_ps(x + 8);
  __m256 c = _mm256_loadu_ps(x + dt), d = _mm256_loadu_ps(x + dt + 8);
  __m256i base = _mm256_add_epi32(_mm256_set1_epi32(at), _mm256_setr_epi32(0, 2, 8, 10, 4, 6, 12, 14));
  __m256 m = _mm256_shuffle_ps(a, b, 0x88);
  __m256i k = base;
  MAX8_STEP(_mm256_shuffle_ps(a, b, 0xDD), _mm256_add_epi32(base, _mm256_set1_epi32(1)));
  MAX8_STEP(_mm256_shuffle_ps(c, d, 0x88), _mm256_add_epi32(base, _mm256_set1_epi32((int32_t)dt)));
  MAX8_STEP(_mm256_shuffle_ps(c, d, 0xDD), _mm256_add_epi32(base, _mm256_set1_epi32((int32_t)dt + 1)));
  _mm256_storeu_ps(y, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(m), 0xD8)));
  k = _mm256_permute4x64_epi64(k, 0xD8);
  _mm256_storeu_si256((__m256i *)ix, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(k)));
  _mm256_storeu_si256((__m256i *)(ix + 4), _mm256_cvtepi32_epi64(_mm256_extracti128_si256(k, 1)));
}

/* unpool_four's eight-output twin. The low halves of the indices come out
 * in the shuffled order above, so dy is put in that order too, and then
 * unpacking each 128-bit half interleaves the taps of outputs 0..3 and
 * 4..7 back into the order of the row. */
static inline int unpool_eight(float *dx, int64_t iw, const float *dy, const int64_t *ix, int32_t at) {
  __m256 p = _mm256_loadu_ps((const float *)ix), q = _mm256_loadu_ps((const float *)(ix + 4));
  __m256i lo = _mm256_castps_si256(_mm256_shuffle_ps(p, q, 0x88));
  __m256i hi = _mm256_castps_si256(_mm256_shuffle_ps(p, q, 0xDD));
  __m256i base = _mm256_add_epi32(_mm256_set1_epi32(at), _mm256_setr_epi32(0, 2, 8, 10, 4, 6, 12, 14));
  __m256i d = _mm256_sub_epi32(lo, base);
  __m256i m0 = _mm256_cmpeq_epi32(d, _mm256_setzero_si256()), m1 = _mm256_cmpeq_epi32(d, _mm256_set1_epi32(1));
  __m256i m2 = _mm256_cmpeq_epi32(d, _mm256_set1_epi32((int32_t)iw));
  __m256i m3 = _mm256_cmpeq_epi32(d, _mm256_set1_epi32((int32_t)iw + 1));
  __m256i ok = _mm256_and_si256(_mm256_cmpeq_epi32(hi, _mm256_setzero_si256()),
                                _mm256_or_si256(_mm256_or_si256(m0, m1), _mm256_or_si256(m2, m3)));
  __m256 g = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_loadu_ps(dy)), 0xD8));
  __m256 v = _mm256_add_ps(_mm256_setzero_ps(), g);
  __m256 t0 = _mm256_and_ps(_mm256_castsi256_ps(m0), v), t1 = _mm256_and_ps(_mm256_castsi256_ps(m1), v);
  __m256 t2 = _mm256_and_ps(_mm256_castsi256_ps(m2), v), t3 = _mm256_and_ps(_mm256_castsi256_ps(m3), v);
  _mm256_storeu_ps(dx, _mm256_unpacklo_ps(t0, t1));
  _mm256_storeu_ps(dx + 8, _mm256_unpackhi_ps(t0, t1));
  _mm256_storeu_ps(dx + iw, _mm256_unpacklo_ps(t2, t3));
  _mm256_storeu_ps(dx + iw + 8, _mm256_unpackhi_ps(t2, t3));
  /* the bits come in the shuffled order; only whether all are set is used */
  return _mm256_movemask_ps(_mm256_castsi256_ps(ok));
}
#endif

/* ---- rows ---------------------------------------------------------------- */

/* Runs GROUP(j) for groups of w outputs starting at j = 0, w, ..., the last
 * at n - w (overlapping the one before); n >= w. */
#define OVERLAPPING_GROUPS(n, w, GROUP)      \
  for (int64_t j_ = 0;; j_ += (w)) {         \
    if (j_ + (w) > (n)) j_ = (n) - (w);      \
    GROUP(j_);                               \
    if (j_ + (w) == (n)) break;              \
  }

/* Runs over outputs 0..n-1 of a row G8(j), G4(j) or G1(j) for the groups
 * of 8, 4 or 1 outputs from j: the widest this copy has that fits. */
#if defined(__AVX2__)
#define FOR_GROUPS(n, G8, G4, G1)                                \
  if ((n) >= 8) {                                                \
    OVERLAPPING_GROUPS(n, 8, G8)                                 \
  } else if ((n) >= 4) {                                         \
    OVERLAPPING_GROUPS(n, 4, G4)                                 \
  } else {                                                       \
    for (int64_t j_ = 0; j_ < (n); j_++) G1(j_);                 \
  }
#elif defined(__SSE2__)
#define FOR_GROUPS(n, G8, G4, G1)                                \
  if ((n) >= 4) {                                                \
    OVERLAPPING_GROUPS(n, 4, G4)                                 \
  } else {                                                       \
    for (int64_t j_ = 0; j_ < (n); j_++) G1(j_);                 \
  }
#else
#define FOR_GROUPS(n, G8, G4, G1) for (int64_t j_ = 0; j_ < (n); j_++) G1(j_);
#endif

/* Outputs 0..n-1 of one row; x at the first window's top-left tap, at its
 * index, the bottom taps dt further. */
static void max_row(const float *x, int64_t dt, float *y, int64_t *ix, int64_t n, int32_t at) {
#define G8(j) max_eight(x + 2 * (j), dt, y + (j), ix + (j), at + 2 * (int32_t)(j))
#define G4(j) max_four(x + 2 * (j), dt, y + (j), ix + (j), at + 2 * (int32_t)(j))
#define G1(j) max_one(x + 2 * (j), dt, y + (j), ix + (j), at + 2 * (j))
  FOR_GROUPS(n, G8, G4, G1)
#undef G8
#undef G4
#undef G1
}

/* The backward of one row's n outputs; returns whether every index was in
 * its window. */
static int unpool_row(float *dx, int64_t iw, const float *dy, const int64_t *ix, int64_t n, int32_t at) {
  int ok = 1;
#define G8(j) ok &= unpool_eight(dx + 2 * (j), iw, dy + (j), ix + (j), at + 2 * (int32_t)(j)) == 0xFF
#define G4(j) ok &= unpool_four(dx + 2 * (j), iw, dy + (j), ix + (j), at + 2 * (int32_t)(j)) == 0xF
#define G1(j) ok &= unpool_one(dx + 2 * (j), iw, dy[j], ix[j], at + 2 * (j))
  FOR_GROUPS(n, G8, G4, G1)
#undef G8
#undef G4
#undef G1
  return ok;
}

/* ---- the table's kernels ------------------------------------------------- */

/* Rows of 4 to 7 outputs, every one but the last, take one group of 8 in
 * the AVX2 copy where the others take two of 4: the extra lanes read the
 * next row's first taps (inside the input when the next row reads past
 * them: row_step + 2 * cols >= 16, always so for a pooling's rows) and
 * write its first outputs (when rows are contiguous, cols == ow), which the
 * next row then overwrites. */
void DISP_CPU_FN(max_pool2x2_f32)(const float *x, int64_t row_step, int64_t tap_step, int64_t first, int64_t rows,
                                  int64_t cols, float *y, int64_t *ix, int64_t ow) {
  if (cols <= 0) return;
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * row_step;
    int32_t at = (int32_t)(first + r * row_step);
#if defined(__AVX2__)
    if (cols >= 4 && cols < 8 && cols == ow && r + 1 < rows && row_step + 2 * cols >= 16) {
      max_eight(xr, tap_step, y + r * ow, ix + r * ow, at);
      continue;
    }
#endif
    max_row(xr, tap_step, y + r * ow, ix + r * ow, cols, at);
  }
}

#if defined(__AVX2__)
/* unpool_eight's bits for outputs 0..n-1 (its lanes hold outputs 0 1 4 5 2 3 6 7). */
static int first_lanes(int64_t n) {
  static const int out_of_lane[8] = {0, 1, 4, 5, 2, 3, 6, 7};
  int bits = 0;
  for (int i = 0; i < 8; i++) bits |= (out_of_lane[i] < n) << i;
  return bits;
}
#endif

/* As the forward, rows of 4 to 7 outputs but the last take one group of 8:
 * the extra lanes read the next row's grads and indices (not checked) and
 * write past column 2 * ow of the row's two input rows (zeroed after) or
 * into the input rows below, which the row's bottom stores or the next
 * output row then rewrite. */
int DISP_CPU_FN(max_pool2x2_backward_f32)(float *dx, int64_t ih, int64_t iw, const float *dy, const int64_t *ix,
                                          int64_t oh, int64_t ow) {
#if defined(__AVX2__)
  const int spill = ow >= 4 && ow < 8, want = first_lanes(ow);
#endif
  for (int64_t r = 0; r < oh; r++) {
    float *row = dx + 2 * r * iw;
    int32_t at = (int32_t)(2 * r * iw);
    int ok;
#if defined(__AVX2__)
    if (spill && r + 1 < oh)
      ok = (unpool_eight(row, iw, dy + r * ow, ix + r * ow, at) & want) == want;
    else
#endif
      ok = unpool_row(row, iw, dy + r * ow, ix + r * ow, ow, at);
    if (!ok) return 0;
    for (int64_t c = 2 * ow; c < iw; c++) row[c] = row[iw + c] = 0.0f; /* an odd width's last column */
  }
  for (int64_t i = 2 * oh * iw; i < ih * iw; i++) dx[i] = 0.0f; /* an odd height's last row */
  return 1;
}
