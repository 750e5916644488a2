/*
 * autocast_kernels.c - the built-in AutocastCPU and AutocastCUDA kernels.
 *
 * PyTorch 1.13 registers these (aten/src/ATen/autocast_mode.cpp) for the
 * operators libdispatch has; the lists differ per device type:
 *
 *   policy               AutocastCPU                         AutocastCUDA
 *   lower_precision_fp   conv2d bmm mm addmm linear matmul   conv2d addmm matmul mm linear bmm
 *   fp32                 mse_loss nll_loss                   nll_loss mse_loss
 *                        cross_entropy_loss
 *   promote              stack cat                           -
 *
 * aten_ops.def flags exactly these operators (AUTOCAST_CPU, AUTOCAST_CUDA),
 * and gen_aten registers disp__autocast_{cpu,cuda}_ID where it exists.
 *
 * Every kernel does what 1.13's WrapFunction_ does: exclude its device
 * type's Autocast key, cast each tensor argument with cached_cast
 * (lower_precision_fp: to the thread's autocast dtype; fp32: to float32;
 * promote: to the widest floating type of the arguments), then call the
 * operator again through its typed entry - a full dispatch, so autograd and
 * the backend see the cast tensors - and restore the key.
 */
#include <stdlib.h>

#include "alloc_internal.h"
#include "disp.h"
#include "aten_kernels.h"
#include "disp/aten.h"
#include "disp/autocast.h"

typedef enum policy { LOWER_PRECISION_FP, FP32, PROMOTE } policy;

/* The state of one autocast call: the thread state to restore and the cast
 * arguments (new references; NULL for None). */
typedef struct frame {
  disp_tls_state saved;
  disp_tensor **cast;
  size_t n;
  disp_tensor *inline_cast[4];
} frame;

/* Excludes dev's Autocast key and casts args[0..n) per policy into
 * f->cast. On failure the casts made so far stay in f for leave(). */
static disp_status enter(frame *f, disp_backend dev, policy p, disp_tensor *const *args, size_t n) {
  f->saved = disp_autocast_exclude_push(dev);
  f->n = 0;
  f->cast = n <= sizeof f->inline_cast / sizeof *f->inline_cast ? f->inline_cast : disp__calloc(n, sizeof *f->cast);
  if (!f->cast) return disp_set_error(DISP_ERR_NO_MEMORY, "autocast: out of memory casting %zu tensors", n);
  disp_dtype to = DISP_DTYPE_FLOAT32;
  disp_status st = DISP_OK;
  if (p != FP32) st = disp_autocast_get_dtype(dev, &to);
  if (st == DISP_OK && p == PROMOTE) st = disp_autocast_promote_type(to, dev, args, n, &to);
  for (; st == DISP_OK && f->n < n; f->n++) {
    st = disp_autocast_cached_cast(to, args[f->n], dev, &f->cast[f->n]);
    if (st != DISP_OK) break;
  }
  return st;
}

/* Releases the casts, restores the thread state, passes st through. */
static disp_status leave(frame *f, disp_status st) {
  if (f->cast) {
    for (size_t i = 0; i < f->n; i++) disp_tensor_release(f->cast[i]);
    if (f->cast != f->inline_cast) disp__free(f->cast);
  }
  disp_tls_restore(f->saved);
  return st;
}

#define ARGS(...) (disp_tensor *const[]){__VA_ARGS__}, sizeof((disp_tensor *const[]){__VA_ARGS__}) / sizeof(disp_tensor *)

/* ---- one body per operator, then the per-device registrations ----------- */

static disp_status mm_(disp_backend dev, policy p, disp_tensor *self, disp_tensor *mat2, disp_tensor **out) {
  frame f;
  disp_status st = enter(&f, dev, p, ARGS(self, mat2));
  if (st == DISP_OK) st = disp_aten_mm(f.cast[0], f.cast[1], out);
  return leave(&f, st);
}

static disp_status addmm_(disp_backend dev, policy p, disp_tensor *self, disp_tensor *mat1, disp_tensor *mat2,
                          disp_scalar beta, disp_scalar alpha, disp_tensor **out) {
  frame f;
  disp_status st = enter(&f, dev, p, ARGS(self, mat1, mat2));
  if (st == DISP_OK) st = disp_aten_addmm(f.cast[0], f.cast[1], f.cast[2], beta, alpha, out);
  return leave(&f, st);
}

static disp_status bmm_(disp_backend dev, policy p, disp_tensor *self, disp_tensor *mat2, disp_tensor **out) {
  frame f;
  disp_status st = enter(&f, dev, p, ARGS(self, mat2));
  if (st == DISP_OK) st = disp_aten_bmm(f.cast[0], f.cast[1], out);
  return leave(&f, st);
}

static disp_status matmul_(disp_backend dev, policy p, disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  frame f;
  disp_status st = enter(&f, dev, p, ARGS(self, other));
  if (st == DISP_OK) st = disp_aten_matmul(f.cast[0], f.cast[1], out);
  return leave(&f, st);
}

static disp_status linear_(disp_backend dev, policy p, disp_tensor *input, disp_tensor *weight, disp_tensor *bias,
                           disp_tensor **out) {
  frame f;
  disp_status st = enter(&f, dev, p, ARGS(input, weight, bias));
  if (st == DISP_OK) st = disp_aten_linear(f.cast[0], f.cast[1], f.cast[2], out);
  return leave(&f, st);
}

static disp_status conv2d_(disp_backend dev, policy p, disp_tensor *input, disp_tensor *weight, disp_tensor *bias,
                           disp_int_list stride, disp_int_list padding, disp_int_list dilation, int64_t groups,
                           disp_tensor **out) {
  frame f;
  disp_status st = enter(&f, dev, p, ARGS(input, weight, bias));
  if (st == DISP_OK)
    st = disp_aten_conv2d(f.cast[0], f.cast[1], f.cast[2], stride, padding, dilation, groups, out);
  return leave(&f, st);
}

static disp_status mse_loss_(disp_backend dev, policy p, disp_tensor *self, disp_tensor *target, int64_t reduction,
                             disp_tensor **out) {
  frame f;
  disp_status st = enter(&f, dev, p, ARGS(self, target));
  if (st == DISP_OK) st = disp_aten_mse_loss(f.cast[0], f.cast[1], reduction, out);
  return leave(&f, st);
}

static disp_status nll_loss_(disp_backend dev, policy p, disp_tensor *self, disp_tensor *target, disp_tensor *weight,
                             int64_t reduction, int64_t ignore_index, disp_tensor **out) {
  frame f;
  disp_status st = enter(&f, dev, p, ARGS(self, target, weight));
  if (st == DISP_OK) st = disp_aten_nll_loss(f.cast[0], f.cast[1], f.cast[2], reduction, ignore_index, out);
  return leave(&f, st);
}

static disp_status cross_entropy_loss_(disp_backend dev, policy p, disp_tensor *self, disp_tensor *target,
                                       disp_tensor *weight, int64_t reduction, int64_t ignore_index,
                                       double label_smoothing, disp_tensor **out) {
  frame f;
  disp_status st = enter(&f, dev, p, ARGS(self, target, weight));
  if (st == DISP_OK)
    st = disp_aten_cross_entropy_loss(f.cast[0], f.cast[1], f.cast[2], reduction, ignore_index, label_smoothing,
                                      out);
  return leave(&f, st);
}

/* cat and stack: one list argument, the same call shape. */
typedef disp_status (*list_op)(disp_tensor_list, int64_t, disp_tensor **);

static disp_status list_(disp_backend dev, policy p, list_op op, disp_tensor_list tensors, int64_t dim,
                         disp_tensor **out) {
  frame f;
  disp_status st = enter(&f, dev, p, tensors.data, tensors.len);
  if (st == DISP_OK) st = op((disp_tensor_list){f.cast, tensors.len}, dim, out);
  return leave(&f, st);
}

/* ---- AutocastCPU (1.13's TORCH_LIBRARY_IMPL(aten, AutocastCPU, m)) ------- */

#define CPU DISP_BACKEND_CPU

disp_status disp__autocast_cpu_conv2d(disp_tensor *input, disp_tensor *weight, disp_tensor *bias,
                                      disp_int_list stride, disp_int_list padding, disp_int_list dilation,
                                      int64_t groups, disp_tensor **out0) {
  return conv2d_(CPU, LOWER_PRECISION_FP, input, weight, bias, stride, padding, dilation, groups, out0);
}
disp_status disp__autocast_cpu_bmm(disp_tensor *self, disp_tensor *mat2, disp_tensor **out0) {
  return bmm_(CPU, LOWER_PRECISION_FP, self, mat2, out0);
}
disp_status disp__autocast_cpu_mm(disp_tensor *self, disp_tensor *mat2, disp_tensor **out0) {
  return mm_(CPU, LOWER_PRECISION_FP, self, mat2, out0);
}
disp_status disp__autocast_cpu_addmm(disp_tensor *self, disp_tensor *mat1, disp_tensor *mat2, disp_scalar beta,
                                     disp_scalar alpha, disp_tensor **out0) {
  return addmm_(CPU, LOWER_PRECISION_FP, self, mat1, mat2, beta, alpha, out0);
}
disp_status disp__autocast_cpu_linear(disp_tensor *input, disp_tensor *weight, disp_tensor *bias, disp_tensor **out0) {
  return linear_(CPU, LOWER_PRECISION_FP, input, weight, bias, out0);
}
disp_status disp__autocast_cpu_matmul(disp_tensor *self, disp_tensor *other, disp_tensor **out0) {
  return matmul_(CPU, LOWER_PRECISION_FP, self, other, out0);
}
disp_status disp__autocast_cpu_mse_loss(disp_tensor *self, disp_tensor *target, int64_t reduction,
                                        disp_tensor **out0) {
  return mse_loss_(CPU, FP32, self, target, reduction, out0);
}
disp_status disp__autocast_cpu_nll_loss(disp_tensor *self, disp_tensor *target, disp_tensor *weight,
                                        int64_t reduction, int64_t ignore_index, disp_tensor **out0) {
  return nll_loss_(CPU, FP32, self, target, weight, reduction, ignore_index, out0);
}
disp_status disp__autocast_cpu_cross_entropy_loss(disp_tensor *self, disp_tensor *target, disp_tensor *weight,
                                                  int64_t reduction, int64_t ignore_index, double label_smoothing,
                                                  disp_tensor **out0) {
  return cross_entropy_loss_(CPU, FP32, self, target, weight, reduction, ignore_index, label_smoothing, out0);
}
disp_status disp__autocast_cpu_stack(disp_tensor_list tensors, int64_t dim, disp_tensor **out0) {
  return list_(CPU, PROMOTE, disp_aten_stack, tensors, dim, out0);
}
disp_status disp__autocast_cpu_cat(disp_tensor_list tensors, int64_t dim, disp_tensor **out0) {
  return list_(CPU, PROMOTE, disp_aten_cat, tensors, dim, out0);
}

/* ---- AutocastCUDA (1.13's TORCH_LIBRARY_IMPL(aten, Autocast, m)) --------- */

#define CUDA DISP_BACKEND_CUDA

disp_status disp__autocast_cuda_conv2d(disp_tensor *input, disp_tensor *weight, disp_tensor *bias,
                                       disp_int_list stride, disp_int_list padding, disp_int_list dilation,
                                       int64_t groups, disp_tensor **out0) {
  return conv2d_(CUDA, LOWER_PRECISION_FP, input, weight, bias, stride, padding, dilation, groups, out0);
}
disp_status disp__autocast_cuda_addmm(disp_tensor *self, disp_tensor *mat1, disp_tensor *mat2, disp_scalar beta,
                                      disp_scalar alpha, disp_tensor **out0) {
  return addmm_(CUDA, LOWER_PRECISION_FP, self, mat1, mat2, beta, alpha, out0);
}
disp_status disp__autocast_cuda_matmul(disp_tensor *self, disp_tensor *other, disp_tensor **out0) {
  return matmul_(CUDA, LOWER_PRECISION_FP, self, other, out0);
}
disp_status disp__autocast_cuda_mm(disp_tensor *self, disp_tensor *mat2, disp_tensor **out0) {
  return mm_(CUDA, LOWER_PRECISION_FP, self, mat2, out0);
}
disp_status disp__autocast_cuda_linear(disp_tensor *input, disp_tensor *weight, disp_tensor *bias,
                                       disp_tensor **out0) {
  return linear_(CUDA, LOWER_PRECISION_FP, input, weight, bias, out0);
}
disp_status disp__autocast_cuda_bmm(disp_tensor *self, disp_tensor *mat2, disp_tensor **out0) {
  return bmm_(CUDA, LOWER_PRECISION_FP, self, mat2, out0);
}
disp_status disp__autocast_cuda_nll_loss(disp_tensor *self, disp_tensor *target, disp_tensor *weight,
                                         int64_t reduction, int64_t ignore_index, disp_tensor **out0) {
  return nll_loss_(CUDA, FP32, self, target, weight, reduction, ignore_index, out0);
}
disp_status disp__autocast_cuda_mse_loss(disp_tensor *self, disp_tensor *target, int64_t reduction,
                                         disp_tensor **out0) {
  return mse_loss_(CUDA, FP32, self, target, reduction, out0);
}
