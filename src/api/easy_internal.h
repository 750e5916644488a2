/*
 * easy_internal.h - what the concise functions (disp/easy.h) share with
 * their generated bodies (easy_ops.c, tools/gen_api.c): the thread's scope
 * stack and the error rule of Note [Concise errors], and the conversions to
 * the typed entries' argument types.
 */
#ifndef DISP_EASY_INTERNAL_H
#define DISP_EASY_INTERNAL_H

#include <math.h>
#include <stdatomic.h>

#include <disp.h>

#define DISP__UNLIKELY(x) __builtin_expect(!!(x), 0)

/*
 * Note [Concise call cost]
 * A concise call costs its typed call plus at most 10 instructions
 * (bench/dispatch prints the difference). So its hot path is: the typed
 * call (which refuses NULL arguments itself) and one test of its status OR
 * a process-wide count of open scopes (disp__easy_slow); only when that is
 * non-zero does it look at the thread's own scopes (a TLS access in a
 * shared library costs a GOT load more) or the failure. NULL arguments are looked at after a
 * failure only, in the typed entry's message (keeping the arguments for
 * the cold path would cost a saved register), where the chain rule (Note
 * [Concise errors]) restores the earlier failure's message it replaced.
 */

/* The thread's scopes (Note [Scopes]): the tensors of every open scope in
 * creation order, each scope's from its mark on; and the last concise
 * failure, to restore its message (easy_scope.c keeps the message itself
 * apart, in dynamic TLS: the initial-exec block of a library others may
 * dlopen must stay small, or glibc refuses to load it with "cannot allocate
 * memory in static TLS block"). */
enum { DISP__EASY_SAVED_MSG = 1024 };
typedef struct disp__easy_state {
  disp_tensor **items;
  size_t len, cap;
  unsigned depth;    /* open scopes; 0: results go to the caller */
  uint64_t fail_seq; /* disp__error_seq after the last concise failure */
  disp_status fail_status;
  uint64_t inner_seq; /* disp__error_seq when the innermost open scope began */
} disp__easy_state;

/* initial-exec: one %fs-relative access on the hot path, not a call. */
extern _Thread_local disp__easy_state disp__easy_tls __attribute__((tls_model("initial-exec"), visibility("hidden")));
/* Open scopes on every thread (relaxed: a thread reads its own updates). */
extern _Atomic(int) disp__easy_open_scopes __attribute__((visibility("hidden")));

/* Gives t (a new reference, not NULL) to the current scope, if any; t, or
 * NULL when the scope could not grow (t released, DISP_ERR_NO_MEMORY). */
disp_tensor *disp__easy_own_slow(disp_tensor *t);
static inline disp_tensor *disp__easy_own(disp_tensor *t) {
  if (__builtin_expect(atomic_load_explicit(&disp__easy_open_scopes, memory_order_relaxed) == 0, 1)) return t;
  disp__easy_state *e = &disp__easy_tls;
  if (!e->depth) return t;
  if (DISP__UNLIKELY(e->len == e->cap)) return disp__easy_own_slow(t);
  e->items[e->len++] = t;
  return t;
}

/* Whether a concise call that returned st needs more than handing back its
 * result: it failed, or a scope is open on some thread (one test). */
static inline int disp__easy_slow(disp_status st) {
  return ((int)st | atomic_load_explicit(&disp__easy_open_scopes, memory_order_relaxed)) != 0;
}
/* The rest of such a call: the failure, or the result to the scope. */
disp_tensor *disp__easy_finish(disp_tensor *r, disp_status st, const char *fn);

/* The typed call of concise function fn failed: NULL. When it refused a
 * NULL argument (Note [NULL arguments] in disp/status.h: "disp_aten_ID: ARG
 * is NULL"), its message gives way to the chain's, or is reworded for fn. */
disp_tensor *disp__easy_call_failed(const char *fn);
/* A concise call failed (its message is set): NULL. */
disp_tensor *disp__easy_failed(void);
/* Argument `arg` of `fn` is NULL: NULL, keeping an earlier concise
 * failure's message (Note [Concise errors]), else setting one. */
disp_tensor *disp__easy_null(const char *fn, const char *arg);

/* Note [Failed scopes]: whether a concise call failed inside the innermost
 * open scope; if so *st gets its status. */
int disp__easy_scope_failed(disp_status *st);

static inline int disp__easy_null_in(disp_tensor_list l) {
  if (l.len && !l.data) return 1;
  for (size_t i = 0; i < l.len; i++)
    if (!l.data[i]) return 1;
  return 0;
}

/* Note [Concise argument types]: the typed entries' forms. */
static inline disp_scalar disp__easy_scalar(double v) {
  return fabs(v) < 9.0e15 && v == (double)(int64_t)v ? disp_scalar_int((int64_t)v) : disp_scalar_double(v);
}
static inline disp_scalar disp__easy_opt_scalar(double v) {
  disp_scalar none = {DISP_SCALAR_NONE, {0}};
  return isnan(v) ? none : disp__easy_scalar(v);
}
static inline disp_opt_int disp__easy_opt_int(int64_t v) {
  disp_opt_int o = {v, v != INT64_MIN};
  return o;
}
static inline disp_opt_double disp__easy_opt_double(double v) {
  disp_opt_double o = {v, !isnan(v)};
  return o;
}
/* A disp_dims as the typed entries' list (pointing into *d); None (len
 * -1) where a list is required is passed as []. */
static inline disp_int_list disp__easy_ints(const disp_dims *d) {
  disp_int_list l = {d->v, d->len > 0 ? (size_t)d->len : 0};
  return l;
}
static inline disp_opt_int_list disp__easy_opt_ints(const disp_dims *d) {
  disp_opt_int_list o = {disp__easy_ints(d), d->len >= 0};
  return o;
}

#endif
