/*
 * cpu/select.c - where(condition, a, b) on float32 for the kernel table
 * (cpu/kernels.h), compiled once per capability.
 *
 * A select moves bits: every copy gives the generic loop's. The condition
 * is one byte per element (bool, or uint8 where nonzero is true); a and b
 * are contiguous or one broadcast value (masked_fill's fill, its backward's
 * zero). The AVX-512 copy runs the 256-bit loop: it is memory-bound.
 */
#include "cpu_kernels_internal.h"

void DISP_CPU_FN(select_f32)(float *o, const uint8_t *c, const float *a, int64_t sa, const float *b, int64_t sb,
                             int64_t n) {
  int64_t i = 0;
#if defined(__AVX2__)
  const __m256i zero = _mm256_setzero_si256();
  for (; i + 8 <= n; i += 8) {
    __m256i flags = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(c + i)));
    __m256 take_a = _mm256_castsi256_ps(_mm256_cmpgt_epi32(flags, zero));
    __m256 va = sa ? _mm256_loadu_ps(a + i) : _mm256_set1_ps(*a), vb = sb ? _mm256_loadu_ps(b + i) : _mm256_set1_ps(*b);
    _mm256_storeu_ps(o + i, _mm256_blendv_ps(vb, va, take_a));
  }
#endif
  for (; i < n; i++) o[i] = c[i] ? a[i * sa] : b[i * sb];
}
