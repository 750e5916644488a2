/*
 * tensor_iter.h - the one iteration layer of the elementwise and reduction
 * kernels (PyTorch's TensorIterator, reduced to what the built-in ops need).
 *
 * An op computes its output geometry here (broadcasting, the layout rule of
 * fresh outputs, out= resizing), then runs a per-dtype inner loop over any
 * strides: operand 0 is the output, 1.. the inputs, every input already in
 * the compute dtype (mixed dtypes are converted first). Dimensions are
 * ordered by the output's strides and coalesced, so a dense case is one
 * call of the inner loop.
 */
#ifndef DISP_TENSOR_ITER_H
#define DISP_TENSOR_ITER_H

#include <stdbool.h>
#include <stdint.h>

#include "aten_internal.h"
#include "tensor/dtype_cast.h"

#define DISP_TITER_MAX_OPS 5
#define DISP_TITER_MAX_DIMS DISP_TENSOR_MAX_DIMS

/* The inner loop: n elements; data[k] and strides[k] (bytes) per operand.
 * On large loops it runs on several threads at once, on pieces of a run
 * that start at multiples of 64 elements from the run's start (Note
 * [Parallel pointwise] in tensor_iter.c): a vector body cut only there
 * gives the same values at any thread count. */
typedef void (*disp_titer_loop)(char **data, const int64_t *strides, int64_t n, const void *ctx);

/* Per-call constants of an inner loop (alpha, clamp bounds, ...), given
 * both as double and as int64 so each dtype's loop reads its own kind. */
typedef struct disp_titer_consts {
  double d[4];
  int64_t i[4];
} disp_titer_consts;

/* ---- type promotion state (promotion.c) ---------------------------------- */

typedef struct disp__result_state { int dim, zero, wrapped; } disp__result_state;
void disp__result_state_init(disp__result_state *s);
void disp__result_state_tensor(disp__result_state *s, const disp_tensor *t);
void disp__result_state_scalar(disp__result_state *s, disp_scalar v);
/* The result dtype, or -1 when nothing was given or promotion failed. */
int disp__result_state_get(const disp__result_state *s);

/* Zero-dim tensors made from Python scalars ("wrapped numbers"): made on the
 * CPU (float64/int64/bool), marked for the calling thread until unwrapped
 * (which also releases the tensor). */
disp_status disp__wrap_scalar(disp_scalar v, disp_device dev, disp_tensor **out);
void disp__unwrap_scalar(disp_tensor *t);
int disp__is_wrapped_number(const disp_tensor *t);

/* ---- geometry ------------------------------------------------------------ */

/* Broadcast shape of nin tensors (NULL ones skipped) into shape/ndim;
 * "The size of tensor a (3) must match the size of tensor b (4) at
 * non-singleton dimension 1" on mismatch. */
disp_status disp__titer_broadcast(const char *op, disp_tensor *const *ins, int nin, int64_t *shape,
                                  int *ndim);

/* Strides (elements) of a fresh output of `shape` computed from inputs the
 * way TensorIterator allocates one: contiguous inputs give contiguous,
 * all channels_last give channels_last, equal dense strides are kept,
 * otherwise the inputs' dimension order is followed. */
void disp__titer_out_strides(disp_tensor *const *ins, int nin, const int64_t *shape, int ndim,
                             int64_t *strides);

/* The shape (broadcast) and strides (layout) of a fresh output over ins. */
disp_status disp__titer_out_geometry(const char *op, disp_tensor *const *ins, int nin, int64_t *shape,
                                     int64_t *strides, int *ndim);

/* A fresh output for an elementwise op over ins (broadcast + layout) of
 * dtype dt on device dev. */
disp_status disp__titer_new_output(const char *op, disp_tensor *const *ins, int nin, disp_dtype dt,
                                   disp_device dev, disp_tensor **out);

/* The device an op's output lives on: the first input not on the CPU or,
 * failing that, the CPU (zero-dim CPU tensors mix with any device). */
disp_device disp__titer_device(disp_tensor *const *ins, int nin);

/* out= handling: out must be writable without overlap; a wrong shape is
 * resized (storage grown) and restrided to `strides` (NULL: contiguous). */
disp_status disp__titer_resize_out(const char *op, disp_tensor *out, const int64_t *shape, int ndim,
                                   const int64_t *strides);

/* "unsupported operation: more than one element of the written-to tensor
 * refers to a single memory location..." when t has a stride-0 dimension of
 * size > 1. */
disp_status disp__titer_check_internal_overlap(const char *op, const disp_tensor *t);

/* Result type `r` can be written to dtype `out` (PyTorch's canCast):
 * no floating to integral, no non-bool to bool. */
int disp__can_cast(disp_dtype from, disp_dtype to);

/* ---- running ------------------------------------------------------------- */

/* Runs `loop` over out (which has the broadcast shape of ins). Inputs whose
 * dtype differs from `in_dt` are converted first; when out's dtype differs
 * from `out_dt` (what loop writes) the loop writes a temporary that is then
 * converted into out. Nothing is done for non-CPU outputs (Meta). */
disp_status disp__titer_run(const char *op, disp_tensor *out, disp_tensor *const *ins, int nin,
                            disp_dtype in_dt, disp_dtype out_dt, disp_titer_loop loop, const void *ctx);

/* The raw loop: nops operands over `shape` (ndim dims), strides in bytes,
 * nops * ndim of them (operand-major). Orders dims by operand 0's strides,
 * coalesces, and calls loop on the innermost runs. Operand 0 is the one
 * written: when it moves on every dim and the loop has more than
 * DISP_GRAIN_SIZE elements, the runs are split across disp__parallel_for's
 * threads (Note [Parallel pointwise] in tensor_iter.c: identical results
 * at any thread count); a stride 0 of operand 0 (a reduction into it)
 * keeps the loop on the calling thread, so any other written operand must
 * have operand 0's stride-0 dims. loop and ctx must then be thread-safe
 * (ctx is only read). */
void disp__titer_loop_raw(int nops, char **data, const int64_t *strides, const int64_t *shape, int ndim,
                          disp_titer_loop loop, const void *ctx);

/* A loop after ordering and coalescing: m dims, dim 0 the innermost run,
 * sh[d] its size and st[k][d] operand k's byte stride along it. */
typedef struct disp_titer_plan {
  int nops, m;
  int64_t sh[DISP_TITER_MAX_DIMS];
  int64_t st[DISP_TITER_MAX_OPS][DISP_TITER_MAX_DIMS];
  char *data[DISP_TITER_MAX_OPS];
  disp_titer_loop loop; /* what disp__titer_loop_raw runs; unused by the planner */
  const void *ctx;
} disp_titer_plan;

/* Fills p from nops operands over `shape` (strides as disp__titer_loop_raw
 * takes them): orders the non-trivial dims fastest first (operand 0's
 * stride, then the next operands': a stride 0 of operand 0, a reduction into
 * it, comes first) and merges neighbours that step like one dimension in
 * every operand. Returns 0 when the loop has no elements. Only computes
 * addresses: data may be device pointers. */
int disp__titer_plan(disp_titer_plan *p, int nops, char **data, const int64_t *strides, const int64_t *shape,
                     int ndim);

/* Byte strides of t over `shape` (right-aligned, broadcast dims 0). */
void disp__titer_bcast_strides(const disp_tensor *t, const int64_t *shape, int ndim, int64_t *out);

/* loop over n elements of one dimension (strides[k] per operand): called
 * directly when small, else through disp__titer_loop_raw's threads. */
void disp__titer_loop_flat(int nops, char **data, const int64_t *strides, int64_t n, disp_titer_loop loop,
                           const void *ctx);

/* dst[...] = src[...] converting dtypes, equal shapes, any strides (CPU). */
disp_status disp__titer_copy(disp_tensor *dst, disp_tensor *src);

/* A contiguous copy of t converted to dt (a new reference to t itself when
 * it already is contiguous of that dtype). */
disp_status disp__titer_contiguous_as(disp_tensor *t, disp_dtype dt, disp_tensor **out);

/* ---- the pointwise driver ----------------------------------------------- */

enum { DISP_PW_FRESH, DISP_PW_INPLACE, DISP_PW_OUT };

/* Runs loops[compute] over ins into a fresh tensor of dtype `result` (its
 * layout from the inputs, on their device), or into dest: INPLACE checks
 * the result casts to dest's dtype and dest has the broadcast shape, OUT
 * resizes dest; both refuse overlapping dest. *ret is a new reference
 * (dest itself for INPLACE/OUT). A missing loop is PyTorch's "\"kname\" not
 * implemented for 'Half'". */
disp_status disp__pointwise(const char *op, const char *kname, int mode, disp_tensor *dest, disp_tensor *const *ins,
                            int nin, disp_dtype compute, disp_dtype result, const disp_titer_loop *loops,
                            const disp_titer_consts *c, disp_tensor **ret);
disp_status disp__not_implemented(const char *kname, disp_dtype dt);
/* The checks and geometry of disp__pointwise's written tensor for modes
 * INPLACE (dest has the broadcast shape) and OUT (dest resized), result
 * castable to dest's dtype, no overlap with the inputs. Reads no data. */
disp_status disp__titer_prepare_dest(const char *op, int mode, disp_tensor *dest, disp_tensor *const *ins, int nin,
                                     disp_dtype result);
/* result_type of two tensors (either may be a wrapped number). */
disp_dtype disp__result_type2(disp_tensor *a, disp_tensor *b);
/* Stores scalar v as constant k (double and int64 forms). */
void disp__consts_set(disp_titer_consts *c, int k, disp_scalar v);

/* ---- reductions ---------------------------------------------------------- */

/* Which dims a reduction over `dims` (has_dims false or empty list: all)
 * reduces, as a mask, and the result shape with keepdim. Wraps negative
 * dims; errors "Dimension out of range (expected to be in range of [-2, 1],
 * but got 2)" and "dim 0 appears multiple times in the list of dims". */
disp_status disp__reduce_shape(const char *op, const disp_tensor *self, const int64_t *dims, size_t ndims,
                               bool keepdim, uint64_t *mask, int64_t *shape, int *ndim);

/* Wraps a dim into [0, ndim) (ndim 0 counts as 1), with PyTorch's message. */
disp_status disp__titer_wrap_dim(const char *op, int64_t dim, int ndim, int *out);

/* Strides (bytes) of operand views for a reduction: for the input, its own
 * strides over its shape; for an accumulator of element size `isz` that is
 * contiguous over the kept dims, 0 on the reduced ones. */
void disp__reduce_acc_strides(const disp_tensor *self, uint64_t mask, size_t isz, int64_t *strides);

/* ---- inner loop generators ----------------------------------------------
 * Per dtype tag: storage type T, compute type A (float for float16 and
 * bfloat16, computed in float and rounded once as PyTorch does), load LD,
 * store ST, and constant K(c, k) read from a disp_titer_consts. */

#define DISP_T_f32 float
#define DISP_A_f32 float
#define DISP_LD_f32(p) (*(const float *)(p))
#define DISP_ST_f32(p, v) (*(float *)(p) = (float)(v))
#define DISP_K_f32(c, k) ((float)(c)->d[k])
#define DISP_T_f64 double
#define DISP_A_f64 double
#define DISP_LD_f64(p) (*(const double *)(p))
#define DISP_ST_f64(p, v) (*(double *)(p) = (double)(v))
#define DISP_K_f64(c, k) ((c)->d[k])
#define DISP_T_f16 uint16_t
#define DISP_A_f16 float
#define DISP_LD_f16(p) disp__half_to_float(*(const uint16_t *)(p))
#define DISP_ST_f16(p, v) (*(uint16_t *)(p) = disp__float_to_half((float)(v)))
#define DISP_K_f16(c, k) ((float)(c)->d[k])
#define DISP_T_bf16 uint16_t
#define DISP_A_bf16 float
#define DISP_LD_bf16(p) disp__bf16_to_float(*(const uint16_t *)(p))
#define DISP_ST_bf16(p, v) (*(uint16_t *)(p) = disp__float_to_bf16((float)(v)))
#define DISP_K_bf16(c, k) ((float)(c)->d[k])
#define DISP_T_i64 int64_t
#define DISP_A_i64 int64_t
#define DISP_LD_i64(p) (*(const int64_t *)(p))
#define DISP_ST_i64(p, v) (*(int64_t *)(p) = (int64_t)(v))
#define DISP_K_i64(c, k) ((c)->i[k])
#define DISP_T_i32 int32_t
#define DISP_A_i32 int32_t
#define DISP_LD_i32(p) (*(const int32_t *)(p))
#define DISP_ST_i32(p, v) (*(int32_t *)(p) = (int32_t)(v))
#define DISP_K_i32(c, k) ((int32_t)(c)->i[k])
#define DISP_T_i16 int16_t
#define DISP_A_i16 int16_t
#define DISP_LD_i16(p) (*(const int16_t *)(p))
#define DISP_ST_i16(p, v) (*(int16_t *)(p) = (int16_t)(v))
#define DISP_K_i16(c, k) ((int16_t)(c)->i[k])
#define DISP_T_i8 int8_t
#define DISP_A_i8 int8_t
#define DISP_LD_i8(p) (*(const int8_t *)(p))
#define DISP_ST_i8(p, v) (*(int8_t *)(p) = (int8_t)(v))
#define DISP_K_i8(c, k) ((int8_t)(c)->i[k])
#define DISP_T_u8 uint8_t
#define DISP_A_u8 uint8_t
#define DISP_LD_u8(p) (*(const uint8_t *)(p))
#define DISP_ST_u8(p, v) (*(uint8_t *)(p) = (uint8_t)(v))
#define DISP_K_u8(c, k) ((uint8_t)(c)->i[k])
#define DISP_T_b uint8_t
#define DISP_A_b bool
#define DISP_LD_b(p) (*(const uint8_t *)(p) != 0)
#define DISP_ST_b(p, v) (*(uint8_t *)(p) = (uint8_t)((v) != 0))
#define DISP_K_b(c, k) ((c)->i[k] != 0)

/* The tag sets: M(tag, DTYPE_SUFFIX, name, expr...) for each. */
#define DISP_TAGS_FLOAT(M, name, ...)                                                             \
  M(f32, FLOAT32, name, __VA_ARGS__) M(f64, FLOAT64, name, __VA_ARGS__)                           \
  M(f16, FLOAT16, name, __VA_ARGS__) M(bf16, BFLOAT16, name, __VA_ARGS__)
#define DISP_TAGS_INT(M, name, ...)                                                               \
  M(i64, INT64, name, __VA_ARGS__) M(i32, INT32, name, __VA_ARGS__) M(i16, INT16, name, __VA_ARGS__) \
  M(i8, INT8, name, __VA_ARGS__) M(u8, UINT8, name, __VA_ARGS__)
#define DISP_TAGS_BOOL(M, name, ...) M(b, BOOL, name, __VA_ARGS__)

#define DISP__CONSTS(it)                                                                          \
  const disp_titer_consts *c_ = (const disp_titer_consts *)ctx_;                                 \
  const DISP_A_##it k0 = c_ ? (DISP_A_##it)DISP_K_##it(c_, 0) : (DISP_A_##it)0;                  \
  const DISP_A_##it k1 = c_ ? (DISP_A_##it)DISP_K_##it(c_, 1) : (DISP_A_##it)0;                  \
  (void)k0;                                                                                       \
  (void)k1;

/* out[i] = EXPR(a) */
#define DISP_DEF_LOOP1(name, it, ot, ...)                                                         \
  static void name(char **d_, const int64_t *s_, int64_t n_, const void *ctx_) {                  \
    DISP__CONSTS(it)                                                                              \
    char *o_ = d_[0];                                                                             \
    const char *a_ = d_[1];                                                                       \
    const int64_t so_ = s_[0], sa_ = s_[1];                                                       \
    if (so_ == (int64_t)sizeof(DISP_T_##ot) && sa_ == (int64_t)sizeof(DISP_T_##it)) {             \
      for (int64_t i_ = 0; i_ < n_; i_++) {                                                       \
        DISP_A_##it a = DISP_LD_##it(a_ + i_ * (int64_t)sizeof(DISP_T_##it));                     \
        DISP_ST_##ot(o_ + i_ * (int64_t)sizeof(DISP_T_##ot), (__VA_ARGS__));                       \
      }                                                                                           \
    } else {                                                                                      \
      for (int64_t i_ = 0; i_ < n_; i_++) {                                                       \
        DISP_A_##it a = DISP_LD_##it(a_ + i_ * sa_);                                              \
        DISP_ST_##ot(o_ + i_ * so_, (__VA_ARGS__));                                               \
      }                                                                                           \
    }                                                                                             \
  }

/* out[i] = EXPR(a, b) */
#define DISP_DEF_LOOP2(name, it, ot, ...)                                                         \
  static void name(char **d_, const int64_t *s_, int64_t n_, const void *ctx_) {                  \
    DISP__CONSTS(it)                                                                              \
    char *o_ = d_[0];                                                                             \
    const char *a_ = d_[1], *b_ = d_[2];                                                          \
    const int64_t so_ = s_[0], sa_ = s_[1], sb_ = s_[2];                                          \
    const int64_t zo_ = (int64_t)sizeof(DISP_T_##ot), zi_ = (int64_t)sizeof(DISP_T_##it);         \
    if (so_ == zo_ && sa_ == zi_ && sb_ == zi_) {                                                 \
      for (int64_t i_ = 0; i_ < n_; i_++) {                                                       \
        DISP_A_##it a = DISP_LD_##it(a_ + i_ * zi_), b = DISP_LD_##it(b_ + i_ * zi_);             \
        DISP_ST_##ot(o_ + i_ * zo_, (__VA_ARGS__));                                               \
      }                                                                                           \
    } else if (so_ == zo_ && sa_ == zi_ && sb_ == 0) {                                            \
      const DISP_A_##it b = DISP_LD_##it(b_);                                                     \
      for (int64_t i_ = 0; i_ < n_; i_++) {                                                       \
        DISP_A_##it a = DISP_LD_##it(a_ + i_ * zi_);                                              \
        DISP_ST_##ot(o_ + i_ * zo_, (__VA_ARGS__));                                               \
      }                                                                                           \
    } else {                                                                                      \
      for (int64_t i_ = 0; i_ < n_; i_++) {                                                       \
        DISP_A_##it a = DISP_LD_##it(a_ + i_ * sa_), b = DISP_LD_##it(b_ + i_ * sb_);             \
        DISP_ST_##ot(o_ + i_ * so_, (__VA_ARGS__));                                               \
      }                                                                                           \
    }                                                                                             \
  }

/* out[i] = EXPR(c, a, b), c a bool/uint8 operand */
#define DISP_DEF_LOOP3(name, it, ot, ...)                                                         \
  static void name(char **d_, const int64_t *s_, int64_t n_, const void *ctx_) {                  \
    DISP__CONSTS(it)                                                                              \
    for (int64_t i_ = 0; i_ < n_; i_++) {                                                         \
      bool c = *(const uint8_t *)(d_[1] + i_ * s_[1]) != 0;                                       \
      DISP_A_##it a = DISP_LD_##it(d_[2] + i_ * s_[2]), b = DISP_LD_##it(d_[3] + i_ * s_[3]);     \
      DISP_ST_##ot(d_[0] + i_ * s_[0], (__VA_ARGS__));                                            \
    }                                                                                             \
  }

#define DISP__DEF1(tag, E, name, ...) DISP_DEF_LOOP1(name##_##tag, tag, tag, __VA_ARGS__)
#define DISP__DEF2(tag, E, name, ...) DISP_DEF_LOOP2(name##_##tag, tag, tag, __VA_ARGS__)
#define DISP__DEF2B(tag, E, name, ...) DISP_DEF_LOOP2(name##_##tag, tag, b, __VA_ARGS__)
#define DISP__DEF3(tag, E, name, ...) DISP_DEF_LOOP3(name##_##tag, tag, tag, __VA_ARGS__)
#define DISP__ENTRY(tag, E, name, ...) [DISP_DTYPE_##E] = name##_##tag,

/* Define loops NAME_tag for every tag of SET: unary, binary, binary to bool,
 * ternary; then collect them in a table indexed by the compute dtype. */
#define DISP_DEFS1(SET, name, ...) DISP_TAGS_##SET(DISP__DEF1, name, __VA_ARGS__)
#define DISP_DEFS2(SET, name, ...) DISP_TAGS_##SET(DISP__DEF2, name, __VA_ARGS__)
#define DISP_DEFS2B(SET, name, ...) DISP_TAGS_##SET(DISP__DEF2B, name, __VA_ARGS__)
#define DISP_DEFS3(SET, name, ...) DISP_TAGS_##SET(DISP__DEF3, name, __VA_ARGS__)
#define DISP_ENTRIES(SET, name) DISP_TAGS_##SET(DISP__ENTRY, name, 0)
#define DISP_LOOP_TABLE(table, ...) static const disp_titer_loop table[DISP_DTYPE_COUNT] = {__VA_ARGS__}

/* NaN test valid for every compute type (integers never are). */
#define DISP_ISNAN(x) ((x) != (x))

#endif
