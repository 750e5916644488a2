/*
 * disp/function.h - custom autograd functions from C (PyTorch's
 * torch.autograd.Function): a forward and a backward callback sharing a
 * context, applied like an operator.
 *
 *   static disp_status fwd(disp_function_ctx *ctx, disp_tensor *const *in, size_t n,
 *                          disp_tensor **out, size_t nout) {
 *     disp_ctx_save_for_backward(ctx, in, 2);
 *     return disp_aten_mul_Tensor(in[0], in[1], &out[0]);
 *   }
 *   static disp_status bwd(disp_function_ctx *ctx, disp_tensor *const *grad_out, size_t nout,
 *                          disp_tensor **grad_in, size_t n) {
 *     disp_tensor *const *saved; size_t ns;
 *     disp_status st = disp_ctx_saved_tensors(ctx, &saved, &ns);
 *     if (st == DISP_OK && disp_ctx_needs_input_grad(ctx, 0)) st = disp_aten_mul_Tensor(grad_out[0], saved[1], &grad_in[0]);
 *     ...
 *   }
 *   static const disp_function_def mymul = {"MyMulBackward", fwd, bwd};
 *   disp_function_apply(&mymul, (disp_tensor *[]){a, b}, 2, &y, 1);
 *
 * As in PyTorch: forward runs with grad mode off; when grad mode is on and
 * an input requires grad, the outputs get a node named def->name whose
 * backward calls def->backward; an output returned unchanged from the
 * inputs comes back as a new alias with the graph. The same function can be
 * an operator's Autograd kernel (seed 002's MyAddFunction): the kernel calls
 * disp_function_apply with a forward that redispatches below autograd.
 *
 * Threads: a context belongs to one call; a def may be shared.
 */
#ifndef DISP_FUNCTION_H
#define DISP_FUNCTION_H

#include <stddef.h>

#include "export.h"
#include "status.h"
#include "value.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The ctx object of one application (PyTorch's ctx). Opaque; valid inside
 * the callbacks. */
typedef struct disp_function_ctx disp_function_ctx;

/*
 * A custom function. forward writes nout new references into outputs (every
 * one non-NULL); backward gets one gradient per output (borrowed; NULL for
 * an output that got none, unless grads are materialized - the default -
 * when it is zeros) and writes one new reference or NULL per input. Either
 * returns an error status after disp_set_error() to fail the call or the
 * backward pass. `name` names the node ("MyMulBackward").
 */
typedef struct disp_function_def {
  const char *name;
  disp_status (*forward)(disp_function_ctx *ctx, disp_tensor *const *inputs, size_t n, disp_tensor **outputs,
                         size_t nout);
  disp_status (*backward)(disp_function_ctx *ctx, disp_tensor *const *grad_outputs, size_t nout,
                          disp_tensor **grad_inputs, size_t n);
} disp_function_def;

/*
 * disp_function_apply - runs def on inputs[0..n) (tensors; NULL entries are
 * None) and writes nout new references to outputs. The def and its name
 * are copied (the caller may free them on return); its functions must stay
 * loaded while a graph it records lives. Errors: the forward's own;
 * DISP_ERR_INVALID_ARG when forward leaves an output NULL, marks a leaf that
 * requires grad dirty ("a leaf Variable that requires grad has been used in
 * an in-place operation."), or marks dirty a tensor it does not return. On
 * error every outputs[i] is NULL.
 */
DISP_API disp_status disp_function_apply(const disp_function_def *def, disp_tensor *const *inputs, size_t n,
                                         disp_tensor **outputs, size_t nout);

/*
 * disp_ctx_save_for_backward - keeps tensors (NULL entries: None) for the
 * backward, with their versions (a later in-place change fails backward as
 * for built-in formulas). Call it in forward, at most once. Errors:
 * "save_for_backward can only be called from forward" outside forward.
 */
DISP_API disp_status disp_ctx_save_for_backward(disp_function_ctx *ctx, disp_tensor *const *tensors, size_t n);

/*
 * disp_ctx_saved_tensors - in backward, the saved tensors (borrowed array,
 * valid during the callback; entries NULL for None) after the version
 * check. Errors: the version check's message; "Trying to backward through
 * the graph a second time ..." after the graph was freed.
 */
DISP_API disp_status disp_ctx_saved_tensors(disp_function_ctx *ctx, disp_tensor *const **tensors, size_t *n);

/*
 * disp_ctx_set_data / disp_ctx_data - a non-tensor value kept from forward
 * to backward (PyTorch's ctx.attr = ...). `destroy` (may be NULL) frees it
 * with the graph.
 */
DISP_API void disp_ctx_set_data(disp_function_ctx *ctx, void *data, void (*destroy)(void *data));
DISP_API void *disp_ctx_data(const disp_function_ctx *ctx);

/* disp_ctx_needs_input_grad - whether input i gets a gradient (forward and
 * backward). 0 for NULL ctx or i out of range. */
DISP_API int disp_ctx_needs_input_grad(const disp_function_ctx *ctx, size_t i);

/*
 * disp_ctx_mark_dirty - in forward: these inputs were modified in place and
 * are returned as outputs; their history moves to this node. The array is
 * copied (the tensors are borrowed until forward returns). Errors
 * (DISP_ERR_INVALID_ARG) for a tensor that is not an input.
 */
DISP_API disp_status disp_ctx_mark_dirty(disp_function_ctx *ctx, disp_tensor *const *tensors, size_t n);

/* disp_ctx_mark_non_differentiable - in forward: these outputs never
 * require grad (indices, masks). The array is copied, as mark_dirty's. */
DISP_API disp_status disp_ctx_mark_non_differentiable(disp_function_ctx *ctx, disp_tensor *const *tensors,
                                                      size_t n);

/* disp_ctx_set_materialize_grads - whether backward sees zeros (default)
 * or NULL for outputs without a gradient. */
DISP_API void disp_ctx_set_materialize_grads(disp_function_ctx *ctx, int materialize);

#ifdef __cplusplus
}
#endif

#endif /* DISP_FUNCTION_H */
