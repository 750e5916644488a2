/*
 * dropout.c - dropout (CompositeImplicitAutograd), native_dropout and
 * native_dropout_backward (CPU and Meta), with PyTorch 1.13's corner cases:
 * dropout returns its input itself when nothing is dropped (train false,
 * p = 0, no elements), native_dropout on an empty input returns the input
 * itself and an empty mask of the input's dtype.
 */
#include <stdlib.h>

#include "alloc_internal.h"
#include "aten_internal.h"
#include "aten_kernels.h"
#include "conv_util.h"
#include "gemm.h"
#include "random.h"
#include "tensor_iter.h"

#define FAIL(...) disp_set_error(DISP_ERR_INVALID_ARG, __VA_ARGS__)

/* 1.13's native_dropout_cpu, written with the same operator calls, which
 * gives its layouts and its errors: the mask is empty_like(input) as bool
 * (input's strides when dense), the output input.mul(mask).mul_(scale) (an
 * integer or bool input fails there: a float scale cannot be written back),
 * or without training a clone and ones_like(input) as bool. An empty input
 * is returned itself, with an empty_like(input) mask of its own dtype. On
 * Meta the same calls give the geometry. */
static disp_status native_dropout_impl(disp_tensor *input, double p, disp_opt_bool train, disp_tensor **out0,
                                       disp_tensor **out1) {
  disp_opt_device nodev = {0};
  disp_opt_bool nopin = {0};
  disp_tensor *mask = NULL, *out = NULL, *w = NULL, *same = NULL;
  disp_status st;
  if (disp__t_numel(input) == 0) {
    if ((st = disp_aten_empty_like(input, -1, -1, nodev, nopin, -1, &mask)) != DISP_OK) return st;
    *out0 = disp_tensor_retain(input);
    *out1 = mask;
    return DISP_OK;
  }
  if (train.has_value && !train.value) {
    st = disp_aten_ones_like(input, DISP_DTYPE_BOOL, -1, nodev, nopin, -1, &mask);
    if (st == DISP_OK) st = disp_aten_clone(input, -1, &out);
  } else {
    double p1m = 1.0 - p;
    if (!(p1m >= 0.0 && p1m <= 1.0)) return FAIL("native_dropout: bernoulli_ expects p to be in [0, 1], but got p=%g", p1m);
    double scale = p1m == 0.0 ? 0.0 : 1.0 / p1m;
    st = disp_aten_empty_like(input, DISP_DTYPE_BOOL, -1, nodev, nopin, -1, &mask);
    if (st == DISP_OK && disp__t_device_type(mask) == DISP_BACKEND_CPU) {
      double *m = disp__malloc(sizeof(double) * (size_t)disp__t_numel(mask));
      if (!m) st = disp_set_error(DISP_ERR_NO_MEMORY, "native_dropout: out of memory");
      else {
        disp__rng r = disp__rng_reserve((uint64_t)disp__t_numel(mask));
        for (int64_t i = 0; i < disp__t_numel(mask); i++) m[i] = disp__rng_bernoulli(&r, p1m);
        disp__conv_store(mask, m);
        disp__free(m);
      }
    }
    if (st == DISP_OK) st = disp_aten_mul_Tensor(input, mask, &out);
    if (st == DISP_OK) st = disp__wrap_scalar(disp_scalar_double(scale), disp_device_make(DISP_BACKEND_CPU, -1), &w);
    if (st == DISP_OK) st = disp_aten_mul__Tensor(out, w, &same);
    disp_tensor_release(same);
    disp__unwrap_scalar(w);
  }
  if (st != DISP_OK) {
    disp_tensor_release(mask), disp_tensor_release(out);
    return st;
  }
  *out0 = out;
  *out1 = mask;
  return DISP_OK;
}

/* 1.13 has no Meta native_dropout; issue 4 asks Meta for every CPU op. */

disp_status disp__cpu_native_dropout(disp_tensor *input, double p, disp_opt_bool train, disp_tensor **out0,
                                     disp_tensor **out1) {
  return native_dropout_impl(input, p, train, out0, out1);
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

/* 1.13's CPU dropout is _dropout_impl: the input itself when nothing is
 * dropped, input * zeros({}) of its dtype for p = 1, else input * noise
 * with noise = empty_like(input), bernoulli_(1 - p), div_(1 - p) (which an
 * integer or bool input cannot take). */
disp_status disp__cia_dropout(disp_tensor *input, double p, bool train, disp_tensor **out0) {
  if (!(p >= 0.0 && p <= 1.0)) return FAIL("dropout: dropout probability has to be between 0 and 1, but got %g", p);
  if (p == 0.0 || !train || disp__t_numel(input) == 0) {
    *out0 = disp_tensor_retain(input);
    return DISP_OK;
  }
  disp_opt_device dev = {(int32_t)disp__t_device_type(input), (int32_t)disp__t_device_index(input), true};
  disp_opt_bool nopin = {0};
  disp_tensor *z = NULL;
  if (p == 1.0) {
    disp_status st = disp_aten_zeros((disp_int_list){NULL, 0}, disp__t_dtype(input), -1, dev, nopin, &z);
    if (st == DISP_OK) st = disp_aten_mul_Tensor(input, z, out0);
    disp_tensor_release(z);
    return st;
  }
  if (disp__t_dtype(input) == DISP_DTYPE_FLOAT16) /* no float16 bernoulli_ on the CPU in 1.13 */
    return FAIL("dropout: \"bernoulli_scalar_cpu_\" not implemented for 'Half'");
  if (!disp_dtype_is_floating(disp__t_dtype(input)))
    return FAIL("dropout: result type Float can't be cast to the desired output type %s",
                disp_dtype_torch_name(disp__t_dtype(input)));
  disp_tensor *mask = NULL;
  disp_opt_bool tr = {true, true};
  disp_status st = disp_aten_native_dropout(input, p, tr, out0, &mask);
  disp_tensor_release(mask);
  return st;
}
