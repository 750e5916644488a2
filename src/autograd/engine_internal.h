/*
 * engine_internal.h - the backward pass (engine.c) and its checks
 * (validate.c), used by the public entry points in backward.c.
 */
#ifndef DISP_AUTOGRAD_ENGINE_INTERNAL_H
#define DISP_AUTOGRAD_ENGINE_INTERNAL_H

#include "autograd_internal.h"

/*
 * disp__engine_run - one backward pass from roots[i] (edges, non-NULL fn)
 * seeded with root_grads[i] (references the pass takes, set to NULL). With
 * ninputs > 0 only nodes leading to inputs[] run, and the gradient reaching
 * each input edge is written to captured[i] (new reference, NULL if none
 * did); without, every reachable node runs (leaves accumulate).
 */
disp_status disp__engine_run(const ag_edge *roots, disp_tensor **root_grads, size_t nroots, const ag_edge *inputs,
                             size_t ninputs, int retain_graph, int create_graph, disp_tensor **captured);

/*
 * disp__validate_outputs - PyTorch's validate_outputs for node n's results
 * (one per edge, replaced in place): a gradient of a broadcast shape is
 * summed down to its input's shape, a gradient of another dtype cast to
 * it; a shape that cannot be reduced, or another device, is an error
 * naming the node and the index.
 */
disp_status disp__validate_outputs(disp_node *n, disp_tensor **out, int create_graph);

/* disp__check_nan - anomaly mode: an error when a result holds NaN. */
disp_status disp__check_nan(disp_node *n, disp_tensor **out);

#endif
