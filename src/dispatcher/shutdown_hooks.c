/*
 * shutdown_hooks.c - what runs at disp_shutdown for caches of operator
 * handles (Note [Shutdown hooks] in library_internal.h).
 *
 * The list lives in the dispatcher, below the kernels and autograd modules
 * that register on it; the runtime module (src/runtime/shutdown.c) decides
 * when it runs. Nodes are the registrants' own statics, so registering
 * allocates nothing and cannot fail: there is no limit to drop a hook at.
 */
#include <pthread.h>

#include "library_internal.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static disp_shutdown_hook *g_hooks; /* newest first */

void disp__at_shutdown_hook(disp_shutdown_hook *hook) {
  if (!hook || !hook->fn) return; /* nothing to run */
  pthread_mutex_lock(&g_lock);
  if (!hook->linked) {
    hook->linked = 1;
    hook->next = g_hooks;
    g_hooks = hook;
  }
  pthread_mutex_unlock(&g_lock);
}

void disp__shutdown_hooks_run(void) {
  pthread_mutex_lock(&g_lock);
  disp_shutdown_hook *h = g_hooks;
  g_hooks = NULL;
  pthread_mutex_unlock(&g_lock);
  /* Each node leaves the list just before it runs: a hook that registers
   * itself again (what it calls fills its cache anew) joins the next
   * lifetime's list; one that registers a node still waiting here changes
   * nothing, so this walk's links stay intact. */
  while (h) {
    disp_shutdown_hook *next = h->next;
    pthread_mutex_lock(&g_lock);
    h->next = NULL;
    h->linked = 0;
    pthread_mutex_unlock(&g_lock);
    h->fn();
    h = next;
  }
}
