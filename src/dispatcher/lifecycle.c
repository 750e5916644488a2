/*
 * lifecycle.c - the static registration queue and the dispatcher's
 * lifecycle: the drain on first use, a plugin's blocks, the registry check,
 * and the dispatcher's part of shutting down (the order of start-up and
 * shut-down is the runtime's: src/runtime/).
 *
 * Note [Static registration]
 * DISP_LIBRARY* blocks run no dispatcher code from their constructors: the
 * constructor links a static node into g_queue with a CAS (constructors run
 * in an unspecified order, possibly before libc is fully usable). The queue
 * is drained by disp__ensure_init(): all DEF/FRAGMENT blocks first, then all
 * IMPL blocks, each in link order, so an impl never runs before the def it
 * checks against, whatever the object-file order. Drained nodes are kept so
 * that disp_shutdown() followed by disp_init() starts over with them. The
 * built-in libraries, which the runtime module hands over
 * (disp__library_set_builtins, Note [Start-up] in src/runtime/init.c), join
 * the first drain ahead of every queued block, as if their constructors had
 * run first; the dispatcher itself knows no particular library.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "alloc_internal.h"
#include "error_internal.h"
#include "library_internal.h"
#include "owner_internal.h"
#include "plugin_internal.h"
#include "registry_internal.h"
#include "single_copy_internal.h"
#include "strbuf_internal.h"

void disp__trace_init(void); /* call.c */

static _Atomic(disp_library_node *) g_queue;
static disp_library_node *g_drained;      /* FIFO order, linked by next */
static disp_library_node **g_drained_tail = &g_drained;
static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_ready;
/* The built-in fallbacks could not be installed (out of memory): the next
 * lookup tries again, disp_registry_check reports it meanwhile. */
static atomic_int g_fallbacks_failed;
static _Thread_local int tls_draining;

void disp_library_enqueue(disp_library_node *node) {
  if (!node) return; /* nothing to queue: a no-op, as for any void function */
  disp_library_node *head = atomic_load(&g_queue);
  do {
    node->next = head;
  } while (!atomic_compare_exchange_weak(&g_queue, &head, node));
}

/* ---- the drain ---------------------------------------------------------- */

/* A node's state (disp_library_node.state): 0 queued, 1 ran, or failed;
 * out of memory is told apart, so that it is reported as such. */
enum { NODE_FAILED = -1, NODE_FAILED_OOM = -2 };

/* The failure's message; when even keeping it took memory that was not
 * there, what is known. */
static const char *node_error(const disp_library_node *n) {
  if (n->error) return n->error;
  return n->state == NODE_FAILED_OOM ? "out of memory (and for its message)" : "";
}

static void run_node(disp_library_node *node) {
  disp_library *lib = NULL;
  disp_clear_error();
  disp_status st = disp_library_new(node->kind, node->ns, node->key, node->file, node->line, &lib);
  if (st == DISP_OK) {
    node->lib = lib;
    node->body(lib);
  }
  /* A body reports failures through the calls it makes; the first failing
   * call's message is what disp_last_error() holds now. */
  const char *msg = disp_last_error();
  if (st != DISP_OK || msg[0]) {
    int oom = st == DISP_ERR_NO_MEMORY || disp__last_status() == DISP_ERR_NO_MEMORY;
    node->state = oom ? NODE_FAILED_OOM : NODE_FAILED;
    disp__free(node->error);
    node->error = disp__strdup(msg[0] ? msg : "failed");
  } else {
    node->state = 1;
  }
}

/* Empties the queue; returns its nodes in link order (the queue is LIFO). */
static disp_library_node *take_queue(void) {
  disp_library_node *pending = atomic_exchange(&g_queue, NULL);
  disp_library_node *fifo = NULL;
  while (pending) {
    disp_library_node *n = pending;
    pending = n->next;
    n->next = fifo;
    fifo = n;
  }
  return fifo;
}

/* The built-in libraries (disp__library_set_builtins): each part published
 * once, read under g_init_lock. */
typedef struct builtin_list {
  disp_library_node *nodes;
  size_t count;
} builtin_list;
static _Atomic(builtin_list *) g_builtins[DISP__BUILTIN_PARTS];
static int g_builtins_taken; /* under g_init_lock */

void disp__library_set_builtins(int part, disp_library_node *nodes, size_t count) {
  static builtin_list lists[DISP__BUILTIN_PARTS];
  static atomic_flag claimed[DISP__BUILTIN_PARTS] = {ATOMIC_FLAG_INIT, ATOMIC_FLAG_INIT};
  if (part < 0 || part >= DISP__BUILTIN_PARTS || !nodes || atomic_flag_test_and_set(&claimed[part])) return;
  lists[part].nodes = nodes;
  lists[part].count = count;
  atomic_store_explicit(&g_builtins[part], &lists[part], memory_order_release);
}

int disp__library_has_builtins(void) {
  for (int p = 0; p < DISP__BUILTIN_PARTS; p++)
    if (atomic_load(&g_builtins[p])) return 1;
  return 0;
}

/* Puts the built-in libraries in front of `fifo`, part by part in order,
 * the first time only: from then on they are drained nodes like the others.
 * Under g_init_lock. */
static disp_library_node *builtins_first(disp_library_node *fifo) {
  if (g_builtins_taken || !disp__library_has_builtins()) return fifo;
  g_builtins_taken = 1;
  for (int p = DISP__BUILTIN_PARTS; p-- > 0;) {
    builtin_list *list = atomic_load_explicit(&g_builtins[p], memory_order_acquire);
    for (size_t i = list ? list->count : 0; i-- > 0;) {
      list->nodes[i].next = fifo;
      fifo = &list->nodes[i];
    }
  }
  return fifo;
}

void disp__ensure_init(void) {
  if (atomic_load_explicit(&g_ready, memory_order_acquire) && !atomic_load(&g_queue) &&
      !atomic_load_explicit(&g_fallbacks_failed, memory_order_relaxed))
    return;
  if (tls_draining) return;
  pthread_mutex_lock(&g_init_lock);
  tls_draining = 1;
  /* Nothing drained here belongs to whoever is current (a plugin whose load
   * is the library's first use, say): its unload must not take the
   * built-in libraries with it. */
  disp_owner *owner = disp__owner_swap(NULL);
  disp__single_copy_check();
  int refuse = disp__is_second_copy(); /* Note [A second copy] */
  if (!disp__registry.initialized && !refuse) {
    disp__trace_init();
    pthread_mutex_lock(&disp__registry.lock);
    int ok = disp__install_builtin_fallbacks() == DISP_OK;
    if (ok) disp__registry.initialized = 1;
    atomic_store(&g_fallbacks_failed, !ok);
    pthread_mutex_unlock(&disp__registry.lock);
  }
  disp_library_node *fifo = take_queue();
  if (!refuse) fifo = builtins_first(fifo);
  for (int pass = 0; pass < 2; pass++)
    for (disp_library_node *n = fifo; n; n = n->next)
      if ((n->kind == DISP_LIBRARY_IMPL) == pass) run_node(n);
  *g_drained_tail = fifo;
  while (*g_drained_tail) g_drained_tail = &(*g_drained_tail)->next;
  tls_draining = 0;
  atomic_store_explicit(&g_ready, 1, memory_order_release);
  pthread_mutex_unlock(&g_init_lock);
  /* The implicit initialisation honours DISP_PLUGINS as disp_init() does
   * (once per lifetime; a no-op inside a plugin's own load). */
  disp__plugins_autoload();
  disp__owner_swap(owner);
}

void disp__library_init(void) {
  disp__ensure_init();
  disp__plugins_autoload();
}

/* ---- a plugin's static blocks (Note [Plugin attribution]) --------------- */

void disp__library_load_begin(void) {
  disp__ensure_init(); /* what was queued before the plugin is not its */
  pthread_mutex_lock(&g_init_lock);
  tls_draining = 1;
}

disp_library_node *disp__library_load_take(void) { return take_queue(); }

void disp__library_load_end(void) {
  tls_draining = 0;
  pthread_mutex_unlock(&g_init_lock);
}

/* Takes a plugin's node out of the drained list and back to its state
 * before the drain; its library goes by its own record, which is newer.
 * Runs at unload, with no lock held. */
static void node_undo(void *ctx) {
  disp_library_node *node = ctx;
  pthread_mutex_lock(&g_init_lock);
  disp_library_node **p = &g_drained;
  while (*p && *p != node) p = &(*p)->next;
  if (*p) *p = node->next;
  g_drained_tail = &g_drained;
  while (*g_drained_tail) g_drained_tail = &(*g_drained_tail)->next;
  pthread_mutex_unlock(&g_init_lock);
  disp__free(node->error);
  node->error = NULL;
  node->state = 0;
  node->lib = NULL;
  node->next = NULL;
}

/* Joins the drained list, recorded on the current owner so that unloading
 * takes it out again. Precondition: g_init_lock held. */
static disp_status keep_drained(disp_library_node *node) {
  disp_status st = disp__owner_defer(node_undo, node, NULL);
  if (st != DISP_OK) return st;
  node->next = NULL;
  *g_drained_tail = node;
  g_drained_tail = &node->next;
  return DISP_OK;
}

disp_status disp__library_load_run(disp_library_node *fifo) {
  disp_library_node *order[2] = {NULL, NULL}, **tail[2] = {&order[0], &order[1]};
  while (fifo) { /* defs, then impls, each in link order */
    disp_library_node *n = fifo;
    fifo = n->next;
    int pass = n->kind == DISP_LIBRARY_IMPL;
    n->next = NULL;
    *tail[pass] = n;
    tail[pass] = &n->next;
  }
  *tail[0] = order[1];
  for (disp_library_node *n = order[0], *next; n; n = next) {
    next = n->next;
    if (keep_drained(n) != DISP_OK) return DISP_ERR_NO_MEMORY;
    run_node(n);
    if (n->state < 0)
      return disp__fail(n->state == NODE_FAILED_OOM ? DISP_ERR_NO_MEMORY : DISP_ERR_PLUGIN,
                        "%s(%s) at %s:%d failed: %s", disp__library_kind_macro(n->kind), n->ns, n->file, n->line,
                        node_error(n));
  }
  return DISP_OK;
}

disp_status disp_registry_check(void) {
  if (disp__refuse_second_copy() != DISP_OK) return DISP_ERR_DUPLICATE;
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp_status st = DISP_OK;
  disp__ensure_init();
  if (atomic_load(&g_fallbacks_failed)) {
    disp__strbuf_append(&b, "the built-in backend fallbacks could not be installed: out of memory\n");
    st = DISP_ERR_NO_MEMORY;
  }
  pthread_mutex_lock(&g_init_lock);
  for (disp_library_node *n = g_drained; n; n = n->next) {
    if (n->state >= 0) continue;
    disp__strbuf_appendf(&b, "%s(%s) at %s:%d failed: %s\n", disp__library_kind_macro(n->kind), n->ns, n->file,
                         n->line, node_error(n));
    if (st == DISP_OK || n->state == NODE_FAILED_OOM)
      st = n->state == NODE_FAILED_OOM ? DISP_ERR_NO_MEMORY : DISP_ERR_INVALID_ARG;
  }
  pthread_mutex_unlock(&g_init_lock);
  disp__lock();
  disp_op *op, *tmp;
  HASH_ITER(hh, disp__registry.ops, op, tmp) {
    if (atomic_load(&op->schema) || op->impl_count == 0) continue;
    disp__strbuf_appendf(&b, "%s has kernels registered but no def(); it was never defined:", op->name);
    for (int k = 0; k < DISP_KEY_COUNT; k++)
      for (disp_kernel_node *kn = op->kernels[k]; kn; kn = kn->next)
        disp__strbuf_appendf(&b, " [%s: %s]", disp_key_name((disp_key)k), kn->entry->debug);
    disp__strbuf_append(&b, "\n");
    if (st == DISP_OK) st = DISP_ERR_OP_NOT_FOUND;
  }
  disp__unlock();
  if (st != DISP_OK) {
    if (b.len) b.data[--b.len] = '\0'; /* drop the last newline */
    disp__fail(st, "%s%s", disp__strbuf_cstr(&b), b.oom ? " ... (cut short: out of memory)" : "");
  }
  disp__strbuf_free(&b);
  return st;
}

static disp_library_node *reverse_nodes(disp_library_node *n) {
  disp_library_node *out = NULL;
  while (n) {
    disp_library_node *next = n->next;
    n->next = out;
    out = n;
    n = next;
  }
  return out;
}

void disp__library_shutdown(void) {
  pthread_mutex_lock(&g_init_lock);
  tls_draining = 1; /* freeing libraries must not start a drain */
  /* Static libraries go first, newest first, as their registrations would:
   * the list is reversed in place and back (shutting down allocates nothing,
   * Note [Removal never fails]). */
  g_drained = reverse_nodes(g_drained);
  for (disp_library_node *node = g_drained; node; node = node->next) {
    disp_library_free(node->lib);
    node->lib = NULL;
  }
  g_drained = reverse_nodes(g_drained);

  disp__shutdown_hooks_run(); /* Note [Shutdown hooks]: no lock of the registry held */
  pthread_mutex_lock(&disp__registry.lock);
  disp__registry_teardown();
  disp__library_new_generation();
  disp__unlock(); /* runs the destroy callbacks, outside the lock */

  /* Put every static block back in the queue for the next disp_init(). */
  for (disp_library_node *node = g_drained; node; node = node->next) {
    node->state = 0;
    disp__free(node->error);
    node->error = NULL;
  }
  disp_library_node *rest = g_drained;
  g_drained = NULL;
  g_drained_tail = &g_drained;
  /* Enqueue in link order: the drain reverses the LIFO queue back. */
  while (rest) {
    disp_library_node *next = rest->next;
    disp_library_enqueue(rest);
    rest = next;
  }
  atomic_store(&g_ready, 0);
  tls_draining = 0;
  pthread_mutex_unlock(&g_init_lock);
}
