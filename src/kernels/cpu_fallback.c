/*
 * cpu_fallback.c - PyTorch 1.13's cpu_fallback as a boxed kernel
 * (disp/cpu_fallback.h): move the tensor arguments to the CPU, run the
 * operator there, copy written arguments back, return the results on the
 * original device.
 *
 * The caller's stack is only read until everything has succeeded (Note
 * [The CPU fallback's stack]): the CPU call runs on a stack of the
 * fallback's own, and `cpu` keeps one more reference to each moved argument,
 * because the CPU call consumes its stack and step 3 still needs them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "disp/aten.h"
#include "disp/cpu_fallback.h"
#include "cpu_fallback_internal.h"
#include "error_internal.h"

/* One call of the fallback. */
typedef struct fb_call {
  const disp_op *op;
  const disp_schema *schema;
  disp_stack *caller;
  size_t base, nargs;
  disp_value *cpu;    /* the arguments as the CPU call gets them (owned) */
  disp_device target; /* where results go; type DISP_NUM_BACKENDS: nowhere */
  char key[64];       /* the key the call dispatched to, for messages */
} fb_call;

/* This thread is moving tensors for a fallback call: a fallback reached
 * meanwhile means the backend lacks an operator that moving needs. */
static _Thread_local int t_moving;

static const disp_value *arg(const fb_call *c, size_t i) { return disp_stack_at(c->caller, c->base + i); }

static int is_tensor_list_type(const disp_type *t, int *optional_elems) {
  if (disp_schema_type_kind(t) == DISP_TYPE_OPTIONAL) t = disp_schema_type_element(t, 0);
  if (disp_schema_type_kind(t) != DISP_TYPE_LIST) return 0;
  const disp_type *e = disp_schema_type_element(t, 0);
  *optional_elems = disp_schema_type_kind(e) == DISP_TYPE_OPTIONAL;
  return 1;
}

/* ---- step 0: what the call is about --------------------------------------- */

static disp_status check_call(const disp_op *op, disp_keyset ks, disp_stack *stack, unsigned flags, fb_call *c) {
  disp_key key = disp_keyset_highest_key(ks);
  snprintf(c->key, sizeof c->key, "%s", disp_key_name(key));
  if (flags & ~(unsigned)(DISP_CPU_FALLBACK_WARN | DISP_CPU_FALLBACK_ERROR_ON_VIEWS))
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_cpu_fallback: unknown option bits 0x%x for %s on %s",
                      flags, disp_op_name(op), c->key);
  c->schema = disp_op_schema(op);
  if (!c->schema || disp_schema_is_vararg(c->schema) || disp_schema_is_varret(c->schema))
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_cpu_fallback: %s has %s, so its arguments cannot be moved (key %s)",
                      disp_op_name(op), c->schema ? "varargs" : "no schema", c->key);
  if (disp_keyset_backend_index(ks) == DISP_BACKEND_CPU)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "disp_cpu_fallback: %s reached the CPU fallback on the %s key: it would run itself again; "
                      "register it for a backend other than the CPU",
                      disp_op_name(op), c->key);
  if (t_moving)
    return disp__fail(DISP_ERR_NO_KERNEL,
                      "The CPU fallback was reached for %s on %s while it was moving tensors between %s and the "
                      "CPU: the backend must implement the operators that move data (empty.memory_format, "
                      "empty_strided, _copy_from, _copy_from_and_resize) itself",
                      disp_op_name(op), c->key, c->key);
  c->nargs = disp_schema_num_arguments(c->schema);
  if (disp_stack_size(stack) < c->nargs)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_cpu_fallback: %s expects %zu arguments on the stack, found %zu",
                      disp_op_name(op), c->nargs, disp_stack_size(stack));
  c->op = op;
  c->caller = stack;
  c->base = disp_stack_size(stack) - c->nargs;
  return DISP_OK;
}

/* ---- the target device and the device check -------------------------------- */

/* 1.13's compute_target_device: a Device argument, else the first tensor
 * argument, else the first element of a Tensor[] (not Tensor?[]). */
static void find_target(fb_call *c) {
  disp_device none = {DISP_NUM_BACKENDS, -1}, first = none, from_list = none;
  c->target = none;
  for (size_t i = 0; i < c->nargs; i++) {
    const disp_value *v = arg(c, i);
    int opt = 0;
    if (v->tag == DISP_VALUE_DEVICE) {
      c->target = disp_device_make((disp_backend)v->u.device.type, v->u.device.index);
    } else if (v->tag == DISP_VALUE_TENSOR && first.type == DISP_NUM_BACKENDS) {
      first = disp_tensor_device(v->u.tensor);
    } else if (v->tag == DISP_VALUE_TENSOR_LIST && from_list.type == DISP_NUM_BACKENDS &&
               is_tensor_list_type(disp_schema_argument_type(c->schema, i), &opt) && !opt) {
      for (size_t k = 0; k < v->u.tensors.len && from_list.type == DISP_NUM_BACKENDS; k++)
        if (v->u.tensors.data[k]) from_list = disp_tensor_device(v->u.tensors.data[k]);
    }
  }
  if (c->target.type == DISP_NUM_BACKENDS) c->target = first.type != DISP_NUM_BACKENDS ? first : from_list;
}

/* Tensors on two non-CPU devices have no one device to go back to: the
 * error TensorIterator gives a native kernel. */
static disp_status check_one_device(const fb_call *c) {
  disp_device seen = {DISP_NUM_BACKENDS, -1};
  for (size_t i = 0; i < c->nargs; i++) {
    const disp_value *v = arg(c, i);
    disp_tensor *const *ts = v->tag == DISP_VALUE_TENSOR ? &v->u.tensor : NULL;
    size_t n = v->tag == DISP_VALUE_TENSOR ? 1 : 0;
    if (v->tag == DISP_VALUE_TENSOR_LIST) ts = v->u.tensors.data, n = v->u.tensors.len;
    for (size_t k = 0; k < n; k++) {
      if (!ts[k]) continue;
      disp_device d = disp_tensor_device(ts[k]);
      if (d.type == DISP_BACKEND_CPU) continue;
      if (seen.type == DISP_NUM_BACKENDS) {
        seen = d;
      } else if (!disp_device_equal(seen, d)) {
        char a[32], b[32];
        disp_device_format(seen, a, sizeof a);
        disp_device_format(d, b, sizeof b);
        return disp__fail(DISP_ERR_INVALID_ARG,
                          "Expected all tensors to be on the same device, but found at least two devices, %s and %s!",
                          a, b);
      }
    }
  }
  return DISP_OK;
}

/* Note [CPU Fallback Does Not Handle View Operators] (1.13): a return that
 * aliases an input without `!` should share its storage, which a tensor
 * brought back from the CPU cannot. */
static disp_status check_views(const fb_call *c, unsigned flags) {
  size_t nrets = disp_schema_num_returns(c->schema);
  for (size_t j = 0; j < nrets; j++) {
    if (!disp_schema_return_alias_set(c->schema, j) || disp_schema_return_is_write(c->schema, j)) continue;
    char dev[32] = "<none>";
    if (c->target.type != DISP_NUM_BACKENDS) disp_device_format(c->target, dev, sizeof dev);
    const char *fmt = "The operator %s appears to be a view operator, but it has no implementation for the backend "
                      "\"%s\". View operators don't support falling back to run on the CPU, since the tensor's "
                      "storage cannot be shared across devices.";
    if (flags & DISP_CPU_FALLBACK_ERROR_ON_VIEWS) return disp__fail(DISP_ERR_NO_KERNEL, fmt, disp_op_name(c->op), dev);
    disp__warn(fmt, disp_op_name(c->op), dev);
    return DISP_OK;
  }
  return DISP_OK;
}

/* ---- step 1: the arguments on the CPU ------------------------------------- */

/* t on the CPU: t itself when it is there already (Tensor.cpu()). */
static disp_status to_cpu(const fb_call *c, disp_tensor *t, disp_tensor **out) {
  (void)c;
  disp_opt_device cpu = {DISP_BACKEND_CPU, -1, true};
  return disp_aten_to_device(t, cpu, (int32_t)disp_tensor_dtype(t), false, false, -1, out);
}

typedef disp_status (*move_fn)(const fb_call *c, disp_tensor *t, disp_tensor **out);

/* *out = the list `v` with `fn` applied to each tensor (None elements stay).
 * On failure the caller clears *out, which holds what was made so far. */
static disp_status map_list(const fb_call *c, const disp_value *v, move_fn fn, disp_value *out) {
  size_t n = v->u.tensors.len;
  disp_tensor **ts = disp__calloc(n ? n : 1, sizeof *ts);
  if (!ts) return disp__fail(DISP_ERR_NO_MEMORY, "disp_cpu_fallback: out of memory");
  out->tag = DISP_VALUE_TENSOR_LIST;
  out->u.tensors.data = ts;
  out->u.tensors.len = n;
  for (size_t k = 0; k < n; k++) {
    if (!v->u.tensors.data[k]) continue;
    disp_status st = fn(c, v->u.tensors.data[k], &ts[k]);
    if (st != DISP_OK) return st;
  }
  return DISP_OK;
}

/* 1.13's validate_tensor_list: whether a list holds a tensor. */
static int list_defined(const disp_value *v) {
  for (size_t k = 0; k < v->u.tensors.len; k++)
    if (v->u.tensors.data[k]) return 1;
  return 0;
}

/* c->cpu[i] for argument i: moved tensors, a cpu Device, the rest copied. */
static disp_status arg_to_cpu(fb_call *c, size_t i, disp_stack *scratch) {
  const disp_value *v = arg(c, i);
  disp_value *out = &c->cpu[i];
  switch (v->tag) {
    case DISP_VALUE_TENSOR:
      out->tag = DISP_VALUE_TENSOR;
      return to_cpu(c, v->u.tensor, &out->u.tensor);
    case DISP_VALUE_TENSOR_LIST:
      return map_list(c, v, to_cpu, out);
    case DISP_VALUE_DEVICE:
      out->tag = DISP_VALUE_DEVICE;
      out->u.device.type = DISP_BACKEND_CPU;
      out->u.device.index = -1;
      return DISP_OK;
    default: { /* a deep copy, through the scratch stack (the only copier) */
      disp_status st = disp_stack_push_value(scratch, v);
      return st == DISP_OK ? disp_stack_pop(scratch, out) : st;
    }
  }
}

static disp_status args_to_cpu(fb_call *c) {
  disp_stack *scratch = disp_stack_new();
  if (!scratch) return disp__fail(DISP_ERR_NO_MEMORY, "disp_cpu_fallback: out of memory");
  disp_status st = DISP_OK;
  t_moving++;
  for (size_t i = 0; i < c->nargs && st == DISP_OK; i++) st = arg_to_cpu(c, i, scratch);
  t_moving--;
  disp_stack_free(scratch);
  return st;
}

/* ---- step 2: the CPU call --------------------------------------------------- */

/* Runs the operator on CPU copies of c->cpu; its returns are left on *rets. */
static disp_status run_on_cpu(fb_call *c, disp_stack **rets) {
  disp_stack *s = disp_stack_new();
  if (!s) return disp__fail(DISP_ERR_NO_MEMORY, "disp_cpu_fallback: out of memory");
  disp_status st = DISP_OK;
  for (size_t i = 0; i < c->nargs && st == DISP_OK; i++) st = disp_stack_push_value(s, &c->cpu[i]);
  if (st == DISP_OK) st = disp_redispatch_boxed(c->op, disp_keyset_of(DISP_KEY_CPU), s);
  if (st != DISP_OK) {
    disp_stack_free(s);
    return st;
  }
  *rets = s;
  return DISP_OK;
}

/* ---- step 3: written arguments get the CPU results ------------------------ */

static int same_sizes(const disp_tensor *a, const disp_tensor *b) {
  int n = disp_tensor_ndim(a);
  return n == disp_tensor_ndim(b) && !memcmp(disp_tensor_sizes(a), disp_tensor_sizes(b), (size_t)n * sizeof(int64_t));
}

/* dst (the caller's) = src (its CPU twin), resized when the CPU kernel
 * resized the twin (an out= argument), as 1.13's _copy_from_and_resize. */
static disp_status copy_back(disp_tensor *dst, disp_tensor *src) {
  if (dst == src) return DISP_OK; /* a CPU tensor was written in place */
  disp_tensor *r = NULL;
  disp_status st = same_sizes(dst, src) ? disp_aten_copy_(dst, src, false, &r)
                                        : disp_aten__copy_from_and_resize(src, dst, &r);
  disp_tensor_release(r);
  return st;
}

static disp_status copy_back_written(fb_call *c) {
  disp_status st = DISP_OK;
  t_moving++;
  for (size_t i = 0; i < c->nargs && st == DISP_OK; i++) {
    if (!disp_schema_argument_is_write(c->schema, i)) continue;
    const disp_value *v = arg(c, i);
    if (v->tag == DISP_VALUE_TENSOR) st = copy_back(v->u.tensor, c->cpu[i].u.tensor);
    if (v->tag != DISP_VALUE_TENSOR_LIST) continue;
    for (size_t k = 0; k < v->u.tensors.len && st == DISP_OK; k++)
      if (v->u.tensors.data[k]) st = copy_back(v->u.tensors.data[k], c->cpu[i].u.tensors.data[k]);
  }
  t_moving--;
  return st;
}

/* ---- step 4: the returns on the target device ----------------------------- */

/* The written argument return j aliases (same alias set), or -1. */
static long written_alias_of(const fb_call *c, size_t j) {
  const char *set = disp_schema_return_alias_set(c->schema, j);
  for (size_t i = 0; i < c->nargs; i++) {
    const char *a = disp_schema_argument_alias_set(c->schema, i);
    if (a && !strcmp(a, set) && disp_schema_argument_is_write(c->schema, i)) return (long)i;
  }
  return -1;
}

static disp_status mismatched_alias(const fb_call *c, size_t j) {
  return disp__fail(DISP_ERR_KERNEL,
                    "The operator %s appears to have invalid alias information. Found a return tensor argument "
                    "with a mismatched mutable alias: %s",
                    disp_op_name(c->op), disp_schema_return_type_str(c->schema, j));
}

static disp_status to_target(const fb_call *c, disp_tensor *t, disp_tensor **out) {
  disp_opt_device d = {(int32_t)c->target.type, c->target.index, true};
  return disp_aten_to_device(t, d, (int32_t)disp_tensor_dtype(t), false, false, -1, out);
}

/* Pushes return j (the CPU call's value `r`) onto `out` as the caller gets it. */
static disp_status push_return(const fb_call *c, size_t j, const disp_value *r, disp_stack *out) {
  int defined = r->tag == DISP_VALUE_TENSOR || (r->tag == DISP_VALUE_TENSOR_LIST && list_defined(r));
  if (disp_schema_return_is_write(c->schema, j)) { /* case (1): the written argument itself */
    long i = defined ? written_alias_of(c, j) : -1;
    if (i < 0 || arg(c, (size_t)i)->tag != r->tag) return mismatched_alias(c, j);
    return disp_stack_push_value(out, arg(c, (size_t)i));
  }
  if (c->target.type == DISP_NUM_BACKENDS || !defined) return disp_stack_push_value(out, r);
  if (r->tag == DISP_VALUE_TENSOR) { /* case (2): a copy on the target device */
    disp_tensor *t = NULL;
    disp_status st = to_target(c, r->u.tensor, &t);
    return st == DISP_OK ? disp_stack_push_tensor_steal(out, t) : st;
  }
  disp_value list;
  memset(&list, 0, sizeof list);
  list.tag = DISP_VALUE_NONE;
  disp_status st = map_list(c, r, to_target, &list);
  if (st == DISP_OK) return disp_stack_push_value_steal(out, &list);
  disp_value_clear(&list);
  return st;
}

static disp_status returns_to_target(const fb_call *c, disp_stack *rets, disp_stack *out) {
  disp_status st = DISP_OK;
  t_moving++;
  for (size_t j = 0; j < disp_stack_size(rets) && st == DISP_OK; j++) st = push_return(c, j, disp_stack_at(rets, j), out);
  t_moving--;
  return st;
}

/* ---- the kernel ------------------------------------------------------------- */

/* Replaces the caller's arguments by the returns. Out of memory while the
 * stack grows is the one failure after which the arguments are gone. */
static disp_status hand_back(fb_call *c, disp_stack *out) {
  disp_stack_drop(c->caller, c->nargs);
  for (size_t j = 0; j < disp_stack_size(out); j++) {
    disp_status st = disp_stack_push_value_steal(c->caller, disp_stack_at(out, j));
    if (st != DISP_OK) {
      disp_stack_drop(c->caller, j);
      return st;
    }
  }
  return DISP_OK;
}

static disp_status run(fb_call *c) {
  disp_stack *rets = NULL, *out = NULL;
  disp_status st = args_to_cpu(c);
  if (st == DISP_OK) st = run_on_cpu(c, &rets);
  if (st == DISP_OK) st = copy_back_written(c);
  if (st == DISP_OK && !(out = disp_stack_new())) st = disp__fail(DISP_ERR_NO_MEMORY, "disp_cpu_fallback: out of memory");
  if (st == DISP_OK) st = returns_to_target(c, rets, out);
  if (st == DISP_OK) st = hand_back(c, out);
  disp_stack_free(out);
  disp_stack_free(rets);
  return st;
}

disp_status disp_cpu_fallback(const disp_op *op, disp_keyset ks, disp_stack *stack, void *user_data) {
  if (!op || !stack) return disp_set_error(DISP_ERR_INVALID_ARG, "disp_cpu_fallback: %s is NULL", op ? "stack" : "op");
  unsigned flags = (unsigned)(uintptr_t)user_data;
  fb_call c = {0};
  disp_status st = check_call(op, ks, stack, flags, &c);
  if (st != DISP_OK) return st;
  find_target(&c);
  if ((st = check_one_device(&c)) != DISP_OK || (st = check_views(&c, flags)) != DISP_OK) return st;
  if (flags & DISP_CPU_FALLBACK_WARN) disp__fb_warn_once(op, (disp_backend)disp_keyset_backend_index(ks));
  disp_trace_note("[cpu_fallback]", op, ks);
  c.cpu = disp__calloc(c.nargs ? c.nargs : 1, sizeof *c.cpu);
  if (!c.cpu) return disp__fail(DISP_ERR_NO_MEMORY, "disp_cpu_fallback: out of memory");
  st = run(&c);
  for (size_t i = 0; i < c.nargs; i++) disp_value_clear(&c.cpu[i]);
  disp__free(c.cpu);
  return st;
}

disp_kernel disp_cpu_fallback_kernel(unsigned flags) {
  return disp_kernel_boxed(disp_cpu_fallback, (void *)(uintptr_t)flags, NULL);
}
