/*
 * split.c - aten::split.Tensor and aten::chunk: a tensor cut along one dim
 * into views.
 *
 * split.Tensor is 1.13's CompositeExplicitAutograd kernel: pieces of
 * split_size (the last one shorter), each a narrow of self, so it serves
 * every backend and Meta; its ADInplaceOrView kernel (generated) marks the
 * pieces as views of self, and autograd records one SplitBackward0 node
 * whose outputs are the pieces. chunk is CompositeImplicitAutograd over
 * split.Tensor, as in 1.13: split_size = ceil(size / chunks).
 *
 * The returned disp_tensor_vec's array comes from the library's allocator
 * (the caller frees it with disp_tensor_vec_free).
 */
#include "alloc_internal.h"
#include "aten_internal.h"
#include "aten_kernels.h"
#include "disp/aten.h"
#include "tensor_iter.h"

/* n narrows of self along d: piece i starts at i * step, `len` long
 * (the last `last` long). */
static disp_status pieces(disp_tensor *self, int64_t d, int64_t n, int64_t step, int64_t len, int64_t last,
                          disp_tensor_vec *out) {
  disp_tensor **v = disp__calloc((size_t)n, sizeof *v);
  if (!v) return disp_set_error(DISP_ERR_NO_MEMORY, "split: out of memory for %lld pieces", (long long)n);
  disp_tensor_vec r = {v, 0};
  disp_status st = DISP_OK;
  for (int64_t i = 0; i < n && st == DISP_OK; i++) {
    st = disp_aten_narrow(self, d, i * step, i < n - 1 ? len : last, &v[i]);
    if (st == DISP_OK) r.len++;
  }
  if (st != DISP_OK) {
    disp_tensor_vec_free(&r);
    return st;
  }
  *out = r;
  return DISP_OK;
}

disp_status disp__cea_split_Tensor(disp_tensor *self, int64_t split_size, int64_t dim, disp_tensor_vec *out0) {
  if (disp__t_ndim(self) == 0)
    return disp_set_error(DISP_ERR_INVALID_ARG, "split expects at least a 1-dimensional tensor");
  if (split_size < 0)
    return disp_set_error(DISP_ERR_INVALID_ARG, "split expects split_size be non-negative, but got split_size=%lld",
                          (long long)split_size);
  int d = 0;
  disp_status st = disp__titer_wrap_dim("split", dim, disp__t_ndim(self), &d);
  if (st != DISP_OK) return st;
  int64_t size = disp__t_size(self, d);
  if (split_size == 0 && size != 0)
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "split_size can only be 0 if dimension size is 0, but got dimension size of %lld",
                          (long long)size);
  /* one piece when split_size is 0 or at least the size (1.13 keeps that for BC) */
  int64_t n = split_size == 0 ? 1 : size / split_size + (size % split_size != 0);
  if (n < 1) n = 1;
  int64_t last = size - split_size * (n - 1); /* n - 1 full pieces fit: no overflow */
  if (n == 1) last = size;
  return pieces(self, d, n, split_size, split_size, last, out0);
}

disp_status disp__cia_chunk(disp_tensor *self, int64_t chunks, int64_t dim, disp_tensor_vec *out0) {
  if (disp__t_ndim(self) == 0)
    return disp_set_error(DISP_ERR_INVALID_ARG, "chunk expects at least a 1-dimensional tensor");
  if (chunks <= 0)
    return disp_set_error(DISP_ERR_INVALID_ARG, "chunk expects `chunks` to be greater than 0, got: %lld",
                          (long long)chunks);
  int d = 0;
  disp_status st = disp__titer_wrap_dim("chunk", dim, disp__t_ndim(self), &d);
  if (st != DISP_OK) return st;
  int64_t size = disp__t_size(self, d);
  int64_t split_size = size / chunks + (size % chunks != 0);
  /* 1.13 keeps `chunks` empty pieces of an empty dim (split_with_sizes);
   * here they are narrows of self (README: their node is SliceBackward0) */
  if (size == 0) return pieces(self, d, chunks, 0, 0, 0, out0);
  return disp_aten_split_Tensor(self, split_size, d, out0);
}
