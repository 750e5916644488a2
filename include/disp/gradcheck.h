/*
 * disp/gradcheck.h - checking derivative formulas against finite
 * differences (PyTorch 1.13's torch.autograd.gradcheck and gradgradcheck,
 * slow mode, for real float64 inputs).
 *
 * gradcheck calls a function of tensors, compares the Jacobian of each
 * output with respect to each input that requires grad computed two ways:
 * numerically, by central differences (each input element moved by -eps and
 * +eps in place), and analytically, by disp_autograd_grad with one output
 * element's gradient set to 1 at a time. They must agree within
 * |analytical - numerical| <= atol + rtol * |numerical|.
 *
 *   static disp_status f(disp_tensor *const *in, size_t n, disp_tensor **out, size_t *nout, void *ctx) {
 *     *nout = 1;
 *     return disp_aten_tanh(in[0], &out[0]);
 *   }
 *   disp_tensor_set_requires_grad(x, 1);           // x: float64
 *   if (disp_gradcheck(f, NULL, &x, 1, NULL) != DISP_OK) puts(disp_last_error());
 *
 * Not checked (PyTorch's defaults or its optional checks): undefined output
 * gradients (check_undefined_grad), batched gradients, forward mode, complex
 * inputs, sparse tensors, gradient dtypes (check_grad_dtypes).
 *
 * Threads: one check uses the inputs exclusively (it writes their elements
 * while it runs); distinct checks on distinct tensors may run concurrently.
 */
#ifndef DISP_GRADCHECK_H
#define DISP_GRADCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "status.h"
#include "value.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most outputs a checked function may return. */
#define DISP_GRADCHECK_MAX_OUTPUTS 16

/*
 * The function under check. `inputs` are the n tensors given to
 * gradcheck, borrowed (the same objects on every call; their elements are
 * perturbed in place between calls). The function writes its results to
 * outputs[0..k) as new references and sets *nout = k; on entry *nout holds
 * the room (DISP_GRADCHECK_MAX_OUTPUTS). Outputs that do not require grad
 * are not differentiated (PyTorch's _differentiable_outputs). On failure it
 * returns an error status with a message (disp_set_error); whatever it put
 * in outputs[0..*nout) is released by the caller either way. It must be
 * deterministic: gradcheck calls it 2 * (number of input elements) + 1
 * times.
 */
typedef disp_status (*disp_gradcheck_fn)(disp_tensor *const *inputs, size_t n, disp_tensor **outputs,
                                         size_t *nout, void *ctx);

/* Tolerances of a check; disp_gradcheck_default_options gives PyTorch's. */
typedef struct disp_gradcheck_options {
  double eps;        /* finite-difference step: 1e-6 */
  double atol;       /* absolute tolerance: 1e-5 */
  double rtol;       /* relative tolerance: 1e-3 */
  double nondet_tol; /* how far two backward passes may differ: 0 */
  uint64_t seed;     /* gradgradcheck's random grad_outputs: 0 (a fixed stream, not PyTorch's) */
} disp_gradcheck_options;

/* disp_gradcheck_default_options - eps 1e-6, atol 1e-5, rtol 1e-3,
 * nondet_tol 0, seed 0. Thread-safe. */
DISP_API disp_gradcheck_options disp_gradcheck_default_options(void);

/*
 * disp_gradcheck - torch.autograd.gradcheck(fn, inputs): DISP_OK when the
 * analytical gradients of fn match the numerical ones for every input that
 * requires grad (float32/float64 strided CPU tensors; other inputs are
 * passed as they are). `inputs` (n tensors, borrowed; may hold NULL for an
 * absent optional argument) are restored to their values before it
 * returns. opts NULL means the defaults. ctx is passed to fn as is.
 *
 * Errors, PyTorch's words: DISP_ERR_INVALID_ARG "gradcheck expects at least
 * one input tensor to require gradient, but none of the them have
 * requires_grad=True."; "The 0th input has a dimension with stride 0. ..."
 * (an expanded input cannot be perturbed one element at a time).
 * DISP_ERR_MISMATCH when the check fails: "Jacobian mismatch for output 0
 * with respect to input 0,\nnumerical:tensor(...)\nanalytical:tensor(...)"
 * (matrices shortened; rows are input elements, columns output elements;
 * outputs and inputs counted among the differentiable ones), "Analytical
 * gradient has incorrect size", "Backward is not reentrant, ...", "backward
 * not multiplied by grad_output", "Numerical gradient for function expected
 * to be zero" (no output requires grad). An error of fn or of the backward
 * pass is returned with its own status and message. A float32 input that
 * requires grad gets PyTorch's warning "Input #0 requires gradient and is
 * not a double precision floating point or complex. ...".
 */
DISP_API disp_status disp_gradcheck(disp_gradcheck_fn fn, void *ctx, disp_tensor *const *inputs, size_t n,
                                    const disp_gradcheck_options *opts);

/*
 * disp_gradgradcheck - torch.autograd.gradgradcheck(fn, inputs,
 * grad_outputs): gradcheck of the function (inputs, grad_outputs) ->
 * disp_autograd_grad(fn's differentiable outputs, the inputs that require
 * grad, grad_outputs, create_graph) (the gradients that are not None), so
 * the backward formulas are differentiated in their turn. grad_outputs
 * (ngrad_outputs of them, one per differentiable output of fn) may be NULL
 * with ngrad_outputs 0: then they are random normal values from opts->seed,
 * float64, shaped as the outputs, requiring grad. Given ones are checked
 * with respect to too when they require grad. Errors as disp_gradcheck, and
 * DISP_ERR_INVALID_ARG when ngrad_outputs does not match fn's differentiable
 * outputs.
 */
DISP_API disp_status disp_gradgradcheck(disp_gradcheck_fn fn, void *ctx, disp_tensor *const *inputs, size_t n,
                                        disp_tensor *const *grad_outputs, size_t ngrad_outputs,
                                        const disp_gradcheck_options *opts);

#ifdef __cplusplus
}
#endif

#endif /* DISP_GRADCHECK_H */
