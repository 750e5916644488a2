/*
 * test_autograd_misuse - issue 18, class 4: what 1.13 refuses in autograd,
 * refused here with its words and the tensors unchanged; arrays a caller
 * hands over are copied, never kept.
 */
#include <disp.h>
#include <disp/aten.h>
#include <disp/function.h>

#include "test.h"

static disp_tensor *ones(int64_t n, int requires_grad) {
  int64_t sz[1] = {n};
  disp_int_list l = {sz, 1};
  disp_opt_device none = {0};
  disp_opt_bool no = {0};
  disp_tensor *t = NULL;
  if (disp_aten_ones(l, DISP_DTYPE_FLOAT32, -1, none, no, &t) != DISP_OK) return NULL;
  if (requires_grad && disp_tensor_set_requires_grad(t, 1) != DISP_OK) return NULL;
  return t;
}

/* 1.13: "Can't detach views in-place", and the view keeps its graph. */
TEST(detach__of_a_view_is_refused) {
  disp_tensor *a = ones(4, 1), *b = NULL, *v = NULL;
  ASSERT_TRUE(a);
  ASSERT_OK(disp_aten_mul_Scalar(a, disp_scalar_int(2), &b));
  int64_t sz[2] = {2, 2};
  ASSERT_OK(disp_aten_view(b, (disp_int_list){sz, 2}, &v));
  ASSERT_STATUS(disp_tensor_detach_(v), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "Can't detach views in-place. Use detach() instead.");
  ASSERT_TRUE(disp_tensor_grad_fn(v) != NULL && disp_tensor_requires_grad(v));
  ASSERT_OK(disp_tensor_detach_(b)); /* not a view: allowed */
  ASSERT_TRUE(disp_tensor_grad_fn(b) == NULL && !disp_tensor_requires_grad(b));
  disp_tensor_release(v), disp_tensor_release(b), disp_tensor_release(a);
  return 0;
}

/* 1.13's VariableTypeManual: resize_ of a tensor that requires grad and
 * set_ of a leaf that requires grad are refused; the tensor is unchanged. */
TEST(resize__and_set__of_tensors_that_require_grad_are_refused) {
  disp_tensor *leaf = ones(4, 1), *other = ones(6, 0), *out = NULL, *nonleaf = NULL;
  ASSERT_TRUE(leaf && other);
  int64_t sz[1] = {8};
  disp_storage *st = disp_tensor_storage(leaf);
  ASSERT_STATUS(disp_aten_resize_(leaf, (disp_int_list){sz, 1}, -1, &out), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "cannot resize variables that require grad");
  ASSERT_OK(disp_aten_mul_Scalar(leaf, disp_scalar_int(3), &nonleaf));
  ASSERT_STATUS(disp_aten_resize_(nonleaf, (disp_int_list){sz, 1}, -1, &out), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_aten_set__source_Tensor(leaf, other, &out), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "a leaf Variable that requires grad is being used in an in-place operation.");
  ASSERT_STATUS(disp_aten_set__source_Storage(leaf, disp_tensor_storage(other), &out), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(disp_tensor_storage(leaf) == st && disp_tensor_numel(leaf) == 4);
  /* with grad mode off (torch.no_grad()), set_ of the leaf is allowed */
  disp_tls_state g = disp_grad_mode_push(0);
  disp_status s = disp_aten_set__source_Tensor(leaf, other, &out);
  disp_tls_restore(g);
  ASSERT_OK(s);
  ASSERT_EQ_INT(disp_tensor_numel(leaf), 6);
  disp_tensor_release(out);
  /* a tensor that does not require grad resizes */
  ASSERT_OK(disp_aten_resize_(other, (disp_int_list){sz, 1}, -1, &out));
  ASSERT_EQ_INT(disp_tensor_numel(other), 8);
  disp_tensor_release(out);
  disp_tensor_release(nonleaf), disp_tensor_release(other), disp_tensor_release(leaf);
  return 0;
}

/* mark_non_differentiable / mark_dirty copy the caller's array: forward
 * scribbles over its own array after marking, and the marks hold. */
static disp_status twice_forward(disp_function_ctx *ctx, disp_tensor *const *in, size_t n, disp_tensor **out,
                                 size_t nout) {
  (void)n, (void)nout;
  disp_status st = disp_aten_mul_Scalar(in[0], disp_scalar_int(2), &out[0]);
  disp_tensor *marks[1] = {out[0]};
  if (st == DISP_OK) st = disp_ctx_mark_non_differentiable(ctx, marks, 1);
  marks[0] = NULL; /* the caller's array changes: the library must not care */
  return st;
}

static disp_status twice_backward(disp_function_ctx *ctx, disp_tensor *const *go, size_t nout, disp_tensor **gi,
                                  size_t n) {
  (void)ctx, (void)nout, (void)n;
  return disp_aten_mul_Scalar(go[0], disp_scalar_int(2), &gi[0]);
}

TEST(function_marks_are_copied) {
  static const disp_function_def twice = {"TwiceBackward", twice_forward, twice_backward};
  disp_tensor *a = ones(3, 1), *y = NULL;
  ASSERT_TRUE(a);
  ASSERT_OK(disp_function_apply(&twice, (disp_tensor *[]){a}, 1, &y, 1));
  ASSERT_FALSE(disp_tensor_requires_grad(y)); /* marked non-differentiable */
  disp_tensor_release(y), disp_tensor_release(a);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(detach__of_a_view_is_refused),
    TEST_ENTRY(resize__and_set__of_tensors_that_require_grad_are_refused),
    TEST_ENTRY(function_marks_are_copied),
    TEST_END};
TEST_MAIN()
