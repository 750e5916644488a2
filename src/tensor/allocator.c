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

#include "alloc_internal.h"
#include "error_internal.h"
#include "host_cache.h"
#include "objcache.h"
#include "published_internal.h"
#include "tensor_internal.h"

/* 64 bytes: a cache line and the widest SIMD load, as PyTorch's alloc_cpu. */
#define CPU_ALIGNMENT 64

/* Note [Large block colouring]: a large block comes from mmap (or the host
 * cache, which got it from mmap), so without care every large tensor would
 * start at the same offset in its first page, and the operands of a
 * pointwise op would walk the same cache sets in lockstep: add of two 1M
 * float32 vectors at equal page offsets ran 8-10% slower here (AMD EPYC,
 * 185 vs 168 us, the output's offset mattering less) than with the inputs
 * 1 KiB or more apart. As jemalloc's cache-oblivious large allocations do,
 * each large block's data starts a varying number of cache lines into its
 * first page, at the cost of one page per block: successive allocations
 * step by COLOUR_STEP cache lines (coprime to the 64 lines of a page, about
 * 0.6 of it, so any few blocks made in a row land far apart). */
enum { COLOUR_SPAN = 4096, COLOUR_STEP = 39 };
static atomic_uint g_colour;

static size_t next_colour(void) {
  unsigned k = atomic_fetch_add_explicit(&g_colour, 1, memory_order_relaxed);
  return (size_t)(k * COLOUR_STEP % (COLOUR_SPAN / CPU_ALIGNMENT)) * CPU_ALIGNMENT;
}

/* Alignment, the start pointer, the colour and a page of size-class rounding. */
#define PAGE_SLACK (CPU_ALIGNMENT + sizeof(void *) + COLOUR_SPAN + 4096)

/* Aligned by hand over plain malloc: posix_memalign and calloc bypass
 * glibc's per-thread cache, and small tensors come and go at every op. The
 * block's start is kept just below the aligned pointer. Small and medium
 * blocks come from the thread's caches (objcache.h), large ones (with room
 * for their colour) from the cache of freed large blocks (host_cache.h);
 * the block's size and home are functions of nbytes, so deallocate finds
 * its way back from nbytes alone. */
typedef enum block_home { HOME_SMALL, HOME_MEDIUM, HOME_MALLOC, HOME_LARGE } block_home;

static size_t cpu_block_size(size_t nbytes, block_home *home) {
  const size_t slack = CPU_ALIGNMENT + sizeof(void *);
  *home = nbytes <= DISP__SMALL_DATA               ? HOME_SMALL
          : nbytes <= DISP__MEDIUM_DATA            ? HOME_MEDIUM
          : nbytes + slack < DISP__HOST_CACHE_MIN ? HOME_MALLOC
                                                   : HOME_LARGE;
  switch (*home) {
  case HOME_SMALL: return DISP__SMALL_DATA + slack;
  case HOME_MEDIUM: return DISP__MEDIUM_DATA + slack;
  case HOME_MALLOC: return nbytes + slack;
  default: return disp__host_cache_class(nbytes + slack + COLOUR_SPAN - CPU_ALIGNMENT);
  }
}

static void *cpu_allocate(size_t nbytes, disp_device device, void *ctx) {
  (void)device;
  (void)ctx;
  /* Zero bytes: no memory, as PyTorch's alloc_cpu returns nullptr. */
  if (nbytes == 0) return NULL;
  if (nbytes > SIZE_MAX - PAGE_SLACK) return NULL;
  block_home home;
  size_t total = cpu_block_size(nbytes, &home);
  char *raw = home == HOME_SMALL    ? disp__cache_get(DISP__CACHE_SMALL_DATA, total)
              : home == HOME_MEDIUM ? disp__cache_get(DISP__CACHE_MEDIUM_DATA, total)
              : home == HOME_LARGE  ? disp__host_cache_get(total)
                                    : disp__malloc(total);
  if (!raw) return NULL;
  uintptr_t aligned = ((uintptr_t)raw + sizeof(void *) + CPU_ALIGNMENT - 1) & ~(uintptr_t)(CPU_ALIGNMENT - 1);
  if (home == HOME_LARGE) aligned += next_colour();
  ((void **)aligned)[-1] = raw;
  return (void *)aligned;
}

static void cpu_deallocate(void *ptr, size_t nbytes, disp_device device, void *ctx) {
  (void)device;
  (void)ctx;
  if (!ptr) return;
  void *raw = ((void **)ptr)[-1];
  block_home home;
  size_t total = cpu_block_size(nbytes, &home);
  if (home == HOME_SMALL) disp__cache_put(DISP__CACHE_SMALL_DATA, raw);
  else if (home == HOME_MEDIUM) disp__cache_put(DISP__CACHE_MEDIUM_DATA, raw);
  else if (home == HOME_LARGE) disp__host_cache_put(raw, total);
  else disp__free(raw);
}

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
