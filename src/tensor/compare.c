/*
 * compare.c - disp_tensor_allclose.
 */
#include <math.h>
#include <string.h>

#include "disp/tensor_util.h"
#include "argcheck_internal.h"
#include "device_internal.h"
#include "dtype_cast.h"
#include "tensor_internal.h"

static int close_enough(const char *pa, disp_dtype da, const char *pb, disp_dtype db, double rtol, double atol,
                        int equal_nan) {
  if (!disp_dtype_is_floating(da) && !disp_dtype_is_floating(db)) {
    int64_t x = disp__load_int64(pa, da), y = disp__load_int64(pb, db);
    if (x == y) return 1;
    double diff = fabs((double)x - (double)y);
    return diff <= atol + rtol * fabs((double)y);
  }
  double x = disp__load_double(pa, da), y = disp__load_double(pb, db);
  if (isnan(x) || isnan(y)) return equal_nan && isnan(x) && isnan(y);
  if (x == y) return 1; /* also equal infinities */
  if (isinf(x) || isinf(y)) return 0;
  return fabs(x - y) <= atol + rtol * fabs(y);
}

/* Every pair of elements close (host tensors of one shape, with elements). */
static int all_close(const disp_tensor *a, const disp_tensor *b, double rtol, double atol, int equal_nan) {
  const char *da = disp_tensor_data_ptr(a), *db = disp_tensor_data_ptr(b);
  size_t ia = disp_dtype_itemsize(a->dtype), ib = disp_dtype_itemsize(b->dtype);
  int64_t idx[DISP_TENSOR_MAX_DIMS] = {0};
  for (int64_t n = 0; n < a->numel; n++) {
    int64_t oa = 0, ob = 0;
    for (int d = 0; d < a->ndim; d++) {
      oa += idx[d] * a->strides[d];
      ob += idx[d] * b->strides[d];
    }
    if (!close_enough(da + oa * (int64_t)ia, a->dtype, db + ob * (int64_t)ib, b->dtype, rtol, atol, equal_nan)) {
      return 0;
    }
    for (int d = a->ndim - 1; d >= 0; d--) {
      if (++idx[d] < a->sizes[d]) break;
      idx[d] = 0;
    }
  }
  return 1;
}

disp_status disp_tensor_allclose(const disp_tensor *a, const disp_tensor *b, double rtol, double atol, int equal_nan,
                                 int *out) {
  DISP_REFUSE_NULL(a);
  DISP_REFUSE_NULL(b);
  DISP_REFUSE_NULL(out);
  if (!a->has_strides || !b->has_strides)
    return disp__fail(DISP_ERR_INVALID_ARG, "allclose: tensors without strides are not supported");
  if (!(rtol >= 0) || !(atol >= 0))
    return disp__fail(DISP_ERR_INVALID_ARG, "allclose: rtol and atol must be non-negative");
  if (a->ndim != b->ndim || memcmp(a->sizes, b->sizes, (size_t)a->ndim * sizeof(int64_t))) {
    *out = 0;
    return DISP_OK;
  }
  if (a->numel == 0) {
    *out = 1;
    return DISP_OK;
  }
  if (!disp_tensor_data_ptr(a) || !disp_tensor_data_ptr(b))
    return disp__fail(DISP_ERR_INVALID_ARG, "allclose: tensors have no data (meta tensors?)");
  disp_tensor *ha = NULL, *hb = NULL;
  disp_status s = disp__tensor_host_view("allclose", a, &ha);
  if (s == DISP_OK) s = disp__tensor_host_view("allclose", b, &hb);
  if (s == DISP_OK) *out = all_close(ha, hb, rtol, atol, equal_nan);
  disp_tensor_release(ha);
  disp_tensor_release(hb);
  return s;
}
