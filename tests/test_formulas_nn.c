/*
 * test_formulas_nn.c - the matrix and neural-network derivative formulas
 * beyond what the PyTorch 1.13 reference gradients (check-ops --grad)
 * cover: a small CNN's input gradient against finite differences in
 * float64, outputs that carry no gradient (indices, mask, total_weight),
 * PyTorch's node names, and that backward dispatches the separate backward
 * operators (convolution_backward, max_pool2d_with_indices_backward) so a
 * backend's kernel for them is the one used.
 */
#include <math.h>
#include <unistd.h>

#include "test.h"
#include "disp/aten.h"

static const int64_t one2[2] = {1, 1}, zero2[2] = {0, 0}, two2[2] = {2, 2};
#define L2(a) ((disp_int_list){(a), 2})

/* A float64 (or other dtype) CPU tensor filled from v, or by a fixed
 * pseudo-random sequence in [-1, 1) when v is NULL. */
static disp_tensor *make(const int64_t *sizes, int nd, disp_dtype dt, const double *v, unsigned seed) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, nd, dt, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK) return NULL;
  int64_t n = disp_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    double x = v ? v[i] : (double)((seed >> 8) % 2048) / 1024.0 - 1.0;
    if (dt == DISP_DTYPE_FLOAT64) ((double *)disp_tensor_data_ptr(t))[i] = x;
    else if (dt == DISP_DTYPE_INT64) ((int64_t *)disp_tensor_data_ptr(t))[i] = (int64_t)x;
  }
  return t;
}

static disp_tensor *leaf(disp_tensor *t) {
  if (t && disp_tensor_set_requires_grad(t, 1) != DISP_OK) {
    disp_tensor_release(t);
    return NULL;
  }
  return t;
}

static double item(disp_tensor *t) { return ((const double *)disp_tensor_data_ptr(t))[0]; }

/* ---- a small CNN: conv2d -> relu -> max_pool2d -> view -> linear -> cross_entropy */

typedef struct cnn {
  disp_tensor *x, *w, *b, *w2, *b2, *target;
} cnn;

static int cnn_init(cnn *m) {
  static const int64_t xs[4] = {2, 1, 6, 6}, ws[4] = {3, 1, 3, 3}, bs[1] = {3}, w2s[2] = {4, 27}, b2s[1] = {4},
                       ts[1] = {2};
  static const double target[2] = {1, 3};
  m->x = leaf(make(xs, 4, DISP_DTYPE_FLOAT64, NULL, 1));
  m->w = leaf(make(ws, 4, DISP_DTYPE_FLOAT64, NULL, 2));
  m->b = leaf(make(bs, 1, DISP_DTYPE_FLOAT64, NULL, 3));
  m->w2 = leaf(make(w2s, 2, DISP_DTYPE_FLOAT64, NULL, 4));
  m->b2 = leaf(make(b2s, 1, DISP_DTYPE_FLOAT64, NULL, 5));
  m->target = make(ts, 1, DISP_DTYPE_INT64, target, 0);
  return m->x && m->w && m->b && m->w2 && m->b2 && m->target;
}

static void cnn_free(cnn *m) {
  disp_tensor_release(m->x), disp_tensor_release(m->w), disp_tensor_release(m->b);
  disp_tensor_release(m->w2), disp_tensor_release(m->b2), disp_tensor_release(m->target);
}

/* The loss of m on input x (a new reference in *loss). */
static disp_status cnn_loss(const cnn *m, disp_tensor *x, disp_tensor **loss) {
  static const int64_t flat[2] = {2, 27};
  disp_tensor *c = NULL, *r = NULL, *p = NULL, *v = NULL, *l = NULL;
  disp_status st = disp_aten_conv2d(x, m->w, m->b, L2(one2), L2(one2), L2(one2), 1, &c);
  if (st == DISP_OK) st = disp_aten_relu(c, &r);
  if (st == DISP_OK) st = disp_aten_max_pool2d(r, L2(two2), L2(two2), L2(zero2), L2(one2), false, &p);
  if (st == DISP_OK) st = disp_aten_view(p, L2(flat), &v);
  if (st == DISP_OK) st = disp_aten_linear(v, m->w2, m->b2, &l);
  if (st == DISP_OK) st = disp_aten_cross_entropy_loss(l, m->target, NULL, 1, -100, 0.0, loss);
  disp_tensor_release(c), disp_tensor_release(r), disp_tensor_release(p), disp_tensor_release(v);
  disp_tensor_release(l);
  return st;
}

/* The loss at x with element i moved by h, without recording a graph. */
static double loss_at(const cnn *m, int64_t i, double h) {
  disp_tensor *xc = NULL, *loss = NULL;
  disp_tls_state g = disp_grad_mode_push(0);
  double r = NAN;
  if (disp_aten_clone(m->x, -1, &xc) == DISP_OK) {
    ((double *)disp_tensor_data_ptr(xc))[i] += h;
    if (cnn_loss(m, xc, &loss) == DISP_OK) r = item(loss);
  }
  disp_tls_restore(g);
  disp_tensor_release(xc), disp_tensor_release(loss);
  return r;
}

TEST(cnn_input_gradient_matches_finite_differences) {
  cnn m;
  ASSERT_TRUE(cnn_init(&m));
  disp_tensor *loss = NULL;
  ASSERT_OK(cnn_loss(&m, m.x, &loss));
  ASSERT_OK(disp_autograd_backward(&loss, 1, NULL, 0, 0));
  disp_tensor *gx = disp_tensor_grad(m.x);
  ASSERT_TRUE(gx != NULL && disp_tensor_is_contiguous(gx));
  ASSERT_TRUE(disp_tensor_grad(m.w) && disp_tensor_grad(m.b) && disp_tensor_grad(m.w2) && disp_tensor_grad(m.b2));
  const double *g = disp_tensor_data_ptr(gx);
  double h = 1e-6, nonzero = 0;
  for (int64_t i = 0; i < disp_tensor_numel(m.x); i++) {
    double fd = (loss_at(&m, i, h) - loss_at(&m, i, -h)) / (2 * h);
    if (fabs(fd - g[i]) > 1e-6 * (1 + fabs(fd))) TEST_FAIL_("x[%lld]: grad %.12g, finite difference %.12g", (long long)i, g[i], fd);
    nonzero += fabs(g[i]);
  }
  ASSERT_TRUE(nonzero > 0);
  disp_tensor_release(loss);
  cnn_free(&m);
  return 0;
}

/* ---- outputs without a gradient ------------------------------------------ */

TEST(indices_mask_and_total_weight_do_not_require_grad) {
  static const int64_t xs[4] = {1, 2, 4, 4}, ls[2] = {3, 5}, ts[1] = {3};
  static const double target[3] = {0, 4, 2};
  disp_tensor *x = leaf(make(xs, 4, DISP_DTYPE_FLOAT64, NULL, 7)), *out = NULL, *idx = NULL;
  ASSERT_OK(disp_aten_max_pool2d_with_indices(x, L2(two2), L2(two2), L2(zero2), L2(one2), false, &out, &idx));
  ASSERT_TRUE(disp_tensor_requires_grad(out));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(out)), "MaxPool2DWithIndicesBackward0");
  ASSERT_FALSE(disp_tensor_requires_grad(idx));
  ASSERT_TRUE(disp_tensor_grad_fn(idx) == NULL);
  disp_tensor_release(out), disp_tensor_release(idx);

  disp_tensor *mask = NULL;
  ASSERT_OK(disp_aten_native_dropout(x, 0.5, (disp_opt_bool){true, true}, &out, &mask));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(out)), "NativeDropoutBackward0");
  ASSERT_FALSE(disp_tensor_requires_grad(mask));
  disp_tensor_release(out), disp_tensor_release(mask);

  disp_tensor *logp = leaf(make(ls, 2, DISP_DTYPE_FLOAT64, NULL, 8)), *t = make(ts, 1, DISP_DTYPE_INT64, target, 0);
  disp_tensor *tw = NULL;
  ASSERT_OK(disp_aten_nll_loss_forward(logp, t, NULL, 1, -100, &out, &tw));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(out)), "NllLossBackward0");
  ASSERT_EQ_INT(disp_tensor_dtype(tw), DISP_DTYPE_FLOAT64); /* floating, yet not differentiable */
  ASSERT_FALSE(disp_tensor_requires_grad(tw));
  disp_tensor_release(out), disp_tensor_release(tw), disp_tensor_release(logp), disp_tensor_release(t);
  disp_tensor_release(x);
  return 0;
}

/* ---- node names, first and second order ------------------------------------- */

/* The name of the grad_fn of d(out)/d(in) taken with create_graph. */
static const char *double_name(disp_tensor *out, disp_tensor *in, char *buf, size_t n) {
  disp_tensor *s = NULL, *g = NULL;
  buf[0] = '\0';
  if (disp_aten_sum(out, -1, &s) == DISP_OK && disp_autograd_grad(&s, 1, &in, 1, NULL, -1, 1, 0, &g) == DISP_OK &&
      disp_tensor_grad_fn(g))
    snprintf(buf, n, "%s", disp_node_name(disp_tensor_grad_fn(g)));
  disp_tensor_release(s), disp_tensor_release(g);
  return buf;
}

TEST(node_names_are_pytorchs) {
  static const int64_t bs[3] = {2, 3, 3}, xs[4] = {1, 1, 4, 4}, ws[4] = {2, 1, 3, 3}, ms[2] = {3, 4};
  disp_tensor *a = leaf(make(bs, 3, DISP_DTYPE_FLOAT64, NULL, 9)), *x = leaf(make(xs, 4, DISP_DTYPE_FLOAT64, NULL, 10));
  disp_tensor *w = leaf(make(ws, 4, DISP_DTYPE_FLOAT64, NULL, 11)), *m = leaf(make(ms, 2, DISP_DTYPE_FLOAT64, NULL, 12));
  disp_tensor *y = make(ms, 2, DISP_DTYPE_FLOAT64, NULL, 13), *out = NULL, *idx = NULL;
  char buf[64];
  ASSERT_OK(disp_aten_bmm(a, a, &out));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(out)), "BmmBackward0");
  disp_tensor_release(out);
  ASSERT_OK(disp_aten_convolution(x, w, NULL, L2(one2), L2(zero2), L2(one2), false, L2(zero2), 1, &out));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(out)), "ConvolutionBackward0");
  ASSERT_EQ_INT(disp_node_num_next(disp_tensor_grad_fn(out)), 3); /* input, weight, bias (None) */
  ASSERT_EQ_STR(double_name(out, x, buf, sizeof buf), "ConvolutionBackwardBackward0");
  disp_tensor_release(out);
  ASSERT_OK(disp_aten_max_pool2d_with_indices(x, L2(two2), L2(two2), L2(zero2), L2(one2), false, &out, &idx));
  ASSERT_EQ_STR(double_name(out, x, buf, sizeof buf), "MaxPool2DWithIndicesBackwardBackward0");
  disp_tensor_release(out), disp_tensor_release(idx);
  ASSERT_OK(disp_aten_mse_loss(m, y, 1, &out));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(out)), "MseLossBackward0");
  ASSERT_EQ_STR(double_name(out, m, buf, sizeof buf), "MseLossBackwardBackward0");
  disp_tensor_release(out);
  ASSERT_OK(disp_aten__softmax(m, 1, false, &out));
  ASSERT_EQ_STR(double_name(out, m, buf, sizeof buf), "SoftmaxBackwardDataBackward0");
  disp_tensor_release(out);
  ASSERT_OK(disp_aten__log_softmax(m, 1, false, &out));
  ASSERT_EQ_STR(double_name(out, m, buf, sizeof buf), "LogSoftmaxBackwardDataBackward0");
  disp_tensor_release(out);
  disp_tensor *sq = NULL;
  ASSERT_OK(disp_aten_native_dropout(m, 0.25, (disp_opt_bool){true, true}, &out, &idx));
  ASSERT_OK(disp_aten_mul_Tensor(out, out, &sq)); /* so the gradient reaching dropout requires grad */
  ASSERT_EQ_STR(double_name(sq, m, buf, sizeof buf), "MulBackward0"); /* 1.13: grad * (mask * scale) */
  disp_tensor_release(out), disp_tensor_release(idx), disp_tensor_release(sq);
  disp_tensor_release(a), disp_tensor_release(x), disp_tensor_release(w), disp_tensor_release(m), disp_tensor_release(y);
  return 0;
}

/* ---- the backward operators are dispatched ---------------------------------- */

/* What the dispatch trace printed to stderr while fn ran. */
static char *capture_stderr(int (*fn)(void), int *rc) {
  fflush(stderr);
  FILE *tmp = tmpfile();
  if (!tmp) return NULL;
  int saved = dup(2);
  dup2(fileno(tmp), 2);
  *rc = fn();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  long n = ftell(tmp);
  rewind(tmp);
  char *buf = calloc(1, (size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, tmp) != (size_t)n) buf[0] = '\0';
  fclose(tmp);
  return buf;
}

static disp_tensor *g_loss;
static int traced_backward(void) {
  disp_trace_set(1);
  disp_status st = disp_autograd_backward(&g_loss, 1, NULL, 0, 0);
  disp_trace_set(0);
  return st != DISP_OK;
}

TEST(backward_dispatches_the_backward_operators) {
  static const int64_t xs[4] = {1, 1, 4, 4}, ws[4] = {2, 1, 3, 3}, bs[1] = {2};
  disp_tensor *x = leaf(make(xs, 4, DISP_DTYPE_FLOAT64, NULL, 20)), *w = leaf(make(ws, 4, DISP_DTYPE_FLOAT64, NULL, 21));
  disp_tensor *b = make(bs, 1, DISP_DTYPE_FLOAT64, NULL, 22), *c = NULL, *p = NULL, *idx = NULL;
  ASSERT_OK(disp_aten_convolution(x, w, b, L2(one2), L2(one2), L2(one2), false, L2(zero2), 1, &c));
  ASSERT_OK(disp_aten_max_pool2d_with_indices(c, L2(two2), L2(two2), L2(zero2), L2(one2), false, &p, &idx));
  ASSERT_OK(disp_aten_sum(p, -1, &g_loss));
  int rc = 1;
  char *text = capture_stderr(traced_backward, &rc);
  ASSERT_EQ_INT(rc, 0);
  ASSERT_CONTAINS(text, "op=[aten::max_pool2d_with_indices_backward]");
  ASSERT_CONTAINS(text, "op=[aten::convolution_backward]");
  free(text);
  ASSERT_TRUE(disp_tensor_grad(x) && disp_tensor_grad(w));
  ASSERT_TRUE(disp_tensor_grad(b) == NULL); /* bias did not require grad: output_mask[2] false */
  disp_tensor_release(g_loss), disp_tensor_release(c), disp_tensor_release(p), disp_tensor_release(idx);
  disp_tensor_release(x), disp_tensor_release(w), disp_tensor_release(b);
  return 0;
}

/* ---- a bias of None --------------------------------------------------------- */

TEST(convolution_without_bias_gives_window_counts) {
  static const int64_t xs[4] = {1, 1, 3, 3}, ws[4] = {1, 1, 2, 2};
  static const double ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  static const double want_x[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
  disp_tensor *x = leaf(make(xs, 4, DISP_DTYPE_FLOAT64, ones, 0)), *w = leaf(make(ws, 4, DISP_DTYPE_FLOAT64, ones, 0));
  disp_tensor *c = NULL, *s = NULL;
  ASSERT_OK(disp_aten_convolution(x, w, NULL, L2(one2), L2(zero2), L2(one2), false, L2(zero2), 1, &c));
  ASSERT_OK(disp_aten_sum(c, -1, &s));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  const double *gx = disp_tensor_data_ptr(disp_tensor_grad(x)), *gw = disp_tensor_data_ptr(disp_tensor_grad(w));
  for (int i = 0; i < 9; i++) ASSERT_TRUE(gx[i] == want_x[i]);
  for (int i = 0; i < 4; i++) ASSERT_TRUE(gw[i] == 4.0);
  disp_tensor_release(s), disp_tensor_release(c), disp_tensor_release(x), disp_tensor_release(w);
  return 0;
}

/* ---- second derivatives against finite differences ---------------------------- */

/* A scalar function of n float64 leaves. */
typedef disp_status (*scalar_fn)(disp_tensor *const *in, disp_tensor **out);

/* H = sum(dL/d in[i] * v), the gradient taken with create_graph = cg. */
static disp_status grad_dot(scalar_fn f, disp_tensor *const *in, int i, disp_tensor *v, int cg, disp_tensor **h) {
  disp_tensor *l = NULL, *g = NULL, *p = NULL;
  disp_status st = f(in, &l);
  if (st == DISP_OK) st = disp_autograd_grad(&l, 1, &in[i], 1, NULL, -1, cg, 0, &g);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(g, v, &p);
  if (st == DISP_OK) st = disp_aten_sum(p, -1, h);
  disp_tensor_release(l), disp_tensor_release(g), disp_tensor_release(p);
  return st;
}

/* 0 when d/d in[j] of sum(dL/d in[i] * v) by autograd matches central
 * differences of the first-order gradient; else the failing element + 1. */
static int64_t gradgrad_mismatch(scalar_fn f, disp_tensor *const *in, int i, int j) {
  disp_tensor *v = make(disp_tensor_sizes(in[i]), disp_tensor_ndim(in[i]), DISP_DTYPE_FLOAT64, NULL, 99);
  disp_tensor *h = NULL, *gg = NULL;
  int64_t bad = -1;
  if (v && grad_dot(f, in, i, v, 1, &h) == DISP_OK &&
      disp_autograd_grad(&h, 1, &in[j], 1, NULL, 0, 0, 1, &gg) == DISP_OK) {
    double *x = disp_tensor_data_ptr(in[j]), eps = 1e-6;
    bad = 0;
    for (int64_t k = 0; k < disp_tensor_numel(in[j]) && !bad; k++) {
      double hv[2] = {0, 0}, x0 = x[k];
      for (int s = 0; s < 2; s++) {
        disp_tensor *hs = NULL;
        x[k] = x0 + (s ? -eps : eps);
        if (grad_dot(f, in, i, v, 0, &hs) == DISP_OK) hv[s] = item(hs);
        disp_tensor_release(hs);
      }
      x[k] = x0;
      double fd = (hv[0] - hv[1]) / (2 * eps), got = gg ? ((const double *)disp_tensor_data_ptr(gg))[k] : 0;
      if (fabs(fd - got) > 1e-5 * (1 + fabs(fd))) bad = k + 1;
    }
  }
  disp_tensor_release(v), disp_tensor_release(h), disp_tensor_release(gg);
  return bad;
}

/* sum(t * t), consuming t. */
static disp_status sum_sq(disp_tensor *t, disp_status st, disp_tensor **out) {
  disp_tensor *p = NULL;
  if (st == DISP_OK) st = disp_aten_mul_Tensor(t, t, &p);
  if (st == DISP_OK) st = disp_aten_sum(p, -1, out);
  disp_tensor_release(t), disp_tensor_release(p);
  return st;
}

static disp_status conv_sq(disp_tensor *const *in, disp_tensor **out) {
  disp_tensor *c = NULL;
  disp_status st = disp_aten_convolution(in[0], in[1], in[2], L2(two2), L2(one2), L2(one2), false, L2(zero2), 1, &c);
  return sum_sq(c, st, out);
}

static disp_status conv_t_sq(disp_tensor *const *in, disp_tensor **out) {
  disp_tensor *c = NULL;
  disp_status st = disp_aten_convolution(in[0], in[1], in[2], L2(two2), L2(one2), L2(one2), true, L2(one2), 1, &c);
  return sum_sq(c, st, out);
}

TEST(convolution_second_derivatives_match_finite_differences) {
  static const int64_t xs[4] = {2, 2, 5, 5}, ws[4] = {3, 2, 3, 3}, wts[4] = {2, 3, 3, 3}, bs[1] = {3};
  disp_tensor *in[3] = {leaf(make(xs, 4, DISP_DTYPE_FLOAT64, NULL, 30)), leaf(make(ws, 4, DISP_DTYPE_FLOAT64, NULL, 31)),
                        leaf(make(bs, 1, DISP_DTYPE_FLOAT64, NULL, 32))};
  ASSERT_EQ_INT(gradgrad_mismatch(conv_sq, in, 0, 1), 0); /* ggI -> weight, grad_output */
  ASSERT_EQ_INT(gradgrad_mismatch(conv_sq, in, 1, 0), 0); /* ggW -> input, grad_output */
  ASSERT_EQ_INT(gradgrad_mismatch(conv_sq, in, 2, 1), 0); /* ggb -> grad_output */
  ASSERT_EQ_INT(gradgrad_mismatch(conv_sq, in, 0, 0), 0);
  disp_tensor_release(in[1]);
  in[1] = leaf(make(wts, 4, DISP_DTYPE_FLOAT64, NULL, 33)); /* transposed: weight is [in, out, kh, kw] */
  ASSERT_EQ_INT(gradgrad_mismatch(conv_t_sq, in, 0, 1), 0);
  ASSERT_EQ_INT(gradgrad_mismatch(conv_t_sq, in, 1, 0), 0);
  for (int k = 0; k < 3; k++) disp_tensor_release(in[k]);
  return 0;
}

static disp_status pool_sq(disp_tensor *const *in, disp_tensor **out) {
  disp_tensor *p = NULL, *idx = NULL, *q = NULL;
  disp_status st = disp_aten_max_pool2d_with_indices(in[0], L2(two2), L2(one2), L2(zero2), L2(one2), false, &p, &idx);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(p, in[1], &q); /* weights make the second derivative non-trivial */
  disp_tensor_release(p), disp_tensor_release(idx);
  return sum_sq(q, st, out);
}

static disp_status softmax_sq(disp_tensor *const *in, disp_tensor **out) {
  disp_tensor *s = NULL, *l = NULL, *t = NULL;
  disp_status st = disp_aten__softmax(in[0], 1, false, &s);
  if (st == DISP_OK) st = disp_aten__log_softmax(in[0], 0, false, &l);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(s, l, &t);
  disp_tensor_release(s), disp_tensor_release(l);
  return sum_sq(t, st, out);
}

static disp_status mse_sq(disp_tensor *const *in, disp_tensor **out) {
  disp_tensor *l = NULL, *n = NULL, *t = NULL;
  disp_status st = disp_aten_mse_loss(in[0], in[1], 1, &l);
  if (st == DISP_OK) st = disp_aten_mse_loss(in[0], in[1], 0, &n);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(n, l, &t);
  disp_tensor_release(l), disp_tensor_release(n);
  return sum_sq(t, st, out);
}

static disp_tensor *g_target;
static disp_status nll_sq(disp_tensor *const *in, disp_tensor **out) {
  disp_tensor *l = NULL, *tw = NULL, *t = NULL;
  disp_status st = disp_aten_nll_loss_forward(in[0], g_target, NULL, 1, -100, &l, &tw);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(l, in[1], &t);
  disp_tensor_release(l), disp_tensor_release(tw);
  return sum_sq(t, st, out);
}

TEST(pool_softmax_and_loss_second_derivatives_match_finite_differences) {
  static const int64_t xs[4] = {1, 2, 4, 4}, ps[4] = {1, 2, 3, 3}, ms[2] = {3, 4}, ts[1] = {3};
  static const double target[3] = {2, 0, 3};
  disp_tensor *pool[2] = {leaf(make(xs, 4, DISP_DTYPE_FLOAT64, NULL, 40)), leaf(make(ps, 4, DISP_DTYPE_FLOAT64, NULL, 41))};
  ASSERT_EQ_INT(gradgrad_mismatch(pool_sq, pool, 0, 0), 0);
  ASSERT_EQ_INT(gradgrad_mismatch(pool_sq, pool, 0, 1), 0);
  disp_tensor *m[2] = {leaf(make(ms, 2, DISP_DTYPE_FLOAT64, NULL, 42)), leaf(make(ms, 2, DISP_DTYPE_FLOAT64, NULL, 43))};
  ASSERT_EQ_INT(gradgrad_mismatch(softmax_sq, m, 0, 0), 0);
  ASSERT_EQ_INT(gradgrad_mismatch(mse_sq, m, 0, 0), 0);
  ASSERT_EQ_INT(gradgrad_mismatch(mse_sq, m, 0, 1), 0);
  ASSERT_EQ_INT(gradgrad_mismatch(mse_sq, m, 1, 0), 0);
  g_target = make(ts, 1, DISP_DTYPE_INT64, target, 0);
  disp_tensor *w = leaf(make((const int64_t[]){1}, 0, DISP_DTYPE_FLOAT64, NULL, 44)), *nl[2] = {m[0], w};
  ASSERT_EQ_INT(gradgrad_mismatch(nll_sq, nl, 0, 1), 0);
  ASSERT_EQ_INT(gradgrad_mismatch(nll_sq, nl, 0, 0), 0);
  disp_tensor_release(g_target), disp_tensor_release(w);
  disp_tensor_release(pool[0]), disp_tensor_release(pool[1]), disp_tensor_release(m[0]), disp_tensor_release(m[1]);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(cnn_input_gradient_matches_finite_differences),
    TEST_ENTRY(indices_mask_and_total_weight_do_not_require_grad),
    TEST_ENTRY(node_names_are_pytorchs),
    TEST_ENTRY(backward_dispatches_the_backward_operators),
    TEST_ENTRY(convolution_without_bias_gives_window_counts),
    TEST_ENTRY(convolution_second_derivatives_match_finite_differences),
    TEST_ENTRY(pool_softmax_and_loss_second_derivatives_match_finite_differences),
    TEST_END};
TEST_MAIN()
