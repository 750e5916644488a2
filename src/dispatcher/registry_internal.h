/*
 * registry_internal.h - the operator registry's data structures.
 *
 * Note [Lock-free tables]
 * Registration takes g_registry.lock; calls never do. Each operator publishes
 * its computed table (one kernel pointer per runtime key plus the per-backend
 * fallthrough masks) as a single atomic pointer, so a call sees either the
 * old table or the new one, never a mix. Replaced tables and removed kernel
 * entries are not freed while the dispatcher lives (a call may still be
 * reading them); they are retired onto lists freed by disp_shutdown(). A
 * removed kernel's user_data, however, is destroyed at removal, because the
 * code that destroys it may be unloaded right after (a plugin).
 */
#ifndef DISP_REGISTRY_INTERNAL_H
#define DISP_REGISTRY_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#define HASH_NONFATAL_OOM 1
#include <uthash.h>

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
  DISP_ENTRY_MISSING = 1u << 10   /* the error kernel of an empty slot */
};

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
  void (*destroy)(void *);
  char *debug;         /* "registered at FILE:LINE" or the kernel's own text */
  disp_schema *schema; /* the schema the kernel was written for, or NULL */
  struct disp_kernel_entry *retired_next;
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
  const disp_kernel_entry *grid[DISP__GRID_ROWS * DISP__GRID_COLS];
  disp_keyset non_fallthrough[DISP__GRID_COLS];
  const disp_kernel_entry *slot[DISP_NUM_RUNTIME_ENTRIES];
  struct disp_op_table *retired_next;
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
  int impl_count;                 /* live impl registrations */
  disp_op_table *retired_tables;
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
  struct disp_registration *next; /* the library's list, newest first */
};

/* A backend fallback slot: at most one user fallback over a built-in default. */
typedef struct disp_fallback_slot {
  disp_kernel_entry *user;
  disp_registration *user_reg;
  disp_kernel_entry *builtin;
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
  disp_namespace_claim *namespaces;  /* uthash by ns */
  disp_kernel_entry *retired_entries;
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
 * computeDispatchTableEntryWithDebug). */
const disp_kernel_entry *disp__op_compute_entry(const disp_op *op, disp_key key,
                                                disp_provenance *prov);
/* Recompute and publish op's table (no-op when nothing changed). */
disp_status disp__op_update_table(disp_op *op);
/* Recompute every operator's table (after a fallback change). */
disp_status disp__ops_update_all(void);

/* Kernel entries. */
disp_kernel_entry *disp__kernel_entry_new(const disp_kernel *k, const char *default_debug,
                                          disp_status *st);
void disp__kernel_entry_free(disp_kernel_entry *e);
/* Destroy user data now, keep the memory until shutdown. */
void disp__kernel_entry_retire(disp_kernel_entry *e);

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
 * first when needed (see library.c). */
void disp__lock(void);
void disp__unlock(void);
void disp__ensure_init(void);

#endif
