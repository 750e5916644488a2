/*
 * test_saved.c - which inputs a formula saves, seen the way a user sees it:
 * an input modified in place after the forward breaks the backward pass
 * (the version check) exactly when it was saved.
 *
 * The expectations were observed with libtorch 1.13: for each operator and
 * each choice of inputs that require grad, every input in turn was
 * multiplied in place (under no_grad) after the forward, then
 * out.sum().backward() either ran or failed with "one of the variables
 * needed for gradient computation has been modified by an inplace
 * operation". 1.13 saves an input only when a gradient that uses it will
 * be computed (gen_variable_type.py's should_compute_output guards).
 */
#include "test.h"
#include "disp/aten.h"

typedef disp_status (*op_fn)(disp_tensor **in, disp_tensor **out);

static disp_status mm(disp_tensor **in, disp_tensor **out) { return disp_aten_mm(in[0], in[1], out); }
static disp_status bmm(disp_tensor **in, disp_tensor **out) { return disp_aten_bmm(in[0], in[1], out); }
static disp_status mul(disp_tensor **in, disp_tensor **out) { return disp_aten_mul_Tensor(in[0], in[1], out); }
static disp_status div_(disp_tensor **in, disp_tensor **out) { return disp_aten_div_Tensor(in[0], in[1], out); }
static disp_status maximum(disp_tensor **in, disp_tensor **out) { return disp_aten_maximum(in[0], in[1], out); }
static disp_status mse(disp_tensor **in, disp_tensor **out) { return disp_aten_mse_loss(in[0], in[1], 1, out); }
static disp_status add(disp_tensor **in, disp_tensor **out) {
  return disp_aten_add_Tensor(in[0], in[1], disp_scalar_int(1), out);
}
static disp_status mean_dim(disp_tensor **in, disp_tensor **out) {
  int64_t d = 1;
  return disp_aten_mean_dim(in[0], (disp_opt_int_list){{&d, 1}, true}, false, -1, out);
}
static disp_status sum_dim(disp_tensor **in, disp_tensor **out) {
  int64_t d = 1;
  return disp_aten_sum_dim_IntList(in[0], (disp_opt_int_list){{&d, 1}, true}, false, -1, out);
}
static disp_status dropout_backward(disp_tensor **in, disp_tensor **out) {
  disp_tensor *mask = NULL;
  disp_status st = disp_aten_ones_like(in[0], DISP_DTYPE_BOOL, -1, (disp_opt_device){0}, (disp_opt_bool){0}, -1, &mask);
  if (st == DISP_OK) st = disp_aten_native_dropout_backward(in[0], mask, 2.0, out);
  disp_tensor_release(mask);
  return st;
}
static disp_status addmm(disp_tensor **in, disp_tensor **out) {
  return disp_aten_addmm(in[0], in[1], in[2], disp_scalar_int(1), disp_scalar_int(1), out);
}
static disp_status conv(disp_tensor **in, disp_tensor **out) {
  int64_t one[2] = {1, 1}, zero[2] = {0, 0};
  disp_int_list s = {one, 2}, p = {zero, 2};
  return disp_aten_convolution(in[0], in[1], in[2], s, p, s, false, p, 1, out);
}

/* x * 1.5, in place, without recording: bumps x's version. */
static disp_status modify(disp_tensor *x) {
  disp_tensor *same = NULL;
  disp_tls_state g = disp_grad_mode_push(0);
  disp_status st = disp_aten_mul__Tensor(x, x, &same);
  disp_tls_restore(g);
  disp_tensor_release(same);
  return st;
}

static disp_tensor *input(const int64_t *sizes, int nd, int requires_grad) {
  disp_int_list shape = {sizes, (size_t)nd};
  disp_tensor *r = NULL, *t = NULL;
  if (disp_aten_rand(shape, DISP_DTYPE_FLOAT64, -1, (disp_opt_device){0}, (disp_opt_bool){0}, &r) != DISP_OK)
    return NULL;
  disp_status st = disp_aten_add_Scalar(r, disp_scalar_double(0.5), disp_scalar_int(1), &t);
  disp_tensor_release(r);
  if (st == DISP_OK && requires_grad) st = disp_tensor_set_requires_grad(t, 1);
  return st == DISP_OK ? t : (disp_tensor_release(t), NULL);
}

typedef struct saved_case {
  const char *name;
  op_fn fn;
  int n;                      /* tensor inputs, the differentiable ones first */
  int ndiff;
  int64_t sizes[3][4];
  int nd[3];
  /* per requires_grad mask (bit j: input j), the inputs whose in-place
   * change breaks backward (bit i: input i), as 1.13 */
  unsigned saved[8];
} saved_case;

static const saved_case cases[] = {
    /* mm saves self for mat2's gradient and mat2 for self's */
    {"mm", mm, 2, 2, {{3, 4}, {4, 2}}, {2, 2}, {0, 2, 1, 3}},
    {"bmm", bmm, 2, 2, {{1, 3, 4}, {1, 4, 2}}, {3, 3}, {0, 2, 1, 3}},
    /* addmm: self's gradient needs nothing; mat1 is saved for mat2's, mat2 for mat1's */
    {"addmm", addmm, 3, 3, {{2}, {3, 4}, {4, 2}}, {1, 2, 2}, {0, 0, 4, 4, 2, 2, 6, 6}},
    {"mul", mul, 2, 2, {{3}, {3}}, {1, 1}, {0, 2, 1, 3}},
    /* div: other is used by both gradients, self only by other's */
    {"div", div_, 2, 2, {{3}, {3}}, {1, 1}, {0, 2, 3, 3}},
    /* used by both gradients: always saved */
    {"maximum", maximum, 2, 2, {{3}, {3}}, {1, 1}, {0, 3, 3, 3}},
    {"mse_loss", mse, 2, 2, {{3}, {3}}, {1, 1}, {0, 3, 3, 3}},
    /* one derivative for all three inputs (convolution_backward): input and weight always */
    {"convolution", conv, 3, 3, {{1, 1, 4, 4}, {2, 1, 3, 3}, {2}}, {4, 4, 1}, {0, 3, 3, 3, 3, 3, 3, 3}},
    {"add", add, 2, 2, {{3}, {3}}, {1, 1}, {0, 0, 0, 0}},
    /* 1.13's mean_backward reads self.sym_numel(): self is saved */
    {"mean.dim", mean_dim, 1, 1, {{3, 4}}, {2}, {0, 1}},
    {"sum.dim", sum_dim, 1, 1, {{3, 4}}, {2}, {0, 0}},
    /* native_dropout_double_backward(grad, grad_output, mask, scale) */
    {"native_dropout_backward", dropout_backward, 1, 1, {{3}}, {1}, {0, 1}},
};

/* Runs one (case, mask, modified input); *broke: backward refused it. */
static int run_one(const saved_case *c, unsigned mask, int modified, int *broke) {
  disp_tensor *in[3] = {0}, *out = NULL, *s = NULL;
  int ok = 1;
  for (int i = 0; i < c->n; i++) ok &= (in[i] = input(c->sizes[i], c->nd[i], i < c->ndiff && (mask >> i) & 1)) != NULL;
  ok = ok && c->fn(in, &out) == DISP_OK && disp_aten_sum(out, -1, &s) == DISP_OK && modify(in[modified]) == DISP_OK;
  if (ok) {
    disp_status st = disp_autograd_backward(&s, 1, NULL, 0, 0);
    *broke = st != DISP_OK;
    if (st != DISP_OK && !strstr(disp_last_error(), "has been modified by an inplace operation")) ok = 0;
    if (!ok) fprintf(stderr, "%s: %s\n", c->name, disp_last_error());
  }
  for (int i = 0; i < c->n; i++) disp_tensor_release(in[i]);
  disp_tensor_release(out), disp_tensor_release(s);
  return ok;
}

TEST(an_input_is_saved_only_for_the_gradients_that_use_it) {
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    const saved_case *c = &cases[k];
    for (unsigned mask = 1; mask < 1u << c->ndiff; mask++) {
      unsigned broke_set = 0;
      for (int i = 0; i < c->n; i++) {
        int broke = 0;
        ASSERT_TRUE(run_one(c, mask, i, &broke));
        broke_set |= (unsigned)broke << i;
      }
      if (broke_set != c->saved[mask]) fprintf(stderr, "%s, requires_grad mask %u\n", c->name, mask);
      ASSERT_EQ_INT(broke_set, c->saved[mask]);
    }
  }
  return 0;
}

/* y = mm(x, W) with only W requiring grad saves x alone: W may change in
 * place (under no_grad, as an optimizer step does) and backward still
 * gives W.grad = x^T @ ones. */
TEST(mm_weight_updated_in_place_before_backward) {
  disp_tensor *x = input((const int64_t[]){3, 4}, 2, 0), *w = input((const int64_t[]){4, 2}, 2, 1);
  disp_tensor *y = NULL, *s = NULL, *want = NULL, *xt = NULL, *ones = NULL, *eq = NULL;
  ASSERT_TRUE(x && w);
  ASSERT_OK(disp_aten_mm(x, w, &y));
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_OK(modify(w));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  ASSERT_OK(disp_aten_ones_like(y, -1, -1, (disp_opt_device){0}, (disp_opt_bool){0}, -1, &ones));
  ASSERT_OK(disp_aten_t(x, &xt));
  ASSERT_OK(disp_aten_mm(xt, ones, &want));
  ASSERT_OK(disp_aten_eq_Tensor(disp_tensor_grad(w), want, &eq));
  disp_tensor *all = NULL;
  disp_scalar v;
  ASSERT_OK(disp_aten_sum(eq, -1, &all));
  ASSERT_OK(disp_aten_item(all, &v));
  ASSERT_EQ_INT(disp_scalar_to_double(v), 8);
  disp_tensor_release(all), disp_tensor_release(eq), disp_tensor_release(want), disp_tensor_release(xt);
  disp_tensor_release(ones), disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(w);
  disp_tensor_release(x);
  return 0;
}

/* as_strided keeps its input's geometry, not the input (1.13's
 * self_geometry): the input may change in place before backward. */
TEST(as_strided_saves_the_geometry_only) {
  disp_tensor *x = input((const int64_t[]){6}, 1, 1), *y = NULL, *s = NULL;
  int64_t sz[2] = {2, 2}, st[2] = {2, 1};
  ASSERT_TRUE(x != NULL);
  ASSERT_OK(disp_aten_as_strided(x, (disp_int_list){sz, 2}, (disp_int_list){st, 2}, (disp_opt_int){1, true}, &y));
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_OK(modify(x));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  const double *g = disp_tensor_data_ptr(disp_tensor_grad(x));
  const double want[6] = {0, 1, 1, 1, 1, 0};
  for (int i = 0; i < 6; i++) ASSERT_TRUE(g[i] == want[i]);
  disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(x);
  return 0;
}

TEST_LIST = {TEST_ENTRY(an_input_is_saved_only_for_the_gradients_that_use_it),
             TEST_ENTRY(mm_weight_updated_in_place_before_backward), TEST_ENTRY(as_strided_saves_the_geometry_only),
             TEST_END};

TEST_MAIN()
