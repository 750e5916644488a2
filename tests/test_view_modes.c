/*
 * test_view_modes.c - views made in grad, no-grad and inference mode, and
 * in-place updates of them and of inference tensors, as 1.13 treats them.
 *
 * Every expectation (which calls fail, the messages word for word, the
 * gradients) was observed with libtorch 1.13 running the same steps.
 */
#include "test.h"
#include "disp/aten.h"

static disp_opt_device nodev = {0};
static disp_opt_bool nopin = {0};

static disp_tensor *ones(int64_t n, int requires_grad) {
  disp_tensor *t = NULL;
  if (disp_aten_ones((disp_int_list){&n, 1}, DISP_DTYPE_FLOAT32, -1, nodev, nopin, &t) != DISP_OK) return NULL;
  if (requires_grad && disp_tensor_set_requires_grad(t, 1) != DISP_OK) disp_tensor_release(t), t = NULL;
  return t;
}

/* t[0:2] */
static disp_tensor *head(disp_tensor *t) {
  disp_tensor *v = NULL;
  return disp_aten_slice_Tensor(t, 0, (disp_opt_int){0, true}, (disp_opt_int){2, true}, 1, &v) == DISP_OK ? v : NULL;
}

/* t[0:2] made in inference mode / in no-grad mode. */
static disp_tensor *head_in(disp_tensor *t, int inference) {
  disp_tls_state g = inference ? disp_tls_inference_mode_push(1) : disp_grad_mode_push(0);
  disp_tensor *v = head(t);
  disp_tls_restore(g);
  return v;
}

static disp_status add_one(disp_tensor *t) {
  disp_tensor *r = NULL;
  disp_status st = disp_aten_add__Tensor(t, t, disp_scalar_int(0), &r); /* t += 0 * t: a write */
  disp_tensor_release(r);
  return st;
}

static disp_status mul_by(disp_tensor *t, disp_tensor *w) {
  disp_tensor *r = NULL;
  disp_status st = disp_aten_mul__Tensor(t, w, &r);
  disp_tensor_release(r);
  return st;
}

#define GIVEN_THAT \
  " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the "
#define EITHER_BOTH \
  " block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked)."
#define INFERENCE_VIEW \
  "A view was created in inference mode and is being modified inplace in normal mode." GIVEN_THAT "inference_mode" EITHER_BOTH
#define NO_GRAD_VIEW \
  "A view was created in no_grad mode and is being modified inplace with grad mode enabled." GIVEN_THAT "no_grad" EITHER_BOTH
#define INFERENCE_TENSOR                                                                                  \
  "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a " \
  "normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details."

/* The dispatcher prefixes the operator's name (README difference 11). */
#define ASSERT_REFUSED(call, msg)                         \
  do {                                                    \
    ASSERT_STATUS(call, DISP_ERR_INVALID_ARG);            \
    ASSERT_CONTAINS(disp_last_error(), msg);              \
  } while (0)

TEST(inference_mode_view_of_a_plain_tensor) {
  disp_tensor *x = ones(4, 0), *w = ones(2, 1), *v = x ? head_in(x, 1) : NULL;
  ASSERT_TRUE(v && w);
  ASSERT_FALSE(disp_tensor_is_inference(v));
  ASSERT_OK(add_one(v)); /* nothing requires grad: nothing to refuse */
  ASSERT_REFUSED(mul_by(v, w), INFERENCE_VIEW);
  ASSERT_TRUE(disp_tensor_grad_fn(x) == NULL);
  disp_tensor_release(v), disp_tensor_release(w), disp_tensor_release(x);
  return 0;
}

TEST(inference_mode_view_of_a_tensor_that_requires_grad) {
  disp_tensor *x = ones(4, 1), *v = x ? head_in(x, 1) : NULL;
  ASSERT_TRUE(v != NULL);
  ASSERT_REFUSED(add_one(v), INFERENCE_VIEW); /* before the leaf-view check, as 1.13 */
  disp_tls_state g = disp_grad_mode_push(0);
  ASSERT_OK(add_one(v));
  disp_tls_restore(g);
  g = disp_tls_inference_mode_push(1);
  ASSERT_OK(add_one(v));
  disp_tls_restore(g);
  /* a non-leaf base, a view of that view, an inference view of a grad-mode view */
  disp_tensor *y = NULL;
  ASSERT_OK(disp_aten_mul_Scalar(x, disp_scalar_int(2), &y));
  disp_tensor *vy = head_in(y, 1), *vv = vy ? head_in(vy, 1) : NULL, *gv = head(y), *iv = gv ? head_in(gv, 1) : NULL;
  ASSERT_TRUE(vy && vv && gv && iv);
  ASSERT_REFUSED(add_one(vy), INFERENCE_VIEW);
  ASSERT_REFUSED(add_one(vv), INFERENCE_VIEW);
  ASSERT_REFUSED(add_one(iv), INFERENCE_VIEW);
  disp_tensor_release(iv), disp_tensor_release(gv), disp_tensor_release(vv), disp_tensor_release(vy);
  disp_tensor_release(y), disp_tensor_release(v), disp_tensor_release(x);
  return 0;
}

TEST(no_grad_view_of_a_plain_tensor) {
  disp_tensor *x = ones(4, 0), *w = ones(2, 1), *v = x ? head_in(x, 0) : NULL;
  ASSERT_TRUE(v && w);
  ASSERT_OK(add_one(v));
  ASSERT_REFUSED(mul_by(v, w), NO_GRAD_VIEW);
  disp_tensor_release(v), disp_tensor_release(w), disp_tensor_release(x);
  return 0;
}

/* A grad-mode view of a tensor outside any graph, written with an input that
 * requires grad: the base joins the graph through CopySlices. */
TEST(grad_mode_view_of_a_plain_tensor_rebases_it) {
  disp_tensor *x = ones(4, 0), *w = ones(2, 1), *v = x ? head(x) : NULL, *s = NULL;
  ASSERT_TRUE(v && w);
  ASSERT_OK(mul_by(v, w));
  ASSERT_TRUE(disp_tensor_requires_grad(x));
  ASSERT_TRUE(disp_tensor_grad_fn(x) != NULL);
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(v)), "AsStridedBackward0");
  ASSERT_OK(disp_aten_sum(x, -1, &s));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  const float *g = disp_tensor_data_ptr(disp_tensor_grad(w));
  ASSERT_TRUE(g[0] == 1 && g[1] == 1);
  disp_tensor_release(s), disp_tensor_release(v), disp_tensor_release(w), disp_tensor_release(x);
  return 0;
}

/* A view's grad_fn follows its base's in-place updates: b.mul_(2) after
 * v = b[0:2] makes d sum(v)/da 2, through a new AsStridedBackward0. */
TEST(view_grad_fn_follows_its_base) {
  disp_tensor *a = ones(4, 1), *two = NULL, *b = NULL, *s = NULL;
  ASSERT_OK(disp_aten_full((disp_int_list){(int64_t[]){4}, 1}, disp_scalar_int(2), DISP_DTYPE_FLOAT32, -1, nodev,
                           nopin, &two));
  ASSERT_OK(disp_aten_mul_Scalar(a, disp_scalar_int(1), &b));
  disp_tensor *v = head(b);
  ASSERT_TRUE(v != NULL);
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(v)), "SliceBackward0");
  ASSERT_OK(mul_by(b, two));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(v)), "AsStridedBackward0");
  ASSERT_OK(disp_aten_sum(v, -1, &s));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  const float *g = disp_tensor_data_ptr(disp_tensor_grad(a));
  ASSERT_TRUE(g[0] == 2 && g[1] == 2 && g[2] == 0 && g[3] == 0);
  disp_tensor_release(s), disp_tensor_release(v), disp_tensor_release(b), disp_tensor_release(two);
  disp_tensor_release(a);
  return 0;
}

/* A view of a tensor outside any graph whose base then joins one (written
 * in place with an input that requires grad) is in it too: x = ones(4);
 * xv = x[0:2]; x.mul_(w); sum(xv * 3) gives w.grad [3, 3, 0, 0] (1.13). */
TEST(view_joins_the_graph_its_base_joins) {
  disp_tensor *x = ones(4, 0), *w = NULL, *y = NULL, *s = NULL;
  ASSERT_OK(disp_aten_full((disp_int_list){(int64_t[]){4}, 1}, disp_scalar_int(2), DISP_DTYPE_FLOAT32, -1, nodev,
                           nopin, &w));
  ASSERT_OK(disp_tensor_set_requires_grad(w, 1));
  disp_tensor *xv = head(x);
  ASSERT_TRUE(xv != NULL);
  ASSERT_OK(mul_by(x, w));
  ASSERT_OK(disp_aten_mul_Scalar(xv, disp_scalar_int(3), &y));
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(xv)), "AsStridedBackward0");
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  const float *g = disp_tensor_data_ptr(disp_tensor_grad(w));
  ASSERT_TRUE(g[0] == 3 && g[1] == 3 && g[2] == 0 && g[3] == 0);
  disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(xv), disp_tensor_release(w);
  disp_tensor_release(x);
  return 0;
}

/* A no-grad or inference-mode view of a tensor in a graph whose base is then
 * written in grad mode: reading its grad_fn is refused (1.13 raises). */
TEST(base_written_after_a_no_grad_view) {
  disp_tensor *x = ones(4, 1), *y = NULL;
  ASSERT_OK(disp_aten_mul_Scalar(x, disp_scalar_int(2), &y));
  disp_tensor *nv = head_in(y, 0), *iv = head_in(y, 1);
  ASSERT_TRUE(nv && iv);
  ASSERT_OK(add_one(y));
  ASSERT_TRUE(disp_tensor_grad_fn(nv) == NULL);
  ASSERT_EQ_STR(disp_last_error(), "A view was created in no_grad mode and its base or another view of its base has "
                                   "been modified inplace with grad mode enabled." GIVEN_THAT "no_grad" EITHER_BOTH);
  ASSERT_TRUE(disp_tensor_grad_fn(iv) == NULL);
  ASSERT_EQ_STR(disp_last_error(), "A view was created in inference mode and its base or another view of its base "
                                   "has been modified inplace in normal mode." GIVEN_THAT "inference_mode" EITHER_BOTH);
  disp_tensor_release(iv), disp_tensor_release(nv), disp_tensor_release(y), disp_tensor_release(x);
  return 0;
}

TEST(views_written_in_inference_mode_share_the_version) {
  disp_tensor *x = ones(4, 0);
  ASSERT_TRUE(x != NULL);
  disp_tls_state g = disp_tls_inference_mode_push(1);
  disp_tensor *v = head(x);
  disp_status st = v ? add_one(v) : DISP_ERR_INVALID_ARG;
  disp_tls_restore(g);
  ASSERT_OK(st);
  ASSERT_EQ_INT(disp_tensor_version(x), 1);
  ASSERT_EQ_INT(disp_tensor_version(v), 1);
  disp_tensor_release(v), disp_tensor_release(x);
  return 0;
}

TEST(inference_tensors_outside_inference_mode) {
  disp_tls_state g = disp_tls_inference_mode_push(1);
  disp_tensor *t = ones(3, 0);
  disp_tls_restore(g);
  disp_tensor *w = ones(3, 1), *plain = ones(3, 0), *r = NULL, *v = t ? head(t) : NULL;
  ASSERT_TRUE(t && w && plain && v);
  ASSERT_TRUE(disp_tensor_is_inference(v));
  ASSERT_REFUSED(add_one(t), INFERENCE_TENSOR);
  ASSERT_REFUSED(add_one(v), INFERENCE_TENSOR);
  g = disp_grad_mode_push(0);
  ASSERT_REFUSED(add_one(t), INFERENCE_TENSOR);
  disp_tls_restore(g);
  ASSERT_REFUSED(disp_aten_zero_(t, &r), INFERENCE_TENSOR);
  ASSERT_REFUSED(disp_aten_copy_(t, plain, false, &r), INFERENCE_TENSOR);
  ASSERT_REFUSED(disp_aten_add_out(plain, plain, disp_scalar_int(1), t, &r), INFERENCE_TENSOR);
  ASSERT_TRUE(r == NULL);
  /* functional ops read it; saving it for backward is refused */
  ASSERT_OK(disp_aten_mul_Scalar(t, disp_scalar_int(2), &r));
  disp_tensor_release(r), r = NULL;
  ASSERT_OK(disp_aten_add_Tensor(t, w, disp_scalar_int(1), &r));
  disp_tensor_release(r), r = NULL;
  ASSERT_REFUSED(disp_aten_mul_Tensor(t, w, &r), "Inference tensors cannot be saved for backward. To work around you "
                                                 "can make a clone to get a normal tensor and use it in autograd.");
  ASSERT_TRUE(r == NULL);
  disp_tensor_release(v), disp_tensor_release(plain), disp_tensor_release(w), disp_tensor_release(t);
  return 0;
}

TEST_LIST = {TEST_ENTRY(inference_mode_view_of_a_plain_tensor),
             TEST_ENTRY(inference_mode_view_of_a_tensor_that_requires_grad),
             TEST_ENTRY(no_grad_view_of_a_plain_tensor),
             TEST_ENTRY(grad_mode_view_of_a_plain_tensor_rebases_it),
             TEST_ENTRY(view_grad_fn_follows_its_base),
             TEST_ENTRY(view_joins_the_graph_its_base_joins),
             TEST_ENTRY(base_written_after_a_no_grad_view),
             TEST_ENTRY(views_written_in_inference_mode_share_the_version),
             TEST_ENTRY(inference_tensors_outside_inference_mode),
             TEST_END};

TEST_MAIN()
