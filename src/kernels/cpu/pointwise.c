/*
 * cpu/pointwise.c - the elementwise float32 kernels of the table
 * (cpu/kernels.h), compiled once per capability.
 *
 * Exact operations (add, mul, div, max) finish their tails with the scalar
 * twin of the vector instruction: the same bits either way. The
 * transcendental ones compute their tail as one zero-padded vector, as
 * 1.13's vec::map does, so every element goes through the same function.
 */
#include "cpu_kernels_internal.h"

/* o[i] = VEXPR(va, vb) over whole vectors, then SEXPR(x, y) on the tail;
 * the loop is written twice so the dense/broadcast test is not per vector. */
#define BINARY_LOOP(VEXPR, SEXPR)                                                \
  do {                                                                           \
    int64_t i = 0;                                                               \
    if (sb) {                                                                    \
      for (; i + W <= n; i += W) {                                               \
        V va = VLOAD(a + i), vb = VLOAD(b + i);                                  \
        VSTORE(o + i, VEXPR);                                                    \
      }                                                                          \
    } else {                                                                     \
      const V vb = VSET1(b[0]);                                                  \
      for (; i + W <= n; i += W) {                                               \
        V va = VLOAD(a + i);                                                     \
        VSTORE(o + i, VEXPR);                                                    \
      }                                                                          \
    }                                                                            \
    for (; i < n; i++) {                                                         \
      float x = a[i], y = b[i * sb];                                             \
      o[i] = SEXPR;                                                              \
    }                                                                            \
  } while (0)

void DISP_CPU_FN(add_f32)(float *o, const float *a, const float *b, int64_t sb, float alpha, int64_t n) {
  /* alpha == 1: no multiply (x * 1 is exact, so only time is saved) */
  if (alpha == 1.0f) {
    BINARY_LOOP(VADD(va, vb), x + y);
    return;
  }
  /* the product rounded, then the sum: no fused multiply-add in any copy
   * (these sources are built with -ffp-contract=off) */
  const V valpha = VSET1(alpha);
  BINARY_LOOP(VADD(va, VMUL(vb, valpha)), x + y * alpha);
}

void DISP_CPU_FN(mul_f32)(float *o, const float *a, const float *b, int64_t sb, int64_t n) {
  BINARY_LOOP(VMUL(va, vb), x * y);
}

void DISP_CPU_FN(div_f32)(float *o, const float *a, const float *b, int64_t sb, int64_t n) {
  BINARY_LOOP(VDIV(va, vb), x / y);
}

/* max(lo, a) in x86's operand order returns a when a is NaN and when both
 * are zeros: std::max(a, lo) exactly, one instruction a vector. */
void DISP_CPU_FN(clamp_min_f32)(float *o, const float *a, float lo, int64_t n) {
  int64_t i = 0;
  const V vlo = VSET1(lo);
  for (; i + W <= n; i += W) VSTORE(o + i, VMAX(vlo, VLOAD(a + i)));
  for (; i < n; i++) o[i] = disp__smax(lo, a[i]);
}

static inline V vsigmoid(V x) {
  const V one = VSET1(1.0f);
  return VDIV(one, VADD(one, VEXP(VSUB(VSET1(0.0f), x))));
}
static inline V vexp(V x) { return VEXP(x); }
static inline V vlog(V x) { return VLOG(x); }
static inline V vtanh(V x) { return VTANH(x); }

#define MAP_KERNEL(name, f)                                                         \
  void DISP_CPU_FN(name)(float *o, const float *a, int64_t n) {                     \
    int64_t i = 0;                                                                  \
    for (; i + W <= n; i += W) VSTORE(o + i, f(VLOAD(a + i)));                      \
    if (i < n) disp__vstore_part(o + i, f(disp__vload_part(a + i, n - i, 0.0f)), n - i); \
  }
MAP_KERNEL(exp_f32, vexp)
MAP_KERNEL(log_f32, vlog)
MAP_KERNEL(tanh_f32, vtanh)
MAP_KERNEL(sigmoid_f32, vsigmoid)
