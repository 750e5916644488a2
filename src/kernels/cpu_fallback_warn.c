/*
 * cpu_fallback_warn.c - the CPU fallback's warning, once per operator.
 *
 * 1.13's MPS fallback uses TORCH_WARN_ONCE, which is once per process; the
 * libdispatch option is once per operator, so that each operator a backend
 * lacks is named. The set of names warned about lives for the process
 * (operator handles die with disp_shutdown; names do not), as
 * TORCH_WARN_ONCE's flag does.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A node the table could not take is freed: that name warns again later. */
#define uthash_nonfatal_oom(obj) disp__free(obj)
#include "uthash_internal.h"

#include "cpu_fallback_internal.h"
#include "error_internal.h"

typedef struct warned {
  UT_hash_handle hh;
  char name[]; /* the key */
} warned;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static warned *g_warned;

/* Adds `name`; 1 when it was not there yet. Precondition: g_lock held. */
static int add_name(const char *name) {
  warned *w = NULL;
  size_t len = strlen(name);
  HASH_FIND(hh, g_warned, name, len, w);
  if (w) return 0;
  if (!(w = disp__malloc(sizeof *w + len + 1))) return 1;
  memcpy(w->name, name, len + 1);
  HASH_ADD_KEYPTR(hh, g_warned, w->name, len, w);
  return 1;
}

void disp__fb_warn_once(const disp_op *op, disp_backend backend) {
  const char *name = disp_op_name(op);
  pthread_mutex_lock(&g_lock);
  int first = add_name(name);
  pthread_mutex_unlock(&g_lock);
  if (first)
    disp__warn("The operator '%s' is not currently supported on the %s backend and will fall back to run on the CPU. "
               "This may have performance implications.",
               name, disp_backend_name(backend));
}
