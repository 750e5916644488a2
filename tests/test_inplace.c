/*
 * test_inplace.c - the ADInplaceOrView layer of the built-in operators:
 * in-place and out= ops bump the version counter of what they write
 * (shared by views), functional ops and views do not, and an inference
 * tensor cannot be written outside inference mode. Version numbers are
 * 1.13's, observed with libtorch.
 */
#include <disp.h>

#include "test.h"

static disp_tensor *ones(int64_t n) {
  int64_t sizes[1] = {n};
  disp_int_list shape = {sizes, 1};
  disp_opt_device none = {0};
  disp_opt_bool no_pin = {0};
  disp_tensor *t = NULL;
  if (disp_aten_ones(shape, DISP_DTYPE_FLOAT32, -1, none, no_pin, &t) != DISP_OK) return NULL;
  return t;
}

TEST(inplace_bumps_version_functional_does_not) {
  disp_tensor *a = ones(3), *b = ones(3), *r = NULL, *v = NULL;
  ASSERT_TRUE(a && b);
  uint64_t v0 = disp_tensor_version(a);
  ASSERT_OK(disp_aten_add_Tensor(a, b, disp_scalar_int(1), &r));
  ASSERT_EQ_INT(disp_tensor_version(a), v0);
  disp_tensor_release(r);
  /* A view shares the counter: writing through the base shows on the view. */
  ASSERT_OK(disp_aten_unsqueeze(a, 0, &v));
  ASSERT_EQ_INT(disp_tensor_version(v), v0);
  ASSERT_OK(disp_aten_add__Tensor(a, b, disp_scalar_int(2), &r));
  ASSERT_TRUE(r == a);
  disp_tensor_release(r);
  ASSERT_EQ_INT(disp_tensor_version(a), v0 + 1);
  ASSERT_EQ_INT(disp_tensor_version(v), v0 + 1);
  char *text = NULL;
  ASSERT_OK(disp_tensor_format(a, &text));
  ASSERT_EQ_STR(text, "tensor([3., 3., 3.])");
  free(text);
  const float *p = disp_tensor_data_ptr(a);
  ASSERT_TRUE(p[0] == 3.0f && p[2] == 3.0f);
  /* out= bumps the out tensor. */
  uint64_t vb = disp_tensor_version(b);
  ASSERT_OK(disp_aten_add_out(a, a, disp_scalar_int(1), b, &r));
  disp_tensor_release(r);
  ASSERT_EQ_INT(disp_tensor_version(b), vb + 1);
  disp_tensor_release(v);
  disp_tensor_release(a);
  disp_tensor_release(b);
  return 0;
}

TEST(inference_tensor_inplace_outside_inference_mode_fails) {
  disp_tls_state saved = disp_tls_inference_mode_push(1);
  disp_tensor *a = ones(2), *r = NULL;
  disp_tls_restore(saved);
  ASSERT_TRUE(a != NULL);
  ASSERT_TRUE(disp_tensor_is_inference(a));
  ASSERT_STATUS(disp_aten_zero_(a, &r), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "Inplace update to inference tensor outside InferenceMode");
  ASSERT_TRUE(r == NULL);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  /* Inside inference mode it is allowed. */
  saved = disp_tls_inference_mode_push(1);
  ASSERT_OK(disp_aten_zero_(a, &r));
  disp_tls_restore(saved);
  disp_tensor_release(r);
  disp_tensor_release(a);
  return 0;
}

/* ---- version counters as 1.13's ------------------------------------------------ */

/* Observed with libtorch 1.13: every fresh result of these operators is at
 * version 0, whether its inputs require grad or not (clone, zeros_like and
 * friends run their in-place fill below ADInplaceOrView, under the guard of
 * 1.13's generated autograd kernel), and so are the factories as torch.zeros
 * and friends give them. */
static disp_opt_device nodev = {0};
static disp_opt_bool nopin = {0};

static disp_tensor *rand2(int64_t r, int64_t c) {
  int64_t sizes[2] = {r, c};
  disp_tensor *t = NULL;
  disp_aten_rand((disp_int_list){sizes, 2}, DISP_DTYPE_FLOAT64, -1, nodev, nopin, &t);
  return t;
}

typedef disp_status (*fresh_fn)(disp_tensor *x, disp_tensor *y, disp_tensor **out);
static disp_status f_clone(disp_tensor *x, disp_tensor *y, disp_tensor **o) { (void)y; return disp_aten_clone(x, -1, o); }
static disp_status f_zeros_like(disp_tensor *x, disp_tensor *y, disp_tensor **o) {
  (void)y;
  return disp_aten_zeros_like(x, -1, -1, nodev, nopin, -1, o);
}
static disp_status f_ones_like(disp_tensor *x, disp_tensor *y, disp_tensor **o) {
  (void)y;
  return disp_aten_ones_like(x, -1, -1, nodev, nopin, -1, o);
}
static disp_status f_full_like(disp_tensor *x, disp_tensor *y, disp_tensor **o) {
  (void)y;
  return disp_aten_full_like(x, disp_scalar_double(2), -1, -1, nodev, nopin, -1, o);
}
static disp_status f_to_copy(disp_tensor *x, disp_tensor *y, disp_tensor **o) {
  (void)y;
  return disp_aten__to_copy(x, DISP_DTYPE_FLOAT32, -1, nodev, nopin, false, -1, o);
}
static disp_status f_contiguous(disp_tensor *x, disp_tensor *y, disp_tensor **o) {
  disp_tensor *t = NULL;
  (void)y;
  disp_status st = disp_aten_t(x, &t);
  if (st == DISP_OK) st = disp_aten_contiguous(t, DISP_MEMORY_FORMAT_CONTIGUOUS, o);
  disp_tensor_release(t);
  return st;
}
static disp_status f_add(disp_tensor *x, disp_tensor *y, disp_tensor **o) {
  return disp_aten_add_Tensor(x, y, disp_scalar_int(1), o);
}
static disp_status f_mul(disp_tensor *x, disp_tensor *y, disp_tensor **o) { return disp_aten_mul_Tensor(x, y, o); }
static disp_status f_relu(disp_tensor *x, disp_tensor *y, disp_tensor **o) { (void)y; return disp_aten_relu(x, o); }
static disp_status f_sum(disp_tensor *x, disp_tensor *y, disp_tensor **o) { (void)y; return disp_aten_sum(x, -1, o); }
static disp_status f_mean(disp_tensor *x, disp_tensor *y, disp_tensor **o) { (void)y; return disp_aten_mean(x, -1, o); }
static disp_status f_abs(disp_tensor *x, disp_tensor *y, disp_tensor **o) { (void)y; return disp_aten_abs(x, o); }
static disp_status f_stack(disp_tensor *x, disp_tensor *y, disp_tensor **o) {
  disp_tensor *l[2] = {x, y};
  return disp_aten_stack((disp_tensor_list){l, 2}, 0, o);
}
static disp_status f_cat(disp_tensor *x, disp_tensor *y, disp_tensor **o) {
  disp_tensor *l[2] = {x, y};
  return disp_aten_cat((disp_tensor_list){l, 2}, 0, o);
}
static disp_status f_mse(disp_tensor *x, disp_tensor *y, disp_tensor **o) { return disp_aten_mse_loss(x, y, 1, o); }
static disp_status f_softmax(disp_tensor *x, disp_tensor *y, disp_tensor **o) {
  (void)y;
  return disp_aten_softmax_int(x, 1, -1, o);
}
static disp_status f_dropout(disp_tensor *x, disp_tensor *y, disp_tensor **o) {
  (void)y;
  return disp_aten_dropout(x, 0.5, true, o);
}
static disp_status f_linear(disp_tensor *x, disp_tensor *y, disp_tensor **o) { return disp_aten_linear(x, y, NULL, o); }

TEST(fresh_results_start_at_version_0) {
  static const struct {
    const char *name;
    fresh_fn fn;
  } ops[] = {{"clone", f_clone},   {"zeros_like", f_zeros_like}, {"ones_like", f_ones_like},
             {"full_like", f_full_like}, {"_to_copy", f_to_copy}, {"contiguous", f_contiguous},
             {"add", f_add},       {"mul", f_mul},         {"relu", f_relu},
             {"sum", f_sum},       {"mean", f_mean},       {"abs", f_abs},
             {"stack", f_stack},   {"cat", f_cat},         {"mse_loss", f_mse},
             {"softmax", f_softmax}, {"dropout", f_dropout}, {"linear", f_linear}};
  for (int rg = 0; rg < 2; rg++) {
    disp_tensor *x = rand2(3, 3), *y = rand2(3, 3);
    ASSERT_TRUE(x && y);
    ASSERT_OK(disp_tensor_set_requires_grad(x, rg));
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
      disp_tensor *r = NULL;
      ASSERT_OK(ops[i].fn(x, y, &r));
      if (disp_tensor_version(r) != 0) fprintf(stderr, "%s (requires_grad %d)\n", ops[i].name, rg);
      ASSERT_EQ_INT(disp_tensor_version(r), 0);
      disp_tensor_release(r);
    }
    ASSERT_EQ_INT(disp_tensor_version(x), 0);
    disp_tensor_release(x), disp_tensor_release(y);
  }
  int64_t n = 3;
  disp_int_list shape = {&n, 1};
  disp_tensor *f[5] = {0};
  ASSERT_OK(disp_aten_zeros(shape, -1, -1, nodev, nopin, &f[0]));
  ASSERT_OK(disp_aten_ones(shape, -1, -1, nodev, nopin, &f[1]));
  ASSERT_OK(disp_aten_full(shape, disp_scalar_double(2), -1, -1, nodev, nopin, &f[2]));
  ASSERT_OK(disp_aten_scalar_tensor(disp_scalar_int(2), -1, -1, nodev, nopin, &f[3]));
  ASSERT_OK(disp_aten_arange(disp_scalar_int(3), -1, -1, nodev, nopin, &f[4]));
  for (int i = 0; i < 5; i++) ASSERT_EQ_INT(disp_tensor_version(f[i]), 0);
  for (int i = 0; i < 5; i++) disp_tensor_release(f[i]);
  return 0;
}

/* Runs an in-place call that hands back its argument in r. */
#define INPLACE(call)          \
  do {                         \
    ASSERT_OK(call);           \
    disp_tensor_release(r);    \
    r = NULL;                  \
  } while (0)

/* In-place operators bump the counter by one, shared with every view;
 * resize_ does not; set_ bumps self only; detach shares the counter. */
TEST(inplace_ops_bump_by_one_views_and_detach_share) {
  disp_tensor *a = rand2(2, 3), *b = rand2(2, 3), *v = NULL, *d = NULL, *r = NULL;
  ASSERT_TRUE(a && b);
  ASSERT_OK(disp_aten_t(a, &v));
  ASSERT_OK(disp_aten_detach(a, &d));
  INPLACE(disp_aten_add__Tensor(a, b, disp_scalar_int(1), &r));
  INPLACE(disp_aten_mul__Tensor(a, b, &r));
  INPLACE(disp_aten_relu_(v, &r));
  INPLACE(disp_aten_zero_(d, &r));
  INPLACE(disp_aten_fill__Scalar(a, disp_scalar_int(3), &r));
  INPLACE(disp_aten_copy_(a, b, false, &r));
  INPLACE(disp_aten_add_out(b, b, disp_scalar_int(1), a, &r));
  ASSERT_EQ_INT(disp_tensor_version(a), 7);
  ASSERT_EQ_INT(disp_tensor_version(v), 7);
  ASSERT_EQ_INT(disp_tensor_version(d), 7);
  ASSERT_EQ_INT(disp_tensor_version(b), 0);
  int64_t sz[2] = {2, 3};
  INPLACE(disp_aten_resize_(a, (disp_int_list){sz, 2}, -1, &r));
  ASSERT_EQ_INT(disp_tensor_version(a), 7);
  INPLACE(disp_aten_set__source_Tensor(b, a, &r));
  ASSERT_EQ_INT(disp_tensor_version(b), 1);
  ASSERT_EQ_INT(disp_tensor_version(a), 7);
  disp_tensor_release(d), disp_tensor_release(v), disp_tensor_release(b), disp_tensor_release(a);
  return 0;
}

TEST_LIST = {TEST_ENTRY(inplace_bumps_version_functional_does_not),
             TEST_ENTRY(inference_tensor_inplace_outside_inference_mode_fails),
             TEST_ENTRY(fresh_results_start_at_version_0), TEST_ENTRY(inplace_ops_bump_by_one_views_and_detach_share),
             TEST_END};

TEST_MAIN()
