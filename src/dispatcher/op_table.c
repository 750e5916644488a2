/*
 * op_table.c - computing and publishing an operator's dispatch table.
 *
 * Each runtime key's entry follows PyTorch's
 * OperatorEntry::computeDispatchTableEntryWithDebug:
 *   1. a kernel registered directly on the key;
 *   2. CompositeExplicitAutogradNonFunctional, then CompositeExplicitAutograd,
 *      for the keys they cover and Undefined ("default backend kernel");
 *   3. CompositeImplicitAutograd for the keys it covers and Undefined, except
 *      that AutogradOther is ambiguous when a Quantized/Sparse key also has a
 *      kernel, and that an Autograd<B> key skips it when B or
 *      CompositeExplicitAutograd has a kernel ("math kernel");
 *   4. the Autograd alias for autograd keys ("autograd kernel");
 *   5. the backend fallback of the key ("backend fallback");
 *   6. nothing ("missing").
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "error_internal.h"
#include "reclaim_internal.h"
#include "registry_internal.h"

const char *disp__provenance_name(disp_provenance p) {
  switch (p) {
    case DISP_PROV_KERNEL: return "kernel";
    case DISP_PROV_DEFAULT_BACKEND: return "default backend kernel";
    case DISP_PROV_MATH: return "math kernel";
    case DISP_PROV_AMBIGUOUS: return "ambiguous autogradother";
    case DISP_PROV_AUTOGRAD: return "autograd kernel";
    case DISP_PROV_FALLBACK: return "backend fallback";
    case DISP_PROV_MISSING: break;
  }
  return "missing";
}

static const disp_kernel_entry *top(const disp_op *op, disp_key k) {
  return op->kernels[k] ? op->kernels[k]->entry : NULL;
}

static void refresh_kernel_keys(disp_op *op) {
  memset(op->kernel_keys, 0, sizeof op->kernel_keys);
  for (int k = 0; k < DISP_KEY_COUNT; k++)
    if (op->kernels[k]) op->kernel_keys[k / 64] |= UINT64_C(1) << (k % 64);
}

/* PyTorch's hasKernelForAnyDispatchKey: a kernel (fallthroughs count) on a
 * runtime key in `ks`; alias keys never count. Walks only the keys that
 * have kernels (a handful), since every table computation asks this for
 * every autograd key. */
static int has_kernel_for_any(const disp_op *op, disp_keyset ks) {
  for (int w = 0; w < (int)(sizeof op->kernel_keys / sizeof op->kernel_keys[0]); w++)
    for (uint64_t m = op->kernel_keys[w]; m; m &= m - 1) {
      int k = w * 64 + __builtin_ctzll(m);
      int runtime = (k >= DISP_KEY_CPU && k < DISP_KEY_END_OF_RUNTIME_KEYS) ||
                    (k >= 1 && k <= DISP_NUM_FUNCTIONALITIES);
      if (runtime && disp_keyset_has(ks, (disp_key)k)) return 1;
    }
  return 0;
}

/* The Quantized and Sparse keys of every backend: what AutogradOther stands
 * for among the keys libdispatch has (PyTorch's autogradother_backends). */
static disp_keyset autogradother_backends(void) {
  disp_keyset s = disp_keyset_or(disp_keyset_of(DISP_KEY_QUANTIZED), disp_keyset_of(DISP_KEY_SPARSE));
  s.repr |= DISP_KEYSET_BACKEND_MASK;
  return s;
}

/* PyTorch's getBackendKeySetFromAutograd: Autograd<B> -> {B}, AutogradOther
 * -> its backends, anything else -> {}. */
static disp_keyset backends_of_autograd_key(disp_key k) {
  if (k == DISP_KEY_AUTOGRAD_OTHER) return autogradother_backends();
  if (disp_key_functionality(k) == DISP_KEY_AUTOGRAD_FUNCTIONALITY)
    return disp_keyset_of(disp_key_for_backend(DISP_KEY_DENSE, (disp_backend)disp_key_backend(k)));
  return disp_keyset_empty();
}

const disp_kernel_entry *disp__op_compute_entry(const disp_op *op, disp_key key,
                                                disp_provenance *prov) {
  const disp_kernel_entry *e;
  int undefined = key == DISP_KEY_UNDEFINED;

  if ((e = top(op, key)) && !undefined) {
    *prov = DISP_PROV_KERNEL;
    return e;
  }
  if (undefined || disp_key_is_included_in_alias(key, DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL)) {
    if ((e = top(op, DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL))) {
      *prov = DISP_PROV_DEFAULT_BACKEND;
      return e;
    }
  }
  if (undefined || disp_key_is_included_in_alias(key, DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD)) {
    if ((e = top(op, DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD))) {
      *prov = DISP_PROV_DEFAULT_BACKEND;
      return e;
    }
  }
  int has_backend_kernel = (!undefined && has_kernel_for_any(op, backends_of_autograd_key(key))) ||
                           top(op, DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD) != NULL;
  if (undefined || disp_key_is_included_in_alias(key, DISP_KEY_COMPOSITE_IMPLICIT_AUTOGRAD)) {
    if ((e = top(op, DISP_KEY_COMPOSITE_IMPLICIT_AUTOGRAD))) {
      if (key == DISP_KEY_AUTOGRAD_OTHER && has_kernel_for_any(op, autogradother_backends())) {
        *prov = DISP_PROV_AMBIGUOUS;
        return disp__registry.ambiguous;
      }
      if (!has_backend_kernel) {
        *prov = DISP_PROV_MATH;
        return e;
      }
    }
  }
  if (!undefined && disp_key_is_included_in_alias(key, DISP_KEY_AUTOGRAD)) {
    if ((e = top(op, DISP_KEY_AUTOGRAD))) {
      *prov = DISP_PROV_AUTOGRAD;
      return e;
    }
  }
  const disp_fallback_slot *fb = &disp__registry.fallbacks[disp_key_table_index(key)];
  if ((e = fb->user ? fb->user : fb->builtin)) {
    *prov = DISP_PROV_FALLBACK;
    return e;
  }
  *prov = DISP_PROV_MISSING;
  return NULL;
}

_Static_assert(offsetof(disp_op_table, grid) == offsetof(disp_fast_table, cell) &&
                   offsetof(disp_op_table, non_fallthrough) == offsetof(disp_fast_table, non_fallthrough) &&
                   offsetof(disp_op_table, col_start) == offsetof(disp_fast_table, col_start) &&
                   sizeof(((disp_op_table *)0)->grid) == sizeof(((disp_fast_table *)0)->cell),
               "the published table must start with the layout of disp_fast_table");
_Static_assert(offsetof(disp_kernel_entry, slot) == 0, "a kernel entry is a kernel slot");

/* A slot's published entry: the computed one, except that a backend
 * fallback that is not a fallthrough, or nothing, becomes the key's proxy
 * (Note [Fallback proxies]), as does a fallthrough in the Undefined slot (a
 * fallthrough on a Composite alias fills it): with no key left there is
 * nothing to fall through to. */
static const disp_kernel_entry *published_entry(const disp_op *op, int i) {
  disp_provenance prov;
  const disp_kernel_entry *e = disp__op_compute_entry(op, disp_key_for_table_index(i), &prov);
  int fallthrough = e && (e->flags & DISP_KERNEL_FALLTHROUGH);
  if (i == 0 && fallthrough) return &disp__registry.proxies[0];
  if ((prov == DISP_PROV_FALLBACK || prov == DISP_PROV_MISSING) && !fallthrough)
    return &disp__registry.proxies[i];
  return e;
}

static void compute_table(disp_op *op, disp_op_table *t) {
  refresh_kernel_keys(op);
  memset(t, 0, sizeof *t);
  for (int i = 0; i < DISP_NUM_RUNTIME_ENTRIES; i++) t->slot[i] = published_entry(op, i);
  /* A fallthrough slot removes its key from the call's key set. For a
   * per-backend key only calls whose highest backend is that key's backend
   * are affected, hence one mask per backend index. */
  for (int b = 0; b < DISP__GRID_COLS; b++) {
    disp_keyset mask = disp_keyset_full();
    for (int i = 1; i < DISP_NUM_RUNTIME_ENTRIES; i++) {
      const disp_kernel_entry *e = t->slot[i];
      if (!e || !(e->flags & DISP_KERNEL_FALLTHROUGH)) continue;
      disp_key k = disp_key_for_table_index(i);
      int kb = disp_key_backend(k);
      if (kb >= 0 && kb != b) continue;
      mask = disp_keyset_remove(mask, k);
    }
    t->non_fallthrough[b] = mask;
    t->col_start[b] = (uint64_t)b * DISP__GRID_ROWS;
  }
  for (int f = 0; f < DISP__GRID_ROWS; f++)
    for (int b = 0; b < DISP__GRID_COLS; b++) {
      disp_keyset ks = {0};
      if (f) ks.repr = UINT64_C(1) << (DISP_NUM_BACKENDS + f - 1);
      if (b < DISP_NUM_BACKENDS) ks.repr |= UINT64_C(1) << b;
      t->grid[b * DISP__GRID_ROWS + f] = b < DISP_NUM_BACKENDS ? t->slot[disp_keyset_table_index(ks)]
                                                               : disp__registry.missing;
    }
}

static void retire(disp_op_table *t) { disp__retire(t, free); }

/* Publishes what typed calls read (Note [Tracing typed calls]): the real
 * table, or while the trace is on a twin whose every cell is the tracing
 * kernel (same fallthrough masks), so the inline path never tests a flag. */
static disp_status publish_typed(disp_op *op) {
  disp_op_table *real = atomic_load_explicit(&op->real, memory_order_relaxed);
  disp_op_table *cur = atomic_load_explicit(&op->table, memory_order_relaxed);
  disp_op_table *want = real;
  if (disp__tracing()) {
    if (cur != real && cur && memcmp(cur->non_fallthrough, real->non_fallthrough, sizeof real->non_fallthrough) == 0)
      return DISP_OK; /* the traced twin is current */
    want = disp__malloc(sizeof *want);
    if (!want) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory tracing %s", op->name);
    memcpy(want, real, sizeof *want);
    for (int i = 0; i < DISP__GRID_ROWS * DISP__GRID_COLS; i++) want->grid[i] = disp__registry.traced;
  }
  if (want == cur) return DISP_OK;
  atomic_store_explicit(&op->table, want, memory_order_release);
  if (cur != real) retire(cur); /* a traced twin; the real one is retired by its replacement */
  return DISP_OK;
}

disp_status disp__op_update_table(disp_op *op) {
  /* Computed in place first: most updates (a fallback change over many
   * operators) change nothing and then cost no allocation. Guarded by the
   * registry lock like everything here. */
  static disp_op_table scratch;
  compute_table(op, &scratch);
  disp_op_table *old = atomic_load_explicit(&op->real, memory_order_relaxed);
  if (old && memcmp(old->grid, scratch.grid, sizeof scratch.grid) == 0 &&
      memcmp(old->non_fallthrough, scratch.non_fallthrough, sizeof scratch.non_fallthrough) == 0 &&
      memcmp(old->slot, scratch.slot, sizeof scratch.slot) == 0)
    return publish_typed(op);
  disp_op_table *fresh = disp__malloc(sizeof *fresh);
  if (!fresh) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory computing the table of %s", op->name);
  memcpy(fresh, &scratch, sizeof *fresh);
  disp_op_table *typed = atomic_load_explicit(&op->table, memory_order_relaxed);
  atomic_store_explicit(&op->real, fresh, memory_order_release);
  if (typed == old) {
    /* Typed calls read the old real table: move them over first. */
    atomic_store_explicit(&op->table, fresh, memory_order_release);
  }
  retire(old);
  return publish_typed(op);
}

/* Note [Removal never fails]
 * Removing a registration (disp_library_free, disp_registration_remove, a
 * plugin's unload) cannot report an error, so it must not need memory it
 * may not get: a def's retire record is allocated with the def, retiring
 * waits for the readers when it has no memory for its list (reclaim.c), and
 * an operator's table, normally replaced by a fresh copy (readers never see
 * a table change under them), is rewritten in place when no copy can be
 * allocated. Each cell is stored whole, so a call racing the rewrite reads,
 * cell by cell, either the old target or the new one, both alive (entries
 * are retired, not freed); the moment passes when the rewrite ends. */
static void rewrite_in_place(disp_op_table *dst, const disp_op_table *src) {
  _Static_assert(sizeof *dst % sizeof(uintptr_t) == 0, "a table is whole words");
  uintptr_t *d = (uintptr_t *)(void *)dst;
  const uintptr_t *s = (const uintptr_t *)(const void *)src;
  /* Release per cell, not a fence after the loop: the same ordering (plain
   * stores on x86), and ThreadSanitizer does not model fences. */
  for (size_t i = 0; i < sizeof *dst / sizeof *d; i++) __atomic_store_n(&d[i], s[i], __ATOMIC_RELEASE);
}

void disp__op_update_table_nofail(disp_op *op) {
  if (disp__op_update_table(op) == DISP_OK) return;
  static disp_op_table scratch; /* guarded by the registry lock */
  compute_table(op, &scratch);
  disp_op_table *real = atomic_load_explicit(&op->real, memory_order_relaxed);
  if (real) rewrite_in_place(real, &scratch);
  disp_op_table *typed = atomic_load_explicit(&op->table, memory_order_relaxed);
  if (typed && typed != real) { /* a traced twin: its masks follow the real table */
    for (int b = 0; b < DISP__GRID_COLS; b++)
      __atomic_store_n(&typed->non_fallthrough[b].repr, scratch.non_fallthrough[b].repr, __ATOMIC_RELAXED);
  }
}

disp_status disp__ops_update_all(void) {
  disp_op *op, *tmp;
  HASH_ITER(hh, disp__registry.ops, op, tmp) {
    disp_status st = disp__op_update_table(op);
    if (st != DISP_OK) return st;
  }
  return DISP_OK;
}

/* ---- fallbacks (Note [Fallback proxies]) -------------------------------- */

const disp_kernel_entry *disp__fallback_of(int i) {
  const disp_fallback_slot *fb = &disp__registry.fallbacks[i];
  return fb->user ? fb->user : fb->builtin;
}

static int is_fallthrough(const disp_kernel_entry *e) { return e && (e->flags & DISP_KERNEL_FALLTHROUGH); }

disp_status disp__fallback_publish(int i) {
  disp_fallback_slot *fb = &disp__registry.fallbacks[i];
  const disp_kernel_entry *want = disp__fallback_of(i);
  const disp_kernel_entry *cur = atomic_load_explicit(&fb->current, memory_order_relaxed);
  atomic_store_explicit(&fb->current, want, memory_order_release);
  if (is_fallthrough(want) == is_fallthrough(cur)) return DISP_OK;
  return disp__ops_update_all();
}

void disp__fallback_publish_nofail(int i) {
  if (disp__fallback_publish(i) == DISP_OK) return;
  disp_op *op, *tmp;
  HASH_ITER(hh, disp__registry.ops, op, tmp) disp__op_update_table_nofail(op);
}

int disp__entry_runs_kernel(const disp_kernel_entry *e) {
  if (!e || (e->flags & DISP_ENTRY_MISSING)) return 0;
  if (!(e->flags & DISP_ENTRY_PROXY)) return 1;
  int i = (int)(intptr_t)e->user_data;
  return atomic_load_explicit(&disp__registry.fallbacks[i].current, memory_order_acquire) != NULL;
}
