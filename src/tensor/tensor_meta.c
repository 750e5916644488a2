/*
 * tensor_meta.c - the public setters a backend's metadata kernels use
 * (resize_, set_, _copy_from_and_resize; disp/backend.h), and the built-in
 * CPU and Meta kernels of those operators use too.
 *
 * Each validates the whole change before it touches the tensor, so a refused
 * call leaves it as it was. Views of the same storage follow a resize
 * because a tensor's data pointer is always read through its storage
 * (disp_tensor_data_ptr), never cached.
 */
#include <string.h>

#include "disp/backend.h"
#include "argcheck_internal.h"
#include "device_internal.h"
#include "tensor_internal.h"

/* The shape is valid and, from `offset`, within `st` (PyTorch's
 * checkInBoundsForStorage through a probe: the constructor's checks). */
static disp_status check_geometry(disp_storage *st, int64_t offset, const int64_t *sizes, const int64_t *strides,
                                  int ndim, const disp_tensor *t) {
  disp_tensor *probe = NULL;
  disp_status s = disp_tensor_new_with_storage(st, offset, sizes, strides, ndim, t->dtype, t->keyset, &probe);
  disp_tensor_release(probe);
  return s;
}

static disp_status refuse_opaque(const char *fn, const disp_tensor *t) {
  if (t->storage) return DISP_OK;
  return disp__fail(DISP_ERR_INVALID_ARG, "%s: tensor has no storage (opaque tensor)", fn);
}

disp_status disp_tensor_set_sizes_strides(disp_tensor *t, const int64_t *sizes, const int64_t *strides, int ndim,
                                          int64_t storage_offset) {
  DISP_REFUSE_NULL(t);
  DISP_REFUSE_NULL_ARRAY(sizes, ndim);
  disp_status s = refuse_opaque("set_sizes_and_strides", t);
  if (s == DISP_OK) s = check_geometry(t->storage, storage_offset, sizes, strides, ndim, t);
  if (s == DISP_OK) s = disp__tensor_set_sizes_strides(t, sizes, strides, ndim);
  if (s == DISP_OK) t->storage_offset = storage_offset;
  return s;
}

/* Type and index (1.13 compares whole devices): a storage on npu:1 under a
 * tensor on npu:0 would send its kernels to the wrong device. */
static disp_status check_same_device(const disp_tensor *t, const disp_storage *st) {
  if (st->device.type == t->device.type &&
      (st->device.index == t->device.index || disp__device_is_host(t->device.type)))
    return DISP_OK;
  char a[48], b[48];
  disp_device_format(t->device, a, sizeof a);
  disp_device_format(st->device, b, sizeof b);
  return disp__fail(DISP_ERR_INVALID_ARG,
                    "Attempted to set the storage of a tensor on device \"%s\" to a storage on different device "
                    "\"%s\".  This is no longer allowed; the devices must match.",
                    a, b);
}

disp_status disp_tensor_set_storage(disp_tensor *t, disp_storage *st, int64_t storage_offset, const int64_t *sizes,
                                    const int64_t *strides, int ndim) {
  DISP_REFUSE_NULL(t);
  DISP_REFUSE_NULL(st);
  DISP_REFUSE_NULL_ARRAY(sizes, ndim);
  disp_status s = refuse_opaque("set_", t);
  if (s == DISP_OK) s = check_same_device(t, st);
  if (s == DISP_OK) s = check_geometry(st, storage_offset, sizes, strides, ndim, t);
  if (s == DISP_OK) s = disp__tensor_set_sizes_strides(t, sizes, strides, ndim);
  if (s != DISP_OK) return s;
  disp_storage *old = t->storage;
  t->storage = disp_storage_retain(st);
  disp_storage_release(old);
  t->storage_offset = storage_offset;
  return DISP_OK;
}

disp_status disp_tensor_resize(disp_tensor *t, const int64_t *sizes, const int64_t *strides, int ndim) {
  DISP_REFUSE_NULL(t);
  DISP_REFUSE_NULL_ARRAY(sizes, ndim);
  disp_status s = refuse_opaque("resize_", t);
  if (s == DISP_OK) s = disp__tensor_check_shape("resize_", sizes, strides, ndim, NULL);
  if (s != DISP_OK) return s;
  int64_t contiguous[DISP_TENSOR_MAX_DIMS];
  if (!strides) {
    disp__tensor_contiguous_strides(sizes, ndim, contiguous);
    strides = contiguous;
  }
  size_t need;
  s = disp__tensor_storage_nbytes(sizes, strides, ndim, t->storage_offset, disp_dtype_itemsize(t->dtype), &need);
  /* Grow only (PyTorch's maybe_resize_storage_cpu): a smaller tensor keeps
   * its memory for the views that may still reach it. */
  if (s == DISP_OK && need > t->storage->nbytes) s = disp__storage_resize(t->storage, need);
  if (s == DISP_OK) s = disp__tensor_set_sizes_strides(t, sizes, strides, ndim);
  return s;
}
