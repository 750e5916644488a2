/*
 * device_memstats.c - per-device memory statistics (disp/backend.h), fed by
 * storage.c at every allocation, resize and free.
 *
 * Plain atomics per (type, index) slot, no lock: an allocation is one
 * fetch_add and a compare-exchange loop that raises the peak only while it
 * is below the new total, so concurrent allocations never lose a peak.
 */
#include <stdatomic.h>

#include "argcheck_internal.h"
#include "device_internal.h"
#include "tensor_internal.h"

typedef struct memstats {
  _Atomic int64_t allocated, peak, allocs, frees;
} memstats;

static memstats stats[DISP_NUM_BACKENDS * DISP_MAX_DEVICES_PER_TYPE];

/* The slot a storage's device counts in; -1 when it has none. A storage's
 * index -1 ("cpu", "privateuseone") counts as device 0, as PyTorch's
 * allocators put it on the current device, which we cannot ask here
 * without hooks. */
static int storage_slot(disp_device dev) {
  if (!disp__device_type_valid(dev.type) || dev.type == DISP_BACKEND_META) return -1;
  int index = dev.index < 0 ? 0 : dev.index;
  if (index >= DISP_MAX_DEVICES_PER_TYPE) return -1;
  return (int)dev.type * DISP_MAX_DEVICES_PER_TYPE + index;
}

void disp__memstats_alloc(disp_device dev, size_t nbytes) {
  int slot = storage_slot(dev);
  if (slot < 0) return;
  memstats *m = &stats[slot];
  atomic_fetch_add_explicit(&m->allocs, 1, memory_order_relaxed);
  int64_t now = atomic_fetch_add_explicit(&m->allocated, (int64_t)nbytes, memory_order_relaxed) + (int64_t)nbytes;
  int64_t peak = atomic_load_explicit(&m->peak, memory_order_relaxed);
  while (peak < now &&
         !atomic_compare_exchange_weak_explicit(&m->peak, &peak, now, memory_order_relaxed, memory_order_relaxed)) {
  }
}

void disp__memstats_free(disp_device dev, size_t nbytes) {
  int slot = storage_slot(dev);
  if (slot < 0) return;
  atomic_fetch_add_explicit(&stats[slot].frees, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&stats[slot].allocated, (int64_t)nbytes, memory_order_relaxed);
}

disp_status disp_memory_stats_get(disp_device dev, disp_memory_stats *out) {
  DISP_REFUSE_NULL(out);
  int slot;
  disp_status s = disp__device_slot(__func__, dev, &slot);
  if (s != DISP_OK) return s;
  memstats *m = &stats[slot];
  disp_memory_stats r;
  r.allocated_bytes = atomic_load_explicit(&m->allocated, memory_order_relaxed);
  r.peak_bytes = atomic_load_explicit(&m->peak, memory_order_relaxed);
  r.num_allocs = atomic_load_explicit(&m->allocs, memory_order_relaxed);
  r.num_frees = atomic_load_explicit(&m->frees, memory_order_relaxed);
  r.live_blocks = r.num_allocs - r.num_frees;
  *out = r;
  return DISP_OK;
}

disp_status disp_memory_reset_peak(disp_device dev) {
  int slot;
  disp_status s = disp__device_slot(__func__, dev, &slot);
  if (s != DISP_OK) return s;
  atomic_store_explicit(&stats[slot].peak, atomic_load_explicit(&stats[slot].allocated, memory_order_relaxed),
                        memory_order_relaxed);
  return DISP_OK;
}
