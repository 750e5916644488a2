/*
 * stub_registry.c - which backend has which stub loop (disp/stub.h), and
 * the stub kernels registered on the backends' keys to match (Note [Stub
 * kernels] in disp/stub.h).
 *
 * Kernels read the loop table lock-free (an atomic load per call); changes
 * take g_lock, which is held across the dispatcher calls that register or
 * remove the kernels (order: g_lock, then the registry's lock). The kernels
 * live in one runtime library per backend, made with no plugin owner
 * current: a stub's plugin owns the stub (one undo record), and undoing it
 * removes the kernels the same way an explicit unregistration does.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "library_internal.h"
#include "owner_internal.h"
#include "registry_internal.h"
#include "stub_internal.h"

enum { NBACKENDS = 3 }; /* PrivateUse1..3 */


/* The operators the stubs serve: the manifest's .stub column. */
#define g_ops disp__stub_ops
enum { NOPS = DISP__STUB_OP_COUNT };

static const char *const g_names[DISP_STUB_COUNT] = {
#define X(ID, name, nin) name,
    DISP_FORALL_STUBS(X)
#undef X
};

typedef struct stub_slot {
  _Atomic(disp_stub_fn) fn;
  disp_undo *undo; /* the registering plugin's record; under g_lock */
} stub_slot;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static stub_slot g_slots[DISP_STUB_COUNT][NBACKENDS];
/* Under g_lock: each backend's library of stub kernels and its live
 * registrations (NULL: not registered, or left to the backend's own kernel). */
static disp_library *g_libs[NBACKENDS];
static disp_registration *g_regs[NOPS][NBACKENDS];
/* Set by the shutdown hook, which runs under the registry lock and so may
 * not take g_lock: the next change starts over (reset_if_stale). */
static atomic_int g_stale;
static int g_hooked;

static int backend_slot(disp_backend type) {
  switch (type) {
  case DISP_BACKEND_PRIVATEUSE1: return 0;
  case DISP_BACKEND_PRIVATEUSE2: return 1;
  case DISP_BACKEND_PRIVATEUSE3: return 2;
  default: return -1;
  }
}

static disp_backend slot_backend(int b) { return (disp_backend)(DISP_BACKEND_PRIVATEUSE1 + b); }

const char *disp_stub_name(disp_stub id) {
  if ((unsigned)id >= DISP_STUB_COUNT) {
    disp_set_error(DISP_ERR_INVALID_ARG, "disp_stub_name: unknown stub %d (expected 0 to %d)", (int)id,
                   DISP_STUB_COUNT - 1);
    return NULL;
  }
  return g_names[id];
}

disp_stub_fn disp__stub_lookup(disp_stub id, disp_backend type) {
  int b = backend_slot(type);
  if (b < 0 || (unsigned)id >= DISP_STUB_COUNT || atomic_load_explicit(&g_stale, memory_order_relaxed)) return NULL;
  return atomic_load_explicit(&g_slots[id][b].fn, memory_order_acquire);
}

disp_status disp__stub_missing(disp_stub id, disp_device dev) {
  return disp_set_error(DISP_ERR_NO_KERNEL, "DispatchStub: missing %s kernel for %s", disp_backend_name(dev.type),
                        g_names[id]);
}

static void on_shutdown(void) { atomic_store(&g_stale, 1); }

/* Precondition: g_lock held. After a disp_shutdown the kernels and their
 * libraries' registrations are gone: forget the loops too, and free the
 * libraries (a stale library frees only its memory). */
static void reset_if_stale(void) {
  if (!atomic_load(&g_stale)) return;
  for (int i = 0; i < DISP_STUB_COUNT; i++)
    for (int b = 0; b < NBACKENDS; b++) {
      atomic_store(&g_slots[i][b].fn, NULL);
      disp__owner_cancel(g_slots[i][b].undo);
      g_slots[i][b].undo = NULL;
    }
  for (int b = 0; b < NBACKENDS; b++) {
    disp_library_free(g_libs[b]);
    g_libs[b] = NULL;
    for (int k = 0; k < NOPS; k++) g_regs[k][b] = NULL;
  }
  g_hooked = 0;
  atomic_store(&g_stale, 0);
}

static bool wanted(int k, int b) {
  for (int i = 0; i < DISP_STUB_COUNT; i++)
    if ((g_ops[k].stubs & (1u << i)) && atomic_load(&g_slots[i][b].fn)) return true;
  return false;
}

/* Registers operator k's stub kernel on backend b unless the backend has
 * its own kernel there. Precondition: g_lock held, no owner current. */
static disp_status add_kernel(int k, int b) {
  disp_key key = disp_key_for_backend(DISP_KEY_DENSE, slot_backend(b));
  const disp_op *op = NULL;
  if (disp_op_find(g_ops[k].name, &op) == DISP_OK && disp_op_has_kernel(op, key)) return DISP_OK;
  disp_status st = DISP_OK;
  if (!g_libs[b]) st = disp_library_new(DISP_LIBRARY_IMPL, "aten", key, __FILE__, __LINE__, &g_libs[b]);
  if (st != DISP_OK) return st;
  disp_kernel kern = disp_kernel_unboxed(g_ops[k].kernel, 0);
  kern.debug = "DispatchStub kernel (disp/stub.h)";
  return disp_library_impl(g_libs[b], g_ops[k].name, kern, &g_regs[k][b]);
}

/* Brings backend b's kernels in line with its loops: registers what a loop
 * now serves, removes what none does. Precondition: g_lock held. */
static disp_status sync_backend(int b) {
  disp_owner *prev = disp__owner_swap(NULL); /* the kernels are undone with the stub, not on their own */
  disp_status st = DISP_OK;
  int live = 0;
  for (int k = 0; k < NOPS; k++) {
    if (wanted(k, b) && !g_regs[k][b] && st == DISP_OK) st = add_kernel(k, b);
    if (!wanted(k, b) && g_regs[k][b]) {
      disp_registration_remove(g_regs[k][b]);
      g_regs[k][b] = NULL;
    }
    live |= g_regs[k][b] != NULL;
  }
  if (!live && g_libs[b]) { /* nothing left: free the removed registrations too */
    disp_library_free(g_libs[b]);
    g_libs[b] = NULL;
  }
  disp__owner_swap(prev);
  return st;
}

/* Clears slot (id, b) and removes the kernels only it served. Precondition: g_lock held. */
static void clear_slot(int id, int b) {
  atomic_store(&g_slots[id][b].fn, NULL);
  disp_status st = sync_backend(b);
  (void)st; /* removing never fails */
}

/* An unloaded plugin's stub goes: the owner runs (and then frees) the
 * record. ctx is the slot's number, id * NBACKENDS + b. */
static void undo_stub(void *ctx) {
  int idx = (int)(uintptr_t)ctx, id = idx / NBACKENDS, b = idx % NBACKENDS;
  pthread_mutex_lock(&g_lock);
  g_slots[id][b].undo = NULL; /* running now: never cancel it */
  if (!atomic_load(&g_stale)) clear_slot(id, b);
  reset_if_stale();
  pthread_mutex_unlock(&g_lock);
}

static disp_status check_args(const char *fname, disp_stub id, disp_backend type) {
  if ((unsigned)id >= DISP_STUB_COUNT)
    return disp_set_error(DISP_ERR_INVALID_ARG, "%s: unknown stub %d (expected 0 to %d)", fname, (int)id,
                          DISP_STUB_COUNT - 1);
  if (backend_slot(type) < 0)
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "%s: %s cannot be registered for %s; stubs are for the PrivateUse1, PrivateUse2 and "
                          "PrivateUse3 backends",
                          fname, g_names[id], (unsigned)type < DISP_NUM_BACKENDS ? disp_backend_name(type) : "an unknown backend");
  return DISP_OK;
}

/* Precondition: g_lock held; the slot is empty. */
static disp_status add_stub(disp_stub id, int b, disp_stub_fn fn) {
  disp_undo *u = NULL;
  disp_status st = disp__owner_defer(undo_stub, (void *)(uintptr_t)(id * NBACKENDS + b), &u);
  if (st != DISP_OK) return st;
  if (!g_hooked) {
    disp__at_shutdown(on_shutdown);
    g_hooked = 1;
  }
  atomic_store_explicit(&g_slots[id][b].fn, fn, memory_order_release);
  if ((st = sync_backend(b)) != DISP_OK) {
    clear_slot(id, b);
    disp__owner_cancel(u);
    return st;
  }
  g_slots[id][b].undo = u;
  return DISP_OK;
}

disp_status disp_stub_register(disp_stub id, disp_backend type, disp_stub_fn fn) {
  disp_status st = check_args("disp_stub_register", id, type);
  if (st != DISP_OK) return st;
  /* Definitions first, outside g_lock (a static block being drained may
   * register a stub); not disp_init, which loads DISP_PLUGINS and so must
   * not run inside a plugin's init. */
  disp__ensure_init();
  int b = backend_slot(type);
  pthread_mutex_lock(&g_lock);
  reset_if_stale();
  stub_slot *s = &g_slots[id][b];
  if (fn && atomic_load(&s->fn)) {
    st = disp_set_error(DISP_ERR_DUPLICATE, "disp_stub_register: %s already has a %s kernel; unregister it first",
                        g_names[id], disp_backend_name(type));
  } else if (fn) {
    st = add_stub(id, b, fn);
  } else if (atomic_load(&s->fn)) {
    disp__owner_cancel(s->undo);
    s->undo = NULL;
    clear_slot(id, b);
  }
  pthread_mutex_unlock(&g_lock);
  return st;
}

disp_stub_fn disp_stub_get(disp_stub id, disp_backend type) {
  if (check_args("disp_stub_get", id, type) != DISP_OK) return NULL;
  return disp__stub_lookup(id, type);
}
