/*
 * dtype_cast.h - element loads, stores and conversions for every dtype.
 *
 * float16/bfloat16 round to nearest even, as c10::Half/c10::BFloat16 do.
 * Loads give a double (floating dtypes) or an int64 (integral and bool);
 * stores follow C's conversions, which is what PyTorch's static_cast does
 * (bool stores write value != 0).
 */
#ifndef DISP_DTYPE_CAST_H
#define DISP_DTYPE_CAST_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "disp/tensor.h"

static inline float disp__f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint32_t disp__f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float disp__half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return disp__f32_from_bits(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    /* subnormal (or zero): man * 2^-24, exact in float */
    float v = (float)man * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return disp__f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

static inline uint16_t disp__float_to_half(float f) {
  uint32_t u = disp__f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  uint32_t au = u & 0x7fffffffu;
  if (au >= 0x7f800000u) /* inf or nan (keep nan quiet) */
    return (uint16_t)(sign | 0x7c00 | (au > 0x7f800000u ? 0x200 | ((au >> 13) & 0x3ff) : 0));
  if (au >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
  if (au < 0x38800000u) {
    /* result is subnormal in half: round(|f| * 2^24) to nearest even */
    float a = disp__f32_from_bits(au) * 16777216.0f; /* exact: power of two scale */
    float r = nearbyintf(a);                          /* default mode: ties to even */
    return (uint16_t)(sign | (uint16_t)r);
  }
  uint32_t mant_odd = (au >> 13) & 1;
  au += 0xfffu + mant_odd; /* round to nearest even on the 13 dropped bits */
  return (uint16_t)(sign | (uint16_t)((au - 0x38000000u) >> 13));
}

static inline float disp__bf16_to_float(uint16_t b) { return disp__f32_from_bits((uint32_t)b << 16); }

static inline uint16_t disp__float_to_bf16(float f) {
  uint32_t u = disp__f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet nan */
  u += 0x7fffu + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

/* Double to half/bfloat16 the way PyTorch converts: through float. */
static inline uint16_t disp__double_to_half(double d) { return disp__float_to_half((float)d); }
static inline uint16_t disp__double_to_bf16(double d) { return disp__float_to_bf16((float)d); }

/* ---- generic element access (slow path: any dtype) ----------------------- */

static inline double disp__load_double(const void *p, disp_dtype dt) {
  switch (dt) {
  case DISP_DTYPE_FLOAT32: return *(const float *)p;
  case DISP_DTYPE_FLOAT64: return *(const double *)p;
  case DISP_DTYPE_FLOAT16: return disp__half_to_float(*(const uint16_t *)p);
  case DISP_DTYPE_BFLOAT16: return disp__bf16_to_float(*(const uint16_t *)p);
  case DISP_DTYPE_INT64: return (double)*(const int64_t *)p;
  case DISP_DTYPE_INT32: return *(const int32_t *)p;
  case DISP_DTYPE_INT16: return *(const int16_t *)p;
  case DISP_DTYPE_INT8: return *(const int8_t *)p;
  case DISP_DTYPE_UINT8: case DISP_DTYPE_QUINT8: return *(const uint8_t *)p;
  case DISP_DTYPE_BOOL: return *(const uint8_t *)p != 0;
  default: return 0;
  }
}

static inline int64_t disp__load_int64(const void *p, disp_dtype dt) {
  switch (dt) {
  case DISP_DTYPE_INT64: return *(const int64_t *)p;
  case DISP_DTYPE_INT32: return *(const int32_t *)p;
  case DISP_DTYPE_INT16: return *(const int16_t *)p;
  case DISP_DTYPE_INT8: return *(const int8_t *)p;
  case DISP_DTYPE_UINT8: case DISP_DTYPE_QUINT8: return *(const uint8_t *)p;
  case DISP_DTYPE_BOOL: return *(const uint8_t *)p != 0;
  default: return (int64_t)disp__load_double(p, dt);
  }
}

static inline void disp__store_double(void *p, disp_dtype dt, double v) {
  switch (dt) {
  case DISP_DTYPE_FLOAT32: *(float *)p = (float)v; break;
  case DISP_DTYPE_FLOAT64: *(double *)p = v; break;
  case DISP_DTYPE_FLOAT16: *(uint16_t *)p = disp__double_to_half(v); break;
  case DISP_DTYPE_BFLOAT16: *(uint16_t *)p = disp__double_to_bf16(v); break;
  /* out-of-range float to int is undefined in C++ too; go through int64 so
   * small types wrap as PyTorch's x86 build does */
  case DISP_DTYPE_INT64: *(int64_t *)p = (int64_t)v; break;
  case DISP_DTYPE_INT32: *(int32_t *)p = (int32_t)(int64_t)v; break;
  case DISP_DTYPE_INT16: *(int16_t *)p = (int16_t)(int64_t)v; break;
  case DISP_DTYPE_INT8: *(int8_t *)p = (int8_t)(int64_t)v; break;
  case DISP_DTYPE_UINT8: case DISP_DTYPE_QUINT8: *(uint8_t *)p = (uint8_t)(int64_t)v; break;
  case DISP_DTYPE_BOOL: *(uint8_t *)p = v != 0; break;
  default: break;
  }
}

static inline void disp__store_int64(void *p, disp_dtype dt, int64_t v) {
  switch (dt) {
  case DISP_DTYPE_INT64: *(int64_t *)p = v; break;
  case DISP_DTYPE_INT32: *(int32_t *)p = (int32_t)v; break;
  case DISP_DTYPE_INT16: *(int16_t *)p = (int16_t)v; break;
  case DISP_DTYPE_INT8: *(int8_t *)p = (int8_t)v; break;
  case DISP_DTYPE_UINT8: case DISP_DTYPE_QUINT8: *(uint8_t *)p = (uint8_t)v; break;
  case DISP_DTYPE_BOOL: *(uint8_t *)p = v != 0; break;
  default: disp__store_double(p, dt, (double)v); break;
  }
}

/* Copies one element converting between dtypes (integers stay exact). */
static inline void disp__convert_elem(void *dst, disp_dtype dd, const void *src, disp_dtype sd) {
  if (disp_dtype_is_floating(sd)) disp__store_double(dst, dd, disp__load_double(src, sd));
  else disp__store_int64(dst, dd, disp__load_int64(src, sd));
}

#endif
