/*
 * optim_internal.h - the optimizer object shared by optim.c (creation,
 * checks, zero_grad, accessors) and the update rules: the CPU loops
 * (optim_sgd.c, optim_adam.c) and the dispatched device path
 * (optim_device.c).
 */
#ifndef DISP_OPTIM_INTERNAL_H
#define DISP_OPTIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "disp/optim.h"

typedef enum optim_kind { OPTIM_SGD, OPTIM_ADAM, OPTIM_ADAMW } optim_kind;

/* The state tensors of one parameter, by slot; NULL until created. */
enum { OPTIM_MOMENTUM_BUFFER = 0, OPTIM_EXP_AVG = 0, OPTIM_EXP_AVG_SQ = 1, OPTIM_MAX_EXP_AVG_SQ = 2,
       OPTIM_NSTATE = 3 };

/* The slot of state `name` ("momentum_buffer", "exp_avg", ...) for opt's
 * kind, or -1 for a name it has no state of (optim.c). */
int disp__optim_state_slot(const disp_optimizer *opt, const char *name);

typedef struct optim_state {
  disp_tensor *t[OPTIM_NSTATE];
  int64_t step; /* Adam/AdamW: steps taken by this parameter */
} optim_state;

struct disp_optimizer {
  optim_kind kind;
  disp_sgd_options sgd;   /* OPTIM_SGD */
  disp_adam_options adam; /* OPTIM_ADAM, OPTIM_ADAMW */
  size_t n;
  disp_tensor **params; /* n retained references */
  optim_state *state;   /* n entries */
};

/*
 * One parameter's update with its gradient `g` (contiguous, the parameter's
 * dtype and sizes: checked) and its state (allocated: the step's first
 * phase did it). Bumps the version counters PyTorch's in-place ops would.
 * Cannot fail. Precondition: grad mode off.
 */
void disp__optim_sgd_update(disp_optimizer *opt, size_t i, disp_tensor *g);
void disp__optim_adam_update(disp_optimizer *opt, size_t i, disp_tensor *g);

/*
 * Which path updates a parameter (Note [Optimizer devices] in
 * disp/optim.h): a CPU parameter the loops of optim_sgd.c / optim_adam.c,
 * on its data; any other (a backend's device, Meta) optim_device.c's
 * dispatched tensor operations, so the host never reads device memory.
 * One optimizer may mix both. Whether parameter p takes the dispatched
 * path (it is not on the CPU):
 */
int disp__optim_on_device(const disp_tensor *p);

/*
 * The dispatched updates of one parameter with its gradient `g` (any
 * strides; dtype, sizes and device checked). SGD creates its momentum
 * buffer on the first step, as PyTorch's clone; Adam's state exists
 * (allocated by the step's first phase). A kernel failing half way returns
 * its error and leaves what 1.13's loop leaves after an exception: the
 * tensors updated so far, Adam's step count already advanced (step_t += 1
 * comes first), a new SGD momentum buffer not kept (1.13 stores it in the
 * state after the loop). Precondition: grad mode off.
 */
disp_status disp__optim_sgd_device_update(disp_optimizer *opt, size_t i, disp_tensor *g);
disp_status disp__optim_adam_device_update(disp_optimizer *opt, size_t i, disp_tensor *g);

/*
 * Adam's scalars for one step, in double as Python holds them: shared by
 * the loops and the dispatched path so both compute them the same way.
 */
typedef struct optim_adam_coef {
  double beta1, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, decay;
  double bias_correction2_sqrt, neg_step_size;
  int adamw, maximize;
} optim_adam_coef;

/* The coefficients of step number `step` (1 for the first). */
optim_adam_coef disp__optim_adam_coef(const disp_optimizer *opt, int64_t step);

/*
 * A zero-filled tensor shaped as `like` (zeros_like with preserve format,
 * for a contiguous `like`): *out is a new reference.
 */
disp_status disp__optim_zeros_like(disp_tensor *like, disp_tensor **out);

/*
 * Note [Optimizer rounding]
 * ATen's CPU kernels compute `a + alpha * b` (add, add_ with alpha) and
 * `self + value * t1 * t2` (addcmul) with one rounding, as a fused
 * multiply-add: vec::fmadd in the vectorized loop, and the compiler's
 * contraction of the scalar loop, on the AVX2 machines libtorch 1.13 picks
 * that code for. The update loops use fma() at those places, and separate
 * roundings everywhere else (mul_, div, add_ of a scalar, addcdiv), which
 * makes them agree with libtorch bit for bit (tests/test_optim.c).
 * fma() is exact on every machine; where the CPU has the instruction the
 * loops are compiled a second time for it (OPTIM_FMA_TARGET), since libm's
 * fma() is a slow call.
 */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define OPTIM_FMA_CLONES 1
#define OPTIM_FMA_TARGET __attribute__((target("avx2,fma")))
#else
#define OPTIM_FMA_CLONES 0
#endif

/* Whether the OPTIM_FMA_TARGET loops run: the CPU kernels' capability is
 * not "default" (disp/cpu.h). Thread-safe. */
int disp__optim_cpu_has_fma(void);

/* Bumps t's version counter `times` times (one per in-place op of PyTorch's update). */
void disp__optim_bump(disp_tensor *t, int times);

#endif /* DISP_OPTIM_INTERNAL_H */
