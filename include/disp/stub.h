/*
 * disp/stub.h - inner loops ("stubs") a backend registers instead of whole
 * kernels (seed 003, scenario two; PyTorch's DispatchStub and
 * REGISTER_PRIVATEUSE1_DISPATCH(abs_stub, &abs_kernel)).
 *
 * For the operators below the library owns everything but the arithmetic:
 * argument checks, type promotion, broadcasting, the layout of fresh
 * outputs, in-place and out= handling (a wrong-sized out is resized as the
 * CPU kernel resizes it, by growing its storage: one that already holds
 * data grows only by a device-side copy, refused with a message where the
 * storage module has none), the device check. It then calls the backend's
 * loop on blocks of the operands. A backend registers just the loop:
 *
 *   static disp_status my_abs(const disp_stub_iter *it) { ...on the device... }
 *   disp_stub_register(DISP_STUB_ABS, DISP_BACKEND_PRIVATEUSE1, my_abs);
 *
 * Note [Stub kernels]
 * Registering a backend's first stub of an operator registers, on that
 * backend's key (PrivateUse1, 2 or 3), the library's kernel of every
 * operator the stub serves (the table below); unregistering the last one
 * removes them. So a stub-less operator on the device behaves exactly as
 * before: it reaches the backend's fallback (disp_cpu_fallback, say) when
 * one is registered, and otherwise fails with the dispatcher's "Could not
 * run 'aten::abs' with arguments from the 'PrivateUse1' backend" - a
 * backend can move operator by operator from the fallback to stubs. A kernel
 * the backend registered itself for such an operator before the stub keeps
 * precedence (the stub kernel is not registered over it); one registered
 * after wins as the newest kernel does.
 *
 *   stub             operators (aten::)
 *   exp log tanh sigmoid sqrt   the op: fresh output, integral and bool
 *                    inputs computed as float32
 *   abs neg          abs, neg (dtype kept; neg refuses bool)
 *   relu             relu, relu_ (refuses bool)
 *   add              add.Tensor, add_.Tensor, add.out, and the sub ones
 *                    below with -alpha when the backend has no sub stub
 *   sub              sub.Tensor, sub_.Tensor
 *   mul              mul.Tensor, mul_.Tensor
 *   div              div.Tensor, div_.Tensor (true division)
 *   sum              sum.dim_IntList (and sum, which calls it)
 * The Scalar overloads (add.Scalar, ...) call the Tensor ones and so reach
 * the stubs too.
 *
 * What a loop is given (disp_stub_iter): every operand already on the
 * device and of one dtype - the library converts inputs of another dtype,
 * and 0-dim CPU scalars, on the device first (the backend's _to_copy /
 * _copy_from), and writes an out= tensor of another dtype through a
 * temporary - so a loop never converts and never sees host memory. Data
 * pointers are the device addresses the backend's allocator returned with
 * byte offsets added; the library never dereferences them. A call covers
 * one 2-D block of size[0] x size[1] elements; an iteration of more
 * dimensions is several calls, so a loop may be one kernel launch over a
 * strided 2-D grid. Besides its loops, a stub backend needs the kernels the
 * library calls on its device: empty_strided (outputs and temporaries) and
 * _copy_from (those conversions; copy_ and _to_copy reach it).
 */
#ifndef DISP_STUB_H
#define DISP_STUB_H

#include <stdint.h>

#include "export.h"
#include "keyset.h"
#include "status.h"
#include "tensor.h"
#include "value.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The stubs: X(ID, name, inputs). Names are PyTorch's where it has one. */
#define DISP_FORALL_STUBS(X)                                                   \
  X(EXP, "exp_stub", 1) X(LOG, "log_stub", 1) X(TANH, "tanh_stub", 1)          \
  X(SIGMOID, "sigmoid_stub", 1) X(SQRT, "sqrt_stub", 1) X(ABS, "abs_stub", 1)  \
  X(NEG, "neg_stub", 1) X(RELU, "relu_stub", 1) X(ADD, "add_stub", 2)          \
  X(SUB, "sub_stub", 2) X(MUL, "mul_stub", 2) X(DIV, "div_true_stub", 2)       \
  X(SUM, "sum_stub", 1)

typedef enum disp_stub {
#define X(ID, name, nin) DISP_STUB_##ID,
  DISP_FORALL_STUBS(X)
#undef X
  DISP_STUB_COUNT
} disp_stub;

/* The most operands a loop sees: the output and two inputs. */
#define DISP_STUB_MAX_OPERANDS 3

/*
 * One call of a loop: a 2-D block. Operand 0 is the output, 1.. the inputs
 * (noperands of them in all). Element (i, j), i < size[0] along a row and
 * j < size[1] rows, of operand k is at
 *     (char *)data[k] + i * stride[k][0] + j * stride[k][1]
 * Strides are in bytes and never negative; an input's may be 0
 * (broadcast). Either size may be 1 (its strides then mean nothing).
 *
 * Elementwise stubs: out(i, j) = f(in1(i, j)[, in2(i, j)]) for every
 * element. The output overlaps an input only as the very same elements (in
 * place). add: out = a + alpha * b; sub: out = a - alpha * b. alpha is the
 * caller's Scalar as given (int 1 by default, and for the other stubs): the
 * CPU's checks have refused a double alpha for an integral dtype and a bool
 * one for a non-bool dtype, so it converts to dtype without loss of kind
 * (disp_scalar_to_double for floating dtypes). div is true division; relu
 * is max(x, 0), with NaN kept.
 *
 * The sum stub (a reduction): stride[0][0] is 0, and row j reduces into
 * the one output element at data[0] + j * stride[0][1]:
 *     out(j) = (accumulate ? out(j) : 0) + sum over i of in(i, j)
 * size[0] may be 0 (the output is set to zero). accumulate is 1 when an
 * earlier call of the same operation already wrote a partial sum there
 * (reductions over dimensions that do not merge into one row). Integral
 * sums wrap as int64 arithmetic does; float16/bfloat16 sums should
 * accumulate in float, as PyTorch's.
 *
 * The struct is filled by the library and only read by the loop; new
 * fields are appended (and the ABI version bumped).
 */
typedef struct disp_stub_iter {
  disp_stub stub;     /* which stub is called (one function may serve several) */
  disp_device device; /* where every operand lives */
  disp_dtype dtype;   /* every operand's dtype */
  int noperands;      /* 2 (unary, sum) or 3 (binary) */
  int accumulate;     /* sum: add to the partial sum in the output */
  int64_t size[2];
  void *data[DISP_STUB_MAX_OPERANDS];
  int64_t stride[DISP_STUB_MAX_OPERANDS][2];
  disp_scalar alpha;
} disp_stub_iter;

/*
 * A loop. Returns DISP_OK, or an error status after disp_set_error() (a
 * dtype the backend does not support: "\"abs_openreg\" not implemented for
 * 'Half'", PyTorch's wording), which the operator returns; later blocks are
 * then not run and a fresh output is released. Called on the thread that
 * called the operator, with no library lock held.
 */
typedef disp_status (*disp_stub_fn)(const disp_stub_iter *it);

/*
 * disp_stub_name - "abs_stub", ...; NULL (with the message) for an id
 * outside the enum. Static string. Thread-safe.
 */
DISP_API const char *disp_stub_name(disp_stub id);

/*
 * disp_stub_register - sets the loop of stub `id` for device type `type`
 * (PrivateUse1, PrivateUse2 or PrivateUse3), and registers the stub's
 * operators on that backend's key (Note [Stub kernels]); fn NULL
 * unregisters it (nothing registered: a no-op), removing the operators'
 * kernels no other stub of the backend serves. Registered from a plugin's
 * load, the stub is the plugin's: unloading it unregisters the stub.
 * disp_shutdown() forgets every stub. Errors, leaving everything as it was:
 * DISP_ERR_INVALID_ARG (an id outside the enum; another device type:
 * "disp_stub_register: abs_stub cannot be registered for CPU; stubs are
 * for the PrivateUse1, PrivateUse2 and PrivateUse3 backends"),
 * DISP_ERR_DUPLICATE (the backend already has a loop for the stub:
 * "disp_stub_register: abs_stub already has a PrivateUse1 kernel;
 * unregister it first"), DISP_ERR_NO_MEMORY. A loop must not be running
 * while it is unregistered. Thread-safe.
 */
DISP_API disp_status disp_stub_register(disp_stub id, disp_backend type, disp_stub_fn fn);

/*
 * disp_stub_get - the loop registered for stub `id` on device type `type`,
 * or NULL (none; a bad id or type also sets the message). Thread-safe.
 */
DISP_API disp_stub_fn disp_stub_get(disp_stub id, disp_backend type);

#ifdef __cplusplus
}
#endif

#endif /* DISP_STUB_H */
