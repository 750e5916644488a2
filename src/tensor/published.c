/*
 * published.c - per-device-type values replaced under readers (Note
 * [Published per-type values] in published_internal.h).
 */
#include "alloc_internal.h"
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

/* One live registration of a value for a type. */
struct disp__published_entry {
  disp__published_entry *next;
  disp__published *p;
  disp_backend type;
  const void *value; /* a node's value, or builtin(type) */
  int owned;         /* taken off by its owner's undo, not by a later set */
};

/* What the newest live registration says, or the built-in value. */
static const void *top_value(const disp__published *p, disp_backend type) {
  return p->live[type] ? p->live[type]->value : builtin_of(p, type);
}

/* Unlinks e, retires its value and frees it. Precondition: p->lock held. */
static void drop_entry(disp__published *p, disp__published_entry *e) {
  for (disp__published_entry **q = &p->live[e->type]; *q; q = &(*q)->next)
    if (*q == e) {
      *q = e->next;
      break;
    }
  retire(p, e->value, e->type);
  disp__free(e);
}

/* The owner's undo: its registration leaves the stack wherever it lies. */
static void restore(void *ctx) {
  disp__published_entry *e = ctx;
  disp__published *p = e->p;
  disp_backend type = e->type;
  pthread_mutex_lock(&p->lock);
  drop_entry(p, e);
  atomic_store_explicit(&p->table[type], top_value(p, type), memory_order_release);
  pthread_mutex_unlock(&p->lock);
}

/* A retired node holding exactly `value`, taken off the retired list: a
 * plugin loaded again registers the same bytes, and reusing the node keeps
 * load/unload cycles bounded (a reader still holding it sees the same
 * immutable bytes). Precondition: p->lock held. */
static disp__published_node *revive(disp__published *p, const void *value) {
  for (disp__published_node **q = &p->retired; *q; q = &(*q)->next)
    if (!memcmp((*q)->value, value, p->size)) {
      disp__published_node *n = *q;
      *q = n->next;
      n->next = NULL;
      return n;
    }
  return NULL;
}

disp_status disp__published_set(disp__published *p, disp_backend type, const void *value, const char *what) {
  disp__published_node *node = NULL;
  disp__published_entry *e = disp__malloc(sizeof *e);
  if (e && value) {
    pthread_mutex_lock(&p->lock);
    node = revive(p, value);
    pthread_mutex_unlock(&p->lock);
  }
  if (e && value && !node) {
    node = disp__malloc(sizeof *node + p->size);
    if (node) {
      memcpy(node->value, value, p->size);
      node->next = NULL;
    }
  }
  int owned = disp__owner_current() != NULL;
  /* Recorded before the change, so running out of memory changes nothing. */
  if (!e || (value && !node) || (owned && disp__owner_defer(restore, e, NULL) != DISP_OK)) {
    disp__free(e);
    if (node) { /* back where it was: retired (a reader may hold a revived one) */
      pthread_mutex_lock(&p->lock);
      node->next = p->retired;
      p->retired = node;
      pthread_mutex_unlock(&p->lock);
    }
    return disp__fail(DISP_ERR_NO_MEMORY, "out of memory registering %s", what);
  }
  *e = (disp__published_entry){NULL, p, type, node ? (const void *)node->value : builtin_of(p, type), owned};
  pthread_mutex_lock(&p->lock);
  if (!owned) /* the program's own earlier value is replaced for good */
    for (disp__published_entry *q = p->live[type], *next; q; q = next) {
      next = q->next;
      if (!q->owned) drop_entry(p, q);
    }
  e->next = p->live[type];
  p->live[type] = e;
  atomic_store_explicit(&p->table[type], e->value, memory_order_release);
  pthread_mutex_unlock(&p->lock);
  return DISP_OK;
}
