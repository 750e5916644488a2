/*
 * devtest_ops.c - the operator suite of the device-generic tests: what the
 * reference cases (check-ops) cannot show - results that stay on the
 * device, in-place writes through views, factories and random ops on the
 * device, copies both ways, item - each computed on the CPU as well.
 */
#include "devtest.h"

#include <math.h>

#define ONE disp_scalar_int(1)
#define KEEP(c, call, out) (dt_ok((c), (call), #call) ? dt_keep((c), (out)) : NULL)

/* The common shape of a test: build CPU inputs, move them, apply `op` to
 * both sides, compare. `op` takes an array of inputs. */
typedef disp_status (*op_fn)(disp_tensor *const *in, disp_tensor **out);

static int both_ways(dt_ctx *c, const char *what, op_fn op, disp_tensor *const *cpu, int n) {
  disp_tensor *dev[4] = {0}, *want = NULL, *got = NULL;
  for (int i = 0; i < n; i++)
    if (!(dev[i] = dt_on(c, cpu[i]))) return 1;
  if (!dt_ok(c, op(cpu, &want), "on the CPU")) return 1;
  dt_keep(c, want);
  if (!dt_ok(c, op(dev, &got), what)) return 1;
  dt_keep(c, got);
  dt_close(c, what, got, want);
  return 0;
}

#define OP(name, expr)                                                    \
  static disp_status name(disp_tensor *const *in, disp_tensor **out) {   \
    (void)in;                                                             \
    return expr;                                                          \
  }

OP(add_alpha, disp_aten_add_Tensor(in[0], in[1], disp_scalar_double(2.5), out))
OP(mul_div, disp_aten_div_Tensor(in[0], in[1], out))
OP(mm, disp_aten_mm(in[0], in[1], out))
OP(addmm, disp_aten_addmm(in[0], in[1], in[2], disp_scalar_double(0.5), disp_scalar_int(2), out))
OP(linear, disp_aten_linear(in[0], in[1], in[2], out))
OP(relu, disp_aten_relu(in[0], out))
OP(sum_dim, disp_aten_sum_dim_IntList(in[0], (disp_opt_int_list){DT_LIST(1), true}, true, -1, out))
OP(mean, disp_aten_mean(in[0], -1, out))
OP(softmax, disp_aten_softmax_int(in[0], 1, -1, out))
OP(log_softmax, disp_aten_log_softmax_int(in[0], 0, -1, out))
OP(conv2d, disp_aten_conv2d(in[0], in[1], in[2], DT_LIST(1, 1), DT_LIST(1, 1), DT_LIST(1, 1), 1, out))
OP(max_pool2d, disp_aten_max_pool2d(in[0], DT_LIST(2, 2), DT_LIST(2, 2), DT_LIST(0, 0), DT_LIST(1, 1), false, out))
OP(cat, disp_aten_cat((disp_tensor_list){in, 2}, 1, out))
OP(exp_tanh, disp_aten_tanh(in[0], out))

static int t_add(dt_ctx *c) {
  return both_ways(c, "add(alpha=2.5), broadcast", add_alpha,
                   (disp_tensor *[]){dt_rand(c, DT_SIZES(3, 4), 2, 1), dt_rand(c, DT_SIZES(4), 1, 2)}, 2);
}
static int t_div(dt_ctx *c) {
  return both_ways(c, "div", mul_div, (disp_tensor *[]){dt_rand(c, DT_SIZES(5), 1, 3), dt_rand(c, DT_SIZES(5), 1, 4)}, 2);
}
static int t_mm(dt_ctx *c) {
  return both_ways(c, "mm", mm, (disp_tensor *[]){dt_rand(c, DT_SIZES(4, 6), 2, 5), dt_rand(c, DT_SIZES(6, 3), 2, 6)}, 2);
}
static int t_addmm(dt_ctx *c) {
  return both_ways(c, "addmm(beta=0.5, alpha=2)", addmm,
                   (disp_tensor *[]){dt_rand(c, DT_SIZES(3), 1, 7), dt_rand(c, DT_SIZES(4, 6), 2, 8),
                                     dt_rand(c, DT_SIZES(6, 3), 2, 9)}, 3);
}
static int t_linear(dt_ctx *c) {
  return both_ways(c, "linear", linear,
                   (disp_tensor *[]){dt_rand(c, DT_SIZES(2, 5), 2, 10), dt_rand(c, DT_SIZES(3, 5), 2, 11),
                                     dt_rand(c, DT_SIZES(3), 1, 12)}, 3);
}
static int t_relu(dt_ctx *c) { return both_ways(c, "relu", relu, (disp_tensor *[]){dt_rand(c, DT_SIZES(7, 3), 2, 13)}, 1); }
static int t_sum(dt_ctx *c) { return both_ways(c, "sum(dim=1, keepdim)", sum_dim, (disp_tensor *[]){dt_rand(c, DT_SIZES(4, 5), 2, 14)}, 1); }
static int t_mean(dt_ctx *c) { return both_ways(c, "mean", mean, (disp_tensor *[]){dt_rand(c, DT_SIZES(4, 5), 2, 15)}, 1); }
static int t_softmax(dt_ctx *c) { return both_ways(c, "softmax", softmax, (disp_tensor *[]){dt_rand(c, DT_SIZES(3, 6), 2, 16)}, 1); }
static int t_log_softmax(dt_ctx *c) {
  return both_ways(c, "log_softmax(dim=0)", log_softmax, (disp_tensor *[]){dt_rand(c, DT_SIZES(3, 6), 2, 17)}, 1);
}
static int t_conv2d(dt_ctx *c) {
  return both_ways(c, "conv2d", conv2d,
                   (disp_tensor *[]){dt_rand(c, DT_SIZES(2, 3, 6, 6), 4, 18), dt_rand(c, DT_SIZES(4, 3, 3, 3), 4, 19),
                                     dt_rand(c, DT_SIZES(4), 1, 20)}, 3);
}
static int t_max_pool2d(dt_ctx *c) {
  return both_ways(c, "max_pool2d", max_pool2d, (disp_tensor *[]){dt_rand(c, DT_SIZES(2, 3, 6, 6), 4, 21)}, 1);
}
static int t_cat(dt_ctx *c) {
  return both_ways(c, "cat(dim=1)", cat, (disp_tensor *[]){dt_rand(c, DT_SIZES(2, 3), 2, 22), dt_rand(c, DT_SIZES(2, 1), 2, 23)}, 2);
}
static int t_tanh(dt_ctx *c) { return both_ways(c, "tanh", exp_tanh, (disp_tensor *[]){dt_rand(c, DT_SIZES(9), 1, 24)}, 1); }

/* relu_ writes the device tensor itself and returns it. */
static int t_relu_inplace(dt_ctx *c) {
  disp_tensor *cpu = dt_rand(c, DT_SIZES(4, 4), 2, 25), *dev = dt_on(c, cpu), *r = NULL, *want = NULL;
  if (!dev) return 1;
  DT_TRY(c, disp_aten_relu_(dev, &r));
  dt_keep(c, r);
  if (r != dev) return dt_fail(c, "relu_ returned another tensor than self"), 1;
  want = KEEP(c, disp_aten_relu(cpu, &want), want);
  dt_close(c, "relu_", dev, want);
  return 0;
}

/* An in-place add on a transposed view reaches the base (storage shared on
 * the device). */
static int t_inplace_through_view(dt_ctx *c) {
  disp_tensor *cpu = dt_rand(c, DT_SIZES(3, 4), 2, 26), *one = dt_rand(c, DT_SIZES(4, 3), 2, 27);
  disp_tensor *dev = dt_on(c, cpu), *done = dt_on(c, one), *v = NULL, *r = NULL, *cv = NULL, *cr = NULL;
  if (!dev || !done) return 1;
  v = KEEP(c, disp_aten_transpose_int(dev, 0, 1, &v), v);
  if (v) r = KEEP(c, disp_aten_add__Tensor(v, done, ONE, &r), r);
  cv = KEEP(c, disp_aten_transpose_int(cpu, 0, 1, &cv), cv);
  if (cv) cr = KEEP(c, disp_aten_add__Tensor(cv, one, ONE, &cr), cr);
  if (r && cr) dt_close(c, "base after add_ on its transpose", dev, cpu);
  return 0;
}

/* CPU -> device -> CPU gives back exactly the values, from a non-contiguous
 * source too. */
static int t_copy_roundtrip(dt_ctx *c) {
  disp_tensor *cpu = dt_rand(c, DT_SIZES(5, 3), 2, 28), *t = NULL;
  t = KEEP(c, disp_aten_transpose_int(cpu, 0, 1, &t), t);
  disp_tensor *dev = dt_on(c, t);
  if (!dev) return 1;
  double saved = c->rtol, satol = c->atol;
  c->rtol = c->atol = 0;
  dt_close(c, "copy of a transposed tensor", dev, t);
  c->rtol = saved, c->atol = satol;
  return 0;
}

/* zeros(device=...) is made on the device, by its kernels. */
static int t_factory(dt_ctx *c) {
  disp_tensor *z = NULL, *want = NULL;
  disp_opt_device d = {c->dev.type, c->dev.index, true}, cpu = {DISP_BACKEND_CPU, -1, true};
  z = KEEP(c, disp_aten_zeros(DT_LIST(2, 3), -1, -1, d, (disp_opt_bool){0}, &z), z);
  want = KEEP(c, disp_aten_zeros(DT_LIST(2, 3), -1, -1, cpu, (disp_opt_bool){0}, &want), want);
  if (z && want) dt_close(c, "zeros(device=...)", z, want);
  return 0;
}

/* item() of a device result (its _local_scalar_dense). */
static int t_item(dt_ctx *c) {
  disp_tensor *cpu = dt_rand(c, DT_SIZES(6), 1, 29), *dev = dt_on(c, cpu), *s = NULL, *cs = NULL;
  if (!dev) return 1;
  s = KEEP(c, disp_aten_sum(dev, -1, &s), s);
  cs = KEEP(c, disp_aten_sum(cpu, -1, &cs), cs);
  disp_scalar got, want;
  if (!s || !cs) return 1;
  DT_TRY(c, disp_aten_item(s, &got));
  DT_TRY(c, disp_aten_item(cs, &want));
  double g = disp_scalar_to_double(got), w = disp_scalar_to_double(want);
  if (!(fabs(g - w) <= c->atol + c->rtol * fabs(w))) dt_fail(c, "item: %.9g, expected %.9g", g, w);
  return 0;
}

/* rand on the device draws from the device's generator: the same seed
 * gives the same values, values lie in [0, 1). */
static int t_rand_seeded(dt_ctx *c) {
  disp_opt_device d = {c->dev.type, c->dev.index, true};
  disp_tensor *a = NULL, *b = NULL;
  disp_manual_seed(1234);
  a = KEEP(c, disp_aten_rand(DT_LIST(16), -1, -1, d, (disp_opt_bool){0}, &a), a);
  disp_manual_seed(1234);
  b = KEEP(c, disp_aten_rand(DT_LIST(16), -1, -1, d, (disp_opt_bool){0}, &b), b);
  disp_tensor *ha = a ? dt_cpu(c, a) : NULL, *hb = b ? dt_cpu(c, b) : NULL;
  int same = 0;
  if (!ha || !hb || !dt_ok(c, disp_tensor_allclose(ha, hb, 0, 0, 0, &same), "allclose")) return 1;
  if (!same) return dt_fail(c, "rand after the same manual_seed gave different values"), 1;
  const float *p = disp_tensor_data_ptr(ha);
  for (int i = 0; i < 16; i++)
    if (!(p[i] >= 0 && p[i] < 1)) return dt_fail(c, "rand value %g outside [0, 1)", p[i]), 1;
  return 0;
}

const dt_test dt_ops_tests[] = {
    {"ops", "add", t_add, 0},
    {"ops", "div", t_div, 0},
    {"ops", "mm", t_mm, 0},
    {"ops", "addmm", t_addmm, 0},
    {"ops", "linear", t_linear, 0},
    {"ops", "relu", t_relu, 0},
    {"ops", "relu_", t_relu_inplace, 0},
    {"ops", "sum", t_sum, 0},
    {"ops", "mean", t_mean, 0},
    {"ops", "softmax", t_softmax, 0},
    {"ops", "log_softmax", t_log_softmax, 0},
    {"ops", "tanh", t_tanh, 0},
    {"ops", "conv2d", t_conv2d, 0},
    {"ops", "max_pool2d", t_max_pool2d, 0},
    {"ops", "cat", t_cat, 0},
    {"ops", "add_ through a view", t_inplace_through_view, 0},
    {"ops", "copy both ways", t_copy_roundtrip, 0},
    {"ops", "zeros on the device", t_factory, DT_F32_ONLY},
    {"ops", "item", t_item, DT_VALUES},
    {"ops", "rand and manual_seed", t_rand_seeded, DT_VALUES | DT_F32_ONLY},
};
const size_t dt_ops_count = sizeof dt_ops_tests / sizeof dt_ops_tests[0];
