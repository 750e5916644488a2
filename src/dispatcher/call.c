/*
 * call.c - the call path: dispatch, boxed and unboxed calls, redispatch.
 *
 * Note [The hot path]
 * disp_op_dispatch is the whole per-call cost of a typed call: two TLS
 * loads, an OR and an AND-NOT, the table pointer, one count-leading-zeros
 * for the backend, the fallthrough mask, the table index (two more clz and
 * a small constant table) and the slot. No lock, no allocation, no branch
 * but the trace test. Everything slower (packing, libffi, messages) is in
 * the functions below it and only runs when a kernel needs it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "disp/guard.h"
#include "tensor/tensor_ref_internal.h"
#include "argcheck_internal.h"
#include "boxed_check_internal.h"
#include "c_args_check_internal.h"
#include "error_internal.h"
#include "registry_internal.h"
#include "stack_internal.h"
#include "schema_internal.h"
#include "strbuf_internal.h"
#include "tls_internal.h"

int disp__trace_on;

void disp__trace_init(void);

#define apply_tls disp__apply_tls

/* ---- trace -------------------------------------------------------------- */

void disp__trace_init(void) {
  const char *v = getenv("DISP_SHOW_DISPATCH_TRACE");
  __atomic_store_n(&disp__trace_on, v && v[0] && strcmp(v, "0") != 0, __ATOMIC_RELAXED);
}

static void trace_enter(const char *label, const disp_op *op, disp_keyset ks) {
  /* One write per line, so lines from several threads do not interleave. */
  char line[512];
  int depth = disp__tls.trace_depth;
  if (depth > 200) depth = 200;
  snprintf(line, sizeof line, "%*s%s op=[%s], key=[%s]\n", depth, "", label, op->name,
           disp_key_name(disp_keyset_highest_key(ks)));
  fputs(line, stderr);
  disp__tls.trace_depth++;
}

void disp_trace_note(const char *label, const disp_op *op, disp_keyset ks) {
  if (!disp__tracing() || !op) return;
  trace_enter(label ? label : "", op, ks);
  disp_trace_leave();
}

void disp_trace_set(int on) {
  disp__lock();
  __atomic_store_n(&disp__trace_on, on != 0, __ATOMIC_RELAXED);
  disp__ops_update_all(); /* publish or drop the traced twins */
  disp__unlock();
}

int disp_trace_get(void) {
  disp__ensure_init(); /* reads DISP_SHOW_DISPATCH_TRACE */
  return disp__tracing();
}

void disp_trace_leave(void) {
  if (disp__tls.trace_depth > 0) disp__tls.trace_depth--;
}

/* ---- dispatch (Note [The hot path]) ------------------------------------ */

static inline disp_dispatch pick(const disp_op *op, disp_keyset ks, int mask) {
  uint64_t seq = disp__read_begin_via(op);
  const disp_op_table *t = atomic_load_explicit(&((disp_op *)op)->real, memory_order_acquire);
  /* The real table starts with the fast-table layout (op_table.c asserts it). */
  disp_dispatch d = disp__fast_lookup((const disp_fast_table *)(const void *)t, ks.repr, mask);
  disp__read_end(seq);
  return d;
}

/* Note [Tracing typed calls]
 * A typed call (DISP_CALL) finds and runs its kernel in the caller's code,
 * so the dispatcher can neither print nor close the trace's nesting level
 * around it. While the trace is on, every operator publishes for typed calls
 * a twin of its table whose every cell is one tracing kernel (op_table.c);
 * the caller packs its arguments for it (the slow path, fine for a
 * debugging mode) and it prints, runs the real kernel and closes the level.
 * disp_op_dispatch/redispatch, which the caller may run with DISP_INVOKE,
 * do the same with a wrapper and the chosen kernel kept in thread-local
 * storage. With the trace off the caller pays nothing. */
static inline disp_status run_boxed(const disp_op *op, disp_dispatch d, disp_stack *stack);

static disp_status traced_kernel(const disp_op *op, disp_keyset ks, disp_stack *stack, void *ud) {
  (void)ud;
  disp_dispatch real = {disp__tls.traced_slot, ks};
  memset(&disp__tls.traced_slot, 0, sizeof disp__tls.traced_slot);
  disp_status st = run_boxed(op, real, stack);
  disp_trace_leave();
  return st;
}

static const disp_kernel_slot traced_slot = {traced_kernel, NULL, DISP__KERNEL_INDIRECT, NULL};

/* The kernel in every cell of a traced twin (op_table.c): the inline path
 * found the cell with the real masks, so `ks` is the call's final set. */
disp_status disp__traced_call_boxed(const disp_op *op, disp_keyset ks, disp_stack *stack, void *ud);
disp_status disp__traced_call_boxed(const disp_op *op, disp_keyset ks, disp_stack *stack, void *ud) {
  (void)ud;
  disp_dispatch real = pick(op, ks, 0);
  trace_enter("[call]", op, real.ks);
  disp_status st = run_boxed(op, real, stack);
  disp_trace_leave();
  return st;
}

static disp_dispatch traced(const char *label, const disp_op *op, disp_dispatch d) {
  trace_enter(label, op, d.ks);
  disp__tls.traced_slot = d.kernel;
  d.kernel = traced_slot;
  return d;
}

/* What disp_op_dispatch and disp_op_redispatch hand out for a NULL operator
 * (status.h's Note [NULL arguments]): their result's kernel is never NULL,
 * so it is one that refuses when run, naming the function that got the NULL. */
static disp_status null_op_kernel(const disp_op *op, disp_keyset ks, disp_stack *stack, void *fn) {
  (void)op;
  (void)ks;
  (void)stack;
  return disp__null_arg(fn, "op");
}
static const disp_kernel_slot null_op_dispatch_slot = {null_op_kernel, NULL, DISP__KERNEL_INDIRECT,
                                                       (void *)"disp_op_dispatch"};
static const disp_kernel_slot null_op_redispatch_slot = {null_op_kernel, NULL, DISP__KERNEL_INDIRECT,
                                                         (void *)"disp_op_redispatch"};

disp_dispatch disp_op_dispatch(const disp_op *op, disp_keyset tensor_keys) {
  if (__builtin_expect(!op, 0)) return (disp_dispatch){null_op_dispatch_slot, tensor_keys};
  disp_dispatch d = pick(op, apply_tls(tensor_keys), 1);
  if (__builtin_expect(disp__tracing(), 0)) return traced("[call]", op, d);
  return d;
}

disp_dispatch disp_op_redispatch(const disp_op *op, disp_keyset ks) {
  if (__builtin_expect(!op, 0)) return (disp_dispatch){null_op_redispatch_slot, ks};
  disp_dispatch d = pick(op, ks, 0);
  if (__builtin_expect(disp__tracing(), 0)) return traced("[redispatch]", op, d);
  return d;
}

/* The counter's value after a begin, for a caller built with either form of
 * disp__read_end (Note [Counting reads in one instruction]). */
static inline uint64_t seq_for_caller(uint64_t s) {
  return DISP__READ_INC ? __atomic_load_n(&disp_fast_tls_state.reading, __ATOMIC_RELAXED) : s;
}

const disp_kernel_slot *disp_redispatch_lookup(const disp_op *op, disp_keyset ks, uint64_t *seq) {
  if (!seq) return &null_op_redispatch_slot; /* misuse: nothing to end */
  if (!op) {
    *seq = seq_for_caller(disp__read_begin()); /* the caller ends it */
    return &null_op_redispatch_slot;
  }
  *seq = seq_for_caller(disp__read_begin_via(op));
  const disp_op_table *t = atomic_load_explicit(&((disp_op *)op)->real, memory_order_acquire);
  const disp_kernel_slot *k = disp__fast_cell((const disp_fast_table *)(const void *)t, &ks.repr, 0);
  if (__builtin_expect(disp__tracing(), 0)) {
    /* The wrapper is static; the real kernel's copy goes to the TLS. */
    disp_dispatch d = traced("[redispatch]", op, (disp_dispatch){*k, ks});
    (void)d;
    return &traced_slot;
  }
  return k;
}

disp_keyset disp_keyset_below(disp_keyset ks) {
  return disp_keyset_and(ks, disp_keyset_full_after(disp_keyset_highest_key(ks)));
}

/* ---- errors ------------------------------------------------------------- */

void disp_error_add_op(const disp_op *op) {
  if (op) disp__error_add_op_after(op->name); /* NULL: no operator to name */
}

/* The keys whose slot holds a kernel, as PyTorch's listAllDispatchKeys. */
static void list_keys(const disp_op *op, disp_strbuf *b) {
  int first = 1;
  disp__strbuf_append(b, "[");
  uint64_t seq = disp__read_begin(); /* a long read: the reclaimer waits or defers */
  const disp_op_table *t = atomic_load(&((disp_op *)op)->real);
  for (int i = 0; i < DISP_NUM_RUNTIME_ENTRIES; i++) {
    if (!disp__entry_runs_kernel(t->slot[i])) continue;
    disp__strbuf_appendf(b, "%s%s", first ? "" : ", ", disp_key_name(disp_key_for_table_index(i)));
    first = 0;
  }
  disp__read_end(seq);
  disp__strbuf_append(b, "]");
}

disp_status disp__missing_kernel_boxed(const disp_op *op, disp_keyset ks, disp_stack *stack,
                                       void *user_data);
disp_status disp__missing_kernel_boxed(const disp_op *op, disp_keyset ks, disp_stack *stack,
                                       void *user_data) {
  (void)stack, (void)user_data;
  disp_key k = disp_keyset_highest_key(ks);
  disp_strbuf b;
  disp__strbuf_init(&b);
  if (k == DISP_KEY_UNDEFINED) {
    disp__strbuf_appendf(&b,
                         "There were no tensor arguments to this function (e.g., you passed an empty "
                         "list of Tensors), but no fallback function is registered for schema %s.  "
                         "This usually means that this function requires a non-empty list of "
                         "Tensors, or that you (the operator writer) forgot to register a fallback "
                         "function.  Available functions are ",
                         op->name);
  } else {
    disp__strbuf_appendf(&b,
                         "Could not run '%s' with arguments from the '%s' backend. This could be "
                         "because the operator doesn't exist for this backend, or was omitted "
                         "during the selective/custom build process (if using custom build). '%s' "
                         "is only available for these backends: ",
                         op->name, disp_key_name(k), op->name);
  }
  list_keys(op, &b);
  disp__strbuf_append(&b, ".");
  disp__fail(DISP_ERR_NO_KERNEL, "%s", disp__strbuf_cstr(&b));
  disp__error_mark_named();
  disp__strbuf_free(&b);
  return DISP_ERR_NO_KERNEL;
}

static const disp_signature *signature_of(const disp_op *op, disp_status *st) {
  const disp_signature *sig = atomic_load_explicit(&((disp_op *)op)->sig, memory_order_acquire);
  if (!sig) *st = disp__fail(DISP_ERR_OP_NOT_FOUND, "%s has no schema (it was never defined)", op->name);
  else *st = DISP_OK;
  return sig;
}

/* ---- boxed calls -------------------------------------------------------- */

/* A boxed call of a slot that only has an unboxed function (Note [Boxed and
 * unboxed]): view the arguments as C values, call through libffi, then
 * replace the arguments by the returns. */
static disp_status boxed_via_unboxed(const disp_op *op, const disp_kernel_slot *k, disp_keyset ks,
                                     disp_stack *stack) {
  disp_status st;
  const disp_signature *sig = signature_of(op, &st);
  if (!sig) return st;
  if (!sig->supported)
    return disp__fail(DISP_ERR_TYPE, "%s: a type of its schema has no C mapping, so its unboxed kernel cannot be called boxed", op->name);
  disp_cvalue args[DISP_MAX_ARGS], rets[DISP_MAX_RETS];
  size_t base = disp_stack_size(stack) - (size_t)sig->nargs;
  for (int i = 0; i < sig->nargs; i++) {
    if ((st = disp__cvalue_unbox(sig->args[i], disp_stack_at(stack, base + (size_t)i), &args[i])) != DISP_OK) {
      disp__error_prefix("%s: argument %d: ", op->name, i + 1);
      disp_stack_drop(stack, (size_t)sig->nargs);
      return st;
    }
  }
  void *outs[DISP_MAX_RETS];
  for (int i = 0; i < sig->nrets; i++) {
    memset(&rets[i], 0, sizeof rets[i]);
    outs[i] = &rets[i];
  }
  st = disp__ffi_call_unboxed(sig, k->unboxed, (k->flags & DISP_KERNEL_WITH_KEYSET) != 0, ks, args, outs);
  disp_stack_drop(stack, (size_t)sig->nargs);
  for (int i = 0; i < sig->nrets; i++) {
    if (st == DISP_OK) {
      st = disp__cvalue_box_return(sig->rets[i], &rets[i], stack);
      if (st != DISP_OK) disp_stack_drop(stack, (size_t)i);
    } else {
      disp__cvalue_release_return(sig->rets[i], &rets[i]);
    }
  }
  return st;
}

/* A built-in operator's generated adapter: pops the arguments, calls `fn`
 * (with `ks` first when `with_ks` is nonzero), pushes the returns. */
typedef disp_status (*boxed_adapter)(const disp_op *op, disp_fn fn, int with_ks, disp_keyset ks,
                                     disp_stack *stack);

/* On error the stack must hold neither arguments nor partial returns. */
static void cleanup_after_error(disp_stack *stack, size_t base) {
  if (disp_stack_size(stack) > base) disp_stack_drop(stack, disp_stack_size(stack) - base);
}

/* A boxed kernel, then what it left checked against the schema (Note
 * [Checking boxed values]): a kernel's wrong returns are its failure, with
 * nothing left on the stack, rather than a crash in whoever reads them. */
static disp_status run_boxed_kernel(const disp_op *op, disp_dispatch d, disp_stack *stack) {
  const disp_signature *sig = atomic_load_explicit(&((disp_op *)op)->sig, memory_order_acquire);
  int check = sig && !sig->varargs && disp_stack_size(stack) >= (size_t)sig->nargs;
  size_t base = check ? disp_stack_size(stack) - (size_t)sig->nargs : 0;
  disp_status st = d.kernel.boxed(op, d.ks, stack, d.kernel.user_data);
  if (st == DISP_OK && check && (st = disp__check_boxed_returns(op, sig, stack, base, d.ks)) != DISP_OK)
    cleanup_after_error(stack, base);
  return st;
}

/* A call never lands on a fallthrough (its key is masked out), but a
 * redispatch is given its key set as it is: with a fallthrough's key on top
 * there is nothing to run. PyTorch asserts; this is the caller's error. */
static __attribute__((noinline)) disp_status fallthrough_reached(const disp_op *op, disp_keyset ks) {
  return disp__fail(DISP_ERR_INVALID_ARG,
                    "%s: redispatched with a key set whose highest key, %s, is a fallthrough: remove it (a "
                    "kernel passes on disp_keyset_below of its own key set)",
                    op->name, disp_key_name(disp_keyset_highest_key(ks)));
}

static inline disp_status run_boxed(const disp_op *op, disp_dispatch d, disp_stack *stack) {
  if (d.kernel.boxed) return run_boxed_kernel(op, d, stack);
  if (__builtin_expect(!d.kernel.unboxed, 0)) return fallthrough_reached(op, d.ks);
  boxed_adapter adapt = (boxed_adapter)atomic_load_explicit(&((disp_op *)op)->adapter, memory_order_acquire);
  if (adapt) return adapt(op, d.kernel.unboxed, (d.kernel.flags & DISP_KERNEL_WITH_KEYSET) != 0, d.ks, stack);
  return boxed_via_unboxed(op, &d.kernel, d.ks, stack);
}

/* The checks before a boxed call touches its stack: a schema, enough values,
 * each of its argument's type. On failure the stack is emptied of what the
 * call was given (everything, when there were too few values to tell the
 * arguments apart) and *base is meaningless. */
static disp_status check_boxed_call(const disp_op *op, disp_stack *stack, const disp_signature **sig,
                                    size_t *base, disp_keyset *keys) {
  disp_status st;
  if (!(*sig = signature_of(op, &st)) || (st = disp__check_boxed_count(op, *sig, stack)) != DISP_OK) {
    disp_stack_clear(stack);
    return st;
  }
  *base = stack->len - (size_t)(*sig)->nargs;
  if ((*sig)->varargs) { /* the kernel knows how many values are its own */
    keys->repr = 0;
    return DISP_OK;
  }
  if ((st = disp__check_boxed_args(op, *sig, stack->v + *base, keys)) != DISP_OK) cleanup_after_error(stack, *base);
  return st;
}

/* A boxed call after its values passed the checks: the kernel of `keys`
 * (the arguments' keys) runs, traced when the trace is on, and its failure
 * is named after the operator. */
static __attribute__((noinline)) disp_status run_checked(const disp_op *op, disp_stack *stack, disp_keyset keys,
                                                         size_t base) {
  uint64_t seq = disp__error_seq;
  disp_dispatch d = pick(op, apply_tls(keys), 1);
  if (__builtin_expect(disp__tracing(), 0)) trace_enter("[callBoxed]", op, d.ks);
  disp_status st = run_boxed(op, d, stack);
  if (disp__tracing()) disp_trace_leave();
  if (st != DISP_OK) {
    cleanup_after_error(stack, base);
    disp__error_name_op(op->name, st, seq);
  }
  return st;
}

/* Everything of a boxed call but its fast case (below). */
static __attribute__((noinline)) disp_status call_boxed_slow(const disp_op *op, disp_stack *stack) {
  if (!op || !stack) return disp__null_arg("disp_call_boxed", op ? "stack" : "op");
  uint64_t seq = disp__error_seq;
  const disp_signature *sig;
  size_t base = 0;
  disp_keyset keys;
  disp_status st = check_boxed_call(op, stack, &sig, &base, &keys);
  if (st != DISP_OK) {
    disp__error_name_op(op->name, st, seq);
    return st;
  }
  return run_checked(op, stack, keys, base);
}

/*
 * Note [The boxed fast case]
 * A boxed call whose arguments are all Tensors, each on the stack as a
 * non-NULL Tensor, is checked here; for a built-in operator's direct unboxed
 * kernel (Note [Direct kernels]) it makes no call but the generated
 * adapter's tail call, so it needs no stack frame (a thread's first lookup
 * registers it out of line, call_boxed_first). Its read bracket covers the
 * signature and adapter too. It reads the published table: while the trace
 * is on that is the traced twin, whose every cell is a boxed kernel, so the
 * one flag test also sends traced calls to run_checked, with no trace test
 * here. Any other kernel runs from run_checked; anything else, a wrong value
 * included, takes the slow path, which checks every value and reports.
 */
static __attribute__((noinline)) disp_status call_boxed_first(const disp_op *op, disp_stack *stack);

disp_status disp_call_boxed(const disp_op *op, disp_stack *stack) {
  if (__builtin_expect(!op || !stack, 0)) return call_boxed_slow(op, stack);
  uint64_t seq;
  if (__builtin_expect(disp__read_enter_is_first(&seq), 0)) return call_boxed_first(op, stack);
  __asm__ volatile("" : "+r"(op) : "m"(disp_fast_tls_state.reading)); /* as disp__read_begin_via */
  const disp_signature *sig = atomic_load_explicit(&((disp_op *)op)->sig, memory_order_acquire);
  if (__builtin_expect(!sig || stack->len < (size_t)sig->nargs, 0)) goto slow;
  const disp_value *v = stack->v + stack->len - (size_t)sig->nargs, *end = stack->v + stack->len;
  const disp_ctype *type = sig->args;
  uint64_t keys = 0;
  for (; v != end; v++, type++) {
    if (*type != DISP_CT_TENSOR || v->tag != DISP_VALUE_TENSOR || !v->u.tensor) goto slow;
    keys |= disp__tensor_head_keys(v->u.tensor).repr;
  }
  const disp_fast_table *t = __atomic_load_n((const disp_fast_table *const *)(const void *)op, __ATOMIC_ACQUIRE);
  uint64_t ks = apply_tls((disp_keyset){keys}).repr;
  const disp_kernel_slot *k = disp__fast_cell(t, &ks, 1);
  boxed_adapter adapt = (boxed_adapter)atomic_load_explicit(&((disp_op *)op)->adapter, memory_order_acquire);
  if (__builtin_expect(!adapt || (k->flags & DISP__KERNEL_INDIRECT), 0)) {
    int varargs = sig->varargs;
    disp__read_end(seq);
    if (varargs) return call_boxed_slow(op, stack);
    return run_checked(op, stack, (disp_keyset){keys}, stack->len - (size_t)sig->nargs);
  }
  disp_fn fn = k->unboxed;
  int with_ks = (int)(k->flags & DISP_KERNEL_WITH_KEYSET);
  disp__read_end(seq);
  return adapt(op, fn, with_ks, (disp_keyset){ks}, stack);
slow:
  disp__read_end(seq);
  return call_boxed_slow(op, stack);
}

/* The thread's first lookup: its counter says "inside a read"; register it,
 * end that read, and make the call as any other. */
static __attribute__((noinline)) disp_status call_boxed_first(const disp_op *op, disp_stack *stack) {
  disp_reader_register();
  disp__read_end(0);
  return disp_call_boxed(op, stack);
}

/* A redispatch runs inside a kernel: the outer call names the failure after
 * its operator, except for bad values, whose message names this one. */
disp_status disp_redispatch_boxed(const disp_op *op, disp_keyset ks, disp_stack *stack) {
  DISP_REFUSE_NULL(op);
  DISP_REFUSE_NULL(stack);
  uint64_t seq = disp__error_seq;
  const disp_signature *sig;
  size_t base = 0;
  disp_keyset keys;
  disp_status st = check_boxed_call(op, stack, &sig, &base, &keys);
  if (st != DISP_OK) {
    disp__error_name_op(op->name, st, seq);
    return st;
  }
  disp_dispatch d = pick(op, ks, 0);
  if (__builtin_expect(disp__tracing(), 0)) trace_enter("[redispatchBoxed]", op, d.ks);
  st = run_boxed(op, d, stack);
  if (disp__tracing()) disp_trace_leave();
  if (st != DISP_OK) cleanup_after_error(stack, base);
  return st;
}

/* ---- unboxed calls with C arguments ------------------------------------ */

/* Hands a boxed kernel's returns (checked already) to the caller's
 * out-pointers; on failure nothing is handed out. */
static disp_status returns_to_outs(const disp_signature *sig, disp_stack *stack, void **outs) {
  for (int i = 0; i < sig->nrets; i++) {
    disp_status st = disp__value_to_out(sig->rets[i], &stack->v[i], outs[i]);
    if (st == DISP_OK) continue;
    for (int j = 0; j < i; j++) /* undo the returns already handed out */
      if (sig->rets[j] == DISP_CT_TENSOR) {
        disp_tensor_release(*(disp_tensor **)outs[j]);
        *(disp_tensor **)outs[j] = NULL;
      } else if (sig->rets[j] == DISP_CT_TENSOR_VEC) {
        disp_tensor_vec_free((disp_tensor_vec *)outs[j]);
      }
    return st;
  }
  return DISP_OK;
}

/* Run kernel `d` with C arguments; `outs` are the caller's out-pointers. A
 * boxed kernel gets them packed, checked like any boxed call's (a NULL
 * tensor for a Tensor is a None), and its returns are checked before they
 * are handed out. */
static disp_status run_cvalues(const disp_op *op, const disp_signature *sig, disp_dispatch d,
                               disp_cvalue *args, void **outs) {
  disp_status st;
  if (!d.kernel.unboxed && !d.kernel.boxed) return fallthrough_reached(op, d.ks);
  if (d.kernel.unboxed) /* returns go straight into the caller's out-pointers */
    return disp__ffi_call_unboxed(sig, d.kernel.unboxed, (d.kernel.flags & DISP_KERNEL_WITH_KEYSET) != 0,
                                  d.ks, args, outs);
  disp_stack *stack = disp__stack_borrow(); /* Note [Reused stacks] */
  if (!stack) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory calling %s", op->name);
  st = DISP_OK;
  for (int i = 0; i < sig->nargs && st == DISP_OK; i++) st = disp__cvalue_box(sig->args[i], &args[i], stack);
  /* Every argument passed the C check; only boxes that check does not vouch for are checked again. */
  if (st == DISP_OK && sig->box_unsure) st = disp__check_boxed_some(op, sig, stack->v, sig->box_unsure);
  if (st == DISP_OK) st = d.kernel.boxed(op, d.ks, stack, d.kernel.user_data);
  if (st == DISP_OK) st = disp__check_boxed_returns(op, sig, stack, 0, d.ks);
  if (st == DISP_OK) st = returns_to_outs(sig, stack, outs);
  disp__stack_give_back(stack);
  return st;
}

static disp_status out_is_null(const char *fn, const disp_op *op, int i) {
  return disp__fail(DISP_ERR_INVALID_ARG, "%s: out is NULL (the out-pointer for return %d of %s)", fn, i, op->name);
}

/* The fast case of C arguments for a boxed kernel (DISP_CALL and
 * DISP_INVOKE of a boxed kernel come here), when every argument and return
 * is a Tensor: what read_va and run_cvalues do, with the C check, the
 * packing and the return check of a Tensor inline and the returns moved
 * straight out of the stack. A NULL tensor or out-pointer gets the general
 * path's message; wrong returns go to the general check for theirs. */
static disp_status tensors_into_boxed(const char *fn, const disp_op *op, const disp_signature *sig,
                                      disp_dispatch d, va_list *ap) {
  disp_cvalue args[DISP_MAX_ARGS];
  void *outs[DISP_MAX_RETS];
  for (int i = 0; i < sig->nargs; i++)
    if (!(args[i].tensor = va_arg(*ap, disp_tensor *))) return disp__check_c_arg(fn, op, sig, i, &args[i]);
  for (int i = 0; i < sig->nrets; i++)
    if (!(outs[i] = va_arg(*ap, void *))) return out_is_null(fn, op, i);
  disp_stack *stack = disp__stack_borrow(); /* Note [Reused stacks] */
  if (!stack) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory calling %s", op->name);
  disp_status st = DISP_OK;
  for (int i = 0; i < sig->nargs && st == DISP_OK; i++) st = disp_stack_push_tensor(stack, args[i].tensor);
  if (st == DISP_OK) st = d.kernel.boxed(op, d.ks, stack, d.kernel.user_data);
  if (st == DISP_OK && stack->len != (size_t)sig->nrets) st = disp__check_boxed_returns(op, sig, stack, 0, d.ks);
  for (int i = 0; i < sig->nrets && st == DISP_OK; i++) {
    disp_value *v = &stack->v[i];
    if (v->tag != DISP_VALUE_TENSOR || !v->u.tensor) st = disp__check_boxed_returns(op, sig, stack, 0, d.ks);
  }
  if (st == DISP_OK) {
    for (int i = 0; i < sig->nrets; i++)
      *(disp_tensor **)outs[i] = stack->v[i].tag == DISP_VALUE_TENSOR ? stack->v[i].u.tensor : NULL;
    stack->len = 0; /* moved out */
  }
  disp__stack_give_back(stack);
  return st;
}

/* How a call with C arguments picks its kernel. */
typedef enum { VA_CALL, VA_REDISPATCH, VA_GIVEN } va_mode;

/* Reads the C arguments and the out-pointers; a NULL pointer is refused by
 * Note [NULL arguments], naming the public function the caller called
 * (Note [Checking C arguments]). */
static disp_status read_va(const char *fn, const disp_op *op, const disp_signature *sig, va_list *ap,
                           disp_cvalue *args, void **outs, disp_keyset *keys) {
  uint64_t want_keys = keys ? sig->key_args : 0; /* NULL: the kernel is chosen already */
  uint64_t ks = 0;
  for (int i = 0; i < sig->nargs; i++) {
    disp__cvalue_from_va(sig->args[i], ap, &args[i]);
    disp_status st = disp__check_c_arg_fast(fn, op, sig, i, &args[i]);
    if (st != DISP_OK) return st;
    if (want_keys & (UINT64_C(1) << i)) ks |= disp__cvalue_keys(sig->args[i], &args[i]).repr;
  }
  if (keys) keys->repr = ks;
  for (int i = 0; i < sig->nrets; i++)
    if (!(outs[i] = va_arg(*ap, void *))) return out_is_null(fn, op, i);
  return DISP_OK;
}

static disp_status usable(const disp_op *op, const disp_signature **sig) {
  disp_status st;
  *sig = signature_of(op, &st);
  if (!*sig) return st;
  if (!(*sig)->supported)
    return disp__fail(DISP_ERR_TYPE, "%s cannot be called with C arguments: a type of its schema has no C mapping", op->name);
  return DISP_OK;
}

/* The body of disp_call, disp_redispatch and disp_call_[boxed_]kernel (the
 * public function `fn`): read the C arguments, find the kernel (unless
 * given), run it. */
static disp_status call_va(const char *fn, const disp_op *op, va_mode mode, disp_dispatch d, va_list *ap) {
  const disp_signature *sig;
  disp_status st = usable(op, &sig);
  if (st != DISP_OK) return st;
  disp_cvalue args[DISP_MAX_ARGS];
  void *outs[DISP_MAX_RETS];
  disp_keyset keys;
  if ((st = read_va(fn, op, sig, ap, args, outs, mode == VA_GIVEN ? NULL : &keys)) != DISP_OK) return st;
  if (mode == VA_GIVEN) return run_cvalues(op, sig, d, args, outs);
  uint64_t seq = disp__error_seq;
  d = mode == VA_CALL ? pick(op, apply_tls(keys), 1) : pick(op, d.ks, 0);
  if (__builtin_expect(disp__tracing(), 0)) trace_enter(mode == VA_CALL ? "[call]" : "[redispatch]", op, d.ks);
  st = run_cvalues(op, sig, d, args, outs);
  if (disp__tracing()) disp_trace_leave();
  if (st != DISP_OK && mode == VA_CALL) disp__error_name_op(op->name, st, seq);
  return st;
}

disp_status disp_call(const disp_op *op, ...) {
  DISP_REFUSE_NULL(op);
  disp_dispatch none = {0};
  va_list ap;
  va_start(ap, op);
  disp_status st = call_va(__func__, op, VA_CALL, none, &ap);
  va_end(ap);
  return st;
}

disp_status disp_redispatch(const disp_op *op, disp_keyset ks, ...) {
  DISP_REFUSE_NULL(op);
  disp_dispatch d = {.ks = ks};
  va_list ap;
  va_start(ap, ks);
  disp_status st = call_va(__func__, op, VA_REDISPATCH, d, &ap);
  va_end(ap);
  return st;
}

disp_status disp_call_kernel(const disp_op *op, disp_dispatch d, ...) {
  DISP_REFUSE_NULL(op);
  va_list ap;
  va_start(ap, d);
  disp_status st = call_va(__func__, op, VA_GIVEN, d, &ap);
  va_end(ap);
  return st;
}

disp_status disp_call_boxed_kernel(const disp_op *op, disp_boxed_fn fn, void *user_data, disp_keyset ks, ...) {
  DISP_REFUSE_NULL(op);
  DISP_REFUSE_NULL(fn);
  disp_dispatch d = {.kernel = {.boxed = fn, .user_data = user_data}, .ks = ks};
  const disp_signature *sig = atomic_load_explicit(&((disp_op *)op)->sig, memory_order_acquire);
  va_list ap;
  va_start(ap, ks);
  disp_status st = sig && sig->all_tensors ? tensors_into_boxed(__func__, op, sig, d, &ap)
                                           : call_va(__func__, op, VA_GIVEN, d, &ap);
  va_end(ap);
  return st;
}

/* ---- typed entry points for run-time operators ------------------------- */

/* Note [Typed entry points outlive schemas]
 * A typed entry is a libffi closure whose C signature was fixed when it was
 * built, while an operator can be removed and defined again with another
 * schema. So each closure keeps the signature it was built for (the
 * registry retires a removed def's signature instead of freeing it, so it
 * stays valid until disp_shutdown) and checks, on every call, that the
 * operator's current signature has the same C types; if not, it fails
 * without touching its arguments or out-pointers. disp_op_typed_entry hands
 * out a new closure after such a change; old ones stay callable (and
 * failing) until disp_shutdown, which frees them all. */
typedef struct typed_entry {
  ffi_closure *closure;
  disp_fn fn;
  const disp_op *op;
  const disp_signature *sig; /* what the closure's cif was made for */
  char *schema_text;         /* the schema then, for the message */
  struct typed_entry *older;
} typed_entry;

void disp__typed_entries_free(void *newest) {
  for (typed_entry *e = newest, *next; e; e = next) {
    next = e->older;
    ffi_closure_free(e->closure);
    disp__free(e->schema_text);
    disp__free(e);
  }
}

static disp_status closure_stale(const disp_op *op, const typed_entry *e) {
  const disp_schema *now = disp_op_schema(op);
  char *text = now ? disp_schema_to_string(now) : NULL;
  disp_status st = disp__fail(DISP_ERR_MISMATCH,
                              "%s: this typed entry point was made for the schema %s, but the operator has "
                              "been redefined as %s since: get a new one from disp_op_typed_entry",
                              op->name, e->schema_text ? e->schema_text : "(unknown)", text ? text : "(unknown)");
  disp__free(text);
  return st;
}

/* Reads the closure's C arguments into args/outs, checks them (Note
 * [Checking C arguments]) and ORs their key sets into *keys. */
static disp_status closure_args(const disp_op *op, const disp_signature *sig, void **avalues, disp_cvalue *args,
                                void **outs, disp_keyset *keys) {
  keys->repr = 0;
  for (int i = 0; i < sig->nargs; i++) {
    /* Each avalues[i] points at an argument of the C type the cif names. */
    size_t size = sig->cif[0].arg_types[i]->size;
    memset(&args[i], 0, sizeof args[i]);
    if (size == sizeof(void *)) memcpy(&args[i], avalues[i], sizeof(void *)); /* inline: the common case */
    else memcpy(&args[i], avalues[i], size);
    disp_status st = disp__check_c_arg_fast("the typed entry", op, sig, i, &args[i]);
    if (st != DISP_OK) return st;
    if (sig->args[i] == DISP_CT_TENSOR) /* checked: not NULL */
      keys->repr |= disp__tensor_head_keys(args[i].tensor).repr;
    else if (sig->key_args & (UINT64_C(1) << i)) keys->repr |= disp__cvalue_keys(sig->args[i], &args[i]).repr;
  }
  for (int i = 0; i < sig->nrets; i++)
    if (!(outs[i] = *(void **)avalues[sig->nargs + i]))
      return disp__fail(DISP_ERR_INVALID_ARG, "%s: an out-pointer for a return is NULL", op->name);
  return DISP_OK;
}

static void closure_handler(ffi_cif *cif, void *ret, void **avalues, void *user_data) {
  (void)cif;
  const typed_entry *e = user_data;
  const disp_op *op = e->op;
  const disp_signature *now = atomic_load(&((disp_op *)op)->sig);
  uint64_t seq = disp__error_seq;
  disp_status st;
  if (!now) {
    st = disp__fail(DISP_ERR_OP_NOT_FOUND, "%s is no longer defined", op->name);
  } else if (now != e->sig && !disp__signature_same_c(now, e->sig)) {
    st = closure_stale(op, e);
  } else {
    disp_cvalue args[DISP_MAX_ARGS];
    void *outs[DISP_MAX_RETS];
    disp_keyset keys;
    if ((st = closure_args(op, e->sig, avalues, args, outs, &keys)) != DISP_OK) goto done;
    disp_dispatch d = pick(op, apply_tls(keys), 1);
    if (__builtin_expect(disp__tracing(), 0)) trace_enter("[call]", op, d.ks);
    /* The one libffi traversal is the closure's: an unboxed kernel gets the values as they came. */
    if (d.kernel.unboxed)
      st = disp__ffi_call_unboxed(now, d.kernel.unboxed, (d.kernel.flags & DISP_KERNEL_WITH_KEYSET) != 0, d.ks,
                                  args, outs);
    else
      st = run_cvalues(op, now, d, args, outs);
    if (disp__tracing()) disp_trace_leave();
    if (st != DISP_OK) disp__error_name_op(op->name, st, seq);
  }
done:
  *(ffi_arg *)ret = (ffi_arg)(int32_t)st;
}

/* A closure for signature `sig` of `o`, in front of its older ones. Locked. */
static disp_status typed_entry_new(disp_op *o, const disp_signature *sig, typed_entry **out) {
  typed_entry *e = disp__calloc(1, sizeof *e);
  void *code = NULL;
  if (!e || !(e->closure = ffi_closure_alloc(sizeof(ffi_closure), &code))) {
    disp__free(e);
    return disp__fail(DISP_ERR_NO_MEMORY, "%s: could not allocate a libffi closure", o->name);
  }
  e->fn = (disp_fn)code;
  e->op = o;
  e->sig = sig;
  const disp_schema *schema = disp_op_schema(o);
  e->schema_text = schema ? disp_schema_to_string(schema) : NULL;
  if (ffi_prep_closure_loc(e->closure, (ffi_cif *)&sig->cif[0], closure_handler, e, code) != FFI_OK) {
    e->older = NULL;
    disp__typed_entries_free(e);
    return disp__fail(DISP_ERR_TYPE, "%s: libffi could not build a typed entry point", o->name);
  }
  e->older = o->closure;
  *out = e;
  return DISP_OK;
}

disp_status disp_op_typed_entry(const disp_op *op, disp_fn *out) {
  DISP_REFUSE_NULL(op);
  DISP_REFUSE_NULL(out);
  const disp_signature *sig;
  disp_status st = usable(op, &sig);
  if (st != DISP_OK) return st;
  disp__lock();
  disp_op *o = (disp_op *)op;
  typed_entry *e = o->closure;
  sig = atomic_load(&o->sig); /* the current one, now that no def can change it */
  if (!sig || !sig->supported) {
    disp__unlock();
    return usable(op, &sig);
  }
  if (!e || !disp__signature_same_c(e->sig, sig)) {
    if ((st = typed_entry_new(o, sig, &e)) != DISP_OK) {
      disp__unlock();
      return st;
    }
    o->closure = e;
    o->closure_fn = e->fn;
  }
  *out = e->fn;
  disp__unlock();
  return DISP_OK;
}

/* ---- defaults ----------------------------------------------------------- */

/* Items of default lists, as each element type (`float[] x=[0, 1]` holds
 * ints; the parser refuses a float item in an int list, so an int item is
 * always an int and no float-to-int conversion can overflow). */
static int64_t default_int(const disp_default *d) { return d->i; }
static double default_double(const disp_default *d) {
  return d->kind == DISP_DEFAULT_FLOAT ? d->f : (double)d->i;
}

/* Pushes a list of `n` elements of list type `ct`, element j being
 * items[j], or items[0] when one item stands for all (`int[2] x=1`). The
 * array is sized to the list: defaults of any length arrive whole. */
static disp_status push_default_list(disp_stack *s, disp_ctype ct, const disp_default *items, size_t num_items,
                                     size_t n, const char *arg_name) {
  disp_value v = {0};
  size_t size = ct == DISP_CT_DOUBLE_LIST ? sizeof(double) : ct == DISP_CT_BOOL_LIST ? sizeof(bool)
              : ct == DISP_CT_TENSOR_LIST ? sizeof(disp_tensor *) : sizeof(int64_t);
  if (ct == DISP_CT_TENSOR_LIST && n)
    return disp__fail(DISP_ERR_TYPE, "the default of Tensor list argument %s is not empty", arg_name);
  void *data = disp__calloc(n ? n : 1, size);
  if (!data) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory pushing the default of argument %s", arg_name);
  for (size_t j = 0; j < n; j++) {
    const disp_default *item = &items[num_items == 1 ? 0 : j];
    if (ct == DISP_CT_DOUBLE_LIST) ((double *)data)[j] = default_double(item);
    else if (ct == DISP_CT_BOOL_LIST) ((bool *)data)[j] = item->i != 0;
    else ((int64_t *)data)[j] = default_int(item);
  }
  if (ct == DISP_CT_DOUBLE_LIST) v.tag = DISP_VALUE_DOUBLE_LIST, v.u.doubles.data = data, v.u.doubles.len = n;
  else if (ct == DISP_CT_BOOL_LIST) v.tag = DISP_VALUE_BOOL_LIST, v.u.bools.data = data, v.u.bools.len = n;
  else if (ct == DISP_CT_TENSOR_LIST) v.tag = DISP_VALUE_TENSOR_LIST, v.u.tensors.data = data, v.u.tensors.len = 0;
  else v.tag = DISP_VALUE_INT_LIST, v.u.ints.data = data, v.u.ints.len = n;
  return disp_stack_push_value_steal(s, &v);
}

static int is_list_ctype(disp_ctype ct) {
  return ct == DISP_CT_INT_LIST || ct == DISP_CT_OPT_INT_LIST || ct == DISP_CT_DOUBLE_LIST ||
         ct == DISP_CT_BOOL_LIST || ct == DISP_CT_TENSOR_LIST;
}

static disp_status push_default(disp_stack *s, const disp_argument *a, disp_ctype ct) {
  const disp_default *v = a->default_value;
  switch (v->kind) {
    case DISP_DEFAULT_NONE: return disp_stack_push_none(s);
    case DISP_DEFAULT_BOOL: return disp_stack_push_bool(s, v->i != 0);
    case DISP_DEFAULT_INT:
    case DISP_DEFAULT_FLOAT:
      /* int[2] x=1 means [1, 1]. */
      if (is_list_ctype(ct)) return push_default_list(s, ct, v, 1, a->n > 0 ? (size_t)a->n : 1, a->name);
      if (v->kind == DISP_DEFAULT_FLOAT || ct == DISP_CT_DOUBLE || ct == DISP_CT_OPT_DOUBLE)
        return disp_stack_push_double(s, default_double(v));
      return disp_stack_push_int(s, v->i);
    case DISP_DEFAULT_STRING: return disp_stack_push_string(s, v->str);
    case DISP_DEFAULT_DEVICE: {
      int32_t type, index;
      disp_status st = disp__device_parse_ids(v->str, &type, &index);
      if (st != DISP_OK) return st;
      return disp_stack_push_device(s, type, index);
    }
    case DISP_DEFAULT_LIST: {
      size_t n = v->broadcast && a->n > 0 ? (size_t)a->n : v->num_items;
      return push_default_list(s, ct, v->items, v->num_items, n, a->name);
    }
  }
  return disp__fail(DISP_ERR_TYPE, "unsupported default for argument %s", a->name);
}

/* On failure the defaults pushed so far are dropped again: the stack holds
 * what the caller gave. */
disp_status disp_stack_fill_defaults(const disp_op *op, disp_stack *stack, size_t given) {
  DISP_REFUSE_NULL(op);
  DISP_REFUSE_NULL(stack);
  disp_status st;
  const disp_signature *sig = signature_of(op, &st);
  if (!sig) return st;
  const disp_schema *schema = disp_op_schema(op);
  if (!schema || schema->num_args != (size_t)sig->nargs) /* removed or redefined meanwhile */
    return disp__fail(DISP_ERR_OP_NOT_FOUND, "%s changed while its defaults were read", op->name);
  size_t before = disp_stack_size(stack);
  if (given > before)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_stack_fill_defaults: given is %zu, but the stack holds %zu value%s",
                      given, before, before == 1 ? "" : "s");
  if (given > schema->num_args)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "%s() expected at most %zu argument(s) but received %zu argument(s). Declaration: %s",
                      disp_schema_base_name(schema), schema->num_args, given, op->name);
  for (size_t i = given; i < schema->num_args && st == DISP_OK; i++) {
    const disp_argument *a = &schema->args[i];
    if (!a->default_value)
      st = disp__fail(DISP_ERR_INVALID_ARG, "%s() is missing value for argument '%s'. Declaration: %s",
                      disp_schema_base_name(schema), a->name, op->name);
    else
      st = push_default(stack, a, sig->args[i]);
  }
  if (st != DISP_OK) disp_stack_drop(stack, disp_stack_size(stack) - before);
  return st;
}
