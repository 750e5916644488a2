/*
 * autograd_internal.h - the graph's data structures, shared by the files of
 * src/autograd (meta.c, node.c, record.c, engine.c, the formula files).
 *
 * Ownership (Note [Who holds whom]):
 *   tensor --meta.grad_fn--> node --edges--> next nodes --> ... --> AccumulateGrad --leaf--> leaf tensor
 * A leaf's meta points at its AccumulateGrad weakly (meta.accumulator): the
 * accumulator holds the leaf, so a strong pointer back would be a cycle. The
 * accumulator clears the pointer when it dies. A node never holds its own
 * outputs: a saved output is kept as a detached alias (same storage and
 * version counter, no meta) and handed back with grad_fn = the node when a
 * backward pass unpacks it.
 */
#ifndef DISP_AUTOGRAD_INTERNAL_H
#define DISP_AUTOGRAD_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "disp.h"
#include "disp/autograd.h"
#include "tensor/tensor_internal.h"

/* ---- edges and nodes --------------------------------------------------- */

typedef struct ag_edge {
  disp_node *fn;     /* owned reference; NULL: that input gets no gradient */
  uint32_t input_nr; /* which gradient input of fn */
} ag_edge;

/* What a gradient flowing along an edge must look like: the forward
 * input's shape, dtype and device (PyTorch's InputMetadata). Its strides
 * and storage offset are kept too: formulas read them where 1.13 saves an
 * input's geometry instead of the input (mm's self_sym_strides,
 * as_strided's self_geometry), so the input itself need not be saved. */
typedef struct ag_geom {
  int16_t ndim;
  unsigned char has_strides; /* 0 for a tensor without strides (opaque) */
  disp_dtype dtype;
  /* sizes, then strides: here up to 4 dims, in heap beyond */
  int64_t dims[8];
  int64_t *heap;
  int64_t storage_offset;
  disp_device device;
} ag_geom;
/* A node allocates one per edge on every recorded call: kept as small as
 * the sizes-only one it replaced. */
_Static_assert(sizeof(ag_geom) <= 96, "ag_geom grew");

typedef struct ag_hook {
  struct ag_hook *next;
  uint64_t id;
  uint32_t output_nr; /* which gradient input of the node it watches */
  disp_grad_hook fn;
  void *ctx;
  void (*destroy)(void *ctx);
  struct ag_weak *retain; /* non-NULL: a retain_grad hook for this tensor */
  unsigned char dead;     /* removed while hooks ran: skipped, freed after the run */
} ag_hook;

/* The operations of one kind of node. */
typedef struct ag_node_ops {
  /* grads: num_inputs gradients (borrowed; NULL = undefined, i.e. zero).
   * out: num_next slots, zeroed by the engine, filled with new references
   * (NULL = no gradient). */
  disp_status (*apply)(disp_node *n, disp_tensor *const *grads, disp_tensor **out);
  void (*release_saved)(disp_node *n); /* may be NULL */
  void (*destroy_state)(disp_node *n); /* may be NULL */
} ag_node_ops;

struct disp_node {
  atomic_size_t refs;
  const ag_node_ops *ops;
  const char *name;     /* static, or owned when name_owned */
  const char *fwd_op;   /* forward operator's name (anomaly mode), static */
  uint64_t seq;         /* creation order: later nodes run first */
  uint32_t num_inputs;  /* gradients it receives: outputs of the forward op */
  uint32_t num_next;
  ag_edge *next;        /* num_next */
  ag_geom *geom;        /* num_next: what each outgoing gradient must look like */
  ag_hook *pre_hooks;   /* tensor hooks on its outputs */
  unsigned char released;   /* saved tensors freed by a backward pass */
  unsigned char name_owned;
  void *state;          /* the kind's own data */
  disp_node *dying_next; /* Note [Freeing long graphs] */
  struct ag_task *task;  /* the running backward pass's data for this node */
};

/* A new node with refs 1, num_next edges (unset) and geometry slots;
 * NULL (message set) on OOM. */
disp_node *disp__node_new(const ag_node_ops *ops, const char *name, uint32_t num_inputs,
                          uint32_t num_next);
disp_node *disp__node_retain(disp_node *n);
void disp__node_release(disp_node *n); /* NULL ok; frees the chain iteratively */

/* Records t's geometry into g (no allocation below 9 dims; 1 on OOM). */
int disp__geom_set(ag_geom *g, const disp_tensor *t);
/* dst = src with a heap block of its own; 1 on OOM (dst then owns nothing). */
int disp__geom_copy(ag_geom *dst, const ag_geom *src);
void disp__geom_clear(ag_geom *g);
const int64_t *disp__geom_sizes(const ag_geom *g);
/* NULL when the tensor had no strides. */
const int64_t *disp__geom_strides(const ag_geom *g);

/* Edge e of n goes where t's gradient goes (disp__gradient_edge), with t's
 * geometry; a failure's message is set. */
disp_status disp__edge_set(disp_node *n, uint32_t e, disp_tensor *t);

/* The message for a second backward through freed saved tensors. */
disp_status disp__node_fail_released(const disp_node *n);

/* ---- per-tensor autograd data (the tensor's autograd slot) ------------- */

/* A pointer to a tensor that does not keep it alive (retain_grad hooks):
 * cleared when the tensor dies. Refcounted between the meta and hooks. */
typedef struct ag_weak {
  atomic_size_t refs;
  disp_tensor *t;
} ag_weak;

void disp__weak_release(ag_weak *w);

typedef struct ag_meta {
  disp_tensor *grad;       /* owned */
  disp_node *grad_fn;      /* owned; NULL for leaves */
  uint32_t output_nr;
  disp_node *accumulator;  /* weak: a leaf's AccumulateGrad, see the Note */
  ag_weak *weak;           /* created on demand */
  ag_hook *leaf_hooks;     /* a leaf's hooks, run by its AccumulateGrad */
  disp_tensor *view_base;  /* owned: the root a view was made from (view_meta.c) */
  uint64_t view_version;   /* the version the view's grad_fn belongs to (1.13's attr_version) */
  unsigned char view_creation; /* an ag_view_creation */
  unsigned char retains_grad;
} ag_meta;

/* How a view was made (1.13's CreationMeta): an in-place update of a view
 * made in no-grad or inference mode is refused in grad mode. */
typedef enum ag_view_creation { AG_VIEW_DEFAULT, AG_VIEW_NO_GRAD, AG_VIEW_INFERENCE } ag_view_creation;

/* The meta of t, or NULL when it has none (t may be NULL). Read on every
 * recorded call: inline. */
static inline ag_meta *disp__meta_get(const disp_tensor *t) {
  return t ? (ag_meta *)disp__tensor_autograd_meta(t) : NULL;
}
/* The meta of t, created when missing; NULL (message set) on OOM. */
ag_meta *disp__meta_ensure(disp_tensor *t);

/*
 * disp__set_history - makes `node` output `output_nr` t's grad_fn (t then
 * requires grad and is no leaf); a NULL node makes t a leaf that does not
 * require grad. Returns nonzero on OOM (message set).
 */
int disp__set_history(disp_tensor *t, disp_node *node, uint32_t output_nr);

/*
 * disp__gradient_edge - where t's gradient goes: (grad_fn, output_nr) for a
 * computed tensor, (its AccumulateGrad, 0) for a leaf that requires grad -
 * created on first use - and (NULL, 0) otherwise. A view's grad_fn is
 * brought up to date first (disp__view_refresh), which may refuse. The
 * node is a new reference.
 */
disp_status disp__gradient_edge(disp_tensor *t, ag_edge *out);

/*
 * The input tensors of a call, held (retained) while it runs, so its outputs
 * can be told apart from them. A kernel that hands back an input tensor
 * object itself (a no-op kernel returning `self`, without the schema's alias
 * annotation) must not give that input a grad_fn: a leaf would end up
 * holding its own graph, any other input the graph of the call (README
 * difference 20). Written (in-place) arguments are not held: their history
 * moves to the new node, as in PyTorch.
 */
typedef struct ag_held {
  disp_tensor **t;
  size_t n, cap;
  disp_tensor *inline_t[8];
} ag_held;
#define AG_HELD_INIT(h) {(h).inline_t, 0, 8, {0}}
int disp__held_add(ag_held *h, disp_tensor *t); /* NULL ok; nonzero on OOM */
int disp__held_contains(const ag_held *h, const disp_tensor *t);
void disp__held_release(ag_held *h);

/* ---- differentiable views (view_meta.c, views.c) ------------------------------- */

/* Whether t is a marked view. */
int disp__view_is_tracked(const disp_tensor *t);
/* 1.13's check_inplace rules for views: no-grad and inference-mode views,
 * views of leaves. */
disp_status disp__view_check_inplace(disp_tensor *t);
/* Brings a view's grad_fn up to date with its version counter (1.13's lazy
 * VariableHooks::grad_fn); refuses a no-grad or inference-mode view whose
 * base was written. DISP_OK for anything else. */
disp_status disp__view_refresh(const disp_tensor *t);
/* An in-place op's node fn wrote `view` (its output out_nr): the base's
 * grad_fn becomes CopySlices, the view's AsStridedBackward0. */
disp_status disp__view_rebase(disp_tensor *view, disp_node *fn, uint32_t out_nr);
/* The view's grad_fn becomes an AsStridedBackward0 over its base's
 * current history (views.c). */
disp_status disp__view_regenerate(disp_tensor *view);

/* ---- saved tensors ------------------------------------------------------ */

/* PyTorch's SavedVariable: a tensor kept for the backward pass with the
 * version it had then. */
typedef struct ag_saved {
  disp_tensor *data;     /* owned: the input itself, or a detached alias of an output */
  uint64_t version;
  uint32_t output_nr;
  unsigned char is_output;
  unsigned char is_leaf; /* an output without history (not differentiable): unpacked without the node */
  unsigned char defined;
} ag_saved_var;

/* Saves t (NULL: an undefined saved tensor). is_output: t is an output of
 * the node being recorded. Refuses an inference tensor, as 1.13 ("Inference
 * tensors cannot be saved for backward. ..."); a failure's message is set. */
disp_status disp__saved_set(ag_saved_var *s, disp_tensor *t, int is_output, uint32_t output_nr);

/*
 * disp__saved_unpack - the saved tensor for a backward pass of `node` (new
 * reference in *out; NULL for an undefined one): checks the version
 * ("one of the variables needed for gradient computation has been modified
 * by an inplace operation: ..."), and gives an output back with grad_fn =
 * node so create_graph can differentiate through it. After release:
 * PyTorch's "Trying to backward through the graph a second time" message.
 */
disp_status disp__saved_unpack(const ag_saved_var *s, disp_node *node, disp_tensor **out);
void disp__saved_clear(ag_saved_var *s);

/* ---- engine helpers ----------------------------------------------------- */

/* The key set below autograd for redispatch from an autograd kernel. */
disp_keyset disp__ag_below(disp_keyset ks);

/* Whether t requires grad as 1.13's requires_grad() says (t may be NULL):
 * its flag, or for a view its base's (DifferentiableViewMeta: a view of a
 * tensor that came to require grad after the view was made, by an
 * in-place update with an input that requires grad, does too, and its
 * grad_fn is made when it is used). Grad mode is the caller's to check
 * (disp__ag_requires_grad in aten_kernels.h checks both). Every recorded
 * call asks, so the fields are read directly. */
static inline int disp__ag_requires(const disp_tensor *t) {
  if (!t) return 0;
  if (disp__t_requires_grad(t)) return 1;
  const ag_meta *m = disp__meta_get(t);
  return m && m->view_base && disp__t_requires_grad(m->view_base);
}

/* Sequence numbers: one thread-independent counter. */
uint64_t disp__ag_next_seq(void);

/* Anomaly mode's state (autograd_modes.c). */
int disp__ag_anomaly(void);

#endif /* DISP_AUTOGRAD_INTERNAL_H */
