/*
 * devtest_optim.c - the optimizer suite of the device-generic tests: a few
 * steps of SGD, Adam and AdamW on parameters living on the device agree
 * with the same steps on the CPU.
 */
#include "devtest.h"

typedef disp_status (*make_fn)(disp_tensor *const *params, size_t n, disp_optimizer **out);

/* Runs `steps` steps of the optimizer `make` builds on a parameter on the
 * device and on the CPU, the gradient each step being 0.5 * step * g0. */
static int steps_agree(dt_ctx *c, const char *what, make_fn make, int steps) {
  disp_tensor *init = dt_rand(c, DT_SIZES(3, 4), 2, 41), *g0 = dt_rand(c, DT_SIZES(3, 4), 2, 42);
  disp_tensor *p = dt_on(c, init), *cp = NULL;
  if (!p || !dt_ok(c, disp_aten_clone(init, -1, &cp), "clone")) return 1;
  dt_keep(c, cp);
  disp_optimizer *o = NULL, *co = NULL;
  disp_status st = make(&p, 1, &o);
  if (st == DISP_OK) st = make(&cp, 1, &co);
  for (int s = 1; s <= steps && st == DISP_OK; s++) {
    disp_tensor *g = NULL, *dg = NULL;
    st = disp_aten_mul_Scalar(g0, disp_scalar_double(0.5 * s), &g);
    if (st == DISP_OK) dg = dt_on(c, dt_keep(c, g));
    if (st == DISP_OK && !dg) break;
    if (st == DISP_OK) st = disp_tensor_set_grad(p, dg);
    if (st == DISP_OK) st = disp_tensor_set_grad(cp, g);
    if (st == DISP_OK) st = disp_optim_step(o);
    if (st == DISP_OK) st = disp_optim_step(co);
  }
  if (dt_ok(c, st, what)) dt_close(c, what, p, cp);
  disp_optim_free(o), disp_optim_free(co);
  return 0;
}

static disp_status sgd(disp_tensor *const *p, size_t n, disp_optimizer **out) {
  disp_sgd_options o = disp_sgd_options_default();
  o.lr = 0.1, o.momentum = 0.9, o.nesterov = 1, o.weight_decay = 0.01;
  return disp_optim_sgd_new(p, n, &o, out);
}

static disp_status adam(disp_tensor *const *p, size_t n, disp_optimizer **out) {
  disp_adam_options o = disp_adam_options_default();
  o.lr = 0.01;
  return disp_optim_adam_new(p, n, &o, out);
}

static disp_status adamw_amsgrad(disp_tensor *const *p, size_t n, disp_optimizer **out) {
  disp_adam_options o = disp_adamw_options_default();
  o.lr = 0.01, o.amsgrad = 1;
  return disp_optim_adamw_new(p, n, &o, out);
}

static int t_sgd(dt_ctx *c) { return steps_agree(c, "SGD (momentum, nesterov, weight decay)", sgd, 4); }
static int t_adam(dt_ctx *c) { return steps_agree(c, "Adam", adam, 4); }
static int t_adamw(dt_ctx *c) { return steps_agree(c, "AdamW (amsgrad)", adamw_amsgrad, 4); }

const dt_test dt_optim_tests[] = {
    {"optim", "SGD", t_sgd, 0},
    {"optim", "Adam", t_adam, 0},
    {"optim", "AdamW", t_adamw, 0},
};
const size_t dt_optim_count = sizeof dt_optim_tests / sizeof dt_optim_tests[0];
