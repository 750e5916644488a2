/*
 * triangle.c - aten::tril and aten::triu: the lower (upper) triangle of the
 * last two dims of every matrix of a batch, the rest zero.
 *
 * An element (i, j) is kept by tril when j - i <= diagonal and by triu when
 * j - i >= diagonal. The result is a fresh contiguous tensor (1.13's
 * structured kernel allocates it so, whatever self's strides), every dtype
 * 1.13 compiles for (all of ours: its AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND3
 * with Half, BFloat16 and Bool). Elements are copied bytewise, so no dtype
 * arithmetic is involved.
 *
 * One body serves the CPU and the Meta key (manifest: META_IS_CPU): for a
 * Meta tensor only the result's geometry is made.
 */
#include <string.h>

#include "aten_internal.h"
#include "aten_kernels.h"
#include "tensor_iter.h"

/* Copies the kept elements of x (contiguous) into out (contiguous, zeroed). */
static void copy_triangle(const char *x, char *out, const disp_tensor *self, int64_t diagonal, int lower) {
  int nd = disp__t_ndim(self);
  int64_t rows = disp__t_size(self, nd - 2), cols = disp__t_size(self, nd - 1);
  int64_t mats = disp__t_numel(self) / (rows * cols); /* numel > 0 here */
  size_t isz = disp_dtype_itemsize(disp__t_dtype(self));
  /* beyond +-(rows + cols) every diagonal keeps all or nothing: clamping
   * keeps i + diagonal from overflowing */
  if (diagonal > rows + cols) diagonal = rows + cols;
  if (diagonal < -(rows + cols)) diagonal = -(rows + cols);
  for (int64_t m = 0; m < mats; m++)
    for (int64_t i = 0; i < rows; i++) {
      /* kept columns [lo, hi) of row i */
      int64_t lo = lower ? 0 : i + diagonal, hi = lower ? i + diagonal + 1 : cols;
      if (lo < 0) lo = 0;
      if (hi > cols) hi = cols;
      if (lo >= hi) continue;
      size_t at = (size_t)((m * rows + i) * cols + lo) * isz;
      memcpy(out + at, x + at, (size_t)(hi - lo) * isz);
    }
}

static disp_status triangle(const char *op, int lower, disp_tensor *self, int64_t diagonal, disp_tensor **out0) {
  disp_tensor *out = NULL, *x = NULL;
  disp_status st = disp_tensor_empty(disp__t_sizes(self), disp__t_ndim(self), disp__t_dtype(self),
                                     disp__t_device(self), &out);
  if (st != DISP_OK) return st;
  /* 1.13 returns an empty result as it is; otherwise it reads
   * self.size(-2), which fails for fewer than two dims */
  int d = 0;
  if (disp__t_numel(self) > 0 && (st = disp__titer_wrap_dim(op, -2, disp__t_ndim(self), &d)) != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  if (disp__t_device_type(self) != DISP_BACKEND_CPU || disp__t_numel(self) == 0) {
    *out0 = out;
    return DISP_OK;
  }
  if ((st = disp__titer_contiguous_as(self, disp__t_dtype(self), &x)) != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  memset(disp__t_data(out), 0, (size_t)disp__t_numel(out) * disp_dtype_itemsize(disp__t_dtype(out)));
  copy_triangle(disp__t_data(x), disp__t_data(out), self, diagonal, lower);
  disp_tensor_release(x);
  *out0 = out;
  return DISP_OK;
}

disp_status disp__cpu_tril(disp_tensor *self, int64_t diagonal, disp_tensor **out0) {
  return triangle("tril", 1, self, diagonal, out0);
}

disp_status disp__cpu_triu(disp_tensor *self, int64_t diagonal, disp_tensor **out0) {
  return triangle("triu", 0, self, diagonal, out0);
}
