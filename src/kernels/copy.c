/*
 * copy.c - copies and conversions (copy_, _to_copy, to, clone,
 * contiguous), fills (fill_, zero_), scalars out of tensors (item,
 * _local_scalar_dense) and the operators that change a tensor's own
 * geometry or storage (resize_, set_).
 *
 * _copy_from and _copy_from_and_resize have no kernel here, as in PyTorch:
 * copy_ calls _copy_from when a tensor lives on a backend other than the
 * CPU (and Meta), and that backend implements it.
 */
#include <stdio.h>
#include <string.h>

#include "aten_internal.h"
#include "aten_kernels.h"
#include "disp/aten.h"
#include "disp/backend.h"
#include "tensor/device_internal.h"
#include "tensor/dtype_cast.h"
#include "elementwise_copy.h"
#include "strbuf_internal.h"
#include "tensor/checked_math_internal.h"

static int host_device(disp_backend b) { return b == DISP_BACKEND_CPU || b == DISP_BACKEND_META; }

static void format_list(char *buf, size_t n, const int64_t *v, int len) {
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__format_int_list(&b, v, len);
  snprintf(buf, n, "%s", disp__strbuf_cstr(&b));
  disp__strbuf_free(&b);
}

/* Byte range [lo, hi) a strided tensor touches; empty when it has no elements. */
static void mem_range(const disp_tensor *t, uintptr_t *lo, uintptr_t *hi) {
  uintptr_t base = (uintptr_t)disp__storage_data(disp__t_storage(t)) +
                   (uintptr_t)disp__t_offset(t) * disp_dtype_itemsize(disp__t_dtype(t));
  uintptr_t ext = 0;
  for (int d = 0; d < disp__t_ndim(t); d++) ext += (uintptr_t)((disp__t_size(t, d) - 1) * disp__t_stride(t, d));
  *lo = base;
  *hi = disp__t_numel(t) == 0 ? base : base + (ext + 1) * disp_dtype_itemsize(disp__t_dtype(t));
}

static const char overlap_msg[] =
    "unsupported operation: more than one element of the written-to tensor refers to a single memory location. "
    "Please clone() the tensor before performing the operation.";

/* ---- copy_ -------------------------------------------------------------- */

/* src's strides broadcast to self's shape (0 on broadcast dims), or an error
 * worded as TensorIterator words it. */
static disp_status broadcast_src(const disp_tensor *self, const disp_tensor *src, int64_t *strides) {
  int n = disp__t_ndim(self) > disp__t_ndim(src) ? disp__t_ndim(self) : disp__t_ndim(src);
  int64_t shape[DISP_TENSOR_MAX_DIMS];
  for (int i = n - 1; i >= 0; i--) {
    int a = i - (n - disp__t_ndim(self)), b = i - (n - disp__t_ndim(src));
    int64_t sa = a >= 0 ? disp__t_size(self, a) : 1, sb = b >= 0 ? disp__t_size(src, b) : 1;
    if (sa != sb && sa != 1 && sb != 1)
      return disp_set_error(DISP_ERR_INVALID_ARG,
                            "The size of tensor a (%lld) must match the size of tensor b (%lld) at non-singleton "
                            "dimension %d",
                            (long long)sa, (long long)sb, i);
    shape[i] = sa == 1 ? sb : sa;
  }
  if (n != disp__t_ndim(self) || memcmp(shape, disp__t_sizes(self), (size_t)n * sizeof *shape)) {
    char a[512], b[512];
    format_list(a, sizeof a, disp__t_sizes(self), disp__t_ndim(self));
    format_list(b, sizeof b, shape, n);
    return disp_set_error(DISP_ERR_INVALID_ARG, "output with shape %s doesn't match the broadcast shape %s", a, b);
  }
  for (int i = 0; i < disp__t_ndim(self); i++) {
    int b = i - (disp__t_ndim(self) - disp__t_ndim(src));
    strides[i] = b >= 0 && disp__t_size(src, b) != 1 ? disp__t_stride(src, b) : 0;
  }
  return DISP_OK;
}

disp_status disp__cea_copy_(disp_tensor *self, disp_tensor *src, bool non_blocking, disp_tensor **out0) {
  if (self == src) {
    *out0 = disp_tensor_retain(self);
    return DISP_OK;
  }
  if (!host_device(disp__t_device_type(self)) || !host_device(disp__t_device_type(src))) {
    /* the other backend copies (PyTorch: src._copy_from(self)) */
    disp_tensor *r = NULL;
    disp_status st = disp_aten__copy_from(src, self, non_blocking, &r);
    disp_tensor_release(r);
    if (st != DISP_OK) return st;
    *out0 = disp_tensor_retain(self);
    return DISP_OK;
  }
  if (!disp__t_has_strides(self) || !disp__t_has_strides(src))
    return disp_set_error(DISP_ERR_INVALID_ARG, "copy_: tensors without strides are not supported");
  int64_t sstrides[DISP_TENSOR_MAX_DIMS];
  disp_status st = broadcast_src(self, src, sstrides);
  if (st != DISP_OK) return st;
  if (disp__t_numel(self) == 0) {
    *out0 = disp_tensor_retain(self);
    return DISP_OK;
  }
  /* checked on Meta too, so Meta agrees with the CPU on what fails */
  if (disp__ew_has_internal_overlap(disp__t_sizes(self), disp__t_strides(self), disp__t_ndim(self)))
    return disp_set_error(DISP_ERR_INVALID_ARG, "%s", overlap_msg);
  if (disp__t_device_type(self) == DISP_BACKEND_META) { /* nothing to write */
    *out0 = disp_tensor_retain(self);
    return DISP_OK;
  }
  if (disp__t_device_type(src) == DISP_BACKEND_META)
    return disp_set_error(DISP_ERR_INVALID_ARG, "Cannot copy out of meta tensor; no data!");
  if (disp__t_storage(self) == disp__t_storage(src)) {
    uintptr_t a0, a1, b0, b1;
    mem_range(self, &a0, &a1);
    mem_range(src, &b0, &b1);
    int same = disp__t_offset(self) == disp__t_offset(src) && disp__t_ndim(self) == disp__t_ndim(src) &&
               disp__t_dtype(self) == disp__t_dtype(src) &&
               !memcmp(disp__t_sizes(self), disp__t_sizes(src), (size_t)disp__t_ndim(self) * sizeof(int64_t)) &&
               !memcmp(disp__t_strides(self), disp__t_strides(src), (size_t)disp__t_ndim(self) * sizeof(int64_t));
    if (same) {
      *out0 = disp_tensor_retain(self);
      return DISP_OK;
    }
    if (a0 < b1 && b0 < a1)
      return disp_set_error(DISP_ERR_INVALID_ARG,
                            "unsupported operation: some elements of the input tensor and the written-to tensor "
                            "refer to a single memory location. Please clone() the tensor before performing the "
                            "operation.");
  }
  disp__ew_copy_strided(disp_tensor_data_ptr(self), disp__t_strides(self), disp__t_dtype(self),
                        disp_tensor_data_ptr(src), sstrides, disp__t_dtype(src), disp__t_sizes(self),
                        disp__t_ndim(self));
  *out0 = disp_tensor_retain(self);
  return DISP_OK;
}

/* ---- fresh copies --------------------------------------------------------- */

/* r = fresh tensor (already made), r.copy_(self); returns r or fails with nothing held. */
static disp_status copy_into_fresh(disp_tensor *r, disp_tensor *self, bool non_blocking, disp_tensor **out) {
  disp_tensor *tmp = NULL;
  disp_status st = disp_aten_copy_(r, self, non_blocking, &tmp);
  disp_tensor_release(tmp);
  if (st != DISP_OK) {
    disp_tensor_release(r);
    return st;
  }
  *out = r;
  return DISP_OK;
}

disp_status disp__cea__to_copy(disp_tensor *self, int32_t dtype, int32_t layout, disp_opt_device device,
                               disp_opt_bool pin_memory, bool non_blocking, int32_t memory_format, disp_tensor **out0) {
  if (dtype < 0) dtype = disp__t_dtype(self);
  if (!device.has_value) {
    device.type = disp__t_device_type(self);
    device.index = disp__t_device_index(self);
    device.has_value = true;
  }
  if (memory_format < 0) memory_format = DISP_MEMORY_FORMAT_PRESERVE;
  disp_int_list size = {disp__t_sizes(self), (size_t)disp__t_ndim(self)};
  disp_tensor *r;
  disp_status st;
  if (memory_format == DISP_MEMORY_FORMAT_PRESERVE) {
    if (disp__ew_is_non_overlapping_and_dense(disp__t_sizes(self), disp__t_strides(self), disp__t_ndim(self))) {
      disp_int_list stride = {disp__t_strides(self), (size_t)disp__t_ndim(self)};
      st = disp_aten_empty_strided(size, stride, dtype, layout, device, pin_memory, &r);
      if (st != DISP_OK) return st;
      return copy_into_fresh(r, self, non_blocking, out0);
    }
    memory_format = disp__ew_suggest_memory_format(disp__t_sizes(self), disp__t_strides(self), disp__t_ndim(self));
  }
  st = disp_aten_empty_memory_format(size, dtype, layout, device, pin_memory, memory_format, &r);
  if (st != DISP_OK) return st;
  return copy_into_fresh(r, self, non_blocking, out0);
}

/* PyTorch's to_will_alias + to_impl. */
static disp_status to_impl(disp_tensor *self, int32_t dtype, disp_opt_device device, bool non_blocking, bool copy,
                           int32_t memory_format, disp_tensor **out) {
  int mf = memory_format < 0 ? DISP_MEMORY_FORMAT_PRESERVE : memory_format;
  int same_device = !device.has_value ||
                    (device.type == (int32_t)disp__t_device_type(self) && device.index == disp__t_device_index(self));
  if (!copy && (dtype < 0 || dtype == (int32_t)disp__t_dtype(self)) && same_device &&
      (mf == DISP_MEMORY_FORMAT_PRESERVE ||
       disp__ew_suggest_memory_format(disp__t_sizes(self), disp__t_strides(self), disp__t_ndim(self)) == mf)) {
    *out = disp_tensor_retain(self);
    return DISP_OK;
  }
  disp_opt_bool no_pin = {false, false};
  return disp_aten__to_copy(self, dtype, -1, device, no_pin, non_blocking, memory_format, out);
}

disp_status disp__cia_to_dtype(disp_tensor *self, int32_t dtype, bool non_blocking, bool copy, int32_t memory_format,
                               disp_tensor **out0) {
  disp_opt_device none = {0, 0, false};
  return to_impl(self, dtype, none, non_blocking, copy, memory_format, out0);
}

disp_status disp__cia_to_device(disp_tensor *self, disp_opt_device device, int32_t dtype, bool non_blocking, bool copy,
                                int32_t memory_format, disp_tensor **out0) {
  return to_impl(self, dtype, device, non_blocking, copy, memory_format, out0);
}

disp_status disp__cea_clone(disp_tensor *self, int32_t memory_format, disp_tensor **out0) {
  disp_opt_device none = {0, 0, false};
  disp_opt_bool no_pin = {false, false};
  disp_tensor *r;
  disp_status st = disp_aten_empty_like(self, -1, -1, none, no_pin, memory_format, &r);
  if (st != DISP_OK) return st;
  return copy_into_fresh(r, self, false, out0);
}

disp_status disp__cia_contiguous(disp_tensor *self, int32_t memory_format, disp_tensor **out0) {
  if (memory_format < 0) memory_format = DISP_MEMORY_FORMAT_CONTIGUOUS;
  /* 1.13 asks is_contiguous(memory_format) first, which reads preserve as
   * the plain format: an already contiguous tensor comes back even then. */
  int test = memory_format == DISP_MEMORY_FORMAT_PRESERVE ? DISP_MEMORY_FORMAT_CONTIGUOUS : memory_format;
  if (disp__ew_is_contiguous_as(disp__t_sizes(self), disp__t_strides(self), disp__t_ndim(self), test)) {
    *out0 = disp_tensor_retain(self);
    return DISP_OK;
  }
  if (memory_format == DISP_MEMORY_FORMAT_PRESERVE)
    return disp_set_error(DISP_ERR_INVALID_ARG, "preserve memory format is unsupported by the contiguous operator");
  return disp_aten_clone(self, memory_format, out0);
}

/* ---- fill_, zero_ --------------------------------------------------------- */

static disp_status fill_impl(disp_tensor *self, disp_scalar value, int write, disp_tensor **out) {
  uint64_t elem[2] = {0, 0};
  disp_status st = disp__ew_scalar_to_elem(value, disp__t_dtype(self), elem);
  if (st != DISP_OK) return st;
  if (write && disp__t_numel(self) > 0) {
    /* stride-0 (expanded) tensors are filled too: every alias gets the value */
    int64_t zeros[DISP_TENSOR_MAX_DIMS] = {0};
    disp__ew_copy_strided(disp_tensor_data_ptr(self), disp__t_strides(self), disp__t_dtype(self), elem, zeros,
                          disp__t_dtype(self), disp__t_sizes(self), disp__t_ndim(self));
  }
  *out = disp_tensor_retain(self);
  return DISP_OK;
}

disp_status disp__cpu_fill__Scalar(disp_tensor *self, disp_scalar value, disp_tensor **out0) {
  return fill_impl(self, value, 1, out0);
}

disp_status disp__meta_fill__Scalar(disp_tensor *self, disp_scalar value, disp_tensor **out0) {
  return fill_impl(self, value, 0, out0);
}

disp_status disp__cpu_zero_(disp_tensor *self, disp_tensor **out0) {
  return fill_impl(self, disp_scalar_int(0), 1, out0);
}

disp_status disp__meta_zero_(disp_tensor *self, disp_tensor **out0) {
  return fill_impl(self, disp_scalar_int(0), 0, out0);
}

/* ---- item, _local_scalar_dense ------------------------------------------- */

disp_status disp__cpu__local_scalar_dense(disp_tensor *self, disp_scalar *out0) {
  /* 1.13 does not check the count; reading no element would be out of bounds */
  if (disp__t_numel(self) == 0)
    return disp_set_error(DISP_ERR_INVALID_ARG, "a Tensor with 0 elements cannot be converted to Scalar");
  const void *p = disp_tensor_data_ptr(self);
  if (!p) return disp_set_error(DISP_ERR_INVALID_ARG, "_local_scalar_dense: tensor has no data");
  if (disp__t_dtype(self) == DISP_DTYPE_BOOL)
    *out0 = disp_scalar_bool(*(const uint8_t *)p != 0);
  else if (disp_dtype_is_floating(disp__t_dtype(self)))
    *out0 = disp_scalar_double(disp__load_double(p, disp__t_dtype(self)));
  else
    *out0 = disp_scalar_int(disp__load_int64(p, disp__t_dtype(self)));
  return DISP_OK;
}

/* A device whose hooks can copy to the host: item() reads its element
 * through them, never dereferencing device memory. */
static int readable_through_hooks(const disp_tensor *t) {
  if (host_device(disp__t_device_type(t)) || !disp__t_storage(t)) return 0;
  const disp_device_hooks *h = disp_device_hooks_get(disp__t_device_type(t));
  return h && h->copy_d2h;
}

disp_status disp__cia_item(disp_tensor *self, disp_scalar *out0) {
  if (disp__t_numel(self) != 1)
    return disp_set_error(DISP_ERR_INVALID_ARG, "a Tensor with %lld elements cannot be converted to Scalar",
                          (long long)disp__t_numel(self));
  /* Without a copy hook the backend's own _local_scalar_dense decides. */
  if (!readable_through_hooks(self)) return disp_aten__local_scalar_dense(self, out0);
  disp_tensor *h;
  disp_status st = disp__tensor_host_view("item", self, &h);
  if (st != DISP_OK) return st;
  st = disp__cpu__local_scalar_dense(h, out0);
  disp_tensor_release(h);
  return st;
}

/* ---- resize_, set_ ----------------------------------------------------------- */

static disp_status resize_impl(disp_tensor *self, disp_int_list size, int32_t memory_format, disp_tensor **out) {
  int n = 0;
  disp_status st = disp__check_ndim("resize_", size.len, &n);
  if (st != DISP_OK) return st;
  int64_t strides[DISP_TENSOR_MAX_DIMS];
  if (memory_format == DISP_MEMORY_FORMAT_PRESERVE)
    return disp_set_error(DISP_ERR_INVALID_ARG, "Unsupported memory formatPreserve");
  if (memory_format >= 0) {
    st = disp__tensor_check_shape("resize_", size.data, NULL, n, NULL);
    if (st == DISP_OK) st = disp__ew_strides_for_format(size.data, n, memory_format, strides);
  } else if (n == disp__t_ndim(self) && !memcmp(size.data, disp__t_sizes(self), (size_t)n * sizeof(int64_t)) &&
             disp__t_storage(self)) {
    *out = disp_tensor_retain(self);
    return DISP_OK;
  }
  if (st == DISP_OK) st = disp_tensor_resize(self, size.data, memory_format >= 0 ? strides : NULL, n);
  if (st != DISP_OK) return st;
  *out = disp_tensor_retain(self);
  return DISP_OK;
}

disp_status disp__cpu_resize_(disp_tensor *self, disp_int_list size, int32_t memory_format, disp_tensor **out0) {
  return resize_impl(self, size, memory_format, out0);
}


/* self now views `source` at offset with sizes/strides (strides NULL: contiguous). */
static disp_status set_storage(disp_tensor *self, disp_storage *source, int64_t offset, const int64_t *sizes,
                               const int64_t *strides, int ndim, disp_tensor **out) {
  if (!source) return disp_set_error(DISP_ERR_INVALID_ARG, "set_: source storage is undefined");
  if (offset < 0)
    return disp_set_error(DISP_ERR_INVALID_ARG, "Tensor: invalid storage offset %lld", (long long)offset);
  disp_status st = disp_tensor_set_storage(self, source, offset, sizes, strides, ndim);
  if (st == DISP_OK) *out = disp_tensor_retain(self);
  return st;
}

static disp_status set_tensor_impl(disp_tensor *self, disp_tensor *source, disp_tensor **out) {
  if (disp__t_dtype(self) != disp__t_dtype(source))
    return disp_set_error(DISP_ERR_INVALID_ARG, "Expected object of scalar type %s but got scalar type %s for argument 'source'",
                          disp_dtype_torch_name(disp__t_dtype(self)), disp_dtype_torch_name(disp__t_dtype(source)));
  if (self == source) {
    *out = disp_tensor_retain(self);
    return DISP_OK;
  }
  return set_storage(self, disp__t_storage(source), disp__t_offset(source), disp__t_sizes(source),
                     disp__t_strides(source), disp__t_ndim(source), out);
}

disp_status disp__cpu_set__source_Tensor(disp_tensor *self, disp_tensor *source, disp_tensor **out0) {
  return set_tensor_impl(self, source, out0);
}


static disp_status set_whole_storage(disp_tensor *self, disp_storage *source, disp_tensor **out) {
  if (!source) return disp_set_error(DISP_ERR_INVALID_ARG, "set_: source storage is undefined");
  int64_t n = (int64_t)(disp__storage_nbytes(source) / disp_dtype_itemsize(disp__t_dtype(self)));
  int64_t one = 1;
  return set_storage(self, source, 0, &n, &one, 1, out);
}

disp_status disp__cpu_set__source_Storage(disp_tensor *self, disp_storage *source, disp_tensor **out0) {
  return set_whole_storage(self, source, out0);
}


static disp_status set_geometry(disp_tensor *self, disp_storage *source, int64_t storage_offset, disp_int_list size,
                                disp_int_list stride, disp_tensor **out) {
  int n = 0;
  disp_status st = disp__check_ndim("set_", size.len, &n);
  if (st != DISP_OK) return st;
  if (stride.len != 0 && stride.len != size.len)
    return disp_set_error(DISP_ERR_INVALID_ARG, "mismatch in length of strides and shape");
  return set_storage(self, source, storage_offset, size.data, stride.len ? stride.data : NULL, n, out);
}

disp_status disp__cpu_set__source_Storage_storage_offset(disp_tensor *self, disp_storage *source,
                                                         int64_t storage_offset, disp_int_list size,
                                                         disp_int_list stride, disp_tensor **out0) {
  return set_geometry(self, source, storage_offset, size, stride, out0);
}

