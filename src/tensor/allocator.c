/*
 * allocator.c - one allocator per device type.
 *
 * Readers (every storage allocation) load a pointer with acquire and take no
 * lock; registrations publish copies (Note [Published per-type values] in
 * published_internal.h). A replaced allocator is never freed - a reader may
 * still hold it, and disp_allocator_get promises process lifetime.
 * Re-registration is rare (once per backend plugin), so little is kept.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "host_cache.h"
#include "objcache.h"
#include "published_internal.h"
#include "tensor_internal.h"

/* 64 bytes: a cache line and the widest SIMD load, as PyTorch's alloc_cpu. */
#define CPU_ALIGNMENT 64
/* Alignment, the start pointer and a page of size-class rounding. */
#define PAGE_SLACK (CPU_ALIGNMENT + sizeof(void *) + 4096)

/* Aligned by hand over plain malloc: posix_memalign and calloc bypass
 * glibc's per-thread cache, and small tensors come and go at every op. The
 * block's start is kept just below the aligned pointer. Small blocks come
 * from the thread's cache (objcache.h), large ones from the cache of freed
 * large blocks (host_cache.h); the block's size is a function of nbytes, so
 * deallocate finds its way back from nbytes alone. */
static size_t cpu_block_size(size_t nbytes) {
  size_t total = (nbytes <= DISP__SMALL_DATA ? DISP__SMALL_DATA : nbytes) + CPU_ALIGNMENT + sizeof(void *);
  return total >= DISP__HOST_CACHE_MIN ? disp__host_cache_class(total) : total;
}

static void *cpu_allocate(size_t nbytes, disp_device device, void *ctx) {
  (void)device;
  (void)ctx;
  /* Zero bytes: no memory, as PyTorch's alloc_cpu returns nullptr. */
  if (nbytes == 0) return NULL;
  if (nbytes > SIZE_MAX - PAGE_SLACK) return NULL;
  size_t total = cpu_block_size(nbytes);
  char *raw = nbytes <= DISP__SMALL_DATA ? disp__cache_get(DISP__CACHE_SMALL_DATA, total)
              : total >= DISP__HOST_CACHE_MIN ? disp__host_cache_get(total)
                                              : malloc(total);
  if (!raw) return NULL;
  uintptr_t aligned = ((uintptr_t)raw + sizeof(void *) + CPU_ALIGNMENT - 1) & ~(uintptr_t)(CPU_ALIGNMENT - 1);
  ((void **)aligned)[-1] = raw;
  return (void *)aligned;
}

static void cpu_deallocate(void *ptr, size_t nbytes, disp_device device, void *ctx) {
  (void)device;
  (void)ctx;
  if (!ptr) return;
  void *raw = ((void **)ptr)[-1];
  size_t total = cpu_block_size(nbytes);
  if (nbytes <= DISP__SMALL_DATA) disp__cache_put(DISP__CACHE_SMALL_DATA, raw);
  else if (total >= DISP__HOST_CACHE_MIN) disp__host_cache_put(raw, total);
  else free(raw);
}

/* Meta tensors carry shapes only: the storage remembers nbytes, data is NULL. */
static void *meta_allocate(size_t nbytes, disp_device device, void *ctx) {
  (void)nbytes;
  (void)device;
  (void)ctx;
  return NULL;
}

static void meta_deallocate(void *ptr, size_t nbytes, disp_device device, void *ctx) {
  (void)ptr;
  (void)nbytes;
  (void)device;
  (void)ctx;
}

static void cpu_copy(void *dst, const void *src, size_t nbytes, disp_device device, void *ctx) {
  (void)device;
  (void)ctx;
  if (nbytes) memcpy(dst, src, nbytes);
}

static const disp_allocator builtin_cpu = {cpu_allocate, cpu_deallocate, NULL, cpu_copy};
static const disp_allocator builtin_meta = {meta_allocate, meta_deallocate, NULL, NULL};

static const disp_allocator *builtin(disp_backend type) {
  if (type == DISP_BACKEND_CPU) return &builtin_cpu;
  if (type == DISP_BACKEND_META) return &builtin_meta;
  return NULL;
}

static const void *builtin_value(disp_backend type) { return builtin(type); }

/* Note [Published per-type values]. */
static disp__published allocators = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .table = {[DISP_BACKEND_CPU] = &builtin_cpu, [DISP_BACKEND_META] = &builtin_meta},
    .size = sizeof(disp_allocator),
    .builtin = builtin_value,
};

disp_status disp_allocator_register(disp_backend type, const disp_allocator *a) {
  if (!disp__device_type_valid(type))
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_allocator_register: invalid device type %d",
                      (int)type);
  if (a && (!a->allocate || !a->deallocate))
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "disp_allocator_register: the allocator for %s needs both allocate and "
                      "deallocate",
                      disp_backend_name(type));
  return disp__published_set(&allocators, type, a, "an allocator");
}

const disp_allocator *disp_allocator_get(disp_backend type) {
  if (!disp__device_type_valid(type)) {
    disp__fail(DISP_ERR_INVALID_ARG, "disp_allocator_get: invalid device type %d", (int)type);
    return NULL;
  }
  return disp__published_get(&allocators, type);
}

disp_status disp__allocator_lookup(disp_backend type, disp_allocator *out) {
  const disp_allocator *a = disp_allocator_get(type);
  if (!a)
    return disp__fail(DISP_ERR_INVALID_ARG, "no allocator registered for device type %s (%s)",
                      disp_backend_name(type), disp_device_type_name(type));
  *out = *a;
  return DISP_OK;
}
