/*
 * disp/easy.h - the concise face of the C API.
 *
 *   disp_scope s = disp_scope_begin();
 *   float x[] = {1, -2, 3, -4, 5, -6}, y[] = {6, 5, 4, 3, 2, 1};
 *   disp_status st = disp_print(disp_relu(disp_add(disp_from(x, 2, 3), disp_from(y, 2, 3))));
 *   if (st) fprintf(stderr, "%s\n", disp_last_error());
 *   disp_scope_end(&s);
 *
 * Beside the typed entries of disp/aten.h (disp_aten_ID: status-returning,
 * zero overhead), which stay the layer libraries and kernels use, this
 * header gives programs:
 *   - every operator the manifest marks `.api = "NAME"` as disp_NAME(...)
 *     returning its result (disp/easy_ops.h, generated; tools/gen_api.c);
 *   - tensors from C data, shape literals and scalars (disp_from, disp_borrow,
 *     disp_zeros, disp_ones, disp_rand, disp_randn, disp_full, disp_scalar);
 *   - scopes that own what is made inside them (disp_scope_begin/end,
 *     DISP_SCOPE, disp_keep);
 *   - the autograd and optimizer verbs (disp_backward, disp_grad,
 *     DISP_NO_GRAD, disp_zero_grad, disp_step) and reading results
 *     (disp_item, disp_print).
 *
 * Note [Concise errors]
 * A concise function that fails returns NULL and leaves disp_last_error()
 * set, as the typed call under it did. A NULL tensor argument fails the call
 * too, with "disp_NAME: ARG is NULL" - unless the last error on this thread
 * came from a concise function that returned NULL (no error since): then
 * that NULL is taken to be the earlier failure's result and its message is
 * kept. So a chain of calls is checked once, at its end, and the message is
 * its FIRST failure's. Functions returning a status (disp_print,
 * disp_backward) follow the same rule and return DISP_ERR_INVALID_ARG (or
 * the first failure's status) for NULL.
 *
 * Note [Scopes]
 * A thread has a stack of scopes. While one is open, every tensor a concise
 * function returns is owned by the innermost scope and released when it ends
 * (in reverse order of creation); outside any scope the caller owns it (a
 * new reference; disp_tensor_release). disp_keep(t) gives the caller a
 * reference that outlives every scope. Scopes end in LIFO order; a scope's
 * bookkeeping is one array per thread, grown as needed: if growing fails,
 * the call that needed it releases its result and returns NULL with
 * DISP_ERR_NO_MEMORY. Opening a scope never allocates and never fails.
 * A scope is per thread: tensors made on another thread are not in it.
 * Typed entries (disp_aten_*) never put anything in a scope.
 *
 * Note [Concise argument types]
 * Positional parameters are the schema's arguments without a default;
 * options (a disp_NAME_opts struct the macro disp_NAME fills by name, as C99
 * designated initialisers: disp_sum(x, .dim = DISP_DIMS(1), .keepdim = true))
 * are those with one, and every optional (T?) one. Omitted options take 1.13's
 * defaults, non-zero ones too (alpha = 1, stride = 1, reduction = mean).
 * Types: Tensor, Tensor? -> disp_tensor * (NULL = None); Tensor[] ->
 * disp_tensor_list (DISP_TENSORS(a, b)); int -> int64_t; int? -> int64_t
 * (DISP_NONE_INT = None); int[], int[]? -> disp_dims (DISP_DIMS(1, 2);
 * DISP_DIMS_NONE = None; an omitted dim of sum/mean: all dimensions);
 * float, Scalar -> double (a Scalar with an integral value is passed as an
 * int, as Python's literal 2 would be); float?, Scalar? -> double (DISP_NONE,
 * a NaN, = None); bool -> bool; ScalarType -> disp_dtype (DISP_DTYPE_NONE =
 * None); str -> const char * (a C string); `int reduction` -> disp_reduction. Layout, Device, MemoryFormat,
 * Generator and pin_memory arguments are not offered (their defaults are
 * passed); the constructors below take a disp_device.
 * Defaults come before the caller's initialisers in one compound literal,
 * which C99 defines (the last initialiser of a member wins); GCC and clang
 * warn about it under -Wextra (-Woverride-init, -Winitializer-overrides).
 * GCC: DISP__OPTS silences exactly that warning around the literal (a
 * statement expression places the pragma). Clang runs the _Pragma of a
 * macro's argument when it pre-expands it, so no pragma inside the macros
 * can reach options written in another call's arguments
 * (disp_relu(disp_conv2d(x, w, .padding = DISP_DIMS(1, 1)))): including
 * this header turns clang's -Winitializer-overrides off for the rest of the
 * translation unit. The macros are C only; from C++ call disp_NAME_with.
 *
 * Note [Failed scopes]
 * Once a concise call fails inside a scope, the verbs that change state
 * (disp_backward, disp_zero_grad, disp_step) do nothing until the innermost
 * scope ends and return that failure's status: a training step whose loss
 * failed must not move the parameters. disp_scope_end returns DISP_OK, or
 * the status of the latest concise failure while the scope was open (every
 * call of a failed chain carries its first failure's status), so a step is
 * checked once, at its end:
 *   disp_scope s = disp_scope_begin();
 *   disp_tensor *loss = disp_cross_entropy(forward(x), y);
 *   disp_zero_grad(opt), disp_backward(loss), disp_step(opt);
 *   if (disp_scope_end(&s)) fprintf(stderr, "%s\n", disp_last_error());
 *
 * Thread safety: every function is thread-safe as the typed entry it calls;
 * scopes and grad mode are per thread.
 */
#ifndef DISP_EASY_H
#define DISP_EASY_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "export.h"
#include "optim.h"
#include "status.h"
#include "tensor.h"
#include "value.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- argument literals --------------------------------------------------- */

/*
 * disp_dims - a list of up to DISP_DIMS_MAX integers held by value: the
 * concise API's int[] (shapes, dims, strides). By value because options are
 * built in a statement expression under GCC (DISP__OPTS), where an array
 * compound literal would not outlive the expression. len -1 is None.
 * DISP_DIMS(2, 3) makes one (more than DISP_DIMS_MAX values fail to
 * compile); DISP_SHAPE is the same, for shapes; DISP_DIMS_EMPTY is [] and
 * DISP_DIMS_NONE None. Tensors of more dimensions: disp/aten.h's typed
 * entries.
 */
#define DISP_DIMS_MAX 8
typedef struct disp_dims {
  int64_t len;
  int64_t v[DISP_DIMS_MAX];
} disp_dims;
#define DISP__COUNT(...) (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define DISP_DIMS(...)                                                                   \
  ((disp_dims){(int64_t)DISP__COUNT(__VA_ARGS__) +                                      \
                   0 * (int64_t)sizeof(char[DISP__COUNT(__VA_ARGS__) <= DISP_DIMS_MAX ? 1 : -1]), \
               {__VA_ARGS__}})
#define DISP_SHAPE(...) DISP_DIMS(__VA_ARGS__)
#define DISP_DIMS_EMPTY ((disp_dims){0, {0}})
#define DISP_DIMS_NONE ((disp_dims){-1, {0}})
/* DISP_TENSORS(a, b) - a disp_tensor_list of its arguments. */
#define DISP_TENSORS(...) \
  ((disp_tensor_list){(disp_tensor *const[]){__VA_ARGS__}, sizeof((disp_tensor *[]){__VA_ARGS__}) / sizeof(disp_tensor *)})
/* None for a float?/Scalar? option, an int? option, a ScalarType? option. */
#define DISP_NONE NAN
#define DISP_NONE_INT INT64_MIN
#define DISP_DTYPE_NONE ((disp_dtype)-1)

/* How a loss reduces (aten's Reduction; the `int reduction` argument). */
typedef enum disp_reduction {
  DISP_REDUCTION_NONE = 0,
  DISP_REDUCTION_MEAN = 1,
  DISP_REDUCTION_SUM = 2
} disp_reduction;

/* An options literal of type T: defaults, then the caller's (Note
 * [Concise argument types]). */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Winitializer-overrides"
#define DISP__OPTS(T, ...) ((T){__VA_ARGS__})
#elif defined(__GNUC__)
#define DISP__OPTS(T, ...)                                                      \
  (__extension__({                                                              \
    _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wpragmas\"") \
    _Pragma("GCC diagnostic ignored \"-Woverride-init\"")                       \
    _Pragma("GCC diagnostic ignored \"-Woverride-init-side-effects\"")          \
    _Pragma("GCC diagnostic ignored \"-Wshadow\"") /* options inside options */ \
    T disp__o = {__VA_ARGS__};                                                  \
    _Pragma("GCC diagnostic pop") disp__o;                                      \
  }))
#else
#define DISP__OPTS(T, ...) ((T){__VA_ARGS__})
#endif
/* DISP__WITHn(disp_NAME, n positional arguments, options..., <empty>) -
 * disp_NAME_with(positional, DISP__OPTS(disp_NAME_opts, defaults, options)).
 * Every concise macro passes a trailing empty argument, so that a call with
 * no options still gives `...` an argument (ISO C before C23). */
#define DISP__WITH0(N, ...) N##_with(DISP__OPTS(N##_opts, DISP__DEFAULTS_##N, __VA_ARGS__))
#define DISP__WITH1(N, A, ...) N##_with((A), DISP__OPTS(N##_opts, DISP__DEFAULTS_##N, __VA_ARGS__))
#define DISP__WITH2(N, A, B, ...) N##_with((A), (B), DISP__OPTS(N##_opts, DISP__DEFAULTS_##N, __VA_ARGS__))
#define DISP__WITH3(N, A, B, C, ...) N##_with((A), (B), (C), DISP__OPTS(N##_opts, DISP__DEFAULTS_##N, __VA_ARGS__))
#define DISP__WITH4(N, A, B, C, D, ...) \
  N##_with((A), (B), (C), (D), DISP__OPTS(N##_opts, DISP__DEFAULTS_##N, __VA_ARGS__))

/* ---- scopes (Note [Scopes]) ------------------------------------------------ */

/* An open scope: a small value the caller keeps and passes to
 * disp_scope_end. Its fields are the library's. */
typedef struct disp_scope {
  size_t mark;
  unsigned depth;
  int open;
  uint64_t seq, outer_seq;
} disp_scope;

/*
 * disp_scope_begin - opens a scope on this thread: concise results are
 * owned by it until disp_scope_end. Never fails, never allocates.
 */
DISP_API disp_scope disp_scope_begin(void);

/*
 * disp_scope_end - releases every tensor the scope owns and closes it
 * (inner scopes still open are closed with it). Returns DISP_OK, or the
 * status of the latest concise call that failed while the scope was open
 * (Note [Failed scopes]; disp_last_error() has the message). NULL or an
 * ended scope: no effect, DISP_OK. Ending a scope of another thread is a
 * bug the library cannot see: don't.
 */
DISP_API disp_status disp_scope_end(disp_scope *s);

/* DISP_SCOPE { ... } - a block in a scope of its own. Leaving the block by
 * break, goto or return skips the end: use disp_scope_begin/end then. */
#define DISP_SCOPE DISP__SCOPE(DISP__CAT(disp__scope_, __LINE__))
#define DISP__SCOPE(S) for (disp_scope S = disp_scope_begin(); S.open; disp_scope_end(&S))
#define DISP__CAT(a, b) DISP__CAT2(a, b)
#define DISP__CAT2(a, b) a##b

/*
 * disp_keep - a new reference to t that the caller owns, outliving every
 * scope (release it with disp_tensor_release). NULL gives NULL (Note
 * [Concise errors]).
 */
DISP_API disp_tensor *disp_keep(disp_tensor *t);

/* DISP_NO_GRAD { ... } - a block with grad mode off (PyTorch's
 * torch.no_grad()); the previous mode is restored at its end (same caveat
 * as DISP_SCOPE). */
#define DISP_NO_GRAD DISP__NO_GRAD(DISP__CAT(disp__nograd_, __LINE__))
#define DISP__NO_GRAD(S) \
  for (disp_grad_guard S = disp_no_grad_begin(); S.open; disp_no_grad_end(&S))
typedef struct disp_grad_guard {
  int previous;
  int open;
} disp_grad_guard;
/* disp_no_grad_begin / _end - what DISP_NO_GRAD does, for code that must
 * leave early: turn grad mode off, and restore what it was. */
DISP_API disp_grad_guard disp_no_grad_begin(void);
DISP_API void disp_no_grad_end(disp_grad_guard *g);

/* ---- tensors ----------------------------------------------------------------- */

/* The dtype of a pointer to C data, for disp_from. */
#define DISP__DTYPE_OF(P)                                                                         \
  _Generic((P), float *: DISP_DTYPE_FLOAT32, const float *: DISP_DTYPE_FLOAT32,                \
           double *: DISP_DTYPE_FLOAT64, const double *: DISP_DTYPE_FLOAT64,                    \
           int64_t *: DISP_DTYPE_INT64, const int64_t *: DISP_DTYPE_INT64,                      \
           int32_t *: DISP_DTYPE_INT32, const int32_t *: DISP_DTYPE_INT32,                      \
           uint8_t *: DISP_DTYPE_UINT8, const uint8_t *: DISP_DTYPE_UINT8,                      \
           bool *: DISP_DTYPE_BOOL, const bool *: DISP_DTYPE_BOOL)

/*
 * disp_from(DATA, sizes...) - a CPU tensor holding a copy of the C array
 * DATA (float, double, int64_t, int32_t, uint8_t or bool: the dtype follows
 * the pointer's type) in the shape sizes...: disp_from(x, 2, 3). DATA must
 * hold the shape's element count. disp_from_data is the function under it.
 * Concise result (Note [Scopes]). Errors: DISP_ERR_INVALID_ARG (NULL data
 * with elements, negative size, bad dtype), DISP_ERR_NO_MEMORY.
 */
#define disp_from(DATA, ...) disp_from_data((DATA), DISP__DTYPE_OF(DATA), DISP_DIMS(__VA_ARGS__))
DISP_API disp_tensor *disp_from_data(const void *data, disp_dtype dtype, disp_dims shape);

/*
 * disp_borrow - a CPU tensor over the caller's memory, without copying
 * (PyTorch's from_blob). On success the tensor owns `data`: deleter(data,
 * ctx) runs once when the last reference goes (deleter NULL: never freed).
 * On failure nothing is taken and deleter is not called. Concise result.
 * Errors as disp_from_data.
 */
DISP_API disp_tensor *disp_borrow(void *data, disp_dtype dtype, disp_dims shape,
                                  void (*deleter)(void *data, void *ctx), void *ctx);

/* What the shape constructors take by name: the dtype (float32), the
 * device (the CPU) and whether the result requires grad (false). */
typedef struct disp_new_opts {
  disp_dtype dtype;
  disp_device device;
  bool requires_grad;
} disp_new_opts;
#define DISP__NEW_DEFAULTS .dtype = DISP_DTYPE_FLOAT32, .device = {DISP_BACKEND_CPU, -1}, .requires_grad = false

/*
 * disp_zeros, disp_ones, disp_rand (uniform [0, 1)), disp_randn (normal) -
 * a tensor of SHAPE (DISP_SHAPE(2, 3)), options by name:
 *   disp_zeros(DISP_SHAPE(2, 3), .dtype = DISP_DTYPE_FLOAT64, .requires_grad = true)
 * disp_full(SHAPE, VALUE, ...) fills with VALUE; disp_scalar(VALUE, ...) is a
 * 0-dim tensor. They call aten::zeros, ones, rand, randn, full and
 * scalar_tensor. Concise results. Errors: those operators'.
 */
#define disp_zeros(...) DISP__WITH1(disp_zeros, __VA_ARGS__, )
#define disp_ones(...) DISP__WITH1(disp_ones, __VA_ARGS__, )
#define disp_rand(...) DISP__WITH1(disp_rand, __VA_ARGS__, )
#define disp_randn(...) DISP__WITH1(disp_randn, __VA_ARGS__, )
#define disp_full(...) DISP__WITH2(disp_full, __VA_ARGS__, )
#define disp_scalar(...) DISP__WITH1(disp_scalar, __VA_ARGS__, )
typedef disp_new_opts disp_zeros_opts, disp_ones_opts, disp_rand_opts, disp_randn_opts, disp_full_opts,
    disp_scalar_opts;
#define DISP__DEFAULTS_disp_zeros DISP__NEW_DEFAULTS
#define DISP__DEFAULTS_disp_ones DISP__NEW_DEFAULTS
#define DISP__DEFAULTS_disp_rand DISP__NEW_DEFAULTS
#define DISP__DEFAULTS_disp_randn DISP__NEW_DEFAULTS
#define DISP__DEFAULTS_disp_full DISP__NEW_DEFAULTS
#define DISP__DEFAULTS_disp_scalar DISP__NEW_DEFAULTS
DISP_API disp_tensor *disp_zeros_with(disp_dims shape, disp_new_opts o);
DISP_API disp_tensor *disp_ones_with(disp_dims shape, disp_new_opts o);
DISP_API disp_tensor *disp_rand_with(disp_dims shape, disp_new_opts o);
DISP_API disp_tensor *disp_randn_with(disp_dims shape, disp_new_opts o);
DISP_API disp_tensor *disp_full_with(disp_dims shape, double value, disp_new_opts o);
DISP_API disp_tensor *disp_scalar_with(double value, disp_new_opts o);

/*
 * disp_requires_grad - sets t to require grad (a leaf) and returns it, so
 * it reads in a chain: w = disp_requires_grad(disp_randn(DISP_SHAPE(3, 2))).
 * NULL (Note [Concise errors]) or a failure (a non-leaf, an integer dtype)
 * gives NULL; t keeps its owner either way.
 */
DISP_API disp_tensor *disp_requires_grad(disp_tensor *t);

/*
 * disp_split - aten::split.Tensor: t cut along dim into pieces of `size`
 * (the last one shorter), views of t, written to out[0..) as concise
 * results (owned by the current scope, like every concise result). Returns
 * the number of pieces, or -1 with the error set and every out[0..n) NULL:
 * t NULL (an earlier concise failure keeps its message, Note [Concise
 * errors]), out NULL or n negative, more pieces than n, or split's own
 * errors (a size below 0, dim out of range). Thread-safe as any call.
 */
DISP_API int disp_split(disp_tensor *t, int64_t size, int64_t dim, disp_tensor **out, int n);

/* ---- reading results ------------------------------------------------------- */

/* disp_last_status - the status this thread's current error message was
 * set with (DISP_OK after disp_clear_error or before any error): the code
 * behind a concise NULL. Thread-safe (per thread). */
DISP_API disp_status disp_last_status(void);

/* disp_item - the value of a one-element tensor as a double; NaN for NULL
 * or any other failure, with the error set (Note [Concise errors]). */
DISP_API double disp_item(disp_tensor *t);

/* disp_print - t as PyTorch prints it, to stdout (disp_tensor_print).
 * DISP_OK, or the error (Note [Concise errors]). */
DISP_API disp_status disp_print(disp_tensor *t);

/* ---- autograd ---------------------------------------------------------------- */

/*
 * disp_backward - PyTorch's loss.backward(): accumulates the gradient of the
 * one-element tensor `loss` into the leaves it depends on
 * (disp_autograd_backward, graph freed). Status; NULL keeps a chain's error
 * (Note [Concise errors]).
 */
DISP_API disp_status disp_backward(disp_tensor *loss);

/*
 * disp_zero_grad - PyTorch 1.13's optimizer.zero_grad(): the gradients of
 * opt's parameters are zeroed in place (disp_optim_zero_grad(opt, 0)).
 * disp_step - optimizer.step() (disp_optim_step). Each returns DISP_OK or
 * the error; does nothing and returns the failure's status after a concise
 * call failed in the innermost scope (Note [Failed scopes]); a NULL opt is
 * DISP_ERR_INVALID_ARG ("disp_step: opt is NULL"). Thread safety: as
 * disp/optim.h (one thread per optimizer at a time).
 */
DISP_API disp_status disp_zero_grad(disp_optimizer *opt);
DISP_API disp_status disp_step(disp_optimizer *opt);

/*
 * disp_grad - t's accumulated gradient (PyTorch's t.grad), as a concise
 * result (a new reference in the current scope); NULL when it has none
 * ("disp_grad: the tensor has no gradient") or t is NULL.
 */
DISP_API disp_tensor *disp_grad(disp_tensor *t);

#ifdef __cplusplus
}
#endif

#include "disp/easy_ops.h"

#endif
