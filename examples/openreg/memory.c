/*
 * memory.c - the openreg devices' memory (Note [Emulated device memory] in
 * openreg.h): one PROT_NONE arena per device, blocks in power-of-two size
 * classes reused through free lists, and the enter/leave pair that opens
 * the arenas to the host while a plugin kernel runs.
 */
#include "openreg.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define ARENA_BYTES ((size_t)1 << 31) /* address space only: pages come on first touch */
#define MIN_CLASS 6                   /* 64-byte blocks, the CPU allocator's alignment */
#define NUM_CLASSES 32

typedef struct arena {
  char *base;
  size_t used;                   /* bump pointer: bytes handed out so far */
  size_t live;                   /* bytes in live blocks */
} arena;

/* Free-list links cannot live inside the blocks (they are PROT_NONE when
 * freed), so each class keeps a small array stack of block addresses. */
typedef struct stack { void **items; size_t len, cap; } stack;

static arena g_arenas[OR_NUM_DEVICES];
static stack g_free[OR_NUM_DEVICES][NUM_CLASSES];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_depth; /* kernels inside or_enter, all threads */

disp_status or_memory_init(void) {
  pthread_mutex_lock(&g_lock);
  disp_status st = DISP_OK;
  for (int d = 0; d < OR_NUM_DEVICES && st == DISP_OK; d++) {
    if (g_arenas[d].base) continue;
    void *p = mmap(NULL, ARENA_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) st = disp_set_error(DISP_ERR_NO_MEMORY, "openreg: cannot reserve device %d's memory", d);
    else g_arenas[d].base = p;
  }
  pthread_mutex_unlock(&g_lock);
  return st;
}

void or_memory_shutdown(void) {
  pthread_mutex_lock(&g_lock);
  for (int d = 0; d < OR_NUM_DEVICES; d++) {
    if (g_arenas[d].base) munmap(g_arenas[d].base, ARENA_BYTES);
    g_arenas[d] = (arena){0};
    for (int c = 0; c < NUM_CLASSES; c++) {
      free(g_free[d][c].items);
      g_free[d][c] = (stack){0};
    }
  }
  pthread_mutex_unlock(&g_lock);
}

static int size_class(size_t nbytes) {
  int c = MIN_CLASS;
  while (c < NUM_CLASSES && ((size_t)1 << c) < nbytes) c++;
  return c;
}

static size_t page_round(size_t n) { return (n + 4095) & ~(size_t)4095; }

/* The protection the arena has now: open while any kernel runs. */
static void protect(arena *a, size_t from, size_t to) {
  if (to > from) mprotect(a->base + from, page_round(to) - from, g_depth ? PROT_READ | PROT_WRITE : PROT_NONE);
}

void *or_alloc(size_t nbytes, disp_device dev, void *ctx) {
  (void)ctx;
  int d = dev.index < 0 ? 0 : dev.index, c = size_class(nbytes);
  if (d >= OR_NUM_DEVICES || c >= NUM_CLASSES || nbytes == 0) return NULL;
  pthread_mutex_lock(&g_lock);
  arena *a = &g_arenas[d];
  stack *s = &g_free[d][c];
  void *p = NULL;
  if (s->len) {
    p = s->items[--s->len];
  } else if (a->base && a->used + ((size_t)1 << c) <= ARENA_BYTES) {
    size_t old = page_round(a->used);
    p = a->base + a->used;
    a->used += (size_t)1 << c;
    protect(a, old, a->used);
  }
  if (p) a->live += (size_t)1 << c;
  pthread_mutex_unlock(&g_lock);
  return p;
}

void or_free(void *ptr, size_t nbytes, disp_device dev, void *ctx) {
  (void)ctx;
  if (!ptr) return;
  int d = dev.index < 0 ? 0 : dev.index, c = size_class(nbytes);
  pthread_mutex_lock(&g_lock);
  stack *s = &g_free[d][c];
  if (s->len == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    void **items = realloc(s->items, cap * sizeof *items);
    if (items) s->items = items, s->cap = cap;
  }
  if (s->len < s->cap) s->items[s->len++] = ptr; /* else the block is leaked to the arena, never reused */
  g_arenas[d].live -= (size_t)1 << c;
  pthread_mutex_unlock(&g_lock);
}

void or_enter(void) {
  pthread_mutex_lock(&g_lock);
  if (g_depth++ == 0)
    for (int d = 0; d < OR_NUM_DEVICES; d++) protect(&g_arenas[d], 0, g_arenas[d].used);
  pthread_mutex_unlock(&g_lock);
}

void or_leave(void) {
  pthread_mutex_lock(&g_lock);
  if (--g_depth == 0)
    for (int d = 0; d < OR_NUM_DEVICES; d++) protect(&g_arenas[d], 0, g_arenas[d].used);
  pthread_mutex_unlock(&g_lock);
}

int or_is_device_ptr(const void *ptr) {
  for (int d = 0; d < OR_NUM_DEVICES; d++) {
    const char *b = g_arenas[d].base;
    if (b && (const char *)ptr >= b && (const char *)ptr < b + ARENA_BYTES) return 1;
  }
  return 0;
}

size_t or_live_bytes(int dev) {
  pthread_mutex_lock(&g_lock);
  size_t n = dev >= 0 && dev < OR_NUM_DEVICES ? g_arenas[dev].live : 0;
  pthread_mutex_unlock(&g_lock);
  return n;
}
