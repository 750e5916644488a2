/*
 * meta.c - the autograd data a tensor carries (grad, grad_fn, a leaf's
 * accumulator, hooks) and the public functions that read and set it.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "argcheck_internal.h"
#include "autograd_internal.h"
#include "error_internal.h"
#include "tensor/objcache.h"
#include "tensor/tensor_internal.h"

void disp__weak_release(ag_weak *w) {
  if (w && atomic_fetch_sub_explicit(&w->refs, 1, memory_order_acq_rel) == 1) disp__free(w);
}

static void hooks_free(ag_hook *h) {
  for (ag_hook *nx; h; h = nx) {
    nx = h->next;
    if (h->destroy) h->destroy(h->ctx);
    if (h->retain) disp__weak_release(h->retain);
    disp__free(h);
  }
}

static void meta_destroy(void *p) {
  ag_meta *m = p;
  disp_tensor_release(m->grad);
  disp__node_release(m->grad_fn);
  if (m->weak) {
    m->weak->t = NULL;
    disp__weak_release(m->weak);
  }
  hooks_free(m->leaf_hooks);
  disp_tensor_release(m->view_base);
  disp__cache_put(DISP__CACHE_AG_META, m);
}

/* Metas come from the thread's block cache (objcache.h): every view gets
 * one (view_meta.c), most of them short-lived. */
ag_meta *disp__meta_ensure(disp_tensor *t) {
  ag_meta *m = disp__meta_get(t);
  if (m) return m;
  m = disp__cache_get(DISP__CACHE_AG_META, sizeof *m);
  if (!m) {
    disp__fail(DISP_ERR_NO_MEMORY, "autograd: out of memory for a tensor's autograd metadata");
    return NULL;
  }
  memset(m, 0, sizeof *m);
  disp__tensor_set_autograd_meta(t, m, meta_destroy);
  return m;
}

int disp__set_history(disp_tensor *t, disp_node *node, uint32_t output_nr) {
  ag_meta *m = node || disp__meta_get(t) ? disp__meta_ensure(t) : NULL;
  if (node && !m) return 1;
  if (m) {
    disp__node_retain(node);
    disp__node_release(m->grad_fn);
    m->grad_fn = node;
    m->output_nr = node ? output_nr : 0;
  }
  disp__tensor_set_grad_state(t, node != NULL, node != NULL);
  return 0;
}

/* ---- AccumulateGrad is in accumulate.c; the edge to it starts here ------ */

disp_node *disp__accumulator_new(disp_tensor *leaf); /* accumulate.c */

disp_status disp__gradient_edge(disp_tensor *t, ag_edge *out) {
  out->fn = NULL;
  out->input_nr = 0;
  disp_status st = disp__view_refresh(t);
  if (st != DISP_OK) return st;
  ag_meta *m = disp__meta_get(t);
  if (m && m->grad_fn) {
    out->fn = disp__node_retain(m->grad_fn);
    out->input_nr = m->output_nr;
    return DISP_OK;
  }
  if (!disp_tensor_requires_grad(t)) return DISP_OK;
  if (!m && !(m = disp__meta_ensure(t))) return DISP_ERR_NO_MEMORY;
  if (!m->accumulator) {
    m->accumulator = disp__accumulator_new(t); /* holds t; clears m->accumulator when it dies */
    if (!m->accumulator) return DISP_ERR_NO_MEMORY;
    out->fn = m->accumulator;
    return DISP_OK;
  }
  out->fn = disp__node_retain(m->accumulator);
  return DISP_OK;
}

int disp__held_add(ag_held *h, disp_tensor *t) {
  if (!t) return 0;
  if (h->n == h->cap) {
    size_t cap = h->cap ? 2 * h->cap : 8;
    disp_tensor **a = h->t == h->inline_t ? disp__malloc(cap * sizeof *a) : disp__realloc(h->t, cap * sizeof *a);
    if (!a) return 1;
    if (h->t == h->inline_t) memcpy(a, h->inline_t, h->n * sizeof *a);
    h->t = a, h->cap = cap;
  }
  h->t[h->n++] = disp_tensor_retain(t);
  return 0;
}

int disp__held_contains(const ag_held *h, const disp_tensor *t) {
  for (size_t i = 0; i < h->n; i++)
    if (h->t[i] == t) return 1;
  return 0;
}

void disp__held_release(ag_held *h) {
  for (size_t i = 0; i < h->n; i++) disp_tensor_release(h->t[i]);
  if (h->t != h->inline_t) disp__free(h->t);
  h->t = h->inline_t, h->n = 0, h->cap = sizeof h->inline_t / sizeof *h->inline_t;
}

/* ---- public accessors --------------------------------------------------- */

disp_tensor *disp_tensor_grad(const disp_tensor *t) {
  DISP_REFUSE_NULL_PTR(t);
  ag_meta *m = disp__meta_get(t);
  return m ? m->grad : NULL;
}

static int same_sizes(const disp_tensor *a, const disp_tensor *b) {
  int nd = disp_tensor_ndim(a);
  if (nd != disp_tensor_ndim(b)) return 0;
  for (int i = 0; i < nd; i++)
    if (disp_tensor_sizes(a)[i] != disp_tensor_sizes(b)[i]) return 0;
  return 1;
}

disp_status disp_tensor_set_grad(disp_tensor *t, disp_tensor *grad) {
  DISP_REFUSE_NULL(t);
  if (grad) {
    if (grad == t) return disp__fail(DISP_ERR_INVALID_ARG, "can't assign Variable as its own grad");
    if (disp_tensor_dtype(grad) != disp_tensor_dtype(t))
      return disp__fail(DISP_ERR_INVALID_ARG, "assigned grad has data of a different type");
    disp_device a = disp_tensor_device(grad), b = disp_tensor_device(t);
    if (a.type != b.type || a.index != b.index)
      return disp__fail(DISP_ERR_INVALID_ARG, "assigned grad has data located on a different device");
    if (!same_sizes(grad, t)) return disp__fail(DISP_ERR_INVALID_ARG, "assigned grad has data of a different size");
  }
  ag_meta *m = grad ? disp__meta_ensure(t) : disp__meta_get(t);
  if (!m) return grad ? DISP_ERR_NO_MEMORY : DISP_OK;
  disp_tensor_retain(grad);
  disp_tensor_release(m->grad);
  m->grad = grad;
  return DISP_OK;
}

disp_node *disp_tensor_grad_fn(const disp_tensor *t) {
  DISP_REFUSE_NULL_PTR(t);
  if (disp__view_refresh(t) != DISP_OK) return NULL;
  ag_meta *m = disp__meta_get(t);
  return m ? m->grad_fn : NULL;
}

int disp_tensor_is_leaf(const disp_tensor *t) { return !t || !disp_tensor_grad_fn(t); }

int disp_tensor_output_nr(const disp_tensor *t) {
  ag_meta *m = t && disp_tensor_grad_fn(t) ? disp__meta_get(t) : NULL;
  return m ? (int)m->output_nr : 0;
}

int disp_tensor_retains_grad(const disp_tensor *t) {
  ag_meta *m = disp__meta_get(t);
  return m && m->retains_grad;
}

disp_status disp_tensor_detach_(disp_tensor *t) {
  DISP_REFUSE_NULL(t);
  if (disp__view_is_tracked(t))
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel "
                      "(DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP "
                      "buckets, and hence detach_() cannot be called on these gradients. To fix this error, please "
                      "refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.");
  return disp__set_history(t, NULL, 0) ? DISP_ERR_NO_MEMORY : DISP_OK;
}
