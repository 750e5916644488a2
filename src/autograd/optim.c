/*
 * optim.c - the optimizer object of disp/optim.h: creation with
 * torch.optim 1.13's checks, the step driver (check everything, then
 * update), zero_grad and the accessors. The update rules themselves are in
 * optim_sgd.c and optim_adam.c (CPU loops) and optim_device.c (dispatched,
 * Note [Optimizer devices]).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "argcheck_internal.h"
#include "disp.h"
#include "disp/autograd.h"
#include "disp/optim.h"
#include "optim_internal.h"

/* ---- Python's float repr, for 1.13's messages ("Invalid learning rate: -1.0") ---- */

/*
 * Python prints a float with the fewest digits that read back to the same
 * double, in fixed notation for decimal exponents -4..15 (always with a
 * fractional part: "1.0"), else as "1e-05" / "1.5e+16". buf holds 48 bytes.
 */
static void py_float_repr(double v, char buf[48]) {
  if (isnan(v) || isinf(v)) {
    strcpy(buf, isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
    return;
  }
  char e[40];
  for (int prec = 0; prec < 17; ++prec) { /* "%.{prec}e": prec + 1 significant digits */
    snprintf(e, sizeof e, "%.*e", prec, v);
    if (strtod(e, NULL) == v) break;
  }
  /* e is "[-]d[.ddd]e[+-]XX": its digits and decimal exponent */
  char digits[24];
  int nd = 0;
  const char *s = e + (e[0] == '-');
  for (; *s != 'e'; ++s)
    if (*s != '.') digits[nd++] = *s;
  while (nd > 1 && digits[nd - 1] == '0') --nd;
  int exp10 = atoi(s + 1);
  char *w = buf;
  if (e[0] == '-') *w++ = '-';
  if (exp10 < -4 || exp10 >= 16) {
    *w++ = digits[0];
    if (nd > 1) *w++ = '.';
    for (int k = 1; k < nd; ++k) *w++ = digits[k];
    snprintf(w, 16, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    return;
  }
  if (exp10 < 0) {
    *w++ = '0', *w++ = '.';
    for (int k = 0; k < -exp10 - 1; ++k) *w++ = '0';
  }
  int ndigits = nd > exp10 + 1 ? nd : exp10 + 1; /* the integer part is padded with zeros */
  for (int k = 0; k < ndigits; ++k) {
    if (k == exp10 + 1 && exp10 >= 0) *w++ = '.';
    *w++ = k < nd ? digits[k] : '0';
  }
  if (nd <= exp10 + 1) *w++ = '.', *w++ = '0';
  *w = '\0';
}

/* Fails with "<what>: <Python repr of v>", ValueError's text in 1.13. */
static disp_status invalid_value(const char *what, double v) {
  char num[48];
  py_float_repr(v, num);
  return disp__fail(DISP_ERR_INVALID_ARG, "%s: %s", what, num);
}

/* ---- options ------------------------------------------------------------- */

DISP_API disp_sgd_options disp_sgd_options_default(void) {
  disp_sgd_options o = {NAN, 0.0, 0.0, 0.0, 0, 0};
  return o;
}

DISP_API disp_adam_options disp_adam_options_default(void) {
  disp_adam_options o = {1e-3, 0.9, 0.999, 1e-8, 0.0, 0, 0};
  return o;
}

DISP_API disp_adam_options disp_adamw_options_default(void) {
  disp_adam_options o = disp_adam_options_default();
  o.weight_decay = 1e-2;
  return o;
}

/* torch.optim.SGD.__init__'s checks, in its order. A NaN lr is "not given". */
static disp_status check_sgd(const disp_sgd_options *o) {
  if (o->lr < 0.0) return invalid_value("Invalid learning rate", o->lr);
  if (o->momentum < 0.0) return invalid_value("Invalid momentum value", o->momentum);
  if (o->weight_decay < 0.0) return invalid_value("Invalid weight_decay value", o->weight_decay);
  if (o->nesterov && (o->momentum <= 0.0 || o->dampening != 0.0))
    return disp__fail(DISP_ERR_INVALID_ARG, "Nesterov momentum requires a momentum and zero dampening");
  return DISP_OK;
}

/* torch.optim.Adam/AdamW.__init__'s checks ("not 0.0 <= x": NaN fails too). */
static disp_status check_adam(const disp_adam_options *o) {
  if (!(0.0 <= o->lr)) return invalid_value("Invalid learning rate", o->lr);
  if (!(0.0 <= o->eps)) return invalid_value("Invalid epsilon value", o->eps);
  if (!(0.0 <= o->beta1 && o->beta1 < 1.0)) return invalid_value("Invalid beta parameter at index 0", o->beta1);
  if (!(0.0 <= o->beta2 && o->beta2 < 1.0)) return invalid_value("Invalid beta parameter at index 1", o->beta2);
  if (!(0.0 <= o->weight_decay)) return invalid_value("Invalid weight_decay value", o->weight_decay);
  return DISP_OK;
}

/* ---- creation ------------------------------------------------------------ */

int disp__optim_on_device(const disp_tensor *p) { return disp_tensor_device(p).type != DISP_BACKEND_CPU; }

/*
 * What the updates can work on (Note [Optimizer devices]): the CPU loops
 * dense contiguous float32/float64 data; the dispatched path any dense
 * floating-point tensor (the device's kernels decide what else they take).
 */
static int param_supported(const disp_tensor *p) {
  disp_dtype dt = disp_tensor_dtype(p);
  if (disp_tensor_layout(p) != DISP_LAYOUT_STRIDED) return 0;
  if (disp__optim_on_device(p)) return disp_dtype_is_floating(dt);
  return (dt == DISP_DTYPE_FLOAT32 || dt == DISP_DTYPE_FLOAT64) && disp_tensor_is_contiguous(p) &&
         disp_tensor_opaque_handle(p) == NULL;
}

static int compare_ptr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (disp_tensor *const *)a, y = (uintptr_t) * (disp_tensor *const *)b;
  return x < y ? -1 : x > y;
}

/* Whether a tensor appears twice: sorted pointers, so building an optimizer
 * stays O(n log n) (a pairwise check took 3.4 s for 100,000 parameters). */
static int has_duplicates(disp_tensor *const *params, size_t n) {
  disp_tensor **sorted = disp__malloc(n * sizeof *sorted);
  if (!sorted) return 0; /* only a warning is at stake */
  memcpy(sorted, params, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, compare_ptr);
  int dup = 0;
  for (size_t i = 1; i < n && !dup; ++i) dup = sorted[i] == sorted[i - 1];
  disp__free(sorted);
  return dup;
}

/* Optimizer.__init__ / add_param_group's checks of the parameter list. */
static disp_status check_params(const char *fn, disp_tensor *const *params, size_t n, int lr_given) {
  if (n == 0) return disp__fail(DISP_ERR_INVALID_ARG, "optimizer got an empty parameter list");
  for (size_t i = 0; i < n; ++i) {
    if (params[i] == NULL) return disp__fail(DISP_ERR_INVALID_ARG, "%s: params[%zu] is NULL", fn, i);
    if (!disp_tensor_is_leaf(params[i]) && !disp_tensor_retains_grad(params[i]))
      return disp__fail(DISP_ERR_INVALID_ARG, "can't optimize a non-leaf Tensor");
  }
  if (!lr_given)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "parameter group didn't specify a value of required optimization parameter lr");
  for (size_t i = 0; i < n; ++i) {
    if (param_supported(params[i])) continue;
    char dev[32];
    disp_device_format(disp_tensor_device(params[i]), dev, sizeof dev);
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "%s: parameter %zu is a %s%s tensor on %s; the optimizers update dense contiguous "
                      "float32 or float64 CPU tensors and dense floating-point tensors of other devices",
                      fn, i, disp_tensor_is_contiguous(params[i]) ? "" : "non-contiguous ",
                      disp_dtype_name(disp_tensor_dtype(params[i])), dev);
  }
  if (has_duplicates(params, n))
    disp__warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
               "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information");
  return DISP_OK;
}

static disp_status optim_new(optim_kind kind, disp_tensor *const *params, size_t n, disp_optimizer **out) {
  disp_optimizer *opt = disp__calloc(1, sizeof *opt);
  disp_tensor **ps = disp__calloc(n, sizeof *ps);
  optim_state *st = disp__calloc(n, sizeof *st);
  if (opt == NULL || ps == NULL || st == NULL) {
    disp__free(opt), disp__free(ps), disp__free(st);
    return disp__fail(DISP_ERR_NO_MEMORY, "optimizer: out of memory for %zu parameters", n);
  }
  for (size_t i = 0; i < n; ++i) ps[i] = disp_tensor_retain(params[i]);
  opt->kind = kind;
  opt->n = n;
  opt->params = ps;
  opt->state = st;
  *out = opt;
  return DISP_OK;
}

/* The NULL checks of the three constructors (each names its own function). */
#define REFUSE_NULL_NEW_ARGS()         \
  do {                                 \
    DISP_REFUSE_NULL_ARRAY(params, n); \
    DISP_REFUSE_NULL(o);               \
    DISP_REFUSE_NULL(out);             \
  } while (0)

DISP_API disp_status disp_optim_sgd_new(disp_tensor *const *params, size_t n, const disp_sgd_options *o,
                                        disp_optimizer **out) {
  REFUSE_NULL_NEW_ARGS();
  disp_status st = check_sgd(o);
  if (st == DISP_OK) st = check_params(__func__, params, n, !isnan(o->lr));
  if (st == DISP_OK) st = optim_new(OPTIM_SGD, params, n, out);
  if (st == DISP_OK) (*out)->sgd = *o;
  return st;
}

static disp_status adam_new(const char *fn, optim_kind kind, disp_tensor *const *params, size_t n,
                            const disp_adam_options *o, disp_optimizer **out) {
  disp_status st = check_adam(o);
  if (st == DISP_OK) st = check_params(fn, params, n, 1);
  if (st == DISP_OK) st = optim_new(kind, params, n, out);
  if (st == DISP_OK) (*out)->adam = *o;
  return st;
}

DISP_API disp_status disp_optim_adam_new(disp_tensor *const *params, size_t n, const disp_adam_options *o,
                                         disp_optimizer **out) {
  REFUSE_NULL_NEW_ARGS();
  return adam_new(__func__, OPTIM_ADAM, params, n, o, out);
}

DISP_API disp_status disp_optim_adamw_new(disp_tensor *const *params, size_t n, const disp_adam_options *o,
                                          disp_optimizer **out) {
  REFUSE_NULL_NEW_ARGS();
  return adam_new(__func__, OPTIM_ADAMW, params, n, o, out);
}

DISP_API void disp_optim_free(disp_optimizer *opt) {
  if (opt == NULL) return;
  for (size_t i = 0; i < opt->n; ++i) {
    disp_tensor_release(opt->params[i]);
    for (int k = 0; k < OPTIM_NSTATE; ++k) disp_tensor_release(opt->state[i].t[k]);
  }
  disp__free(opt->params);
  disp__free(opt->state);
  disp__free(opt);
}

/* ---- step ---------------------------------------------------------------- */

disp_status disp__optim_zeros_like(disp_tensor *like, disp_tensor **out) {
  if (disp__optim_on_device(like)) /* 1.13's torch.zeros_like(p, memory_format=torch.preserve_format) */
    return disp_aten_zeros_like(like, -1, -1, (disp_opt_device){0, 0, false}, (disp_opt_bool){false, false},
                                DISP_MEMORY_FORMAT_PRESERVE, out);
  disp_status st = disp_tensor_empty(disp_tensor_sizes(like), disp_tensor_ndim(like), disp_tensor_dtype(like),
                                     disp_tensor_device(like), out);
  if (st != DISP_OK) return st;
  size_t nbytes = (size_t)disp_tensor_numel(like) * disp_tensor_itemsize(like);
  if (nbytes > 0) memset(disp_tensor_data_ptr(*out), 0, nbytes);
  return DISP_OK;
}

void disp__optim_bump(disp_tensor *t, int times) {
  /* cannot fail: step() checked inference parameters, state tensors are the parameters' kind */
  for (int k = 0; k < times; ++k) (void)disp_tensor_bump_version(t);
}

int disp__optim_cpu_has_fma(void) {
#if OPTIM_FMA_CLONES
  /* the kernels' capability ("avx2" and "avx512" imply AVX2 + FMA), so
   * DISP_CPU_CAPABILITY=default runs (and tests) the portable loops */
  return strcmp(disp_cpu_capability(), "default") != 0;
#else
  return 0;
#endif
}

/* Which state slots the step's first phase allocates for parameter p. SGD's
 * dispatched path clones its momentum buffer in the update, as 1.13 does. */
static int state_slots(const disp_optimizer *opt, const disp_tensor *p) {
  if (opt->kind == OPTIM_SGD) return opt->sgd.momentum != 0.0 && !disp__optim_on_device(p) ? 1 : 0;
  return opt->adam.amsgrad ? 3 : 2;
}

static const char *kind_name(optim_kind k) { return k == OPTIM_SGD ? "SGD" : k == OPTIM_ADAM ? "Adam" : "AdamW"; }

/* The checks of one gradient against its parameter, as PyTorch's step and set_grad make them. */
static disp_status check_grad(const disp_optimizer *opt, size_t i, disp_tensor *p, const disp_tensor *g) {
  if (disp_tensor_layout(g) == DISP_LAYOUT_SPARSE_COO) {
    if (opt->kind == OPTIM_ADAM)
      return disp__fail(DISP_ERR_INVALID_ARG,
                        "Adam does not support sparse gradients, please consider SparseAdam instead");
    return disp__fail(DISP_ERR_INVALID_ARG, "%s does not support sparse gradients", kind_name(opt->kind));
  }
  if (!disp_device_equal(disp_tensor_device(g), disp_tensor_device(p))) {
    /* what 1.13's first operation on both (TensorIterator's device check) says */
    char pd[32], gd[32];
    disp_device_format(disp_tensor_device(p), pd, sizeof pd);
    disp_device_format(disp_tensor_device(g), gd, sizeof gd);
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "disp_optim_step: parameter %zu: Expected all tensors to be on the same device, but found "
                      "at least two devices, %s and %s!",
                      i, pd, gd);
  }
  int ndim = disp_tensor_ndim(p);
  /* the loops read a CPU gradient's data; the dispatched path hands it to the device's kernels */
  int same = disp_tensor_dtype(g) == disp_tensor_dtype(p) && disp_tensor_ndim(g) == ndim &&
             (disp__optim_on_device(p) || disp_tensor_opaque_handle(g) == NULL) &&
             memcmp(disp_tensor_sizes(g), disp_tensor_sizes(p), (size_t)ndim * sizeof(int64_t)) == 0;
  if (!same)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "disp_optim_step: the gradient of parameter %zu differs from the parameter in dtype "
                      "or sizes (%s grad of a %s parameter)",
                      i, disp_dtype_name(disp_tensor_dtype(g)), disp_dtype_name(disp_tensor_dtype(p)));
  if (disp_tensor_is_inference(p) && !disp_inference_mode_enabled())
    return disp_tensor_bump_version(p); /* fails with PyTorch's message, changes nothing */
  return DISP_OK;
}

/* "[2, 3]" into buf. */
static void format_sizes(const disp_tensor *t, char *buf, size_t len) {
  size_t used = (size_t)snprintf(buf, len, "[");
  for (int d = 0; d < disp_tensor_ndim(t) && used < len; d++)
    used += (size_t)snprintf(buf + used, len - used, "%s%lld", d ? ", " : "", (long long)disp_tensor_sizes(t)[d]);
  if (used < len) snprintf(buf + used, len - used, "]");
}

/* Parameter i as the loops and its state need it: still a tensor the
 * updates take (a CPU one dense and contiguous), and of the sizes, dtype
 * and device of the state made for it. A parameter resized, made
 * non-contiguous or moved after the state was made would have Adam write
 * past its state and SGD update the wrong elements. */
static disp_status check_param_unchanged(const disp_optimizer *opt, size_t i) {
  const disp_tensor *p = opt->params[i], *s = opt->state[i].t[0];
  char was[96], now[96];
  if (!param_supported(p))
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "disp_optim_step: parameter %zu of this %s optimizer changed after it was built: it is no "
                      "longer a dense contiguous float32/float64 tensor (%s%s); the update would write the "
                      "wrong elements",
                      i, kind_name(opt->kind), disp_tensor_is_contiguous(p) ? "" : "non-contiguous ",
                      disp_dtype_name(disp_tensor_dtype(p)));
  if (!s) return DISP_OK;
  int ndim = disp_tensor_ndim(p);
  if (disp_tensor_ndim(s) != ndim ||
      memcmp(disp_tensor_sizes(s), disp_tensor_sizes(p), (size_t)ndim * sizeof(int64_t)) != 0) {
    format_sizes(s, was, sizeof was), format_sizes(p, now, sizeof now);
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "disp_optim_step: parameter %zu of this %s optimizer changed after its state was made: its "
                      "sizes are now %s, its state's %s",
                      i, kind_name(opt->kind), now, was);
  }
  if (disp_tensor_dtype(s) != disp_tensor_dtype(p) ||
      !disp_device_equal(disp_tensor_device(s), disp_tensor_device(p))) {
    disp_device_format(disp_tensor_device(s), was, sizeof was);
    disp_device_format(disp_tensor_device(p), now, sizeof now);
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "disp_optim_step: parameter %zu of this %s optimizer changed after its state was made: it "
                      "is a %s tensor on %s now, its state a %s tensor on %s",
                      i, kind_name(opt->kind), disp_dtype_name(disp_tensor_dtype(p)), now,
                      disp_dtype_name(disp_tensor_dtype(s)), was);
  }
  return DISP_OK;
}

/*
 * Phase 1 for parameter i: check its gradient, read it through a contiguous
 * copy when needed (*gc: a new reference), and allocate missing state.
 */
static disp_status prepare(disp_optimizer *opt, size_t i, disp_tensor *g, disp_tensor **gc) {
  disp_tensor *p = opt->params[i];
  disp_status st = check_grad(opt, i, p, g);
  if (st != DISP_OK) return st;
  int copy = !disp__optim_on_device(p) && !disp_tensor_is_contiguous(g); /* the loops read it flat */
  st = copy ? disp_aten_contiguous(g, DISP_MEMORY_FORMAT_CONTIGUOUS, gc) : DISP_OK;
  if (st == DISP_OK && *gc == NULL) *gc = disp_tensor_retain(g);
  for (int k = 0; st == DISP_OK && k < state_slots(opt, p); ++k)
    if (opt->state[i].t[k] == NULL) st = disp__optim_zeros_like(p, &opt->state[i].t[k]);
  return st;
}

/* Phase 2 for parameter i: its update, by the loops or dispatched. */
static disp_status update(disp_optimizer *opt, size_t i, disp_tensor *g) {
  int sgd = opt->kind == OPTIM_SGD;
  if (disp__optim_on_device(opt->params[i]))
    return sgd ? disp__optim_sgd_device_update(opt, i, g) : disp__optim_adam_device_update(opt, i, g);
  if (sgd) disp__optim_sgd_update(opt, i, g);
  else disp__optim_adam_update(opt, i, g);
  return DISP_OK;
}

/* Both phases under no-grad: nothing is recorded (the update is not differentiable). */
static disp_status step_all(disp_optimizer *opt, disp_tensor **grads) {
  disp_status st = DISP_OK;
  /* every parameter checked before any state is made or anything updated */
  for (size_t i = 0; i < opt->n && st == DISP_OK; ++i) {
    disp_tensor *g = disp_tensor_grad(opt->params[i]);
    if (g != NULL) st = check_param_unchanged(opt, i);
    if (g != NULL && st == DISP_OK) st = check_grad(opt, i, opt->params[i], g);
  }
  for (size_t i = 0; i < opt->n && st == DISP_OK; ++i) {
    disp_tensor *g = disp_tensor_grad(opt->params[i]);
    if (g != NULL) st = prepare(opt, i, g, &grads[i]);
  }
  /* grad None: skipped, state untouched */
  for (size_t i = 0; i < opt->n && st == DISP_OK; ++i)
    if (grads[i] != NULL) st = update(opt, i, grads[i]);
  return st;
}

DISP_API disp_status disp_optim_step(disp_optimizer *opt) {
  DISP_REFUSE_NULL(opt);
  disp_tensor **grads = disp__calloc(opt->n, sizeof *grads);
  if (grads == NULL) return disp__fail(DISP_ERR_NO_MEMORY, "disp_optim_step: out of memory");
  disp_tls_state saved = disp_grad_mode_push(0);
  disp_status st = step_all(opt, grads);
  disp_tls_restore(saved);
  for (size_t i = 0; i < opt->n; ++i) disp_tensor_release(grads[i]);
  disp__free(grads);
  return st;
}

/* ---- zero_grad and accessors ---------------------------------------------- */

DISP_API disp_status disp_optim_zero_grad(disp_optimizer *opt, int set_to_none) {
  DISP_REFUSE_NULL(opt);
  for (size_t i = 0; i < opt->n; ++i) {
    disp_tensor *g = disp_tensor_grad(opt->params[i]);
    if (g == NULL) continue;
    disp_status st;
    if (set_to_none) {
      st = disp_tensor_set_grad(opt->params[i], NULL);
    } else {
      /* 1.13: detach_() a grad with a grad_fn, else requires_grad_(False); then zero_() */
      st = disp_tensor_grad_fn(g) ? disp_tensor_detach_(g) : disp_tensor_set_requires_grad(g, 0);
      disp_tensor *r = NULL;
      if (st == DISP_OK) st = disp_aten_zero_(g, &r);
      disp_tensor_release(r);
    }
    if (st != DISP_OK) return st;
  }
  return DISP_OK;
}

DISP_API size_t disp_optim_param_count(const disp_optimizer *opt) { return opt ? opt->n : 0; }

DISP_API double disp_optim_lr(const disp_optimizer *opt) {
  if (opt == NULL) return NAN;
  return opt->kind == OPTIM_SGD ? opt->sgd.lr : opt->adam.lr;
}

DISP_API disp_status disp_optim_set_lr(disp_optimizer *opt, double lr) {
  DISP_REFUSE_NULL(opt);
  if (!(0.0 <= lr)) return invalid_value("Invalid learning rate", lr);
  if (opt->kind == OPTIM_SGD) opt->sgd.lr = lr;
  else opt->adam.lr = lr;
  return DISP_OK;
}

/* The state names of each optimizer, by slot. */
int disp__optim_state_slot(const disp_optimizer *opt, const char *name) {
  if (opt->kind == OPTIM_SGD) return strcmp(name, "momentum_buffer") == 0 ? OPTIM_MOMENTUM_BUFFER : -1;
  if (strcmp(name, "exp_avg") == 0) return OPTIM_EXP_AVG;
  if (strcmp(name, "exp_avg_sq") == 0) return OPTIM_EXP_AVG_SQ;
  if (strcmp(name, "max_exp_avg_sq") == 0) return OPTIM_MAX_EXP_AVG_SQ;
  return -1;
}

DISP_API disp_status disp_optim_state(const disp_optimizer *opt, size_t index, const char *name,
                                      disp_tensor **out, int64_t *step) {
  DISP_REFUSE_NULL(opt);
  DISP_REFUSE_NULL(name);
  DISP_REFUSE_NULL(out);
  if (index >= opt->n)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_optim_state: parameter index %zu out of range (%zu parameters)",
                      index, opt->n);
  int slot = disp__optim_state_slot(opt, name);
  if (slot < 0)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_optim_state: %s has no state named '%s'", kind_name(opt->kind),
                      name);
  const optim_state *s = &opt->state[index];
  /* state exists once a step has updated the parameter (it may be allocated by a step that failed) */
  *out = s->step > 0 ? s->t[slot] : NULL;
  if (step != NULL) *step = opt->kind == OPTIM_SGD ? 0 : s->step;
  return DISP_OK;
}
