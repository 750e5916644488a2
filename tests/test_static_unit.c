/*
 * test_static_unit.c - a static program that calls only typed entries and
 * tensor functions gets the whole library, autograd included.
 *
 * This program links libdispatch.a and refers to no function of the
 * autograd or runtime modules: no disp_init(), no backward, no
 * disp_shutdown(). Were libdispatch.a an archive of members, the linker
 * would leave out the members only constructors reach (the runtime's offer
 * of the built-in operators, the autograd module's kernels), and this
 * program would silently lose its version counter bumps and its
 * requires_grad results. libdispatch.a is one object (CMakeLists.txt), so
 * it gets what a program linking libdispatch.so gets. Plain main(), no
 * tests/test.h: that harness calls disp_shutdown().
 */
#include <stdio.h>

#include <disp.h>

static int failures;
#define CHECK(cond)                                                       \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #cond, \
              disp_last_error());                                         \
      failures++;                                                         \
    }                                                                     \
  } while (0)

static disp_tensor *ones(void) {
  int64_t n = 3;
  disp_tensor *t = NULL;
  disp_opt_device cpu = {0};
  if (disp_aten_ones((disp_int_list){&n, 1}, DISP_DTYPE_FLOAT32, -1, cpu, (disp_opt_bool){0}, &t) != DISP_OK)
    return NULL;
  return t;
}

int main(void) {
  disp_tensor *a = ones(), *b = ones(), *c = NULL;
  CHECK(a && b);
  if (!a || !b) return 1;
  /* ADInplaceOrView (the autograd module) bumps the shared counter. */
  uint64_t before = disp_tensor_version(a);
  CHECK(disp_aten_add__Tensor(a, b, disp_scalar_int(1), &c) == DISP_OK);
  CHECK(disp_tensor_version(a) == before + 1);
  CHECK(((const float *)disp_tensor_data_ptr(a))[2] == 2.0f);
  disp_tensor_release(c);
  /* Autograd (the autograd module) marks the result of a grad-requiring
   * input. */
  CHECK(disp_tensor_set_requires_grad(b, 1) == DISP_OK);
  CHECK(disp_aten_mul_Tensor(a, b, &c) == DISP_OK);
  CHECK(c && disp_tensor_requires_grad(c) == 1);
  disp_tensor_release(c);
  disp_tensor_release(a);
  disp_tensor_release(b);
  if (failures) return 1;
  puts("ok: typed entries alone get the autograd module's kernels");
  return 0;
}
