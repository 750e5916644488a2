/*
 * owner.c - undo records per owner (Note [Owners] in owner_internal.h).
 *
 * One mutex guards every owner's list: records are added while a plugin
 * loads and cancelled when a library is freed, both rare, never on a call
 * path. Actions run with the mutex released, since they take the
 * dispatcher's and tensor module's own locks and may cancel other records.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "error_internal.h"
#include "owner_internal.h"

struct disp_undo {
  void (*fn)(void *ctx);
  void *ctx;
  disp_owner *owner;
  struct disp_undo *prev, *next; /* prev is older, next newer */
};

struct disp_owner {
  char *name;
  disp_undo *newest;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local disp_owner *tls_current;

disp_owner *disp__owner_new(const char *name) {
  disp_owner *o = disp__calloc(1, sizeof *o);
  if (!o || !(o->name = disp__strdup(name ? name : ""))) {
    disp__free(o);
    return NULL;
  }
  return o;
}

void disp__owner_free(disp_owner *o) {
  if (!o) return;
  DISP_ASSERT(o->newest == NULL);
  disp__free(o->name);
  disp__free(o);
}

disp_owner *disp__owner_swap(disp_owner *o) {
  disp_owner *prev = tls_current;
  tls_current = o;
  return prev;
}

disp_owner *disp__owner_current(void) { return tls_current; }

const char *disp__owner_name(const disp_owner *o) { return o ? o->name : ""; }

disp_status disp__owner_defer(void (*undo)(void *ctx), void *ctx, disp_undo **out) {
  if (out) *out = NULL;
  disp_owner *o = tls_current;
  if (!o) return DISP_OK;
  disp_undo *u = disp__malloc(sizeof *u);
  if (!u) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory recording what %s registered", o->name);
  u->fn = undo;
  u->ctx = ctx;
  u->owner = o;
  u->next = NULL;
  pthread_mutex_lock(&g_lock);
  u->prev = o->newest;
  if (u->prev) u->prev->next = u;
  o->newest = u;
  pthread_mutex_unlock(&g_lock);
  if (out) *out = u;
  return DISP_OK;
}

/* Precondition: g_lock held. */
static void unlink_record(disp_undo *u) {
  if (u->next) u->next->prev = u->prev;
  else u->owner->newest = u->prev;
  if (u->prev) u->prev->next = u->next;
}

void disp__owner_cancel(disp_undo *u) {
  if (!u) return;
  pthread_mutex_lock(&g_lock);
  unlink_record(u);
  pthread_mutex_unlock(&g_lock);
  disp__free(u);
}

void disp__owner_undo_all(disp_owner *o) {
  if (!o) return;
  for (;;) {
    pthread_mutex_lock(&g_lock);
    disp_undo *u = o->newest;
    if (u) unlink_record(u);
    pthread_mutex_unlock(&g_lock);
    if (!u) return;
    u->fn(u->ctx);
    disp__free(u);
  }
}
