/*
 * device_copy.c - moving bytes between devices through the hooks, and the
 * host copies that printing, comparing and item() read instead of device
 * memory (the library never dereferences a backend's pointer).
 */
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "argcheck_internal.h"
#include "device_internal.h"
#include "tensor_internal.h"

static const char *const direction_names[] = {"host-to-device", "device-to-host", "device-to-device"};

static disp_status missing_hook(disp_device dev, int direction) {
  char d[48];
  disp_device_format(dev, d, sizeof d);
  return disp__fail(DISP_ERR_INVALID_ARG, "no %s copy hook registered for device type %s (copying with %s)",
                    direction_names[direction], disp_device_type_name(dev.type), d);
}

static disp_status check_copy_devices(disp_device dst_dev, disp_device src_dev, size_t nbytes) {
  /* No storage is larger (storage.c's check_nbytes): a larger count is a
   * mistake that would run past both buffers. */
  if (nbytes > (uint64_t)INT64_MAX)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_device_copy: nbytes %zu is larger than the largest storage", nbytes);
  disp_status s = disp_device_validate(dst_dev);
  if (s == DISP_OK) s = disp_device_validate(src_dev);
  if (s != DISP_OK || nbytes == 0) return s;
  if (dst_dev.type == DISP_BACKEND_META || src_dev.type == DISP_BACKEND_META)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_device_copy: meta tensors have no memory to copy");
  if (dst_dev.type != DISP_BACKEND_CPU && src_dev.type != DISP_BACKEND_CPU && dst_dev.type != src_dev.type) {
    char a[48], b[48];
    disp_device_format(src_dev, a, sizeof a);
    disp_device_format(dst_dev, b, sizeof b);
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "disp_device_copy: copying from %s to %s needs a copy through the CPU (two device types)", a,
                      b);
  }
  return DISP_OK;
}

disp_status disp_device_copy(void *dst, disp_device dst_dev, const void *src, disp_device src_dev, size_t nbytes) {
  DISP_REFUSE_NULL_ARRAY(dst, nbytes);
  DISP_REFUSE_NULL_ARRAY(src, nbytes);
  disp_status s = check_copy_devices(dst_dev, src_dev, nbytes);
  if (s != DISP_OK || nbytes == 0) return s;
  int dst_host = dst_dev.type == DISP_BACKEND_CPU, src_host = src_dev.type == DISP_BACKEND_CPU;
  if (dst_host && src_host) {
    memmove(dst, src, nbytes);
    return DISP_OK;
  }
  disp_device dev = dst_host ? src_dev : dst_dev;
  int direction = src_host ? 0 : dst_host ? 1 : 2;
  const disp_device_hooks *h;
  s = disp__device_hooks_lookup(dev.type, &h);
  if (s != DISP_OK) return s;
  if ((direction == 0 && !h->copy_h2d) || (direction == 1 && !h->copy_d2h) || (direction == 2 && !h->copy_d2d))
    return missing_hook(dev, direction);
  uint64_t seq = disp__error_seq;
  if (direction == 0) s = h->copy_h2d(dst, dst_dev, src, nbytes, h->ctx);
  else if (direction == 1) s = h->copy_d2h(dst, src, src_dev, nbytes, h->ctx);
  else s = h->copy_d2d(dst, dst_dev, src, src_dev, nbytes, h->ctx);
  return s == DISP_OK ? s : disp__device_hook_failed(s, direction == 0 ? "copy_h2d" : direction == 1 ? "copy_d2h" : "copy_d2d", dev, seq);
}

/* ---- host views --------------------------------------------------------- */

static void free_host_copy(void *data, void *ctx) {
  (void)ctx;
  disp__free(data);
}

/* Bytes from t's first element to one past its last (it has elements). */
static size_t span_bytes(const disp_tensor *t) {
  int64_t last = 0;
  for (int d = 0; d < t->ndim; d++) last += (t->sizes[d] - 1) * t->strides[d];
  return (size_t)(last + 1) * disp_dtype_itemsize(t->dtype);
}

disp_status disp__tensor_host_view(const char *fn, const disp_tensor *t, disp_tensor **out) {
  if (t->device.type == DISP_BACKEND_CPU || t->numel == 0 || !t->storage) {
    *out = disp_tensor_retain((disp_tensor *)t);
    return DISP_OK;
  }
  const disp_device_hooks *h = disp_device_hooks_get(t->device.type);
  if (!h || !h->copy_d2h) {
    char d[48];
    disp_device_format(t->device, d, sizeof d);
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "%s: cannot read %s memory on the host: no device-to-host copy hook registered for device "
                      "type %s",
                      fn, d, disp_device_type_name(t->device.type));
  }
  size_t n = span_bytes(t);
  void *buf = disp__malloc(n);
  if (!buf) return disp__fail(DISP_ERR_NO_MEMORY, "%s: out of memory copying a tensor to the host", fn);
  disp_status s = disp_device_copy(buf, disp_device_make(DISP_BACKEND_CPU, -1), disp_tensor_data_ptr(t), t->device, n);
  disp_storage *st = NULL;
  if (s == DISP_OK) s = disp_storage_new_with_data(buf, n, disp_device_make(DISP_BACKEND_CPU, -1), free_host_copy, NULL, &st);
  if (s != DISP_OK) {
    disp__free(buf);
    disp__error_prefix("%s: ", fn);
    return s;
  }
  s = disp_tensor_new_with_storage(st, 0, t->sizes, t->strides, t->ndim, t->dtype, disp_keyset_empty(), out);
  disp_storage_release(st);
  return s;
}
