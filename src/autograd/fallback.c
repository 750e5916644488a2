/*
 * fallback.c - the autograd fallback's "warn" and "error" modes (PyTorch's
 * basicAutogradNotImplementedFallback and torch._C._set_autograd_fallback_mode).
 *
 * An operator with no autograd kernel, called in grad mode with an input
 * that requires grad, runs below autograd as in the "nothing" mode; its
 * floating-point outputs then get a node that, when a backward pass reaches
 * it, warns (and lets no gradient through) or fails, naming the operator.
 * Every tensor argument is treated as differentiable: nothing else is known.
 */
#include <stdlib.h>

#include "alloc_internal.h"
#include "autograd_fallback_internal.h"
#include "error_internal.h"
#include "record_internal.h"

typedef struct not_implemented {
  const char *op;
  disp_autograd_fallback_mode mode;
} not_implemented;

static disp_status not_implemented_apply(disp_node *n, disp_tensor *const *grads, disp_tensor **out) {
  (void)grads, (void)out;
  const not_implemented *s = n->state;
  if (s->mode == DISP_AUTOGRAD_FALLBACK_ERROR)
    return disp__fail(DISP_ERR_KERNEL, "the derivative for '%s' is not implemented.", s->op);
  disp__warn("%s: an autograd kernel was not registered to the Autograd key(s) but we are trying to backprop "
             "through it. This may lead to silently incorrect behavior. If your operator is differentiable, "
             "please ensure you have registered an autograd kernel to the correct Autograd key (e.g. "
             "DispatchKey::Autograd, DispatchKey::CompositeImplicitAutograd). If your operator is not "
             "differentiable, or to squash this warning and use the previous behavior, please register "
             "torch::CppFunction::makeFallthrough() to DispatchKey::Autograd.",
             s->op);
  return DISP_OK;
}

static void not_implemented_free(disp_node *n) { disp__free(n->state); }

static const ag_node_ops not_implemented_ops = {not_implemented_apply, NULL, not_implemented_free};

static disp_tensor *tensor_at(const disp_value *v, size_t k) {
  if (v->tag == DISP_VALUE_TENSOR) return k == 0 ? v->u.tensor : NULL;
  if (v->tag == DISP_VALUE_TENSOR_LIST) return k < v->u.tensors.len ? v->u.tensors.data[k] : NULL;
  return NULL;
}

static size_t tensors_in(const disp_value *v) {
  return v->tag == DISP_VALUE_TENSOR ? 1 : v->tag == DISP_VALUE_TENSOR_LIST ? v->u.tensors.len : 0;
}

/* Edges to every tensor argument that requires grad; 0 edges: none does. */
static uint32_t count_requiring(disp_value *args, size_t nargs) {
  uint32_t n = 0;
  for (size_t i = 0; i < nargs; i++)
    for (size_t k = 0; k < tensors_in(&args[i]); k++)
      if (disp__ag_requires(tensor_at(&args[i], k))) n++;
  return n;
}

static disp_status node_for(const disp_op *op, disp_value *args, size_t nargs, uint32_t nedges, uint32_t nrets,
                            disp_node **out) {
  not_implemented *s = disp__malloc(sizeof *s);
  disp_node *n = s ? disp__node_new(&not_implemented_ops, "NotImplemented", nrets, nedges) : NULL;
  *out = NULL;
  if (!n) {
    disp__free(s);
    return disp__fail(DISP_ERR_NO_MEMORY, "autograd: out of memory recording %s", disp_op_name(op));
  }
  s->op = disp_op_name(op);
  s->mode = disp_autograd_fallback_mode_get();
  n->state = s;
  n->fwd_op = s->op;
  if (s->mode == DISP_AUTOGRAD_FALLBACK_WARN) n->name = "WarnNotImplemented";
  uint32_t e = 0;
  for (size_t i = 0; i < nargs; i++)
    for (size_t k = 0; k < tensors_in(&args[i]); k++) {
      disp_tensor *t = tensor_at(&args[i], k);
      if (!disp__ag_requires(t)) continue;
      disp_status st = disp__edge_set(n, e++, t);
      if (st != DISP_OK) {
        disp__node_release(n);
        return st;
      }
    }
  *out = n;
  return DISP_OK;
}

/* An out= variant: a keyword-only argument the op writes. */
static int has_out_argument(const disp_schema *s) {
  for (size_t i = 0; i < disp_schema_num_arguments(s); i++)
    if (disp_schema_argument_kwarg_only(s, i) && disp_schema_argument_is_write(s, i)) return 1;
  return 0;
}

static disp_status below(const disp_op *op, disp_keyset ks, disp_stack *st) {
  disp_tls_state g = disp_tls_below_adinplaceorview_push();
  disp_status s = disp_redispatch_boxed(op, disp__ag_below(ks), st);
  disp_tls_restore(g);
  return s;
}

disp_status disp__ag_fallback(const disp_op *op, disp_keyset ks, disp_stack *st, void *user_data) {
  (void)user_data;
  const disp_schema *s = disp_op_schema(op);
  size_t nargs = s ? disp_schema_num_arguments(s) : 0, nrets = s ? disp_schema_num_returns(s) : 0;
  if (disp_autograd_fallback_mode_get() == DISP_AUTOGRAD_FALLBACK_NOTHING || !disp_grad_mode_enabled() || !s ||
      disp_schema_is_vararg(s) || disp_stack_size(st) < nargs)
    return below(op, ks, st);
  disp_value *args = disp_stack_at(st, disp_stack_size(st) - nargs);
  uint32_t nedges = args ? count_requiring(args, nargs) : 0;
  if (!nedges) return below(op, ks, st);
  for (size_t i = 0; i < nargs; i++)
    for (size_t k = 0; disp_schema_argument_is_write(s, i) && k < tensors_in(&args[i]); k++) {
      disp_tensor *t = tensor_at(&args[i], k);
      if (disp__ag_requires(t) && disp_tensor_is_leaf(t)) { /* 1.13's check_inplace */
        disp_stack_drop(st, nargs);
        return disp__fail(DISP_ERR_INVALID_ARG,
                          "a leaf Variable that requires grad is being used in an in-place operation.");
      }
    }
  if (has_out_argument(s)) {
    disp_stack_drop(st, nargs);
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "%s(): functions with out=... arguments don't support automatic differentiation, but one of "
                      "the arguments requires grad.",
                      disp_schema_base_name(s));
  }
  disp_node *n;
  disp_status made = node_for(op, args, nargs, nedges, (uint32_t)nrets, &n);
  if (made != DISP_OK) {
    disp_stack_drop(st, nargs);
    return made;
  }
  ag_held inputs = AG_HELD_INIT(inputs);
  for (size_t i = 0; i < nargs; i++)
    for (size_t k = 0; !disp_schema_argument_is_write(s, i) && k < tensors_in(&args[i]); k++)
      if (disp__held_add(&inputs, tensor_at(&args[i], k))) {
        disp__held_release(&inputs);
        disp__node_release(n);
        disp_stack_drop(st, nargs);
        return disp__fail(DISP_ERR_NO_MEMORY, "autograd: out of memory recording %s", disp_op_name(op));
      }
  disp_status rc = below(op, ks, st);
  for (size_t i = 0; rc == DISP_OK && i < nrets; i++) {
    disp_value *v = disp_stack_at(st, disp_stack_size(st) - nrets + i);
    if (v->tag == DISP_VALUE_TENSOR && disp_dtype_is_floating(disp_tensor_dtype(v->u.tensor)) &&
        !disp__held_contains(&inputs, v->u.tensor) && disp__set_history(v->u.tensor, n, (uint32_t)i))
      rc = DISP_ERR_NO_MEMORY;
  }
  if (rc == DISP_ERR_NO_MEMORY && disp_stack_size(st) >= nrets) disp_stack_drop(st, nrets);
  disp__held_release(&inputs);
  disp__node_release(n);
  return rc;
}

void disp__ag_install_fallback(void) { disp__autograd_fallback_set_handler(disp__ag_fallback); }
