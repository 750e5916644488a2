/*
 * test_function.c - custom autograd functions from C (disp/function.h), the
 * torch.autograd.Function features one by one, and seed 000/002's
 * MyAddFunction pattern: a function as an operator's Autograd kernel.
 */
#include <math.h>

#include "test.h"
#include "disp/aten.h"

static disp_tensor *leaf(const float *v, int64_t n, int rg) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK) return NULL;
  memcpy(disp_tensor_data_ptr(t), v, (size_t)n * sizeof *v);
  if (rg && disp_tensor_set_requires_grad(t, 1) != DISP_OK) return NULL;
  return t;
}

static int values_are(const disp_tensor *t, const float *want, int64_t n) {
  if (!t || disp_tensor_numel(t) != n || !disp_tensor_is_contiguous(t)) return 0;
  const float *d = disp_tensor_data_ptr(t);
  for (int64_t i = 0; i < n; i++)
    if (fabsf(d[i] - want[i]) > 1e-6f) return 0;
  return 1;
}
#define VALUES(t, ...) values_are(t, (const float[]){__VA_ARGS__}, \
                                  (int64_t)(sizeof((const float[]){__VA_ARGS__}) / sizeof(float)))

/* ---- MyMul: save_for_backward, needs_input_grad, saved data ---------------- */

static int g_backward_calls, g_needs[2];

static disp_status mymul_forward(disp_function_ctx *ctx, disp_tensor *const *in, size_t n, disp_tensor **out,
                                 size_t nout) {
  (void)n, (void)nout;
  if (disp_grad_mode_enabled()) return disp_set_error(DISP_ERR_KERNEL, "forward ran in grad mode");
  disp_status st = disp_ctx_save_for_backward(ctx, in, 2);
  int *scale = malloc(sizeof *scale);
  if (!scale) return DISP_ERR_NO_MEMORY;
  *scale = 1;
  disp_ctx_set_data(ctx, scale, free);
  return st == DISP_OK ? disp_aten_mul_Tensor(in[0], in[1], &out[0]) : st;
}

static disp_status mymul_backward(disp_function_ctx *ctx, disp_tensor *const *g, size_t nout, disp_tensor **gin,
                                  size_t n) {
  (void)nout, (void)n;
  disp_tensor *const *saved;
  size_t ns;
  g_backward_calls++;
  g_needs[0] = disp_ctx_needs_input_grad(ctx, 0), g_needs[1] = disp_ctx_needs_input_grad(ctx, 1);
  disp_status st = disp_ctx_saved_tensors(ctx, &saved, &ns);
  if (st != DISP_OK) return st;
  if (ns != 2 || *(int *)disp_ctx_data(ctx) != 1) return disp_set_error(DISP_ERR_KERNEL, "bad saved state");
  if (g_needs[0]) st = disp_aten_mul_Tensor(g[0], saved[1], &gin[0]);
  if (st == DISP_OK && g_needs[1]) st = disp_aten_mul_Tensor(g[0], saved[0], &gin[1]);
  return st;
}

static const disp_function_def mymul = {"MyMulBackward", mymul_forward, mymul_backward};

TEST(custom_function_records_its_node_and_runs_its_backward) {
  disp_tensor *a = leaf((const float[]){1, 2}, 2, 1), *b = leaf((const float[]){3, 4}, 2, 0);
  disp_tensor *y = NULL, *s = NULL;
  ASSERT_OK(disp_function_apply(&mymul, (disp_tensor *[]){a, b}, 2, &y, 1));
  ASSERT_TRUE(VALUES(y, 3, 8));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(y)), "MyMulBackward");
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  g_backward_calls = 0;
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  ASSERT_EQ_INT(g_backward_calls, 1);
  ASSERT_EQ_INT(g_needs[0], 1);
  ASSERT_EQ_INT(g_needs[1], 0); /* b does not require grad */
  ASSERT_TRUE(VALUES(disp_tensor_grad(a), 3, 4));
  ASSERT_TRUE(disp_tensor_grad(b) == NULL);
  disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(b), disp_tensor_release(a);
  return 0;
}

TEST(custom_function_without_grad_records_nothing) {
  disp_tensor *a = leaf((const float[]){1, 2}, 2, 0), *y = NULL;
  ASSERT_OK(disp_function_apply(&mymul, (disp_tensor *[]){a, a}, 2, &y, 1));
  ASSERT_TRUE(disp_tensor_grad_fn(y) == NULL);
  ASSERT_FALSE(disp_tensor_requires_grad(y));
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1); /* nothing kept */
  disp_tensor_release(y), disp_tensor_release(a);
  return 0;
}

TEST(saved_tensors_are_version_checked_and_freed_by_backward) {
  disp_tensor *a = leaf((const float[]){1, 2}, 2, 1), *b = leaf((const float[]){3, 4}, 2, 0), *y = NULL, *s = NULL;
  ASSERT_OK(disp_function_apply(&mymul, (disp_tensor *[]){a, b}, 2, &y, 1));
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  disp_tensor *r = NULL;
  ASSERT_OK(disp_aten_mul__Tensor(b, b, &r)); /* b changes after it was saved */
  ASSERT_STATUS(disp_autograd_backward(&s, 1, NULL, 1, 0), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "one of the variables needed for gradient computation has been modified by "
                                     "an inplace operation: [CPUFloatType [2]] is at version 1; expected version 0");
  disp_tensor_release(r), disp_tensor_release(s), disp_tensor_release(y);
  /* and a second pass through freed tensors */
  ASSERT_OK(disp_function_apply(&mymul, (disp_tensor *[]){a, a}, 2, &y, 1));
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  ASSERT_STATUS(disp_autograd_backward(&s, 1, NULL, 0, 0), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "Trying to backward through the graph a second time");
  disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(b), disp_tensor_release(a);
  return 0;
}

/* ---- in place, non-differentiable outputs, materialize ------------------------ */

static disp_status double_inplace_forward(disp_function_ctx *ctx, disp_tensor *const *in, size_t n,
                                          disp_tensor **out, size_t nout) {
  (void)n, (void)nout;
  disp_tensor *same = NULL;
  disp_status st = disp_aten_mul__Tensor(in[0], in[1], &same); /* in[1] holds 2s */
  disp_tensor_release(same);
  if (st == DISP_OK) st = disp_ctx_mark_dirty(ctx, in, 1);
  out[0] = disp_tensor_retain(in[0]);
  return st;
}

static disp_status double_backward(disp_function_ctx *ctx, disp_tensor *const *g, size_t nout, disp_tensor **gin,
                                   size_t n) {
  (void)ctx, (void)nout, (void)n;
  return disp_aten_mul_Scalar(g[0], disp_scalar_int(2), &gin[0]);
}

static const disp_function_def double_inplace = {"DoubleInplaceBackward", double_inplace_forward, double_backward};

TEST(mark_dirty_moves_the_history_of_an_input_modified_in_place) {
  disp_tensor *a = leaf((const float[]){1, 2}, 2, 1), *two = leaf((const float[]){2, 2}, 2, 0);
  disp_tensor *x = NULL, *y = NULL, *s = NULL;
  ASSERT_OK(disp_aten_mul_Scalar(a, disp_scalar_int(1), &x)); /* a computed tensor */
  ASSERT_OK(disp_function_apply(&double_inplace, (disp_tensor *[]){x, two}, 2, &y, 1));
  ASSERT_TRUE(y == x);
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(x)), "DoubleInplaceBackward");
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  ASSERT_TRUE(VALUES(disp_tensor_grad(a), 2, 2));
  disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(x);
  /* a leaf that requires grad may not be marked dirty */
  ASSERT_STATUS(disp_function_apply(&double_inplace, (disp_tensor *[]){a, two}, 2, &y, 1), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "a leaf Variable that requires grad has been used in an in-place operation.");
  ASSERT_TRUE(y == NULL);
  disp_tensor_release(two), disp_tensor_release(a);
  return 0;
}

static int g_saw_null;

static disp_status split_forward(disp_function_ctx *ctx, disp_tensor *const *in, size_t n, disp_tensor **out,
                                 size_t nout) {
  (void)n, (void)nout;
  disp_status st = disp_aten_mul_Scalar(in[0], disp_scalar_int(3), &out[0]);
  if (st == DISP_OK) st = disp_aten_mul_Scalar(in[0], disp_scalar_int(5), &out[1]);
  if (st == DISP_OK) st = disp_aten_mul_Scalar(in[0], disp_scalar_int(7), &out[2]);
  if (st == DISP_OK) st = disp_ctx_mark_non_differentiable(ctx, &out[2], 1);
  disp_ctx_set_materialize_grads(ctx, 0);
  return st;
}

static disp_status split_backward(disp_function_ctx *ctx, disp_tensor *const *g, size_t nout, disp_tensor **gin,
                                  size_t n) {
  (void)ctx, (void)nout, (void)n;
  g_saw_null = g[1] == NULL; /* not materialized: output 1 got no gradient */
  return disp_aten_mul_Scalar(g[0], disp_scalar_int(3), &gin[0]);
}

static const disp_function_def split = {"SplitBackward", split_forward, split_backward};

TEST(non_differentiable_outputs_and_unmaterialized_grads) {
  disp_tensor *a = leaf((const float[]){1, 2}, 2, 1), *o[3] = {NULL, NULL, NULL}, *s = NULL;
  ASSERT_OK(disp_function_apply(&split, &a, 1, o, 3));
  ASSERT_TRUE(disp_tensor_requires_grad(o[0]) && disp_tensor_requires_grad(o[1]));
  ASSERT_FALSE(disp_tensor_requires_grad(o[2]));
  ASSERT_EQ_INT(disp_tensor_output_nr(o[1]), 1);
  ASSERT_OK(disp_aten_sum(o[0], -1, &s));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  ASSERT_EQ_INT(g_saw_null, 1);
  ASSERT_TRUE(VALUES(disp_tensor_grad(a), 3, 3));
  disp_tensor_release(s);
  for (int i = 0; i < 3; i++) disp_tensor_release(o[i]);
  disp_tensor_release(a);
  return 0;
}

static disp_status identity_forward(disp_function_ctx *ctx, disp_tensor *const *in, size_t n, disp_tensor **out,
                                    size_t nout) {
  (void)ctx, (void)n, (void)nout;
  out[0] = disp_tensor_retain(in[0]);
  return DISP_OK;
}

static const disp_function_def identity = {"IdentityBackward", identity_forward, double_backward};

TEST(an_input_returned_as_is_comes_back_as_an_alias) {
  disp_tensor *a = leaf((const float[]){1, 2}, 2, 1), *y = NULL, *s = NULL;
  ASSERT_OK(disp_function_apply(&identity, &a, 1, &y, 1));
  ASSERT_TRUE(y != a);
  ASSERT_TRUE(disp_tensor_is_leaf(a));
  ASSERT_TRUE(disp_tensor_data_ptr(y) == disp_tensor_data_ptr(a));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(y)), "IdentityBackward");
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  ASSERT_TRUE(VALUES(disp_tensor_grad(a), 2, 2));
  disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(a);
  return 0;
}

TEST(ctx_functions_outside_their_callback_are_refused) {
  disp_tensor *a = leaf((const float[]){1}, 1, 0);
  static const disp_function_def broken = {"Broken", NULL, NULL};
  disp_tensor *y = NULL;
  ASSERT_STATUS(disp_function_apply(&broken, &a, 1, &y, 1), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(y == NULL);
  ASSERT_EQ_INT(disp_ctx_needs_input_grad(NULL, 0), 0);
  disp_tensor_release(a);
  return 0;
}

/* ---- seed 002: MyAddFunction as myops::myadd's Autograd kernel ---------------- */

static const disp_op *g_myadd;

static disp_status myadd_cpu(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  return disp_aten_add_Tensor(self, other, disp_scalar_int(1), out);
}

/* The forward redispatches below autograd: the CPU kernel does the work. */
static disp_status myadd_fn_forward(disp_function_ctx *ctx, disp_tensor *const *in, size_t n, disp_tensor **out,
                                    size_t nout) {
  (void)ctx, (void)n, (void)nout;
  disp_tls_state g = disp_tls_below_autograd_push();
  disp_status st = disp_call(g_myadd, in[0], in[1], &out[0]);
  disp_tls_restore(g);
  return st;
}

static disp_status myadd_fn_backward(disp_function_ctx *ctx, disp_tensor *const *g, size_t nout, disp_tensor **gin,
                                     size_t n) {
  (void)nout, (void)n;
  if (disp_ctx_needs_input_grad(ctx, 0)) gin[0] = disp_tensor_retain(g[0]);
  if (disp_ctx_needs_input_grad(ctx, 1)) gin[1] = disp_tensor_retain(g[0]);
  return DISP_OK;
}

static const disp_function_def myadd_function = {"MyAddFunctionBackward", myadd_fn_forward, myadd_fn_backward};

static disp_status myadd_autograd(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  return disp_function_apply(&myadd_function, (disp_tensor *[]){self, other}, 2, out, 1);
}

TEST(a_custom_function_as_an_operators_autograd_kernel) {
  disp_library *def = NULL, *cpu = NULL, *ag = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "fnops", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  ASSERT_OK(disp_library_def(def, "myadd(Tensor self, Tensor other) -> Tensor", NULL));
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "fnops", DISP_KEY_CPU, __FILE__, __LINE__, &cpu));
  ASSERT_OK(disp_library_impl(cpu, "myadd", disp_kernel_unboxed(DISP_FN(myadd_cpu), 0), NULL));
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "fnops", DISP_KEY_AUTOGRAD, __FILE__, __LINE__, &ag));
  ASSERT_OK(disp_library_impl(ag, "myadd", disp_kernel_unboxed(DISP_FN(myadd_autograd), 0), NULL));
  ASSERT_OK(disp_op_find("fnops::myadd", &g_myadd));
  disp_tensor *a = leaf((const float[]){1, 2}, 2, 1), *b = leaf((const float[]){3, 4}, 2, 1), *y = NULL, *s = NULL;
  ASSERT_OK(disp_call(g_myadd, a, b, &y));
  ASSERT_TRUE(VALUES(y, 4, 6));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(y)), "MyAddFunctionBackward");
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  ASSERT_TRUE(VALUES(disp_tensor_grad(a), 1, 1));
  ASSERT_TRUE(VALUES(disp_tensor_grad(b), 1, 1));
  disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(b), disp_tensor_release(a);
  disp_library_free(ag), disp_library_free(cpu), disp_library_free(def);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(custom_function_records_its_node_and_runs_its_backward),
    TEST_ENTRY(custom_function_without_grad_records_nothing),
    TEST_ENTRY(saved_tensors_are_version_checked_and_freed_by_backward),
    TEST_ENTRY(mark_dirty_moves_the_history_of_an_input_modified_in_place),
    TEST_ENTRY(non_differentiable_outputs_and_unmaterialized_grads),
    TEST_ENTRY(an_input_returned_as_is_comes_back_as_an_alias),
    TEST_ENTRY(ctx_functions_outside_their_callback_are_refused),
    TEST_ENTRY(a_custom_function_as_an_operators_autograd_kernel),
    TEST_END,
};

TEST_MAIN()
