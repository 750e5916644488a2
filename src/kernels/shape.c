/*
 * shape.c - cat and stack.
 *
 * cat has CPU and Meta kernels and, as in PyTorch, a
 * CompositeExplicitAutogradNonFunctional one for other backends: all three
 * share cat_plan (checks, result dtype, shape and memory format); the CPU
 * kernel copies directly, the composite through dispatched slice + copy_.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "aten_internal.h"
#include "aten_kernels.h"
#include "disp/aten.h"
#include "disp/promotion.h"
#include "elementwise_copy.h"
#include "strbuf_internal.h"
#include "tensor/checked_math_internal.h"
#include "views_internal.h"

typedef struct cat_plan {
  int64_t dim;
  int ndim;
  int64_t sizes[DISP_TENSOR_MAX_DIMS];
  int64_t strides[DISP_TENSOR_MAX_DIMS];
  disp_dtype dtype;
  disp_device device;
} cat_plan;

/* PyTorch's legacy rule: a 1-D tensor of size 0 is skipped whatever the shape. */
static int skipped(const disp_tensor *t) { return disp__t_ndim(t) == 1 && disp__t_size(t, 0) == 0; }

static disp_status cat_plan_make(disp_tensor_list tensors, int64_t dim, cat_plan *p) {
  if (tensors.len == 0) return disp_set_error(DISP_ERR_INVALID_ARG, "torch.cat(): expected a non-empty list of Tensors");
  for (size_t i = 0; i < tensors.len; i++) {
    if (!tensors.data[i]) return disp_set_error(DISP_ERR_INVALID_ARG, "torch.cat(): tensor %zu is undefined", i);
    if (disp__t_ndim(tensors.data[i]) == 0)
      return disp_set_error(DISP_ERR_INVALID_ARG, "zero-dimensional tensor (at position %zu) cannot be concatenated", i);
    if (!disp__t_has_strides(tensors.data[i]))
      return disp_set_error(DISP_ERR_INVALID_ARG, "torch.cat(): tensors without strides are not supported");
  }
  const disp_tensor *ref = NULL;
  size_t ref_i = 0;
  p->dtype = disp__t_dtype(tensors.data[0]);
  p->device = disp__t_device(tensors.data[0]);
  int format = -1;
  for (size_t i = 0; i < tensors.len; i++) {
    const disp_tensor *t = tensors.data[i];
    if (i > 0) {
      disp_status st = disp_promote_types(p->dtype, disp__t_dtype(t), &p->dtype);
      if (st != DISP_OK) return st;
    }
    if (disp__t_device_type(t) != p->device.type)
      return disp_set_error(DISP_ERR_INVALID_ARG,
                            "Expected all tensors to be on the same device, but found at least two devices, %s and %s!",
                            disp_device_type_name(p->device.type), disp_device_type_name(disp__t_device_type(t)));
    /* PyTorch's compute_output_memory_format */
    int f = disp__ew_suggest_memory_format(disp__t_sizes(t), disp__t_strides(t), disp__t_ndim(t));
    if (format < 0) format = f;
    else if (format != f && format != DISP_MEMORY_FORMAT_CONTIGUOUS) format = DISP_MEMORY_FORMAT_CONTIGUOUS;
    if (!ref && !skipped(t)) {
      ref = t;
      ref_i = i;
    }
  }
  if (!ref) { /* every input is a legacy empty tensor: the result is one too */
    p->dim = 0;
    p->ndim = 1;
    p->sizes[0] = 0;
    p->strides[0] = 1;
    return DISP_OK;
  }
  disp_status st = disp__views_wrap_dim(dim, disp__t_ndim(ref), &p->dim);
  if (st != DISP_OK) return st;
  p->ndim = disp__t_ndim(ref);
  memcpy(p->sizes, disp__t_sizes(ref), (size_t)disp__t_ndim(ref) * sizeof(int64_t));
  p->sizes[p->dim] = 0;
  for (size_t i = 0; i < tensors.len; i++) {
    const disp_tensor *t = tensors.data[i];
    if (skipped(t)) continue;
    if (disp__t_ndim(t) != disp__t_ndim(ref))
      return disp_set_error(DISP_ERR_INVALID_ARG, "Tensors must have same number of dimensions: got %d and %d",
                            disp__t_ndim(ref), disp__t_ndim(t));
    for (int d = 0; d < disp__t_ndim(ref); d++) {
      if (d == p->dim) continue;
      if (disp__t_size(t, d) != disp__t_size(ref, d))
        return disp_set_error(DISP_ERR_INVALID_ARG,
                              "Sizes of tensors must match except in dimension %lld. Expected size %lld but got size "
                              "%lld for tensor number %zu in the list.",
                              (long long)p->dim, (long long)disp__t_size(ref, d), (long long)disp__t_size(t, d), i);
    }
    if (disp__add_i64(p->sizes[p->dim], disp__t_size(t, p->dim), &p->sizes[p->dim]))
      return disp_set_error(DISP_ERR_INVALID_ARG,
                            "torch.cat(): the sum of the sizes in dimension %lld overflows int64 at tensor "
                            "number %zu in the list",
                            (long long)p->dim, i);
  }
  (void)ref_i;
  return disp__ew_strides_for_format(p->sizes, p->ndim, format, p->strides);
}

static disp_status cat_backend(disp_backend backend, disp_tensor_list tensors, int64_t dim, disp_tensor **out) {
  cat_plan p;
  disp_status st = cat_plan_make(tensors, dim, &p);
  if (st != DISP_OK) return st;
  disp_tensor *r;
  st = disp_tensor_empty_strided(p.sizes, p.strides, p.ndim, p.dtype, disp_device_make(backend, p.device.index), &r);
  if (st != DISP_OK) return st;
  if (backend == DISP_BACKEND_CPU) {
    char *base = disp_tensor_data_ptr(r);
    int64_t at = 0;
    for (size_t i = 0; i < tensors.len; i++) {
      const disp_tensor *t = tensors.data[i];
      if (skipped(t) || disp__t_numel(t) == 0) {
        if (!skipped(t)) at += disp__t_size(t, p.dim);
        continue;
      }
      char *dst = base + (size_t)(at * p.strides[p.dim]) * disp_dtype_itemsize(p.dtype);
      disp__ew_copy_strided(dst, p.strides, p.dtype, disp_tensor_data_ptr(t), disp__t_strides(t), disp__t_dtype(t),
                            disp__t_sizes(t), disp__t_ndim(t));
      at += disp__t_size(t, p.dim);
    }
  }
  *out = r;
  return DISP_OK;
}

disp_status disp__cpu_cat(disp_tensor_list tensors, int64_t dim, disp_tensor **out0) {
  return cat_backend(DISP_BACKEND_CPU, tensors, dim, out0);
}

disp_status disp__meta_cat(disp_tensor_list tensors, int64_t dim, disp_tensor **out0) {
  return cat_backend(DISP_BACKEND_META, tensors, dim, out0);
}

disp_status disp__ceanf_cat(disp_tensor_list tensors, int64_t dim, disp_tensor **out0) {
  cat_plan p;
  disp_status st = cat_plan_make(tensors, dim, &p);
  if (st != DISP_OK) return st;
  disp_int_list size = {p.sizes, (size_t)p.ndim}, stride = {p.strides, (size_t)p.ndim};
  disp_opt_device dev = {p.device.type, p.device.index, true};
  disp_opt_bool no_pin = {false, false};
  disp_tensor *r;
  st = disp_aten_empty_strided(size, stride, p.dtype, -1, dev, no_pin, &r);
  if (st != DISP_OK) return st;
  int64_t at = 0;
  for (size_t i = 0; i < tensors.len && st == DISP_OK; i++) {
    disp_tensor *t = tensors.data[i];
    if (skipped(t)) continue;
    disp_opt_int s = {at, true}, e = {at + disp__t_size(t, p.dim), true};
    disp_tensor *part, *tmp = NULL;
    st = disp_aten_slice_Tensor(r, p.dim, s, e, 1, &part);
    if (st != DISP_OK) break;
    st = disp_aten_copy_(part, t, false, &tmp);
    disp_tensor_release(tmp);
    disp_tensor_release(part);
    at = e.value;
  }
  if (st != DISP_OK) {
    disp_tensor_release(r);
    return st;
  }
  *out0 = r;
  return DISP_OK;
}

disp_status disp__cea_stack(disp_tensor_list tensors, int64_t dim, disp_tensor **out0) {
  if (tensors.len == 0) return disp_set_error(DISP_ERR_INVALID_ARG, "stack expects a non-empty TensorList");
  for (size_t i = 0; i < tensors.len; i++)
    if (!tensors.data[i]) return disp_set_error(DISP_ERR_INVALID_ARG, "stack: tensor %zu is undefined", i);
  const disp_tensor *first = tensors.data[0];
  for (size_t i = 1; i < tensors.len; i++) {
    const disp_tensor *t = tensors.data[i];
    if (disp__t_ndim(t) != disp__t_ndim(first) ||
        memcmp(disp__t_sizes(t), disp__t_sizes(first), (size_t)disp__t_ndim(t) * sizeof(int64_t))) {
      disp_strbuf a, b;
      disp__strbuf_init(&a);
      disp__strbuf_init(&b);
      disp__format_int_list(&a, disp__t_sizes(first), disp__t_ndim(first));
      disp__format_int_list(&b, disp__t_sizes(t), disp__t_ndim(t));
      disp_status st = disp_set_error(DISP_ERR_INVALID_ARG,
                                      "stack expects each tensor to be equal size, but got %s at entry 0 and %s at entry %zu",
                                      disp__strbuf_cstr(&a), disp__strbuf_cstr(&b), i);
      disp__strbuf_free(&a);
      disp__strbuf_free(&b);
      return st;
    }
  }
  int64_t d;
  disp_status st = disp__views_wrap_dim(dim, disp__t_ndim(first) + 1, &d);
  if (st != DISP_OK) return st;
  disp_tensor **parts = disp__calloc(tensors.len, sizeof *parts);
  if (!parts) return disp_set_error(DISP_ERR_NO_MEMORY, "stack: out of memory");
  for (size_t i = 0; i < tensors.len && st == DISP_OK; i++) st = disp_aten_unsqueeze(tensors.data[i], d, &parts[i]);
  if (st == DISP_OK) {
    disp_tensor_list l = {parts, tensors.len};
    st = disp_aten_cat(l, d, out0);
  }
  for (size_t i = 0; i < tensors.len; i++) disp_tensor_release(parts[i]);
  disp__free(parts);
  return st;
}
