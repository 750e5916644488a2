/*
 * device_hooks.c - the device hooks of each device type (Note [Device
 * hooks] in disp/backend.h): registry, device count, current device and its
 * guard, synchronize.
 *
 * Published like the allocators (Note [Published per-type values] in
 * published_internal.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "disp/backend.h"
#include "argcheck_internal.h"
#include "device_internal.h"
#include "published_internal.h"
#include "tensor_internal.h"

/* Note [Published per-type values]; no built-in hooks (CPU and Meta have
 * theirs in code). */
static disp__published hooks = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .size = sizeof(disp_device_hooks),
};

static disp_status check_hooks(disp_backend type, const disp_device_hooks *h) {
  const char *missing = !h->device_count ? "device_count"
                        : !h->get_device ? "get_device"
                        : !h->set_device ? "set_device"
                                         : NULL;
  if (!missing) return DISP_OK;
  return disp__fail(DISP_ERR_INVALID_ARG, "disp_device_hooks_register: the hooks of %s need %s",
                    disp_device_type_name(type), missing);
}

disp_status disp_device_hooks_register(disp_backend type, const disp_device_hooks *h) {
  if (!disp__device_type_valid(type))
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_device_hooks_register: invalid device type %d", (int)type);
  if (disp__device_is_host(type))
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_device_hooks_register: the %s device hooks are built in",
                      disp_device_type_name(type));
  disp_status s = h ? check_hooks(type, h) : DISP_OK;
  if (s != DISP_OK) return s;
  return disp__published_set(&hooks, type, h, "device hooks");
}

const disp_device_hooks *disp_device_hooks_get(disp_backend type) {
  if (!disp__device_type_valid(type)) {
    disp__fail(DISP_ERR_INVALID_ARG, "disp_device_hooks_get: invalid device type %d", (int)type);
    return NULL;
  }
  return disp__published_get(&hooks, type);
}

disp_status disp__device_hooks_lookup(disp_backend type, const disp_device_hooks **out) {
  const disp_device_hooks *h = disp_device_hooks_get(type);
  if (h) {
    *out = h;
    return DISP_OK;
  }
  if (!disp__device_type_valid(type)) return DISP_ERR_INVALID_ARG; /* message set by get */
  return disp__fail(DISP_ERR_INVALID_ARG,
                    "no device hooks registered for device type %s (disp_device_hooks_register)",
                    disp_device_type_name(type));
}

/* A hook failed: keep its own message, else word one (also when the hook
 * cleared the message or set an empty one). */
disp_status disp__device_hook_failed(disp_status s, const char *hook, disp_device dev, uint64_t seq) {
  if (s == DISP_OK) s = DISP_ERR_KERNEL;
  if (disp__error_seq != seq && disp_last_error()[0]) return s;
  char d[48];
  disp_device_format(dev, d, sizeof d);
  return disp__fail(s, "the %s hook of %s (%s backend) failed with %s and set no message", hook, d,
                    disp_backend_name(dev.type), disp_status_name(s));
}

int disp_device_count(disp_backend type) {
  if (!disp__device_type_valid(type)) {
    disp__fail(DISP_ERR_INVALID_ARG, "disp_device_count: invalid device type %d", (int)type);
    return 0;
  }
  if (disp__device_is_host(type)) return 1;
  const disp_device_hooks *h = disp_device_hooks_get(type);
  if (!h) return 0;
  int n = h->device_count(h->ctx);
  return n < 0 ? 0 : n;
}

disp_status disp_device_current(disp_backend type, disp_device *out) {
  DISP_REFUSE_NULL(out);
  if (!disp__device_type_valid(type))
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_device_current: invalid device type %d", (int)type);
  if (disp__device_is_host(type)) {
    *out = disp_device_make(type, 0);
    return DISP_OK;
  }
  const disp_device_hooks *h = NULL;
  disp_status s = disp__device_hooks_lookup(type, &h);
  if (s != DISP_OK) return s;
  uint64_t seq = disp__error_seq;
  int index = h->get_device(h->ctx);
  if (index < 0 || index > INT16_MAX)
    return disp__device_hook_failed(DISP_ERR_KERNEL, "get_device", disp_device_make(type, -1), seq);
  *out = disp_device_make(type, index);
  return DISP_OK;
}

/* dev is valid and names a device that exists (count from the hooks). */
static disp_status check_index(const disp_device_hooks *h, disp_device dev) {
  int n = h->device_count(h->ctx);
  if (dev.index < n) return DISP_OK;
  char d[48];
  disp_device_format(dev, d, sizeof d);
  return disp__fail(DISP_ERR_INVALID_ARG, "Device index out of range: %s (%d device%s)", d, n < 0 ? 0 : n,
                    n == 1 ? "" : "s");
}

disp_status disp_device_set_current(disp_device dev) {
  disp_status s = disp_device_validate(dev);
  if (s != DISP_OK || disp__device_is_host(dev.type) || dev.index < 0) return s;
  const disp_device_hooks *h = NULL;
  s = disp__device_hooks_lookup(dev.type, &h);
  if (s == DISP_OK) s = check_index(h, dev);
  if (s != DISP_OK) return s;
  uint64_t seq = disp__error_seq;
  s = h->set_device(dev.index, h->ctx);
  return s == DISP_OK ? s : disp__device_hook_failed(s, "set_device", dev, seq);
}

disp_status disp_device_exchange(disp_device dev, disp_device *prev) {
  DISP_REFUSE_NULL(prev);
  disp_status s = disp_device_validate(dev);
  if (s != DISP_OK) return s;
  /* The index is checked even when it is the current one: a guard on a
   * device that does not exist must fail at once, not at its end. */
  if (!disp__device_is_host(dev.type) && dev.index >= 0) {
    const disp_device_hooks *h = NULL;
    s = disp__device_hooks_lookup(dev.type, &h);
    if (s == DISP_OK) s = check_index(h, dev);
    if (s != DISP_OK) return s;
  }
  disp_device old;
  s = disp_device_current(dev.type, &old);
  if (s != DISP_OK) return s;
  if (dev.index >= 0 && dev.index != old.index) s = disp_device_set_current(dev);
  if (s == DISP_OK) *prev = old;
  return s;
}

disp_status disp_device_guard_begin(disp_device_guard *g, disp_device dev) {
  DISP_REFUSE_NULL(g);
  g->active = 0;
  disp_status s = disp_device_validate(dev);
  if (s != DISP_OK) return s;
  /* c10::DeviceGuard on a device without an index (or the host) guards
   * nothing: there is no current device to change. */
  if (disp__device_is_host(dev.type) || dev.index < 0) {
    g->original = g->current = dev;
    return DISP_OK;
  }
  disp_device old;
  s = disp_device_exchange(dev, &old);
  if (s != DISP_OK) return s;
  g->original = old;
  g->current = dev;
  g->active = 1;
  return DISP_OK;
}

disp_status disp_device_guard_end(disp_device_guard *g) {
  DISP_REFUSE_NULL(g);
  if (!g->active) return DISP_OK;
  g->active = 0;
  return disp_device_set_current(g->original);
}

disp_status disp_device_synchronize(disp_device dev) {
  disp_status s = disp_device_validate(dev);
  if (s != DISP_OK || disp__device_is_host(dev.type)) return s;
  const disp_device_hooks *h = NULL;
  s = disp__device_hooks_lookup(dev.type, &h);
  if (s == DISP_OK && dev.index < 0) s = disp_device_current(dev.type, &dev);
  if (s == DISP_OK) s = check_index(h, dev);
  if (s != DISP_OK || !h->synchronize) return s;
  uint64_t seq = disp__error_seq;
  s = h->synchronize(dev.index, h->ctx);
  return s == DISP_OK ? s : disp__device_hook_failed(s, "synchronize", dev, seq);
}

disp_status disp__device_slot(const char *fn, disp_device dev, int *slot) {
  disp_status s = disp_device_validate(dev);
  if (s != DISP_OK) return s;
  if (dev.index < 0) {
    s = disp_device_current(dev.type, &dev);
    if (s != DISP_OK) return s;
  }
  if (dev.index >= DISP_MAX_DEVICES_PER_TYPE) {
    char d[48];
    disp_device_format(dev, d, sizeof d);
    return disp__fail(DISP_ERR_INVALID_ARG, "%s: device %s is beyond the %d devices per type the library tracks",
                      fn, d, DISP_MAX_DEVICES_PER_TYPE);
  }
  *slot = (int)dev.type * DISP_MAX_DEVICES_PER_TYPE + dev.index;
  return DISP_OK;
}
