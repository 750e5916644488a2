/*
 * test_kernel_returns - issue 18: a kernel that returns DISP_OK without the
 * tensor its schema promises is an error naming the operator and the key,
 * whichever way the operator is called and whichever way the kernel was
 * registered (unboxed or boxed), and nothing leaks.
 */
#include <disp.h>
#include <disp/aten.h>
#include <disp/aten_impl.h>

#include "test.h"

static disp_status silent_add(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out) {
  (void)self, (void)other, (void)alpha, (void)out; /* "success", no tensor */
  return DISP_OK;
}

/* A boxed kernel that pops its arguments and pushes None for the Tensor. */
static disp_status silent_boxed(const disp_op *op, disp_keyset ks, disp_stack *st, void *ud) {
  (void)op, (void)ks, (void)ud;
  for (int i = 0; i < 3; i++) {
    disp_value v;
    if (disp_stack_pop(st, &v) != DISP_OK) return DISP_ERR_KERNEL;
    disp_value_clear(&v);
  }
  return disp_stack_push_tensor(st, NULL);
}

static disp_tensor *meta3(void) {
  int64_t n = 3;
  disp_tensor *t = NULL;
  return disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_META, -1), &t) == DISP_OK ? t
                                                                                                           : NULL;
}

/* The typed entry and a boxed call of aten::add.Tensor on Meta tensors,
 * with the silent kernel registered on Meta (over the built-in one). */
static int both_calls_refused(void) {
  disp_tensor *a = meta3(), *out = (disp_tensor *)&out;
  ASSERT_TRUE(a);
  ASSERT_STATUS(disp_aten_add_Tensor(a, a, disp_scalar_int(1), &out), DISP_ERR_KERNEL);
  ASSERT_TRUE(out == (disp_tensor *)&out); /* a failed call leaves the variable as it was */
  ASSERT_CONTAINS(disp_last_error(), "aten::add.Tensor: the kernel for Meta returned DISP_OK without a tensor");
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("aten::add.Tensor", &op));
  disp_stack *st = disp_stack_new();
  ASSERT_TRUE(st);
  ASSERT_OK(disp_stack_push_tensor(st, a));
  ASSERT_OK(disp_stack_push_tensor(st, a));
  ASSERT_OK(disp_stack_push_scalar(st, disp_scalar_int(1)));
  ASSERT_STATUS(disp_call_boxed(op, st), DISP_ERR_KERNEL);
  ASSERT_CONTAINS(disp_last_error(), "the kernel for Meta returned DISP_OK without a tensor");
  disp_stack_free(st);
  disp_tensor_release(a);
  return 0;
}

TEST(an_unboxed_kernel_returning_no_tensor_is_an_error) {
  disp_library *lib = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_META, __FILE__, __LINE__, &lib));
  ASSERT_OK(disp_library_impl(lib, "add.Tensor", DISP_ATEN_KERNEL(add_Tensor, silent_add), NULL));
  int rc = both_calls_refused();
  disp_library_free(lib);
  return rc;
}

TEST(a_boxed_kernel_returning_none_for_a_tensor_is_an_error) {
  disp_library *lib = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_META, __FILE__, __LINE__, &lib));
  ASSERT_OK(disp_library_impl(lib, "add.Tensor", disp_kernel_boxed(silent_boxed, NULL, NULL), NULL));
  int rc = both_calls_refused();
  disp_library_free(lib);
  return rc;
}

/* Behind autograd: a tensor that requires grad reaches the Meta kernel
 * through the Autograd kernel's redispatch; the error still names Meta. */
TEST(the_error_survives_a_redispatch) {
  disp_library *lib = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_META, __FILE__, __LINE__, &lib));
  ASSERT_OK(disp_library_impl(lib, "add.Tensor", DISP_ATEN_KERNEL(add_Tensor, silent_add), NULL));
  disp_tensor *a = meta3(), *out = NULL;
  ASSERT_TRUE(a);
  ASSERT_OK(disp_tensor_set_requires_grad(a, 1));
  ASSERT_STATUS(disp_aten_add_Tensor(a, a, disp_scalar_int(1), &out), DISP_ERR_KERNEL);
  ASSERT_TRUE(out == NULL);
  ASSERT_CONTAINS(disp_last_error(), "the kernel for Meta returned DISP_OK without a tensor");
  disp_tensor_release(a);
  disp_library_free(lib);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(an_unboxed_kernel_returning_no_tensor_is_an_error),
    TEST_ENTRY(a_boxed_kernel_returning_none_for_a_tensor_is_an_error),
    TEST_ENTRY(the_error_survives_a_redispatch),
    TEST_END};
TEST_MAIN()
