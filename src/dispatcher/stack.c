/*
 * stack.c - boxed values and the stack of a boxed call.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "tensor/tensor_ref_internal.h"
#include "disp/value.h"
#include "argcheck_internal.h"
#include "error_internal.h"

#include "stack_internal.h"

const char *disp_value_tag_name(disp_value_tag tag) {
  switch (tag) {
    case DISP_VALUE_NONE: return "None";
    case DISP_VALUE_TENSOR: return "Tensor";
    case DISP_VALUE_INT: return "int";
    case DISP_VALUE_DOUBLE: return "float";
    case DISP_VALUE_BOOL: return "bool";
    case DISP_VALUE_STRING: return "str";
    case DISP_VALUE_INT_LIST: return "int[]";
    case DISP_VALUE_DOUBLE_LIST: return "float[]";
    case DISP_VALUE_BOOL_LIST: return "bool[]";
    case DISP_VALUE_TENSOR_LIST: return "Tensor[]";
    case DISP_VALUE_DEVICE: return "Device";
    case DISP_VALUE_GENERATOR: return "Generator";
    case DISP_VALUE_STORAGE: return "Storage";
  }
  return "unknown";
}

void disp_tensor_vec_free(disp_tensor_vec *v) {
  if (!v) return;
  for (size_t i = 0; i < v->len; i++) disp_tensor_release(v->data[i]);
  disp__free(v->data);
  v->data = NULL;
  v->len = 0;
}

disp_stack *disp_stack_new(void) {
  disp_stack *s = disp__calloc(1, sizeof(disp_stack));
  if (!s) disp__fail(DISP_ERR_NO_MEMORY, "disp_stack_new: out of memory for a stack");
  return s;
}

void disp_value_clear(disp_value *v) {
  if (!v) return; /* nothing to clear */
  switch (v->tag) {
    case DISP_VALUE_TENSOR: disp_tensor_release(v->u.tensor); break;
    case DISP_VALUE_STRING: disp__free(v->u.str); break;
    case DISP_VALUE_INT_LIST: disp__free(v->u.ints.data); break;
    case DISP_VALUE_DOUBLE_LIST: disp__free(v->u.doubles.data); break;
    case DISP_VALUE_BOOL_LIST: disp__free(v->u.bools.data); break;
    case DISP_VALUE_TENSOR_LIST: /* the array may be NULL whatever its count says (written by hand) */
      for (size_t i = 0; v->u.tensors.data && i < v->u.tensors.len; i++) disp_tensor_release(v->u.tensors.data[i]);
      disp__free(v->u.tensors.data);
      break;
    case DISP_VALUE_STORAGE: disp_storage_release(v->u.storage); break;
    default: break;
  }
  v->tag = DISP_VALUE_NONE;
}

/* Values that own nothing need no work; tensors are the common case. A
 * Tensor value holding NULL is refused by every call (boxed_check.c) but
 * may be on a stack: a program can write one. */
static inline void release_value(disp_value *v) {
  if (v->tag == DISP_VALUE_TENSOR) {
    if (v->u.tensor) disp__tensor_release_fast(v->u.tensor);
  } else if (v->tag > DISP_VALUE_BOOL) {
    disp_value_clear(v);
  }
}

static void clear_rest(disp_stack *s);

/* Drops one reference of non-NULL `t`: nonzero when it was the last, which
 * disp__tensor_free_last must then free (disp__tensor_release_fast split). */
static inline int drop_is_last(disp_tensor *t) {
  return atomic_fetch_sub_explicit(&((disp__tensor_head *)(void *)t)->refs, 1, memory_order_release) == 1;
}

/* The common case, Tensors whose last reference is elsewhere, makes no call
 * (so no stack frame); at the first value that needs one, clear_rest takes
 * over: it finishes that value (a Tensor's count already dropped) and
 * releases the rest the general way. */
void disp_stack_clear(disp_stack *s) {
  if (!s) return;
  for (size_t n = s->len; n; n--) {
    const disp_value *v = &s->v[n - 1];
    disp_tensor *t = v->u.tensor;
    if (v->tag != DISP_VALUE_TENSOR || !t || drop_is_last(t)) {
      s->len = n;
      clear_rest(s);
      return;
    }
  }
  s->len = 0;
}

static __attribute__((noinline)) void clear_rest(disp_stack *s) {
  disp_value *v = &s->v[--s->len];
  if (v->tag == DISP_VALUE_TENSOR) {
    if (v->u.tensor) disp__tensor_free_last(v->u.tensor); /* its count already dropped */
  } else if (v->tag > DISP_VALUE_BOOL) {
    disp_value_clear(v);
  }
  while (s->len) release_value(&s->v[--s->len]);
}

void disp_stack_free(disp_stack *s) {
  if (!s) return;
  disp_stack_clear(s);
  disp__free(s->v);
  disp__free(s);
}

size_t disp_stack_size(const disp_stack *s) { return s ? s->len : 0; }

/* NULL, with a message naming `fn`, for an index past the stack's end. */
static disp_value *index_past_end(const char *fn, const disp_stack *s, size_t i) {
  disp__fail(DISP_ERR_INVALID_ARG, "%s: index %zu is out of range for a stack of %zu value%s", fn, i, s->len,
             s->len == 1 ? "" : "s");
  return NULL;
}

disp_value *disp_stack_at(disp_stack *s, size_t i) {
  DISP_REFUSE_NULL_PTR(s);
  return i < s->len ? &s->v[i] : index_past_end("disp_stack_at", s, i);
}

disp_value *disp_stack_peek(disp_stack *s, size_t i) {
  DISP_REFUSE_NULL_PTR(s);
  return i < s->len ? &s->v[s->len - 1 - i] : index_past_end("disp_stack_peek", s, i);
}

/* Reserve one slot; the value is moved in by the caller. */
static disp_value *slot(disp_stack *s) {
  if (s->len == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 8;
    disp_value *p = disp__realloc(s->v, cap * sizeof *p);
    if (!p) return NULL;
    s->v = p;
    s->cap = cap;
  }
  return &s->v[s->len];
}

static disp_status oom(void) { return disp__fail(DISP_ERR_NO_MEMORY, "out of memory pushing onto a stack"); }

disp_status disp_stack_push_value_steal(disp_stack *s, disp_value *v) {
  DISP_REFUSE_NULL(v);
  if (!s) disp_value_clear(v); /* a _steal function owns `v` even when it fails */
  DISP_REFUSE_NULL(s);
  disp_value *d = slot(s);
  if (!d) {
    disp_value_clear(v);
    return oom();
  }
  *d = *v;
  v->tag = DISP_VALUE_NONE;
  s->len++;
  return DISP_OK;
}

disp_status disp_stack_push_none(disp_stack *s) {
  DISP_REFUSE_NULL(s);
  disp_value v = {0};
  return disp_stack_push_value_steal(s, &v);
}

disp_status disp_stack_push_tensor_steal(disp_stack *s, disp_tensor *t) {
  if (!s) disp_tensor_release(t); /* a _steal function owns `t` even when it fails */
  DISP_REFUSE_NULL(s);
  disp_value v = {0};
  if (t) {
    v.tag = DISP_VALUE_TENSOR;
    v.u.tensor = t;
  }
  return disp_stack_push_value_steal(s, &v);
}

static __attribute__((noinline)) disp_status push_tensor_slow(disp_stack *s, disp_tensor *t) {
  if (!s) return disp__null_arg("disp_stack_push_tensor", "s");
  return disp_stack_push_tensor_steal(s, t ? disp_tensor_retain(t) : NULL);
}

/* The common case makes no call, so no stack frame. */
disp_status disp_stack_push_tensor(disp_stack *s, disp_tensor *t) {
  if (__builtin_expect(s && t && s->len < s->cap, 1)) {
    disp_value *v = &s->v[s->len++];
    v->tag = DISP_VALUE_TENSOR;
    v->u.tensor = t;
    disp__tensor_retain_fast(t);
    return DISP_OK;
  }
  return push_tensor_slow(s, t);
}

disp_status disp_stack_push_int(disp_stack *s, int64_t x) {
  DISP_REFUSE_NULL(s);
  disp_value v = {.tag = DISP_VALUE_INT, .u.i = x};
  return disp_stack_push_value_steal(s, &v);
}

disp_status disp_stack_push_double(disp_stack *s, double x) {
  DISP_REFUSE_NULL(s);
  disp_value v = {.tag = DISP_VALUE_DOUBLE, .u.d = x};
  return disp_stack_push_value_steal(s, &v);
}

disp_status disp_stack_push_bool(disp_stack *s, bool x) {
  DISP_REFUSE_NULL(s);
  disp_value v = {.tag = DISP_VALUE_BOOL, .u.b = x};
  return disp_stack_push_value_steal(s, &v);
}

disp_status disp_stack_push_scalar(disp_stack *s, disp_scalar x) {
  DISP_REFUSE_NULL(s);
  switch (x.kind) {
    case DISP_SCALAR_INT: return disp_stack_push_int(s, x.v.i);
    case DISP_SCALAR_DOUBLE: return disp_stack_push_double(s, x.v.d);
    case DISP_SCALAR_BOOL: return disp_stack_push_bool(s, x.v.b);
    case DISP_SCALAR_NONE: break;
  }
  return disp_stack_push_none(s);
}

disp_status disp_stack_push_string(disp_stack *s, const char *x) {
  DISP_REFUSE_NULL(s);
  if (!x) return disp_stack_push_none(s);
  disp_value v = {.tag = DISP_VALUE_STRING, .u.str = disp__strdup(x)};
  if (!v.u.str) return oom();
  return disp_stack_push_value_steal(s, &v);
}

static void *dup_array(const void *src, size_t n, size_t size) {
  void *p = disp__malloc(n ? n * size : 1);
  if (p && n) memcpy(p, src, n * size);
  return p;
}

disp_status disp_stack_push_int_list(disp_stack *s, const int64_t *x, size_t n) {
  DISP_REFUSE_NULL(s);
  if (n) DISP_REFUSE_NULL_AS(x, "v"); /* an empty list may be NULL */
  disp_value v = {.tag = DISP_VALUE_INT_LIST};
  if (!(v.u.ints.data = dup_array(x, n, sizeof *x))) return oom();
  v.u.ints.len = n;
  return disp_stack_push_value_steal(s, &v);
}

disp_status disp_stack_push_double_list(disp_stack *s, const double *x, size_t n) {
  DISP_REFUSE_NULL(s);
  if (n) DISP_REFUSE_NULL_AS(x, "v"); /* an empty list may be NULL */
  disp_value v = {.tag = DISP_VALUE_DOUBLE_LIST};
  if (!(v.u.doubles.data = dup_array(x, n, sizeof *x))) return oom();
  v.u.doubles.len = n;
  return disp_stack_push_value_steal(s, &v);
}

disp_status disp_stack_push_bool_list(disp_stack *s, const bool *x, size_t n) {
  DISP_REFUSE_NULL(s);
  if (n) DISP_REFUSE_NULL_AS(x, "v"); /* an empty list may be NULL */
  disp_value v = {.tag = DISP_VALUE_BOOL_LIST};
  if (!(v.u.bools.data = dup_array(x, n, sizeof *x))) return oom();
  v.u.bools.len = n;
  return disp_stack_push_value_steal(s, &v);
}

disp_status disp_stack_push_tensor_list(disp_stack *s, disp_tensor *const *x, size_t n) {
  DISP_REFUSE_NULL(s);
  if (n) DISP_REFUSE_NULL_AS(x, "v"); /* an empty list may be NULL */
  disp_value v = {.tag = DISP_VALUE_TENSOR_LIST};
  if (!(v.u.tensors.data = dup_array(x, n, sizeof *x))) return oom();
  v.u.tensors.len = n;
  for (size_t i = 0; i < n; i++)
    if (x[i]) disp_tensor_retain(x[i]);
  return disp_stack_push_value_steal(s, &v);
}

disp_status disp_stack_push_device(disp_stack *s, int32_t type, int32_t index) {
  DISP_REFUSE_NULL(s);
  if (type < 0 || type >= DISP_NUM_BACKENDS)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_stack_push_device: invalid device type %d", (int)type);
  if (index < -1 || index > INT16_MAX) /* disp_device keeps an int16_t, as c10::DeviceIndex */
    return disp__fail(DISP_ERR_INVALID_ARG, "Device index must be -1 or non-negative, got %d", (int)index);
  disp_value v = {.tag = DISP_VALUE_DEVICE};
  v.u.device.type = type;
  v.u.device.index = index;
  return disp_stack_push_value_steal(s, &v);
}

disp_status disp_stack_push_generator(disp_stack *s, void *g) {
  DISP_REFUSE_NULL(s);
  if (!g) return disp_stack_push_none(s);
  disp_value v = {.tag = DISP_VALUE_GENERATOR, .u.ptr = g};
  return disp_stack_push_value_steal(s, &v);
}

disp_status disp_stack_push_storage(disp_stack *s, disp_storage *st) {
  DISP_REFUSE_NULL(s);
  if (!st) return disp_stack_push_none(s);
  disp_value v = {.tag = DISP_VALUE_STORAGE, .u.storage = disp_storage_retain(st)};
  return disp_stack_push_value_steal(s, &v);
}

disp_status disp_stack_push_value(disp_stack *s, const disp_value *x) {
  DISP_REFUSE_NULL(s);
  DISP_REFUSE_NULL_AS(x, "v");
  switch (x->tag) {
    case DISP_VALUE_TENSOR: return disp_stack_push_tensor(s, x->u.tensor);
    case DISP_VALUE_STRING: return disp_stack_push_string(s, x->u.str);
    case DISP_VALUE_INT_LIST: return disp_stack_push_int_list(s, x->u.ints.data, x->u.ints.len);
    case DISP_VALUE_DOUBLE_LIST: return disp_stack_push_double_list(s, x->u.doubles.data, x->u.doubles.len);
    case DISP_VALUE_BOOL_LIST: return disp_stack_push_bool_list(s, x->u.bools.data, x->u.bools.len);
    case DISP_VALUE_TENSOR_LIST:
      return disp_stack_push_tensor_list(s, x->u.tensors.data, x->u.tensors.len);
    case DISP_VALUE_STORAGE: return disp_stack_push_storage(s, x->u.storage);
    default: {
      disp_value v = *x;
      return disp_stack_push_value_steal(s, &v);
    }
  }
}

disp_status disp_stack_pop(disp_stack *s, disp_value *out) {
  DISP_REFUSE_NULL(s);
  DISP_REFUSE_NULL(out);
  if (!s->len) return disp__fail(DISP_ERR_INVALID_ARG, "pop from an empty stack");
  *out = s->v[--s->len];
  return DISP_OK;
}

void disp_stack_drop(disp_stack *s, size_t n) {
  if (!s) return; /* nothing to drop */
  while (n-- && s->len) release_value(&s->v[--s->len]);
}

disp_status disp_stack_pop_tensor(disp_stack *s, disp_tensor **out) {
  DISP_REFUSE_NULL(s);
  DISP_REFUSE_NULL(out);
  if (!s->len) return disp__fail(DISP_ERR_INVALID_ARG, "pop from an empty stack");
  disp_value *top = &s->v[s->len - 1];
  if (top->tag != DISP_VALUE_TENSOR && top->tag != DISP_VALUE_NONE)
    return disp__fail(DISP_ERR_TYPE, "expected a Tensor on the stack, found %s", disp_value_tag_name(top->tag));
  *out = top->tag == DISP_VALUE_TENSOR ? top->u.tensor : NULL;
  s->len--;
  return DISP_OK;
}

/* ---- Note [Reused stacks] ------------------------------------------------ */

/* Four levels of nested calls into boxed kernels cover autograd over a
 * boxed backend over a boxed fallback; a stack that grew past
 * KEPT_CAPACITY values gives its array back rather than hold it. */
enum { CACHED_STACKS = 4, KEPT_CAPACITY = 64 };

typedef struct stack_cache {
  disp_stack s[CACHED_STACKS];
  unsigned used; /* s[0..used) are borrowed */
} stack_cache;

/* initial-exec: one %fs-relative load; the pointer alone is thread-local,
 * so the static TLS block grows by 8 bytes (see tls_internal.h). */
static _Thread_local stack_cache *tls_cache __attribute__((tls_model("initial-exec")));
static pthread_key_t g_cache_key;
static pthread_once_t g_cache_once = PTHREAD_ONCE_INIT;
static int g_cache_key_ok;

/* pthread key destructor: the thread is exiting. Nothing is borrowed then
 * (no call is running), and every value was cleared on give-back. */
static void cache_free(void *p) {
  stack_cache *c = p;
  for (int i = 0; i < CACHED_STACKS; i++) disp__free(c->s[i].v);
  disp__free(c);
  tls_cache = NULL; /* a later destructor that calls the library makes a new one */
}

static void make_cache_key(void) { g_cache_key_ok = pthread_key_create(&g_cache_key, cache_free) == 0; }

/* The thread's first borrow, or one nested deeper than the cache. */
static __attribute__((noinline)) disp_stack *borrow_slow(void) {
  if (!tls_cache) {
    pthread_once(&g_cache_once, make_cache_key);
    stack_cache *c = g_cache_key_ok ? disp__calloc(1, sizeof *c) : NULL;
    if (c && pthread_setspecific(g_cache_key, c) == 0) {
      tls_cache = c;
      c->used = 1;
      return &c->s[0];
    }
    disp__free(c); /* without a cache every borrow allocates, as before it existed */
  }
  return disp_stack_new();
}

disp_stack *disp__stack_borrow(void) {
  stack_cache *c = tls_cache;
  if (__builtin_expect(c && c->used < CACHED_STACKS, 1)) return &c->s[c->used++];
  return borrow_slow();
}

void disp__stack_give_back(disp_stack *s) {
  stack_cache *c = tls_cache;
  if (c && c->used && s == &c->s[c->used - 1]) {
    disp_stack_clear(s);
    c->used--;
    if (s->cap > KEPT_CAPACITY) {
      disp__free(s->v);
      s->v = NULL;
      s->cap = 0;
    }
    return;
  }
  disp_stack_free(s);
}
