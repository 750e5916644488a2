/*
 * gemm.h - the one matrix-multiply entry every matmul-like kernel uses
 * (mm, addmm, bmm, convolution).
 *
 *   C = alpha * A @ B + beta * C        A: m x k, B: k x n, C: m x n
 *
 * Every operand is given as a base pointer plus a row stride and a column
 * stride in elements (any strides, 0 included: expanded operands work).
 * float32/float64 go to CBLAS when the build has it (DISP_HAVE_CBLAS) and
 * the operands' layouts can be described to BLAS (row- or column-major with
 * a leading dimension, transposed or not); anything else is packed into the
 * portable cache-blocked kernel. Both paths are always compiled in the
 * BLAS build, and disp__gemm_force_portable() picks the portable one at run
 * time so tests can check that they agree.
 *
 * beta == 0 means C is overwritten and never read (nan/inf in C vanish),
 * as BLAS and PyTorch's addmm define it.
 */
#ifndef DISP_KERNELS_GEMM_H
#define DISP_KERNELS_GEMM_H

#include <stdint.h>

#include <disp.h>

#include "tensor/dtype_cast.h"

/* A strided matrix operand: element (i, j) is data[i * rs + j * cs]. */
typedef struct disp__mat {
  void *data;
  int64_t rs, cs;
} disp__mat;

/*
 * disp__gemm_force_portable - on != 0: every float32/float64 product takes
 * the portable kernel even when CBLAS is there (for tests and benchmarks).
 * Process-wide; returns the previous setting. Thread-safe (atomic).
 */
int disp__gemm_force_portable(int on);

/* disp__gemm_have_blas - 1 when this build calls CBLAS for float32/float64. */
int disp__gemm_have_blas(void);

/*
 * disp__gemm_blocks - how disp__gemm_f32 (dt FLOAT32) or _f64 (FLOAT64)
 * would split this product (Note [Threaded
 * gemm] in gemm.c), for tests and benchmarks: stores the first row of each
 * block (of each column block when n > m) in starts, at most
 * max of them, and returns the number of blocks (1: one call; 0: dt is
 * neither). The same at every thread setting. Thread-safe.
 */
int disp__gemm_blocks(disp_dtype dt, int64_t m, int64_t n, int64_t k, int64_t *starts, int max);

/* Typed entries. No allocation failure is possible in f32/f64 except when
 * a layout must be packed; they return DISP_ERR_NO_MEMORY then. */
disp_status disp__gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, disp__mat a, disp__mat b,
                           float beta, disp__mat c);
disp_status disp__gemm_f64(int64_t m, int64_t n, int64_t k, double alpha, disp__mat a,
                           disp__mat b, double beta, disp__mat c);

/*
 * disp__gemm - any dtype (all three operands of dtype dt). Accumulation as
 * PyTorch's CPU gemm: float32 for float16/bfloat16 (rounded once at the
 * end), wrapping two's-complement arithmetic for the integer types (the
 * result is the same as accumulating in the type itself), logical or/and
 * for bool. alpha/beta are converted to the accumulation type.
 */
disp_status disp__gemm(disp_dtype dt, int64_t m, int64_t n, int64_t k, disp_scalar alpha,
                       disp__mat a, disp__mat b, disp_scalar beta, disp__mat c);

/*
 * disp__gemm_small_from - C = alpha * A @ B + beta * S in one pass, S (m x
 * n, rows contiguous, any row stride: 0 repeats one row, addmm's bias) read
 * instead of C, when disp__gemm would give this float32 product to the small
 * kernel (Note [Small products] in gemm.c); the same operations in the same
 * order as filling C with S and calling disp__gemm, so the same bits.
 * Returns 1 when it multiplied; 0, with nothing read or written, otherwise
 * (another product, or an alpha/beta disp__gemm refuses: the caller fills C
 * and calls disp__gemm, which reports them). S must not overlap C.
 */
int disp__gemm_small_from(disp_dtype dt, int64_t m, int64_t n, int64_t k, disp_scalar alpha, disp__mat a,
                          disp__mat b, disp_scalar beta, disp__mat s, disp__mat c);

/* ---- element conversions shared by the kernels of this area ---------- */

/* float16 / bfloat16 <-> float32, round-to-nearest-even, nan kept quiet. */
static inline float disp__bf16_to_f32(uint16_t h) {
  union { uint32_t u; float f; } v;
  v.u = (uint32_t)h << 16;
  return v.f;
}
static inline uint16_t disp__f32_to_bf16(float f) {
  union { uint32_t u; float f; } v;
  v.f = f;
  if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40);
  uint32_t lsb = (v.u >> 16) & 1u;
  return (uint16_t)((v.u + 0x7fffu + lsb) >> 16);
}
static inline float disp__f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  union { uint32_t u; float f; } v;
  if (exp == 0x1f) {
    v.u = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    float f = (float)man * (1.0f / 16777216.0f); /* man * 2^-24 */
    return sign ? -f : f;
  } else {
    v.u = sign | ((exp + 112u) << 23) | (man << 13);
  }
  return v.f;
}
static inline uint16_t disp__f32_to_f16(float f) {
  union { uint32_t u; float f; } v;
  v.f = f;
  uint32_t sign = (v.u >> 16) & 0x8000u, a = v.u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf */
  if (a < 0x38800000u) {                                   /* subnormal or zero */
    v.u = a;
    float s = v.f * 16777216.0f; /* in units of 2^-24; the float rounding is RNE */
    return (uint16_t)(sign | (uint32_t)__builtin_nearbyintf(s));
  }
  uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u;
  return (uint16_t)(sign | (r >> 13));
}

/* Element at p (of dtype dt) as a double, and a double stored into p:
 * half and bfloat16 through this file's conversions, every other dtype as
 * dtype_cast.h's generic access does (integers stored through int64, so a
 * sum that does not fit wraps as in PyTorch's x86 build). */
static inline double disp__load_f64(const void *p, disp_dtype dt) {
  switch (dt) {
    case DISP_DTYPE_FLOAT16: return disp__f16_to_f32(*(const uint16_t *)p);
    case DISP_DTYPE_BFLOAT16: return disp__bf16_to_f32(*(const uint16_t *)p);
    default: return disp__load_double(p, dt);
  }
}
static inline void disp__store_f64(void *p, disp_dtype dt, double v) {
  switch (dt) {
    case DISP_DTYPE_FLOAT16: *(uint16_t *)p = disp__f32_to_f16((float)v); break;
    case DISP_DTYPE_BFLOAT16: *(uint16_t *)p = disp__f32_to_bf16((float)v); break;
    default: disp__store_double(p, dt, v); break;
  }
}

#endif /* DISP_KERNELS_GEMM_H */
