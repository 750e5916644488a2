/*
 * cpu/threshold.c - threshold_backward (relu's backward) for the kernel
 * table (cpu/kernels.h), compiled once per capability.
 *
 * o[i] = self[i] <= threshold ? 0 : grad[i] is a select: +0 where the
 * comparison holds, grad's bits elsewhere (a NaN self compares false and
 * passes grad through), so every copy gives the same bits as the generic
 * loop. The AVX-512 copy runs the 256-bit loop: it is memory-bound.
 */
#include "cpu_kernels_internal.h"

void DISP_CPU_FN(threshold_backward_f32)(float *o, const float *self, const float *grad, float threshold,
                                         int64_t n) {
  int64_t i = 0;
#if defined(__AVX2__)
  const __m256 t = _mm256_set1_ps(threshold);
  for (; i + 8 <= n; i += 8) {
    __m256 le = _mm256_cmp_ps(_mm256_loadu_ps(self + i), t, _CMP_LE_OQ);
    _mm256_storeu_ps(o + i, _mm256_andnot_ps(le, _mm256_loadu_ps(grad + i)));
  }
#elif defined(__SSE2__)
  const __m128 t = _mm_set1_ps(threshold);
  for (; i + 4 <= n; i += 4) {
    __m128 le = _mm_cmple_ps(_mm_loadu_ps(self + i), t);
    _mm_storeu_ps(o + i, _mm_andnot_ps(le, _mm_loadu_ps(grad + i)));
  }
#endif
  for (; i < n; i++) o[i] = self[i] <= threshold ? 0.0f : grad[i];
}
