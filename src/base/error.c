/*
 * error.c - the thread-local error message and the warning handler.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "strbuf_internal.h"

/* The message lives in a per-thread heap buffer so long messages (tables of
 * keys) are not truncated. A thread that exits leaks nothing: the buffer is
 * also stored under a pthread key whose destructor frees it. */
static _Thread_local char *tls_msg;
static _Thread_local size_t tls_cap;
static pthread_key_t g_msg_key;
static pthread_once_t g_msg_once = PTHREAD_ONCE_INIT;

static void make_key(void) { pthread_key_create(&g_msg_key, free); }

/* Note [Whose message is it]
 * A failed call's message must be about that call: a kernel that fails
 * without setting one must not show an earlier failure's, and a failure that
 * passes through nested calls gets one operator name, not one per level.
 * Every new message bumps a per-thread sequence number (extending one with
 * context does not); the calls remember which message they have named after
 * an operator. A call that read the number before running its kernel knows
 * exactly whether the kernel set a message (disp__error_name_op). The typed
 * fast path reads nothing on success, so after a failure it can only judge
 * by the message itself (disp__error_add_op_after): one the program has
 * already read through disp_last_error() belongs to an earlier failure. */
_Thread_local uint64_t disp__error_seq;
static _Thread_local uint64_t tls_named_seq; /* the message last named after an operator */
static _Thread_local int tls_read;           /* the program has read the current message */
static _Thread_local disp_status tls_status; /* the status the current message was set with */

static void set_text(const char *text, size_t len) {
  if (len + 1 > tls_cap) {
    size_t cap = len + 1 < 256 ? 256 : len + 1;
    char *p = realloc(tls_msg, cap);
    if (!p) return; /* keep the old message rather than crash */
    tls_msg = p;
    tls_cap = cap;
    pthread_once(&g_msg_once, make_key);
    pthread_setspecific(g_msg_key, p);
  }
  memcpy(tls_msg, text, len);
  tls_msg[len] = '\0';
}

/* A new message: a new failure. */
static void set_message(const char *text, size_t len) {
  set_text(text, len);
  disp__error_seq++;
  tls_read = 0;
}

const char *disp_last_error(void) {
  tls_read = 1;
  return tls_msg ? tls_msg : "";
}

disp_status disp__last_status(void) { return tls_status; }

void disp_clear_error(void) {
  tls_status = DISP_OK;
  if (tls_msg) tls_msg[0] = '\0';
  disp__error_seq++;
  tls_read = 0;
}

/* Formats into `stack` (cap bytes) or, when longer, into plain malloc
 * memory: reporting an out-of-memory must not need the counted allocations
 * that have just failed (Note [Allocation seam] in alloc_internal.h), and
 * the arguments may point into the current message, so it is never the
 * target. NULL when even that fails. */
static char *format(char *stack, size_t cap, size_t *len, const char *fmt, va_list ap) {
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(stack, cap, fmt, ap);
  char *out = stack;
  if (n < 0) n = 0, stack[0] = '\0';
  if ((size_t)n >= cap && (out = malloc((size_t)n + 1)) != NULL) vsnprintf(out, (size_t)n + 1, fmt, again);
  va_end(again);
  if (!out) return NULL;
  *len = strlen(out);
  return out;
}

enum { STACK_MSG = 512 };

disp_status disp__vfail(disp_status status, const char *fmt, va_list ap) {
  char small[STACK_MSG];
  size_t len = 0;
  char *text = format(small, sizeof small, &len, fmt, ap);
  if (!text) text = small, len = strlen(small); /* truncated rather than lost */
  set_message(text, len);
  tls_status = status;
  if (text != small) free(text);
  return status;
}

disp_status disp__fail(disp_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  disp__vfail(status, fmt, ap);
  va_end(ap);
  return status;
}

disp_status disp_set_error(disp_status status, const char *fmt, ...) {
  if (!fmt) return disp__fail(DISP_ERR_INVALID_ARG, "disp_set_error: fmt is NULL"); /* Note [NULL arguments] */
  va_list ap;
  va_start(ap, fmt);
  disp__vfail(status, fmt, ap);
  va_end(ap);
  return status;
}

void disp__error_prefix(const char *fmt, ...) {
  char small[STACK_MSG];
  size_t plen = 0;
  va_list ap;
  va_start(ap, fmt);
  char *prefix = format(small, sizeof small, &plen, fmt, ap);
  va_end(ap);
  if (!prefix) return; /* keep the message without its context */
  const char *msg = tls_msg ? tls_msg : "";
  size_t mlen = strlen(msg);
  char *text = malloc(plen + mlen + 1);
  if (text) {
    memcpy(text, prefix, plen);
    memcpy(text + plen, msg, mlen + 1);
    set_text(text, plen + mlen); /* the same failure, with more context */
    free(text);
  }
  if (prefix != small) free(prefix);
}

/* Whether `msg` names operator `name` already: it starts with "name:" or
 * "name " (the dispatcher's own messages), or quotes 'name' (PyTorch's
 * "Could not run 'ns::op' ..."). */
static int names_op(const char *msg, const char *name) {
  size_t n = strlen(name);
  if (strncmp(msg, name, n) == 0 && (msg[n] == ':' || msg[n] == ' ')) return 1;
  for (const char *p = strchr(msg, '\''); p; p = strchr(p + 1, '\''))
    if (strncmp(p + 1, name, n) == 0 && p[n + 1] == '\'') return 1;
  return 0;
}

static void name_fresh_message(const char *op_name) {
  if (!names_op(tls_msg, op_name)) disp__error_prefix("%s: ", op_name);
  tls_named_seq = disp__error_seq;
}

/* `st` is the kernel's status, or DISP_OK when the caller does not know it. */
static void no_message(const char *op_name, disp_status st) {
  if (st == DISP_OK) disp__fail(st, "%s: the kernel failed without setting an error message", op_name);
  else disp__fail(st, "%s: the kernel returned %s without setting an error message", op_name, disp_status_name(st));
  tls_named_seq = disp__error_seq;
}

void disp__error_mark_named(void) { tls_named_seq = disp__error_seq; }

void disp__error_name_op(const char *op_name, disp_status st, uint64_t seq_before) {
  if (disp__error_seq == seq_before || !tls_msg || !tls_msg[0]) no_message(op_name, st);
  else if (tls_named_seq != disp__error_seq) name_fresh_message(op_name);
  /* else: a nested call's failure, named after its operator already */
}

void disp__error_add_op_after(const char *op_name) {
  if (tls_read || !tls_msg || !tls_msg[0]) no_message(op_name, DISP_OK);
  else if (tls_named_seq != disp__error_seq) name_fresh_message(op_name);
}

const char *disp_status_name(disp_status s) {
  switch (s) {
#define NAME(x) case x: return #x;
    NAME(DISP_OK) NAME(DISP_ERR_INVALID_ARG) NAME(DISP_ERR_NO_MEMORY)
    NAME(DISP_ERR_SCHEMA) NAME(DISP_ERR_OP_NOT_FOUND) NAME(DISP_ERR_NO_KERNEL)
    NAME(DISP_ERR_DUPLICATE) NAME(DISP_ERR_MISMATCH) NAME(DISP_ERR_KERNEL)
    NAME(DISP_ERR_TYPE) NAME(DISP_ERR_PLUGIN) NAME(DISP_ERR_IO)
#undef NAME
  }
  return "DISP_ERR_UNKNOWN";
}

/* ---- warnings ---------------------------------------------------------- */

static void default_warning(const char *message, void *user_data) {
  (void)user_data;
  fprintf(stderr, "Warning: %s\n", message);
}

/* Warnings are rare, so a mutex guards the handler: a reader never sees a
 * handler paired with another handler's user_data. */
static pthread_mutex_t g_warn_lock = PTHREAD_MUTEX_INITIALIZER;
static disp_warning_handler g_warn_fn = default_warning;
static void *g_warn_data;

disp_warning_handler disp_set_warning_handler(disp_warning_handler h, void *user_data) {
  pthread_mutex_lock(&g_warn_lock);
  disp_warning_handler prev = g_warn_fn;
  g_warn_fn = h ? h : default_warning;
  g_warn_data = h ? user_data : NULL;
  pthread_mutex_unlock(&g_warn_lock);
  return prev == default_warning ? NULL : prev;
}

void disp__warn(const char *fmt, ...) {
  disp_strbuf b;
  disp__strbuf_init(&b);
  va_list ap;
  va_start(ap, fmt);
  disp__strbuf_vappendf(&b, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&g_warn_lock);
  disp_warning_handler fn = g_warn_fn;
  void *data = g_warn_data;
  pthread_mutex_unlock(&g_warn_lock);
  fn(disp__strbuf_cstr(&b), data);
  disp__strbuf_free(&b);
}

void disp__assert_fail(const char *expr, const char *file, int line) {
  fprintf(stderr, "libdispatch internal assertion failed: %s at %s:%d\n", expr, file, line);
  abort();
}
