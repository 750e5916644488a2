/*
 * views_internal.h - shape helpers the view, copy and shape kernels share.
 */
#ifndef DISP_VIEWS_INTERNAL_H
#define DISP_VIEWS_INTERNAL_H

#include <stdint.h>

#include "disp/status.h"

/* PyTorch's maybe_wrap_dim (scalars wrap as 1-D): a negative dim counts
 * from the end; "Dimension out of range (expected to be in range of
 * [-2, 1], but got 2)" otherwise. */
disp_status disp__views_wrap_dim(int64_t dim, int64_t ndim, int64_t *out);

/* PyTorch's infer_size: resolves one -1 in `shape` for `numel` elements. */
disp_status disp__views_infer_size(const char *op, const int64_t *shape, int n, int64_t numel, int64_t *out);

/* PyTorch's computeStride: strides that view (oldshape, oldstride) as
 * newshape, or 0 when no view can. */
int disp__views_compute_strides(const int64_t *oldshape, const int64_t *oldstride, int oldn,
                               const int64_t *newshape, int newn, int64_t *newstride);

#endif
