/*
 * node.c - graph nodes: creation, reference counts, the graph walk API,
 * input geometry and saved tensors.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "autograd_internal.h"
#include "argcheck_internal.h"
#include "error_internal.h"
#include "strbuf_internal.h"
#include "tensor/tensor_internal.h"

static atomic_uint_least64_t next_seq;

uint64_t disp__ag_next_seq(void) { return atomic_fetch_add_explicit(&next_seq, 1, memory_order_relaxed); }

disp_node *disp__node_new(const ag_node_ops *ops, const char *name, uint32_t num_inputs, uint32_t num_next) {
  disp_node *n = disp__calloc(1, sizeof *n);
  if (n && num_next) {
    n->next = disp__calloc(num_next, sizeof *n->next);
    n->geom = disp__calloc(num_next, sizeof *n->geom);
  }
  if (!n || (num_next && (!n->next || !n->geom))) {
    if (n) disp__free(n->next), disp__free(n->geom);
    disp__free(n);
    disp__fail(DISP_ERR_NO_MEMORY, "autograd: out of memory recording %s", name);
    return NULL;
  }
  atomic_init(&n->refs, 1);
  n->ops = ops;
  n->name = name;
  n->seq = disp__ag_next_seq();
  n->num_inputs = num_inputs;
  n->num_next = num_next;
  return n;
}

disp_node *disp__node_retain(disp_node *n) {
  if (n) atomic_fetch_add_explicit(&n->refs, 1, memory_order_relaxed);
  return n;
}

/* Note [Freeing long graphs]: a node's death releases its next nodes, whose
 * death releases theirs: recursion as deep as the graph is long (an RNN
 * over thousands of steps). Deaths are queued on a per-thread list instead
 * and freed by the outermost release, as PyTorch's deleteNode does. */
static _Thread_local disp_node *dying;
static _Thread_local int freeing;

static void node_free(disp_node *n) {
  if (n->ops->release_saved && !n->released) n->ops->release_saved(n);
  if (n->ops->destroy_state) n->ops->destroy_state(n);
  for (uint32_t i = 0; i < n->num_next; i++) {
    disp__node_release(n->next[i].fn);
    disp__geom_clear(&n->geom[i]);
  }
  for (ag_hook *h = n->pre_hooks, *nx; h; h = nx) {
    nx = h->next;
    if (h->destroy) h->destroy(h->ctx);
    if (h->retain) disp__weak_release(h->retain);
    disp__free(h);
  }
  if (n->name_owned) disp__free((char *)n->name);
  disp__free(n->next);
  disp__free(n->geom);
  disp__free(n);
}

void disp__node_release(disp_node *n) {
  if (!n || atomic_fetch_sub_explicit(&n->refs, 1, memory_order_acq_rel) != 1) return;
  if (freeing) {
    n->dying_next = dying;
    dying = n;
    return;
  }
  freeing = 1;
  node_free(n);
  while (dying) {
    disp_node *d = dying;
    dying = d->dying_next;
    node_free(d);
  }
  freeing = 0;
}

/* ---- geometry ----------------------------------------------------------- */

/* Every recorded edge runs this: fields are read directly and copied in
 * a loop, no calls for the usual few dims. */
int disp__geom_set(ag_geom *g, const disp_tensor *t) {
  int nd = disp__t_ndim(t);
  g->ndim = (int16_t)nd;
  g->has_strides = disp__t_has_strides(t);
  g->storage_offset = disp__t_offset(t);
  g->dtype = disp__t_dtype(t);
  g->device = disp__t_device(t);
  g->heap = NULL;
  int64_t *d = g->dims;
  if (2 * nd > (int)(sizeof g->dims / sizeof *g->dims)) {
    d = g->heap = disp__malloc(2 * (size_t)nd * sizeof *d);
    if (!d) return 1;
  }
  for (int i = 0; i < nd; i++) {
    d[i] = disp__t_size(t, i);
    d[nd + i] = disp__t_has_strides(t) ? disp__t_stride(t, i) : 0;
  }
  return 0;
}

int disp__geom_copy(ag_geom *dst, const ag_geom *src) {
  *dst = *src;
  dst->heap = NULL;
  if (!src->heap) return 0;
  dst->heap = disp__malloc(2 * (size_t)src->ndim * sizeof *dst->heap);
  if (!dst->heap) return 1;
  memcpy(dst->heap, src->heap, 2 * (size_t)src->ndim * sizeof *dst->heap);
  return 0;
}

void disp__geom_clear(ag_geom *g) {
  disp__free(g->heap);
  g->heap = NULL;
}

const int64_t *disp__geom_sizes(const ag_geom *g) { return g->heap ? g->heap : g->dims; }

const int64_t *disp__geom_strides(const ag_geom *g) {
  if (!g->has_strides) return NULL;
  return (g->heap ? g->heap : g->dims) + g->ndim;
}

disp_status disp__edge_set(disp_node *n, uint32_t e, disp_tensor *t) {
  disp_status st = disp__gradient_edge(t, &n->next[e]);
  if (st == DISP_OK && disp__geom_set(&n->geom[e], t))
    st = disp__fail(DISP_ERR_NO_MEMORY, "autograd: out of memory recording %s", n->name);
  return st;
}

/* ---- the walk API ------------------------------------------------------- */

/* A node keeps 1.13's Node::name() (what its messages print); the walk API
 * gives the class name Python shows, which drops the C++ namespace of
 * 1.13's hand-written nodes. */
const char *disp_node_name(const disp_node *n) {
  DISP_REFUSE_NULL_PTR(n);
  static const char cpp_ns[] = "torch::autograd::";
  return strncmp(n->name, cpp_ns, sizeof cpp_ns - 1) ? n->name : n->name + sizeof cpp_ns - 1;
}

size_t disp_node_num_next(const disp_node *n) { return n ? n->num_next : 0; }

disp_node *disp_node_next(const disp_node *n, size_t i, uint32_t *input_nr) {
  if (input_nr) *input_nr = 0;
  DISP_REFUSE_NULL_PTR(n);
  if (i >= n->num_next) {
    disp__fail(DISP_ERR_INVALID_ARG, "disp_node_next: edge %zu of %s, which has %u", i, n->name, n->num_next);
    return NULL;
  }
  if (input_nr) *input_nr = n->next[i].input_nr;
  return n->next[i].fn;
}

/* ---- saved tensors ------------------------------------------------------ */

disp_status disp__saved_set(ag_saved_var *s, disp_tensor *t, int is_output, uint32_t output_nr) {
  memset(s, 0, sizeof *s);
  if (!t) return DISP_OK;
  /* 1.13's SavedVariable: an inference tensor has no version counter to check */
  if (disp_tensor_is_inference(t))
    return disp__fail(DISP_ERR_INVALID_ARG, "Inference tensors cannot be saved for backward. To work around you can "
                                            "make a clone to get a normal tensor and use it in autograd.");
  s->defined = 1;
  s->is_output = (unsigned char)is_output;
  s->output_nr = output_nr;
  s->version = disp_tensor_version(t);
  s->is_leaf = disp_tensor_grad_fn(t) == NULL; /* callers set outputs' history first */
  if (!is_output) {
    s->data = disp_tensor_retain(t);
    return DISP_OK;
  }
  /* An output keeps no link to its node (Note [Who holds whom]): an alias
   * with the same storage, geometry and version counter, outside the graph. */
  disp_status st = disp_tensor_new_view(t, disp_tensor_sizes(t), disp_tensor_strides(t), disp_tensor_ndim(t),
                                        disp_tensor_storage_offset(t), &s->data);
  if (st != DISP_OK && disp_tensor_storage(t) == NULL) s->data = disp_tensor_retain(t); /* opaque: no alias */
  else if (st != DISP_OK) return st;
  return DISP_OK;
}

void disp__saved_clear(ag_saved_var *s) {
  disp_tensor_release(s->data);
  s->data = NULL;
}

/* "CPUFloatType", as PyTorch's Tensor::toString. */
static void type_label(disp_strbuf *b, const disp_tensor *t) {
  disp_device d = disp_tensor_device(t);
  disp__strbuf_appendf(b, "%s%sType", d.type == DISP_BACKEND_CPU ? "CPU" : disp_device_type_name(d.type),
                       disp_dtype_torch_name(disp_tensor_dtype(t)));
}

static disp_status fail_modified(const ag_saved_var *s, disp_node *node, uint64_t now) {
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__strbuf_append(&b, "one of the variables needed for gradient computation has been modified by an "
                          "inplace operation: [");
  type_label(&b, s->data);
  disp__strbuf_appendc(&b, ' ');
  disp__format_int_list(&b, disp_tensor_sizes(s->data), disp_tensor_ndim(s->data));
  disp__strbuf_appendc(&b, ']');
  disp_node *fn = s->is_output ? node : disp_tensor_grad_fn(s->data);
  if (fn) disp__strbuf_appendf(&b, ", which is output %u of %s,", s->output_nr, fn->name);
  disp__strbuf_appendf(&b, " is at version %llu; expected version %llu instead.", (unsigned long long)now,
                       (unsigned long long)s->version);
  disp__strbuf_append(&b, disp__ag_anomaly()
                              ? " Hint: the backtrace further above shows the operation that failed to "
                                "compute its gradient. The variable in question was changed in there or "
                                "anywhere later. Good luck!"
                              : " Hint: enable anomaly detection to find the operation that failed to "
                                "compute its gradient, with torch.autograd.set_detect_anomaly(True).");
  disp_status st = disp__fail(DISP_ERR_INVALID_ARG, "%s", disp__strbuf_cstr(&b));
  disp__strbuf_free(&b);
  return st;
}

disp_status disp__node_fail_released(const disp_node *n) {
  (void)n;
  return disp__fail(DISP_ERR_INVALID_ARG,
                    "Trying to backward through the graph a second time (or directly access saved tensors "
                    "after they have already been freed). Saved intermediate values of the graph are freed "
                    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
                    "backward through the graph a second time or if you need to access saved tensors after "
                    "calling backward.");
}

disp_status disp__saved_unpack(const ag_saved_var *s, disp_node *node, disp_tensor **out) {
  *out = NULL;
  if (!s->defined) return DISP_OK;
  if (!s->data) return disp__node_fail_released(node);
  uint64_t now = disp_tensor_version(s->data);
  if (now != s->version) return fail_modified(s, node, now);
  if (!s->is_output || s->is_leaf || !disp_tensor_storage(s->data)) {
    *out = disp_tensor_retain(s->data);
    return DISP_OK;
  }
  /* An output comes back with its node as grad_fn, so a graph recorded
   * from it (create_graph) reaches this node, as PyTorch's unpack; a
   * non-differentiable one (native_dropout's mask) stays a leaf, as 1.13's
   * is_leaf_, so no backward runs this node for it. */
  disp_tensor *t;
  disp_status st = disp_tensor_new_view(s->data, disp_tensor_sizes(s->data), disp_tensor_strides(s->data),
                                        disp_tensor_ndim(s->data), disp_tensor_storage_offset(s->data), &t);
  if (st != DISP_OK) return st;
  if (disp__set_history(t, node, s->output_nr)) {
    disp_tensor_release(t);
    return DISP_ERR_NO_MEMORY;
  }
  *out = t;
  return DISP_OK;
}
