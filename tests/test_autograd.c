/*
 * test_autograd.c - the graph, the engine and their errors (PyTorch 1.13's
 * wording), on small float32 tensors whose gradients are known by hand.
 */
#include <math.h>

#include "test.h"
#include "disp/aten.h"

static disp_tensor *vec(const float *v, int64_t n) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK) return NULL;
  memcpy(disp_tensor_data_ptr(t), v, (size_t)n * sizeof *v);
  return t;
}

static disp_tensor *mat(const float *v, int64_t r, int64_t c) {
  int64_t sizes[2] = {r, c};
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK)
    return NULL;
  memcpy(disp_tensor_data_ptr(t), v, (size_t)(r * c) * sizeof *v);
  return t;
}

static disp_tensor *leaf(const float *v, int64_t n) {
  disp_tensor *t = vec(v, n);
  if (t && disp_tensor_set_requires_grad(t, 1) != DISP_OK) {
    disp_tensor_release(t);
    return NULL;
  }
  return t;
}

/* Compares t (a reference it takes) with want. */
static int close_to(disp_tensor *t, const float *want, int64_t n) {
  disp_tensor *c = NULL;
  int ok = t && disp_tensor_numel(t) == n && disp_tensor_dtype(t) == DISP_DTYPE_FLOAT32 &&
           disp_aten_contiguous(t, DISP_MEMORY_FORMAT_CONTIGUOUS, &c) == DISP_OK;
  if (!ok) {
    disp_tensor_release(t);
    return 0;
  }
  const float *d = disp_tensor_data_ptr(c);
  for (int64_t i = 0; i < n; i++)
    if (fabsf(d[i] - want[i]) > 1e-5f * (1 + fabsf(want[i]))) ok = 0;
  disp_tensor_release(c);
  disp_tensor_release(t);
  return ok;
}
#define GRAD_IS(t, ...) close_to(disp_tensor_retain(disp_tensor_grad(t)), (const float[]){__VA_ARGS__}, \
                                 (int64_t)(sizeof((const float[]){__VA_ARGS__}) / sizeof(float)))

TEST(mul_sum_backward_gives_two_x) {
  disp_tensor *x = leaf((const float[]){1, 2, 3}, 3), *y = NULL, *s = NULL;
  ASSERT_OK(disp_aten_mul_Tensor(x, x, &y));
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_TRUE(disp_tensor_requires_grad(s));
  ASSERT_FALSE(disp_tensor_is_leaf(s));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(s)), "SumBackward0");
  disp_node *mul = disp_node_next(disp_tensor_grad_fn(s), 0, NULL);
  ASSERT_EQ_STR(disp_node_name(mul), "MulBackward0");
  ASSERT_EQ_INT(disp_node_num_next(mul), 2);
  ASSERT_EQ_STR(disp_node_name(disp_node_next(mul, 0, NULL)), "AccumulateGrad");
  ASSERT_TRUE(disp_node_next(mul, 0, NULL) == disp_node_next(mul, 1, NULL)); /* one accumulator per leaf */
  ASSERT_TRUE(disp_node_variable(disp_node_next(mul, 0, NULL)) == x);
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  ASSERT_TRUE(GRAD_IS(x, 2, 4, 6));
  ASSERT_TRUE(disp_tensor_grad(y) == NULL); /* not a leaf: nothing kept */
  disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(x);
  return 0;
}

TEST(gradients_accumulate_across_passes) {
  disp_tensor *x = leaf((const float[]){1, 2}, 2), *s = NULL;
  for (int pass = 0; pass < 2; pass++) {
    ASSERT_OK(disp_aten_sum(x, -1, &s));
    ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
    disp_tensor_release(s);
  }
  ASSERT_TRUE(GRAD_IS(x, 2, 2));
  ASSERT_OK(disp_tensor_set_grad(x, NULL));
  ASSERT_TRUE(disp_tensor_grad(x) == NULL);
  disp_tensor_release(x);
  return 0;
}

/* linear as the model uses it: addmm(bias, x, w.t()) with a broadcast bias. */
TEST(addmm_with_broadcast_bias) {
  disp_tensor *x = mat((const float[]){1, 2, 3, 4}, 2, 2), *w = mat((const float[]){1, 0, 0, 1, 1, 1}, 3, 2);
  disp_tensor *b = leaf((const float[]){0, 0, 0}, 3), *wt = NULL, *y = NULL, *s = NULL;
  ASSERT_OK(disp_tensor_set_requires_grad(w, 1));
  ASSERT_OK(disp_aten_t(w, &wt));
  ASSERT_OK(disp_aten_addmm(b, x, wt, disp_scalar_int(1), disp_scalar_int(1), &y));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(y)), "AddmmBackward0");
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  ASSERT_TRUE(GRAD_IS(b, 2, 2, 2));           /* summed over the batch */
  ASSERT_TRUE(GRAD_IS(w, 4, 6, 4, 6, 4, 6));  /* each row: column sums of x */
  disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(wt);
  disp_tensor_release(x), disp_tensor_release(w), disp_tensor_release(b);
  return 0;
}

TEST(backward_errors_use_pytorch_words) {
  disp_tensor *x = vec((const float[]){1, 2}, 2), *l = leaf((const float[]){1, 2}, 2), *y = NULL;
  ASSERT_STATUS(disp_autograd_backward(&x, 1, NULL, 0, 0), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "element 0 of tensors does not require grad and does not have a grad_fn");
  ASSERT_OK(disp_aten_mul_Tensor(l, l, &y));
  ASSERT_STATUS(disp_autograd_backward(&y, 1, NULL, 0, 0), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "grad can be implicitly created only for scalar outputs");
  disp_tensor *ones = vec((const float[]){1, 1}, 2);
  ASSERT_OK(disp_autograd_backward(&y, 1, &ones, 0, 0));
  ASSERT_TRUE(GRAD_IS(l, 2, 4));
  ASSERT_STATUS(disp_autograd_backward(&y, 1, &ones, 0, 0), DISP_ERR_INVALID_ARG);
  ASSERT_STARTS_WITH(disp_last_error(), "MulBackward0: Trying to backward through the graph a second time");
  disp_tensor_release(ones), disp_tensor_release(y), disp_tensor_release(l), disp_tensor_release(x);
  return 0;
}

TEST(retain_graph_allows_a_second_pass) {
  disp_tensor *l = leaf((const float[]){3}, 1), *y = NULL;
  ASSERT_OK(disp_aten_mul_Tensor(l, l, &y));
  ASSERT_OK(disp_autograd_backward(&y, 1, NULL, 1, 0));
  ASSERT_OK(disp_autograd_backward(&y, 1, NULL, 0, 0));
  ASSERT_TRUE(GRAD_IS(l, 12));
  disp_tensor_release(y), disp_tensor_release(l);
  return 0;
}

TEST(modified_saved_tensor_is_detected) {
  float six[6] = {1, -2, 3, -4, 5, -6};
  disp_tensor *x = mat(six, 2, 3), *r = NULL, *r2 = NULL, *s = NULL, *same = NULL;
  ASSERT_OK(disp_tensor_set_requires_grad(x, 1));
  ASSERT_OK(disp_aten_relu(x, &r));
  ASSERT_OK(disp_aten_mul_Scalar(r, disp_scalar_int(1), &r2)); /* r2 keeps r out of the in-place check */
  ASSERT_OK(disp_aten_sum(r, -1, &s));
  ASSERT_OK(disp_aten_add__Tensor(r, r2, disp_scalar_int(1), &same)); /* bumps r's version */
  ASSERT_STATUS(disp_autograd_backward(&s, 1, NULL, 0, 0), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(),
                  "one of the variables needed for gradient computation has been modified by an inplace "
                  "operation: [CPUFloatType [2, 3]], which is output 0 of ReluBackward0, is at version 1; "
                  "expected version 0 instead. Hint:");
  disp_tensor_release(same), disp_tensor_release(s), disp_tensor_release(r2), disp_tensor_release(r);
  disp_tensor_release(x);
  return 0;
}

TEST(in_place_on_a_leaf_that_requires_grad_is_refused) {
  disp_tensor *l = leaf((const float[]){1, 2}, 2), *o = vec((const float[]){1, 1}, 2), *r = NULL;
  ASSERT_STATUS(disp_aten_add__Tensor(l, o, disp_scalar_int(1), &r), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "a leaf Variable that requires grad is being used in an in-place operation.");
  ASSERT_TRUE(r == NULL);
  ASSERT_EQ_INT(disp_tensor_version(l), 0);
  disp_tls_state g = disp_grad_mode_push(0); /* allowed without grad mode, as torch.no_grad() */
  ASSERT_OK(disp_aten_add__Tensor(l, o, disp_scalar_int(1), &r));
  disp_tls_restore(g);
  disp_tensor_release(r), disp_tensor_release(o), disp_tensor_release(l);
  return 0;
}

TEST(in_place_on_a_computed_tensor_rebases_its_history) {
  disp_tensor *l = leaf((const float[]){1, 2}, 2), *y = NULL, *same = NULL, *s = NULL;
  ASSERT_OK(disp_aten_mul_Scalar(l, disp_scalar_int(3), &y));
  ASSERT_OK(disp_aten_mul__Tensor(y, l, &same)); /* y = 3l * l */
  ASSERT_TRUE(same == y);
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(y)), "MulBackward0");
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  ASSERT_TRUE(GRAD_IS(l, 6, 12));
  disp_tensor_release(s), disp_tensor_release(same), disp_tensor_release(y), disp_tensor_release(l);
  return 0;
}

TEST(no_grad_records_nothing) {
  disp_tensor *l = leaf((const float[]){1, 2}, 2), *y = NULL;
  disp_tls_state g = disp_grad_mode_push(0);
  ASSERT_OK(disp_aten_mul_Tensor(l, l, &y));
  disp_tls_restore(g);
  ASSERT_FALSE(disp_tensor_requires_grad(y));
  ASSERT_TRUE(disp_tensor_grad_fn(y) == NULL);
  disp_tensor_release(y), disp_tensor_release(l);
  return 0;
}

TEST(requires_grad_is_a_leaf_flag) {
  disp_tensor *l = leaf((const float[]){1, 2}, 2), *y = NULL;
  ASSERT_OK(disp_aten_mul_Tensor(l, l, &y));
  ASSERT_STATUS(disp_tensor_set_requires_grad(y, 0), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "you can only change requires_grad flags of leaf variables. If you want to use "
                                   "a computed variable in a subgraph that doesn't require differentiation use "
                                   "var_no_grad = var.detach().");
  ASSERT_OK(disp_tensor_detach_(y));
  ASSERT_TRUE(disp_tensor_is_leaf(y));
  ASSERT_FALSE(disp_tensor_requires_grad(y));
  disp_tensor_release(y), disp_tensor_release(l);
  return 0;
}

TEST(grad_returns_gradients_without_touching_leaves) {
  disp_tensor *x = leaf((const float[]){1, 2}, 2), *unused = leaf((const float[]){5}, 1), *y = NULL, *s = NULL;
  ASSERT_OK(disp_aten_mul_Tensor(x, x, &y));
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  disp_tensor *in[2] = {x, unused}, *g[2] = {NULL, NULL};
  ASSERT_STATUS(disp_autograd_grad(&s, 1, in, 2, NULL, 1, 0, 0, g), DISP_ERR_INVALID_ARG);
  ASSERT_STARTS_WITH(disp_last_error(), "One of the differentiated Tensors appears to not have been used in the graph.");
  ASSERT_OK(disp_autograd_grad(&s, 1, in, 2, NULL, 1, 0, 1, g));
  ASSERT_TRUE(close_to(g[0], (const float[]){2, 4}, 2));
  ASSERT_TRUE(g[1] == NULL);
  ASSERT_TRUE(disp_tensor_grad(x) == NULL);
  disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(unused), disp_tensor_release(x);
  return 0;
}

/* d/dx x^3 = 3x^2, and again: 6x - through a graph recorded by backward. */
TEST(create_graph_gives_second_derivatives) {
  disp_tensor *x = leaf((const float[]){1, 2}, 2), *x2 = NULL, *x3 = NULL, *s = NULL;
  ASSERT_OK(disp_aten_mul_Tensor(x, x, &x2));
  ASSERT_OK(disp_aten_mul_Tensor(x2, x, &x3));
  ASSERT_OK(disp_aten_sum(x3, -1, &s));
  disp_tensor *g1 = NULL, *gs = NULL, *g2 = NULL;
  ASSERT_OK(disp_autograd_grad(&s, 1, &x, 1, NULL, -1, 1, 0, &g1));
  ASSERT_TRUE(close_to(disp_tensor_retain(g1), (const float[]){3, 12}, 2));
  ASSERT_TRUE(disp_tensor_requires_grad(g1));
  ASSERT_OK(disp_aten_sum(g1, -1, &gs));
  ASSERT_OK(disp_autograd_grad(&gs, 1, &x, 1, NULL, 0, 0, 0, &g2));
  ASSERT_TRUE(close_to(g2, (const float[]){6, 12}, 2));
  disp_tensor_release(gs), disp_tensor_release(g1);
  disp_tensor_release(s), disp_tensor_release(x3), disp_tensor_release(x2), disp_tensor_release(x);
  return 0;
}

static disp_status double_it(disp_tensor *grad, disp_tensor **replacement, void *ctx) {
  (*(int *)ctx)++;
  return disp_aten_mul_Scalar(grad, disp_scalar_int(2), replacement);
}

TEST(hooks_and_retain_grad) {
  disp_tensor *x = leaf((const float[]){1, 2}, 2), *y = NULL, *s = NULL;
  int calls = 0;
  uint64_t id = 0;
  ASSERT_OK(disp_aten_mul_Scalar(x, disp_scalar_int(3), &y));
  ASSERT_OK(disp_tensor_retain_grad(y));
  ASSERT_OK(disp_tensor_register_hook(y, double_it, &calls, NULL, &id)); /* on a computed tensor */
  ASSERT_OK(disp_tensor_register_hook(x, double_it, &calls, NULL, NULL)); /* on a leaf */
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 1, 0));
  ASSERT_EQ_INT(calls, 2);
  ASSERT_TRUE(GRAD_IS(y, 2, 2));   /* retain_grad sees the hooked gradient */
  ASSERT_TRUE(GRAD_IS(x, 12, 12)); /* 2 * 3 * 2 */
  ASSERT_OK(disp_tensor_remove_hook(y, id));
  ASSERT_STATUS(disp_tensor_remove_hook(y, id), DISP_ERR_INVALID_ARG);
  disp_tensor *z = vec((const float[]){1, 2}, 2);
  ASSERT_STATUS(disp_tensor_register_hook(z, double_it, &calls, NULL, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "cannot register a hook on a tensor that doesn't require gradient");
  disp_tensor_release(z), disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(x);
  return 0;
}

TEST(log_softmax_nll_loss_gradient) {
  /* d/dx of nll_loss(log_softmax(x), t) with mean reduction: (softmax(x) - onehot(t)) / N. */
  float v[4] = {0, 0, 0, 0};
  disp_tensor *x = mat(v, 2, 2), *ls = NULL, *loss = NULL, *tw = NULL, *target = NULL;
  int64_t n = 2;
  ASSERT_OK(disp_tensor_empty(&n, 1, DISP_DTYPE_INT64, disp_device_make(DISP_BACKEND_CPU, -1), &target));
  ((int64_t *)disp_tensor_data_ptr(target))[0] = 0, ((int64_t *)disp_tensor_data_ptr(target))[1] = 1;
  ASSERT_OK(disp_tensor_set_requires_grad(x, 1));
  ASSERT_OK(disp_aten__log_softmax(x, 1, false, &ls));
  ASSERT_OK(disp_aten_nll_loss_forward(ls, target, NULL, 1, -100, &loss, &tw));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(loss)), "NllLossBackward0");
  ASSERT_FALSE(disp_tensor_requires_grad(tw)); /* total_weight is not differentiable */
  ASSERT_OK(disp_autograd_backward(&loss, 1, NULL, 0, 0));
  ASSERT_TRUE(GRAD_IS(x, -0.25f, 0.25f, 0.25f, -0.25f));
  /* weight is not differentiable in 1.13: requiring grad on it is refused */
  disp_tensor *w = vec((const float[]){1, 1}, 2), *l2 = NULL, *tw2 = NULL;
  ASSERT_OK(disp_tensor_set_requires_grad(w, 1));
  ASSERT_STATUS(disp_aten_nll_loss_forward(ls, target, w, 1, -100, &l2, &tw2), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "The function 'nll_loss_forward' is not differentiable with respect to "
                                     "argument 'weight'. This input cannot have requires_grad True.");
  ASSERT_TRUE(l2 == NULL);
  disp_tensor_release(w);
  disp_tensor_release(tw), disp_tensor_release(loss), disp_tensor_release(ls), disp_tensor_release(target);
  disp_tensor_release(x);
  return 0;
}


/* ---- the fallback's modes, out= and anomaly mode -------------------------- */

static disp_status twice_cpu(disp_tensor *self, disp_tensor **out) {
  return disp_aten_mul_Scalar(self, disp_scalar_int(2), out);
}

static disp_library *g_def, *g_cpu;

static const disp_op *user_op(void) {
  const disp_op *op = NULL;
  disp_library *def = NULL, *cpu = NULL;
  if (disp_library_new(DISP_LIBRARY_DEF, "agtest", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &def) != DISP_OK ||
      disp_library_def(def, "twice(Tensor self) -> Tensor", NULL) != DISP_OK ||
      disp_library_new(DISP_LIBRARY_IMPL, "agtest", DISP_KEY_CPU, __FILE__, __LINE__, &cpu) != DISP_OK ||
      disp_library_impl(cpu, "twice", disp_kernel_unboxed(DISP_FN(twice_cpu), 0), NULL) != DISP_OK ||
      disp_op_find("agtest::twice", &op) != DISP_OK)
    return NULL;
  g_def = def, g_cpu = cpu;
  return op;
}

static int g_warnings;
static char g_warning[1024];
static void count_warning(const char *message, void *ud) {
  (void)ud;
  g_warnings++;
  snprintf(g_warning, sizeof g_warning, "%s", message);
}

TEST(fallback_warns_or_fails_when_backward_reaches_an_op_without_formula) {
  const disp_op *op = user_op();
  ASSERT_TRUE(op != NULL);
  ASSERT_EQ_INT(disp_autograd_fallback_mode_get(), DISP_AUTOGRAD_FALLBACK_WARN); /* the default */
  disp_tensor *x = leaf((const float[]){1, 2}, 2), *y = NULL, *s = NULL;
  ASSERT_OK(disp_call(op, x, &y));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(y)), "WarnNotImplemented");
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  disp_warning_handler old = disp_set_warning_handler(count_warning, NULL);
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  disp_set_warning_handler(old, NULL);
  ASSERT_EQ_INT(g_warnings, 1);
  ASSERT_STARTS_WITH(g_warning, "agtest::twice: an autograd kernel was not registered to the Autograd key(s)");
  ASSERT_TRUE(disp_tensor_grad(x) == NULL); /* nothing flowed through */
  disp_tensor_release(s), disp_tensor_release(y);

  ASSERT_OK(disp_autograd_set_fallback_mode(DISP_AUTOGRAD_FALLBACK_ERROR));
  ASSERT_OK(disp_call(op, x, &y));
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_STATUS(disp_autograd_backward(&s, 1, NULL, 0, 0), DISP_ERR_KERNEL);
  ASSERT_CONTAINS(disp_last_error(), "the derivative for 'agtest::twice' is not implemented.");
  disp_tensor_release(s), disp_tensor_release(y);

  ASSERT_OK(disp_autograd_set_fallback_mode(DISP_AUTOGRAD_FALLBACK_NOTHING));
  ASSERT_OK(disp_call(op, x, &y));
  ASSERT_FALSE(disp_tensor_requires_grad(y));
  disp_tensor_release(y);
  ASSERT_STATUS(disp_autograd_set_fallback_mode((disp_autograd_fallback_mode)7), DISP_ERR_INVALID_ARG);
  ASSERT_OK(disp_autograd_set_fallback_mode(DISP_AUTOGRAD_FALLBACK_WARN));
  disp_tensor_release(x);
  disp_library_free(g_cpu), disp_library_free(g_def);
  return 0;
}

TEST(out_variants_refuse_inputs_that_require_grad) {
  disp_tensor *x = leaf((const float[]){1, 2}, 2), *o = vec((const float[]){0, 0}, 2), *r = NULL;
  ASSERT_STATUS(disp_aten_add_out(x, x, disp_scalar_int(1), o, &r), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "add(): functions with out=... arguments don't support automatic "
                                     "differentiation, but one of the arguments requires grad.");
  ASSERT_EQ_INT(disp_tensor_refcount(x), 1);
  disp_tensor_release(o), disp_tensor_release(x);
  return 0;
}

TEST(anomaly_mode_names_the_node_that_made_nan) {
  disp_tensor *x = leaf((const float[]){0, 1}, 2), *y = NULL, *s = NULL;
  ASSERT_OK(disp_aten_log(x, &y)); /* d log(x)/dx at 0 is inf; times 0 grad gives nan below */
  disp_tensor *z = NULL;
  ASSERT_OK(disp_aten_mul_Scalar(y, disp_scalar_int(0), &z));
  ASSERT_OK(disp_aten_sum(z, -1, &s));
  disp_autograd_set_detect_anomaly(1);
  ASSERT_STATUS(disp_autograd_backward(&s, 1, NULL, 0, 0), DISP_ERR_KERNEL);
  disp_autograd_set_detect_anomaly(0);
  ASSERT_CONTAINS(disp_last_error(), "Function 'LogBackward0' returned nan values in its 0th output.");
  ASSERT_CONTAINS(disp_last_error(), "aten::log");
  disp_tensor_release(s), disp_tensor_release(z), disp_tensor_release(y), disp_tensor_release(x);
  return 0;
}

TEST(inference_mode_tensors_carry_no_graph) {
  disp_tensor *x = leaf((const float[]){1, 2}, 2), *y = NULL;
  disp_tls_state g = disp_tls_inference_mode_push(1);
  ASSERT_OK(disp_aten_mul_Tensor(x, x, &y));
  disp_tls_restore(g);
  ASSERT_TRUE(disp_tensor_is_inference(y));
  ASSERT_FALSE(disp_tensor_requires_grad(y));
  ASSERT_FALSE(disp_keyset_has(disp_tensor_keyset(y), DISP_KEY_AUTOGRAD_CPU));
  ASSERT_STATUS(disp_tensor_set_requires_grad(y, 1), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.");
  disp_tensor_release(y), disp_tensor_release(x);
  return 0;
}

/* ---- in-place updates through views ----------------------------------------- */

static disp_tensor *first_two(disp_tensor *t) {
  disp_tensor *v = NULL;
  disp_opt_int start = {0, true}, end = {2, true};
  return disp_aten_slice_Tensor(t, 0, start, end, 1, &v) == DISP_OK ? v : NULL;
}

TEST(in_place_on_a_view_rebases_the_base) {
  disp_tensor *a = leaf((const float[]){1, 2, 3, 4}, 4), *b = NULL, *s = NULL, *same = NULL;
  disp_tensor *two = vec((const float[]){2, 2}, 2);
  ASSERT_OK(disp_aten_mul_Scalar(a, disp_scalar_int(1), &b));
  disp_tensor *v = first_two(b);
  ASSERT_TRUE(v != NULL);
  ASSERT_OK(disp_aten_mul__Tensor(v, two, &same));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(b)), "CopySlices");
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(v)), "AsStridedBackward0");
  ASSERT_OK(disp_aten_sum(b, -1, &s));
  /* retain_graph: the second pass below goes through this CopySlices again
   * (v2 = b[:2] records SliceBackward0 on it), as in PyTorch */
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 1, 0));
  ASSERT_TRUE(GRAD_IS(a, 2, 2, 1, 1));
  disp_tensor_release(s), disp_tensor_release(same), disp_tensor_release(v);
  /* the view's own graph reads the new values too: d sum(v)/da = 2 on the slice */
  ASSERT_OK(disp_tensor_set_grad(a, NULL));
  disp_tensor *v2 = first_two(b), *same2 = NULL, *s2 = NULL;
  ASSERT_OK(disp_aten_mul__Tensor(v2, two, &same2));
  ASSERT_OK(disp_aten_sum(v2, -1, &s2));
  ASSERT_OK(disp_autograd_backward(&s2, 1, NULL, 0, 0));
  ASSERT_TRUE(GRAD_IS(a, 4, 4, 0, 0));
  disp_tensor_release(s2), disp_tensor_release(same2), disp_tensor_release(v2);
  disp_tensor_release(two), disp_tensor_release(b), disp_tensor_release(a);
  return 0;
}

TEST(in_place_view_errors) {
  disp_tensor *a = leaf((const float[]){1, 2, 3, 4}, 4), *b = NULL, *same = NULL;
  disp_tensor *two = vec((const float[]){2, 2}, 2);
  disp_tensor *va = first_two(a);
  ASSERT_STATUS(disp_aten_mul__Tensor(va, two, &same), DISP_ERR_INVALID_ARG);
  /* the view records SliceBackward0, so the boxed recording kernel refuses
   * it and the dispatcher names the operator, as for a leaf */
  ASSERT_CONTAINS(disp_last_error(), "a view of a leaf Variable that requires grad is being used in an in-place operation.");
  ASSERT_OK(disp_aten_mul_Scalar(a, disp_scalar_int(1), &b));
  disp_tls_state g = disp_grad_mode_push(0);
  disp_tensor *vb = first_two(b);
  disp_tls_restore(g);
  ASSERT_TRUE(vb != NULL);
  ASSERT_STATUS(disp_aten_mul__Tensor(vb, two, &same), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "A view was created in no_grad mode and is being modified inplace with grad "
                                     "mode enabled.");
  g = disp_grad_mode_push(0); /* both in no-grad mode: allowed, not tracked */
  ASSERT_OK(disp_aten_mul__Tensor(vb, two, &same));
  disp_tls_restore(g);
  disp_tensor_release(same), disp_tensor_release(vb), disp_tensor_release(va);
  disp_tensor_release(two), disp_tensor_release(b), disp_tensor_release(a);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(mul_sum_backward_gives_two_x),
    TEST_ENTRY(gradients_accumulate_across_passes),
    TEST_ENTRY(addmm_with_broadcast_bias),
    TEST_ENTRY(backward_errors_use_pytorch_words),
    TEST_ENTRY(retain_graph_allows_a_second_pass),
    TEST_ENTRY(modified_saved_tensor_is_detected),
    TEST_ENTRY(in_place_on_a_leaf_that_requires_grad_is_refused),
    TEST_ENTRY(in_place_on_a_computed_tensor_rebases_its_history),
    TEST_ENTRY(no_grad_records_nothing),
    TEST_ENTRY(requires_grad_is_a_leaf_flag),
    TEST_ENTRY(grad_returns_gradients_without_touching_leaves),
    TEST_ENTRY(create_graph_gives_second_derivatives),
    TEST_ENTRY(hooks_and_retain_grad),
    TEST_ENTRY(log_softmax_nll_loss_gradient),
    TEST_ENTRY(fallback_warns_or_fails_when_backward_reaches_an_op_without_formula),
    TEST_ENTRY(out_variants_refuse_inputs_that_require_grad),
    TEST_ENTRY(anomaly_mode_names_the_node_that_made_nan),
    TEST_ENTRY(inference_mode_tensors_carry_no_graph),
    TEST_ENTRY(in_place_on_a_view_rebases_the_base),
    TEST_ENTRY(in_place_view_errors),
    TEST_END,
};

TEST_MAIN()
