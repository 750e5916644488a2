/*
 * easy_scope.c - the thread's scopes and the error rule of the concise API
 * (disp/easy.h: Note [Scopes], Note [Concise errors]).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "easy_internal.h"
#include "error_internal.h"

_Thread_local disp__easy_state disp__easy_tls __attribute__((tls_model("initial-exec")));
/* The last concise failure's message (truncated), on the heap: a library
 * others may dlopen keeps its thread-local block small, or glibc refuses to
 * load it ("cannot allocate memory in static TLS block"). Plain malloc, as
 * error.c's messages (no counted allocation on the error path); freed at
 * thread exit by the key's destructor. NULL until the first failure, or
 * when there was no memory for it. */
static _Thread_local char *fail_msg;
static pthread_key_t fail_msg_key;
static pthread_once_t fail_msg_once = PTHREAD_ONCE_INIT;

static void make_fail_msg_key(void) { pthread_key_create(&fail_msg_key, free); }

static void save_fail_msg(const char *msg) {
  if (!fail_msg && (fail_msg = malloc(DISP__EASY_SAVED_MSG)) != NULL) {
    pthread_once(&fail_msg_once, make_fail_msg_key);
    pthread_setspecific(fail_msg_key, fail_msg);
  }
  if (fail_msg) snprintf(fail_msg, DISP__EASY_SAVED_MSG, "%s", msg);
}
_Atomic(int) disp__easy_open_scopes;

disp_scope disp_scope_begin(void) {
  disp__easy_state *e = &disp__easy_tls;
  disp_scope s = {e->len, ++e->depth, 1, disp__error_seq, e->inner_seq};
  e->inner_seq = disp__error_seq;
  atomic_fetch_add_explicit(&disp__easy_open_scopes, 1, memory_order_relaxed);
  return s;
}

disp_status disp_scope_end(disp_scope *s) {
  disp__easy_state *e = &disp__easy_tls;
  if (!s || !s->open) return DISP_OK;
  s->open = 0;
  disp_status st = e->fail_seq > s->seq ? e->fail_status : DISP_OK;
  /* An inner scope ended already with an outer one (out of order): its
   * tensors are gone; nothing is left to do. */
  if (s->depth > e->depth) return st;
  e->inner_seq = s->outer_seq;
  while (e->len > s->mark) disp_tensor_release(e->items[--e->len]);
  /* this scope and any inner one left open */
  atomic_fetch_sub_explicit(&disp__easy_open_scopes, (int)(e->depth - s->depth + 1), memory_order_relaxed);
  e->depth = s->depth - 1;
  if (e->depth == 0) {
    /* No scope left: give the array back, so a thread that ends holds
     * nothing (LeakSanitizer checks it). */
    disp__free(e->items);
    e->items = NULL;
    e->cap = 0;
  }
  return st;
}

int disp__easy_scope_failed(disp_status *st) {
  disp__easy_state *e = &disp__easy_tls;
  if (!e->depth || e->fail_seq <= e->inner_seq) return 0;
  *st = e->fail_status;
  return 1;
}

disp_tensor *disp__easy_own_slow(disp_tensor *t) {
  disp__easy_state *e = &disp__easy_tls;
  size_t cap = e->cap ? 2 * e->cap : 64;
  disp_tensor **items = disp__realloc(e->items, cap * sizeof *items);
  if (!items) {
    disp_tensor_release(t);
    disp__fail(DISP_ERR_NO_MEMORY, "out of memory: a scope could not keep one more tensor");
    return disp__easy_failed();
  }
  e->items = items;
  e->cap = cap;
  e->items[e->len++] = t;
  return t;
}

disp_tensor *disp__easy_failed(void) {
  disp__easy_state *e = &disp__easy_tls;
  e->fail_seq = disp__error_seq;
  e->fail_status = disp__last_status();
  save_fail_msg(disp_last_error());
  return NULL;
}

disp_tensor *disp__easy_finish(disp_tensor *r, disp_status st, const char *fn) {
  return st != DISP_OK ? disp__easy_call_failed(fn) : disp__easy_own(r);
}

/* "disp_aten_ID: ARG is NULL" (the typed entries' refusal): ARG's length
 * and *arg set; 0 for any other message. */
static size_t null_arg_in(const char *msg, const char **arg) {
  static const char tail[] = " is NULL";
  size_t n = strlen(msg), t = sizeof tail - 1;
  const char *colon = strstr(msg, ": ");
  if (strncmp(msg, "disp_aten_", 10) || n <= t || strcmp(msg + n - t, tail) || !colon) return 0;
  *arg = colon + 2;
  return (size_t)(msg + n - t - *arg);
}

disp_tensor *disp__easy_call_failed(const char *fn) {
  disp__easy_state *e = &disp__easy_tls;
  const char *arg = NULL;
  size_t len = disp__last_status() == DISP_ERR_INVALID_ARG ? null_arg_in(disp_last_error(), &arg) : 0;
  if (!len) return disp__easy_failed();
  /* The typed entry's "is NULL" is the one message since the last concise
   * failure: that failure made the NULL, and its message is the chain's. */
  if (e->fail_seq && e->fail_seq + 1 == disp__error_seq) {
    disp__fail(e->fail_status, "%s", fail_msg ? fail_msg : "an earlier call of the chain failed");
  } else {
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)len, arg);
    disp__fail(DISP_ERR_INVALID_ARG, "%s: %s is NULL", fn, name);
  }
  return disp__easy_failed();
}

disp_tensor *disp__easy_null(const char *fn, const char *arg) {
  disp__easy_state *e = &disp__easy_tls;
  if (e->fail_seq && e->fail_seq == disp__error_seq) return NULL;
  disp__fail(DISP_ERR_INVALID_ARG, "%s: %s is NULL", fn, arg);
  return disp__easy_failed();
}

disp_tensor *disp_keep(disp_tensor *t) { return t ? disp_tensor_retain(t) : disp__easy_null("disp_keep", "t"); }

disp_grad_guard disp_no_grad_begin(void) {
  disp_grad_guard g = {disp_grad_mode_enabled(), 1};
  disp_grad_mode_push(0);
  return g;
}

void disp_no_grad_end(disp_grad_guard *g) {
  if (!g || !g->open) return;
  g->open = 0;
  disp_grad_mode_push(g->previous);
}

disp_status disp_last_status(void) { return disp__last_status(); }
