/*
 * stub_binary.c - the binary stub kernels: add, sub, mul, div with their
 * in-place and out= forms (disp/stub.h). Each applies the CPU kernel's
 * rules (op_rules.h) and hands the rest to the elementwise stub driver.
 */
#include "op_rules.h"
#include "stub_internal.h"

static disp_status add_like(const char *op, int sub, int mode, disp_tensor *self, disp_tensor *other,
                            disp_scalar alpha, disp_tensor *dest, disp_tensor **ret) {
  disp_dtype common;
  disp_status st = disp__add_rules(sub, self, other, alpha, &common);
  if (st != DISP_OK) return st;
  disp_tensor *ins[2] = {self, other};
  disp_stub id = DISP_STUB_ADD;
  if (sub) {
    /* 1.13's sub is add_stub with -alpha; a backend's own sub loop comes first */
    if (disp__stub_lookup(DISP_STUB_SUB, disp__titer_device(ins, 2).type)) id = DISP_STUB_SUB;
    else alpha = disp__scalar_negated(alpha);
  }
  return disp__stub_pointwise(op, id, mode, dest, ins, 2, common, alpha, ret);
}

disp_status disp__stub_add_Tensor(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out0) {
  return add_like("add", 0, DISP_PW_FRESH, self, other, alpha, NULL, out0);
}
disp_status disp__stub_add__Tensor(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out0) {
  return add_like("add_", 0, DISP_PW_INPLACE, self, other, alpha, self, out0);
}
disp_status disp__stub_add_out(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor *out_,
                               disp_tensor **out0) {
  return add_like("add.out", 0, DISP_PW_OUT, self, other, alpha, out_, out0);
}
disp_status disp__stub_sub_Tensor(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out0) {
  return add_like("sub", 1, DISP_PW_FRESH, self, other, alpha, NULL, out0);
}
disp_status disp__stub_sub__Tensor(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out0) {
  return add_like("sub_", 1, DISP_PW_INPLACE, self, other, alpha, self, out0);
}

static disp_status binary(const char *op, disp_stub id, int mode, disp_tensor *self, disp_tensor *other,
                          disp_dtype dt, disp_tensor **ret) {
  disp_tensor *ins[2] = {self, other};
  return disp__stub_pointwise(op, id, mode, mode == DISP_PW_INPLACE ? self : NULL, ins, 2, dt, disp_scalar_int(1),
                              ret);
}

disp_status disp__stub_mul_Tensor(disp_tensor *self, disp_tensor *other, disp_tensor **out0) {
  return binary("mul", DISP_STUB_MUL, DISP_PW_FRESH, self, other, disp__result_type2(self, other), out0);
}
disp_status disp__stub_mul__Tensor(disp_tensor *self, disp_tensor *other, disp_tensor **out0) {
  return binary("mul_", DISP_STUB_MUL, DISP_PW_INPLACE, self, other, disp__result_type2(self, other), out0);
}
disp_status disp__stub_div_Tensor(disp_tensor *self, disp_tensor *other, disp_tensor **out0) {
  return binary("div", DISP_STUB_DIV, DISP_PW_FRESH, self, other, disp__div_dtype(self, other), out0);
}
disp_status disp__stub_div__Tensor(disp_tensor *self, disp_tensor *other, disp_tensor **out0) {
  return binary("div_", DISP_STUB_DIV, DISP_PW_INPLACE, self, other, disp__div_dtype(self, other), out0);
}
