/*
 * gradgradcheck.c - torch.autograd.gradgradcheck (1.13): gradcheck of the
 * function (inputs, grad_outputs) -> the gradients of fn's outputs, taken
 * with create_graph so that the backward formulas are differentiated.
 *
 * The random grad_outputs come from a small generator of their own
 * (splitmix64, Box-Muller) seeded by opts->seed, so a check neither reads
 * nor moves the process's generator (disp/random.h) and gives the same
 * values every run.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "argcheck_internal.h"
#include "disp/autograd.h"
#include "disp/tensor.h"
#include "error_internal.h"
#include "gradcheck_internal.h"

/* The function gradcheck differentiates: its inputs are fn's n inputs
 * followed by one gradient per differentiable output of fn. */
typedef struct gg_ctx {
  disp_gradcheck_fn fn;
  void *ctx;
  size_t n;
} gg_ctx;

/* fn's outputs that require grad (borrowed from outs) into dout. */
static size_t differentiable(disp_tensor **outs, size_t k, disp_tensor **dout) {
  size_t nd = 0;
  for (size_t o = 0; o < k; o++)
    if (disp_tensor_requires_grad(outs[o])) dout[nd++] = outs[o];
  return nd;
}

static disp_status grads_of(disp_tensor *const *in, size_t nin, disp_tensor **out, size_t *nout, void *vctx) {
  const gg_ctx *c = vctx;
  disp_tensor *outs[DISP_GRADCHECK_MAX_OUTPUTS], *dout[DISP_GRADCHECK_MAX_OUTPUTS], *din[DISP_GRADCHECK_MAX_OUTPUTS];
  disp_tensor *grads[DISP_GRADCHECK_MAX_OUTPUTS] = {0};
  size_t k = 0, room = *nout, nd, ndin = 0;
  *nout = 0;
  disp_status st = disp__gc_call(c->fn, c->ctx, in, c->n, outs, &k);
  if (st != DISP_OK) return st;
  nd = differentiable(outs, k, dout);
  for (size_t i = 0; i < c->n && st == DISP_OK; i++) {
    if (!in[i] || !disp_tensor_requires_grad(in[i])) continue;
    if (ndin == DISP_GRADCHECK_MAX_OUTPUTS)
      st = disp__fail(DISP_ERR_INVALID_ARG, "gradgradcheck: more than %d inputs require grad", DISP_GRADCHECK_MAX_OUTPUTS);
    else din[ndin++] = in[i];
  }
  if (st == DISP_OK && nd != nin - c->n)
    st = disp__fail(DISP_ERR_INVALID_ARG, "gradgradcheck: %zu grad_outputs for %zu differentiable outputs",
                    nin - c->n, nd);
  if (st == DISP_OK && ndin) st = disp_autograd_grad(dout, nd, din, ndin, in + c->n, 1, 1, 1, grads);
  /* PyTorch's new_func returns the gradients that are not None */
  for (size_t i = 0; i < ndin && st == DISP_OK; i++) {
    if (!grads[i]) continue;
    if (*nout == room) st = disp__fail(DISP_ERR_INVALID_ARG, "gradgradcheck: too many gradients");
    else out[(*nout)++] = grads[i], grads[i] = NULL;
  }
  disp__gc_release(grads, ndin);
  disp__gc_release(outs, k);
  return st;
}

/* ---- random grad_outputs ------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A standard normal value (Box-Muller on two uniforms in (0, 1]). */
static double normal(uint64_t *s) {
  double u1 = ((double)(splitmix64(s) >> 11) + 1.0) * 0x1.0p-53;
  double u2 = (double)(splitmix64(s) >> 11) * 0x1.0p-53;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* A contiguous float64 tensor shaped as `like`, normal values, requiring grad. */
static disp_status randn_like(const disp_tensor *like, uint64_t *seed, disp_tensor **out) {
  disp_status st = disp_tensor_empty(disp_tensor_sizes(like), disp_tensor_ndim(like), DISP_DTYPE_FLOAT64,
                                     disp_tensor_device(like), out);
  if (st != DISP_OK) return st;
  double *d = disp_tensor_data_ptr(*out);
  for (int64_t e = 0, n = disp_tensor_numel(*out); e < n; e++) d[e] = normal(seed);
  return disp_tensor_set_requires_grad(*out, 1);
}

/* One random gradient per differentiable output of fn(inputs). */
static disp_status random_grad_outputs(const gg_ctx *c, disp_tensor *const *inputs, uint64_t seed,
                                       disp_tensor **gos, size_t *ngos) {
  disp_tensor *outs[DISP_GRADCHECK_MAX_OUTPUTS], *dout[DISP_GRADCHECK_MAX_OUTPUTS];
  size_t k = 0;
  *ngos = 0;
  disp_status st = disp__gc_call(c->fn, c->ctx, inputs, c->n, outs, &k);
  if (st != DISP_OK) return st;
  size_t nd = differentiable(outs, k, dout);
  for (size_t o = 0; o < nd && st == DISP_OK; o++) {
    st = randn_like(dout[o], &seed, &gos[o]);
    if (gos[o]) *ngos = o + 1;
  }
  disp__gc_release(outs, k);
  return st;
}

disp_status disp_gradgradcheck(disp_gradcheck_fn fn, void *ctx, disp_tensor *const *inputs, size_t n,
                               disp_tensor *const *grad_outputs, size_t ngrad_outputs,
                               const disp_gradcheck_options *opts) {
  DISP_REFUSE_NULL(fn);
  DISP_REFUSE_NULL_ARRAY(inputs, n);
  DISP_REFUSE_NULL_ARRAY(grad_outputs, ngrad_outputs);
  if (ngrad_outputs > DISP_GRADCHECK_MAX_OUTPUTS)
    return disp__fail(DISP_ERR_INVALID_ARG, "gradgradcheck: more than %d grad_outputs", DISP_GRADCHECK_MAX_OUTPUTS);
  gg_ctx c = {fn, ctx, n};
  disp_gradcheck_options o = opts ? *opts : disp_gradcheck_default_options();
  disp_tensor *gos[DISP_GRADCHECK_MAX_OUTPUTS] = {0};
  size_t ngos = ngrad_outputs;
  disp_status st = DISP_OK;
  if (grad_outputs) {
    for (size_t k = 0; k < ngos; k++) gos[k] = disp_tensor_retain(grad_outputs[k]);
  } else {
    st = random_grad_outputs(&c, inputs, o.seed, gos, &ngos);
  }
  disp_tensor **all = disp__calloc(n + ngos + 1, sizeof *all);
  if (st == DISP_OK && !all) st = disp__fail(DISP_ERR_NO_MEMORY, "gradgradcheck: out of memory");
  if (st == DISP_OK) {
    if (n) memcpy(all, inputs, n * sizeof *all);
    if (ngos) memcpy(all + n, gos, ngos * sizeof *all);
    st = disp_gradcheck(grads_of, &c, all, n + ngos, &o);
  }
  disp__free(all);
  disp__gc_release(gos, ngos);
  return st;
}
