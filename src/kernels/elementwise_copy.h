/*
 * elementwise_copy.h - strided copy with dtype conversion, the fill of a
 * strided tensor, and the memory-format helpers the shape-related kernels
 * share (views, creation, copy, cat).
 */
#ifndef DISP_ELEMENTWISE_COPY_H
#define DISP_ELEMENTWISE_COPY_H

#include <stdbool.h>
#include <stdint.h>

#include "disp/tensor.h"
#include "disp/value.h"

/* Memory formats: disp_memory_format (disp/tensor.h), PyTorch's numbering
 * (the schema default "memory_format=0" is contiguous_format). */

/*
 * disp__ew_copy_strided - dst[i] = convert(src[i]) for every index of `sizes`
 * (ndim dims); both strides are in elements of their own dtype and src's
 * may be 0 (broadcast). Conversions are C's casts between the element types
 * (float16/bfloat16 through float), which is what PyTorch's copy does.
 * Same dtype copies the bytes (memcpy, fill, typed strided loops). The two
 * regions must not partially overlap; dst must not have a stride 0 where
 * src varies. Large copies run on disp__parallel_for's threads (a dst with
 * a stride-0 dim, an expanded fill, stays on the calling thread).
 */
void disp__ew_copy_strided(void *dst, const int64_t *dst_strides, disp_dtype ddt, const void *src,
                        const int64_t *src_strides, disp_dtype sdt, const int64_t *sizes, int ndim);

/* The same copy with byte strides in tensor_iter's layout: dst's ndim
 * strides, then src's (disp__titer_copy's entry). */
void disp__ew_copy_bytes(void *dst, disp_dtype ddt, const void *src, disp_dtype sdt, const int64_t *strides,
                         const int64_t *sizes, int ndim);

/*
 * disp__ew_scalar_to_elem - converts a Scalar to one element of `dt` into
 * `buf` (at least 8 bytes) as PyTorch's Scalar::to<T>() does, failing
 * like it ("value cannot be converted to type int8_t without overflow").
 */
disp_status disp__ew_scalar_to_elem(disp_scalar s, disp_dtype dt, void *buf);

/* PyTorch's is_non_overlapping_and_dense for sizes/strides. */
int disp__ew_is_non_overlapping_and_dense(const int64_t *sizes, const int64_t *strides, int ndim);

/* Whether the geometry has elements that share memory for sure (a stride 0
 * on a dim of size > 1): PyTorch's has_internal_overlap == YES. */
int disp__ew_has_internal_overlap(const int64_t *sizes, const int64_t *strides, int ndim);

/* PyTorch's suggest_memory_format: CHANNELS_LAST(_3D) for 4-D (5-D) tensors
 * strided like it, else CONTIGUOUS. */
int disp__ew_suggest_memory_format(const int64_t *sizes, const int64_t *strides, int ndim);

/* PyTorch's is_contiguous(memory_format) (CONTIGUOUS, CHANNELS_LAST(_3D)). */
int disp__ew_is_contiguous_as(const int64_t *sizes, const int64_t *strides, int ndim, int memory_format);

/*
 * disp__ew_strides_for_format - strides of a fresh tensor of `sizes` in
 * `memory_format` (CONTIGUOUS, CHANNELS_LAST on 4-D, CHANNELS_LAST_3D on
 * 5-D). Fails like PyTorch ("required rank 4 tensor to use channels_last
 * format") when the rank does not fit.
 */
disp_status disp__ew_strides_for_format(const int64_t *sizes, int ndim, int memory_format, int64_t *out);

/* PyTorch's infer_dense_strides: dense strides with the input's layout
 * permutation (ties and stride-0 dims keep their place). */
void disp__ew_infer_dense_strides(const int64_t *sizes, const int64_t *strides, int ndim, int64_t *out);

#endif
