/*
 * objcache.c - the per-thread block cache (objcache.h).
 */
#include "alloc_internal.h"
#include "objcache.h"

#include <pthread.h>
#include <stdlib.h>

/* Under AddressSanitizer every block goes straight back to malloc, so a use
 * after free still shows up in the sanitizer builds. */
#if defined(__SANITIZE_ADDRESS__)
#define CACHE_ENABLED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CACHE_ENABLED 0
#endif
#endif
#ifndef CACHE_ENABLED
#define CACHE_ENABLED 1
#endif

typedef struct free_block { struct free_block *next; } free_block;

typedef struct thread_cache {
  free_block *head[DISP__CACHE_KINDS];
  int count[DISP__CACHE_KINDS];
  int registered;
} thread_cache;

/* initial-exec: no __tls_get_addr call per block (see tls_internal.h). */
static _Thread_local thread_cache tls_cache __attribute__((tls_model("initial-exec")));
static pthread_key_t g_key;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* At thread exit: free what the thread kept. */
static void drain(void *arg) {
  thread_cache *c = arg;
  for (int k = 0; k < DISP__CACHE_KINDS; k++) {
    while (c->head[k]) {
      free_block *b = c->head[k];
      c->head[k] = b->next;
      disp__free(b);
    }
    c->count[k] = 0;
  }
}

static void make_key(void) { pthread_key_create(&g_key, drain); }

void *disp__cache_get(disp__cache_kind kind, size_t size) {
  thread_cache *c = &tls_cache;
  free_block *b = c->head[kind];
  if (b) {
    c->head[kind] = b->next;
    c->count[kind]--;
    return b;
  }
  return disp__malloc(size < sizeof(free_block) ? sizeof(free_block) : size);
}

/* Once per thread, out of the way: the common put then saves no registers
 * (this path's calls cost the put a third of its instructions inline). */
__attribute__((cold, noinline)) static void register_drain(thread_cache *c) {
  pthread_once(&g_once, make_key);
  pthread_setspecific(g_key, c);
  c->registered = 1;
}

void disp__cache_put(disp__cache_kind kind, void *block) {
  if (!block) return;
  thread_cache *c = &tls_cache;
  if (!CACHE_ENABLED || c->count[kind] >= DISP__CACHE_DEPTH) {
    disp__free(block);
    return;
  }
  if (!c->registered) register_drain(c);
  free_block *b = block;
  b->next = c->head[kind];
  c->head[kind] = b;
  c->count[kind]++;
}
