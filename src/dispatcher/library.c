/*
 * library.c - libraries (groups of registrations), the static registration
 * queue, and the dispatcher's lifecycle.
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
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ffi.h>

#include "alloc_internal.h"
#include "argcheck_internal.h"
#include "error_internal.h"
#include "library_internal.h"
#include "owner_internal.h"
#include "plugin_internal.h"
#include "reclaim_internal.h"
#include "registry_internal.h"
#include "schema_internal.h"
#include "single_copy_internal.h"
#include "strbuf_internal.h"

struct disp_library {
  disp_library_kind kind;
  char *ns;
  disp_key key;
  char *debug;                 /* "registered at FILE:LINE" */
  disp_registration *regs;     /* newest first */
  disp_namespace_claim *claim; /* DEF libraries */
  unsigned generation;         /* the dispatcher lifetime it belongs to */
  disp_undo *undo;             /* its plugin's record (Note [Owners]), or NULL */
};

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
static unsigned g_generation = 1;

void disp_library_enqueue(disp_library_node *node) {
  if (!node) return; /* nothing to queue: a no-op, as for any void function */
  disp_library_node *head = atomic_load(&g_queue);
  do {
    node->next = head;
  } while (!atomic_compare_exchange_weak(&g_queue, &head, node));
}

/* ---- libraries ---------------------------------------------------------- */

/* A plugin's library, freed when the plugin is unloaded (Note [Owners]). */
static void library_undo(void *ctx) {
  disp_library *lib = ctx;
  lib->undo = NULL; /* the record is running: nothing to cancel */
  disp_library_free(lib);
}

static const char *kind_macro(disp_library_kind kind) {
  switch (kind) {
    case DISP_LIBRARY_DEF: return "DISP_LIBRARY";
    case DISP_LIBRARY_FRAGMENT: return "DISP_LIBRARY_FRAGMENT";
    case DISP_LIBRARY_IMPL: break;
  }
  return "DISP_LIBRARY_IMPL";
}

/* A namespace is a C/Python identifier, as PyTorch's schema parser reads
 * the `ns` of `ns::op`; anything else could never be used in a def or impl
 * (and "x::y" would silently name another namespace). */
static int is_identifier(const char *s) {
  if (!(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
  for (const char *p = s + 1; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_')) return 0;
  return 1;
}

static disp_status check_namespace(disp_library_kind kind, const char *ns) {
  static const char rule[] =
      "a namespace must be a valid identifier (a letter or '_', then letters, digits or '_')";
  if (!ns) return disp__fail(DISP_ERR_INVALID_ARG, "%s: the namespace is NULL; %s", kind_macro(kind), rule);
  if (!is_identifier(ns))
    return disp__fail(DISP_ERR_INVALID_ARG, "%s: invalid namespace \"%s\"; %s", kind_macro(kind), ns, rule);
  return DISP_OK;
}

disp_status disp_library_new(disp_library_kind kind, const char *ns, disp_key key,
                             const char *file, int line, disp_library **out) {
  DISP_REFUSE_NULL(ns);
  DISP_REFUSE_NULL(out);
  if (disp__refuse_second_copy() != DISP_OK) return DISP_ERR_DUPLICATE;
  if ((unsigned)kind > DISP_LIBRARY_IMPL)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_library_new: invalid library kind %d", (int)kind);
  if ((unsigned)key >= DISP_KEY_COUNT)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_library_new: invalid dispatch key %d", (int)key);
  if (check_namespace(kind, ns) != DISP_OK) return DISP_ERR_INVALID_ARG;
  if (kind == DISP_LIBRARY_IMPL && key != DISP_KEY_UNDEFINED && !disp_key_is_alias(key) &&
      disp_key_table_index(key) <= 0)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "%s(%s, %s): %s is not a runtime or alias dispatch key", kind_macro(kind), ns,
                      disp_key_name(key), disp_key_name(key));
  if (kind != DISP_LIBRARY_IMPL && strcmp(ns, "_") == 0)
    return disp__fail(DISP_ERR_INVALID_ARG, "%s: the namespace \"_\" is only for %s",
                      kind_macro(kind), kind_macro(DISP_LIBRARY_IMPL));
  disp_library *lib = disp__calloc(1, sizeof *lib);
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__strbuf_appendf(&b, "registered at %s:%d", file ? file : "<unknown>", line);
  if (!lib || !(lib->ns = disp__strdup(ns)) || !(lib->debug = disp__strbuf_steal(&b))) goto oom;
  lib->kind = kind;
  lib->key = key;
  /* Note [Plugin attribution]: recorded first, so running out of memory
   * here fails with nothing claimed. */
  if (disp__owner_defer(library_undo, lib, &lib->undo) != DISP_OK) {
    disp__free(lib->ns);
    disp__free(lib->debug);
    disp__free(lib);
    return DISP_ERR_NO_MEMORY;
  }

  disp__lock();
  lib->generation = g_generation;
  if (kind == DISP_LIBRARY_DEF) {
    disp_namespace_claim *c = NULL;
    HASH_FIND_STR(disp__registry.namespaces, ns, c);
    if (c) {
      disp_status st = disp__fail(
          DISP_ERR_DUPLICATE,
          "Only a single TORCH_LIBRARY can be used to register the namespace %s; please put all "
          "of your definitions in a single TORCH_LIBRARY block.  If you were trying to specify "
          "implementations, consider using TORCH_LIBRARY_IMPL (which can be duplicated).  If you "
          "really intended to define operators for a single namespace in a distributed way, you "
          "can use TORCH_LIBRARY_FRAGMENT to explicitly indicate this.  Previous registration of "
          "TORCH_LIBRARY was %s; latest registration was %s",
          ns, c->debug, lib->debug);
      disp__unlock();
      disp__owner_cancel(lib->undo);
      disp__free(lib->ns);
      disp__free(lib->debug);
      disp__free(lib);
      return st;
    }
    c = disp__calloc(1, sizeof *c);
    if (c && (c->ns = disp__strdup(ns)) && (c->debug = disp__strdup(lib->debug)))
      HASH_ADD_KEYPTR(hh, disp__registry.namespaces, c->ns, strlen(c->ns), c);
    if (!c || !DISP_HASH_ADDED(c)) {
      if (c) disp__free(c->ns), disp__free(c->debug);
      disp__free(c);
      disp__unlock();
      disp__owner_cancel(lib->undo);
      goto oom;
    }
    lib->claim = c;
  }
  disp__unlock();
  *out = lib;
  return DISP_OK;
oom:
  disp__strbuf_free(&b);
  if (lib) {
    disp__free(lib->ns);
    disp__free(lib->debug);
  }
  disp__free(lib);
  return disp__fail(DISP_ERR_NO_MEMORY, "out of memory creating a library for %s", ns);
}

void disp_library_free(disp_library *lib) {
  if (!lib) return;
  disp__owner_cancel(lib->undo);
  disp__lock();
  int live = lib->generation == g_generation;
  for (disp_registration *r = lib->regs; r; r = r->next)
    if (live) disp__registration_remove_locked(r);
  if (live && lib->claim) {
    HASH_DEL(disp__registry.namespaces, lib->claim);
    disp__free(lib->claim->ns);
    disp__free(lib->claim->debug);
    disp__free(lib->claim);
  }
  disp__unlock();
  while (lib->regs) {
    disp_registration *r = lib->regs;
    lib->regs = r->next;
    disp__registration_free(r);
  }
  disp__free(lib->ns);
  disp__free(lib->debug);
  disp__free(lib);
}

const char *disp_library_namespace(const disp_library *lib) {
  DISP_REFUSE_NULL_PTR(lib);
  return lib->ns;
}

disp_key disp_library_key(const disp_library *lib) { return lib ? lib->key : DISP_KEY_UNDEFINED; }

static void keep(disp_library *lib, disp_registration *reg, disp_registration **out) {
  reg->next = lib->regs;
  lib->regs = reg;
  if (out) *out = reg;
}

static const char *lib_ns(const disp_library *lib) {
  return strcmp(lib->ns, "_") == 0 ? NULL : lib->ns;
}

static disp_status library_def(disp_library *lib, const char *schema, disp_fn adapter,
                               disp_registration **out) {
  if (!lib || !schema) return disp__fail(DISP_ERR_INVALID_ARG, "disp_library_def: NULL argument");
  if (lib->kind == DISP_LIBRARY_IMPL)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "def(\"%s\") is not allowed in a %s block; put definitions in DISP_LIBRARY "
                      "or DISP_LIBRARY_FRAGMENT (%s)",
                      schema, kind_macro(lib->kind), lib->debug);
  disp_registration *reg = NULL;
  disp__lock();
  disp_status st = disp__register_def(lib->ns, schema, lib->debug, adapter, &reg);
  if (st == DISP_OK) keep(lib, reg, out);
  disp__unlock();
  return st;
}

disp_status disp_library_def(disp_library *lib, const char *schema, disp_registration **out) {
  DISP_REFUSE_NULL(lib);
  DISP_REFUSE_NULL(schema);
  return library_def(lib, schema, NULL, out);
}

disp_status disp__library_def_builtin(disp_library *lib, const char *schema, disp_fn adapter) {
  return library_def(lib, schema, adapter, NULL);
}

disp_status disp_library_impl_key(disp_library *lib, const char *name, disp_key key,
                                  disp_kernel kernel, disp_registration **out) {
  DISP_REFUSE_NULL(lib);
  DISP_REFUSE_NULL(name);
  if ((unsigned)key >= DISP_KEY_COUNT)
    return disp__fail(DISP_ERR_INVALID_ARG, "impl(\"%s\"): invalid dispatch key %d", name, (int)key);
  disp_registration *reg = NULL;
  disp__lock();
  disp_status st = disp__register_impl(lib_ns(lib), name, key, &kernel, lib->debug, &reg);
  if (st == DISP_OK) keep(lib, reg, out);
  disp__unlock();
  return st;
}

disp_status disp_library_impl(disp_library *lib, const char *name, disp_kernel kernel,
                              disp_registration **out) {
  DISP_REFUSE_NULL(lib);
  DISP_REFUSE_NULL(name);
  /* PyTorch registers an impl without a dispatch key (in a TORCH_LIBRARY
   * block) as CompositeImplicitAutograd. */
  disp_key key = lib->kind == DISP_LIBRARY_IMPL && lib->key != DISP_KEY_UNDEFINED
                     ? lib->key
                     : DISP_KEY_COMPOSITE_IMPLICIT_AUTOGRAD;
  return disp_library_impl_key(lib, name, key, kernel, out);
}

disp_status disp_library_fallback(disp_library *lib, disp_kernel kernel, disp_registration **out) {
  DISP_REFUSE_NULL(lib);
  if (lib->kind != DISP_LIBRARY_IMPL || lib->key == DISP_KEY_UNDEFINED)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "fallback() needs a DISP_LIBRARY_IMPL block with a dispatch key (%s)",
                      lib->debug);
  disp_registration *reg = NULL;
  disp__lock();
  disp_status st = disp__register_fallback(lib->key, &kernel, lib->debug, &reg);
  if (st == DISP_OK) keep(lib, reg, out);
  disp__unlock();
  return st;
}

/* ---- lifecycle ---------------------------------------------------------- */

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

/* The built-in libraries (disp__library_set_builtins): published once,
 * read under g_init_lock. */
typedef struct builtin_list {
  disp_library_node *nodes;
  size_t count;
} builtin_list;
static _Atomic(builtin_list *) g_builtins;
static int g_builtins_taken; /* under g_init_lock */

void disp__library_set_builtins(disp_library_node *nodes, size_t count) {
  static builtin_list list;
  static atomic_flag claimed = ATOMIC_FLAG_INIT;
  if (!nodes || atomic_flag_test_and_set(&claimed)) return;
  list.nodes = nodes;
  list.count = count;
  atomic_store_explicit(&g_builtins, &list, memory_order_release);
}

int disp__library_has_builtins(void) { return atomic_load(&g_builtins) != NULL; }

/* Puts the built-in libraries in front of `fifo`, the first time only: from
 * then on they are drained nodes like the others. Under g_init_lock. */
static disp_library_node *builtins_first(disp_library_node *fifo) {
  builtin_list *list = atomic_load_explicit(&g_builtins, memory_order_acquire);
  if (g_builtins_taken || !list) return fifo;
  g_builtins_taken = 1;
  for (size_t i = list->count; i-- > 0;) {
    list->nodes[i].next = fifo;
    fifo = &list->nodes[i];
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
                        "%s(%s) at %s:%d failed: %s", kind_macro(n->kind), n->ns, n->file, n->line,
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
    disp__strbuf_appendf(&b, "%s(%s) at %s:%d failed: %s\n", kind_macro(n->kind), n->ns, n->file,
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
  g_generation++;
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
