/*
 * reclaim.c - the reader registry and the deferred freeing of retired tables
 * and kernel entries (Note [Reclaiming retired tables]).
 */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloc_internal.h"
#include "disp/call.h"
#include "reclaim_internal.h"

/* ---- readers ------------------------------------------------------------ */

typedef struct reader {
  uint64_t *counter; /* the thread's disp_fast_tls_state.reading */
  struct reader *prev, *next;
  int linked;
} reader;

static pthread_mutex_t g_readers_lock = PTHREAD_MUTEX_INITIALIZER;
static reader *g_readers;
static pthread_key_t g_exit_key;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Thread_local reader t_self;

static void unlink_reader(reader *r) {
  if (!r->linked) return;
  if (r->prev) r->prev->next = r->next;
  else g_readers = r->next;
  if (r->next) r->next->prev = r->prev;
  r->prev = r->next = NULL;
  r->linked = 0;
}

/* pthread key destructor: the thread is exiting, its counter goes away. */
static void reader_exit(void *unused) {
  (void)unused;
  pthread_mutex_lock(&g_readers_lock);
  unlink_reader(&t_self);
  pthread_mutex_unlock(&g_readers_lock);
  /* A later destructor that calls the library registers again. */
  __atomic_store_n(&disp_fast_tls_state.reading, UINT64_MAX, __ATOMIC_RELAXED);
}

/* In a forked child only the forking thread exists; the others' frozen
 * counters must not hold reclamation up forever. */
static void after_fork_in_child(void) {
  pthread_mutex_init(&g_readers_lock, NULL);
  reader *self = t_self.linked ? &t_self : NULL;
  g_readers = NULL;
  if (self) {
    self->prev = self->next = NULL;
    g_readers = self;
  }
}

static int g_membarrier_ok;

static void init_once(void) {
  pthread_key_create(&g_exit_key, reader_exit);
  pthread_atfork(NULL, NULL, after_fork_in_child);
  g_membarrier_ok = syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* The slow path of disp__read_begin: the calling thread's first lookup. Its
 * counter is 0 (inside a lookup) when this runs. Once linked, a writer that
 * takes the readers lock after us sees the counter; one that took it before
 * has published its tables before our lookup starts (the lock orders both). */
void disp_reader_register(void) {
  pthread_once(&g_once, init_once);
  pthread_mutex_lock(&g_readers_lock);
  if (!t_self.linked) {
    t_self.counter = &disp_fast_tls_state.reading;
    t_self.prev = NULL;
    t_self.next = g_readers;
    if (g_readers) g_readers->prev = &t_self;
    g_readers = &t_self;
    t_self.linked = 1;
  }
  pthread_mutex_unlock(&g_readers_lock);
  pthread_setspecific(g_exit_key, &t_self);
}

/* Waits a bounded time for a reader inside a lookup to leave it. A lookup is
 * a few dozen instructions, so only a descheduled or stopped thread takes
 * long; then the caller defers instead of blocking. */
static int wait_for_reader(const reader *r) {
  uint64_t seen = __atomic_load_n(r->counter, __ATOMIC_ACQUIRE);
  if (seen & 1) return 1;
  for (int spin = 0; spin < 2000; spin++) {
    if (spin >= 64) sched_yield();
    if (__atomic_load_n(r->counter, __ATOMIC_ACQUIRE) != seen) return 1;
  }
  return 0;
}

/* After a process-wide barrier: has every other reader been idle at some
 * point since? */
static int readers_quiescent(void) {
  int ok = 1;
  pthread_mutex_lock(&g_readers_lock);
  for (const reader *r = g_readers; r && ok; r = r->next)
    if (r != &t_self) ok = wait_for_reader(r);
  pthread_mutex_unlock(&g_readers_lock);
  return ok;
}

/* ---- retired objects ---------------------------------------------------- */

typedef struct retired {
  void *p;
  void (*free_fn)(void *);
  struct retired *next;
} retired;

static retired *g_retired; /* guarded by the registry lock */
static size_t g_nretired;

/* Batches: one barrier (a few microseconds of IPIs) per this many objects. */
enum { RECLAIM_BATCH = 64 };

/* Whether every reader has been idle since now: a grace period, waited for
 * on the spot. */
static int grace_period_now(void) {
  pthread_once(&g_once, init_once);
  return g_membarrier_ok && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0 &&
         readers_quiescent();
}

void disp__retire(void *p, void (*free_fn)(void *)) {
  if (!p) return;
  retired *r = disp__malloc(sizeof *r);
  if (!r) {
    /* No memory for the list (Note [Removal never fails]): wait for the
     * readers now; p is kept forever only if one is stuck in a lookup. */
    if (grace_period_now()) free_fn(p);
    return;
  }
  r->p = p;
  r->free_fn = free_fn;
  r->next = g_retired;
  g_retired = r;
  g_nretired++;
}

static void free_batch(retired *r) {
  while (r) {
    retired *next = r->next;
    r->free_fn(r->p);
    disp__free(r);
    r = next;
  }
}

void disp__reclaim(int force) {
  if (!g_retired || (!force && g_nretired < RECLAIM_BATCH)) return;
  pthread_once(&g_once, init_once);
  if (!g_membarrier_ok) return;
  retired *batch = g_retired;
  size_t n = g_nretired;
  if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) return;
  if (!readers_quiescent()) return; /* try again at the next change */
  g_retired = NULL;
  g_nretired = 0;
  (void)n;
  free_batch(batch);
}

void disp__reclaim_all_at_shutdown(void) {
  retired *batch = g_retired;
  g_retired = NULL;
  g_nretired = 0;
  free_batch(batch);
}

size_t disp__reclaim_pending(void) { return g_nretired; }
