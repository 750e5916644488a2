/*
 * native.c - openreg's own kernels for the ops a model spends its time in
 * (add, mul, mm, addmm, relu, fill_, zero_) and for relu's backward (threshold_backward,
 * seed 000's "device-specific backward kernel": registered on PrivateUse1,
 * autograd's ReluBackward0 reaches it through the dispatcher). Everything
 * else takes the CPU fallback (plugin.c).
 *
 * Each kernel runs the CPU operator on CPU views of the device memory
 * (or_begin / or_end in util.c): the emulation stands in for device code.
 */
#include "openreg.h"

static disp_status or_add(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out) {
  or_call c;
  if (or_begin(&c, (disp_tensor *[]){self, other}, 2) == DISP_OK)
    c.st = disp_aten_add_Tensor(c.in[0], c.in[1], alpha, &c.result);
  return or_end(&c, out);
}

static disp_status or_mul(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  or_call c;
  if (or_begin(&c, (disp_tensor *[]){self, other}, 2) == DISP_OK)
    c.st = disp_aten_mul_Tensor(c.in[0], c.in[1], &c.result);
  return or_end(&c, out);
}

static disp_status or_mm(disp_tensor *self, disp_tensor *mat2, disp_tensor **out) {
  or_call c;
  if (or_begin(&c, (disp_tensor *[]){self, mat2}, 2) == DISP_OK) c.st = disp_aten_mm(c.in[0], c.in[1], &c.result);
  return or_end(&c, out);
}

static disp_status or_addmm(disp_tensor *self, disp_tensor *mat1, disp_tensor *mat2, disp_scalar beta,
                            disp_scalar alpha, disp_tensor **out) {
  or_call c;
  if (or_begin(&c, (disp_tensor *[]){self, mat1, mat2}, 3) == DISP_OK)
    c.st = disp_aten_addmm(c.in[0], c.in[1], c.in[2], beta, alpha, &c.result);
  return or_end(&c, out);
}

static disp_status or_relu(disp_tensor *self, disp_tensor **out) {
  or_call c;
  if (or_begin(&c, &self, 1) == DISP_OK) c.st = disp_aten_relu(c.in[0], &c.result);
  return or_end(&c, out);
}

static disp_status or_relu_(disp_tensor *self, disp_tensor **out) {
  or_call c;
  if (or_begin(&c, &self, 1) == DISP_OK) c.st = disp_aten_relu_(c.in[0], &c.result);
  return or_end_inplace(&c, self, out);
}

/* fill_ and zero_ write every element, overlapping views (expand) too:
 * through the CPU fallback they would be copied back with copy_, which
 * refuses a destination whose elements share memory. */
static disp_status or_fill_(disp_tensor *self, disp_scalar value, disp_tensor **out) {
  or_call c;
  if (or_begin(&c, &self, 1) == DISP_OK) c.st = disp_aten_fill__Scalar(c.in[0], value, &c.result);
  return or_end_inplace(&c, self, out);
}

static disp_status or_zero_(disp_tensor *self, disp_tensor **out) {
  or_call c;
  if (or_begin(&c, &self, 1) == DISP_OK) c.st = disp_aten_zero_(c.in[0], &c.result);
  return or_end_inplace(&c, self, out);
}

/* Counted so the tests can see autograd used the device's own backward. */
static _Atomic long g_threshold_backward_calls;

__attribute__((visibility("default"))) long openreg_threshold_backward_calls(void) {
  return g_threshold_backward_calls;
}

static disp_status or_threshold_backward(disp_tensor *grad_output, disp_tensor *self, disp_scalar threshold,
                                         disp_tensor **out) {
  g_threshold_backward_calls++;
  or_call c;
  if (or_begin(&c, (disp_tensor *[]){grad_output, self}, 2) == DISP_OK)
    c.st = disp_aten_threshold_backward(c.in[0], c.in[1], threshold, &c.result);
  return or_end(&c, out);
}


DISP_LIBRARY_IMPL(aten, PRIVATEUSE1, m) {
  DISP_IMPL_ATEN(m, add_Tensor, or_add);
  DISP_IMPL_ATEN(m, mul_Tensor, or_mul);
  DISP_IMPL_ATEN(m, mm, or_mm);
  DISP_IMPL_ATEN(m, addmm, or_addmm);
  DISP_IMPL_ATEN(m, relu, or_relu);
  DISP_IMPL_ATEN(m, relu_, or_relu_);
  DISP_IMPL_ATEN(m, threshold_backward, or_threshold_backward);
  DISP_IMPL_ATEN(m, fill__Scalar, or_fill_);
  DISP_IMPL_ATEN(m, zero_, or_zero_);
}
