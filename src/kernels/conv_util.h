/*
 * conv_util.h - what the convolution and pooling kernels share: NCHW /
 * channels_last output allocation, whole-tensor float64 copies in and out,
 * and PyTorch-style size lists in messages.
 */
#ifndef DISP_KERNELS_CONV_UTIL_H
#define DISP_KERNELS_CONV_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "aten_internal.h"

/* "[2, 3, 4]" into buf (truncated to n bytes). */
void disp__conv_format_list(char *buf, size_t n, const int64_t *v, int len);

/* Exact integers for output-size formulas whose int64 terms can pass
 * int64 (huge padding, dilation, stride): every intermediate of 1.13's
 * formulas fits 128 bits, so the result is exact and then checked. */
__extension__ typedef __int128 disp__conv_i128;

/* v in decimal into buf (truncated to n bytes). */
void disp__conv_format_i128(char *buf, size_t n, disp__conv_i128 v);

/* PyTorch's is_channels_last_strides_2d (4-D tensors; 0 otherwise): the
 * layout suggest_memory_format() reports as ChannelsLast. */
int disp__conv_channels_last(const disp_tensor *t);

/* An uninitialized tensor of sizes on dev; channels_last strides when cl and ndim == 4. */
disp_status disp__conv_empty(const int64_t *sizes, int ndim, disp_dtype dt, disp_device dev, int cl,
                             disp_tensor **out);

/* A malloc'd row-major float64 copy of t's elements (any strides and dtype);
 * NULL on OOM. At least one element is allocated, so NULL means OOM. */
double *disp__conv_load(const disp_tensor *t);

/* Writes row-major values v into t (any strides), converting to t's dtype. */
void disp__conv_store(disp_tensor *t, const double *v);

/* The same in compute dtype ct (float32 or float64): a malloc'd row-major
 * copy of t's elements converted to ct (NULL on OOM), and its way back. */
void *disp__conv_load_as(const disp_tensor *t, disp_dtype ct);
void disp__conv_store_from(disp_tensor *t, const void *v, disp_dtype ct);

/* t's elements as a row-major array of ct without a copy when t is
 * contiguous of dtype ct (its own data; *owned NULL), else a malloc'd
 * copy (*owned, which the caller frees). NULL on OOM. Read only. */
const void *disp__conv_view_as(const disp_tensor *t, disp_dtype ct, void **owned);

/* Where to write t's row-major elements in ct: t's own data when it is
 * contiguous of dtype ct (*owned NULL), else a malloc'd buffer (*owned);
 * NULL on OOM. disp__conv_out_done then stores an owned buffer into t
 * (when store) and frees it. */
void *disp__conv_out_as(disp_tensor *t, disp_dtype ct, void **owned);
void disp__conv_out_done(disp_tensor *t, void *owned, disp_dtype ct, int store);

#endif /* DISP_KERNELS_CONV_UTIL_H */
