/*
 * devtest_autograd.c - the autograd suite of the device-generic tests: the
 * same small graphs run backward on the CPU and on the device, and the
 * gradients (which must live on their leaves' device) agree.
 */
#include "devtest.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

/* A leaf on the device under test holding cpu's values, requiring grad. */
static disp_tensor *leaf(dt_ctx *c, disp_tensor *cpu) {
  disp_tensor *t = dt_on(c, cpu);
  if (t && !dt_ok(c, disp_tensor_set_requires_grad(t, 1), "requires_grad")) return NULL;
  return t;
}

/* A CPU leaf copy of cpu (so both sides start from the same values). */
static disp_tensor *cpu_leaf(dt_ctx *c, disp_tensor *cpu) {
  disp_tensor *t = NULL;
  if (!dt_ok(c, disp_aten_clone(cpu, -1, &t), "clone")) return NULL;
  dt_keep(c, t);
  return dt_ok(c, disp_tensor_set_requires_grad(t, 1), "requires_grad") ? t : NULL;
}

/* loss = cross_entropy(linear(relu(linear(x, w1, b1)), w2), target) */
static disp_status mlp_loss(disp_tensor *x, disp_tensor *const *p, disp_tensor *target, disp_tensor **loss) {
  disp_tensor *h = NULL, *r = NULL, *z = NULL;
  disp_status st = disp_aten_linear(x, p[0], p[1], &h);
  if (st == DISP_OK) st = disp_aten_relu(h, &r);
  if (st == DISP_OK) st = disp_aten_linear(r, p[2], NULL, &z);
  if (st == DISP_OK) st = disp_aten_cross_entropy_loss(z, target, NULL, 1, -100, 0.0, loss);
  disp_tensor_release(h), disp_tensor_release(r), disp_tensor_release(z);
  return st;
}

static disp_tensor *targets(dt_ctx *c) {
  disp_tensor *t = NULL;
  int64_t n = 6;
  if (!dt_ok(c, disp_tensor_empty(&n, 1, DISP_DTYPE_INT64, disp_device_make(DISP_BACKEND_CPU, -1), &t), "targets"))
    return NULL;
  for (int64_t i = 0; i < n; i++) ((int64_t *)disp_tensor_data_ptr(t))[i] = (i * 5 + 1) % 3;
  return dt_keep(c, t);
}

/* Backward through linear, relu and cross-entropy. */
static int t_mlp_grads(dt_ctx *c) {
  disp_tensor *init[3] = {dt_rand(c, DT_SIZES(4, 5), 2, 31), dt_rand(c, DT_SIZES(4), 1, 32),
                          dt_rand(c, DT_SIZES(3, 4), 2, 33)};
  disp_tensor *x = dt_rand(c, DT_SIZES(6, 5), 2, 34), *y = targets(c);
  disp_tensor *dp[3], *cp[3], *dx = dt_on(c, x), *dy = y ? dt_on(c, y) : NULL, *dl = NULL, *cl = NULL;
  for (int i = 0; i < 3; i++)
    if (!(dp[i] = leaf(c, init[i])) || !(cp[i] = cpu_leaf(c, init[i]))) return 1;
  if (!dx || !dy) return 1;
  DT_TRY(c, mlp_loss(dx, dp, dy, &dl));
  dt_keep(c, dl);
  DT_TRY(c, mlp_loss(x, cp, y, &cl));
  dt_keep(c, cl);
  dt_close(c, "loss", dl, cl);
  DT_TRY(c, disp_autograd_backward(&dl, 1, NULL, 0, 0));
  DT_TRY(c, disp_autograd_backward(&cl, 1, NULL, 0, 0));
  static const char *const names[3] = {"grad of w1", "grad of b1", "grad of w2"};
  for (int i = 0; i < 3; i++) dt_close(c, names[i], disp_tensor_grad(dp[i]), disp_tensor_grad(cp[i]));
  return 0;
}

/* Two backward passes add into the leaf's grad. */
static int t_grad_accumulates(dt_ctx *c) {
  disp_tensor *init = dt_rand(c, DT_SIZES(3, 2), 2, 35), *w = leaf(c, init), *cw = cpu_leaf(c, init);
  disp_tensor *s = NULL, *cs = NULL;
  if (!w || !cw) return 1;
  for (int pass = 0; pass < 2; pass++) {
    disp_tensor *t = NULL, *ct = NULL;
    DT_TRY(c, disp_aten_tanh(w, &t));
    dt_keep(c, t);
    DT_TRY(c, disp_aten_sum(t, -1, &s));
    dt_keep(c, s);
    DT_TRY(c, disp_aten_tanh(cw, &ct));
    dt_keep(c, ct);
    DT_TRY(c, disp_aten_sum(ct, -1, &cs));
    dt_keep(c, cs);
    DT_TRY(c, disp_autograd_backward(&s, 1, NULL, 0, 0));
    DT_TRY(c, disp_autograd_backward(&cs, 1, NULL, 0, 0));
  }
  dt_close(c, "grad after two passes", disp_tensor_grad(w), disp_tensor_grad(cw));
  return 0;
}

/* Changing a saved result in place makes backward fail with 1.13's
 * version-check message, on the device as on the CPU. */
static int t_version_check(dt_ctx *c) {
  disp_tensor *w = leaf(c, dt_rand(c, DT_SIZES(2, 3), 2, 36)), *r = NULL, *r2 = NULL, *s = NULL;
  if (!w) return 1;
  DT_TRY(c, disp_aten_relu(w, &r));
  dt_keep(c, r);
  DT_TRY(c, disp_aten_sum(r, -1, &s));
  dt_keep(c, s);
  DT_TRY(c, disp_aten_relu_(r, &r2)); /* r is ReluBackward0's saved result */
  dt_keep(c, r2);
  disp_status st = disp_autograd_backward(&s, 1, NULL, 0, 0);
  if (st == DISP_OK) return dt_fail(c, "backward succeeded after the saved result changed"), 1;
  if (!strstr(disp_last_error(), "modified by an inplace operation"))
    dt_fail(c, "backward failed with another error: %s", disp_last_error());
  return 0;
}

/* An int64 CPU tensor of n values (i * mul + add) % mod, shaped `sizes`. */
static disp_tensor *ints(dt_ctx *c, const int64_t *sizes, int ndim, int64_t mul, int64_t add, int64_t mod) {
  disp_tensor *t = NULL;
  if (!dt_ok(c, disp_tensor_empty(sizes, ndim, DISP_DTYPE_INT64, disp_device_make(DISP_BACKEND_CPU, -1), &t), "ints"))
    return NULL;
  for (int64_t i = 0; i < disp_tensor_numel(t); i++) ((int64_t *)disp_tensor_data_ptr(t))[i] = (i * mul + add) % mod;
  return dt_keep(c, t);
}

/* A [T, T] bool CPU mask, true above the diagonal (the causal mask). */
static disp_tensor *above_diagonal(dt_ctx *c, int64_t T) {
  disp_tensor *ones = NULL, *m = NULL;
  int64_t sizes[2] = {T, T};
  disp_status st = disp_tensor_empty(sizes, 2, DISP_DTYPE_BOOL, disp_device_make(DISP_BACKEND_CPU, -1), &ones);
  for (int64_t i = 0; st == DISP_OK && i < T * T; i++) ((bool *)disp_tensor_data_ptr(ones))[i] = true;
  if (st == DISP_OK) st = disp_aten_triu(ones, 1, &m);
  disp_tensor_release(ones);
  return dt_ok(c, st, "triu mask") ? dt_keep(c, m) : NULL;
}

/* A one-block GPT: p = {wte [V, C], ln weight [C], fc [2C, C], proj [C, 2C]};
 * x = embedding(wte, idx); h = proj(gelu(fc(layer_norm(x)))); causal
 * attention of h over itself (masked_fill, softmax); logits tied to wte;
 * cross-entropy against targets. Every op of the GPT example but split. */
static disp_status gpt_loss(disp_tensor *idx, disp_tensor *const *p, disp_tensor *mask, disp_tensor *target,
                            disp_tensor **loss) {
  enum { N = 10 };
  disp_tensor *t[N] = {0};
  int64_t C = disp_tensor_sizes(p[0])[1], V = disp_tensor_sizes(p[0])[0];
  disp_status st = disp_aten_embedding(p[0], idx, -1, false, false, &t[0]);
  if (st == DISP_OK) st = disp_aten_layer_norm(t[0], DT_LIST(C), p[1], NULL, 1e-5, true, &t[1]);
  if (st == DISP_OK) st = disp_aten_linear(t[1], p[2], NULL, &t[2]);
  if (st == DISP_OK) st = disp_aten_gelu(t[2], "none", &t[3]);
  if (st == DISP_OK) st = disp_aten_linear(t[3], p[3], NULL, &t[4]);
  if (st == DISP_OK) st = disp_aten_transpose_int(t[4], -2, -1, &t[5]);
  if (st == DISP_OK) st = disp_aten_matmul(t[4], t[5], &t[6]);
  if (st == DISP_OK) st = disp_aten_masked_fill_Scalar(t[6], mask, disp_scalar_double(-INFINITY), &t[7]);
  if (st == DISP_OK) st = disp_aten_softmax_int(t[7], -1, -1, &t[8]);
  if (st == DISP_OK) st = disp_aten_matmul(t[8], t[4], &t[9]);
  disp_tensor *logits = NULL, *flat = NULL;
  if (st == DISP_OK) st = disp_aten_linear(t[9], p[0], NULL, &logits);
  if (st == DISP_OK) st = disp_aten_reshape(logits, DT_LIST(-1, V), &flat);
  if (st == DISP_OK) st = disp_aten_cross_entropy_loss(flat, target, NULL, 1, -100, 0.0, loss);
  for (int i = 0; i < N; i++) disp_tensor_release(t[i]);
  disp_tensor_release(logits), disp_tensor_release(flat);
  return st;
}

/* Backward through embedding, layer norm, GELU, masked softmax attention
 * and a tied output layer: every parameter's gradient. */
static int t_gpt_block_grads(dt_ctx *c) {
  enum { B = 2, T = 5, C = 4, V = 7 };
  disp_tensor *init[4] = {dt_rand(c, DT_SIZES(V, C), 2, 41), dt_rand(c, DT_SIZES(C), 1, 42),
                          dt_rand(c, DT_SIZES(2 * C, C), 2, 43), dt_rand(c, DT_SIZES(C, 2 * C), 2, 44)};
  disp_tensor *idx = ints(c, DT_SIZES(B, T), 2, 3, 1, V), *y = ints(c, DT_SIZES(B * T), 1, 5, 2, V);
  disp_tensor *mask = above_diagonal(c, T);
  if (!idx || !y || !mask) return 1;
  disp_tensor *di = dt_on(c, idx), *dy = dt_on(c, y), *dm = dt_on(c, mask), *dp[4], *cp[4], *dl = NULL, *cl = NULL;
  for (int i = 0; i < 4; i++)
    if (!(dp[i] = leaf(c, init[i])) || !(cp[i] = cpu_leaf(c, init[i]))) return 1;
  if (!di || !dy || !dm) return 1;
  DT_TRY(c, gpt_loss(di, dp, dm, dy, &dl));
  dt_keep(c, dl);
  DT_TRY(c, gpt_loss(idx, cp, mask, y, &cl));
  dt_keep(c, cl);
  dt_close(c, "loss", dl, cl);
  DT_TRY(c, disp_autograd_backward(&dl, 1, NULL, 0, 0));
  DT_TRY(c, disp_autograd_backward(&cl, 1, NULL, 0, 0));
  static const char *const names[4] = {"grad of wte (embedding + tied output)", "grad of the layer norm weight",
                                       "grad of fc", "grad of proj"};
  for (int i = 0; i < 4; i++) dt_close(c, names[i], disp_tensor_grad(dp[i]), disp_tensor_grad(cp[i]));
  return 0;
}

const dt_test dt_autograd_tests[] = {
    {"autograd", "linear-relu-cross_entropy backward", t_mlp_grads, 0},
    {"autograd", "gradients accumulate", t_grad_accumulates, 0},
    {"autograd", "in-place version check", t_version_check, 0},
    {"autograd", "a GPT block backward (embedding, layer norm, GELU, masked softmax)", t_gpt_block_grads, 0},
};
const size_t dt_autograd_count = sizeof dt_autograd_tests / sizeof dt_autograd_tests[0];
