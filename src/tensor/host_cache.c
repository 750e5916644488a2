/*
 * host_cache.c - the cache of large freed CPU blocks (host_cache.h).
 *
 * The cached blocks sit in one array in the order they were given back,
 * oldest first: eviction takes the front, a lookup scans from the back so
 * the most recently freed block of a class (the one most likely still in
 * the CPU's caches) is reused first. 128 slots make the scan cheaper than
 * the malloc it replaces. Blocks leaving the cache are chained through
 * their first word and freed after the lock is dropped: free() of a large
 * block can be a munmap, which other threads need not wait for.
 */
#include "alloc_internal.h"
#include "host_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#define HOST_CACHE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOST_CACHE_ASAN 1
#endif
#endif
#ifdef HOST_CACHE_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

enum { PAGE = 4096 };

typedef struct slot {
  void *block;
  size_t cls;
  uint64_t stamp; /* g_clock when it was given back */
} slot;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static slot g_slots[DISP__HOST_CACHE_BLOCKS]; /* guarded by g_lock, as the next four */
static int g_count;
static size_t g_bytes;
static uint64_t g_clock; /* large allocations so far */
static atomic_size_t g_limit;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* DISP_HOST_CACHE_MB: a whole number of MiB; anything else keeps the default. */
static void read_env(void) {
  size_t mb = DISP__HOST_CACHE_DEFAULT_MB;
  const char *s = getenv("DISP_HOST_CACHE_MB");
  if (s && *s) {
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (end && !*end && v <= SIZE_MAX / (1024 * 1024)) mb = (size_t)v;
  }
  atomic_store(&g_limit, mb * 1024 * 1024);
}

static size_t limit(void) {
  pthread_once(&g_once, read_env);
  return atomic_load_explicit(&g_limit, memory_order_relaxed);
}

size_t disp__host_cache_class(size_t size) {
  if (size > SIZE_MAX - (PAGE - 1)) return 0;
  return (size + PAGE - 1) & ~(size_t)(PAGE - 1);
}

/* Takes slot i out (under g_lock) and returns its block, unpoisoned. */
static void *take(int i) {
  void *b = g_slots[i].block;
  UNPOISON(b, g_slots[i].cls);
  g_bytes -= g_slots[i].cls;
  for (int j = i + 1; j < g_count; j++) g_slots[j - 1] = g_slots[j];
  g_count--;
  return b;
}

/* Moves slot i onto the chain of blocks to free (under g_lock). */
static void evict(int i, void **chain) {
  void **b = take(i);
  *b = *chain;
  *chain = b;
}

/* Evicts the front while it is older than the age bound or the cache
 * must shrink to take `room` more bytes within `lim`. */
static void evict_for(size_t room, size_t lim, void **chain) {
  while (g_count > 0 &&
         (g_clock - g_slots[0].stamp > DISP__HOST_CACHE_AGE || g_bytes > lim || room > lim - g_bytes ||
          (room && g_count == DISP__HOST_CACHE_BLOCKS)))
    evict(0, chain);
}

static void free_chain(void *chain) {
  while (chain) {
    void *next = *(void **)chain;
    disp__free(chain);
    chain = next;
  }
}

void *disp__host_cache_get(size_t cls) {
  if (limit() == 0) return disp__malloc(cls);
  void *chain = NULL, *found = NULL;
  pthread_mutex_lock(&g_lock);
  g_clock++;
  for (int i = g_count - 1; i >= 0 && !found; i--)
    if (g_slots[i].cls == cls) found = take(i);
  evict_for(0, SIZE_MAX, &chain);
  pthread_mutex_unlock(&g_lock);
  free_chain(chain);
  return found ? found : disp__malloc(cls);
}

void disp__host_cache_put(void *block, size_t cls) {
  if (!block) return;
  if (cls > limit()) {
    disp__free(block);
    return;
  }
  void *chain = NULL;
  pthread_mutex_lock(&g_lock);
  /* read again under the lock: a concurrent set_limit shrinks under it */
  size_t lim = atomic_load_explicit(&g_limit, memory_order_relaxed);
  if (cls > lim) {
    pthread_mutex_unlock(&g_lock);
    disp__free(block);
    return;
  }
  evict_for(cls, lim, &chain);
  g_slots[g_count++] = (slot){block, cls, g_clock};
  g_bytes += cls;
  POISON(block, cls);
  pthread_mutex_unlock(&g_lock);
  free_chain(chain);
}

/* Evicts down to `lim` bytes (0: everything). */
static void shrink_to(size_t lim) {
  void *chain = NULL;
  pthread_mutex_lock(&g_lock);
  while (g_count > 0 && (lim == 0 || g_bytes > lim)) evict(0, &chain);
  pthread_mutex_unlock(&g_lock);
  free_chain(chain);
}

void disp__host_cache_release(void) { shrink_to(0); }

size_t disp__host_cache_set_limit(size_t bytes) {
  size_t old = limit();
  pthread_mutex_lock(&g_lock); /* ordered with the puts (see there) */
  atomic_store(&g_limit, bytes);
  pthread_mutex_unlock(&g_lock);
  shrink_to(bytes);
  return old;
}

void disp__host_cache_stats(size_t *blocks, size_t *bytes) {
  pthread_mutex_lock(&g_lock);
  if (blocks) *blocks = (size_t)g_count;
  if (bytes) *bytes = g_bytes;
  pthread_mutex_unlock(&g_lock);
}
