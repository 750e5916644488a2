/*
 * device.c - openreg's device hooks and allocator: two devices, a current
 * device per thread, copies that open device memory only for their memcpy.
 */
#include "openreg.h"

#include <string.h>

#include <disp/backend.h>

static _Thread_local int t_current;

int or_current_device(void) { return t_current; }

static int count(void *ctx) {
  (void)ctx;
  return OR_NUM_DEVICES;
}

static int get_device(void *ctx) {
  (void)ctx;
  return t_current;
}

static disp_status set_device(int index, void *ctx) {
  (void)ctx;
  if (index < 0 || index >= OR_NUM_DEVICES)
    return disp_set_error(DISP_ERR_INVALID_ARG, "openreg: no device %d (there are %d)", index, OR_NUM_DEVICES);
  t_current = index;
  return DISP_OK;
}

/* Every copy is a memcpy with device memory open: the emulated device has
 * no queue, so synchronize has nothing to wait for (NULL hook). */
static void open_copy(void *dst, const void *src, size_t nbytes) {
  or_enter();
  memcpy(dst, src, nbytes);
  or_leave();
}

static disp_status h2d(void *dst, disp_device dd, const void *src, size_t n, void *ctx) {
  (void)dd, (void)ctx;
  open_copy(dst, src, n);
  return DISP_OK;
}

static disp_status d2h(void *dst, const void *src, disp_device sd, size_t n, void *ctx) {
  (void)sd, (void)ctx;
  open_copy(dst, src, n);
  return DISP_OK;
}

static disp_status d2d(void *dst, disp_device dd, const void *src, disp_device sd, size_t n, void *ctx) {
  (void)dd, (void)sd, (void)ctx;
  open_copy(dst, src, n);
  return DISP_OK;
}

static void alloc_copy(void *dst, const void *src, size_t n, disp_device dev, void *ctx) {
  (void)dev, (void)ctx;
  open_copy(dst, src, n);
}

const disp_device_hooks or_hooks = {count, get_device, set_device, NULL, h2d, d2h, d2d, NULL};
const disp_allocator or_allocator = {or_alloc, or_free, NULL, alloc_copy};
