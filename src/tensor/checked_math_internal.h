/*
 * checked_math_internal.h - overflow-checked arithmetic for everything that
 * computes a size, an element count, a byte count, a stride or an offset.
 *
 * Why one header: signed overflow is undefined behaviour in C, and a size
 * that wraps silently becomes a wrong shape or an out-of-bounds access.
 * Every such computation in tensor/ and kernels/ goes through these helpers
 * (GCC/Clang's __builtin_*_overflow underneath), so each one either gets the
 * exact value or reports that there is none. The helpers that only compute
 * return true on overflow (the result is then unspecified, never used);
 * those that check a caller's input return a disp_status with the message
 * set. Header-only, no state: thread-safe.
 */
#ifndef DISP_TENSOR_CHECKED_MATH_INTERNAL_H
#define DISP_TENSOR_CHECKED_MATH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "disp/status.h"
#include "disp/tensor.h"

/* a * b into *out; true when the exact product does not fit int64. */
static inline bool disp__mul_i64(int64_t a, int64_t b, int64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}

/* a + b into *out; true when the exact sum does not fit int64. */
static inline bool disp__add_i64(int64_t a, int64_t b, int64_t *out) {
  return __builtin_add_overflow(a, b, out);
}

/* a - b into *out; true when the exact difference does not fit int64. */
static inline bool disp__sub_i64(int64_t a, int64_t b, int64_t *out) {
  return __builtin_sub_overflow(a, b, out);
}

/* a * b into *out for byte counts and malloc sizes; true on overflow. */
static inline bool disp__mul_size(size_t a, size_t b, size_t *out) {
  return __builtin_mul_overflow(a, b, out);
}

/*
 * disp__mul_many_i64 - the product of v[0..n) into *out (1 for n == 0);
 * true when it, or any partial product, does not fit int64.
 */
static inline bool disp__mul_many_i64(const int64_t *v, int n, int64_t *out) {
  int64_t p = 1;
  for (int i = 0; i < n; i++)
    if (__builtin_mul_overflow(p, v[i], &p)) return true;
  *out = p;
  return false;
}

/*
 * disp__check_ndim - a list's length as a dimension count. A length is a
 * size_t and a dimension count an int: the narrowing would turn a list of
 * 2^32 + 2 sizes into a 2-D shape, so any length above DISP_TENSOR_MAX_DIMS
 * is refused before anything reads the list. Errors: DISP_ERR_INVALID_ARG
 * "<op>: the number of dimensions must be between 0 and 64, got <len>".
 */
static inline disp_status disp__check_ndim(const char *op, size_t len, int *out) {
  if (len > DISP_TENSOR_MAX_DIMS)
    return disp_set_error(DISP_ERR_INVALID_ARG, "%s: the number of dimensions must be between 0 and %d, got %zu",
                          op, DISP_TENSOR_MAX_DIMS, len);
  *out = (int)len;
  return DISP_OK;
}

#endif /* DISP_TENSOR_CHECKED_MATH_INTERNAL_H */
