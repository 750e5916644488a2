/*
 * accumulate.c - AccumulateGrad, the node that adds a gradient into a leaf
 * (PyTorch's torch/csrc/autograd/functions/accumulate_grad.cpp).
 *
 * The node holds its leaf; the leaf's meta points back weakly (Note [Who
 * holds whom]), cleared here when the node dies.
 */
#include "argcheck_internal.h"
#include "error_internal.h"
#include "record_internal.h"

disp_node *disp__accumulator_new(disp_tensor *leaf);

static disp_tensor *leaf_of(const disp_node *n) { return n->state; }

/* A gradient the leaf may keep as it is: nobody else holds it, it is
 * outside any graph, and it is laid out like the leaf (1.13's
 * obeys_layout_contract, for dense tensors). */
static int can_steal(disp_tensor *g, disp_tensor *leaf, size_t refs_ok) {
  if (disp_grad_mode_enabled() || disp_tensor_refcount(g) > refs_ok || disp_tensor_grad_fn(g)) return 0;
  if (disp_tensor_is_contiguous(g) && disp_tensor_is_contiguous(leaf)) return 1;
  int nd = disp_tensor_ndim(g);
  for (int i = 0; i < nd; i++)
    if (disp_tensor_strides(g)[i] != disp_tensor_strides(leaf)[i]) return 0;
  return 1;
}

/* The new value of leaf.grad: 1.13's accumulateGrad without sparse
 * tensors. Without create_graph an existing grad is updated in place. */
static disp_status accumulate(disp_tensor *leaf, ag_meta *m, disp_tensor *g, size_t refs_ok) {
  disp_tensor *next = NULL;
  disp_status st = DISP_OK;
  if (!m->grad) {
    if (can_steal(g, leaf, refs_ok)) next = disp_tensor_retain(g);
    else st = disp_aten_clone(g, disp_tensor_is_contiguous(leaf) ? DISP_MEMORY_FORMAT_CONTIGUOUS
                                                                 : DISP_MEMORY_FORMAT_PRESERVE, &next);
  } else if (!disp_grad_mode_enabled()) {
    disp_tensor *same;
    st = disp_aten_add__Tensor(m->grad, g, disp_scalar_int(1), &same);
    disp_tensor_release(same);
    return st;
  } else {
    st = disp_aten_add_Tensor(m->grad, g, disp_scalar_int(1), &next);
  }
  if (st != DISP_OK) return st;
  disp_tensor_release(m->grad);
  m->grad = next;
  return DISP_OK;
}

static disp_status apply(disp_node *n, disp_tensor *const *grads, disp_tensor **out) {
  (void)out;
  disp_tensor *leaf = leaf_of(n), *g = disp_tensor_retain(grads[0]);
  if (!g) return DISP_OK;
  ag_meta *m = disp__meta_ensure(leaf);
  disp_status st = m ? disp__hooks_run(&m->leaf_hooks, -1, &g) : DISP_ERR_NO_MEMORY;
  /* The engine's buffer and this function hold the gradient when no hook replaced it. */
  if (st == DISP_OK && g) st = accumulate(leaf, m, g, g == grads[0] ? 2 : 1);
  disp_tensor_release(g);
  return st;
}

static void destroy_state(disp_node *n) {
  disp_tensor *leaf = leaf_of(n);
  ag_meta *m = disp__meta_get(leaf);
  if (m && m->accumulator == n) m->accumulator = NULL;
  disp_tensor_release(leaf);
}

static const ag_node_ops accumulate_ops = {apply, NULL, destroy_state};

disp_node *disp__accumulator_new(disp_tensor *leaf) {
  disp_node *n = disp__node_new(&accumulate_ops, "torch::autograd::AccumulateGrad", 1, 0);
  if (!n) return NULL;
  n->state = disp_tensor_retain(leaf);
  n->seq = UINT64_MAX; /* PyTorch: accumulators run as soon as they are ready */
  return n;
}

disp_tensor *disp_node_variable(const disp_node *n) {
  DISP_REFUSE_NULL_PTR(n);
  return n->ops == &accumulate_ops ? leaf_of(n) : NULL;
}
