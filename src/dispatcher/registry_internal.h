/*
 * registry_internal.h - the operator registry's data structures.
 *
 * Note [Lock-free tables]
 * Registration takes disp__registry.lock; calls never do. Each operator
 * publishes its computed table (one kernel pointer per runtime key plus the
 * per-backend fallthrough masks) as a single atomic pointer, so a call sees
 * either the old table or the new one, never a mix. Replaced tables and
 * removed kernel entries are retired and freed once no lookup can hold them
 * (Note [Reclaiming retired tables], reclaim_internal.h). A removed kernel's
 * user_data is destroyed right after the removal, outside the lock, because
 * the code that destroys it may be unloaded right after (a plugin).
 *
 * Note [User callbacks run unlocked]
 * Kernel destroy callbacks and warning handlers are user code that may call
 * back into the library (disp_op_find takes the registry lock). Code under
 * the lock never runs them: it queues them (disp__defer) and disp__unlock()
 * runs the queue after releasing the lock.
 *
 * Note [Fallback proxies]
 * A table cell whose kernel comes from a backend fallback (or from nothing)
 * holds the key's proxy entry instead of the fallback itself; the proxy's
 * boxed function reads the key's current fallback when called. So adding,
 * replacing or removing a fallback stores one pointer and touches no table,
 * unless it changes whether the key is a fallthrough (the tables' masks
 * depend on that): then only the tables that change are republished.
 */
#ifndef DISP_REGISTRY_INTERNAL_H
#define DISP_REGISTRY_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "uthash_internal.h"

#include "disp/call.h"
#include "disp/dispatcher.h"
#include "disp/library.h"
#include "signature_internal.h"
#include "tls_internal.h"

/* Where a computed table entry came from (PyTorch's provenance strings). */
typedef enum disp_provenance {
  DISP_PROV_MISSING,
  DISP_PROV_KERNEL,
  DISP_PROV_DEFAULT_BACKEND,  /* "default backend kernel": CEA / CEANF */
  DISP_PROV_MATH,             /* "math kernel": CompositeImplicitAutograd */
  DISP_PROV_AMBIGUOUS,        /* "ambiguous autogradother" */
  DISP_PROV_AUTOGRAD,         /* "autograd kernel": the Autograd alias */
  DISP_PROV_FALLBACK          /* "backend fallback" */
} disp_provenance;

const char *disp__provenance_name(disp_provenance p);

/* Entry flags beyond the public DISP_KERNEL_* ones. */
enum {
  DISP_ENTRY_BUILTIN = 1u << 8,   /* one of the library's own default fallbacks */
  DISP_ENTRY_AMBIGUOUS = 1u << 9, /* the ambiguous-AutogradOther error kernel */
  DISP_ENTRY_MISSING = 1u << 10,  /* the error kernel of an empty slot */
  DISP_ENTRY_PROXY = 1u << 11     /* a key's fallback proxy (Note [Fallback proxies]) */
};

/* A user callback queued to run after the registry lock is released (Note
 * [User callbacks run unlocked]). */
typedef struct disp_deferred {
  void (*fn)(void *arg);
  void *arg;
  struct disp_deferred *next;
} disp_deferred;

/* Queues `d` (owned by the queue from now on; freed after it ran). */
void disp__defer(disp_deferred *d);
/* Queues a warning: the message is formatted now, handed to the handler
 * after the lock is released. Dropped when out of memory. */
void disp__defer_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A registered kernel. Immutable once published (Note [Lock-free tables]). */
typedef struct disp_kernel_entry {
  /* First, so a table slot is also a disp_kernel_slot for the call path. */
  union {
    disp_kernel_slot slot;
    struct {
      disp_boxed_fn boxed;
      disp_fn unboxed;
      unsigned flags;
      void *user_data;
    };
  };
  /* The destroy callback and its user_data, allocated with the entry so the
   * removal that queues it needs no memory; NULL without a destroy. */
  disp_deferred *on_destroy;
  char *debug;         /* "registered at FILE:LINE" or the kernel's own text */
  disp_schema *schema; /* the schema the kernel was written for, or NULL */
} disp_kernel_entry;

/* One kernel in an operator's per-key stack (newest first). */
typedef struct disp_kernel_node {
  disp_kernel_entry *entry;
  struct disp_kernel_node *next;
} disp_kernel_node;

/* An operator's computed, published table. */
typedef struct disp_op_table {
  /* First, in the layout of disp_fast_table (Note [The inline fast path]):
   * the kernels as the call path reads them (Note [The grid]), then the keys
   * whose slot is not a fallthrough, per backend index of the call's key set.
   * PyTorch keeps one mask, or one per backend when a per-backend key is a
   * fallthrough for some backends only; always keeping them per backend
   * costs one load. */
  const disp_kernel_entry *grid[DISP__GRID_ROWS * DISP__GRID_COLS]; /* column by column */
  disp_keyset non_fallthrough[DISP__GRID_COLS];
  uint64_t col_start[DISP__GRID_COLS]; /* b * DISP__GRID_ROWS */
  const disp_kernel_entry *slot[DISP_NUM_RUNTIME_ENTRIES];
} disp_op_table;

struct disp_op {
  /* First: what typed calls read inline (Note [The inline fast path]); the
   * real table, or its traced twin while the trace is on. */
  _Atomic(disp_op_table *) table;
  _Atomic(disp_op_table *) real;  /* the computed table */
  char *name;                     /* "ns::name.overload": the hash key */
  _Atomic(disp_schema *) schema; /* NULL until def; read without the lock */
  _Atomic(disp_signature *) sig;  /* the C calling convention, set with the schema */
  /* The generated boxed adapter of a built-in operator (aten_internal.h),
   * set with the def: boxed calls of its unboxed kernels use it, not libffi. */
  _Atomic(disp_fn) adapter;
  void *closure;                  /* disp_op_typed_entry's newest closure (call.c), or NULL */
  disp_fn closure_fn;
  disp_registration *def;         /* the def's registration, NULL until def */
  disp_kernel_node *kernels[DISP_KEY_COUNT];
  /* The keys whose stack above is not empty, one bit each: refreshed by
   * every table computation, read by disp__op_compute_entry. */
  uint64_t kernel_keys[(DISP_KEY_COUNT + 63) / 64];
  int impl_count;                 /* live impl registrations */
  UT_hash_handle hh;
};

typedef enum disp_registration_kind {
  DISP_REG_DEF,
  DISP_REG_IMPL,
  DISP_REG_FALLBACK
} disp_registration_kind;

struct disp_registration {
  disp_registration_kind kind;
  int removed;
  disp_op *op;              /* DEF, IMPL */
  disp_key key;             /* IMPL, FALLBACK: the (possibly alias) key */
  disp_kernel_entry *entry; /* IMPL; FALLBACK: the entry on every covered slot */
  char *debug;              /* DEF: "registered at FILE:LINE" */
  disp_schema *schema;      /* DEF: the schema it installed */
  disp_signature *sig;      /* DEF: its signature */
  struct disp_retired_schema *retire_rec; /* DEF: for retire_schema at removal */
  struct disp_registration *next; /* the library's list, newest first */
};

/* A backend fallback slot: at most one user fallback over a built-in default. */
typedef struct disp_fallback_slot {
  disp_kernel_entry *user;
  disp_registration *user_reg;
  disp_kernel_entry *builtin;
  /* What the key's proxy runs: user, else builtin, else NULL (the missing
   * kernel). Read by calls without the lock. */
  _Atomic(const disp_kernel_entry *) current;
} disp_fallback_slot;

/* A namespace claimed by a DEF library. */
typedef struct disp_namespace_claim {
  char *ns;
  char *debug;
  UT_hash_handle hh;
} disp_namespace_claim;

typedef struct disp_retired_schema {
  disp_schema *schema;
  disp_signature *sig;
  struct disp_retired_schema *next;
} disp_retired_schema;

typedef struct disp_registry {
  pthread_mutex_t lock;
  disp_op *ops;                      /* uthash by name */
  disp_fallback_slot fallbacks[DISP_NUM_RUNTIME_ENTRIES];
  disp_kernel_entry proxies[DISP_NUM_RUNTIME_ENTRIES]; /* Note [Fallback proxies] */
  disp_namespace_claim *namespaces;  /* uthash by ns */
  disp_deferred *deferred;           /* Note [User callbacks run unlocked] */
  /* Entries a table may still point at after an out-of-memory recompute:
   * freed at shutdown only. */
  disp_kernel_entry *ambiguous;      /* the shared ambiguous-AutogradOther kernel */
  disp_kernel_entry *missing;        /* the shared error kernel of empty slots */
  disp_kernel_entry *traced;         /* the tracing kernel of traced twins (call.c) */
  struct disp_retired_schema *retired_schemas; /* removed defs' schemas */
  int initialized;
} disp_registry;

extern disp_registry disp__registry;

/* Precondition for every function below: disp__registry.lock is held. */

/* Find or create the operator entry for `name` (does not define it). */
disp_status disp__op_get_or_create(const char *name, disp_op **out);
disp_op *disp__op_lookup(const char *name);

/* The computed table entry for one runtime key (PyTorch's
 * computeDispatchTableEntryWithDebug). Reads op->kernel_keys, which every
 * table update refreshes. */
const disp_kernel_entry *disp__op_compute_entry(const disp_op *op, disp_key key,
                                                disp_provenance *prov);
/* Recompute and publish op's table (no-op when nothing changed). */
disp_status disp__op_update_table(disp_op *op);
/* The same for a removal, which cannot fail (Note [Removal never fails]). */
void disp__op_update_table_nofail(disp_op *op);
/* Recompute every operator's table; only changed ones are republished. */
disp_status disp__ops_update_all(void);

/* Note [Fallback proxies]: publishes slot i's current fallback (user, else
 * built-in), updating the tables when its fallthrough-ness changes. */
disp_status disp__fallback_publish(int i);
void disp__fallback_publish_nofail(int i);
/* The slot's fallback: the user's, else the built-in one, else NULL. */
const disp_kernel_entry *disp__fallback_of(int i);
/* Sets up the proxy entries (once, before any table is computed). */
void disp__proxies_init(void);

/* Does a published table entry run a kernel (not the missing-kernel error)? */
int disp__entry_runs_kernel(const disp_kernel_entry *e);

/* Kernel entries. */
disp_kernel_entry *disp__kernel_entry_new(const disp_kernel *k, const char *default_debug,
                                          disp_status *st);
/* Frees an entry that was never published; its user_data stays the caller's. */
void disp__kernel_entry_discard(disp_kernel_entry *e);
/* A published entry leaves: its destroy callback is queued (Note [User
 * callbacks run unlocked]) and its memory goes to the reclaimer. */
void disp__kernel_entry_retire(disp_kernel_entry *e);
/* Queues the destroy callback only (the memory stays). */
void disp__kernel_entry_queue_destroy(disp_kernel_entry *e);
/* As retire, but frees the memory now: disp_shutdown only. */
void disp__kernel_entry_free_at_shutdown(disp_kernel_entry *e);

/* Empties the registry for disp_shutdown: every operator, kernel, fallback,
 * namespace claim and kept or retired entry is freed. The caller holds the
 * registry lock (destroy callbacks run when it unlocks). */
void disp__registry_teardown(void);

/* Registration primitives used by library.c. */
disp_status disp__register_def(const char *ns, const char *schema_text, const char *debug,
                               disp_fn adapter, disp_registration **out);
disp_status disp__register_impl(const char *ns, const char *name, disp_key key,
                                const disp_kernel *kernel, const char *debug,
                                disp_registration **out);
disp_status disp__register_fallback(disp_key key, const disp_kernel *kernel, const char *debug,
                                    disp_registration **out);
void disp__registration_remove_locked(disp_registration *reg);
void disp__registration_free(disp_registration *reg);

/* Frees an operator's typed entry points (call.c), at shutdown. */
void disp__typed_entries_free(void *newest);

/* Built-in default fallbacks (builtin_fallbacks.c). */
disp_status disp__install_builtin_fallbacks(void);

/* Lock helpers. disp__lock() also drains the static registration queue
 * first when needed (see lifecycle.c). */
void disp__lock(void);
void disp__unlock(void);
void disp__ensure_init(void);

#endif
