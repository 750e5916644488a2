/*
 * disp/optim.h - optimizers: SGD, Adam and AdamW as torch.optim 1.13.
 *
 * An optimizer holds a list of parameters (one parameter group) and their
 * per-parameter state. disp_optim_step reads each parameter's gradient
 * (disp_tensor_grad, disp/autograd.h) and updates the parameter in place
 * with exactly the rules of torch.optim 1.13's single-tensor implementations
 * (_single_tensor_sgd, _single_tensor_adam, _single_tensor_adamw): the same
 * operations in the same order, each rounded to the parameter's dtype as
 * ATen rounds it, so results on the CPU agree with libtorch 1.13 on an
 * AVX2 machine bit for bit (tests/test_optim.c compares them over several
 * steps); other devices: Note [Optimizer devices].
 *
 *   disp_adam_options o = disp_adam_options_default();
 *   o.lr = 1e-3;
 *   disp_optimizer *opt = NULL;
 *   disp_optim_adam_new(params, n, &o, &opt);
 *   for (...) {
 *     disp_optim_zero_grad(opt, 0);
 *     ... forward, backward ...
 *     disp_optim_step(opt);
 *   }
 *   disp_optim_free(opt);
 *
 * Note [Optimizer state]
 * As PyTorch, state is created lazily: a parameter's state (momentum
 * buffer; exp_avg, exp_avg_sq, max_exp_avg_sq and the step count) appears
 * at the first step where it has a gradient. A parameter whose gradient is
 * None at a step is skipped: neither it nor its state changes.
 *
 * Note [Optimizer tensors]
 * The update runs with grad mode off, so autograd records nothing, and
 * changes parameters in place: each parameter's version counter goes up by
 * one for each in-place operation PyTorch's update applies to it (SGD and
 * Adam one, AdamW two). A gradient must have its parameter's dtype, sizes
 * and device. A parameter listed twice gets a warning, as in PyTorch, and
 * is then updated twice a step, each entry with its own state (PyTorch
 * shares one state between the two).
 *
 * Note [Optimizer devices]
 * A CPU parameter must be a dense contiguous float32 or float64 tensor; its
 * update is the loops above, bit-exact (a non-contiguous gradient is read
 * through a contiguous copy). A parameter on any other device - a backend's
 * (PrivateUse1 ...), Meta - may be any dense floating-point tensor; its
 * update is 1.13's same sequence of tensor operations (mul_, add_, add,
 * neg, clone, sqrt, div_, maximum, copy_; zeros_like for new state), each
 * dispatched as a user's call is, so the device's own kernels or its CPU
 * fallback do the work and the library never reads device memory. State
 * tensors live on the parameter's device. Three operations 1.13 uses are
 * composed from those, left to right: addcmul_ (exp_avg_sq's update),
 * addcdiv_ (the parameter's) and maximum(out=) (amsgrad). The composed
 * addcmul_ rounds the product before the sum where ATen's kernel fuses
 * them, and each device's kernels round as they do (libdispatch's CPU add
 * with alpha, which a CPU fallback runs, rounds alpha * other first), so
 * the results agree with the CPU loops to float tolerance, not bit for bit
 * (tests/test_optim_device.c: 1e-6 relative for float32). On Meta the
 * update computes shapes only. One optimizer may hold parameters of several
 * devices (as PyTorch allows). Other parameters (integer or complex
 * dtypes, sparse layouts, non-contiguous CPU tensors) are refused when the
 * optimizer is made, with a message naming the parameter.
 *
 * Thread safety: an optimizer is not thread-safe; use it from one thread
 * at a time, and do not run a step while another thread uses its
 * parameters or their gradients. Distinct optimizers are independent.
 */
#ifndef DISP_OPTIM_H
#define DISP_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An optimizer with its parameters and their state. Opaque. */
typedef struct disp_optimizer disp_optimizer;

/*
 * SGD's options, torch.optim.SGD's arguments. lr has no default in PyTorch
 * (it is required): the initializer leaves it NaN, and an optimizer made
 * with a NaN lr is refused.
 */
typedef struct disp_sgd_options {
  double lr;           /* learning rate; required */
  double momentum;     /* momentum factor (0) */
  double dampening;    /* dampening for momentum (0) */
  double weight_decay; /* L2 penalty (0) */
  int nesterov;        /* Nesterov momentum (0) */
  int maximize;        /* maximize the objective instead of minimizing (0) */
} disp_sgd_options;

/*
 * Adam's and AdamW's options, torch.optim.Adam/AdamW's arguments. Only the
 * default weight decay differs: 0 for Adam (an L2 penalty added to the
 * gradient), 1e-2 for AdamW (decoupled: the parameter shrinks by
 * lr * weight_decay before the update).
 */
typedef struct disp_adam_options {
  double lr;           /* learning rate (1e-3) */
  double beta1;        /* betas[0] (0.9) */
  double beta2;        /* betas[1] (0.999) */
  double eps;          /* added to the denominator (1e-8) */
  double weight_decay; /* Adam 0, AdamW 1e-2 */
  int amsgrad;         /* the AMSGrad variant (0) */
  int maximize;        /* maximize the objective instead of minimizing (0) */
} disp_adam_options;

/* disp_sgd_options_default - PyTorch's defaults; lr NaN (required). Thread-safe. */
DISP_API disp_sgd_options disp_sgd_options_default(void);

/* disp_adam_options_default - torch.optim.Adam's defaults. Thread-safe. */
DISP_API disp_adam_options disp_adam_options_default(void);

/* disp_adamw_options_default - torch.optim.AdamW's defaults (weight_decay 1e-2). Thread-safe. */
DISP_API disp_adam_options disp_adamw_options_default(void);

/*
 * disp_optim_sgd_new / disp_optim_adam_new / disp_optim_adamw_new - an
 * optimizer over params[0..n). The optimizer retains every parameter (the
 * caller keeps its own references) and copies the options. *out gets a new
 * optimizer, to be freed with disp_optim_free.
 * Errors (DISP_ERR_INVALID_ARG, *out untouched), as torch.optim 1.13 words
 * them: "optimizer got an empty parameter list"; "Invalid learning rate:
 * -1.0", "Invalid momentum value: ...", "Invalid weight_decay value: ...",
 * "Nesterov momentum requires a momentum and zero dampening", "Invalid
 * epsilon value: ...", "Invalid beta parameter at index 0: ..." (numbers
 * printed as Python prints floats); SGD without lr: "parameter group didn't
 * specify a value of required optimization parameter lr"; a parameter
 * Note [Optimizer devices] refuses (the message names its index); NULL
 * params (with n > 0), a NULL element, o or out.
 * DISP_ERR_NO_MEMORY. Thread-safe (each call makes its own optimizer).
 */
DISP_API disp_status disp_optim_sgd_new(disp_tensor *const *params, size_t n,
                                        const disp_sgd_options *o, disp_optimizer **out);
DISP_API disp_status disp_optim_adam_new(disp_tensor *const *params, size_t n,
                                         const disp_adam_options *o, disp_optimizer **out);
DISP_API disp_status disp_optim_adamw_new(disp_tensor *const *params, size_t n,
                                          const disp_adam_options *o, disp_optimizer **out);

/*
 * disp_optim_step - one update of every parameter that has a gradient
 * (optimizer.step()). Gradients are checked and new state is allocated
 * before anything changes: on such an error no parameter and no state has
 * been updated. Parameters off the CPU are updated by dispatched operations
 * (Note [Optimizer devices]): an error of the device's kernels stops the
 * step there and is returned (the message names the operator), leaving
 * what 1.13's loop leaves after an exception - the parameters and state
 * updated so far, Adam's step count of that parameter advanced (1.13 counts
 * first), a new SGD momentum buffer not kept.
 * Errors: DISP_ERR_INVALID_ARG (NULL opt; a gradient whose dtype or sizes
 * differ from its parameter's; one on another device: "Expected all tensors
 * to be on the same device, but found at least two devices, privateuseone:0
 * and cpu!" (disp_tensor_set_grad refuses to assign one already); a sparse
 * gradient: "Adam does not support sparse gradients, please consider
 * SparseAdam instead", "AdamW does not support sparse gradients"; an
 * inference-tensor parameter outside inference mode), DISP_ERR_NO_MEMORY
 * (state not allocated; nothing updated), and whatever a device's kernel
 * reports. Not thread-safe (see the top of this header).
 */
DISP_API disp_status disp_optim_step(disp_optimizer *opt);

/*
 * disp_optim_zero_grad - optimizer.zero_grad(set_to_none) of 1.13: with
 * set_to_none != 0 every gradient becomes None; otherwise each existing
 * gradient is detached from any graph and filled with zeros in place by a
 * dispatched zero_ (on its device's kernel; its version counter goes up).
 * Parameters without a gradient are left alone.
 * Errors: DISP_ERR_INVALID_ARG (NULL opt), or what zeroing reports.
 * Not thread-safe.
 */
DISP_API disp_status disp_optim_zero_grad(disp_optimizer *opt, int set_to_none);

/*
 * disp_optim_free - releases the optimizer's parameter references and its
 * state. NULL ok. Not thread-safe (no other call on opt may be running).
 */
DISP_API void disp_optim_free(disp_optimizer *opt);

/* disp_optim_param_count - the number of parameters; 0 for NULL. Not thread-safe. */
DISP_API size_t disp_optim_param_count(const disp_optimizer *opt);

/*
 * disp_optim_lr / disp_optim_set_lr - the learning rate (param_groups[0]
 * ['lr']), for schedules. disp_optim_lr returns NaN for NULL. set_lr
 * refuses a negative or NaN lr ("Invalid learning rate: -1.0") and a NULL
 * opt (DISP_ERR_INVALID_ARG). Not thread-safe.
 */
DISP_API double disp_optim_lr(const disp_optimizer *opt);
DISP_API disp_status disp_optim_set_lr(disp_optimizer *opt, double lr);

/*
 * disp_optim_state - one state tensor of parameter `index`, by PyTorch's
 * name: "momentum_buffer" (SGD), "exp_avg", "exp_avg_sq", "max_exp_avg_sq"
 * (Adam, AdamW with amsgrad). *out gets a borrowed reference, valid until
 * the optimizer is freed, or NULL when that state does not exist yet (Note
 * [Optimizer state]). *step gets the parameter's step count (Adam, AdamW;
 * 0 for SGD and before the first step); step may be NULL.
 * Errors: DISP_ERR_INVALID_ARG (NULL opt, name or out; index out of range;
 * a name this optimizer has no state of). Not thread-safe.
 */
DISP_API disp_status disp_optim_state(const disp_optimizer *opt, size_t index, const char *name,
                                      disp_tensor **out, int64_t *step);

/*
 * disp_optim_set_state - restores one state tensor of parameter `index`
 * (PyTorch's optimizer.load_state_dict, one entry): the state `name` (as
 * disp_optim_state names them) becomes a contiguous copy of value, and for
 * Adam and AdamW the parameter's step count becomes `step` (>= 1; SGD
 * ignores it). value must have the parameter's sizes, dtype and device.
 * The optimizer's options (lr, betas, ...) are the caller's to set.
 * Restoring every state of every parameter that has one, then stepping,
 * gives the steps an uninterrupted run would have taken.
 * Errors (DISP_ERR_INVALID_ARG, nothing changed): NULL opt, name or value;
 * index out of range; a name this optimizer has no state of
 * ("max_exp_avg_sq" without amsgrad); a step below 1 for Adam/AdamW; a value
 * unlike the parameter. DISP_ERR_NO_MEMORY. Not thread-safe.
 */
DISP_API disp_status disp_optim_set_state(disp_optimizer *opt, size_t index, const char *name,
                                          disp_tensor *value, int64_t step);

#ifdef __cplusplus
}
#endif

#endif /* DISP_OPTIM_H */
