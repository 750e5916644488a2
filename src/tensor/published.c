/*
 * published.c - per-device-type values replaced under readers (Note
 * [Published per-type values] in published_internal.h).
 */
#include "published_internal.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "owner_internal.h"

struct disp__published_node {
  struct disp__published_node *next;
  alignas(max_align_t) unsigned char value[]; /* the published pointer */
};

static disp__published_node *node_of(const void *value) {
  return (disp__published_node *)(void *)((unsigned char *)(uintptr_t)value - offsetof(disp__published_node, value));
}

static const void *builtin_of(const disp__published *p, disp_backend type) {
  return p->builtin ? p->builtin(type) : NULL;
}

/* Retires a replaced value. Precondition: p->lock held. */
static void retire(disp__published *p, const void *old, disp_backend type) {
  if (!old || old == builtin_of(p, type)) return;
  disp__published_node *n = node_of(old);
  n->next = p->retired;
  p->retired = n;
}

typedef struct undo {
  disp__published *p;
  disp_backend type;
  const void *mine, *old;
} undo;

static void restore(void *ctx) {
  undo *u = ctx;
  disp__published *p = u->p;
  pthread_mutex_lock(&p->lock);
  if (atomic_load_explicit(&p->table[u->type], memory_order_relaxed) == u->mine) {
    for (disp__published_node **n = &p->retired; *n; n = &(*n)->next)
      if ((*n)->value == u->old) { /* published again: off the retired list */
        *n = (*n)->next;
        break;
      }
    atomic_store_explicit(&p->table[u->type], u->old, memory_order_release);
    retire(p, u->mine, u->type);
  }
  pthread_mutex_unlock(&p->lock);
  free(u);
}

disp_status disp__published_set(disp__published *p, disp_backend type, const void *value, const char *what) {
  disp__published_node *node = NULL;
  if (value) {
    node = malloc(sizeof *node + p->size);
    if (!node) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory registering %s", what);
    memcpy(node->value, value, p->size);
    node->next = NULL;
  }
  /* Recorded before the change, so running out of memory changes nothing. */
  undo *u = disp__owner_current() ? malloc(sizeof *u) : NULL;
  if ((disp__owner_current() && !u) || (u && disp__owner_defer(restore, u, NULL) != DISP_OK)) {
    free(u);
    free(node);
    return disp__fail(DISP_ERR_NO_MEMORY, "out of memory registering %s", what);
  }
  const void *fresh = node ? (const void *)node->value : builtin_of(p, type);
  pthread_mutex_lock(&p->lock);
  const void *old = atomic_exchange_explicit(&p->table[type], fresh, memory_order_acq_rel);
  if (u) *u = (undo){p, type, fresh, old};
  retire(p, old, type);
  pthread_mutex_unlock(&p->lock);
  return DISP_OK;
}
