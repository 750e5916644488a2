/*
 * test_alloc_fail.c - every allocation of the library, failed in turn
 * (issue 18 item 4; Note [Allocation seam] in src/base/alloc_internal.h).
 *
 * Built only with -DDISP_FAULT_INJECTION=ON (.ci/alloc_sweep.sh: with ASan).
 * Each scenario is a function that does a piece of work from nothing and
 * undoes it, returning a few numbers. A sweep runs it once unarmed for the
 * reference numbers, then for N = 1, 2, ... fails allocation N (once, or N
 * and every one after it) until a run makes no allocation fail. Each failed
 * run must either report DISP_ERR_NO_MEMORY with a message saying "out of
 * memory" (or, for a tensor's memory, 1.13's "not enough memory"), or succeed with the reference numbers (a cache that could not
 * grow is no error); then the same run, unarmed, must succeed with the
 * reference numbers: nothing was left half-registered, half-loaded or
 * locked. LeakSanitizer checks each case's process at exit, so every
 * failure path frees what it took. Library threads are held at one so the
 * Nth allocation is the same one on every run.
 *
 * DISP_ALLOC_SWEEP_STRIDE=k tries every kth point only, and
 * DISP_ALLOC_SWEEP_POINTS=m at most m points per sweep, evenly spread (CI's
 * bounded sweep); DISP_ALLOC_SWEEP_VERBOSE=1 prints each failure's message;
 * DISP_ALLOC_SWEEP_FROM=n starts at point n, and with DISP_FAULT_TRACE=1
 * (alloc.c) prints where each failed allocation was made: to debug one.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <disp.h>
#include <disp/autograd.h>

#include "alloc_internal.h"
#include "test.h"

enum { NOUT = 8 };
typedef disp_status (*scenario_fn)(double out[NOUT]);

/* ---- helpers: the test's own resources are freed on every path --------- */

static disp_status tensor_of(const int64_t *sizes, int ndim, disp_dtype dt, double (*value)(int64_t),
                             disp_tensor **out) {
  disp_status st = disp_tensor_empty(sizes, ndim, dt, disp_device_make(DISP_BACKEND_CPU, -1), out);
  if (st != DISP_OK) return st;
  int64_t n = disp_tensor_numel(*out);
  if (dt == DISP_DTYPE_INT64)
    for (int64_t i = 0; i < n; i++) ((int64_t *)disp_tensor_data_ptr(*out))[i] = (int64_t)value(i);
  else
    for (int64_t i = 0; i < n; i++) ((float *)disp_tensor_data_ptr(*out))[i] = (float)value(i);
  return DISP_OK;
}

static double sum_of(const disp_tensor *t) {
  double s = 0;
  const float *p = disp_tensor_data_ptr(t);
  for (int64_t i = 0; i < disp_tensor_numel(t); i++) s += p[i] * (double)(i + 1);
  return s;
}

static void release_all(disp_tensor **ts, size_t n) {
  for (size_t i = 0; i < n; i++) disp_tensor_release(ts[i]);
}

static double ramp(int64_t i) { return (double)((i * 37) % 17) / 8.0 - 1.0; }
static double ramp2(int64_t i) { return (double)((i * 11) % 13) / 16.0 - 0.375; }
static double label(int64_t i) { return (double)((i * 3) % 4); }

/* ---- scenarios ----------------------------------------------------------- */

/* alloctest::twice on CPU: self * 2, through the built-in mul. */
static disp_status twice_kernel(const disp_op *op, disp_keyset ks, disp_stack *stack, void *user_data) {
  (void)op, (void)ks, (void)user_data;
  disp_tensor *self = NULL, *r = NULL;
  disp_status st = disp_stack_pop_tensor(stack, &self);
  if (st == DISP_OK) st = disp_aten_mul_Scalar(self, disp_scalar_double(2), &r);
  if (st == DISP_OK) st = disp_stack_push_tensor_steal(stack, r);
  disp_tensor_release(self);
  return st;
}

/* Defining a library, its kernels, calling one, freeing it all. */
static disp_status run_library(double out[NOUT]) {
  disp_library *def = NULL, *impl = NULL;
  disp_tensor *t = NULL, *r = NULL;
  const disp_op *op = NULL;
  disp_stack *s = NULL;
  int64_t n = 5;
  disp_status st = disp_library_new(DISP_LIBRARY_DEF, "alloctest", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &def);
  if (st == DISP_OK) st = disp_library_def(def, "twice(Tensor self) -> Tensor", NULL);
  if (st == DISP_OK) st = disp_library_def(def, "split.sizes(Tensor self, int[] sizes, *, Scalar alpha=1) -> Tensor[]", NULL);
  if (st == DISP_OK) st = disp_library_new(DISP_LIBRARY_IMPL, "alloctest", DISP_KEY_CPU, __FILE__, __LINE__, &impl);
  if (st == DISP_OK) st = disp_library_impl(impl, "twice", disp_kernel_boxed(twice_kernel, NULL, NULL), NULL);
  if (st == DISP_OK) st = disp_op_find("alloctest::twice", &op);
  if (st == DISP_OK) st = tensor_of(&n, 1, DISP_DTYPE_FLOAT32, ramp, &t);
  if (st == DISP_OK && !(s = disp_stack_new())) st = DISP_ERR_NO_MEMORY; /* the library names it */
  if (st == DISP_OK) st = disp_stack_push_tensor(s, t);
  if (st == DISP_OK) st = disp_call_boxed(op, s);
  if (st == DISP_OK) st = disp_stack_pop_tensor(s, &r);
  if (st == DISP_OK) out[0] = sum_of(r);
  disp_stack_free(s);
  disp_tensor_release(r);
  disp_tensor_release(t);
  disp_library_free(impl);
  disp_library_free(def);
  if (st == DISP_OK && disp_op_find("alloctest::twice", &op) == DISP_OK) out[1] = 1; /* must be gone */
  return st;
}

/* A boxed call of a built-in operator, defaults filled in. */
static disp_status run_boxed(double out[NOUT]) {
  int64_t sz[2] = {3, 4};
  disp_tensor *a = NULL, *b = NULL, *r = NULL;
  const disp_op *op = NULL;
  disp_stack *s = NULL;
  disp_status st = disp_op_find("aten::add.Tensor", &op);
  if (st == DISP_OK) st = tensor_of(sz, 2, DISP_DTYPE_FLOAT32, ramp, &a);
  if (st == DISP_OK) st = tensor_of(sz, 2, DISP_DTYPE_FLOAT32, ramp2, &b);
  if (st == DISP_OK && !(s = disp_stack_new())) st = DISP_ERR_NO_MEMORY;
  if (st == DISP_OK) st = disp_stack_push_tensor(s, a);
  if (st == DISP_OK) st = disp_stack_push_tensor(s, b);
  if (st == DISP_OK) st = disp_stack_fill_defaults(op, s, 2);
  if (st == DISP_OK) st = disp_call_boxed(op, s);
  if (st == DISP_OK) st = disp_stack_pop_tensor(s, &r);
  if (st == DISP_OK) out[0] = sum_of(r);
  disp_stack_free(s);
  disp_tensor *ts[] = {a, b, r};
  release_all(ts, 3);
  return st;
}

/* Typed calls: a product, a pointwise op, a reduction, a view. */
static disp_status run_typed(double out[NOUT]) {
  int64_t sa[2] = {6, 5}, sb[2] = {5, 7};
  disp_tensor *a = NULL, *b = NULL, *p = NULL, *r = NULL, *s = NULL, *v = NULL;
  disp_status st = tensor_of(sa, 2, DISP_DTYPE_FLOAT32, ramp, &a);
  if (st == DISP_OK) st = tensor_of(sb, 2, DISP_DTYPE_FLOAT32, ramp2, &b);
  if (st == DISP_OK) st = disp_aten_mm(a, b, &p);
  if (st == DISP_OK) st = disp_aten_relu(p, &r);
  if (st == DISP_OK) st = disp_aten_sum(r, -1, &s);
  if (st == DISP_OK) st = disp_aten_t(p, &v);
  if (st == DISP_OK) out[0] = sum_of(r), out[1] = sum_of(s), out[2] = (double)disp_tensor_sizes(v)[0];
  disp_tensor *ts[] = {a, b, p, r, s, v};
  release_all(ts, 6);
  return st;
}

/* The MLP of examples/mlp.c, small: parameters, Adam, one training step
 * (forward, cross-entropy, backward, update). */
enum { MB = 8, MIN = 12, MHID = 16, MOUT = 4 };

static disp_status mlp_params(disp_tensor *p[4]) {
  int64_t s1[2] = {MHID, MIN}, s2[1] = {MHID}, s3[2] = {MOUT, MHID}, s4[1] = {MOUT};
  disp_status st = tensor_of(s1, 2, DISP_DTYPE_FLOAT32, ramp2, &p[0]);
  if (st == DISP_OK) st = tensor_of(s2, 1, DISP_DTYPE_FLOAT32, ramp, &p[1]);
  if (st == DISP_OK) st = tensor_of(s3, 2, DISP_DTYPE_FLOAT32, ramp, &p[2]);
  if (st == DISP_OK) st = tensor_of(s4, 1, DISP_DTYPE_FLOAT32, ramp2, &p[3]);
  for (int i = 0; i < 4 && st == DISP_OK; i++) st = disp_tensor_set_requires_grad(p[i], 1);
  return st;
}

static disp_status mlp_loss(disp_tensor *const p[4], disp_tensor *x, disp_tensor *y, disp_tensor **loss) {
  disp_tensor *h = NULL, *a = NULL, *logits = NULL;
  disp_status st = disp_aten_linear(x, p[0], p[1], &h);
  if (st == DISP_OK) st = disp_aten_relu(h, &a);
  if (st == DISP_OK) st = disp_aten_linear(a, p[2], p[3], &logits);
  if (st == DISP_OK) st = disp_aten_cross_entropy_loss(logits, y, NULL, 1, -100, 0.0, loss);
  disp_tensor *ts[] = {h, a, logits};
  release_all(ts, 3);
  return st;
}

static disp_status run_mlp(double out[NOUT]) {
  int64_t sx[2] = {MB, MIN}, sy[1] = {MB};
  disp_tensor *p[4] = {0}, *x = NULL, *y = NULL, *loss = NULL;
  disp_optimizer *opt = NULL;
  disp_adam_options o = disp_adam_options_default();
  o.lr = 0.01;
  disp_scalar v;
  disp_status st = mlp_params(p);
  if (st == DISP_OK) st = tensor_of(sx, 2, DISP_DTYPE_FLOAT32, ramp, &x);
  if (st == DISP_OK) st = tensor_of(sy, 1, DISP_DTYPE_INT64, label, &y);
  if (st == DISP_OK) st = disp_optim_adam_new(p, 4, &o, &opt);
  if (st == DISP_OK) st = mlp_loss(p, x, y, &loss);
  if (st == DISP_OK) st = disp_optim_zero_grad(opt, 1);
  if (st == DISP_OK) st = disp_autograd_backward(&loss, 1, NULL, 0, 0);
  if (st == DISP_OK) st = disp_optim_step(opt);
  if (st == DISP_OK) st = disp_aten_item(loss, &v);
  if (st == DISP_OK) out[0] = disp_scalar_to_double(v);
  for (int i = 0; i < 4 && st == DISP_OK; i++) out[1 + i] = sum_of(p[i]);
  disp_optim_free(opt);
  release_all(p, 4);
  disp_tensor *ts[] = {x, y, loss};
  release_all(ts, 3);
  return st;
}

/* Loading a plugin (its static blocks, device, allocator, kernels and
 * fallback), calling its operator, unloading it. */
static disp_status run_plugin(double out[NOUT]) {
  disp_plugin *pl = NULL;
  const disp_op *op = NULL;
  disp_status st = disp_plugin_load(PLUGIN_DIR "/libplugin_good.so", &pl);
  if (st == DISP_OK) st = disp_op_find("plugtest::f", &op);
  if (st == DISP_OK) out[0] = disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1);
  if (pl) {
    disp_status un = disp_plugin_unload(pl);
    if (st == DISP_OK) st = un;
  }
  if (st == DISP_OK) out[1] = disp_op_find("plugtest::f", &op) == DISP_OK; /* must be gone */
  return st;
}

/* disp_shutdown, then disp_init from nothing: the built-in operators. */
static disp_status run_init(double out[NOUT]) {
  disp_tensor *a = NULL, *r = NULL;
  int64_t n = 6;
  disp_shutdown();
  disp_init();
  disp_status st = disp_registry_check();
  if (st == DISP_OK) st = tensor_of(&n, 1, DISP_DTYPE_FLOAT32, ramp, &a);
  if (st == DISP_OK) st = disp_aten_exp(a, &r);
  if (st == DISP_OK) out[0] = sum_of(r);
  disp_tensor_release(a);
  disp_tensor_release(r);
  return st;
}

/* ---- the sweep ------------------------------------------------------------ */

static int same(const double *a, const double *b) { return memcmp(a, b, NOUT * sizeof *a) == 0; }

static long env_long(const char *name, long dflt) {
  const char *s = getenv(name);
  return s && *s ? strtol(s, NULL, 10) : dflt;
}

/* Runs `run` with allocation n failing; 0 when it behaved. */
static int try_point(const char *name, scenario_fn run, long n, int persist, const double *ref, long *reported) {
  double got[NOUT] = {0};
  disp_clear_error();
  disp__fault_arm(n, persist);
  disp_status st = run(got);
  long failed = disp__fault_failed();
  disp__fault_arm(0, 0);
  if (!failed) return st == DISP_OK && same(got, ref) ? -1 : (fprintf(stderr, "%s: unarmed run differs\n", name), 1);
  if (st != DISP_OK) {
    const char *msg = disp_last_error();
    if (env_long("DISP_ALLOC_SWEEP_VERBOSE", 0)) printf("  %s #%ld: %s\n", name, n, msg);
    /* "not enough memory": PyTorch's DefaultCPUAllocator words a tensor's failure so */
    if (st != DISP_ERR_NO_MEMORY || !(strstr(msg, "out of memory") || strstr(msg, "not enough memory"))) {
      fprintf(stderr, "%s: allocation %ld failed: %s, \"%s\"\n", name, n, disp_status_name(st), msg);
      return 1;
    }
    ++*reported;
  } else if (!same(got, ref)) {
    fprintf(stderr, "%s: allocation %ld failed and the run succeeded with other numbers\n", name, n);
    return 1;
  }
  memset(got, 0, sizeof got);
  st = run(got);
  if (st != DISP_OK || !same(got, ref)) {
    fprintf(stderr, "%s: after allocation %ld failed, the same run unarmed: %s \"%s\"\n", name, n,
            disp_status_name(st), st == DISP_OK ? "other numbers" : disp_last_error());
    return 1;
  }
  return 0;
}

static int sweep(const char *name, scenario_fn run, int persist) {
  double ref[NOUT] = {0};
  disp_set_num_threads(1);
  disp__fault_arm(0, 0);
  ASSERT_OK(run(ref));
  long stride = env_long("DISP_ALLOC_SWEEP_STRIDE", 1), tried = 0, reported = 0, n;
  if (stride < 1) stride = 1;
  disp__fault_arm(0, 0);
  memset(ref, 0, sizeof ref);
  ASSERT_OK(run(ref)); /* the second run: caches warm, as in every trial */
  long total = disp__fault_count();
  long budget = env_long("DISP_ALLOC_SWEEP_POINTS", 0); /* at most this many points, spread evenly */
  if (budget > 0 && total / budget + 1 > stride) stride = total / budget + 1;
  for (n = env_long("DISP_ALLOC_SWEEP_FROM", 1); n >= 1; n += stride) {
    int r = try_point(name, run, n, persist, ref, &reported);
    if (r < 0) break;
    ASSERT_EQ_INT(r, 0);
    tried++;
  }
  printf("alloc sweep: %-8s %-10s %5ld failure points tried (every %ld of %ld allocations), %ld reported out of memory, "
         "%ld absorbed; each run after equal\n",
         name, persist ? "from N on" : "once", tried, stride, total, reported, tried - reported);
  return 0;
}

#define SWEEP_CASES(name)                                         \
  TEST(name##_once) { return sweep(#name, run_##name, 0); }       \
  TEST(name##_from_n_on) { return sweep(#name, run_##name, 1); }

SWEEP_CASES(library)
SWEEP_CASES(boxed)
SWEEP_CASES(typed)
SWEEP_CASES(mlp)
SWEEP_CASES(plugin)
SWEEP_CASES(init)

TEST_LIST = {
    TEST_ENTRY(library_once), TEST_ENTRY(library_from_n_on), TEST_ENTRY(boxed_once),
    TEST_ENTRY(boxed_from_n_on), TEST_ENTRY(typed_once), TEST_ENTRY(typed_from_n_on),
    TEST_ENTRY(mlp_once), TEST_ENTRY(mlp_from_n_on), TEST_ENTRY(plugin_once),
    TEST_ENTRY(plugin_from_n_on), TEST_ENTRY(init_once), TEST_ENTRY(init_from_n_on),
    TEST_END};
TEST_MAIN()
