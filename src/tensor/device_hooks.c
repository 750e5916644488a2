/*
 * device_hooks.c - the device hooks of each device type (Note [Device
 * hooks] in disp/backend.h): registry, device count, current device and its
 * guard, synchronize.
 *
 * Published like the allocators (allocator.c): an immutable heap node per
 * registration, swapped in with a release store under a mutex and read with
 * one acquire load; replaced nodes are kept on a retired list, never freed,
 * because a reader may still be calling through one.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "disp/backend.h"
#include "argcheck_internal.h"
#include "device_internal.h"
#include "owner_internal.h"
#include "tensor_internal.h"

typedef struct hooks_node {
  disp_device_hooks h; /* first: a published pointer is also the node's */
  struct hooks_node *next;
} hooks_node;

static pthread_mutex_t hooks_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(const disp_device_hooks *) hooks_table[DISP_NUM_BACKENDS];
static hooks_node *retired; /* guarded by hooks_lock */

/* Retires a replaced table. Precondition: hooks_lock held. */
static void retire(const disp_device_hooks *old) {
  if (!old) return;
  hooks_node *o = (hooks_node *)(void *)old;
  o->next = retired;
  retired = o;
}

/* Note [Owners]: a plugin's hooks go when it is unloaded - what its
 * registration replaced comes back, unless someone replaced its hooks
 * since (then those stay). */
typedef struct hooks_undo {
  disp_backend type;
  const disp_device_hooks *mine, *old;
} hooks_undo;

static void restore(void *ctx) {
  hooks_undo *u = ctx;
  pthread_mutex_lock(&hooks_lock);
  if (atomic_load_explicit(&hooks_table[u->type], memory_order_relaxed) == u->mine) {
    for (hooks_node **p = &retired; *p; p = &(*p)->next)
      if (&(*p)->h == u->old) { /* published again: off the retired list */
        *p = (*p)->next;
        break;
      }
    atomic_store_explicit(&hooks_table[u->type], u->old, memory_order_release);
    retire(u->mine);
  }
  pthread_mutex_unlock(&hooks_lock);
  free(u);
}

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
  hooks_node *node = NULL;
  if (h) {
    node = malloc(sizeof *node);
    if (!node) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory registering device hooks");
    node->h = *h;
    node->next = NULL;
  }
  /* Recorded before the change, so running out of memory changes nothing. */
  hooks_undo *undo = disp__owner_current() ? malloc(sizeof *undo) : NULL;
  if ((disp__owner_current() && !undo) || (undo && disp__owner_defer(restore, undo, NULL) != DISP_OK)) {
    free(undo);
    free(node);
    return disp__fail(DISP_ERR_NO_MEMORY, "out of memory registering device hooks");
  }
  const disp_device_hooks *fresh = node ? &node->h : NULL;
  pthread_mutex_lock(&hooks_lock);
  const disp_device_hooks *old = atomic_exchange_explicit(&hooks_table[type], fresh, memory_order_acq_rel);
  if (undo) *undo = (hooks_undo){type, fresh, old};
  retire(old);
  pthread_mutex_unlock(&hooks_lock);
  return DISP_OK;
}

const disp_device_hooks *disp_device_hooks_get(disp_backend type) {
  if (!disp__device_type_valid(type)) {
    disp__fail(DISP_ERR_INVALID_ARG, "disp_device_hooks_get: invalid device type %d", (int)type);
    return NULL;
  }
  return atomic_load_explicit(&hooks_table[type], memory_order_acquire);
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

/* A hook failed: keep its own message, else word one. */
disp_status disp__device_hook_failed(disp_status s, const char *hook, disp_device dev, uint64_t seq) {
  if (s == DISP_OK) s = DISP_ERR_KERNEL;
  if (disp__error_seq != seq) return s;
  char d[48];
  disp_device_format(dev, d, sizeof d);
  return disp__fail(s, "the %s hook of %s failed (%s)", hook, d, disp_status_name(s));
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
  const disp_device_hooks *h;
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
  const disp_device_hooks *h;
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
  const disp_device_hooks *h;
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
