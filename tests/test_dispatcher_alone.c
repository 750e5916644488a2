/*
 * test_dispatcher_alone.c - the dispatcher links and works without the
 * kernels, autograd and runtime modules (Note [Start-up] in
 * src/runtime/init.c): this program is linked from the base, dispatcher and
 * tensor objects only (tests/CMakeLists.txt), with no undefined symbol
 * allowed, so an arrow from the dispatcher to a module above it fails the
 * build. It defines an operator with a C kernel and calls it both ways.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <disp.h>

#include "library_internal.h"
#include "plugin_internal.h"

/* disp_shutdown() is the runtime's; without it, the dispatcher's own steps
 * in its order (src/runtime/shutdown.c). */
static void alone_shutdown(void) {
  disp__plugins_shutdown();
  disp__library_shutdown();
}
#define TEST_SHUTDOWN alone_shutdown
#include "test.h"

static disp_tensor *floats(const float *v, int64_t n) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK)
    return NULL;
  memcpy(disp_tensor_data_ptr(t), v, (size_t)n * sizeof *v);
  return t;
}

/* alone::scale(Tensor self, float factor) -> Tensor, on CPU. */
static disp_status scale_cpu(disp_tensor *self, double factor, disp_tensor **out) {
  int64_t n = disp_tensor_numel(self);
  disp_tensor *r = NULL;
  disp_status st = disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &r);
  if (st != DISP_OK) return st;
  const float *a = disp_tensor_data_ptr(self);
  float *p = disp_tensor_data_ptr(r);
  for (int64_t i = 0; i < n; i++) p[i] = a[i] * (float)factor;
  *out = r;
  return DISP_OK;
}

DISP_LIBRARY(alone, m) {
  disp_library_def(m, "scale(Tensor self, float factor) -> Tensor", NULL);
}
DISP_LIBRARY_IMPL(alone, CPU, m) {
  disp_library_impl(m, "scale", disp_kernel_unboxed(DISP_FN(scale_cpu), 0), NULL);
}

TEST(no_builtins_here) {
  ASSERT_EQ_INT(disp__library_has_builtins(), 0);
  const disp_op *op = NULL;
  ASSERT_STATUS(disp_op_find("aten::add.Tensor", &op), DISP_ERR_OP_NOT_FOUND);
  ASSERT_CONTAINS(disp_last_error(), "the built-in operators are not linked into this program");
  return 0;
}

TEST(a_custom_op_with_a_c_kernel_called_both_ways) {
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("alone::scale", &op)); /* the first use drains the blocks above */
  disp_tensor *a = floats((const float[]){1.5f, -2.0f, 4.0f}, 3);
  ASSERT_TRUE(a != NULL);

  disp_tensor *r = NULL;
  ASSERT_OK(disp_call(op, a, 2.0, &r));
  const float *p = disp_tensor_data_ptr(r);
  ASSERT_TRUE(p[0] == 3.0f && p[1] == -4.0f && p[2] == 8.0f);
  disp_tensor_release(r);

  disp_stack *s = disp_stack_new();
  ASSERT_TRUE(s != NULL);
  ASSERT_OK(disp_stack_push_tensor(s, a));
  ASSERT_OK(disp_stack_push_double(s, -1.0));
  ASSERT_OK(disp_call_boxed(op, s));
  ASSERT_EQ_INT((int)disp_stack_size(s), 1);
  const float *q = disp_tensor_data_ptr(disp_stack_at(s, 0)->u.tensor);
  ASSERT_TRUE(q[0] == -1.5f && q[1] == 2.0f && q[2] == -4.0f);
  disp_stack_free(s);
  disp_tensor_release(a);
  ASSERT_OK(disp_registry_check());
  return 0;
}

TEST(its_table_dumps) {
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("alone::scale", &op));
  char *table = disp_op_dump_table(op);
  ASSERT_TRUE(table != NULL);
  ASSERT_CONTAINS(table, "CPU: registered at");
  free(table);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(no_builtins_here),
    TEST_ENTRY(a_custom_op_with_a_c_kernel_called_both_ways),
    TEST_ENTRY(its_table_dumps),
    TEST_END,
};
TEST_MAIN()
