/*
 * compare.c - eq, ne, lt, gt, ge, le: compared in the operands' common
 * dtype, written as bool. A Scalar operand is a wrapped number, so it is
 * first converted to the common dtype (float16 vs 1/3 compares against the
 * float16 nearest 1/3, as PyTorch does).
 */
#include "aten_internal.h"
#include "aten_kernels.h"
#include "tensor_iter.h"

#define CMP_LOOPS(name, ...)                                                                      \
  DISP_DEFS2B(FLOAT, name, __VA_ARGS__)                                                           \
  DISP_DEFS2B(INT, name, __VA_ARGS__)                                                             \
  DISP_DEFS2B(BOOL, name, __VA_ARGS__)                                                            \
  DISP_LOOP_TABLE(name##_loops, DISP_ENTRIES(FLOAT, name) DISP_ENTRIES(INT, name) DISP_ENTRIES(BOOL, name));

CMP_LOOPS(eq, a == b)
CMP_LOOPS(ne, a != b)
CMP_LOOPS(lt, a < b)
CMP_LOOPS(gt, a > b)
CMP_LOOPS(ge, a >= b)
CMP_LOOPS(le, a <= b)

static disp_status compare(const char *op, disp_tensor *self, disp_tensor *other, const disp_titer_loop *loops,
                           disp_tensor **out0) {
  disp_dtype common = disp__result_type2(self, other);
  disp_tensor *ins[2] = {self, other};
  return disp__pointwise(op, op, DISP_PW_FRESH, NULL, ins, 2, common, DISP_DTYPE_BOOL, loops, NULL, out0);
}

/* One body for CPU and Meta (manifest: META_IS_CPU). */
#define CMP_TENSOR(name)                                                                          \
  disp_status disp__cpu_##name##_Tensor(disp_tensor *self, disp_tensor *other, disp_tensor **out0) { \
    return compare(#name, self, other, name##_loops, out0);                                       \
  }
CMP_TENSOR(eq)
CMP_TENSOR(ne)
CMP_TENSOR(lt)
CMP_TENSOR(gt)
CMP_TENSOR(ge)
CMP_TENSOR(le)

static disp_status compare_scalar(const char *op, disp_tensor *self, disp_scalar other, const disp_titer_loop *loops,
                                  disp_tensor **out0) {
  disp_tensor *w;
  disp_status st = disp__wrap_scalar(other, disp_device_make(DISP_BACKEND_CPU, -1), &w);
  if (st != DISP_OK) return st;
  st = compare(op, self, w, loops, out0);
  disp__unwrap_scalar(w);
  return st;
}

disp_status disp__cpu_eq_Scalar(disp_tensor *self, disp_scalar other, disp_tensor **out0) {
  return compare_scalar("eq", self, other, eq_loops, out0);
}
