/*
 * device_internal.h - what the tensor module's device files share: host
 * device types, hook lookup, the (type, index) slots of per-device state,
 * memory statistics feeds and host copies of device tensors.
 */
#ifndef DISP_DEVICE_INTERNAL_H
#define DISP_DEVICE_INTERNAL_H

#include <stdint.h>

#include "disp/backend.h"

/* CPU and Meta: built-in hooks, no current device to change. Only CPU
 * memory is host memory; Meta has none. */
static inline int disp__device_is_host(disp_backend type) {
  return type == DISP_BACKEND_CPU || type == DISP_BACKEND_META;
}

/* The registered hooks of `type`, or DISP_ERR_INVALID_ARG "no device hooks
 * registered for device type privateuseone (...)". Thread-safe. */
disp_status disp__device_hooks_lookup(disp_backend type, const disp_device_hooks **out);

/* Returns s (DISP_ERR_KERNEL for DISP_OK) after a hook failed; words a
 * message naming hook and device unless the hook set one since `seq`
 * (disp__error_seq read before the call). */
disp_status disp__device_hook_failed(disp_status s, const char *hook, disp_device dev, uint64_t seq);

/*
 * disp__device_slot - the slot of dev in per-device tables
 * (type * DISP_MAX_DEVICES_PER_TYPE + index): index -1 is the current
 * device (0 for CPU and Meta). `fn` starts the messages. Errors: bad device,
 * no hooks for index -1, index beyond DISP_MAX_DEVICES_PER_TYPE.
 */
disp_status disp__device_slot(const char *fn, disp_device dev, int *slot);

/* Memory statistics feeds (device_memstats.c): an allocator handed out /
 * took back nbytes on dev. Meta and invalid slots are ignored. Thread-safe. */
void disp__memstats_alloc(disp_device dev, size_t nbytes);
void disp__memstats_free(disp_device dev, size_t nbytes);

/*
 * disp__tensor_host_view - a CPU tensor with t's values, for code that
 * reads elements on the host: t itself (retained) when it is on the CPU;
 * for another device with storage, a copy of the bytes t spans, made with
 * the device's d2h copy hook, in a tensor with t's sizes and strides. New
 * reference. Errors (`fn` starts them): "fn: cannot read privateuseone:0
 * memory on the host: no device-to-host copy hook registered for device
 * type privateuseone"; a hook failure; DISP_ERR_NO_MEMORY. Not for Meta
 * or opaque tensors (the caller handles those). Thread-safe for a tensor
 * nobody writes.
 */
disp_status disp__tensor_host_view(const char *fn, const disp_tensor *t, disp_tensor **out);

#endif /* DISP_DEVICE_INTERNAL_H */
