/*
 * test_inplace.c - the ADInplaceOrView layer of the built-in operators:
 * in-place and out= ops bump the version counter of what they write
 * (shared by views), functional ops and views do not, and an inference
 * tensor cannot be written outside inference mode.
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

TEST_LIST = {TEST_ENTRY(inplace_bumps_version_functional_does_not),
             TEST_ENTRY(inference_tensor_inplace_outside_inference_mode_fails), TEST_END};

TEST_MAIN()
