/*
 * cpu/vec.h - a float vector of the width the including file is compiled
 * for (PyTorch's Vectorized<float>, in C macros): AVX-512 (16 lanes), AVX2
 * (8), SSE2 (4, the x86-64 baseline) or plain float (1) elsewhere.
 *
 * Only the per-ISA sources in src/kernels/cpu/ include it; the ISA comes
 * from the compiler flags of that copy (__AVX512F__, __AVX2__, __SSE2__).
 * exp, log and tanh are SLEEF's 1-ulp vector functions (u10) in the AVX2
 * and AVX-512 copies, as 1.13's Vectorized<float>; the baseline copy calls
 * libm lane by lane as 1.13's DEFAULT build (std::exp) does, and so do the
 * vector copies when the build has no SLEEF.
 */
#ifndef DISP_CPU_VEC_H
#define DISP_CPU_VEC_H

#include <math.h>
#include <stdint.h>

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__SSE2__)
#include <immintrin.h>
#endif
#if defined(DISP_HAVE_SLEEF) && (defined(__AVX512F__) || defined(__AVX2__))
#include <sleef.h>
#endif

/* The suffix of this copy's symbols: disp__cpu_<name><suffix>. */
#define DISP_CPU_CAT2(a, b) a##b
#define DISP_CPU_CAT(a, b) DISP_CPU_CAT2(a, b)
#define DISP_CPU_FN(name) DISP_CPU_CAT(disp__cpu_##name, DISP_CPU_SUFFIX)

#if defined(__AVX512F__)
typedef __m512 V;
#define W 16
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps((p), (v))
#define VSET1(x) _mm512_set1_ps(x)
#define VADD(a, b) _mm512_add_ps((a), (b))
#define VSUB(a, b) _mm512_sub_ps((a), (b))
#define VMUL(a, b) _mm512_mul_ps((a), (b))
#define VDIV(a, b) _mm512_div_ps((a), (b))
#define VMAX(a, b) _mm512_max_ps((a), (b))
#define VFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c)) /* a * b + c, one rounding */
#define VAND(a, b) _mm512_and_ps((a), (b))
#define VXOR(a, b) _mm512_xor_ps((a), (b))
/* lanes where a or b is NaN get a + b (a NaN), the others max(a, b) */
#define VMAXN(a, b) _mm512_mask_add_ps(_mm512_max_ps((a), (b)), _mm512_cmp_ps_mask((a), (b), _CMP_UNORD_Q), (a), (b))
#ifdef DISP_HAVE_SLEEF
#define VEXP(x) Sleef_expf16_u10avx512f(x)
#define VLOG(x) Sleef_logf16_u10avx512f(x)
#define VTANH(x) Sleef_tanhf16_u10avx512f(x)
#endif
#elif defined(__AVX2__)
typedef __m256 V;
#define W 8
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps((p), (v))
#define VSET1(x) _mm256_set1_ps(x)
#define VADD(a, b) _mm256_add_ps((a), (b))
#define VSUB(a, b) _mm256_sub_ps((a), (b))
#define VMUL(a, b) _mm256_mul_ps((a), (b))
#define VDIV(a, b) _mm256_div_ps((a), (b))
#define VMAX(a, b) _mm256_max_ps((a), (b))
#define VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define VAND(a, b) _mm256_and_ps((a), (b))
#define VXOR(a, b) _mm256_xor_ps((a), (b))
#define VMAXN(a, b) \
  _mm256_blendv_ps(_mm256_max_ps((a), (b)), _mm256_add_ps((a), (b)), _mm256_cmp_ps((a), (b), _CMP_UNORD_Q))
#ifdef DISP_HAVE_SLEEF
#define VEXP(x) Sleef_expf8_u10avx2(x)
#define VLOG(x) Sleef_logf8_u10avx2(x)
#define VTANH(x) Sleef_tanhf8_u10avx2(x)
#endif
#elif defined(__SSE2__)
typedef __m128 V;
#define W 4
#define VLOAD(p) _mm_loadu_ps(p)
#define VSTORE(p, v) _mm_storeu_ps((p), (v))
#define VSET1(x) _mm_set1_ps(x)
#define VADD(a, b) _mm_add_ps((a), (b))
#define VSUB(a, b) _mm_sub_ps((a), (b))
#define VMUL(a, b) _mm_mul_ps((a), (b))
#define VDIV(a, b) _mm_div_ps((a), (b))
#define VMAX(a, b) _mm_max_ps((a), (b))
static inline V disp__vmaxn(V a, V b) {
  V m = _mm_cmpunord_ps(a, b);
  return _mm_or_ps(_mm_andnot_ps(m, _mm_max_ps(a, b)), _mm_and_ps(m, _mm_add_ps(a, b)));
}
#define VMAXN(a, b) disp__vmaxn((a), (b))
#else
typedef float V;
#define W 1
#define VLOAD(p) (*(p))
#define VSTORE(p, v) (*(p) = (v))
#define VSET1(x) (x)
#define VADD(a, b) ((a) + (b))
#define VSUB(a, b) ((a) - (b))
#define VMUL(a, b) ((a) * (b))
#define VDIV(a, b) ((a) / (b))
#define VMAX(a, b) ((a) > (b) ? (a) : (b))
#define VMAXN(a, b) (isnan(a) || isnan(b) ? (a) + (b) : VMAX(a, b))
#endif

/* x86's max: a > b ? a : b, so b when either is NaN or both are zeros.
 * Scalar twin of VMAX for the tails. */
static inline float disp__smax(float a, float b) { return a > b ? a : b; }
static inline float disp__smaxn(float a, float b) { return isnan(a) || isnan(b) ? a + b : disp__smax(a, b); }

/* libm lane by lane: the baseline's (and a SLEEF-less build's) functions */
#ifndef VEXP
#define DISP__LANEWISE(fn, x)                  \
  do {                                         \
    float t_[W];                               \
    VSTORE(t_, x);                             \
    for (int l_ = 0; l_ < W; l_++) t_[l_] = fn(t_[l_]); \
    return VLOAD(t_);                          \
  } while (0)
static inline V disp__vexp(V x) { DISP__LANEWISE(expf, x); }
static inline V disp__vlog(V x) { DISP__LANEWISE(logf, x); }
static inline V disp__vtanh(V x) { DISP__LANEWISE(tanhf, x); }
#define VEXP(x) disp__vexp(x)
#define VLOG(x) disp__vlog(x)
#define VTANH(x) disp__vtanh(x)
#endif

/* Horizontal sum and NaN-propagating max of the lanes, as a tree (lane i
 * with lane i + W/2, ...), the order of 1.13's vec_reduce_all. On x86 the
 * tree halves the vector with shuffles, the lower half always the first
 * operand: each step is the scalar t[i] = t[i] op t[i + w], bit for bit. */
#if W >= 4
static inline __m128 disp__maxn4(__m128 a, __m128 b) {
  __m128 m = _mm_cmpunord_ps(a, b);
  return _mm_or_ps(_mm_andnot_ps(m, _mm_max_ps(a, b)), _mm_and_ps(m, _mm_add_ps(a, b)));
}
static inline __m128 disp__add4(__m128 a, __m128 b) { return _mm_add_ps(a, b); }
#if defined(__AVX512F__)
static inline __m256 disp__maxn8(__m256 a, __m256 b) {
  return _mm256_blendv_ps(_mm256_max_ps(a, b), _mm256_add_ps(a, b), _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
}
#define DISP__TO4(v, op8, op4)                                                                              \
  __m256 h8_ = op8(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));                                 \
  __m128 x_ = op4(_mm256_castps256_ps128(h8_), _mm256_extractf128_ps(h8_, 1))
#elif defined(__AVX2__)
#define DISP__TO4(v, op8, op4) __m128 x_ = op4(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1))
#else
#define DISP__TO4(v, op8, op4) __m128 x_ = (v)
#endif
/* The whole tree with op4 (and op8 for AVX-512's first step). */
#define DISP__TREE(v, op8, op4)                   \
  DISP__TO4(v, op8, op4);                         \
  x_ = op4(x_, _mm_movehl_ps(x_, x_));            \
  x_ = op4(x_, _mm_shuffle_ps(x_, x_, 1));        \
  return _mm_cvtss_f32(x_)
static inline float disp__hsum(V v) { DISP__TREE(v, _mm256_add_ps, disp__add4); }
static inline float disp__hmaxn(V v) { DISP__TREE(v, disp__maxn8, disp__maxn4); }
#else
static inline float disp__hsum(V v) { return v; }
static inline float disp__hmaxn(V v) { return v; }
#endif

/* Loads the n < W floats at p into a vector whose other lanes are `fill`
 * (1.13's Vectorized::loadu(ptr, count), for tails computed as vectors),
 * and stores the first n lanes: masked loads and stores where the ISA has
 * them (never touching the lanes past n), lane by lane otherwise. */
#if defined(__AVX512F__)
static inline V disp__vload_part(const float *p, int64_t n, float fill) {
  return _mm512_mask_loadu_ps(VSET1(fill), (__mmask16)((1u << n) - 1), p);
}
static inline void disp__vstore_part(float *p, V v, int64_t n) {
  _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1), v);
}
#elif defined(__AVX2__)
static inline __m256i disp__vmask_part(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline V disp__vload_part(const float *p, int64_t n, float fill) {
  __m256i m = disp__vmask_part(n);
  return _mm256_blendv_ps(VSET1(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}
static inline void disp__vstore_part(float *p, V v, int64_t n) { _mm256_maskstore_ps(p, disp__vmask_part(n), v); }
#else
static inline V disp__vload_part(const float *p, int64_t n, float fill) {
  float t[W];
  for (int64_t i = 0; i < W; i++) t[i] = i < n ? p[i] : fill;
  return VLOAD(t);
}
static inline void disp__vstore_part(float *p, V v, int64_t n) {
  float t[W];
  VSTORE(t, v);
  for (int64_t i = 0; i < n; i++) p[i] = t[i];
}
#endif

#endif
