/*
 * dropout.c - dropout (CompositeImplicitAutograd), native_dropout and
 * native_dropout_backward (CPU and Meta), with PyTorch 1.13's corner cases:
 * dropout returns its input itself when nothing is dropped (train false,
 * p = 0, no elements), native_dropout on an empty input returns the input
 * itself and an empty mask of the input's dtype.
 */
#include <stdlib.h>

#include "aten_internal.h"
#include "aten_kernels.h"
#include "conv_util.h"
#include "gemm.h"
#include "random.h"

#define FAIL(...) disp_set_error(DISP_ERR_INVALID_ARG, __VA_ARGS__)

/* Strides of a fresh tensor laid out like t (empty_like's preserve_format):
 * t's own strides when it is non-overlapping and dense, else contiguous. */
static disp_status empty_like_dense(const disp_tensor *t, disp_dtype dt, disp_tensor **out) {
  int n = t->ndim;
  int order[DISP_TENSOR_MAX_DIMS], k = 0;
  for (int i = 0; i < n; i++)
    if (t->sizes[i] != 1) order[k++] = i;
  for (int i = 1; i < k; i++) /* insertion sort by stride */
    for (int j = i; j > 0 && t->strides[order[j - 1]] > t->strides[order[j]]; j--) {
      int s = order[j];
      order[j] = order[j - 1], order[j - 1] = s;
    }
  int64_t expect = 1;
  int dense = t->has_strides;
  for (int i = 0; i < k && dense; i++) {
    if (t->strides[order[i]] != expect) dense = 0;
    expect *= t->sizes[order[i]];
  }
  if (dense && t->numel > 0) return disp_tensor_empty_strided(t->sizes, t->strides, n, dt, t->device, out);
  return disp_tensor_empty(t->sizes, n, dt, t->device, out);
}

/* The checks and the outputs of native_dropout, shared by the CPU and Meta
 * kernels: *out0 and *out1 (output, mask) are set on success. An empty input
 * is returned itself with an empty mask (*done set: nothing to compute). */
static disp_status dropout_outputs(disp_tensor *input, double p, disp_opt_bool train, int *training, int *done,
                                   disp_tensor **out0, disp_tensor **out1) {
  disp_status st;
  *training = !train.has_value || train.value;
  *done = input->numel == 0;
  if (*done) {
    if ((st = empty_like_dense(input, input->dtype, out1)) != DISP_OK) return st;
    *out0 = disp_tensor_retain(input);
    return DISP_OK;
  }
  double p1m = 1.0 - p;
  if (*training && !(p1m >= 0.0 && p1m <= 1.0))
    return FAIL("native_dropout: bernoulli_ expects p to be in [0, 1], but got p=%g", p1m);
  if ((st = empty_like_dense(input, input->dtype, out0)) != DISP_OK) return st;
  st = *training ? disp_tensor_empty(input->sizes, input->ndim, DISP_DTYPE_BOOL, input->device, out1)
                 : empty_like_dense(input, DISP_DTYPE_BOOL, out1);
  if (st != DISP_OK) disp_tensor_release(*out0);
  return st;
}

/* 1.13 has no Meta native_dropout; issue 4 asks Meta for every CPU op. */
disp_status disp__meta_native_dropout(disp_tensor *input, double p, disp_opt_bool train, disp_tensor **out0,
                                      disp_tensor **out1) {
  int training, done;
  return dropout_outputs(input, p, train, &training, &done, out0, out1);
}

disp_status disp__cpu_native_dropout(disp_tensor *input, double p, disp_opt_bool train, disp_tensor **out0,
                                     disp_tensor **out1) {
  int training = 0, done = 0;
  disp_tensor *out = NULL, *mask = NULL;
  disp_status st = dropout_outputs(input, p, train, &training, &done, &out, &mask);
  if (st != DISP_OK) return st;
  if (done) {
    *out0 = out;
    *out1 = mask;
    return DISP_OK;
  }
  double p1m = 1.0 - p;
  double *v = disp__conv_load(input);
  double *m = v ? malloc(sizeof(double) * (size_t)input->numel) : NULL;
  if (!v || !m) st = disp_set_error(DISP_ERR_NO_MEMORY, "native_dropout: out of memory");
  if (st == DISP_OK) {
    if (training) {
      double scale = p1m == 0.0 ? 0.0 : 1.0 / p1m;
      disp__rng r = disp__rng_reserve((uint64_t)input->numel);
      for (int64_t i = 0; i < input->numel; i++) {
        m[i] = disp__rng_bernoulli(&r, p1m);
        v[i] = v[i] * m[i] * scale; /* x * mask * scale, nan * 0 stays nan as in PyTorch */
      }
    } else {
      for (int64_t i = 0; i < input->numel; i++) m[i] = 1.0;
    }
    disp__conv_store(out, v);
    disp__conv_store(mask, m);
  }
  free(v), free(m);
  if (st != DISP_OK) {
    disp_tensor_release(out), disp_tensor_release(mask);
    return st;
  }
  *out0 = out;
  *out1 = mask;
  return DISP_OK;
}

/* PyTorch's definition: grad_output * mask * scale (broadcasting and type
 * promotion of mul); on Meta the mul kernels give the geometry. */
static disp_status dropout_backward_impl(disp_tensor *grad_output, disp_tensor *mask, double scale,
                                         disp_tensor **out0) {
  disp_tensor *t = NULL;
  disp_status st = disp_aten_mul_Tensor(grad_output, mask, &t);
  if (st != DISP_OK) return st;
  st = disp_aten_mul_Scalar(t, disp_scalar_double(scale), out0);
  disp_tensor_release(t);
  return st;
}
disp_status disp__cpu_native_dropout_backward(disp_tensor *grad_output, disp_tensor *mask, double scale,
                                              disp_tensor **out0) {
  return dropout_backward_impl(grad_output, mask, scale, out0);
}
disp_status disp__meta_native_dropout_backward(disp_tensor *grad_output, disp_tensor *mask, double scale,
                                               disp_tensor **out0) {
  return dropout_backward_impl(grad_output, mask, scale, out0);
}

disp_status disp__cia_dropout(disp_tensor *input, double p, bool train, disp_tensor **out0) {
  if (!(p >= 0.0 && p <= 1.0)) return FAIL("dropout: dropout probability has to be between 0 and 1, but got %g", p);
  if (p == 0.0 || !train || input->numel == 0) {
    *out0 = disp_tensor_retain(input);
    return DISP_OK;
  }
  if (p == 1.0) return disp_aten_mul_Scalar(input, disp_scalar_int(0), out0);
  disp_tensor *mask = NULL;
  disp_opt_bool tr = {true, true};
  disp_status st = disp_aten_native_dropout(input, p, tr, out0, &mask);
  disp_tensor_release(mask);
  return st;
}
