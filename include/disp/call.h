/*
 * disp/call.h - calling operators: boxed, unboxed, redispatch, trace.
 *
 * A call's key set is (union of the key sets of its tensor arguments |
 * thread-local included) - thread-local excluded, then every key whose slot
 * in the operator's table is a fallthrough is removed; the kernel in the slot
 * of the highest remaining key runs and receives that set. A kernel that
 * handles a concern (autograd, autocast) passes the keys below its own on
 * with a redispatch, which applies no thread-local state.
 *
 * Three ways to call, each usable with every kernel kind:
 *   disp_call_boxed(op, stack)            arguments on a stack
 *   disp_call(op, args..., &out...)       C arguments (value.h's mapping), any op
 *   DISP_CALL(st, op, keys, (types), args...)   a typed call for code that knows
 *                                         the C signature: the fast path
 * and, for operators known only at run time, disp_op_typed_entry() hands out
 * a C function pointer with the operator's own signature (a libffi closure).
 *
 * Set DISP_SHOW_DISPATCH_TRACE=1 to print every call to stderr in PyTorch's
 * format ("[call] op=[ns::op.overload], key=[AutogradCPU]").
 *
 * NULL arguments follow status.h's Note [NULL arguments], except on the
 * inline fast path (DISP_CALL, disp_op_dispatch_inline), where `op` must not
 * be NULL: a check there would cost every typed call.
 */
#ifndef DISP_CALL_H
#define DISP_CALL_H

#include "dispatcher.h"
#include "export.h"
#include "keyset.h"
#include "value.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Note [Direct kernels]
 * A slot whose kernel a typed call may call straight as its C signature - an
 * unboxed function that does not take the key set - is the common case, so
 * DISP_CALL tells it apart with one test of the flags: the dispatcher sets
 * DISP__KERNEL_INDIRECT in every slot without an unboxed function (boxed,
 * fallthrough and error kernels), and a slot with either bit of
 * DISP__KERNEL_NOT_DIRECT takes the general branch, which looks at
 * `unboxed` itself. Programs never set it (the dispatcher overwrites it).
 */
#define DISP__KERNEL_INDIRECT (1u << 2)
#define DISP__KERNEL_NOT_DIRECT (DISP_KERNEL_WITH_KEYSET | DISP__KERNEL_INDIRECT)

/* The callable part of a table slot. Owned by the registry. */
typedef struct disp_kernel_slot {
  disp_boxed_fn boxed;
  disp_fn unboxed;
  unsigned flags;
  void *user_data;
} disp_kernel_slot;

/* Where a call goes: a copy of the slot's kernel and the key set it
 * receives. A copy, so it stays usable after a registration change frees the
 * table it came from (Note [Reclaiming retired tables]); a missing kernel is
 * an error kernel, never all-NULL. */
typedef struct disp_dispatch {
  disp_kernel_slot kernel;
  disp_keyset ks;
} disp_dispatch;

/*
 * disp_op_dispatch - the kernel a call runs, given the union of the key sets
 * of its tensor arguments: applies the thread-local sets and the operator's
 * fallthroughs. Lock-free. When the trace is on it prints "[call]" and hands
 * out a boxed wrapper around the kernel, which ends the trace's nesting
 * level when it returns: run the result with DISP_INVOKE. For a NULL op the
 * kernel is one that refuses when run (DISP_ERR_INVALID_ARG, "op is NULL"),
 * so DISP_REDISPATCH and DISP_INVOKE report the mistake. Thread-safe.
 */
DISP_API disp_dispatch disp_op_dispatch(const disp_op *op, disp_keyset tensor_keys);

/*
 * disp_op_redispatch - the kernel for exactly the key set `ks` (no
 * thread-local state, no fallthrough mask). Trace label "[redispatch]".
 */
DISP_API disp_dispatch disp_op_redispatch(const disp_op *op, disp_keyset ks);

/*
 * disp_keyset_below - the key set a kernel running at `ks`'s highest key
 * passes on: `ks` without that key and everything above it (PyTorch's
 * ks & DispatchKeySet(FULL_AFTER, k)).
 */
DISP_API disp_keyset disp_keyset_below(disp_keyset ks);

/* ---- boxed ------------------------------------------------------------ */

/*
 * disp_call_boxed - calls `op` with its arguments on top of `stack` (every
 * argument of the schema, in order; see disp_stack_fill_defaults). On return
 * the arguments are gone and the returns are on the stack. Every value is
 * checked against its schema type before anything else happens: None only
 * for optional types (`Tensor?`, `int?`, ...), an int where a float is
 * expected, an int, float or bool for a Scalar, no None element in a
 * Tensor[] (a Tensor?[] may hold them). What a boxed kernel leaves is checked
 * against the declared returns (count and types). Errors: DISP_ERR_INVALID_ARG
 * for too few values ("ns::op expects 2 arguments on the stack, found 1"),
 * DISP_ERR_TYPE for a wrong value ("ns::op: argument 'mat2' (position 2) must
 * be Tensor, not None"), DISP_ERR_KERNEL for wrong returns ("ns::op: the
 * kernel left 3 values on the stack, but the schema declares 1 return"), the
 * kernel's own error named after the operator once (see disp_error_add_op),
 * or DISP_ERR_NO_KERNEL ("Could not run 'ns::op' with arguments from the
 * 'Key' backend. ..."). On error the stack holds neither arguments nor
 * returns (with too few values: nothing), each released once. Thread-safe.
 */
DISP_API disp_status disp_call_boxed(const disp_op *op, disp_stack *stack);

/* disp_redispatch_boxed - as disp_call_boxed with exactly the key set `ks`;
 * a kernel's failure is left for the outer call to name. A set whose highest
 * key is a fallthrough is DISP_ERR_INVALID_ARG. */
DISP_API disp_status disp_redispatch_boxed(const disp_op *op, disp_keyset ks, disp_stack *stack);

/*
 * disp_stack_fill_defaults - pushes the schema defaults of the arguments
 * after the first `given` ones (which must already be on the stack), so a
 * caller can pass only the leading arguments. Defaults of any length are
 * pushed whole. Errors: DISP_ERR_INVALID_ARG naming the first missing
 * argument without a default, or when `given` exceeds the stack's size or
 * the schema's argument count; the stack then holds what it held before.
 */
DISP_API disp_status disp_stack_fill_defaults(const disp_op *op, disp_stack *stack, size_t given);

/* ---- unboxed ---------------------------------------------------------- */

/*
 * disp_call - calls `op` with C arguments in schema order (types per the
 * table in disp/value.h), followed by one out-pointer per return. Works for
 * any operator whose types have a C mapping; unboxed kernels are reached
 * through libffi, boxed ones by packing. A NULL the schema does not let be
 * None - a Tensor, a list's data with a nonzero length, an element of a
 * Tensor[] (not Tensor?[]), an out-pointer - is refused before any kernel
 * runs: DISP_ERR_INVALID_ARG, "disp_call: self is NULL (argument 1 of
 * aten::mm, type Tensor)". The same holds for disp_redispatch,
 * disp_call_kernel, disp_call_boxed_kernel and typed entries. Thread-safe.
 */
DISP_API disp_status disp_call(const disp_op *op, ...);

/* disp_redispatch - as disp_call with exactly the key set `ks`. */
DISP_API disp_status disp_redispatch(const disp_op *op, disp_keyset ks, ...);

/*
 * disp_call_kernel - runs the kernel `d` chose with C arguments (and
 * out-pointers), packing them for a boxed kernel. The slow half of DISP_CALL.
 */
DISP_API disp_status disp_call_kernel(const disp_op *op, disp_dispatch d, ...);

/*
 * disp_call_boxed_kernel - disp_call_kernel for a boxed kernel given by its
 * parts, which DISP_INVOKE and DISP_CALL use: scalars in registers, where a dispatch
 * result passed by value would be copied to memory on every typed call.
 */
DISP_API disp_status disp_call_boxed_kernel(const disp_op *op, disp_boxed_fn fn, void *user_data,
                                            disp_keyset ks, ...);

/*
 * disp_op_typed_entry - a function pointer with the operator's own unboxed
 * signature (no key set) that dispatches like disp_call; cast it to that
 * type. Built with a libffi closure and owned by the dispatcher.
 * Lifetime: the pointer stays callable until disp_shutdown, but it is tied
 * to the C signature it was built for. When the operator is removed, a call
 * fails with DISP_ERR_OP_NOT_FOUND; when it is redefined with a schema of
 * other C types, a call fails with DISP_ERR_MISMATCH naming both schemas,
 * without reading its arguments or writing its out-pointers, and
 * disp_op_typed_entry hands out a new pointer for the new signature (after
 * a redefinition with the same C types the old pointer works as before).
 * Errors: DISP_ERR_TYPE when a type of the schema has no C mapping.
 * Thread-safe.
 */
DISP_API disp_status disp_op_typed_entry(const disp_op *op, disp_fn *out);

/*
 * disp_error_add_op - names a failed call's message after `op`, as every call
 * path does when a kernel fails: "op: " before the kernel's message, once (a
 * failure passed on from a nested call keeps the name of the operator that
 * failed), or "op: the kernel failed without setting an error message" when
 * the message there is not the kernel's (empty, or already read by the
 * program through disp_last_error()). For code that runs kernels itself.
 * NULL is a no-op.
 */
DISP_API void disp_error_add_op(const disp_op *op);

/* ---- the typed fast path ---------------------------------------------- */

/*
 * Note [The inline fast path]
 * DISP_CALL dispatches inline, so a typed call costs a few loads, an OR, two
 * ANDs, two bit scans and one indirect call. What it reads is part of the
 * ABI and must never be touched by hand:
 *   - the calling thread's included set and `keep` mask (~excluded, with
 *     every backend bit set), kept by the guards of disp/guard.h;
 *   - the operator's published table, whose address is the operator's first
 *     member: a grid of kernels, one row per functionality (row 0:
 *     Undefined) and one column per backend, stored column by column; the
 *     per-backend masks of the keys that are not fallthroughs; and where
 *     each backend's column starts (b * DISP_FAST_GRID_ROWS), which the
 *     lookup adds straight from memory instead of multiplying.
 */
#define DISP_FAST_GRID_COLS 16
#define DISP_FAST_GRID_ROWS (DISP_NUM_FUNCTIONALITIES + 1)
typedef struct disp_fast_table {
  const disp_kernel_slot *cell[DISP_FAST_GRID_ROWS * DISP_FAST_GRID_COLS];
  disp_keyset non_fallthrough[DISP_FAST_GRID_COLS];
  uint64_t col_start[DISP_FAST_GRID_COLS];
} disp_fast_table;

typedef struct disp_fast_tls {
  uint64_t included;
  uint64_t keep;
  /* Even while this thread looks a kernel up, odd otherwise; UINT64_MAX
   * until its first lookup (Note [Reclaiming retired tables]). */
  uint64_t reading;
} disp_fast_tls;

/* The calling thread's sets (initial-exec: one %fs-relative load).
 * C++ spells C11's _Thread_local thread_local. */
#ifdef __cplusplus
#define DISP__THREAD_LOCAL thread_local
#else
#define DISP__THREAD_LOCAL _Thread_local
#endif
DISP_API extern DISP__THREAD_LOCAL disp_fast_tls disp_fast_tls_state __attribute__((tls_model("initial-exec")));

/*
 * disp_reader_register - makes the calling thread known to the reclaimer of
 * retired tables. The inline lookup calls it on a thread's first lookup;
 * nobody else needs to. Thread-safe.
 */
DISP_API void disp_reader_register(void);

/* Bracket every read of a published table (the inline path below does):
 * the counter is even from begin to end, and the kernel slot is copied out
 * before end, so the table and entry may be freed right after.
 *
 * Note [Counting reads in one instruction]
 * Begin and end each add one to the counter (only its own thread writes it,
 * so "add one" is the same single store as "store s + 1"). On x86-64 with
 * GCC or Clang that is one `incq` on the thread-local counter, whose zero
 * flag is the first-lookup test (the counter starts at UINT64_MAX): two
 * instructions to begin and one to end, where a load, add, store and test
 * took five and two. Elsewhere the C form below. Either way the value begin
 * returns is only for disp__read_end of the same build (the `incq` form
 * returns 0 and ends by adding one); disp_redispatch_lookup, whose caller may
 * be built either way, hands out the counter's real value. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DISP__TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define DISP__TSAN 1
#endif
/* ThreadSanitizer sees no ordering in an asm store: TSan builds count in C. */
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__) && !defined(DISP_NO_INLINE_ASM) && !defined(DISP__TSAN)
#define DISP__READ_INC 1
/* The begin without its slow path (for a caller that keeps calls off its
 * fast path): nonzero on the thread's first lookup, which must then call
 * disp_reader_register before it reads anything; *s is for disp__read_end. */
static inline int disp__read_enter_is_first(uint64_t *s) {
  int first;
  __asm__ volatile("incq %0" : "+m"(disp_fast_tls_state.reading), "=@ccz"(first));
  *s = 0;
  return first;
}

static inline uint64_t disp__read_enter(void) {
  uint64_t s;
  if (__builtin_expect(disp__read_enter_is_first(&s), 0)) disp_reader_register();
  return s;
}

/* The "memory" clobber keeps every load of the read (the slot's fields)
 * before the store, as the release store of the C form does. */
static inline void disp__read_end(uint64_t s) {
  (void)s;
  __asm__ volatile("incq %0" : "+m"(disp_fast_tls_state.reading) : : "memory", "cc");
}
#else
#define DISP__READ_INC 0
static inline uint64_t disp__read_enter(void) {
  uint64_t s = __atomic_load_n(&disp_fast_tls_state.reading, __ATOMIC_RELAXED) + 1;
  __atomic_store_n(&disp_fast_tls_state.reading, s, __ATOMIC_RELAXED);
  if (__builtin_expect(s == 0, 0)) disp_reader_register();
  return s;
}

static inline int disp__read_enter_is_first(uint64_t *s) {
  *s = __atomic_load_n(&disp_fast_tls_state.reading, __ATOMIC_RELAXED) + 1;
  __atomic_store_n(&disp_fast_tls_state.reading, *s, __ATOMIC_RELAXED);
  return *s == 0;
}

static inline void disp__read_end(uint64_t s) {
  __atomic_store_n(&disp_fast_tls_state.reading, s + 1, __ATOMIC_RELEASE);
}
#endif

/* Begins a read of what `*p` points at: the loads through *p stay after the
 * counter's store in the compiler's order (membarrier on the writer's side
 * does the same for the processor), and nothing else is ordered, so values
 * the caller already loaded stay in registers. */
#define disp__read_begin_via(p)                                                     \
  __extension__({                                                                   \
    uint64_t disp_s_ = disp__read_enter();                                          \
    __asm__ volatile("" : "+r"(p) : "m"(disp_fast_tls_state.reading));              \
    disp_s_;                                                                        \
  })

/* Begins a read of anything (every later load stays after the store). */
static inline uint64_t disp__read_begin(void) {
  uint64_t s = disp__read_enter();
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  return s;
}

/*
 * disp__fast_lookup - the cell of key set `ks` in table `t` (Note [The
 * inline fast path]), after removing the table's fallthrough keys when
 * `mask` is set (a call; a redispatch passes its set as it is). The one
 * grid lookup of the library: typed calls inline it, the other call paths
 * use it on the real table.
 */
static inline const disp_kernel_slot *disp__fast_cell(const disp_fast_table *t, uint64_t *ks, int mask) {
  /* 64-bit indices throughout: no sign or zero extensions on the path.
   * Masking never changes the backend bits: one backend index serves both. */
  uint64_t b = disp__bsr64((*ks & DISP_KEYSET_BACKEND_MASK) | 1);
  if (mask) *ks &= t->non_fallthrough[b].repr;
  /* The row: the highest functionality bit, with a sentinel at the highest
   * backend bit so that "no functionality" reads as row 0 (Undefined); the
   * row's offset folds into the load's displacement. */
  uint64_t top = disp__bsr64(*ks | (UINT64_C(1) << (DISP_NUM_BACKENDS - 1)));
  return (&t->cell[0] - (DISP_NUM_BACKENDS - 1))[top + t->col_start[b]];
}

/* disp__fast_cell with the cell copied out (call inside a read bracket). */
static inline disp_dispatch disp__fast_lookup(const disp_fast_table *t, uint64_t ks, int mask) {
  disp_dispatch d;
  d.kernel = *disp__fast_cell(t, &ks, mask);
  d.ks.repr = ks;
  return d;
}

/*
 * disp__lookup_open - the cell of a call's key set, with the read still open
 * (Note [Reclaiming retired tables]): DISP_CALL loads what its branch needs
 * from the cell, then ends the read with disp__read_end(*seq); nothing else
 * may be done in between.
 */
static inline const disp_kernel_slot *disp__lookup_open(const disp_op *op, disp_keyset tensor_keys,
                                                        uint64_t *seq, disp_keyset *ks) {
  *seq = disp__read_begin_via(op);
  ks->repr = (tensor_keys.repr | disp_fast_tls_state.included) & disp_fast_tls_state.keep;
  const disp_fast_table *t = __atomic_load_n((const disp_fast_table *const *)(const void *)op, __ATOMIC_ACQUIRE);
  return disp__fast_cell(t, &ks->repr, 1);
}

/*
 * disp_redispatch_lookup - disp__lookup_open for a redispatch with exactly
 * `ks` (DISP_REDISPATCH uses it; out of line for the trace). The caller
 * ends the read with disp__read_end(*seq) once it has read the cell. A NULL
 * op or seq gives a cell whose kernel refuses when run (never NULL), so the
 * macro reports the error instead of crashing.
 */
DISP_API const disp_kernel_slot *disp_redispatch_lookup(const disp_op *op, disp_keyset ks, uint64_t *seq);

/*
 * disp_op_dispatch_inline - disp_op_dispatch, inline (Note [The inline fast
 * path]). With the trace on, every cell holds a tracing kernel that prints
 * and runs the real one, so there is no flag to test here.
 */
static inline disp_dispatch disp_op_dispatch_inline(const disp_op *op, disp_keyset tensor_keys) {
  uint64_t seq = disp__read_begin_via(op);
  uint64_t ks = (tensor_keys.repr | disp_fast_tls_state.included) & disp_fast_tls_state.keep;
  const disp_fast_table *t = __atomic_load_n((const disp_fast_table *const *)(const void *)op, __ATOMIC_ACQUIRE);
  disp_dispatch d = disp__fast_lookup(t, ks, 1);
  disp__read_end(seq);
  return d;
}

#define DISP__UNPAREN(...) __VA_ARGS__

/*
 * DISP_INVOKE(d, op, (PARAM TYPES), args...) - runs the kernel of dispatch
 * result `d`: its unboxed function directly when it has one (with the key set
 * first when it asked for it), else packed for its boxed function.
 */
#define DISP_INVOKE(d, op, PARAMS, ...)                                                  \
  ((d).kernel.unboxed                                                                    \
       ? (((d).kernel.flags & DISP_KERNEL_WITH_KEYSET)                                  \
              ? ((disp_status(*)(disp_keyset, DISP__UNPAREN PARAMS))(d).kernel.unboxed)( \
                    (d).ks, __VA_ARGS__)                                                 \
              : ((disp_status(*) PARAMS)(d).kernel.unboxed)(__VA_ARGS__))               \
       : disp_call_boxed_kernel((op), (d).kernel.boxed, (d).kernel.user_data, (d).ks, __VA_ARGS__))

/* disp_trace_set - turns the dispatch trace on or off for the process.
 * Takes the registry lock (it republishes every table). Thread-safe. */
DISP_API void disp_trace_set(int on);
/* disp_trace_get - nonzero while the trace is on (DISP_SHOW_DISPATCH_TRACE
 * at first use, or disp_trace_set()). Thread-safe. */
DISP_API int disp_trace_get(void);
/* Ends one nesting level of the trace (for kernels that trace by hand). */
DISP_API void disp_trace_leave(void);
/*
 * disp_trace_note - while the trace is on, prints one line in its format at
 * the current nesting level without opening a level: "<label> op=[ns::op],
 * key=[Key]" (the CPU fallback prints "[cpu_fallback]", so the trace shows
 * which operators ran natively on a backend and which on the CPU). Nothing
 * when the trace is off or op is NULL. Thread-safe.
 */
DISP_API void disp_trace_note(const char *label, const disp_op *op, disp_keyset ks);

/*
 * DISP_CALL(status, op, tensor_keys, (PARAM TYPES), args...) - a typed call:
 *   disp_status st;
 *   DISP_CALL(st, op, disp_tensor_keyset(self), (disp_tensor *, disp_tensor **), self, &out);
 * `tensor_keys` is the union of the key sets of the tensor arguments. `op`
 * must not be NULL (the inline fast path reads its table unchecked).
 */
/* Runs the kernel in cell `k` of an open read `seq` (disp__lookup_open):
 * loads what its branch needs, ends the read, calls. The common kernel, an
 * unboxed function without the key set, is one flag test and one load
 * (Note [Direct kernels]); the others load boxed and user_data only when
 * they are boxed. */
#define DISP__RUN_CELL(status, k, seq, ks, op, PARAMS, ...)                                      \
  do {                                                                                           \
    disp_fn disp_fn_ = (k)->unboxed;                                                             \
    if (__builtin_expect(!((k)->flags & DISP__KERNEL_NOT_DIRECT), 1)) {                          \
      disp__read_end(seq);                                                                       \
      (status) = ((disp_status(*) PARAMS)disp_fn_)(__VA_ARGS__);                                 \
    } else if (disp_fn_) {                                                                       \
      /* Read again, so the test above stays one instruction. */                                 \
      unsigned disp_f_ = *(const volatile unsigned *)&(k)->flags;                                \
      disp__read_end(seq);                                                                       \
      (status) = (disp_f_ & DISP_KERNEL_WITH_KEYSET)                                             \
                     ? ((disp_status(*)(disp_keyset, DISP__UNPAREN PARAMS))disp_fn_)((ks),       \
                                                                             __VA_ARGS__)        \
                     : ((disp_status(*) PARAMS)disp_fn_)(__VA_ARGS__);                           \
    } else {                                                                                     \
      disp_boxed_fn disp_b_ = (k)->boxed;                                                        \
      void *disp_u_ = (k)->user_data;                                                            \
      disp__read_end(seq);                                                                       \
      (status) = disp_call_boxed_kernel((op), disp_b_, disp_u_, (ks), __VA_ARGS__);              \
    }                                                                                            \
  } while (0)

/*
 * DISP_CALL(status, op, tensor_keys, (PARAM TYPES), args...) - a typed call:
 *   disp_status st;
 *   DISP_CALL(st, op, disp_tensor_keyset(self), (disp_tensor *, disp_tensor **), self, &out);
 * `tensor_keys` is the union of the key sets of the tensor arguments.
 */
#define DISP_CALL(status, op, tensor_keys, PARAMS, ...)                                          \
  do {                                                                                           \
    uint64_t disp_s_;                                                                            \
    disp_keyset disp_ks_;                                                                        \
    const disp_kernel_slot *disp_k_ = disp__lookup_open((op), (tensor_keys), &disp_s_, &disp_ks_); \
    DISP__RUN_CELL(status, disp_k_, disp_s_, disp_ks_, op, PARAMS, __VA_ARGS__);                 \
    if ((status) != DISP_OK) disp_error_add_op(op);                                              \
  } while (0)

/* DISP_REDISPATCH(status, op, ks, (PARAM TYPES), args...) - the same for a redispatch. */
#define DISP_REDISPATCH(status, op, ks, PARAMS, ...)                                             \
  do {                                                                                           \
    uint64_t disp_s_;                                                                            \
    disp_keyset disp_ks_ = (ks);                                                                 \
    const disp_kernel_slot *disp_k_ = disp_redispatch_lookup((op), disp_ks_, &disp_s_);          \
    DISP__RUN_CELL(status, disp_k_, disp_s_, disp_ks_, op, PARAMS, __VA_ARGS__);                 \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif /* DISP_CALL_H */
