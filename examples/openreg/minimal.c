/*
 * minimal.c - seed 003's minimum operator set for openreg: empty.memory_format,
 * empty_strided, the view family (as_strided, view, _reshape_alias), the
 * copies (_copy_from, _copy_from_and_resize), _local_scalar_dense, resize_
 * and the three set_ overloads.
 */
#include "openreg.h"

#include <disp/backend.h>

#include <string.h>

/* The device a factory makes its tensor on: the argument's index, else the
 * current openreg device. */
static disp_device factory_device(disp_opt_device d) {
  int index = d.has_value && d.index >= 0 ? d.index : or_current_device();
  return disp_device_make(DISP_BACKEND_PRIVATEUSE1, index);
}

/* Channels-last strides (N, C, H, W) -> C fastest, then W, H, N; the
 * same for 5-D with D. 0 when the rank does not fit the format. */
static int channels_last_strides(disp_int_list size, int32_t memory_format, int64_t *strides) {
  size_t want = memory_format == DISP_MEMORY_FORMAT_CHANNELS_LAST ? 4 : 5;
  if (size.len != want) return 0;
  int64_t s = 1;
  strides[1] = s, s *= size.data[1] > 1 ? size.data[1] : 1;
  for (size_t d = size.len - 1; d >= 2; d--) strides[d] = s, s *= size.data[d] > 1 ? size.data[d] : 1;
  strides[0] = s;
  return 1;
}

static disp_status or_empty(disp_int_list size, int32_t dtype, int32_t layout, disp_opt_device device,
                            disp_opt_bool pin_memory, int32_t memory_format, disp_tensor **out) {
  (void)pin_memory;
  if (layout > 0) return disp_set_error(DISP_ERR_INVALID_ARG, "openreg: empty: only strided tensors are supported");
  disp_dtype dt = dtype < 0 ? DISP_DTYPE_FLOAT32 : (disp_dtype)dtype;
  if (memory_format == DISP_MEMORY_FORMAT_CHANNELS_LAST || memory_format == DISP_MEMORY_FORMAT_CHANNELS_LAST_3D) {
    int64_t strides[5];
    if (!channels_last_strides(size, memory_format, strides))
      return disp_set_error(DISP_ERR_INVALID_ARG, "required rank %d tensor to use %s format",
                            memory_format == DISP_MEMORY_FORMAT_CHANNELS_LAST ? 4 : 5,
                            memory_format == DISP_MEMORY_FORMAT_CHANNELS_LAST ? "channels_last" : "channels_last_3d");
    return disp_tensor_empty_strided(size.data, strides, (int)size.len, dt, factory_device(device), out);
  }
  return disp_tensor_empty(size.data, (int)size.len, dt, factory_device(device), out);
}

static disp_status or_empty_strided(disp_int_list size, disp_int_list stride, int32_t dtype, int32_t layout,
                                    disp_opt_device device, disp_opt_bool pin_memory, disp_tensor **out) {
  (void)pin_memory;
  if (layout > 0) return disp_set_error(DISP_ERR_INVALID_ARG, "openreg: empty_strided: only strided tensors");
  if (size.len != stride.len) return disp_set_error(DISP_ERR_INVALID_ARG, "mismatch in length of strides and shape");
  disp_dtype dt = dtype < 0 ? DISP_DTYPE_FLOAT32 : (disp_dtype)dtype;
  return disp_tensor_empty_strided(size.data, stride.data, (int)size.len, dt, factory_device(device), out);
}

/* The view family only computes geometry and never reads data: the
 * library's CPU kernels do that for any device (PyTorch's openreg calls
 * at::native::view etc. the same way). */
static disp_status or_metadata(const disp_op *op, disp_keyset ks, disp_stack *stack, void *user_data) {
  (void)ks, (void)user_data;
  return disp_redispatch_boxed(op, disp_keyset_of(DISP_KEY_CPU), stack);
}

/* self -> dst, either side on openreg (the other on the CPU, or both here):
 * copy_ between CPU views of both. */
static disp_status or_copy_from(disp_tensor *self, disp_tensor *dst, bool non_blocking, disp_tensor **out) {
  (void)non_blocking;
  or_call c;
  if (or_begin(&c, (disp_tensor *[]){self, dst}, 2) == DISP_OK)
    c.st = disp_aten_copy_(c.in[1], c.in[0], false, &c.result);
  return or_end_inplace(&c, dst, out);
}

static disp_status or_local_scalar_dense(disp_tensor *self, disp_scalar *out) {
  or_call c;
  if (or_begin(&c, &self, 1) == DISP_OK) c.st = disp_aten__local_scalar_dense(c.in[0], out);
  return or_end_none(&c);
}

/* ---- the metadata kernels, with backend.h's setters ------------------ */

static disp_status or_resize_(disp_tensor *self, disp_int_list size, int32_t memory_format, disp_tensor **out) {
  if (memory_format > 0 && memory_format != DISP_MEMORY_FORMAT_CONTIGUOUS)
    return disp_set_error(DISP_ERR_INVALID_ARG, "openreg: resize_: only the contiguous memory format");
  /* as 1.13's resize_: the same sizes and no format asked keep the strides */
  int same = memory_format < 0 && (int)size.len == disp_tensor_ndim(self);
  for (size_t d = 0; same && d < size.len; d++) same = size.data[d] == disp_tensor_sizes(self)[d];
  if (same) {
    *out = disp_tensor_retain(self);
    return DISP_OK;
  }
  disp_status st = disp_tensor_resize(self, size.data, NULL, (int)size.len);
  if (st == DISP_OK) *out = disp_tensor_retain(self);
  return st;
}

static disp_status or_set_tensor(disp_tensor *self, disp_tensor *source, disp_tensor **out) {
  disp_status st = disp_tensor_set_storage(self, disp_tensor_storage(source), disp_tensor_storage_offset(source),
                                           disp_tensor_sizes(source), disp_tensor_strides(source),
                                           disp_tensor_ndim(source));
  if (st == DISP_OK) *out = disp_tensor_retain(self);
  return st;
}

static disp_status or_set_storage(disp_tensor *self, disp_storage *source, disp_tensor **out) {
  int64_t n = (int64_t)(disp_storage_nbytes(source) / disp_tensor_itemsize(self));
  disp_status st = disp_tensor_set_storage(self, source, 0, &n, NULL, 1);
  if (st == DISP_OK) *out = disp_tensor_retain(self);
  return st;
}

static disp_status or_set_storage_offset(disp_tensor *self, disp_storage *source, int64_t offset,
                                         disp_int_list size, disp_int_list stride, disp_tensor **out) {
  if (stride.len && stride.len != size.len)
    return disp_set_error(DISP_ERR_INVALID_ARG, "mismatch in length of strides and shape");
  disp_status st = disp_tensor_set_storage(self, source, offset, size.data, stride.len ? stride.data : NULL,
                                           (int)size.len);
  if (st == DISP_OK) *out = disp_tensor_retain(self);
  return st;
}

static disp_status or_copy_from_and_resize(disp_tensor *self, disp_tensor *dst, disp_tensor **out) {
  disp_status st = disp_tensor_resize(dst, disp_tensor_sizes(self), NULL, disp_tensor_ndim(self));
  return st == DISP_OK ? or_copy_from(self, dst, false, out) : st;
}


DISP_LIBRARY_IMPL(aten, PRIVATEUSE1, m) {
  DISP_IMPL_ATEN(m, empty_memory_format, or_empty);
  DISP_IMPL_ATEN(m, empty_strided, or_empty_strided);
  DISP_IMPL_ATEN(m, _copy_from, or_copy_from);
  DISP_IMPL_ATEN(m, _local_scalar_dense, or_local_scalar_dense);
  DISP_IMPL_ATEN(m, resize_, or_resize_);
  DISP_IMPL_ATEN(m, set__source_Tensor, or_set_tensor);
  DISP_IMPL_ATEN(m, set__source_Storage, or_set_storage);
  DISP_IMPL_ATEN(m, set__source_Storage_storage_offset, or_set_storage_offset);
  DISP_IMPL_ATEN(m, _copy_from_and_resize, or_copy_from_and_resize);
  const char *views[] = {"as_strided", "view", "_reshape_alias"};
  for (int i = 0; i < 3; i++) disp_library_impl(m, views[i], disp_kernel_boxed(or_metadata, NULL, NULL), NULL);
}
