/*
 * topk.c - aten::topk: the k largest (or smallest) elements of each slice
 * along dim, and their indices.
 *
 * As 1.13's CPU kernel (TopKImpl.h): each slice's (value, index) pairs are
 * ordered with libstdc++'s std::partial_sort when k * 64 <= the slice's
 * length, else with std::nth_element and, for sorted results, std::sort
 * of the first k - 1; NaN counts as the largest value. Those algorithms
 * are not stable, so stl_order.c reproduces them step for step: ties come
 * out with 1.13's indices. Every dtype but bool and float16 (1.13's
 * AT_DISPATCH_ALL_TYPES_AND(BFloat16): float16 is refused too, as 1.13.1's
 * build does); results are contiguous.
 *
 * One body serves the CPU and the Meta key (manifest: META_IS_CPU).
 */
#include <stdio.h>

#include "alloc_internal.h"
#include "aten_internal.h"
#include "aten_kernels.h"
#include "stl_order.h"
#include "tensor/dtype_cast.h"
#include "tensor_iter.h"

/* The slice starting at `base` (elements of the contiguous x, `inner`
 * apart) ordered into q; its first k written to vals/idx (`inner` apart). */
static void topk_slice(const char *x, char *vals, int64_t *idx, disp_dtype dt, int64_t base, int64_t obase,
                       int64_t n, int64_t inner, int64_t k, int largest, int sorted, stl_elem *q) {
  size_t isz = disp_dtype_itemsize(dt);
  int integral = !disp_dtype_is_floating(dt);
  for (int64_t j = 0; j < n; j++) {
    const char *p = x + (size_t)(base + j * inner) * isz;
    q[j].v = integral ? (long double)disp__load_int64(p, dt) : (long double)disp__load_double(p, dt);
    q[j].i = j;
  }
  stl_cmp cmp = {largest};
  if (k * 64 <= n) {
    disp__stl_partial_sort(q, k, n, cmp);
  } else {
    disp__stl_nth_element(q, k - 1, n, cmp);
    if (sorted) disp__stl_sort(q, k - 1, cmp);
  }
  for (int64_t j = 0; j < k; j++) {
    char *o = vals + (size_t)(obase + j * inner) * isz;
    if (integral) disp__store_int64(o, dt, (int64_t)q[j].v);
    else disp__store_double(o, dt, (double)q[j].v);
    idx[obase + j * inner] = q[j].i;
  }
}

static disp_status topk_fill(disp_tensor *self, int d, int64_t k, int largest, int sorted, disp_tensor *values,
                             disp_tensor *indices) {
  disp_tensor *x = NULL;
  disp_status st = disp__titer_contiguous_as(self, disp__t_dtype(self), &x);
  if (st != DISP_OK) return st;
  int nd = disp__t_ndim(self);
  int64_t n = nd ? disp__t_size(self, d) : 1, outer = 1, inner = 1;
  for (int i = 0; i < nd; i++) {
    if (i < d) outer *= disp__t_size(self, i);
    if (i > d) inner *= disp__t_size(self, i);
  }
  stl_elem *q = disp__calloc((size_t)n, sizeof *q);
  if (!q) {
    disp_tensor_release(x);
    return disp_set_error(DISP_ERR_NO_MEMORY, "topk: out of memory for a slice of %lld", (long long)n);
  }
  for (int64_t a = 0; a < outer; a++)
    for (int64_t b = 0; b < inner; b++)
      topk_slice(disp__t_data(x), disp__t_data(values), disp__t_data(indices), disp__t_dtype(self),
                 a * n * inner + b, a * k * inner + b, n, inner, k, largest, sorted, q);
  disp__free(q);
  disp_tensor_release(x);
  return DISP_OK;
}

disp_status disp__cpu_topk(disp_tensor *self, int64_t k, int64_t dim, bool largest, bool sorted,
                           disp_tensor **out0, disp_tensor **out1) {
  int nd = disp__t_ndim(self), d = 0;
  disp_status st = disp__titer_wrap_dim("topk", dim, nd, &d);
  if (st != DISP_OK) return st;
  int64_t n = nd ? disp__t_size(self, d) : 1;
  if (k < 0 || k > n) return disp_set_error(DISP_ERR_INVALID_ARG, "selected index k out of range");
  int64_t shape[DISP_TENSOR_MAX_DIMS];
  for (int i = 0; i < nd; i++) shape[i] = i == d ? k : disp__t_size(self, i);
  disp_tensor *values = NULL, *indices = NULL;
  disp_device dev = disp__t_device(self);
  if ((st = disp_tensor_empty(shape, nd, disp__t_dtype(self), dev, &values)) != DISP_OK) return st;
  if ((st = disp_tensor_empty(shape, nd, DISP_DTYPE_INT64, dev, &indices)) != DISP_OK) {
    disp_tensor_release(values);
    return st;
  }
  int cpu = disp__t_device_type(self) == DISP_BACKEND_CPU;
  disp_dtype dt = disp__t_dtype(self);
  /* 1.13 copies a 0-dim self without choosing a dtype kernel */
  if (cpu && nd > 0 && disp__t_numel(values) > 0 && (dt == DISP_DTYPE_BOOL || dt == DISP_DTYPE_FLOAT16))
    st = disp__not_implemented("topk_cpu", dt);
  else if (cpu && disp__t_numel(values) > 0)
    st = topk_fill(self, d, k, largest, sorted, values, indices);
  if (st != DISP_OK) {
    disp_tensor_release(values);
    disp_tensor_release(indices);
    return st;
  }
  *out0 = values;
  *out1 = indices;
  return DISP_OK;
}
