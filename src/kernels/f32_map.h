/*
 * f32_map.h - running a float32 kernel of the CPU table (cpu/kernels.h),
 * which takes contiguous arrays, over one block of a tensor iterator
 * (tensor_iter.h: data pointers d[0] the output, d[1..] the inputs, byte
 * strides s, n elements) whatever its strides.
 *
 * Contiguous blocks go straight to the kernel; others are gathered into a
 * small stack buffer, mapped there and scattered back, so every float32
 * element gets the same function (the same bits) whatever its layout.
 * Any thread; no allocation.
 */
#ifndef DISP_KERNELS_F32_MAP_H
#define DISP_KERNELS_F32_MAP_H

#include <stdint.h>

#include "cpu/kernels.h"

/* o = f(a): d[0] o, d[1] a. */
void disp__f32_map1(char **d, const int64_t *s, int64_t n, disp__k_un_f32 f);

/* o = f(a, b): d[0] o, d[1] a, d[2] b. */
void disp__f32_map2(char **d, const int64_t *s, int64_t n,
                    void (*f)(float *o, const float *a, const float *b, int64_t n));

#endif
