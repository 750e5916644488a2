/*
 * cpu/gelu.c - float32 GELU (approximate "none") and its gradient for the
 * kernel table (cpu/kernels.h), compiled once per capability.
 *
 * The vector copies compute erf as 1.13's Vectorized<float> and oneDNN's
 * gelu_erf (which 1.13 runs for contiguous float32) both do: Abramowitz and
 * Stegun's 7.1.26, 1 - t P(t) exp(-x^2) with t = 1 / (1 + p |x|), the sign
 * restored; absolute error below 1.5e-7, one exp and a division, where
 * SLEEF's 1-ulp erf costs six times as much and dominated a GPT's step.
 * The baseline copy calls libm's erff, as 1.13's DEFAULT build does
 * std::erf. Both then form 0.5 x (1 + erf(x / sqrt 2)) as 1.13 does.
 */
#include "cpu_kernels_internal.h"

#define SQRT_HALF 0.70710678118654752440f
#define HALF_2_OVER_SQRT_PI_SQRT_HALF 0.3989422804014327f /* the normal density's 1 / sqrt(2 pi) */

#ifdef VFMA
/* erf(x) given e = exp(-x^2) */
static inline V verf_with(V x, V e) {
  const V sign = VAND(x, VSET1(-0.0f)), ax = VXOR(x, sign), one = VSET1(1.0f);
  V t = VDIV(one, VFMA(VSET1(0.3275911f), ax, one));
  V poly = VFMA(VFMA(VFMA(VFMA(VSET1(1.061405429f), t, VSET1(-1.453152027f)), t, VSET1(1.421413741f)), t,
                     VSET1(-0.284496736f)),
                t, VSET1(0.254829592f));
  return VXOR(VFMA(VMUL(t, VSUB(VSET1(0.0f), e)), poly, one), sign);
}
static inline V verf(V x) { return verf_with(x, VEXP(VSUB(VSET1(0.0f), VMUL(x, x)))); }
#else
static inline V verf_lanes(V x) { DISP__LANEWISE(erff, x); }
static inline V verf_with(V x, V e) { return (void)e, verf_lanes(x); }
static inline V verf(V x) { return verf_lanes(x); }
#endif

static inline V gelu(V x) { return VMUL(VMUL(x, VSET1(0.5f)), VADD(VSET1(1.0f), verf(VMUL(x, VSET1(SQRT_HALF))))); }

/* dy * (Phi(x) + x * phi(x)). phi's exp(-x^2 / 2) is also the exp(-z^2)
 * of erf(z = x / sqrt 2): one exp serves both (1.13 takes two; they differ
 * by the rounding of the argument, far inside the erf's own error). */
static inline V gelu_grad(V dy, V x) {
  V e = VEXP(VMUL(VMUL(x, x), VSET1(-0.5f)));
  V cdf = VMUL(VSET1(0.5f), VADD(VSET1(1.0f), verf_with(VMUL(x, VSET1(SQRT_HALF)), e)));
  return VMUL(dy, VADD(cdf, VMUL(x, VMUL(VSET1(HALF_2_OVER_SQRT_PI_SQRT_HALF), e))));
}

void DISP_CPU_FN(gelu_f32)(float *o, const float *a, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) VSTORE(o + i, gelu(VLOAD(a + i)));
  if (i < n) disp__vstore_part(o + i, gelu(disp__vload_part(a + i, n - i, 0.0f)), n - i);
}

void DISP_CPU_FN(gelu_backward_f32)(float *o, const float *dy, const float *x, int64_t n) {
  int64_t i = 0;
  for (; i + W <= n; i += W) VSTORE(o + i, gelu_grad(VLOAD(dy + i), VLOAD(x + i)));
  if (i < n)
    disp__vstore_part(o + i, gelu_grad(disp__vload_part(dy + i, n - i, 0.0f), disp__vload_part(x + i, n - i, 0.0f)),
                      n - i);
}
