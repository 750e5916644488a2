/*
 * registry.c - operators, registrations and their removal.
 *
 * Every function that changes the registry validates everything and
 * allocates everything it needs before its first change, so a failure leaves
 * the registry exactly as it was.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "argcheck_internal.h"
#include "error_internal.h"
#include "library_internal.h"
#include "reclaim_internal.h"
#include "registry_internal.h"
#include "schema_internal.h"
#include "single_copy_internal.h"
#include "strbuf_internal.h"

disp_registry disp__registry = {.lock = PTHREAD_MUTEX_INITIALIZER};

_Static_assert(offsetof(struct disp_op, table) == 0,
               "an operator handle must point at its table (Note [The inline fast path])");

void disp__lock(void) {
  disp__ensure_init();
  pthread_mutex_lock(&disp__registry.lock);
}

/* Note [User callbacks run unlocked]: what the locked section queued runs
 * here, after the lock is released; a callback that calls back in queues
 * and runs its own. Retired memory is reclaimed first, still locked. */
void disp__unlock(void) {
  disp__reclaim(0);
  disp_deferred *d = disp__registry.deferred;
  disp__registry.deferred = NULL;
  pthread_mutex_unlock(&disp__registry.lock);
  /* The queue is newest first; run in the order things happened. */
  disp_deferred *fifo = NULL;
  while (d) {
    disp_deferred *next = d->next;
    d->next = fifo;
    fifo = d;
    d = next;
  }
  while (fifo) {
    disp_deferred *next = fifo->next;
    fifo->fn(fifo->arg);
    disp__free(fifo);
    fifo = next;
  }
}

void disp__defer(disp_deferred *d) {
  d->next = disp__registry.deferred;
  disp__registry.deferred = d;
}

static void emit_warning(void *msg) {
  disp__warn("%s", (const char *)msg);
  disp__free(msg);
}

void disp__defer_warning(const char *fmt, ...) {
  disp_strbuf b;
  disp__strbuf_init(&b);
  va_list ap;
  va_start(ap, fmt);
  disp__strbuf_vappendf(&b, fmt, ap);
  va_end(ap);
  disp_deferred *d = disp__malloc(sizeof *d);
  char *msg = disp__strdup(disp__strbuf_cstr(&b));
  disp__strbuf_free(&b);
  if (!d || !msg) {
    disp__free(d);
    disp__free(msg);
    return;
  }
  d->fn = emit_warning;
  d->arg = msg;
  disp__defer(d);
}

/* ---- kernel entries ----------------------------------------------------- */

disp_kernel_entry *disp__kernel_entry_new(const disp_kernel *k, const char *default_debug,
                                          disp_status *st) {
  disp_kernel_entry *e = disp__calloc(1, sizeof *e);
  if (!e) goto oom;
  e->boxed = k->boxed;
  e->unboxed = k->unboxed;
  /* Note [Direct kernels]: DISP_CALL's one test tells the slots without an unboxed function apart. */
  e->flags = (k->flags & ~DISP__KERNEL_INDIRECT) | (k->unboxed ? 0 : DISP__KERNEL_INDIRECT);
  e->user_data = k->user_data;
  if (k->destroy) {
    if (!(e->on_destroy = disp__malloc(sizeof *e->on_destroy))) goto oom;
    e->on_destroy->fn = k->destroy;
    e->on_destroy->arg = k->user_data;
    e->on_destroy->next = NULL;
  }
  e->debug = disp__strdup(k->debug ? k->debug : default_debug);
  if (!e->debug) goto oom;
  if (k->schema) {
    *st = disp_schema_parse(k->schema, &e->schema);
    if (*st != DISP_OK) {
      disp__error_prefix("invalid schema given for a kernel: ");
      disp__kernel_entry_discard(e); /* the caller keeps user_data on failure */
      return NULL;
    }
  }
  *st = DISP_OK;
  return e;
oom:
  disp__kernel_entry_discard(e);
  *st = disp__fail(DISP_ERR_NO_MEMORY, "out of memory registering a kernel");
  return NULL;
}

static void entry_free_memory(void *p) {
  disp_kernel_entry *e = p;
  disp__free(e->on_destroy);
  disp__free(e->debug);
  disp_schema_free(e->schema);
  disp__free(e);
}

void disp__kernel_entry_discard(disp_kernel_entry *e) {
  if (e) entry_free_memory(e);
}

void disp__kernel_entry_queue_destroy(disp_kernel_entry *e) {
  if (!e->on_destroy) return;
  disp__defer(e->on_destroy);
  e->on_destroy = NULL;
}

void disp__kernel_entry_retire(disp_kernel_entry *e) {
  if (!e) return;
  disp__kernel_entry_queue_destroy(e);
  disp__retire(e, entry_free_memory);
}

void disp__kernel_entry_free_at_shutdown(disp_kernel_entry *e) {
  if (!e) return;
  disp__kernel_entry_queue_destroy(e);
  entry_free_memory(e);
}

/* ---- operators ---------------------------------------------------------- */

disp_op *disp__op_lookup(const char *name) {
  disp_op *op = NULL;
  HASH_FIND_STR(disp__registry.ops, name, op);
  return op;
}

disp_status disp__op_get_or_create(const char *name, disp_op **out) {
  disp_op *op = disp__op_lookup(name);
  if (op) {
    *out = op;
    return DISP_OK;
  }
  op = disp__calloc(1, sizeof *op);
  if (!op || !(op->name = disp__strdup(name))) {
    disp__free(op);
    return disp__fail(DISP_ERR_NO_MEMORY, "out of memory creating operator %s", name);
  }
  if (disp__op_update_table(op) != DISP_OK) {
    disp_op_table *real = atomic_load(&op->real), *typed = atomic_load(&op->table);
    if (typed != real) disp__free(typed);
    disp__free(real);
    disp__free(op->name);
    disp__free(op);
    return DISP_ERR_NO_MEMORY;
  }
  HASH_ADD_KEYPTR(hh, disp__registry.ops, op->name, strlen(op->name), op);
  if (disp__op_lookup(name) != op) { /* uthash ran out of memory */
    disp_op_table *real = atomic_load(&op->real), *typed = atomic_load(&op->table);
    if (typed != real) disp__free(typed);
    disp__free(real);
    disp__free(op->name);
    disp__free(op);
    return disp__fail(DISP_ERR_NO_MEMORY, "out of memory creating operator %s", name);
  }
  *out = op;
  return DISP_OK;
}

const char *disp_op_name(const disp_op *op) {
  DISP_REFUSE_NULL_PTR(op);
  return op->name;
}

const disp_schema *disp_op_schema(const disp_op *op) {
  DISP_REFUSE_NULL_PTR(op);
  return atomic_load_explicit(&((disp_op *)op)->schema, memory_order_acquire);
}

disp_status disp_op_find(const char *qualified_name, const disp_op **out) {
  DISP_REFUSE_NULL(qualified_name);
  DISP_REFUSE_NULL(out);
  if (disp__refuse_second_copy() != DISP_OK) return DISP_ERR_DUPLICATE;
  disp__lock();
  disp_op *op = disp__op_lookup(qualified_name);
  int defined = op && atomic_load(&op->schema);
  disp__unlock();
  if (!defined && strncmp(qualified_name, "aten::", 6) == 0 && !disp__library_has_builtins())
    return disp__fail(DISP_ERR_OP_NOT_FOUND,
                      "Could not find schema for %s (the built-in operators are not linked into this program: "
                      "a program linking libdispatch.a gets them by calling disp_init())",
                      qualified_name);
  if (!defined) return disp__fail(DISP_ERR_OP_NOT_FOUND, "Could not find schema for %s", qualified_name);
  *out = op;
  return DISP_OK;
}

int disp_op_has_kernel(const disp_op *op, disp_key key) {
  if (!op || (unsigned)key >= DISP_KEY_COUNT) return 0;
  disp__lock();
  int has = op->kernels[key] != NULL;
  disp__unlock();
  return has;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

disp_status disp_op_list(const char ***names, size_t *count) {
  DISP_REFUSE_NULL(names);
  DISP_REFUSE_NULL(count);
  if (disp__refuse_second_copy() != DISP_OK) return DISP_ERR_DUPLICATE;
  disp__lock();
  size_t n = 0, i = 0;
  disp_op *op, *tmp;
  HASH_ITER(hh, disp__registry.ops, op, tmp) if (atomic_load(&op->schema)) n++;
  const char **arr = disp__malloc((n ? n : 1) * sizeof *arr);
  if (!arr) {
    disp__unlock();
    return disp__fail(DISP_ERR_NO_MEMORY, "out of memory listing operators");
  }
  HASH_ITER(hh, disp__registry.ops, op, tmp) if (atomic_load(&op->schema)) arr[i++] = op->name;
  disp__unlock();
  qsort(arr, n, sizeof *arr, cmp_str);
  *names = arr;
  *count = n;
  return DISP_OK;
}

/* ---- def ---------------------------------------------------------------- */

/* PyTorch's comparison sees ScalarType, Layout and MemoryFormat as `int`,
 * but an unboxed kernel receives them as int32_t, not int64_t (disp/value.h):
 * one whose schema says `int` there would be called with the wrong C type.
 * So its C signature must be the def's too; *reason names the first
 * argument or return whose C type differs. */
static disp_ctype ctype_at(const disp_signature *sig, int i) {
  return i < sig->nargs ? sig->args[i] : sig->rets[i - sig->nargs];
}

static disp_status check_c_types(const disp_schema *def, const disp_schema *given, char **reason) {
  disp_signature *a = NULL, *b = NULL;
  disp_status st = disp__signature_new(def, &a);
  if (st == DISP_OK) st = disp__signature_new(given, &b);
  int n = st == DISP_OK ? a->nargs + a->nrets : 0, i = 0; /* the schemas agreed on the counts */
  while (i < n && ctype_at(a, i) == ctype_at(b, i)) i++;
  if (i < n) {
    int ret = i >= a->nargs, k = ret ? i - a->nargs : i;
    disp_strbuf sb;
    disp__strbuf_init(&sb);
    disp__strbuf_appendf(&sb, "Type mismatch in %s %d: ", ret ? "return" : "argument", k + 1);
    disp__schema_print_type(&sb, (ret ? def->rets : def->args)[k].type, 0);
    disp__strbuf_append(&sb, " vs ");
    disp__schema_print_type(&sb, (ret ? given->rets : given->args)[k].type, 0);
    disp__strbuf_appendf(&sb, ", whose C types differ for an unboxed kernel (%s vs %s)",
                         disp__ctype_name(ctype_at(a, i)), disp__ctype_name(ctype_at(b, i)));
    *reason = disp__strbuf_steal(&sb);
    st = *reason ? DISP_ERR_MISMATCH : disp__fail(DISP_ERR_NO_MEMORY, "out of memory comparing schemas");
  }
  disp__signature_free(a);
  disp__signature_free(b);
  return st;
}

/* PyTorch checks every kernel's inferred schema against the def, both when
 * the kernel comes after the def and when the def comes after it. */
static disp_status check_kernel_schema(const disp_op *op, const disp_schema *def_schema,
                                       const char *def_debug, const disp_kernel_entry *e) {
  if (!e->schema || !def_schema) return DISP_OK;
  char *reason = NULL;
  disp_status st = disp__schema_check_compatible(def_schema, e->schema, &reason);
  if (st == DISP_OK && e->unboxed) st = check_c_types(def_schema, e->schema, &reason);
  if (st == DISP_OK) return DISP_OK;
  if (!reason) return st; /* out of memory */
  char *want = disp_schema_to_string(def_schema);
  char *got = disp_schema_to_string(e->schema);
  st = disp__fail(DISP_ERR_MISMATCH,
                  "Inferred operator schema for a C++ kernel function doesn't match the expected "
                  "function schema.\n  operator: %s\n  expected schema: %s\n    %s\n  inferred "
                  "schema: %s\n    %s\n  reason: %s",
                  op->name, want ? want : "?", def_debug, got ? got : "?", e->debug, reason);
  disp__free(want);
  disp__free(got);
  disp__free(reason);
  return st;
}

/* Two schemas that print the same and compare equal. */
static int same_schema(const disp_schema *a, const disp_schema *b) {
  if (strcmp(disp_schema_qualified_name(a), disp_schema_qualified_name(b)) || !disp__schema_equal(a, b, NULL))
    return 0;
  char *ta = disp_schema_to_string(a), *tb = disp_schema_to_string(b);
  int same = ta && tb && !strcmp(ta, tb);
  disp__free(ta);
  disp__free(tb);
  return same;
}

/* A removed def's schema and signature are retired until shutdown (readers
 * and typed entries may hold them, Note [Typed entry points outlive
 * schemas]). The same def made again (a plugin loaded again) takes them
 * back instead, so load/unload cycles hold memory bounded; whoever holds
 * them sees the same immutable schema. Frees *schema on success.
 * Precondition: registry lock held. */
static disp_signature *revive_schema(disp_schema **schema) {
  for (disp_retired_schema **q = &disp__registry.retired_schemas; *q; q = &(*q)->next) {
    disp_retired_schema *r = *q;
    if (!r->sig || !same_schema(r->schema, *schema)) continue;
    *q = r->next;
    disp_signature *sig = r->sig;
    disp_schema_free(*schema);
    *schema = r->schema;
    disp__free(r);
    return sig;
  }
  return NULL;
}

disp_status disp__register_def(const char *ns, const char *schema_text, const char *debug,
                               disp_fn adapter, disp_registration **out) {
  disp_schema *schema = NULL;
  disp_status st = disp_schema_parse_ns(schema_text, ns, &schema);
  if (st != DISP_OK) return st;
  const char *name = disp_schema_qualified_name(schema);
  disp_op *op = disp__op_lookup(name);
  if (op && atomic_load(&op->schema)) {
    char *text = disp_schema_to_string(schema);
    st = disp__fail(DISP_ERR_DUPLICATE,
                    "Tried to register an operator (%s) with the same name and overload name "
                    "multiple times. Each overload's schema should only be registered with a "
                    "single call to def(). Duplicate registration: %s. Original registration: %s",
                    text ? text : name, debug, op->def->debug);
    disp__free(text);
    disp_schema_free(schema);
    return st;
  }
  if (op) {
    for (int k = 0; k < DISP_KEY_COUNT; k++)
      for (disp_kernel_node *n = op->kernels[k]; n; n = n->next)
        if ((st = check_kernel_schema(op, schema, debug, n->entry)) != DISP_OK) {
          disp_schema_free(schema);
          return st;
        }
  }
  /* Everything its removal will need is allocated now (Note [Removal never
   * fails]): the record that retires its schema. */
  disp_registration *reg = disp__calloc(1, sizeof *reg);
  disp_signature *sig = NULL;
  if (!reg || !(reg->retire_rec = disp__malloc(sizeof *reg->retire_rec)) || !(reg->debug = disp__strdup(debug)))
    goto oom;
  if (!op && disp__op_get_or_create(name, &op) != DISP_OK) goto oom;
  sig = revive_schema(&schema);
  if (!sig && (st = disp__signature_new(schema, &sig)) != DISP_OK) {
    disp__registration_free(reg);
    disp_schema_free(schema);
    return st;
  }
  reg->kind = DISP_REG_DEF;
  reg->op = op;
  reg->schema = schema;
  reg->sig = sig;
  op->def = reg;
  atomic_store_explicit(&op->adapter, adapter, memory_order_release);
  atomic_store_explicit(&op->sig, sig, memory_order_release);
  atomic_store_explicit(&op->schema, schema, memory_order_release);
  *out = reg;
  return DISP_OK;
oom:
  disp__registration_free(reg);
  disp_schema_free(schema);
  return disp__fail(DISP_ERR_NO_MEMORY, "out of memory defining %s", schema_text);
}

/* ---- impl --------------------------------------------------------------- */

static disp_status check_kernel_shape(const disp_kernel *k, const char *what, const char *name,
                                      disp_key key) {
  if (k->flags & DISP_KERNEL_FALLTHROUGH) {
    if (k->boxed || k->unboxed)
      return disp__fail(DISP_ERR_INVALID_ARG,
                        "%s for %s on dispatch key %s: a fallthrough kernel has no function", what,
                        name, disp_key_name(key));
    return DISP_OK;
  }
  if (!k->boxed && !k->unboxed)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "%s for %s on dispatch key %s: the kernel has neither a boxed nor an unboxed "
                      "function",
                      what, name, disp_key_name(key));
  return DISP_OK;
}

static int is_registrable_key(disp_key key) {
  if (disp_key_is_alias(key)) return 1;
  return disp_key_table_index(key) > 0;
}

disp_status disp__register_impl(const char *ns, const char *name, disp_key key,
                                const disp_kernel *kernel, const char *debug,
                                disp_registration **out) {
  char *qualified = NULL;
  disp_status st = disp_schema_parse_name(name, ns, &qualified);
  if (st != DISP_OK) return st;
  if (!is_registrable_key(key)) {
    st = disp__fail(DISP_ERR_INVALID_ARG,
                    "Tried to register a kernel for %s on dispatch key %s, which is not a runtime "
                    "or alias key",
                    qualified, disp_key_name(key));
    disp__free(qualified);
    return st;
  }
  if ((st = check_kernel_shape(kernel, "Tried to register a kernel", qualified, key)) != DISP_OK) {
    disp__free(qualified);
    return st;
  }
  disp_kernel_entry *e = disp__kernel_entry_new(kernel, debug, &st);
  if (!e) {
    disp__free(qualified);
    return st;
  }
  disp_op *op = disp__op_lookup(qualified);
  if (op && op->def && (st = check_kernel_schema(op, atomic_load(&op->schema), op->def->debug, e)) != DISP_OK)
    goto fail;
  disp_kernel_node *node = disp__malloc(sizeof *node);
  disp_registration *reg = disp__calloc(1, sizeof *reg);
  if (!node || !reg) {
    disp__free(node);
    disp__free(reg);
    st = disp__fail(DISP_ERR_NO_MEMORY, "out of memory registering a kernel for %s", qualified);
    goto fail;
  }
  if (!op && (st = disp__op_get_or_create(qualified, &op)) != DISP_OK) {
    disp__free(node);
    disp__free(reg);
    goto fail;
  }
  if (op->kernels[key]) {
    const disp_schema *s = atomic_load(&op->schema);
    char *text = s ? disp_schema_to_string(s) : NULL;
    disp__defer_warning("Overriding a previously registered kernel for the same operator and the same "
               "dispatch key\n  operator: %s\n    %s\n  dispatch key: %s\n  previous kernel: %s\n"
               "       new kernel: %s",
               text ? text : qualified, op->def ? op->def->debug : "no debug info",
               disp_key_name(key), op->kernels[key]->entry->debug, e->debug);
    disp__free(text);
  }
  node->entry = e;
  node->next = op->kernels[key];
  op->kernels[key] = node;
  op->impl_count++;
  reg->kind = DISP_REG_IMPL;
  reg->op = op;
  reg->key = key;
  reg->entry = e;
  if ((st = disp__op_update_table(op)) != DISP_OK) {
    op->kernels[key] = node->next;
    op->impl_count--;
    disp__free(node);
    disp__free(reg);
    goto fail;
  }
  disp__free(qualified);
  *out = reg;
  return DISP_OK;
fail:
  disp__kernel_entry_discard(e); /* the caller keeps its user_data */
  disp__free(qualified);
  return st;
}

/* ---- fallbacks ---------------------------------------------------------- */

/* The table slots a fallback on `key` fills: one for a runtime key, every
 * covered runtime key for an alias. Returns the count (0: not allowed). */
static int fallback_slots(disp_key key, int *slots) {
  int n = 0;
  if (disp_key_is_alias(key)) {
    disp_keyset ks = disp_key_runtime_keyset(key);
    for (int i = 1; i < DISP_NUM_RUNTIME_ENTRIES; i++)
      if (disp_keyset_has(ks, disp_key_for_table_index(i))) slots[n++] = i;
    return n;
  }
  int i = disp_key_table_index(key);
  if (i > 0) slots[n++] = i;
  return n;
}

/* Publishes the current fallback of each slot (Note [Fallback proxies]). */
static disp_status publish_fallbacks(const int *slots, int n) {
  disp_status st = DISP_OK;
  for (int i = 0; i < n; i++) {
    disp_status s = disp__fallback_publish(slots[i]);
    if (s != DISP_OK) st = s;
  }
  return st;
}

disp_status disp__register_fallback(disp_key key, const disp_kernel *kernel, const char *debug,
                                    disp_registration **out) {
  int slots[DISP_NUM_RUNTIME_ENTRIES];
  int n = fallback_slots(key, slots);
  disp_status st;
  if (n == 0)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "Tried to register a backend fallback for dispatch key %s, which is not a "
                      "runtime or alias key",
                      disp_key_name(key));
  if ((st = check_kernel_shape(kernel, "Tried to register a backend fallback", "all operators",
                               key)) != DISP_OK)
    return st;
  if (!(kernel->flags & DISP_KERNEL_FALLTHROUGH) && !kernel->boxed)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "Tried to register a backend fallback for dispatch key %s with an unboxed "
                      "kernel; a fallback serves every operator, so it must be boxed (or a "
                      "fallthrough)",
                      disp_key_name(key));
  for (int i = 0; i < n; i++) {
    const disp_fallback_slot *fb = &disp__registry.fallbacks[slots[i]];
    if (fb->user)
      return disp__fail(DISP_ERR_DUPLICATE,
                        "Tried to register multiple backend fallbacks for the same dispatch key "
                        "%s; previous registration %s, new registration %s",
                        disp_key_name(disp_key_for_table_index(slots[i])), fb->user->debug, debug);
  }
  disp_kernel_entry *e = disp__kernel_entry_new(kernel, debug, &st);
  if (!e) return st;
  disp_registration *reg = disp__calloc(1, sizeof *reg);
  if (!reg) {
    disp__kernel_entry_discard(e);
    return disp__fail(DISP_ERR_NO_MEMORY, "out of memory registering a fallback");
  }
  reg->kind = DISP_REG_FALLBACK;
  reg->key = key;
  reg->entry = e;
  for (int i = 0; i < n; i++) {
    disp__registry.fallbacks[slots[i]].user = e;
    disp__registry.fallbacks[slots[i]].user_reg = reg;
  }
  if ((st = publish_fallbacks(slots, n)) != DISP_OK) {
    for (int i = 0; i < n; i++) {
      disp__registry.fallbacks[slots[i]].user = NULL;
      disp__registry.fallbacks[slots[i]].user_reg = NULL;
    }
    /* Best effort; until it succeeds a table may still hold e, so e is
     * retired (freed after the readers), never freed here. */
    publish_fallbacks(slots, n);
    disp__free(reg);
    disp__free(e->on_destroy); /* the caller keeps its user_data */
    e->on_destroy = NULL;
    disp__kernel_entry_retire(e);
    return st;
  }
  *out = reg;
  return DISP_OK;
}

/* ---- removal ------------------------------------------------------------ */

/* Keeps a removed def's schema until shutdown, in the record its
 * registration allocated up front. */
static void retire_schema(disp_registration *reg) {
  disp_retired_schema *r = reg->retire_rec;
  reg->retire_rec = NULL;
  r->schema = reg->schema;
  r->sig = reg->sig;
  r->next = disp__registry.retired_schemas;
  disp__registry.retired_schemas = r;
}

void disp__registration_remove_locked(disp_registration *reg) {
  if (!reg || reg->removed) return;
  reg->removed = 1;
  switch (reg->kind) {
    case DISP_REG_DEF: {
      disp_op *op = reg->op;
      atomic_store_explicit(&op->schema, NULL, memory_order_release);
      atomic_store_explicit(&op->sig, NULL, memory_order_release);
      atomic_store_explicit(&op->adapter, NULL, memory_order_release);
      op->def = NULL;
      retire_schema(reg);
      reg->schema = NULL;
      reg->sig = NULL;
      break;
    }
    case DISP_REG_IMPL: {
      disp_op *op = reg->op;
      for (disp_kernel_node **p = &op->kernels[reg->key]; *p; p = &(*p)->next) {
        if ((*p)->entry != reg->entry) continue;
        disp_kernel_node *dead = *p;
        *p = dead->next;
        disp__free(dead);
        break;
      }
      op->impl_count--;
      disp__op_update_table_nofail(op); /* Note [Removal never fails] */
      disp__kernel_entry_retire(reg->entry);
      reg->entry = NULL;
      break;
    }
    case DISP_REG_FALLBACK: {
      int slots[DISP_NUM_RUNTIME_ENTRIES], n = 0;
      for (int i = 0; i < DISP_NUM_RUNTIME_ENTRIES; i++) {
        if (disp__registry.fallbacks[i].user_reg != reg) continue;
        disp__registry.fallbacks[i].user = NULL;
        disp__registry.fallbacks[i].user_reg = NULL;
        slots[n++] = i;
      }
      for (int i = 0; i < n; i++) disp__fallback_publish_nofail(slots[i]); /* Note [Removal never fails] */
      disp__kernel_entry_retire(reg->entry);
      reg->entry = NULL;
      break;
    }
  }
}

void disp_registration_remove(disp_registration *reg) {
  if (!reg) return;
  disp__lock();
  disp__registration_remove_locked(reg);
  disp__unlock();
}

const char *disp_registration_debug(const disp_registration *reg) {
  DISP_REFUSE_NULL_PTR(reg);
  if (reg->debug) return reg->debug;
  return reg->entry ? reg->entry->debug : "";
}

void disp__registration_free(disp_registration *reg) {
  if (!reg) return;
  disp__free(reg->debug);
  disp__free(reg->retire_rec);
  disp_schema_free(reg->schema);
  disp__signature_free(reg->sig);
  disp__free(reg);
}

/* ---- teardown (disp_shutdown) ------------------------------------------- */

static void free_op(disp_op *op) {
  for (int k = 0; k < DISP_KEY_COUNT; k++) {
    while (op->kernels[k]) {
      disp_kernel_node *n = op->kernels[k];
      op->kernels[k] = n->next;
      disp__kernel_entry_free_at_shutdown(n->entry);
      disp__free(n);
    }
  }
  disp_op_table *real = atomic_load(&op->real), *typed = atomic_load(&op->table);
  if (typed != real) disp__free(typed);
  disp__free(real);
  disp__typed_entries_free(op->closure);
  disp__free(op->name);
  disp__free(op);
}

/* Frees every operator, fallback, namespace claim and kept or retired entry,
 * as disp_shutdown needs; destroy callbacks run at the caller's unlock. */
void disp__registry_teardown(void) {
  disp_op *op, *tmp;
  HASH_ITER(hh, disp__registry.ops, op, tmp) {
    HASH_DEL(disp__registry.ops, op);
    free_op(op);
  }
  for (int s = 0; s < DISP_NUM_RUNTIME_ENTRIES; s++) {
    disp_fallback_slot *fb = &disp__registry.fallbacks[s];
    /* A user fallback on an alias key fills several slots with one entry. */
    if (fb->user) {
      disp_kernel_entry *e = fb->user;
      for (int t = s; t < DISP_NUM_RUNTIME_ENTRIES; t++)
        if (disp__registry.fallbacks[t].user == e) disp__registry.fallbacks[t].user = NULL;
      disp__kernel_entry_free_at_shutdown(e);
    }
    disp__kernel_entry_free_at_shutdown(fb->builtin);
    memset(fb, 0, sizeof *fb);
  }
  disp_namespace_claim *c, *ctmp;
  HASH_ITER(hh, disp__registry.namespaces, c, ctmp) {
    HASH_DEL(disp__registry.namespaces, c);
    disp__free(c->ns);
    disp__free(c->debug);
    disp__free(c);
  }
  disp__reclaim_all_at_shutdown();
  while (disp__registry.retired_schemas) {
    disp_retired_schema *r = disp__registry.retired_schemas;
    disp__registry.retired_schemas = r->next;
    disp_schema_free(r->schema);
    disp__signature_free(r->sig);
    disp__free(r);
  }
  disp__kernel_entry_free_at_shutdown(disp__registry.ambiguous);
  disp__registry.ambiguous = NULL;
  disp__kernel_entry_free_at_shutdown(disp__registry.missing);
  disp__registry.missing = NULL;
  disp__kernel_entry_free_at_shutdown(disp__registry.traced);
  disp__registry.traced = NULL;
  disp__registry.initialized = 0;
}
