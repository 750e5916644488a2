/*
 * test_library_ns.c - a static registration block with an invalid namespace
 * fails like disp_library_new does, and is reported by disp_registry_check.
 * Its own executable: the failed block makes the whole registry check fail.
 */
#include <disp.h>

#include "test.h"

static int g_body_ran;

/* `1abc` is a preprocessing number, so the macro accepts it; PyTorch's
 * parser would never read it back as the namespace of `1abc::f`. */
DISP_LIBRARY(1abc, m) {
  g_body_ran = 1;
  disp_library_def(m, "f(Tensor self) -> Tensor", NULL);
}

DISP_LIBRARY(fine_ns, m) {
  disp_library_def(m, "f(Tensor self) -> Tensor", NULL);
}

TEST(static_block_with_invalid_namespace_fails_and_is_reported) {
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("fine_ns::f", &op)); /* runs the blocks */
  ASSERT_FALSE(g_body_ran);
  ASSERT_STATUS(disp_registry_check(), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "DISP_LIBRARY(1abc) at ");
  ASSERT_CONTAINS(disp_last_error(),
                  "failed: DISP_LIBRARY: invalid namespace \"1abc\"; a namespace must be a valid identifier");
  ASSERT_TRUE(disp_op_find("1abc::f", &op) != DISP_OK);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(static_block_with_invalid_namespace_fails_and_is_reported),
    TEST_END};

TEST_MAIN()
