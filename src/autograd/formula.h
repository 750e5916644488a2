/*
 * formula.h - how a derivative formula is written (PyTorch's
 * derivatives.yaml entries, as C).
 *
 * A formula names its operator, the node PyTorch records for it, the
 * differentiable arguments (1.13's derivatives.yaml decides which), the
 * tensors the backward needs, and a backward function. record.c does
 * everything else for every formula alike: the requires_grad test, saving,
 * the redispatch below autograd, the node, the outputs' history. The engine
 * reduces a broadcast gradient to its input's shape and casts it to the
 * input's dtype (PyTorch's validate_outputs), so formulas return the
 * gradient in the forward's broadcast shape.
 *
 *   AG_BACKWARD(mul_backward) {
 *     disp_status st = DISP_OK;
 *     if (ag_needs(c, 0)) st = disp_aten_mul_Tensor(g[0], ag_saved(c, 1), &out[0]);
 *     if (st == DISP_OK && ag_needs(c, 1)) st = disp_aten_mul_Tensor(g[0], ag_saved(c, 0), &out[1]);
 *     return st;
 *   }
 * and, in the operator's manifest row (src/kernels/manifest.def),
 *   .grad = GRAD("MulBackward0", "self,other", "self@other,other@self", mul_backward)
 *
 * Backward functions call operators through the dispatcher (disp/aten.h),
 * so with create_graph they are recorded too (second derivatives), and a
 * backend's own kernel for e.g. threshold_backward is the one used.
 * Output gradients g[i] are borrowed and may be NULL when only some outputs
 * of a multi-output op got a gradient; the engine skips a node none of
 * whose outputs did. Results are new references in out[j], one per
 * differentiable input in the order of `inputs`; leave NULL for "zero".
 * Outputs of an integer or bool dtype (indices, masks) never get a
 * gradient.
 *
 * Note [Saving only what a gradient uses]
 * 1.13's generated VariableType saves an input only when a derivative that
 * uses it will be computed: gen_variable_type.py's guard_for wraps the
 * save in `if (grad_fn->should_compute_output(k))` when the input is used
 * by the formula of exactly one differentiable input k (and the operator
 * has more than one, none a Tensor[], and "backward" is not in its name).
 * A formula writes that guard as `name@input`: `"self@mat2,mat2@self"` for
 * mm saves self only when mat2's gradient is wanted and mat2 only for
 * self's. A saved tensor that was not saved reads back as NULL, so a
 * backward reads it only under ag_needs(c, k) of its guard. An unsaved
 * input is not version-checked, so it may be modified in place before the
 * backward pass, as in 1.13. Outputs are always saved.
 */
#ifndef DISP_AUTOGRAD_FORMULA_H
#define DISP_AUTOGRAD_FORMULA_H

#include "autograd_internal.h"
#include "disp/aten.h"

typedef struct ag_ctx ag_ctx;

typedef disp_status (*ag_backward_fn)(ag_ctx *c, disp_tensor *const *grads, disp_tensor **out);

typedef struct ag_formula {
  const char *op;     /* qualified name with overload: "aten::mul.Tensor" */
  const char *node;   /* PyTorch's node name: "MulBackward0" */
  const char *inputs; /* differentiable arguments, comma-separated names */
  const char *saved;  /* argument names, "result" (first output) or "result1"...; "" for none
                       * (Note [Saving only what a gradient uses]) */
  ag_backward_fn backward;
  const char *nondiff; /* outputs derivatives.yaml marks not differentiable ("result1"); NULL none */
} ag_formula;

/* The i-th tensor of `saved`, version-checked (borrowed; NULL when it was
 * None). */
disp_tensor *ag_saved(ag_ctx *c, int i);

/* Forward argument `pos` (schema position) for non-tensor arguments. */
const disp_value *ag_arg(ag_ctx *c, int pos);
int64_t ag_int(ag_ctx *c, int pos);
double ag_double(ag_ctx *c, int pos);
int ag_bool(ag_ctx *c, int pos);
disp_scalar ag_scalar(ag_ctx *c, int pos);          /* None: kind DISP_SCALAR_NONE */
disp_int_list ag_int_list(ag_ctx *c, int pos);      /* borrowed from the node */
int ag_is_none(ag_ctx *c, int pos);

/* How many gradients the backward returns: one per differentiable
 * argument, one per element of a differentiable Tensor[] argument. */
int ag_num_inputs(ag_ctx *c);

/* How many output gradients g[] holds: one per return, one per element of
 * a Tensor[] return (split's pieces; an undefined one is NULL). */
int ag_num_outputs(ag_ctx *c);

/* Whether the j-th differentiable input needs a gradient. */
int ag_needs(ag_ctx *c, int j);

/* The j-th differentiable input's shape, dtype, device at forward time. */
const int64_t *ag_input_sizes(ag_ctx *c, int j, int *ndim);
/* Its strides (ndim of them; NULL for a tensor without strides) and
 * storage offset at forward time (1.13's saved self_sym_strides,
 * self_geometry). */
const int64_t *ag_input_strides(ag_ctx *c, int j);
int64_t ag_input_storage_offset(ag_ctx *c, int j);
disp_dtype ag_input_dtype(ag_ctx *c, int j);
disp_device ag_input_device(ag_ctx *c, int j);

/* Whether the backward pass records a graph (create_graph). */
int ag_create_graph(ag_ctx *c);

/* ---- helpers formulas share -------------------------------------------- */

/* A tensor of zeros with the j-th input's shape, dtype and device. */
disp_status ag_zeros_like_input(ag_ctx *c, int j, disp_tensor **out);

/* grad summed down to `sizes` (PyTorch's at::sum_to); a new reference (the
 * same tensor, retained, when the shapes agree). */
disp_status ag_sum_to(disp_tensor *grad, const int64_t *sizes, int ndim, disp_tensor **out);

/* A 0-dim tensor holding v with like's dtype and device (1.13's
 * at::scalar_tensor(v, grad.options())); a new reference. */
disp_status ag_scalar_like(disp_tensor *like, disp_scalar v, disp_tensor **out);

/* zeros_like(t): t's shape, dtype and device; a new reference. */
disp_status ag_zeros_like(disp_tensor *t, disp_tensor **out);

/* Zeros of `sizes` with like's dtype and device; a new reference. */
disp_status ag_zeros_sized(disp_tensor *like, const int64_t *sizes, int ndim, disp_tensor **out);

/* dim wrapped into [0, ndim) as PyTorch's maybe_wrap_dim (a 0-dim tensor
 * counts as 1-dim); the forward has already refused a dim out of range. */
int64_t ag_wrap_dim(int64_t dim, int ndim);

/* ---- the formula table ---------------------------------------------------- */

/* A backward function, named by a row of the operator manifest
 * (src/kernels/manifest.def, .grad = GRAD(..., name)):
 *   AG_BACKWARD(mul_backward) { ... }
 * defines disp__bw_mul_backward with the parameters c, g and out of
 * ag_backward_fn. The generated aten_backward.h declares every one the
 * manifest names, and the generated table (aten_formulas.c) refers to each,
 * so a row naming a missing one fails the link. */
#define AG_BACKWARD(name) disp_status disp__bw_##name(ag_ctx *c, disp_tensor *const *g, disp_tensor **out)
#include "aten_backward.h"

/* Generated from the manifest (aten_formulas.c): every formula, and every
 * operator 1.13 does not differentiate; register.c binds them. */
extern const ag_formula disp__ag_formulas[];
extern const size_t disp__ag_formula_count;
extern const char *const disp__ag_not_differentiable[];
extern const size_t disp__ag_not_differentiable_count;

#endif /* DISP_AUTOGRAD_FORMULA_H */
