/*
 * extra.c - openreg's autograd and autocast kernels.
 *
 * - AutogradPrivateUse1 for aten::add.Tensor: seed 000's MyAddFunction
 *   ("overriding autograd"): a custom function whose forward redispatches
 *   below autograd to openreg's add and whose backward hands the gradient to
 *   both inputs (scaled by alpha for `other`). The node is named
 *   "MyAddFunctionBackward" so a test sees it was used.
 * - AutocastPrivateUse1: mm and addmm run in the autocast dtype (the
 *   lower_precision_fp policy of 1.13's CUDA list), as a device would pick
 *   its fast matmul type.
 */
#include "openreg.h"

/* forward: inputs are self and other already scaled by alpha (a custom
 * function takes tensors only), so alpha is 1 here. */
static disp_status myadd_forward(disp_function_ctx *ctx, disp_tensor *const *in, size_t n, disp_tensor **out,
                                 size_t nout) {
  (void)ctx, (void)n, (void)nout;
  disp_tls_state below = disp_tls_below_adinplaceorview_push();
  disp_status st = disp_aten_add_Tensor(in[0], in[1], disp_scalar_int(1), &out[0]);
  disp_tls_restore(below);
  return st;
}

static disp_status myadd_backward(disp_function_ctx *ctx, disp_tensor *const *grad_out, size_t nout,
                                  disp_tensor **grad_in, size_t n) {
  (void)nout, (void)n;
  if (disp_ctx_needs_input_grad(ctx, 0)) grad_in[0] = disp_tensor_retain(grad_out[0]);
  if (disp_ctx_needs_input_grad(ctx, 1)) grad_in[1] = disp_tensor_retain(grad_out[0]);
  return DISP_OK;
}

static const disp_function_def MyAddFunction = {"MyAddFunctionBackward", myadd_forward, myadd_backward};

static int scalar_is_one(disp_scalar s) { return disp_scalar_to_double(s) == 1.0; }

static disp_status or_add_autograd(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out) {
  disp_tensor *scaled = NULL;
  if (!scalar_is_one(alpha)) {
    /* differentiable through the built-in mul formula: d(alpha*other) = alpha */
    disp_status st = disp_aten_mul_Scalar(other, alpha, &scaled);
    if (st != DISP_OK) return st;
  }
  disp_status st = disp_function_apply(&MyAddFunction, (disp_tensor *[]){self, scaled ? scaled : other}, 2, out, 1);
  disp_tensor_release(scaled);
  return st;
}

DISP_LIBRARY_IMPL(aten, AUTOGRAD_PRIVATEUSE1, m) {
  DISP_IMPL_ATEN(m, add_Tensor, or_add_autograd);
}

/* ---- autocast --------------------------------------------------------- */

static disp_status cast_both(disp_tensor *a, disp_tensor *b, disp_tensor **ca, disp_tensor **cb) {
  disp_dtype to = DISP_DTYPE_BFLOAT16;
  disp_status st = disp_autocast_get_dtype(DISP_BACKEND_PRIVATEUSE1, &to);
  if (st == DISP_OK) st = disp_autocast_cached_cast(to, a, DISP_BACKEND_PRIVATEUSE1, ca);
  if (st == DISP_OK) st = disp_autocast_cached_cast(to, b, DISP_BACKEND_PRIVATEUSE1, cb);
  return st;
}

static disp_status or_mm_autocast(disp_tensor *self, disp_tensor *mat2, disp_tensor **out) {
  disp_tls_state saved = disp_autocast_exclude_push(DISP_BACKEND_PRIVATEUSE1);
  disp_tensor *a = NULL, *b = NULL;
  disp_status st = cast_both(self, mat2, &a, &b);
  if (st == DISP_OK) st = disp_aten_mm(a, b, out);
  disp_tensor_release(a), disp_tensor_release(b);
  disp_tls_restore(saved);
  return st;
}

static disp_status or_addmm_autocast(disp_tensor *self, disp_tensor *mat1, disp_tensor *mat2, disp_scalar beta,
                                     disp_scalar alpha, disp_tensor **out) {
  disp_tls_state saved = disp_autocast_exclude_push(DISP_BACKEND_PRIVATEUSE1);
  disp_tensor *a = NULL, *b = NULL, *s = NULL;
  disp_dtype to = DISP_DTYPE_BFLOAT16;
  disp_status st = cast_both(mat1, mat2, &a, &b);
  if (st == DISP_OK) st = disp_autocast_get_dtype(DISP_BACKEND_PRIVATEUSE1, &to);
  if (st == DISP_OK) st = disp_autocast_cached_cast(to, self, DISP_BACKEND_PRIVATEUSE1, &s);
  if (st == DISP_OK) st = disp_aten_addmm(s, a, b, beta, alpha, out);
  disp_tensor_release(a), disp_tensor_release(b), disp_tensor_release(s);
  disp_tls_restore(saved);
  return st;
}

DISP_LIBRARY_IMPL(aten, AUTOCAST_PRIVATEUSE1, m) {
  DISP_IMPL_ATEN(m, mm, or_mm_autocast);
  DISP_IMPL_ATEN(m, addmm, or_addmm_autocast);
}
