/*
 * check_ops_grad.c - `disp check-ops --grad`: the gradient lines of a case
 * (`requires_grad`, `grad_output`, `grad`; shared/conformance/ops/README.md)
 * checked against disp_autograd_grad.
 *
 * A gradient case is run a second time, apart from the forward checks of
 * check_ops.c, on freshly built inputs: the named inputs become leaves that
 * require grad (copies of the file's tensors, with their exact geometry),
 * the operator is called through disp_call_boxed, and
 * disp_autograd_grad(outputs with a grad_output line, leaves, grad_outputs,
 * allow_unused) gives the gradients, compared by value with 1.13's.
 *
 * Tolerances: the float64 ones check-ops uses for float64 returns
 * (|got - want| <= 1e-7 + 1e-7 * |want|, README "Comparing"), since every
 * gradient case is float64. A leaf without a `grad` line got None from
 * PyTorch: 1.13's torch.autograd.grad returns None for an input no gradient
 * reached, and also when every gradient that reached it was undefined (a
 * formula returning an undefined tensor; there is no materialize_grads in
 * 1.13). So ours must be NULL, not zeros.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_ops.h"
#include "disp/aten.h"

/*
 * Makes the input `label` a leaf that requires grad (a new reference in
 * *leaf). An input the operator writes (`self` of add_) cannot be a leaf:
 * like PyTorch's reference run, it gets the gradient with respect to its
 * value before the call, so the call receives a differentiable copy of the
 * leaf instead. The copy is mul(leaf, 1) rather than clone: exact for every
 * value (-0.0, nan, inf), and its formula is one of the first ones, so an
 * in-place case checks the in-place formula only.
 */
static disp_status make_leaf(const chk_case *c, const disp_schema *schema, chk_built *b, const char *label,
                             disp_tensor **leaf) {
  size_t a = 0;
  disp_tensor **slot = chk_label_slot(c, b, label, &a);
  if (!slot) return disp_set_error(DISP_ERR_INVALID_ARG, "requires_grad names no tensor input '%s'", label);
  disp_status st = disp_tensor_set_requires_grad(*slot, 1);
  if (st != DISP_OK) return st;
  *leaf = disp_tensor_retain(*slot);
  if (!disp_schema_argument_is_write(schema, a)) return DISP_OK;
  disp_tensor *copy = NULL;
  st = disp_aten_mul_Scalar(*leaf, disp_scalar_int(1), &copy);
  if (st != DISP_OK) return st;
  disp_tensor_release(*slot);
  *slot = copy;
  return DISP_OK;
}

static const chk_grad *grad_line(const chk_case *c, const char *label) {
  for (size_t k = 0; k < c->ngrads; k++)
    if (!strcmp(c->grads[k].label, label)) return &c->grads[k];
  return NULL;
}

/* The returns with a grad_output line and those gradients (new references
 * in outs/gouts, c->ngrad_outputs of each); 0 after a failure in r. */
static int outputs_for_grad(const chk_case *c, disp_stack *stack, const chk_opts *o, chk_report *r,
                            disp_tensor **outs, disp_tensor **gouts) {
  for (size_t k = 0; k < c->ngrad_outputs; k++) {
    const chk_grad *g = &c->grad_outputs[k];
    disp_tensor *t = g->ret >= 0 ? chk_flat_return(stack, (size_t)g->ret) : NULL;
    if (!t) {
      chk_addf(r, CL_GRAD, "grad_output %d: return %d is not a tensor", g->ret, g->ret);
      return 0;
    }
    if (!disp_tensor_requires_grad(t)) {
      chk_addf(r, CL_GRAD, "out %d does not require grad (%s recorded no node)", g->ret, c->op);
      return 0;
    }
    outs[k] = disp_tensor_retain(t);
    if (chk_build_tensor(&g->v.t, o->device, &gouts[k]) != DISP_OK) {
      chk_addf(r, CL_HARNESS, "grad_output %d: %s", g->ret, disp_last_error());
      return 0;
    }
  }
  return 1;
}

/* Compares the forward returns of the gradient run by value: recording
 * must not change them. */
static void compare_forward(const chk_case *c, disp_stack *stack, const chk_opts *o, chk_report *r) {
  for (size_t i = 0; i < c->nouts && i < disp_stack_size(stack); i++) {
    disp_value *v = disp_stack_at(stack, i);
    if (c->outs[i].kind != CHK_TENSOR || v->tag != DISP_VALUE_TENSOR || !v->u.tensor) continue;
    char what[64];
    snprintf(what, sizeof what, "out %zu (inputs requiring grad)", i);
    chk_compare_tensor(r, what, v->u.tensor, &c->outs[i], 0, CL_VALUE, o);
  }
}

static void compare_grads(const chk_case *c, disp_tensor *const *grads, const chk_opts *o, chk_report *r) {
  for (size_t k = 0; k < c->nrequires_grad; k++) {
    const char *label = c->requires_grad[k];
    const chk_grad *want = grad_line(c, label);
    char what[96];
    snprintf(what, sizeof what, "grad %s", label);
    if (!want && grads[k]) chk_addf(r, CL_GRAD, "%s: a tensor, expected None", what);
    else if (want && !grads[k]) chk_addf(r, CL_GRAD, "%s: None, expected a tensor", what);
    else if (want) chk_compare_tensor(r, what, grads[k], &want->v, 0, CL_GRAD, o);
  }
  for (size_t k = 0; k < c->ngrads; k++) {
    size_t j = 0;
    while (j < c->nrequires_grad && strcmp(c->requires_grad[j], c->grads[k].label)) j++;
    if (j == c->nrequires_grad) chk_addf(r, CL_HARNESS, "grad %s: not a requires_grad input", c->grads[k].label);
  }
}

/* Builds every argument, makes the leaves and pushes the call's stack. */
static int prepare_call(const chk_case *c, const disp_op *op, const chk_opts *o, chk_report *r, chk_built *b,
                        disp_tensor **leaves, disp_stack *stack) {
  disp_status st = DISP_OK;
  for (size_t a = 0; a < c->nargs && st == DISP_OK; a++) st = chk_build_arg(&c->args[a].v, o, &b[a]);
  for (size_t k = 0; k < c->nrequires_grad && st == DISP_OK; k++)
    st = make_leaf(c, disp_op_schema(op), b, c->requires_grad[k], &leaves[k]);
  for (size_t a = 0; a < c->nargs && st == DISP_OK; a++) st = chk_push_arg(stack, &c->args[a].v, &b[a], o);
  if (st != DISP_OK) chk_addf(r, CL_HARNESS, "building the gradient run: %s", disp_last_error());
  return st == DISP_OK;
}

static void release_all(disp_tensor **t, size_t n) {
  if (!t) return;
  for (size_t k = 0; k < n; k++) disp_tensor_release(t[k]);
  free(t);
}

void chk_check_grad(const chk_case *c, const disp_op *op, const chk_opts *o, chk_report *r) {
  size_t nl = c->nrequires_grad, no = c->ngrad_outputs;
  chk_built *b = calloc(c->nargs ? c->nargs : 1, sizeof *b);
  disp_tensor **leaves = calloc(nl ? nl : 1, sizeof *leaves), **grads = calloc(nl ? nl : 1, sizeof *grads);
  disp_tensor **outs = calloc(no ? no : 1, sizeof *outs), **gouts = calloc(no ? no : 1, sizeof *gouts);
  disp_stack *stack = disp_stack_new();
  if (!b || !leaves || !grads || !outs || !gouts || !stack) {
    chk_addf(r, CL_HARNESS, "out of memory");
  } else if (prepare_call(c, op, o, r, b, leaves, stack)) {
    if (disp_call_boxed(op, stack) != DISP_OK) {
      chk_addf(r, CL_GRAD, "the call with inputs requiring grad failed: %s", disp_last_error());
    } else if (outputs_for_grad(c, stack, o, r, outs, gouts)) {
      compare_forward(c, stack, o, r);
      /* no grad_output line: no return got a gradient, every leaf None */
      if (no && disp_autograd_grad(outs, no, leaves, nl, gouts, 0, 0, 1, grads) != DISP_OK)
        chk_addf(r, CL_GRAD, "disp_autograd_grad: %s", disp_last_error());
      else compare_grads(c, grads, o, r);
    }
  }
  disp_stack_free(stack);
  release_all(outs, no);
  release_all(gouts, no);
  release_all(grads, nl);
  release_all(leaves, nl);
  if (b) chk_built_free(b, c->nargs);
}
