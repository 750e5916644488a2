/*
 * gradcheck.c - torch.autograd.gradcheck (1.13, slow mode, real inputs):
 * numerical Jacobians by central differences against analytical ones from
 * disp_autograd_grad, one output element at a time.
 *
 * A Jacobian is a row-major double matrix [input element][output element],
 * both in logical (row-major index) order, as PyTorch lays them out.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "argcheck_internal.h"
#include "disp/autograd.h"
#include "disp/gradcheck.h"
#include "disp/tensor.h"
#include "error_internal.h"
#include "gradcheck_internal.h"
#include "strbuf_internal.h"

disp_gradcheck_options disp_gradcheck_default_options(void) {
  disp_gradcheck_options o = {1e-6, 1e-5, 1e-3, 0.0, 0};
  return o;
}

/* What one check knows: the function, its inputs, the differentiable ones. */
typedef struct gc {
  disp_gradcheck_fn fn;
  void *ctx;
  disp_tensor *const *inputs;
  size_t n;
  disp_gradcheck_options o;
  disp_tensor **din; /* the inputs that require grad (borrowed) */
  size_t ndin;
  disp_tensor *outs[DISP_GRADCHECK_MAX_OUTPUTS]; /* the first call's results, with their graph */
  size_t nouts;
  disp_tensor *dout[DISP_GRADCHECK_MAX_OUTPUTS]; /* those that require grad (borrowed) */
  size_t ndout;
  double **num, **ana; /* [o * ndin + i]: Jacobian of checked output o w.r.t. din[i] */
} gc;

/* Calls fn; on success outs[0..*nout) are new references, each a tensor. */
disp_status disp__gc_call(disp_gradcheck_fn fn, void *ctx, disp_tensor *const *inputs, size_t n,
                          disp_tensor **outs, size_t *nout) {
  size_t k = DISP_GRADCHECK_MAX_OUTPUTS;
  memset(outs, 0, DISP_GRADCHECK_MAX_OUTPUTS * sizeof *outs);
  disp_status st = fn(inputs, n, outs, &k, ctx);
  if (k > DISP_GRADCHECK_MAX_OUTPUTS) k = DISP_GRADCHECK_MAX_OUTPUTS;
  for (size_t i = 0; i < k && st == DISP_OK; i++)
    if (!outs[i]) st = disp__fail(DISP_ERR_INVALID_ARG, "gradcheck: the function's output %zu is NULL", i);
  if (st != DISP_OK) {
    disp__gc_release(outs, DISP_GRADCHECK_MAX_OUTPUTS);
    k = 0;
  }
  *nout = k;
  return st;
}

void disp__gc_release(disp_tensor **t, size_t n) {
  for (size_t i = 0; i < n; i++) {
    disp_tensor_release(t[i]);
    t[i] = NULL;
  }
}

/* ---- elements ------------------------------------------------------------ */

/* The address of logical element e (row-major) of a strided CPU tensor. */
static char *elem_at(const disp_tensor *t, int64_t e) {
  const int64_t *sz = disp_tensor_sizes(t), *sd = disp_tensor_strides(t);
  int64_t off = 0;
  for (int d = disp_tensor_ndim(t) - 1; d >= 0; d--) {
    off += (e % sz[d]) * sd[d];
    e /= sz[d];
  }
  return (char *)disp_tensor_data_ptr(t) + off * (int64_t)disp_tensor_itemsize(t);
}

static double load(const disp_tensor *t, int64_t e) {
  const char *p = elem_at(t, e);
  if (disp_tensor_dtype(t) == DISP_DTYPE_FLOAT32) { float f; memcpy(&f, p, 4); return f; }
  double d;
  memcpy(&d, p, 8);
  return d;
}

static void store(disp_tensor *t, int64_t e, double v) {
  char *p = elem_at(t, e);
  if (disp_tensor_dtype(t) == DISP_DTYPE_FLOAT32) { float f = (float)v; memcpy(p, &f, 4); return; }
  memcpy(p, &v, 8);
}

/* Whether gradcheck can read and write t's elements. */
static int elementwise_ok(const disp_tensor *t) {
  disp_dtype dt = disp_tensor_dtype(t);
  return (dt == DISP_DTYPE_FLOAT32 || dt == DISP_DTYPE_FLOAT64) && disp_tensor_device(t).type == DISP_BACKEND_CPU &&
         (disp_tensor_numel(t) == 0 || disp_tensor_data_ptr(t));
}

/* t's elements as doubles in logical order (row j of a Jacobian column
 * block); t is read right away since a view output changes with its input. */
static disp_status read_all(const disp_tensor *t, const char *what, size_t idx, double *dst) {
  if (!elementwise_ok(t))
    return disp__fail(DISP_ERR_TYPE, "gradcheck: %s %zu must be a float32 or float64 CPU tensor, got %s", what, idx,
                      disp_dtype_name(disp_tensor_dtype(t)));
  for (int64_t e = 0, n = disp_tensor_numel(t); e < n; e++) dst[e] = load(t, e);
  return DISP_OK;
}

/* ---- inputs ---------------------------------------------------------------- */

/* PyTorch's _check_inputs, and collecting the inputs that require grad. */
static disp_status check_inputs(gc *g) {
  g->din = disp__calloc(g->n ? g->n : 1, sizeof *g->din);
  if (!g->din) return disp__fail(DISP_ERR_NO_MEMORY, "gradcheck: out of memory");
  for (size_t i = 0; i < g->n; i++) {
    disp_tensor *t = g->inputs[i];
    if (!t || !disp_tensor_requires_grad(t)) continue;
    if (disp_tensor_dtype(t) != DISP_DTYPE_FLOAT64)
      disp__warn("Input #%zu requires gradient and is not a double precision floating point or complex. This "
                 "check will likely fail if all the inputs are not of double precision floating point or complex. ",
                 i);
    const int64_t *sz = disp_tensor_sizes(t), *sd = disp_tensor_strides(t);
    for (int d = 0; d < disp_tensor_ndim(t); d++)
      if (sd[d] == 0 && sz[d] > 1)
        return disp__fail(DISP_ERR_INVALID_ARG,
                          "The %zuth input has a dimension with stride 0. gradcheck only supports inputs that are "
                          "non-overlapping to be able to compute the numerical gradients correctly. You should "
                          "call .contiguous on the input before passing it to gradcheck.",
                          i);
    if (!elementwise_ok(t))
      return disp__fail(DISP_ERR_TYPE, "gradcheck: input %zu must be a float32 or float64 CPU tensor, got %s", i,
                        disp_dtype_name(disp_tensor_dtype(t)));
    g->din[g->ndin++] = t;
  }
  if (!g->ndin)
    return disp__fail(DISP_ERR_INVALID_ARG, "gradcheck expects at least one input tensor to require gradient, "
                                            "but none of the them have requires_grad=True.");
  return DISP_OK;
}

/* ---- Jacobians --------------------------------------------------------------- */

/* How many cells Jacobian k (output k / ndin, input k % ndin) has. */
static size_t cells_of(const gc *g, size_t k) {
  return (size_t)(disp_tensor_numel(g->din[k % g->ndin]) * disp_tensor_numel(g->dout[k / g->ndin]));
}

static disp_status alloc_jacobians(gc *g, double ***j) {
  *j = disp__calloc(g->ndout * g->ndin + 1, sizeof **j);
  if (!*j) return disp__fail(DISP_ERR_NO_MEMORY, "gradcheck: out of memory");
  for (size_t k = 0; k < g->ndout * g->ndin; k++) {
    size_t cells = cells_of(g, k);
    (*j)[k] = disp__calloc(cells ? cells : 1, sizeof(double));
    if (!(*j)[k]) return disp__fail(DISP_ERR_NO_MEMORY, "gradcheck: out of memory");
  }
  return DISP_OK;
}

static void free_jacobians(const gc *g, double **j) {
  if (!j) return;
  for (size_t k = 0; k < g->ndout * g->ndin; k++) disp__free(j[k]);
  disp__free(j);
}

/* One perturbed call: the checked outputs' values into buf[o] (numel each). */
static disp_status eval_outputs(gc *g, double **buf) {
  disp_tensor *outs[DISP_GRADCHECK_MAX_OUTPUTS];
  size_t k = 0;
  disp_status st = disp__gc_call(g->fn, g->ctx, g->inputs, g->n, outs, &k);
  if (st != DISP_OK) return st;
  for (size_t o = 0; o < g->ndout && st == DISP_OK; o++) {
    /* the checked outputs keep their places: dout[o] is outs[pos[o]] of the first call */
    size_t pos = 0;
    while (pos < g->nouts && g->outs[pos] != g->dout[o]) pos++;
    if (pos >= k || disp_tensor_numel(outs[pos]) != disp_tensor_numel(g->dout[o]))
      st = disp__fail(DISP_ERR_INVALID_ARG, "gradcheck: the function's outputs changed shape between calls");
    else st = read_all(outs[pos], "output", pos, buf[o]);
  }
  disp__gc_release(outs, k);
  return st;
}

/* Central differences: row e of num[o][i] = (f(x + eps) - f(x - eps)) / 2eps. */
static disp_status numerical(gc *g) {
  double *lo[DISP_GRADCHECK_MAX_OUTPUTS] = {0}, *hi[DISP_GRADCHECK_MAX_OUTPUTS] = {0};
  disp_status st = alloc_jacobians(g, &g->num);
  for (size_t o = 0; o < g->ndout && st == DISP_OK; o++) {
    size_t m = (size_t)disp_tensor_numel(g->dout[o]) + 1;
    lo[o] = disp__malloc(m * sizeof(double)), hi[o] = disp__malloc(m * sizeof(double));
    if (!lo[o] || !hi[o]) st = disp__fail(DISP_ERR_NO_MEMORY, "gradcheck: out of memory");
  }
  for (size_t i = 0; i < g->ndin && st == DISP_OK; i++) {
    disp_tensor *x = g->din[i];
    for (int64_t e = 0, ne = disp_tensor_numel(x); e < ne && st == DISP_OK; e++) {
      double orig = load(x, e);
      store(x, e, orig - g->o.eps);
      st = eval_outputs(g, lo);
      store(x, e, orig + g->o.eps);
      if (st == DISP_OK) st = eval_outputs(g, hi);
      store(x, e, orig);
      for (size_t o = 0; o < g->ndout && st == DISP_OK; o++) {
        int64_t m = disp_tensor_numel(g->dout[o]);
        double *row = g->num[o * g->ndin + i] + e * m;
        for (int64_t c = 0; c < m; c++) row[c] = (hi[o][c] - lo[o][c]) / (2 * g->o.eps);
      }
    }
  }
  for (size_t o = 0; o < g->ndout; o++) disp__free(lo[o]), disp__free(hi[o]);
  return st;
}

/* A one-hot gradient for output `out`: zeros with a 1 at logical element j. */
static disp_status one_hot(const disp_tensor *out, int64_t j, disp_tensor **g) {
  disp_status st = disp_tensor_empty(disp_tensor_sizes(out), disp_tensor_ndim(out), disp_tensor_dtype(out),
                                     disp_tensor_device(out), g);
  if (st != DISP_OK) return st;
  for (int64_t e = 0, n = disp_tensor_numel(*g); e < n; e++) store(*g, e, e == j ? 1.0 : 0.0);
  return DISP_OK;
}

/* Column j of ana[o][i] for every input: the gradient for a one-hot grad
 * output (PyTorch's _compute_analytical_jacobian_rows). NULL is zeros. */
static disp_status vjp_column(gc *g, size_t o, int64_t j, double **ana) {
  disp_tensor *out = g->dout[o], *go = NULL;
  disp_tensor **grads = disp__calloc(g->ndin, sizeof *grads);
  if (!grads) return disp__fail(DISP_ERR_NO_MEMORY, "gradcheck: out of memory");
  disp_status st = one_hot(out, j, &go);
  if (st == DISP_OK) st = disp_autograd_grad(&out, 1, g->din, g->ndin, &go, 1, 0, 1, grads);
  int64_t m = disp_tensor_numel(out);
  for (size_t i = 0; i < g->ndin && st == DISP_OK; i++) {
    disp_tensor *gi = grads[i], *x = g->din[i];
    double *col = ana[o * g->ndin + i];
    int64_t ne = disp_tensor_numel(x);
    if (!gi) {
      for (int64_t e = 0; e < ne; e++) col[e * m + j] = 0.0;
      continue;
    }
    if (disp_tensor_ndim(gi) != disp_tensor_ndim(x) ||
        memcmp(disp_tensor_sizes(gi), disp_tensor_sizes(x), (size_t)disp_tensor_ndim(x) * sizeof(int64_t)))
      st = disp__fail(DISP_ERR_MISMATCH, "Analytical gradient has incorrect size");
    else if (!elementwise_ok(gi))
      st = disp__fail(DISP_ERR_TYPE, "gradcheck: the gradient of input %zu is a %s tensor", i,
                      disp_dtype_name(disp_tensor_dtype(gi)));
    for (int64_t e = 0; e < ne && st == DISP_OK; e++) col[e * m + j] = load(gi, e);
  }
  for (size_t i = 0; i < g->ndin; i++) disp_tensor_release(grads[i]);
  disp__free(grads);
  disp_tensor_release(go);
  return st;
}

static disp_status analytical_once(gc *g, double ***ana) {
  disp_status st = alloc_jacobians(g, ana);
  for (size_t o = 0; o < g->ndout && st == DISP_OK; o++)
    for (int64_t j = 0, m = disp_tensor_numel(g->dout[o]); j < m && st == DISP_OK; j++) st = vjp_column(g, o, j, *ana);
  return st;
}

/* The analytical Jacobians, computed twice: backward must give the same
 * values again (PyTorch's reentrancy check, within nondet_tol). */
static disp_status analytical(gc *g) {
  double **again = NULL;
  disp_status st = analytical_once(g, &g->ana);
  if (st == DISP_OK) st = analytical_once(g, &again);
  double tol = g->o.nondet_tol;
  const char *point = tol == floor(tol) && fabs(tol) < 1e15 ? ".0" : ""; /* Python prints 0.0 */
  for (size_t k = 0; k < g->ndout * g->ndin && st == DISP_OK; k++) {
    for (size_t c = 0; c < cells_of(g, k) && st == DISP_OK; c++)
      if (fabs(g->ana[k][c] - again[k][c]) > tol) /* NaN passes here as in PyTorch; compare() fails it */
        st = disp__fail(DISP_ERR_MISMATCH,
                        "Backward is not reentrant, i.e., running backward with same input and grad_output "
                        "multiple times gives different values, although analytical gradient matches numerical "
                        "gradient.The tolerance for nondeterminism was %g%s.",
                        tol, point);
  }
  free_jacobians(g, again);
  return st;
}

/* ---- comparing ------------------------------------------------------------- */

static disp_status compare(gc *g) {
  for (size_t o = 0; o < g->ndout; o++)
    for (size_t i = 0; i < g->ndin; i++) {
      int64_t rows = disp_tensor_numel(g->din[i]), cols = disp_tensor_numel(g->dout[o]);
      const double *a = g->ana[o * g->ndin + i], *n = g->num[o * g->ndin + i];
      for (int64_t c = 0; c < rows * cols; c++)
        if (!(fabs(a[c] - n[c]) <= g->o.atol + g->o.rtol * fabs(n[c]))) return disp__gc_mismatch(o, i, n, a, rows, cols);
    }
  return DISP_OK;
}

/* PyTorch's _test_backward_mul_by_grad_output: zero grad_outputs must give
 * zero (or None) gradients. */
static disp_status mul_by_grad_output(gc *g) {
  disp_tensor *zeros[DISP_GRADCHECK_MAX_OUTPUTS] = {0};
  disp_tensor **grads = disp__calloc(g->ndin, sizeof *grads);
  if (!grads) return disp__fail(DISP_ERR_NO_MEMORY, "gradcheck: out of memory");
  disp_status st = DISP_OK;
  for (size_t o = 0; o < g->ndout && st == DISP_OK; o++) st = one_hot(g->dout[o], -1, &zeros[o]);
  if (st == DISP_OK) st = disp_autograd_grad(g->dout, g->ndout, g->din, g->ndin, zeros, 0, 0, 1, grads);
  for (size_t i = 0; i < g->ndin && st == DISP_OK; i++) {
    disp_tensor *gi = grads[i], *x = g->din[i];
    if (!gi) continue;
    if (disp_tensor_dtype(gi) != disp_tensor_dtype(x) || !elementwise_ok(gi))
      st = disp__fail(DISP_ERR_MISMATCH, "grad is incorrect type");
    else if (disp_tensor_ndim(gi) != disp_tensor_ndim(x) ||
             memcmp(disp_tensor_sizes(gi), disp_tensor_sizes(x), (size_t)disp_tensor_ndim(x) * sizeof(int64_t)))
      st = disp__fail(DISP_ERR_MISMATCH, "grad is incorrect size");
    for (int64_t e = 0, ne = disp_tensor_numel(gi); e < ne && st == DISP_OK; e++)
      if (load(gi, e) != 0.0) st = disp__fail(DISP_ERR_MISMATCH, "backward not multiplied by grad_output");
  }
  for (size_t i = 0; i < g->ndin; i++) disp_tensor_release(grads[i]);
  disp__free(grads);
  disp__gc_release(zeros, g->ndout);
  return st;
}

/* ---- the check ------------------------------------------------------------- */

/* No output requires grad: then the function must not depend on the inputs
 * (PyTorch's _check_no_differentiable_outputs), over its floating outputs. */
static disp_status no_differentiable_outputs(gc *g) {
  for (size_t k = 0; k < g->nouts; k++) {
    if (!disp_dtype_is_floating(disp_tensor_dtype(g->outs[k]))) continue;
    if (!elementwise_ok(g->outs[k])) return read_all(g->outs[k], "output", k, NULL);
    g->dout[g->ndout++] = g->outs[k];
  }
  disp_status st = numerical(g);
  for (size_t k = 0; k < g->ndout * g->ndin && st == DISP_OK; k++) {
    for (size_t c = 0; c < cells_of(g, k) && st == DISP_OK; c++)
      if (g->num[k][c] != 0.0) st = disp__fail(DISP_ERR_MISMATCH, "Numerical gradient for function expected to be zero");
  }
  return st;
}

static disp_status run(gc *g) {
  disp_status st = check_inputs(g);
  if (st == DISP_OK) st = disp__gc_call(g->fn, g->ctx, g->inputs, g->n, g->outs, &g->nouts);
  if (st != DISP_OK) return st;
  for (size_t k = 0; k < g->nouts; k++) {
    if (!disp_tensor_requires_grad(g->outs[k])) continue;
    if (!elementwise_ok(g->outs[k])) return read_all(g->outs[k], "output", k, NULL); /* its type error */
    g->dout[g->ndout++] = g->outs[k];
  }
  if (!g->ndout) return no_differentiable_outputs(g);
  st = numerical(g);
  if (st == DISP_OK) st = analytical(g);
  if (st == DISP_OK) st = compare(g);
  if (st == DISP_OK) st = mul_by_grad_output(g);
  return st;
}

disp_status disp_gradcheck(disp_gradcheck_fn fn, void *ctx, disp_tensor *const *inputs, size_t n,
                           const disp_gradcheck_options *opts) {
  DISP_REFUSE_NULL(fn);
  DISP_REFUSE_NULL_ARRAY(inputs, n);
  gc g = {0};
  g.fn = fn, g.ctx = ctx, g.inputs = inputs, g.n = n;
  g.o = opts ? *opts : disp_gradcheck_default_options();
  disp_status st = run(&g);
  free_jacobians(&g, g.num);
  free_jacobians(&g, g.ana);
  disp__gc_release(g.outs, g.nouts);
  disp__free(g.din);
  return st;
}
