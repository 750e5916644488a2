/*
 * autocast.c - autocast state, eligibility, promotion and the cast cache
 * (PyTorch 1.13's aten/src/ATen/autocast_mode.{h,cpp}, without the kernels:
 * those are in autocast_kernels.c).
 *
 * The enabled flag of a device type is the thread's excluded key set itself
 * (guard.h), so the dispatcher needs no extra check on the call path. The
 * dtypes, the cache flag and the nesting depth are plain thread-locals whose
 * zero/static initializers are 1.13's defaults.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uthash_internal.h"

#include "alloc_internal.h"
#include "argcheck_internal.h"
#include "disp.h"
#include "library_internal.h"
#include "disp/autocast.h"

/* Device types with an Autocast key, as indices into the per-thread dtypes. */
enum { AC_CPU, AC_CUDA, AC_PRIVATEUSE1, AC_COUNT };

static int slot_of(disp_backend device_type) {
  switch (device_type) {
    case DISP_BACKEND_CPU: return AC_CPU;
    case DISP_BACKEND_CUDA: return AC_CUDA;
    case DISP_BACKEND_PRIVATEUSE1: return AC_PRIVATEUSE1;
    default: return -1;
  }
}

/* 1.13's autocast_cpu_dtype / autocast_gpu_dtype defaults; PrivateUse1
 * takes float16, as later PyTorch gives it. */
static _Thread_local disp_dtype tls_dtype[AC_COUNT] = {DISP_DTYPE_BFLOAT16, DISP_DTYPE_FLOAT16,
                                                       DISP_DTYPE_FLOAT16};
static _Thread_local unsigned char tls_cache_disabled; /* zero: caching allowed */
static _Thread_local int tls_nesting;
/* The numbers of this thread's open regions, outermost first: only the
 * last may be exited. Numbers, not guard addresses, so a guard may be
 * copied, and nothing here ever points into a caller's (maybe gone) guard.
 * They are unique in the process, so a guard from another thread never
 * matches. */
enum { MAX_OPEN_REGIONS = 64 };
static _Thread_local uint64_t tls_open[MAX_OPEN_REGIONS];
static _Thread_local int tls_num_open;
static _Atomic uint64_t next_region = 1;

/* Where region is among the open ones; -1 when it is not open. */
static int open_index(uint64_t region) {
  for (int i = tls_num_open - 1; i >= 0; i--)
    if (tls_open[i] == region) return i;
  return -1;
}

static disp_status no_autocast(const char *fn, disp_backend device_type) {
  return disp_set_error(DISP_ERR_INVALID_ARG, "%s: device type '%s' has no autocast (expected cpu, cuda or %s)",
                        fn, disp_device_type_name(device_type), disp_device_type_name(DISP_BACKEND_PRIVATEUSE1));
}

disp_key disp_autocast_key(disp_backend device_type) {
  switch (slot_of(device_type)) {
    case AC_CPU: return DISP_KEY_AUTOCAST_CPU;
    case AC_CUDA: return DISP_KEY_AUTOCAST_CUDA;
    case AC_PRIVATEUSE1: return DISP_KEY_AUTOCAST_PRIVATEUSE1;
    default: return DISP_KEY_UNDEFINED;
  }
}

int disp_autocast_is_enabled(disp_backend device_type) {
  disp_key k = disp_autocast_key(device_type);
  return k != DISP_KEY_UNDEFINED && !disp_keyset_has(disp_tls_excluded(), k);
}

disp_status disp_autocast_set_enabled(disp_backend device_type, int enabled) {
  disp_key k = disp_autocast_key(device_type);
  if (k == DISP_KEY_UNDEFINED) return no_autocast("disp_autocast_set_enabled", device_type);
  disp_tls_state s = disp_tls_get();
  disp_keyset ks = disp_keyset_of(k);
  s.excluded = enabled ? disp_keyset_minus(s.excluded, ks) : disp_keyset_or(s.excluded, ks);
  disp_tls_restore(s);
  return DISP_OK;
}

disp_status disp_autocast_get_dtype(disp_backend device_type, disp_dtype *out) {
  DISP_REFUSE_NULL(out);
  int i = slot_of(device_type);
  if (i < 0) return no_autocast("disp_autocast_get_dtype", device_type);
  *out = tls_dtype[i];
  return DISP_OK;
}

/* 1.13's set_autocast_cpu_dtype refuses anything but bfloat16 (its CPU
 * kernels had no float16 paths); the GPU setter takes any dtype, but only
 * the two 16-bit floating types make sense as a lower precision. */
static disp_status check_dtype(const char *fn, int slot, disp_dtype dt) {
  if (slot == AC_CPU && dt != DISP_DTYPE_BFLOAT16)
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "%s: Currently, AutocastCPU only support Bfloat16 as the autocast_cpu_dtype (got %s)", fn,
                          disp_dtype_name(dt));
  if (dt != DISP_DTYPE_FLOAT16 && dt != DISP_DTYPE_BFLOAT16)
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "%s: the autocast dtype of %s must be float16 or bfloat16, got %s", fn,
                          disp_device_type_name(slot == AC_CUDA ? DISP_BACKEND_CUDA : DISP_BACKEND_PRIVATEUSE1),
                          disp_dtype_name(dt));
  return DISP_OK;
}

disp_status disp_autocast_set_dtype(disp_backend device_type, disp_dtype dtype) {
  int i = slot_of(device_type);
  if (i < 0) return no_autocast("disp_autocast_set_dtype", device_type);
  disp_status st = check_dtype("disp_autocast_set_dtype", i, dtype);
  if (st == DISP_OK) tls_dtype[i] = dtype;
  return st;
}

int disp_autocast_is_cache_enabled(void) { return !tls_cache_disabled; }

void disp_autocast_set_cache_enabled(int enabled) { tls_cache_disabled = !enabled; }

int disp_autocast_increment_nesting(void) { return ++tls_nesting; }

int disp_autocast_decrement_nesting(void) { return --tls_nesting; }

/* ---- regions ----------------------------------------------------------- */

disp_status disp_autocast_enter(disp_backend device_type, disp_dtype dtype, int enabled, int cache_enabled,
                                disp_autocast_guard *guard) {
  DISP_REFUSE_NULL(guard);
  /* A guard is usually uninitialized here (a fresh local), so its old
   * contents say nothing: entering never looks at them. */
  memset(guard, 0, sizeof *guard);
  if (tls_num_open == MAX_OPEN_REGIONS)
    return disp_set_error(DISP_ERR_INVALID_ARG, "disp_autocast_enter: more than %d nested autocast regions",
                          MAX_OPEN_REGIONS);
  int i = slot_of(device_type);
  if (i < 0) return no_autocast("disp_autocast_enter", device_type);
  disp_status st = check_dtype("disp_autocast_enter", i, dtype);
  if (st != DISP_OK) return st;
  guard->device_type = device_type;
  guard->prev_dtype = tls_dtype[i];
  guard->prev_enabled = (unsigned char)disp_autocast_is_enabled(device_type);
  guard->prev_cache_enabled = (unsigned char)disp_autocast_is_cache_enabled();
  guard->active = 1;
  guard->region = atomic_fetch_add(&next_region, 1);
  tls_open[tls_num_open++] = guard->region;
  disp_autocast_set_enabled(device_type, enabled);
  tls_dtype[i] = dtype;
  disp_autocast_increment_nesting();
  disp_autocast_set_cache_enabled(cache_enabled);
  return DISP_OK;
}

disp_status disp_autocast_exit(disp_autocast_guard *guard) {
  int at = guard && guard->region ? open_index(guard->region) : -1;
  if (at < 0)
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "disp_autocast_exit: the guard is not an open autocast region of this thread "
                          "(never entered, entered on another thread, or already exited)");
  if (at != tls_num_open - 1)
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "disp_autocast_exit: autocast regions must be exited in reverse order of entry "
                          "(%d region(s) entered after this one are still open)",
                          tls_num_open - 1 - at);
  tls_open[--tls_num_open] = 0;
  guard->active = 0;
  guard->region = 0;
  if (disp_autocast_decrement_nesting() == 0) disp_autocast_clear_cache();
  disp_autocast_set_enabled(guard->device_type, guard->prev_enabled);
  tls_dtype[slot_of(guard->device_type)] = guard->prev_dtype;
  disp_autocast_set_cache_enabled(guard->prev_cache_enabled);
  return DISP_OK;
}

disp_tls_state disp_autocast_exclude_push(disp_backend device_type) {
  disp_key k = disp_autocast_key(device_type);
  return disp_tls_exclude_push(k == DISP_KEY_UNDEFINED ? disp_keyset_empty() : disp_keyset_of(k));
}

/* ---- eligibility and promotion ----------------------------------------- */

/* 1.13's is_autocast_eligible: on the device type (CUDA also takes XLA)
 * and floating point, float64 included - promote_type looks at those. */
static int on_device_floating(const disp_tensor *t, disp_backend device_type) {
  if (!t || !disp_dtype_is_floating(disp_tensor_dtype(t))) return 0;
  disp_backend b = disp_tensor_device(t).type;
  return b == device_type || (device_type == DISP_BACKEND_CUDA && b == DISP_BACKEND_XLA);
}

int disp_autocast_is_eligible(const disp_tensor *t, disp_backend device_type) {
  return slot_of(device_type) >= 0 && on_device_floating(t, device_type) && disp_tensor_dtype(t) != DISP_DTYPE_FLOAT64;
}

disp_status disp_autocast_promote_type(disp_dtype current, disp_backend device_type, disp_tensor *const *tensors,
                                       size_t n, disp_dtype *out) {
  DISP_REFUSE_NULL(out);
  if (n > 0) DISP_REFUSE_NULL(tensors); /* no tensors may be NULL */
  int i = slot_of(device_type);
  if (i < 0) return no_autocast("disp_autocast_promote_type", device_type);
  if ((int)current < 0 || (int)current >= DISP_DTYPE_COUNT)
    return disp_set_error(DISP_ERR_INVALID_ARG, "disp_autocast_promote_type: invalid dtype %d", (int)current);
  disp_dtype lower = tls_dtype[i];
  for (size_t k = 0; k < n; k++) {
    if (current == DISP_DTYPE_FLOAT64)
      return disp_set_error(DISP_ERR_INVALID_ARG, "promote type is double in at::autocast::prioritize");
    if (!on_device_floating(tensors[k], device_type)) continue;
    disp_dtype next = disp_tensor_dtype(tensors[k]);
    if (next == DISP_DTYPE_FLOAT64) continue; /* double tensors are left alone */
    if (current == DISP_DTYPE_FLOAT32 || next == DISP_DTYPE_FLOAT32) current = DISP_DTYPE_FLOAT32;
    else if (current != lower || next != lower)
      return disp_set_error(DISP_ERR_INVALID_ARG,
                            "Unexpected floating ScalarType in at::autocast::prioritize (%s and %s, autocast dtype %s)",
                            disp_dtype_name(current), disp_dtype_name(next), disp_dtype_name(lower));
  }
  *out = current;
  return DISP_OK;
}

/* ---- the cast cache ----------------------------------------------------- */

/* Note [Autocast cast cache]
 * 1.13 keys its cache on the source TensorImpl* and holds a weak reference
 * so the address cannot be reused by another tensor while cached. C has no
 * weak references, so an entry holds a strong one: the source lives until
 * the outermost region exits, which is when 1.13 drops the entry anyway.
 * The key also has the target dtype, so changing the autocast dtype inside
 * a region cannot hand back a cast of the wrong dtype. */
typedef struct cache_key {
  const disp_tensor *src;
  disp_dtype to;
} cache_key;

typedef struct cache_entry {
  cache_key key;
  disp_tensor *src;  /* owned reference */
  disp_tensor *cast; /* owned reference */
  UT_hash_handle hh;
} cache_entry;

static pthread_mutex_t g_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cache_entry *g_cache;

void disp_autocast_clear_cache(void) {
  pthread_mutex_lock(&g_cache_lock);
  cache_entry *all = g_cache;
  g_cache = NULL;
  pthread_mutex_unlock(&g_cache_lock);
  /* Released outside the lock: a tensor's destructor may run anything. */
  cache_entry *e, *tmp;
  HASH_ITER(hh, all, e, tmp) {
    HASH_DEL(all, e);
    disp_tensor_release(e->src);
    disp_tensor_release(e->cast);
    disp__free(e);
  }
}

size_t disp_autocast_cache_size(void) {
  pthread_mutex_lock(&g_cache_lock);
  size_t n = HASH_COUNT(g_cache);
  pthread_mutex_unlock(&g_cache_lock);
  return n;
}

static disp_tensor *cache_find(const cache_key *k) {
  cache_entry *e;
  pthread_mutex_lock(&g_cache_lock);
  HASH_FIND(hh, g_cache, k, sizeof *k, e);
  disp_tensor *r = e ? disp_tensor_retain(e->cast) : NULL;
  pthread_mutex_unlock(&g_cache_lock);
  return r;
}

/* Adds src -> cast; on a race or no memory the cast simply goes uncached. */
static void cache_add(const cache_key *k, disp_tensor *src, disp_tensor *cast) {
  cache_entry *e = disp__calloc(1, sizeof *e);
  if (!e) return;
  e->key = *k;
  e->src = disp_tensor_retain(src);
  e->cast = disp_tensor_retain(cast);
  cache_entry *have;
  int added = 0;
  pthread_mutex_lock(&g_cache_lock);
  HASH_FIND(hh, g_cache, k, sizeof *k, have);
  if (!have) {
    HASH_ADD(hh, g_cache, key, sizeof e->key, e);
    HASH_FIND(hh, g_cache, k, sizeof *k, have);
    added = have == e; /* else uthash ran out of memory and left the table as it was */
  }
  pthread_mutex_unlock(&g_cache_lock);
  if (!added) {
    disp_tensor_release(e->src);
    disp_tensor_release(e->cast);
    disp__free(e);
  } else {
    /* Idempotent, and re-armed after each disp_shutdown. */
    disp__at_shutdown(disp_autocast_clear_cache);
  }
}

/* 1.13 caches only casts of leaves (weights), never of computed tensors. */
static int is_leaf(const disp_tensor *t) { return disp_tensor_is_leaf(t); }

disp_status disp_autocast_cached_cast(disp_dtype to, disp_tensor *t, disp_backend device_type, disp_tensor **out) {
  DISP_REFUSE_NULL(out);
  *out = NULL;
  int i = slot_of(device_type);
  if (i < 0) return no_autocast("disp_autocast_cached_cast", device_type);
  if ((int)to < 0 || (int)to >= DISP_DTYPE_COUNT)
    return disp_set_error(DISP_ERR_INVALID_ARG, "disp_autocast_cached_cast: invalid dtype %d", (int)to);
  if (!t) return DISP_OK;
  if (!disp_autocast_is_eligible(t, device_type) || disp_tensor_dtype(t) == to) {
    *out = disp_tensor_retain(t);
    return DISP_OK;
  }
  /* Apex's heuristic, as 1.13: cache lower-precision casts of float32 model
   * weights (leaves that require grad); only inside a region, because only
   * leaving the outermost region empties the cache. */
  int cacheable = to == tls_dtype[i] && disp_tensor_dtype(t) == DISP_DTYPE_FLOAT32 &&
                  disp_tensor_requires_grad(t) && is_leaf(t) &&
                  !tls_cache_disabled && tls_nesting > 0;
  cache_key k;
  memset(&k, 0, sizeof k); /* the key is hashed bytewise, padding included */
  k.src = t;
  k.to = to;
  if (cacheable && (*out = cache_find(&k)) != NULL) return DISP_OK;
  disp_status st = disp_aten_to_dtype(t, (int32_t)to, false, false, -1, out);
  if (st != DISP_OK) {
    *out = NULL;
    return st;
  }
  if (cacheable) cache_add(&k, t, *out);
  return DISP_OK;
}
