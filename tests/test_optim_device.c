/*
 * test_optim_device.c - disp/optim.h on a device other than the CPU (Note
 * [Optimizer devices] in src/autograd/optim_internal.h): SGD, Adam and
 * AdamW run as dispatched operations and agree with the CPU loops; state
 * lives on the parameter's device; zero_grad both ways; Meta parameters;
 * one optimizer over several devices; errors.
 *
 * The device is a fake PrivateUse1 backend built here: its allocator maps
 * every block PROT_NONE, and its only kernel is a boxed fallback that opens
 * the blocks, runs the operator's CPU kernel on host aliases of the device
 * tensors and closes them again (a minimal cpu_fallback). So any read or
 * write of device memory by the library outside a kernel faults: the test
 * proves the optimizer never touches device data on the host.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <disp.h>
#include <disp/autograd.h>

#include "disp/aten.h"
#include "test.h"

static const disp_device kCpu = {DISP_BACKEND_CPU, -1};
static const disp_device kDev = {DISP_BACKEND_PRIVATEUSE1, 0};
static const disp_device kMeta = {DISP_BACKEND_META, -1};

/* ---- device memory: one mapping per block, open only inside kernels ---- */

typedef struct block {
  void *p;
  size_t len;
  struct block *next;
} block;

static block *g_blocks;
static int g_open;          /* > 0 while the device's kernel runs */
static int g_calls;         /* fallback calls, to see the update was dispatched */
static const char *g_fail;  /* an operator the device fails, or NULL */

static void protect_all(int prot) {
  for (block *b = g_blocks; b; b = b->next) mprotect(b->p, b->len, prot);
}
static void open_device(void) {
  if (g_open++ == 0) protect_all(PROT_READ | PROT_WRITE);
}
static void close_device(void) {
  if (--g_open == 0) protect_all(PROT_NONE);
}

static void *dev_allocate(size_t nbytes, disp_device dev, void *ctx) {
  (void)dev, (void)ctx;
  size_t page = (size_t)sysconf(_SC_PAGESIZE), len = nbytes ? (nbytes + page - 1) / page * page : page;
  block *b = malloc(sizeof *b);
  void *p = b ? mmap(NULL, len, g_open ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
              : MAP_FAILED;
  if (p == MAP_FAILED) {
    free(b);
    return NULL;
  }
  *b = (block){p, len, g_blocks};
  g_blocks = b;
  return p;
}

static void dev_deallocate(void *p, size_t nbytes, disp_device dev, void *ctx) {
  (void)nbytes, (void)dev, (void)ctx;
  for (block **at = &g_blocks; *at; at = &(*at)->next)
    if ((*at)->p == p) {
      block *b = *at;
      *at = b->next;
      munmap(b->p, b->len);
      free(b);
      return;
    }
}

/* ---- the device's fallback: CPU kernels on host aliases ----------------- */

enum { MAX_MOVED = 8 };
typedef struct moved {
  disp_tensor *dev, *host; /* a reference each */
} moved;

/* A CPU tensor over t's device memory (valid while the device is open). */
static disp_status host_alias(disp_tensor *t, disp_tensor **out) {
  disp_storage *ds = disp_tensor_storage(t), *hs = NULL;
  disp_status st = disp_storage_new_with_data(disp_storage_data(ds), disp_storage_nbytes(ds), kCpu, NULL, NULL, &hs);
  if (st != DISP_OK) return st;
  st = disp_tensor_new_with_storage(hs, disp_tensor_storage_offset(t), disp_tensor_sizes(t), disp_tensor_strides(t),
                                    disp_tensor_ndim(t), disp_tensor_dtype(t), (disp_keyset){0}, out);
  disp_storage_release(hs);
  return st;
}

/* A new device tensor holding CPU tensor h's values (contiguous). */
static disp_status to_device(disp_tensor *h, disp_device dev, disp_tensor **out) {
  disp_tensor *c = NULL;
  disp_status st = disp_aten_contiguous(h, DISP_MEMORY_FORMAT_CONTIGUOUS, &c);
  if (st == DISP_OK) st = disp_tensor_empty(disp_tensor_sizes(h), disp_tensor_ndim(h), disp_tensor_dtype(h), dev, out);
  if (st == DISP_OK && disp_tensor_numel(h) > 0)
    memcpy(disp_tensor_data_ptr(*out), disp_tensor_data_ptr(c), (size_t)disp_tensor_numel(h) * disp_tensor_itemsize(h));
  disp_tensor_release(c);
  return st;
}

/* Arguments: device tensors become host aliases, device arguments the CPU. */
static disp_status args_to_host(disp_stack *stack, size_t base, moved *mv, int *nmv, disp_device *target) {
  for (size_t i = base; i < disp_stack_size(stack); ++i) {
    disp_value *v = disp_stack_at(stack, i);
    if (v->tag == DISP_VALUE_DEVICE && v->u.device.type == DISP_BACKEND_PRIVATEUSE1) {
      *target = disp_device_make(DISP_BACKEND_PRIVATEUSE1, v->u.device.index < 0 ? 0 : v->u.device.index);
      v->u.device.type = DISP_BACKEND_CPU, v->u.device.index = -1;
    }
    if (v->tag == DISP_VALUE_TENSOR_LIST) return disp_set_error(DISP_ERR_INVALID_ARG, "fake device: no lists");
    if (v->tag != DISP_VALUE_TENSOR || disp_tensor_device(v->u.tensor).type != DISP_BACKEND_PRIVATEUSE1) continue;
    if (*nmv == MAX_MOVED) return disp_set_error(DISP_ERR_INVALID_ARG, "fake device: too many tensors");
    disp_tensor *host = NULL;
    disp_status st = host_alias(v->u.tensor, &host);
    if (st != DISP_OK) return st;
    *target = disp_tensor_device(v->u.tensor);
    mv[*nmv] = (moved){v->u.tensor, disp_tensor_retain(host)}; /* the stack's reference moves to mv */
    v->u.tensor = host;
    ++*nmv;
  }
  return DISP_OK;
}

/* Returns: an alias goes back to its device tensor, a fresh result is copied to the device. */
static disp_status results_to_device(disp_stack *stack, size_t base, moved *mv, int nmv, disp_device target) {
  for (size_t i = base; i < disp_stack_size(stack); ++i) {
    disp_value *v = disp_stack_at(stack, i);
    if (v->tag != DISP_VALUE_TENSOR) continue;
    disp_tensor *back = NULL;
    for (int k = 0; k < nmv; ++k)
      if (v->u.tensor == mv[k].host) back = disp_tensor_retain(mv[k].dev);
    if (back == NULL) {
      for (int k = 0; k < nmv; ++k)
        if (disp_tensor_storage(v->u.tensor) == disp_tensor_storage(mv[k].host))
          return disp_set_error(DISP_ERR_INVALID_ARG, "fake device: view results are not supported");
      disp_status st = to_device(v->u.tensor, target, &back);
      if (st != DISP_OK) return st;
    }
    disp_tensor_release(v->u.tensor);
    v->u.tensor = back;
  }
  return DISP_OK;
}

static disp_status device_fallback(const disp_op *op, disp_keyset ks, disp_stack *stack, void *user_data) {
  (void)ks, (void)user_data;
  ++g_calls;
  if (g_fail && strcmp(disp_op_name(op), g_fail) == 0)
    return disp_set_error(DISP_ERR_INVALID_ARG, "fake device: %s failed", g_fail);
  size_t base = disp_stack_size(stack) - disp_schema_num_arguments(disp_op_schema(op));
  moved mv[MAX_MOVED];
  int nmv = 0;
  disp_device target = kDev;
  open_device();
  disp_status st = args_to_host(stack, base, mv, &nmv, &target);
  if (st == DISP_OK) st = disp_redispatch_boxed(op, disp_keyset_of(DISP_KEY_CPU), stack);
  if (st == DISP_OK) st = results_to_device(stack, base, mv, nmv, target);
  close_device();
  for (int k = 0; k < nmv; ++k) disp_tensor_release(mv[k].dev), disp_tensor_release(mv[k].host);
  return st;
}

/* aten::_copy_from, which has no CPU kernel (1.13's copy_ hands copies that
 * involve another device to the backend): the CPU copy_ between host views. */
static disp_status device_copy_from(disp_tensor *self, disp_tensor *dst, bool non_blocking, disp_tensor **out) {
  (void)non_blocking;
  ++g_calls;
  disp_tensor *hs = NULL, *hd = NULL, *r = NULL;
  open_device();
  disp_status st = disp_tensor_device(self).type == DISP_BACKEND_PRIVATEUSE1 ? host_alias(self, &hs)
                                                                             : (hs = disp_tensor_retain(self), DISP_OK);
  if (st == DISP_OK)
    st = disp_tensor_device(dst).type == DISP_BACKEND_PRIVATEUSE1 ? host_alias(dst, &hd)
                                                                  : (hd = disp_tensor_retain(dst), DISP_OK);
  if (st == DISP_OK) st = disp_aten_copy_(hd, hs, false, &r);
  close_device();
  disp_tensor_release(r), disp_tensor_release(hs), disp_tensor_release(hd);
  if (st == DISP_OK) *out = disp_tensor_retain(dst);
  return st;
}

static disp_library *g_lib;

/* Registers the device (once; a failed case may leave it up for the next). */
static int device_up(void) {
  g_calls = 0, g_fail = NULL;
  if (g_lib) return 1;
  disp_allocator a = {dev_allocate, dev_deallocate, NULL, NULL};
  if (disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, &a) != DISP_OK) return 0;
  if (disp_library_new(DISP_LIBRARY_IMPL, "_", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &g_lib) != DISP_OK) return 0;
  disp_kernel copy_from = disp_kernel_unboxed(DISP_FN(device_copy_from), 0);
  return disp_library_fallback(g_lib, disp_kernel_boxed(device_fallback, NULL, NULL), NULL) == DISP_OK &&
         disp_library_impl(g_lib, "aten::_copy_from", copy_from, NULL) == DISP_OK;
}

/* Unregisters it; every device block must be gone by then. */
static int device_down(void) {
  disp_library_free(g_lib);
  g_lib = NULL;
  disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, NULL);
  int live = 0;
  for (block *b = g_blocks; b; b = b->next) ++live;
  if (live || g_open) fprintf(stderr, "  device: %d blocks live, open %d\n", live, g_open);
  return g_blocks == NULL && g_open == 0;
}

/* ---- moving test data ----------------------------------------------------- */

/* A tensor on dev holding src's values (src: contiguous CPU). */
static disp_tensor *copy_to(disp_tensor *src, disp_device dev) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(disp_tensor_sizes(src), disp_tensor_ndim(src), disp_tensor_dtype(src), dev, &t) != DISP_OK)
    return NULL;
  if (dev.type == DISP_BACKEND_META) return t;
  open_device();
  memcpy(disp_tensor_data_ptr(t), disp_tensor_data_ptr(src), (size_t)disp_tensor_numel(src) * disp_tensor_itemsize(src));
  close_device();
  return t;
}

/* Element i of a contiguous float32/float64 tensor on the CPU or the device. */
static double read_at(const disp_tensor *t, int64_t i) {
  open_device();
  const void *p = disp_tensor_data_ptr(t);
  double v = disp_tensor_dtype(t) == DISP_DTYPE_FLOAT64 ? ((const double *)p)[i] : ((const float *)p)[i];
  close_device();
  return v;
}

/*
 * Whether a and b (same sizes, contiguous) agree to rel relative difference.
 * Near zero the difference is relative to 0.1, the scale of the test's
 * values: p - lr * g cancels there, and one rounding more or less of the
 * operands (Note [Optimizer rounding]) is a large relative difference.
 */
static int close_to(const disp_tensor *a, const disp_tensor *b, double rel) {
  if (disp_tensor_numel(a) != disp_tensor_numel(b)) return 0;
  for (int64_t i = 0; i < disp_tensor_numel(a); ++i) {
    double x = read_at(a, i), y = read_at(b, i);
    if (!(fabs(x - y) <= rel * fmax(0.1, fmax(fabs(x), fabs(y))))) {
      fprintf(stderr, "  element %lld: %.9g vs %.9g\n", (long long)i, x, y);
      return 0;
    }
  }
  return 1;
}

/* A CPU float tensor of `n` values that depend on (seed, i), exact binary fractions. */
static disp_tensor *values(int64_t n, int seed, int f64) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(&n, 1, f64 ? DISP_DTYPE_FLOAT64 : DISP_DTYPE_FLOAT32, kCpu, &t) != DISP_OK) return NULL;
  for (int64_t i = 0; i < n; ++i) {
    double v = ((double)((seed * 37 + i * 11) % 23) - 11.0) / 16.0;
    if (f64) ((double *)disp_tensor_data_ptr(t))[i] = v;
    else ((float *)disp_tensor_data_ptr(t))[i] = (float)v;
  }
  return t;
}

/* ---- the device path against the CPU loops -------------------------------- */

enum { SGD, ADAM, ADAMW };

typedef struct config {
  const char *name;
  int kind, f64;
  disp_sgd_options sgd;
  disp_adam_options adam;
} config;

static const config kConfigs[] = {
    {"sgd_plain", SGD, 0, .sgd = {0.1, 0, 0, 0, 0, 0}},
    {"sgd_momentum_dampening_wd", SGD, 0, .sgd = {0.05, 0.9, 0.1, 0.01, 0, 0}},
    {"sgd_nesterov_wd", SGD, 0, .sgd = {0.03, 0.8, 0, 0.001, 1, 0}},
    {"sgd_momentum_maximize_f64", SGD, 1, .sgd = {0.05, 0.9, 0.25, 0.02, 0, 1}},
    {"adam_default", ADAM, 0, .adam = {1e-3, 0.9, 0.999, 1e-8, 0, 0, 0}},
    {"adam_wd_amsgrad", ADAM, 0, .adam = {0.02, 0.8, 0.99, 1e-6, 0.1, 1, 0}},
    {"adam_maximize_f64", ADAM, 1, .adam = {0.01, 0.9, 0.999, 1e-8, 0.05, 0, 1}},
    {"adamw_default", ADAMW, 0, .adam = {1e-3, 0.9, 0.999, 1e-8, 1e-2, 0, 0}},
    {"adamw_amsgrad", ADAMW, 0, .adam = {0.01, 0.85, 0.995, 1e-7, 0.1, 1, 0}},
    {"adamw_amsgrad_f64", ADAMW, 1, .adam = {0.01, 0.85, 0.995, 1e-7, 0.1, 1, 0}},
};
#define NCONFIGS (sizeof kConfigs / sizeof kConfigs[0])
#define NSTEPS 5
#define NUMEL 21 /* the CPU loops' vector part and their tail */

static disp_status make_optimizer(const config *c, disp_tensor **ps, size_t n, disp_optimizer **out) {
  if (c->kind == SGD) return disp_optim_sgd_new(ps, n, &c->sgd, out);
  return (c->kind == ADAM ? disp_optim_adam_new : disp_optim_adamw_new)(ps, n, &c->adam, out);
}

/* Float tolerance: relative (close_to: to the values' scale near zero). */
static double tolerance(const config *c) { return c->f64 ? 1e-13 : 1e-6; }

/*
 * The state of parameter 0 of a and b agrees, and b's lives on dev. Each
 * step changes the versions of both alike; b's may start one higher
 * (offset[k], fixed at the first step): the dispatched zeros_like and clone
 * that make it count their inner zero_ / copy_, where 1.13's autograd
 * kernel hides those from ADInplaceOrView.
 */
static int same_state(const config *c, const disp_optimizer *a, const disp_optimizer *b, disp_device dev,
                      int64_t offset[4]) {
  static const char *const names[] = {"momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  for (int k = c->kind == SGD ? 0 : 1; k < (c->kind == SGD ? 1 : 4); ++k) {
    disp_tensor *sa = NULL, *sb = NULL;
    int64_t na = -1, nb = -2;
    ASSERT_OK(disp_optim_state(a, 0, names[k], &sa, &na));
    ASSERT_OK(disp_optim_state(b, 0, names[k], &sb, &nb));
    ASSERT_EQ_INT(na, nb);
    int exists = k == 3 ? c->adam.amsgrad : c->kind != SGD || c->sgd.momentum != 0;
    ASSERT_EQ_INT(sa != NULL, exists);
    ASSERT_EQ_INT(sb != NULL, exists);
    if (!exists) continue;
    ASSERT_TRUE(disp_device_equal(disp_tensor_device(sb), dev));
    int64_t d = (int64_t)disp_tensor_version(sb) - (int64_t)disp_tensor_version(sa);
    if (offset[k] < 0) offset[k] = d;
    ASSERT_TRUE(offset[k] == 0 || offset[k] == 1);
    ASSERT_EQ_INT(d, offset[k]);
    if (!close_to(sa, sb, tolerance(c))) TEST_FAIL_("%s: state %s differs", c->name, names[k]);
  }
  return 0;
}

/* Runs c on a CPU parameter and on a device copy with the same gradients. */
static int run_config(const config *c) {
  disp_tensor *pc = values(NUMEL, 0, c->f64), *pd = copy_to(pc, kDev);
  ASSERT_TRUE(pc && pd);
  ASSERT_OK(disp_tensor_set_requires_grad(pc, 1));
  ASSERT_OK(disp_tensor_set_requires_grad(pd, 1));
  disp_optimizer *oc = NULL, *od = NULL;
  int64_t offset[4] = {-1, -1, -1, -1};
  ASSERT_OK(make_optimizer(c, &pc, 1, &oc));
  ASSERT_OK(make_optimizer(c, &pd, 1, &od));
  for (int t = 1; t <= NSTEPS; ++t) {
    disp_tensor *gc = values(NUMEL, t, c->f64), *gd = copy_to(gc, kDev);
    ASSERT_OK(disp_tensor_set_grad(pc, gc));
    ASSERT_OK(disp_tensor_set_grad(pd, gd));
    disp_tensor_release(gc), disp_tensor_release(gd);
    ASSERT_OK(disp_optim_step(oc));
    g_calls = 0;
    ASSERT_OK(disp_optim_step(od));
    ASSERT_TRUE(g_calls > 0); /* the update went through the device's kernels */
    if (!close_to(pc, pd, tolerance(c))) TEST_FAIL_("%s: parameter differs after step %d", c->name, t);
    ASSERT_EQ_INT(disp_tensor_version(pc), disp_tensor_version(pd));
    if (same_state(c, oc, od, kDev, offset) != 0) TEST_FAIL_("%s: after step %d", c->name, t);
  }
  ASSERT_TRUE(disp_device_equal(disp_tensor_device(pd), kDev));
  disp_optim_free(oc), disp_optim_free(od);
  disp_tensor_release(pc), disp_tensor_release(pd);
  return 0;
}

TEST(device_matches_cpu) {
  ASSERT_TRUE(device_up());
  for (size_t i = 0; i < NCONFIGS; ++i) {
    if (run_config(&kConfigs[i]) != 0) TEST_FAIL_("configuration %s failed", kConfigs[i].name);
    printf("  %-26s device agrees with the CPU loops\n", kConfigs[i].name);
  }
  ASSERT_TRUE(device_down());
  return 0;
}

/* A device parameter [n] (float32, values(n, 0)) that requires grad, with gradient values(n, seed). */
static disp_tensor *param_on(disp_device dev, int64_t n, int seed) {
  disp_tensor *c = values(n, 0, 0), *p = c ? copy_to(c, dev) : NULL, *gc = values(n, seed, 0);
  disp_tensor *g = gc ? copy_to(gc, dev) : NULL;
  int ok = p && g && disp_tensor_set_requires_grad(p, 1) == DISP_OK && disp_tensor_set_grad(p, g) == DISP_OK;
  disp_tensor_release(c), disp_tensor_release(gc), disp_tensor_release(g);
  if (!ok) disp_tensor_release(p);
  return ok ? p : NULL;
}

TEST(zero_grad_both_ways) {
  ASSERT_TRUE(device_up());
  disp_tensor *p = param_on(kDev, 5, 1);
  ASSERT_TRUE(p != NULL);
  disp_sgd_options o = disp_sgd_options_default();
  o.lr = 0.1;
  disp_optimizer *opt = NULL;
  ASSERT_OK(disp_optim_sgd_new(&p, 1, &o, &opt));
  disp_tensor *g = disp_tensor_grad(p);
  uint64_t vg = disp_tensor_version(g);
  g_calls = 0;
  ASSERT_OK(disp_optim_zero_grad(opt, 0)); /* zero_ in place, by the device's kernel */
  ASSERT_TRUE(g_calls > 0);
  ASSERT_TRUE(disp_tensor_grad(p) == g);
  ASSERT_TRUE(disp_device_equal(disp_tensor_device(g), kDev));
  ASSERT_EQ_INT(disp_tensor_version(g), vg + 1);
  for (int64_t i = 0; i < 5; ++i) ASSERT_TRUE(read_at(g, i) == 0.0);
  ASSERT_OK(disp_optim_zero_grad(opt, 1));
  ASSERT_TRUE(disp_tensor_grad(p) == NULL);
  disp_optim_free(opt);
  disp_tensor_release(p);
  ASSERT_TRUE(device_down());
  return 0;
}

/* Meta parameters: the same operations, shapes only; state on Meta, versions as on the CPU. */
TEST(meta_parameters) {
  const config *cs[2] = {&kConfigs[1], &kConfigs[8]}; /* SGD with momentum; AdamW with amsgrad */
  for (int k = 0; k < 2; ++k) {
    disp_tensor *p = param_on(kMeta, 7, 1);
    ASSERT_TRUE(p != NULL);
    disp_optimizer *opt = NULL;
    ASSERT_OK(make_optimizer(cs[k], &p, 1, &opt));
    for (int t = 0; t < 2; ++t) ASSERT_OK(disp_optim_step(opt));
    disp_tensor *s = NULL;
    int64_t step = -1;
    ASSERT_OK(disp_optim_state(opt, 0, cs[k]->kind == SGD ? "momentum_buffer" : "max_exp_avg_sq", &s, &step));
    ASSERT_TRUE(s != NULL);
    uint64_t v = disp_tensor_version(s);
    ASSERT_OK(disp_optim_step(opt));
    ASSERT_EQ_INT(disp_tensor_version(p), cs[k]->kind == ADAMW ? 6 : 3); /* (mul_) add_ a step */
    ASSERT_EQ_INT(disp_tensor_version(s), v + (cs[k]->kind == SGD ? 2 : 1)); /* mul_ + add_; copy_ */
    ASSERT_TRUE(disp_device_equal(disp_tensor_device(s), kMeta));
    ASSERT_EQ_INT(disp_tensor_ndim(s), 1);
    ASSERT_EQ_INT(disp_tensor_sizes(s)[0], 7);
    ASSERT_OK(disp_optim_state(opt, 0, cs[k]->kind == SGD ? "momentum_buffer" : "max_exp_avg_sq", &s, &step));
    ASSERT_EQ_INT(step, cs[k]->kind == SGD ? 0 : 3);
    disp_optim_free(opt);
    disp_tensor_release(p);
  }
  return 0;
}

/* One optimizer over the CPU, the device and Meta: each parameter takes its own path. */
TEST(parameters_on_several_devices) {
  ASSERT_TRUE(device_up());
  const config *c = &kConfigs[5]; /* Adam with weight decay and amsgrad */
  disp_tensor *pc = param_on(kCpu, NUMEL, 2), *pd = param_on(kDev, NUMEL, 2), *pm = param_on(kMeta, NUMEL, 2);
  disp_tensor *ref = param_on(kCpu, NUMEL, 2);
  ASSERT_TRUE(pc && pd && pm && ref);
  disp_tensor *ps[3] = {pc, pd, pm};
  disp_optimizer *mixed = NULL, *alone = NULL;
  ASSERT_OK(make_optimizer(c, ps, 3, &mixed));
  ASSERT_OK(make_optimizer(c, &ref, 1, &alone));
  for (int t = 0; t < 3; ++t) {
    ASSERT_OK(disp_optim_step(mixed));
    ASSERT_OK(disp_optim_step(alone));
  }
  ASSERT_TRUE(close_to(pc, ref, 0.0)); /* the CPU loops, bit for bit */
  ASSERT_TRUE(close_to(pd, ref, tolerance(c)));
  disp_tensor *s = NULL;
  ASSERT_OK(disp_optim_state(mixed, 1, "exp_avg", &s, NULL));
  ASSERT_TRUE(disp_device_equal(disp_tensor_device(s), kDev));
  ASSERT_OK(disp_optim_state(mixed, 2, "exp_avg", &s, NULL));
  ASSERT_TRUE(disp_device_equal(disp_tensor_device(s), kMeta));
  disp_optim_free(mixed), disp_optim_free(alone);
  disp_tensor_release(pc), disp_tensor_release(pd), disp_tensor_release(pm), disp_tensor_release(ref);
  ASSERT_TRUE(device_down());
  return 0;
}

TEST(device_parameter_errors) {
  ASSERT_TRUE(device_up());
  int64_t n = 4;
  disp_tensor *i64 = NULL, *p = param_on(kDev, 4, 1), *gcpu = values(4, 1, 0);
  ASSERT_TRUE(p && gcpu);
  ASSERT_OK(disp_tensor_empty(&n, 1, DISP_DTYPE_INT64, kDev, &i64));
  disp_adam_options o = disp_adam_options_default();
  disp_optimizer *opt = NULL;
  disp_tensor *ps[2] = {p, i64};
  ASSERT_STATUS(disp_optim_adam_new(ps, 2, &o, &opt), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "parameter 1 is a int64 tensor on privateuseone:0");
  ASSERT_TRUE(opt == NULL);
  /* a gradient on another device: refused when assigned, as 1.13's setter */
  ASSERT_STATUS(disp_tensor_set_grad(p, gcpu), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "assigned grad has data located on a different device");
  ASSERT_TRUE(disp_tensor_grad(p) != NULL && disp_device_equal(disp_tensor_device(disp_tensor_grad(p)), kDev));
  disp_tensor_release(i64), disp_tensor_release(gcpu), disp_tensor_release(p);
  ASSERT_TRUE(device_down());
  return 0;
}

/* A device kernel that fails: the step reports its error and leaves what
 * 1.13's loop leaves after an exception: Adam has counted the step (step_t
 * += 1 comes first) and updated its moments; SGD's new momentum buffer is
 * not kept (1.13 stores it in the state after the loop). */
TEST(failing_device_kernel) {
  ASSERT_TRUE(device_up());
  disp_tensor *p = param_on(kDev, 6, 1);
  ASSERT_TRUE(p != NULL);
  disp_optimizer *adam = NULL, *sgd = NULL;
  ASSERT_OK(make_optimizer(&kConfigs[5], &p, 1, &adam));
  config momentum = kConfigs[1];
  momentum.sgd.weight_decay = 0;
  ASSERT_OK(make_optimizer(&momentum, &p, 1, &sgd));
  disp_tensor *s = NULL;
  int64_t step = -1;
  g_fail = "aten::sqrt";
  ASSERT_STATUS(disp_optim_step(adam), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "fake device: aten::sqrt failed");
  ASSERT_OK(disp_optim_state(adam, 0, "exp_avg", &s, &step));
  ASSERT_TRUE(s != NULL && step == 1);
  /* SGD's first step clones the momentum buffer, then param.add_ fails (its
   * CompositeExplicitAutogradNonFunctional kernel calls add.out) */
  g_fail = "aten::add.out";
  ASSERT_STATUS(disp_optim_step(sgd), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "fake device: aten::add.out failed");
  ASSERT_OK(disp_optim_state(sgd, 0, "momentum_buffer", &s, NULL));
  ASSERT_TRUE(s == NULL);
  g_fail = NULL;
  ASSERT_OK(disp_optim_step(adam));
  ASSERT_OK(disp_optim_state(adam, 0, "exp_avg", &s, &step));
  ASSERT_TRUE(s != NULL && step == 2);
  ASSERT_OK(disp_optim_step(sgd));
  ASSERT_OK(disp_optim_state(sgd, 0, "momentum_buffer", &s, NULL));
  ASSERT_TRUE(s != NULL && disp_device_equal(disp_tensor_device(s), kDev));
  disp_optim_free(adam), disp_optim_free(sgd);
  disp_tensor_release(p);
  ASSERT_TRUE(device_down());
  return 0;
}

/* The premise of the other cases: outside a kernel, reading device memory
 * faults (in a child process, so the fault ends only the child). */
TEST(device_memory_faults_on_the_host) {
  ASSERT_TRUE(device_up());
  disp_tensor *p = param_on(kDev, 4, 1);
  ASSERT_TRUE(p != NULL);
  fflush(NULL);
  pid_t child = fork();
  if (child == 0) {
    if (!freopen("/dev/null", "w", stderr)) _exit(3); /* ASan's report of the fault, if any */
    volatile float x = *(volatile const float *)disp_tensor_data_ptr(p);
    (void)x;
    _exit(0); /* read it: the guard does not work */
  }
  int status = 0;
  ASSERT_TRUE(child > 0 && waitpid(child, &status, 0) == child);
  /* SIGSEGV, or ASan's exit after reporting it; not 0 (read) nor 3 (no /dev/null) */
  ASSERT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 3));
  ASSERT_TRUE(read_at(p, 0) == read_at(p, 0)); /* inside an open window it reads */
  disp_tensor_release(p);
  ASSERT_TRUE(device_down());
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(device_memory_faults_on_the_host),
    TEST_ENTRY(device_matches_cpu),
    TEST_ENTRY(zero_grad_both_ways),
    TEST_ENTRY(meta_parameters),
    TEST_ENTRY(parameters_on_several_devices),
    TEST_ENTRY(device_parameter_errors),
    TEST_ENTRY(failing_device_kernel),
    TEST_END};
TEST_MAIN()
