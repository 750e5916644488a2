/*
 * disp/autograd.h - gradients: the graph tensors record, and the engine that
 * walks it backward (PyTorch's torch.autograd).
 *
 * While grad mode is on (disp/guard.h), an operator whose differentiable
 * inputs require grad records a node - its backward function, named as
 * PyTorch names it ("MulBackward0") - and its outputs point at that node
 * (their grad_fn). A leaf (a tensor the program made, with requires_grad
 * set) gets an "AccumulateGrad" node the first time it is used. The
 * engine runs the nodes from the outputs back to the leaves in dependency
 * order and adds each leaf's gradient into its `grad`.
 *
 *   disp_tensor_set_requires_grad(w, 1);
 *   disp_aten_mul_Tensor(x, w, &y);  disp_aten_sum(y, -1, &loss);
 *   disp_autograd_backward(&loss, 1, NULL, 0, 0);
 *   disp_tensor *g = disp_tensor_grad(w);           // borrowed: x
 *
 * Nodes are reference counted: a tensor holds its grad_fn, a node holds the
 * nodes it sends gradients to, so a graph lives while any tensor that
 * reaches it does. Saved tensors are freed by the backward pass that uses
 * them unless retain_graph is set.
 *
 * Threads: the graph of one tensor must not be changed (calls recording on
 * it, backward through it, grad/hook/requires_grad setters) by two threads
 * at once; distinct graphs may be used concurrently. Grad mode is
 * per-thread.
 */
#ifndef DISP_AUTOGRAD_H
#define DISP_AUTOGRAD_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "status.h"
#include "value.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A node of the graph (PyTorch's torch.autograd.graph.Node). Opaque. */
typedef struct disp_node disp_node;

/* ---- gradients on tensors --------------------------------------------- */

/*
 * disp_tensor_grad - the gradient accumulated into `t` (PyTorch's .grad), or
 * NULL when none is. Borrowed: valid until the grad is replaced (a backward
 * pass into a leaf whose grad is NULL, disp_tensor_set_grad) or `t` is
 * released; retain it to keep it. NULL t gives NULL.
 */
DISP_API disp_tensor *disp_tensor_grad(const disp_tensor *t);

/*
 * disp_tensor_set_grad - replaces t's gradient by `grad` (retained; NULL
 * clears it, PyTorch's `t.grad = None`). The new grad must match t as
 * PyTorch's checks: "assigned grad has data of a different type",
 * "assigned grad has data of a different size", "assigned grad has data
 * located on a different device" (DISP_ERR_INVALID_ARG; t unchanged).
 */
DISP_API disp_status disp_tensor_set_grad(disp_tensor *t, disp_tensor *grad);

/* disp_tensor_grad_fn - the node that computed `t` (borrowed), NULL for a
 * leaf or a tensor outside any graph. A view in a graph whose base (or
 * another view of it) was modified in place since gets its grad_fn made
 * anew here, an AsStridedBackward0 over the base's new history, as 1.13's
 * grad_fn does; a view made in no-grad or inference mode whose base requires
 * grad and was modified so gives NULL with 1.13's message ("A view was
 * created in no_grad mode and its base or another view of its base has been
 * modified inplace with grad mode enabled. ..."), where 1.13 raises.
 * Making it anew changes t's autograd data: not thread-safe for a view
 * another thread uses meanwhile (tensors are not synchronized). */
DISP_API disp_node *disp_tensor_grad_fn(const disp_tensor *t);

/* disp_tensor_is_leaf - 1 when t has no grad_fn (PyTorch's is_leaf). */
DISP_API int disp_tensor_is_leaf(const disp_tensor *t);

/* disp_tensor_output_nr - which output of its grad_fn t is (0 for leaves). */
DISP_API int disp_tensor_output_nr(const disp_tensor *t);

/*
 * disp_tensor_retain_grad - makes a non-leaf keep its gradient in `grad`
 * during backward (PyTorch's retain_grad). A no-op for leaves. Error
 * (DISP_ERR_INVALID_ARG): "can't retain_grad on Tensor that has
 * requires_grad=False".
 */
DISP_API disp_status disp_tensor_retain_grad(disp_tensor *t);

/* disp_tensor_retains_grad - 1 after disp_tensor_retain_grad on a non-leaf. */
DISP_API int disp_tensor_retains_grad(const disp_tensor *t);

/*
 * disp_tensor_detach_ - in place: t leaves the graph (no grad_fn,
 * requires_grad off), as PyTorch's detach_. Error for views: "Can't detach
 * views in-place. Use detach() instead. ..." (t unchanged). The
 * out-of-place detach is the operator: disp_aten_detach.
 */
DISP_API disp_status disp_tensor_detach_(disp_tensor *t);

/* ---- hooks ------------------------------------------------------------ */

/*
 * A tensor hook runs on the gradient computed for its tensor, before the
 * gradient is used (accumulated into a leaf, passed to the grad_fn of a
 * non-leaf). To replace the gradient, set *replacement to a new reference;
 * leave it NULL to keep `grad`. `grad` is borrowed. A failing hook fails the
 * backward pass with its status and message. A replacement must keep the
 * gradient's sizes, dtype and device (1.13's check): otherwise the pass
 * fails with DISP_ERR_INVALID_ARG, "hook 'hook' has changed the size of
 * value" (or "... the type of value (was X got Y)", "... the device of
 * value (was X got Y)"), and the replacement is released.
 */
typedef disp_status (*disp_grad_hook)(disp_tensor *grad, disp_tensor **replacement, void *ctx);

/*
 * disp_tensor_register_hook - adds a hook to t (PyTorch's register_hook);
 * hooks run in registration order. `destroy` (may be NULL) receives ctx when
 * the hook is removed or its tensor's graph data is freed. *id (may be NULL)
 * receives a handle for disp_tensor_remove_hook. Error (t unchanged,
 * destroy not called): "cannot register a hook on a tensor that doesn't
 * require gradient".
 */
DISP_API disp_status disp_tensor_register_hook(disp_tensor *t, disp_grad_hook fn, void *ctx,
                                               void (*destroy)(void *ctx), uint64_t *id);

/* disp_tensor_remove_hook - removes the hook `id` of t; unknown (or
 * already removed) ids are DISP_ERR_INVALID_ARG. A hook may remove itself
 * (the one-shot pattern) or another hook, and may register hooks, while
 * hooks run: a removed hook never runs again, and its destroy runs once the
 * hooks running on this thread have finished (or when the tensor's graph
 * data is freed); a hook registered during a run first runs in the next. */
DISP_API disp_status disp_tensor_remove_hook(disp_tensor *t, uint64_t id);

/* ---- walking the graph ------------------------------------------------- */

/* disp_node_name - the node's class name as PyTorch shows it
 * (type(grad_fn).__name__): "AddBackward0" for a node of a derivatives.yaml
 * formula, "AccumulateGrad", "CopySlices", "CopyBackwards" for 1.13's
 * hand-written nodes. (1.13's C++ Node::name() gives those three with their
 * namespace, "torch::autograd::CopySlices", and its error messages print
 * that; libdispatch's messages do too.) Borrowed, valid while n lives; NULL
 * with a message for a NULL n. Thread-safe. */
DISP_API const char *disp_node_name(const disp_node *n);

/* disp_node_num_next - how many edges leave n (one per differentiable
 * input of the forward operator, PyTorch's next_functions). */
DISP_API size_t disp_node_num_next(const disp_node *n);

/*
 * disp_node_next - the node edge i leads to (borrowed; NULL where that input
 * needs no gradient) and, in *input_nr (may be NULL), which of its inputs.
 * i out of range gives NULL.
 */
DISP_API disp_node *disp_node_next(const disp_node *n, size_t i, uint32_t *input_nr);

/* disp_node_variable - for an AccumulateGrad node, its leaf (borrowed);
 * NULL for other nodes (PyTorch's AccumulateGrad.variable). */
DISP_API disp_tensor *disp_node_variable(const disp_node *n);

/* ---- the engine -------------------------------------------------------- */

/*
 * disp_autograd_backward - torch.autograd.backward: computes the gradient
 * of `tensors` (n of them) with respect to the leaves of their graphs and
 * adds it into those leaves' grad. grad_tensors (NULL, or n entries, each
 * NULL for a one-element tensor: the gradient 1) weigh each output.
 * retain_graph keeps saved tensors for another pass; create_graph records
 * the backward pass itself so gradients can be differentiated again.
 * Errors, PyTorch's words: "element 0 of tensors does not require grad and
 * does not have a grad_fn"; "grad can be implicitly created only for scalar
 * outputs"; "Trying to backward through the graph a second time ..."; the
 * in-place version check; a node's own failure, named after the node.
 * On error leaves may hold partial gradients, as in PyTorch.
 */
DISP_API disp_status disp_autograd_backward(disp_tensor *const *tensors, size_t n,
                                            disp_tensor *const *grad_tensors, int retain_graph,
                                            int create_graph);

/*
 * disp_autograd_grad - torch.autograd.grad: the gradients of `outputs` with
 * respect to `inputs` (ni of them) written to grads[0..ni) as new
 * references, without touching any leaf's grad. An input that no output
 * depends on is an error ("One of the differentiated Tensors appears to not
 * have been used in the graph. Set allow_unused=True if this is the desired
 * behavior.") unless allow_unused, when its grad is NULL. Only the part of
 * the graph between outputs and inputs runs. retain_graph < 0 means "as
 * create_graph", PyTorch's default. Errors as disp_autograd_backward and
 * "One of the differentiated Tensors does not require grad"; on error every
 * grads[i] is NULL.
 */
DISP_API disp_status disp_autograd_grad(disp_tensor *const *outputs, size_t n,
                                        disp_tensor *const *inputs, size_t ni,
                                        disp_tensor *const *grad_outputs, int retain_graph,
                                        int create_graph, int allow_unused, disp_tensor **grads);

/* ---- modes ------------------------------------------------------------- */

/* What the built-in autograd fallback does for an operator without an
 * autograd kernel whose inputs require grad (PyTorch's
 * torch._C._set_autograd_fallback_mode). */
typedef enum disp_autograd_fallback_mode {
  DISP_AUTOGRAD_FALLBACK_NOTHING, /* run below autograd; outputs carry no graph */
  DISP_AUTOGRAD_FALLBACK_WARN,    /* the default: a node that warns when backward reaches it */
  DISP_AUTOGRAD_FALLBACK_ERROR    /* a node that fails backward, naming the operator */
} disp_autograd_fallback_mode;

/* Process-wide; the setter refuses values outside the enum. */
DISP_API disp_status disp_autograd_set_fallback_mode(disp_autograd_fallback_mode mode);
DISP_API disp_autograd_fallback_mode disp_autograd_fallback_mode_get(void);

/*
 * disp_autograd_set_detect_anomaly - anomaly detection (process-wide, as
 * torch.autograd.set_detect_anomaly): nodes remember the forward operator
 * that created them, and a backward node that returns a gradient holding
 * NaN fails: "Function 'MulBackward0' returned nan values in its 0th
 * output." with the forward operator named after it.
 */
DISP_API void disp_autograd_set_detect_anomaly(int enabled);
DISP_API int disp_autograd_detect_anomaly(void);

#ifdef __cplusplus
}
#endif

#endif /* DISP_AUTOGRAD_H */
