/*
 * allocator.c - one allocator per device type.
 *
 * Readers (every storage allocation) load a pointer with acquire and take no
 * lock. Registration copies the caller's struct into an immutable heap node
 * and publishes it with a release store under a mutex. A replaced node is
 * never freed - a reader may still hold it, and disp_allocator_get promises
 * process lifetime - it moves to a retired list, which stays reachable so
 * leak checkers are quiet. Re-registration is rare (once per backend plugin),
 * so the list stays tiny.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "host_cache.h"
#include "objcache.h"
#include "owner_internal.h"
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

typedef struct allocator_node {
  disp_allocator a; /* first: a published pointer is also the node's */
  struct allocator_node *next;
} allocator_node;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(const disp_allocator *) table[DISP_NUM_BACKENDS] = {
    [DISP_BACKEND_CPU] = &builtin_cpu,
    [DISP_BACKEND_META] = &builtin_meta,
};
static allocator_node *retired; /* guarded by registry_lock */

/* Retires a replaced node. Precondition: registry_lock held. */
static void retire(const disp_allocator *old, disp_backend type) {
  if (!old || old == builtin(type)) return;
  allocator_node *o = (allocator_node *)(void *)old;
  o->next = retired;
  retired = o;
}

/* Note [Owners]: what a plugin's registration replaced, put back when the
 * plugin goes, unless someone replaced the plugin's allocator since. */
typedef struct allocator_undo {
  disp_backend type;
  const disp_allocator *mine, *old;
} allocator_undo;

static void restore(void *ctx) {
  allocator_undo *u = ctx;
  pthread_mutex_lock(&registry_lock);
  if (atomic_load_explicit(&table[u->type], memory_order_relaxed) == u->mine) {
    for (allocator_node **p = &retired; *p; p = &(*p)->next)
      if (&(*p)->a == u->old) { /* published again: off the retired list */
        *p = (*p)->next;
        break;
      }
    atomic_store_explicit(&table[u->type], u->old, memory_order_release);
    retire(u->mine, u->type);
  }
  pthread_mutex_unlock(&registry_lock);
  free(u);
}

disp_status disp_allocator_register(disp_backend type, const disp_allocator *a) {
  if (!disp__device_type_valid(type))
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_allocator_register: invalid device type %d",
                      (int)type);
  if (a && (!a->allocate || !a->deallocate))
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "disp_allocator_register: the allocator for %s needs both allocate and "
                      "deallocate",
                      disp_backend_name(type));
  allocator_node *node = NULL;
  if (a) {
    node = malloc(sizeof *node);
    if (!node) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory registering an allocator");
    node->a = *a;
    node->next = NULL;
  }
  const disp_allocator *fresh = node ? &node->a : builtin(type);
  allocator_undo *undo = disp__owner_current() ? malloc(sizeof *undo) : NULL;
  if ((disp__owner_current() && !undo) || (undo && disp__owner_defer(restore, undo, NULL) != DISP_OK)) {
    free(undo);
    free(node);
    return disp__fail(DISP_ERR_NO_MEMORY, "out of memory registering an allocator");
  }
  pthread_mutex_lock(&registry_lock);
  const disp_allocator *old = atomic_exchange_explicit(&table[type], fresh, memory_order_acq_rel);
  if (undo) *undo = (allocator_undo){type, fresh, old};
  retire(old, type);
  pthread_mutex_unlock(&registry_lock);
  return DISP_OK;
}

const disp_allocator *disp_allocator_get(disp_backend type) {
  if (!disp__device_type_valid(type)) {
    disp__fail(DISP_ERR_INVALID_ARG, "disp_allocator_get: invalid device type %d", (int)type);
    return NULL;
  }
  return atomic_load_explicit(&table[type], memory_order_acquire);
}

disp_status disp__allocator_lookup(disp_backend type, disp_allocator *out) {
  const disp_allocator *a = disp_allocator_get(type);
  if (!a)
    return disp__fail(DISP_ERR_INVALID_ARG, "no allocator registered for device type %s (%s)",
                      disp_backend_name(type), disp_device_type_name(type));
  *out = *a;
  return DISP_OK;
}
