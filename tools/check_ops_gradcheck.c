/*
 * check_ops_gradcheck.c - `disp check-ops --gradcheck`: disp_gradcheck and
 * disp_gradgradcheck on every gradient case (a case with `requires_grad`
 * lines), so that every operator with reference cases has its formulas
 * checked against finite differences without a hand-written test: a new
 * operator's row, kernel, backward and reference cases are enough.
 *
 * The inputs are the case's own (float64 in every gradient case): each
 * `requires_grad` input becomes a contiguous copy that requires grad (an
 * expanded input cannot be perturbed one element at a time); the function
 * under check pushes the case's arguments with those inputs in place and
 * returns the outputs that have a `grad_output` line. An input the operator
 * writes (add_'s self) is passed as a differentiable copy, as --grad does.
 *
 * Reference cases like to sit where an operator is not differentiable
 * (relu at 0, a tie of max, x at clamp's bound), where finite differences
 * disagree with any formula. A case that fails at its own point is checked
 * again at a nearby point (each input moved by 1e-3 to 3e-3, signs from a
 * fixed stream), which leaves such points with probability one; a wrong
 * formula fails there too. A case that fails both ways is checked once
 * more against 1.13 itself: when the gradient 1.13 recorded (its `grad`
 * lines) disagrees with finite differences of the same function too, the
 * disagreement is 1.13's (mse_loss with a broadcast target doubles the
 * target's gradient) and `--grad` holds us to 1.13's numbers: skipped,
 * with the reason. Outputs of a dtype below float64 (to.dtype to
 * float32) cannot be differentiated numerically at PyTorch's tolerances:
 * those cases are skipped with the reason.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_ops.h"
#include "disp/aten.h"
#include "disp/gradcheck.h"
#include "disp/tensor.h"

typedef struct gc_ctx {
  const chk_case *c;
  const disp_op *op;
  const chk_opts *o;
  chk_built *b;
} gc_ctx;

/* Pushes the case's arguments with input k's slot holding inputs[k] (a
 * differentiable copy for a written one), calls the operator and hands
 * back the returns that have a grad_output line. */
static disp_status call_case(disp_tensor *const *inputs, size_t n, disp_tensor **outputs, size_t *nout, void *p) {
  gc_ctx *g = p;
  const chk_case *c = g->c;
  disp_tensor *saved[64] = {0};
  disp_tensor **slots[64] = {0};
  disp_status st = DISP_OK;
  for (size_t k = 0; k < n && k < 64 && st == DISP_OK; k++) {
    size_t a = 0;
    slots[k] = chk_label_slot(c, g->b, c->requires_grad[k], &a);
    saved[k] = *slots[k];
    if (disp_schema_argument_is_write(disp_op_schema(g->op), a)) {
      st = disp_aten_mul_Scalar(inputs[k], disp_scalar_int(1), slots[k]);
    } else *slots[k] = disp_tensor_retain(inputs[k]);
  }
  disp_stack *stack = st == DISP_OK ? disp_stack_new() : NULL;
  if (st == DISP_OK && !stack) st = disp_set_error(DISP_ERR_NO_MEMORY, "out of memory");
  for (size_t a = 0; a < c->nargs && st == DISP_OK; a++) st = chk_push_arg(stack, &c->args[a].v, &g->b[a], g->o);
  if (st == DISP_OK) st = disp_call_boxed(g->op, stack);
  size_t k = 0;
  for (; st == DISP_OK && k < c->ngrad_outputs && k < *nout; k++) {
    disp_tensor *t = c->grad_outputs[k].ret >= 0 ? chk_flat_return(stack, (size_t)c->grad_outputs[k].ret) : NULL;
    if (!t) st = disp_set_error(DISP_ERR_INVALID_ARG, "return %d is not a tensor", c->grad_outputs[k].ret);
    else outputs[k] = disp_tensor_retain(t);
  }
  *nout = k;
  disp_stack_free(stack);
  for (size_t j = 0; j < n && j < 64; j++) {
    if (!slots[j]) continue;
    disp_tensor_release(*slots[j]);
    *slots[j] = saved[j];
  }
  return st;
}

/* The requires_grad inputs as contiguous float64 copies that require grad
 * (new references in in[]). */
static disp_status make_inputs(const chk_case *c, chk_built *b, disp_tensor **in) {
  for (size_t k = 0; k < c->nrequires_grad; k++) {
    size_t a = 0;
    disp_tensor **slot = chk_label_slot(c, b, c->requires_grad[k], &a);
    if (!slot || !*slot) return disp_set_error(DISP_ERR_INVALID_ARG, "requires_grad names no tensor input '%s'",
                                               c->requires_grad[k]);
    disp_status st = disp_aten_clone(*slot, DISP_MEMORY_FORMAT_CONTIGUOUS, &in[k]);
    if (st == DISP_OK) st = disp_tensor_set_requires_grad(in[k], 1);
    if (st != DISP_OK) return st;
  }
  return DISP_OK;
}

/* Moves every element of the inputs by 1e-3 to 3e-3, either way
 * (xorshift64 from a fixed seed: runs repeat). */
static void move_away(disp_tensor *const *in, size_t n) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t k = 0; k < n; k++) {
    double *p = disp_tensor_data_ptr(in[k]);
    for (int64_t i = 0; p && i < disp_tensor_numel(in[k]); i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      double u = (double)(x >> 11) / 9007199254740992.0;
      p[i] += (x & 1 ? 1 : -1) * (1e-3 + 2e-3 * u);
    }
  }
}

/* Whether the case's gradient outputs are float64, as finite differences
 * at PyTorch's tolerances need. */
static int float64_outputs(const chk_case *c) {
  for (size_t k = 0; k < c->ngrad_outputs; k++) {
    const chk_value *v = c->grad_outputs[k].ret >= 0 ? chk_flat_out(c, (size_t)c->grad_outputs[k].ret) : NULL;
    if (!v || v->kind != CHK_TENSOR || v->t.dtype != DISP_DTYPE_FLOAT64) return 0;
  }
  return 1;
}

static disp_status check_at(gc_ctx *g, disp_tensor *const *in, size_t n, const char **which) {
  *which = "gradcheck";
  disp_status st = disp_gradcheck(call_case, g, in, n, NULL);
  if (st != DISP_OK) return st;
  *which = "gradgradcheck";
  return disp_gradgradcheck(call_case, g, in, n, NULL, 0, NULL);
}

/* sum_k <grad_output_k, output_k(in)> for the vector-Jacobian product. */
static disp_status weighted_sum(gc_ctx *g, disp_tensor *const *in, size_t n, disp_tensor *const *gout, double *sum) {
  disp_tensor *outs[DISP_GRADCHECK_MAX_OUTPUTS] = {0};
  size_t nout = DISP_GRADCHECK_MAX_OUTPUTS;
  disp_status st = call_case(in, n, outs, &nout, g);
  *sum = 0;
  for (size_t k = 0; k < nout; k++) {
    disp_tensor *oc = NULL;
    if (st == DISP_OK) st = disp_aten_clone(outs[k], DISP_MEMORY_FORMAT_CONTIGUOUS, &oc);
    const double *o = oc ? disp_tensor_data_ptr(oc) : NULL, *w = disp_tensor_data_ptr(gout[k]);
    for (int64_t i = 0; st == DISP_OK && o && w && i < disp_tensor_numel(oc); i++) *sum += o[i] * w[i];
    disp_tensor_release(oc);
    disp_tensor_release(outs[k]);
  }
  return st;
}

/* Whether 1.13's recorded input gradients (the `grad` lines) disagree with
 * central differences of <grad_output, f> at the case's inputs (gradcheck's
 * eps and tolerances). */
static int recorded_grads_disagree(gc_ctx *g, disp_tensor *const *in, size_t n) {
  const chk_case *c = g->c;
  disp_tensor *gout[DISP_GRADCHECK_MAX_OUTPUTS] = {0};
  int disagree = 0;
  size_t ng = c->ngrad_outputs < DISP_GRADCHECK_MAX_OUTPUTS ? c->ngrad_outputs : DISP_GRADCHECK_MAX_OUTPUTS;
  disp_status st = DISP_OK;
  for (size_t k = 0; k < ng && st == DISP_OK; k++) {
    disp_tensor *t = NULL;
    st = chk_build_tensor(&c->grad_outputs[k].v.t, g->o->device, &t);
    if (st == DISP_OK) st = disp_aten_clone(t, DISP_MEMORY_FORMAT_CONTIGUOUS, &gout[k]);
    disp_tensor_release(t);
  }
  for (size_t j = 0; j < n && st == DISP_OK && !disagree; j++) {
    const chk_grad *want = NULL;
    for (size_t k = 0; k < c->ngrads; k++)
      if (!strcmp(c->grads[k].label, c->requires_grad[j])) want = &c->grads[k];
    disp_tensor *wt = NULL, *wc = NULL;
    if (!want || chk_build_tensor(&want->v.t, g->o->device, &wt) != DISP_OK ||
        disp_aten_clone(wt, DISP_MEMORY_FORMAT_CONTIGUOUS, &wc) != DISP_OK) {
      disp_tensor_release(wt);
      continue;
    }
    double *x = disp_tensor_data_ptr(in[j]);
    const double *w = disp_tensor_data_ptr(wc);
    for (int64_t i = 0; i < disp_tensor_numel(in[j]) && !disagree; i++) {
      double keep = x[i], hi = 0, lo = 0;
      x[i] = keep + 1e-6;
      st = weighted_sum(g, in, n, gout, &hi);
      x[i] = keep - 1e-6;
      if (st == DISP_OK) st = weighted_sum(g, in, n, gout, &lo);
      x[i] = keep;
      double num = (hi - lo) / 2e-6;
      if (st != DISP_OK || !(fabs(num - w[i]) <= 1e-5 + 1e-3 * fabs(w[i]))) disagree = 1;
    }
    disp_tensor_release(wt);
    disp_tensor_release(wc);
  }
  for (size_t k = 0; k < ng; k++) disp_tensor_release(gout[k]);
  return disagree && st == DISP_OK;
}

/* Copies the case's values back into the inputs (after move_away). */
static disp_status restore_inputs(const chk_case *c, chk_built *b, disp_tensor *const *in) {
  for (size_t k = 0; k < c->nrequires_grad; k++) {
    size_t a = 0;
    disp_tensor **slot = chk_label_slot(c, b, c->requires_grad[k], &a), *fresh = NULL;
    disp_status st = disp_aten_clone(*slot, DISP_MEMORY_FORMAT_CONTIGUOUS, &fresh);
    if (st != DISP_OK) return st;
    memcpy(disp_tensor_data_ptr(in[k]), disp_tensor_data_ptr(fresh), (size_t)disp_tensor_numel(fresh) * sizeof(double));
    disp_tensor_release(fresh);
  }
  return DISP_OK;
}

void chk_gradcheck(const chk_case *c, const disp_op *op, const chk_opts *o, chk_report *r) {
  if (!float64_outputs(c)) {
    r->skip = 1;
    snprintf(r->msg, sizeof r->msg, "an output below float64: finite differences need float64");
    return;
  }
  if (c->nrequires_grad > 64 || c->ngrad_outputs == 0) {
    r->skip = 1;
    snprintf(r->msg, sizeof r->msg, "no output gets a gradient");
    return;
  }
  chk_built *b = calloc(c->nargs ? c->nargs : 1, sizeof *b);
  disp_tensor **in = calloc(c->nrequires_grad, sizeof *in);
  disp_status st = b && in ? DISP_OK : disp_set_error(DISP_ERR_NO_MEMORY, "out of memory");
  for (size_t a = 0; a < c->nargs && st == DISP_OK; a++) st = chk_build_arg(&c->args[a].v, o, &b[a]);
  if (st == DISP_OK) st = make_inputs(c, b, in);
  if (st != DISP_OK) {
    chk_addf(r, CL_HARNESS, "building the gradcheck inputs: %s", disp_last_error());
  } else {
    gc_ctx g = {c, op, o, b};
    const char *which = NULL;
    if (check_at(&g, in, c->nrequires_grad, &which) != DISP_OK) {
      char first[sizeof r->msg];
      move_away(in, c->nrequires_grad);
      if (check_at(&g, in, c->nrequires_grad, &which) != DISP_OK) {
        snprintf(first, sizeof first, "%s", disp_last_error());
        if (restore_inputs(c, b, in) == DISP_OK && recorded_grads_disagree(&g, in, c->nrequires_grad)) {
          r->skip = 1;
          snprintf(r->msg, sizeof r->msg, "1.13's own recorded gradient disagrees with finite differences here");
        } else chk_addf(r, CL_GRAD, "%s (at the case's inputs and near them): %s", which, first);
      }
    }
  }
  for (size_t k = 0; in && k < c->nrequires_grad; k++) disp_tensor_release(in[k]);
  free(in);
  if (b) chk_built_free(b, c->nargs);
}
