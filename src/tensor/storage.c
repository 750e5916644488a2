/*
 * storage.c - refcounted device memory, and the version counter tensors
 * share with their views.
 *
 * Refcounts: increments are relaxed (a thread can only retain what it
 * already holds); the decrement is a release, and the thread that drops the
 * last reference issues an acquire fence before freeing, so every write made
 * through other references happens-before the free.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "disp/backend.h"
#include "argcheck_internal.h"
#include "device_internal.h"
#include "objcache.h"
#include "tensor_internal.h"

static disp_status oom(size_t nbytes, disp_device dev) {
  if (dev.type == DISP_BACKEND_CPU)
    return disp__fail(DISP_ERR_NO_MEMORY,
                      "DefaultCPUAllocator: not enough memory: you tried to allocate %zu bytes.",
                      nbytes);
  char d[48];
  disp_device_format(dev, d, sizeof d);
  return disp__fail(DISP_ERR_NO_MEMORY, "not enough memory on device %s: you tried to allocate %zu bytes.",
                    d, nbytes);
}

/* Meta storage has no memory by design; elsewhere NULL means failure
 * unless nothing was asked for. */
static int alloc_failed(const void *data, size_t nbytes, disp_device dev) {
  return !data && nbytes > 0 && dev.type != DISP_BACKEND_META;
}

static disp_storage *storage_struct(size_t nbytes, disp_device dev) {
  /* Not calloc: see tensor_alloc in tensor.c. */
  static const disp_storage zero;
  disp_storage *st = disp__cache_get(DISP__CACHE_STORAGE, sizeof *st);
  if (st) *st = zero;
  if (!st) return NULL;
  atomic_init(&st->refs, 1);
  st->nbytes = nbytes;
  st->device = dev;
  return st;
}

/* Sizes are int64 everywhere else (PyTorch's nbytes is one): a larger
 * count can only be a mistake, and would wrap when a tensor measures it. */
static disp_status check_nbytes(const char *fn, size_t nbytes) {
  if (nbytes <= (uint64_t)INT64_MAX) return DISP_OK;
  return disp__fail(DISP_ERR_INVALID_ARG, "%s: nbytes %zu is larger than the largest storage (%lld bytes)", fn,
                    nbytes, (long long)INT64_MAX);
}

disp_status disp_storage_new(size_t nbytes, disp_device dev, disp_storage **out) {
  DISP_REFUSE_NULL(out);
  disp_status s = check_nbytes(__func__, nbytes);
  if (s == DISP_OK) s = disp_device_validate(dev);
  if (s != DISP_OK) return s;
  disp_allocator a;
  s = disp__allocator_lookup(dev.type, &a);
  if (s != DISP_OK) return s;
  disp_storage *st = storage_struct(nbytes, dev);
  if (!st) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory creating a storage");
  st->data = a.allocate(nbytes, dev, a.ctx);
  if (alloc_failed(st->data, nbytes, dev)) {
    disp__cache_put(DISP__CACHE_STORAGE, st);
    return oom(nbytes, dev);
  }
  st->allocator = a;
  st->own_allocator = 1;
  st->resizable = 1;
  if (nbytes > 0) disp__memstats_alloc(dev, nbytes);
  *out = st;
  return DISP_OK;
}

disp_status disp_storage_new_with_data(void *data, size_t nbytes, disp_device dev,
                                       void (*release)(void *data, void *ctx), void *ctx,
                                       disp_storage **out) {
  /* A length without memory would be read by the first kernel; Meta keeps
   * no memory by design, so only its length matters. */
  if (dev.type != DISP_BACKEND_META) DISP_REFUSE_NULL_ARRAY(data, nbytes);
  DISP_REFUSE_NULL(out);
  disp_status s = check_nbytes(__func__, nbytes);
  if (s == DISP_OK) s = disp_device_validate(dev);
  if (s != DISP_OK) return s;
  disp_storage *st = storage_struct(nbytes, dev);
  if (!st) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory creating a storage");
  st->data = data;
  st->release = release;
  st->release_ctx = ctx;
  *out = st;
  return DISP_OK;
}

disp_storage *disp_storage_retain(disp_storage *st) {
  if (!st) return NULL;
  atomic_fetch_add_explicit(&st->refs, 1, memory_order_relaxed);
  return st;
}

/* Every block an allocator hands a storage is counted (Note: zero bytes is
 * no block), so the statistics see each allocation and free exactly once. */
static void deallocate_counted(disp_storage *st, void *data, size_t nbytes) {
  st->allocator.deallocate(data, nbytes, st->device, st->allocator.ctx);
  if (nbytes > 0) disp__memstats_free(st->device, nbytes);
}

static void free_data(disp_storage *st) {
  if (st->own_allocator)
    deallocate_counted(st, st->data, st->nbytes);
  else if (st->release)
    st->release(st->data, st->release_ctx);
}

void disp_storage_release(disp_storage *st) {
  if (!st) return;
  size_t prev = atomic_fetch_sub_explicit(&st->refs, 1, memory_order_release);
  DISP_ASSERT(prev > 0);
  if (prev != 1) return;
  atomic_thread_fence(memory_order_acquire);
  free_data(st);
  disp__cache_put(DISP__CACHE_STORAGE, st);
}

/* Note [NULL arguments]: a NULL storage reads as none (0, no device). */
void *disp_storage_data(const disp_storage *st) {
  DISP_REFUSE_NULL_PTR(st);
  return st->data;
}

size_t disp_storage_nbytes(const disp_storage *st) { return st ? st->nbytes : 0; }
int disp_storage_resizable(const disp_storage *st) { return st && st->resizable; }

disp_device disp_storage_device(const disp_storage *st) { return st ? st->device : disp__no_device(); }

size_t disp_storage_refcount(const disp_storage *st) {
  return st ? atomic_load_explicit(&st->refs, memory_order_relaxed) : 0;
}

disp_status disp__storage_resize(disp_storage *st, size_t nbytes) {
  if (!st->resizable || !st->own_allocator)
    return disp__fail(DISP_ERR_INVALID_ARG, "Trying to resize storage that is not resizable");
  if (nbytes == st->nbytes) return DISP_OK;
  disp_status s = check_nbytes("disp_storage_resize", nbytes);
  if (s != DISP_OK) return s;
  disp_device dev = st->device;
  size_t keep = nbytes < st->nbytes ? nbytes : st->nbytes;
  int carry = st->data && keep > 0;
  /* The old bytes move on the device, through the allocator that owns both
   * blocks: the host never reads device memory. */
  if (carry && !st->allocator.copy)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "Trying to resize a %s storage holding data, but its allocator has no copy function",
                      disp_device_type_name(dev.type));
  void *fresh = st->allocator.allocate(nbytes, dev, st->allocator.ctx);
  if (alloc_failed(fresh, nbytes, dev)) return oom(nbytes, dev);
  if (nbytes > 0) disp__memstats_alloc(dev, nbytes);
  if (carry && fresh) st->allocator.copy(fresh, st->data, keep, dev, st->allocator.ctx);
  deallocate_counted(st, st->data, st->nbytes);
  st->data = fresh;
  st->nbytes = nbytes;
  return DISP_OK;
}

disp_status disp_storage_resize(disp_storage *st, size_t nbytes) {
  DISP_REFUSE_NULL(st);
  return disp__storage_resize(st, nbytes);
}

/* ---- version counter --------------------------------------------------- */

disp_version_counter *disp__version_counter_new(void) {
  disp_version_counter *vc = disp__cache_get(DISP__CACHE_VERSION, sizeof *vc);
  if (!vc) return NULL;
  atomic_init(&vc->refs, 1);
  atomic_init(&vc->version, 0);
  return vc;
}

disp_version_counter *disp__version_counter_retain(disp_version_counter *vc) {
  if (vc) atomic_fetch_add_explicit(&vc->refs, 1, memory_order_relaxed);
  return vc;
}

void disp__version_counter_release(disp_version_counter *vc) {
  if (!vc) return;
  uint_least32_t prev = atomic_fetch_sub_explicit(&vc->refs, 1, memory_order_release);
  DISP_ASSERT(prev > 0);
  if (prev != 1) return;
  atomic_thread_fence(memory_order_acquire);
  disp__cache_put(DISP__CACHE_VERSION, vc);
}
