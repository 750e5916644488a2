/*
 * backward.c - torch.autograd.backward and torch.autograd.grad: checking
 * and preparing what the program passes, then one engine pass.
 */
#include <stdlib.h>

#include "alloc_internal.h"
#include "argcheck_internal.h"
#include "engine_internal.h"
#include "error_internal.h"
#include "formula.h"
#include "strbuf_internal.h"
#include "tensor/tensor_internal.h"

/* The gradient a root starts with: the one given, or 1 for a one-element
 * output (PyTorch's _make_grads). */
static disp_status root_grad(disp_tensor *t, disp_tensor *given, size_t i, disp_tensor **out) {
  *out = NULL;
  if (given) {
    if (disp_tensor_numel(given) != disp_tensor_numel(t) || disp_tensor_ndim(given) != disp_tensor_ndim(t)) {
      disp_strbuf b;
      disp__strbuf_init(&b);
      disp__strbuf_appendf(&b, "Mismatch in shape: grad_output[%zu] has a shape of torch.Size(", i);
      disp__format_int_list(&b, disp_tensor_sizes(given), disp_tensor_ndim(given));
      disp__strbuf_appendf(&b, ") and output[%zu] has a shape of torch.Size(", i);
      disp__format_int_list(&b, disp_tensor_sizes(t), disp_tensor_ndim(t));
      disp__strbuf_append(&b, ").");
      disp_status st = disp__fail(DISP_ERR_INVALID_ARG, "%s", disp__strbuf_cstr(&b));
      disp__strbuf_free(&b);
      return st;
    }
    *out = disp_tensor_retain(given);
    return DISP_OK;
  }
  if (disp_tensor_numel(t) != 1)
    return disp__fail(DISP_ERR_INVALID_ARG, "grad can be implicitly created only for scalar outputs");
  disp_opt_device dev = {(int32_t)disp_tensor_device(t).type, disp_tensor_device(t).index, true};
  disp_opt_bool none = {false, false};
  return disp_aten_ones_like(t, -1, -1, dev, none, -1, out);
}

/* Roots: every output must be in a graph. */
static disp_status make_roots(disp_tensor *const *ts, size_t n, disp_tensor *const *grads, ag_edge *edges,
                              disp_tensor **rg) {
  for (size_t i = 0; i < n; i++) {
    if (!ts[i]) return disp__fail(DISP_ERR_INVALID_ARG, "autograd: tensors[%zu] is NULL", i);
    if (!disp_tensor_requires_grad(ts[i]))
      return disp__fail(DISP_ERR_INVALID_ARG,
                        "element %zu of tensors does not require grad and does not have a grad_fn", i);
    disp_status st = disp__gradient_edge(ts[i], &edges[i]);
    if (st == DISP_OK) st = root_grad(ts[i], grads ? grads[i] : NULL, i, &rg[i]);
    if (st != DISP_OK) return st;
  }
  return DISP_OK;
}

static void edges_free(ag_edge *e, size_t n) {
  for (size_t i = 0; e && i < n; i++) disp__node_release(e[i].fn);
  disp__free(e);
}

static void tensors_free(disp_tensor **t, size_t n) {
  for (size_t i = 0; t && i < n; i++) disp_tensor_release(t[i]);
  disp__free(t);
}

static disp_status run(disp_tensor *const *tensors, size_t n, disp_tensor *const *grad_tensors,
                       disp_tensor *const *inputs, size_t ni, int retain_graph, int create_graph,
                       disp_tensor **captured) {
  ag_edge *roots = disp__calloc(n + 1, sizeof *roots), *in = disp__calloc(ni + 1, sizeof *in);
  disp_tensor **rg = disp__calloc(n + 1, sizeof *rg);
  disp_status st = roots && in && rg ? DISP_OK : disp__fail(DISP_ERR_NO_MEMORY, "autograd: out of memory for the roots of backward");
  if (st == DISP_OK) st = make_roots(tensors, n, grad_tensors, roots, rg);
  for (size_t i = 0; st == DISP_OK && i < ni; i++) {
    if (!inputs[i]) st = disp__fail(DISP_ERR_INVALID_ARG, "autograd.grad: inputs[%zu] is NULL", i);
    else if (!disp_tensor_requires_grad(inputs[i]))
      st = disp__fail(DISP_ERR_INVALID_ARG, "One of the differentiated Tensors does not require grad");
    else st = disp__gradient_edge(inputs[i], &in[i]);
  }
  if (st == DISP_OK) st = disp__engine_run(roots, rg, n, in, ni, retain_graph, create_graph, captured);
  edges_free(roots, n);
  edges_free(in, ni);
  tensors_free(rg, n);
  return st;
}

disp_status disp_autograd_backward(disp_tensor *const *tensors, size_t n, disp_tensor *const *grad_tensors,
                                   int retain_graph, int create_graph) {
  DISP_REFUSE_NULL_ARRAY(tensors, n);
  if (n == 0) return disp__fail(DISP_ERR_INVALID_ARG, "backward: no tensors given");
  return run(tensors, n, grad_tensors, NULL, 0, retain_graph || create_graph, create_graph, NULL);
}

disp_status disp_autograd_grad(disp_tensor *const *outputs, size_t n, disp_tensor *const *inputs, size_t ni,
                               disp_tensor *const *grad_outputs, int retain_graph, int create_graph,
                               int allow_unused, disp_tensor **grads) {
  DISP_REFUSE_NULL_ARRAY(outputs, n);
  DISP_REFUSE_NULL_ARRAY(inputs, ni);
  DISP_REFUSE_NULL(grads);
  for (size_t i = 0; i < ni; i++) grads[i] = NULL;
  if (n == 0 || ni == 0) return disp__fail(DISP_ERR_INVALID_ARG, "grad requires non-empty inputs.");
  if (retain_graph < 0) retain_graph = create_graph;
  disp_status st = run(outputs, n, grad_outputs, inputs, ni, retain_graph, create_graph, grads);
  for (size_t i = 0; st == DISP_OK && i < ni; i++)
    if (!grads[i] && !allow_unused)
      st = disp__fail(DISP_ERR_INVALID_ARG, "One of the differentiated Tensors appears to not have been used in "
                                            "the graph. Set allow_unused=True if this is the desired behavior.");
  if (st != DISP_OK)
    for (size_t i = 0; i < ni; i++) {
      disp_tensor_release(grads[i]);
      grads[i] = NULL;
    }
  return st;
}
