/*
 * creation.c - the factory operators. empty/empty_strided are backend
 * kernels (CPU and Meta allocate on their own device); everything else is a
 * composite written with dispatched ops (empty + fill_/zero_/copy_), so the
 * `device` argument, resolved by BackendSelect inside those calls, decides
 * where the result lives.
 */
#include <math.h>
#include <string.h>

#include "aten_internal.h"
#include "aten_kernels.h"
#include "disp/aten.h"
#include "elementwise_copy.h"
#include "tensor/checked_math_internal.h"

static disp_status check_layout(const char *op, int32_t layout) {
  if (layout < 0 || layout == DISP_LAYOUT_STRIDED) return DISP_OK;
  return disp_set_error(DISP_ERR_INVALID_ARG, "%s: only the strided layout is supported, got %s", op,
                        disp_layout_name((disp_layout)layout));
}

static disp_status check_dtype_arg(const char *op, int32_t dtype) {
  if (dtype < -1 || dtype >= DISP_DTYPE_COUNT)
    return disp_set_error(DISP_ERR_INVALID_ARG, "%s: invalid dtype %d", op, (int)dtype);
  return DISP_OK;
}

/* ---- empty, empty_strided (backend kernels) ------------------------------ */

static disp_status empty_impl(disp_backend backend, disp_int_list size, int32_t dtype, int32_t layout,
                              int32_t memory_format, disp_tensor **out) {
  int ndim = 0;
  disp_status st = check_layout("empty", layout);
  if (st == DISP_OK) st = check_dtype_arg("empty", dtype);
  if (st == DISP_OK) st = disp__check_ndim("empty", size.len, &ndim);
  if (st == DISP_OK) st = disp__tensor_check_shape("empty", size.data, NULL, ndim, NULL);
  if (st != DISP_OK) return st;
  int64_t strides[DISP_TENSOR_MAX_DIMS];
  if (memory_format == DISP_MEMORY_FORMAT_PRESERVE)
    return disp_set_error(DISP_ERR_INVALID_ARG, "Preserve memory format is unsupported for empty");
  st = disp__ew_strides_for_format(size.data, ndim, memory_format, strides);
  if (st != DISP_OK) return st;
  disp_dtype dt = dtype < 0 ? DISP_DTYPE_FLOAT32 : (disp_dtype)dtype;
  return disp_tensor_empty_strided(size.data, strides, ndim, dt, disp_device_make(backend, -1), out);
}

disp_status disp__cpu_empty_memory_format(disp_int_list size, int32_t dtype, int32_t layout, disp_opt_device device,
                                          disp_opt_bool pin_memory, int32_t memory_format, disp_tensor **out0) {
  (void)device, (void)pin_memory;
  return empty_impl(DISP_BACKEND_CPU, size, dtype, layout, memory_format, out0);
}

disp_status disp__meta_empty_memory_format(disp_int_list size, int32_t dtype, int32_t layout, disp_opt_device device,
                                           disp_opt_bool pin_memory, int32_t memory_format, disp_tensor **out0) {
  (void)device, (void)pin_memory;
  return empty_impl(DISP_BACKEND_META, size, dtype, layout, memory_format, out0);
}

static disp_status empty_strided_impl(disp_backend backend, disp_int_list size, disp_int_list stride, int32_t dtype,
                                      int32_t layout, disp_tensor **out) {
  disp_status st = check_layout("empty_strided", layout);
  if (st == DISP_OK) st = check_dtype_arg("empty_strided", dtype);
  if (st != DISP_OK) return st;
  if (size.len != stride.len)
    return disp_set_error(DISP_ERR_INVALID_ARG, "mismatch in length of strides and shape");
  int ndim = 0;
  st = disp__check_ndim("empty_strided", size.len, &ndim);
  if (st != DISP_OK) return st;
  disp_dtype dt = dtype < 0 ? DISP_DTYPE_FLOAT32 : (disp_dtype)dtype;
  return disp_tensor_empty_strided(size.data, stride.data, ndim, dt, disp_device_make(backend, -1), out);
}

disp_status disp__cpu_empty_strided(disp_int_list size, disp_int_list stride, int32_t dtype, int32_t layout,
                                    disp_opt_device device, disp_opt_bool pin_memory, disp_tensor **out0) {
  (void)device, (void)pin_memory;
  return empty_strided_impl(DISP_BACKEND_CPU, size, stride, dtype, layout, out0);
}

disp_status disp__meta_empty_strided(disp_int_list size, disp_int_list stride, int32_t dtype, int32_t layout,
                                     disp_opt_device device, disp_opt_bool pin_memory, disp_tensor **out0) {
  (void)device, (void)pin_memory;
  return empty_strided_impl(DISP_BACKEND_META, size, stride, dtype, layout, out0);
}

/* ---- filled factories (composites) ------------------------------------- */

/* t = empty(...) then fill_(t, v) (v NONE: zero_). Owns nothing on error.
 * The fill runs below ADInplaceOrView, so the fresh tensor stays at version
 * 0, as torch.zeros gives (the frontends run 1.13's factories under
 * AutoDispatchBelowADInplaceOrView; a bare at::zeros gives version 1). */
static disp_status filled(disp_int_list size, disp_scalar v, int32_t dtype, int32_t layout, disp_opt_device device,
                          disp_opt_bool pin_memory, disp_tensor **out) {
  disp_tensor *t, *r = NULL;
  disp_status st = disp_aten_empty_memory_format(size, dtype, layout, device, pin_memory, -1, &t);
  if (st != DISP_OK) return st;
  disp_tls_state below = disp_tls_below_adinplaceorview_push();
  st = v.kind == DISP_SCALAR_NONE ? disp_aten_zero_(t, &r) : disp_aten_fill__Scalar(t, v, &r);
  disp_tls_restore(below);
  disp_tensor_release(r);
  if (st != DISP_OK) {
    disp_tensor_release(t);
    return st;
  }
  *out = t;
  return DISP_OK;
}

disp_status disp__cea_zeros(disp_int_list size, int32_t dtype, int32_t layout, disp_opt_device device,
                            disp_opt_bool pin_memory, disp_tensor **out0) {
  disp_scalar none = {DISP_SCALAR_NONE, {0}};
  return filled(size, none, dtype, layout, device, pin_memory, out0);
}

disp_status disp__cea_ones(disp_int_list size, int32_t dtype, int32_t layout, disp_opt_device device,
                           disp_opt_bool pin_memory, disp_tensor **out0) {
  return filled(size, disp_scalar_int(1), dtype, layout, device, pin_memory, out0);
}

/* PyTorch's full: the dtype follows the fill value when not given. A bool
 * fill gives int64: 1.13 called as aten::full does so (the reference
 * vectors record it), although its Python-level torch.full gives bool. */
static int32_t scalar_default_dtype(disp_scalar s) {
  switch (s.kind) {
  case DISP_SCALAR_BOOL:
  case DISP_SCALAR_INT: return DISP_DTYPE_INT64;
  default: return DISP_DTYPE_FLOAT32;
  }
}

disp_status disp__cea_full(disp_int_list size, disp_scalar fill_value, int32_t dtype, int32_t layout,
                           disp_opt_device device, disp_opt_bool pin_memory, disp_tensor **out0) {
  if (fill_value.kind == DISP_SCALAR_NONE)
    return disp_set_error(DISP_ERR_INVALID_ARG, "full: fill_value must be a number");
  if (dtype < 0) dtype = scalar_default_dtype(fill_value);
  return filled(size, fill_value, dtype, layout, device, pin_memory, out0);
}

disp_status disp__cea_scalar_tensor(disp_scalar s, int32_t dtype, int32_t layout, disp_opt_device device,
                                    disp_opt_bool pin_memory, disp_tensor **out0) {
  if (s.kind == DISP_SCALAR_NONE)
    return disp_set_error(DISP_ERR_INVALID_ARG, "scalar_tensor: s must be a number");
  disp_int_list none = {NULL, 0};
  return filled(none, s, dtype < 0 ? DISP_DTYPE_FLOAT32 : dtype, layout, device, pin_memory, out0);
}

/* ---- arange ------------------------------------------------------------ */

static int scalar_is_integral(disp_scalar s) { return s.kind == DISP_SCALAR_INT || s.kind == DISP_SCALAR_BOOL; }

/* 1.13's Scalar::to<int64_t>: a double outside int64 (or nan) is refused,
 * not converted (the conversion would be undefined behaviour). */
static disp_status scalar_to_i64(disp_scalar s, int64_t *out) {
  if (s.kind == DISP_SCALAR_DOUBLE) {
    double d = s.v.d;
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
      return disp_set_error(DISP_ERR_INVALID_ARG, "value cannot be converted to type int64_t without overflow");
    *out = (int64_t)d;
    return DISP_OK;
  }
  *out = s.kind == DISP_SCALAR_BOOL ? (int64_t)s.v.b : s.v.i;
  return DISP_OK;
}

/* ceil((end - start) / step) for an int64 arange whose bounds agree with
 * the step's sign: 1.13's (end - start + step - sgn) / step, which wraps
 * for extreme bounds; here exact, as the distance fits uint64. */
static uint64_t arange_count(int64_t start, int64_t end, int64_t step) {
  uint64_t dist = step > 0 ? (uint64_t)end - (uint64_t)start : (uint64_t)start - (uint64_t)end;
  uint64_t mag = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
  return dist / mag + (dist % mag != 0);
}

static disp_status arange_impl(disp_scalar start, disp_scalar end, disp_scalar step, int32_t dtype, int32_t layout,
                               disp_opt_device device, disp_opt_bool pin_memory, disp_tensor **out) {
  if (start.kind == DISP_SCALAR_NONE || end.kind == DISP_SCALAR_NONE || step.kind == DISP_SCALAR_NONE)
    return disp_set_error(DISP_ERR_INVALID_ARG, "arange: start, end and step must be numbers");
  disp_status st = check_dtype_arg("arange", dtype);
  if (st != DISP_OK) return st;
  disp_dtype dt = dtype >= 0 ? (disp_dtype)dtype
                  : scalar_is_integral(start) && scalar_is_integral(end) && scalar_is_integral(step)
                      ? DISP_DTYPE_INT64
                      : DISP_DTYPE_FLOAT32;
  if (dt == DISP_DTYPE_BOOL || dt == DISP_DTYPE_QUINT8)
    return disp_set_error(DISP_ERR_TYPE, "\"arange_cpu\" not implemented for '%s'", disp_dtype_torch_name(dt));
  int integral = disp_dtype_is_integral(dt, 0);
  /* PyTorch computes in the output's accumulate type: int64 for integers,
   * double for float/double (float for the 16-bit floats). */
  double ds = disp_scalar_to_double(start), de = disp_scalar_to_double(end), dstep = disp_scalar_to_double(step);
  int64_t is = 0, ie = 0, istep = 0, exact = -1;
  double size_d;
  if (integral) {
    st = scalar_to_i64(start, &is);
    if (st == DISP_OK) st = scalar_to_i64(end, &ie);
    if (st == DISP_OK) st = scalar_to_i64(step, &istep);
    if (st != DISP_OK) return st;
    if (istep == 0) return disp_set_error(DISP_ERR_INVALID_ARG, "step must be nonzero");
    if (!((istep > 0 && ie >= is) || (istep < 0 && ie <= is)))
      return disp_set_error(DISP_ERR_INVALID_ARG, "upper bound and larger bound inconsistent with step sign");
    if (dt == DISP_DTYPE_INT64) {
      uint64_t n64 = arange_count(is, ie, istep);
      if (n64 > (uint64_t)INT64_MAX)
        return disp_set_error(DISP_ERR_INVALID_ARG, "invalid size, possible overflow?");
      size_d = (double)n64;
      exact = (int64_t)n64;
    } else {
      size_d = ceil((de - ds) / dstep);
    }
  } else {
    if (dt == DISP_DTYPE_FLOAT16 || dt == DISP_DTYPE_BFLOAT16) {
      ds = (float)ds, de = (float)de, dstep = (float)dstep;
    }
    if (!(dstep > 0 || dstep < 0)) return disp_set_error(DISP_ERR_INVALID_ARG, "step must be nonzero");
    if (!isfinite(ds) || !isfinite(de))
      return disp_set_error(DISP_ERR_INVALID_ARG, "unsupported range: %g -> %g", ds, de);
    if (!((dstep > 0 && de >= ds) || (dstep < 0 && de <= ds)))
      return disp_set_error(DISP_ERR_INVALID_ARG, "upper bound and larger bound inconsistent with step sign");
    size_d = ceil((disp_scalar_to_double(end) - disp_scalar_to_double(start)) / disp_scalar_to_double(step));
  }
  /* 1.13 accepts size_d == 2^63 (its check compares with INT64_MAX
   * rounded up to a double) and then converts out of range; here that is
   * the same error as any other size past INT64_MAX. */
  if (!(size_d >= 0 && size_d < 9223372036854775808.0))
    return disp_set_error(DISP_ERR_INVALID_ARG, "invalid size, possible overflow?");
  int64_t n = exact >= 0 ? exact : (int64_t)size_d;
  disp_int_list size = {&n, 1};
  disp_tensor *t;
  st = disp_aten_empty_memory_format(size, dt, layout, device, pin_memory, -1, &t);
  if (st != DISP_OK) return st;
  disp_tensor *host = t;
  if (disp__t_device_type(t) == DISP_BACKEND_META || n == 0) {
    *out = t;
    return DISP_OK;
  }
  if (disp__t_device_type(t) != DISP_BACKEND_CPU) {
    /* other backends: compute on the CPU, then copy_ over */
    st = disp_tensor_empty(&n, 1, dt, disp_device_make(DISP_BACKEND_CPU, -1), &host);
    if (st != DISP_OK) {
      disp_tensor_release(t);
      return st;
    }
  }
  char *p = disp_tensor_data_ptr(host);
  size_t item = disp_dtype_itemsize(dt);
  int64_t one = 1;
  for (int64_t i = 0; i < n; i++, p += item) {
    if (integral) {
      int64_t v = (int64_t)((uint64_t)is + (uint64_t)istep * (uint64_t)i);
      disp__ew_copy_strided(p, &one, dt, &v, &one, DISP_DTYPE_INT64, &one, 0);
    } else if (dt == DISP_DTYPE_FLOAT16 || dt == DISP_DTYPE_BFLOAT16) {
      float v = (float)ds + (float)dstep * (float)i;
      disp__ew_copy_strided(p, &one, dt, &v, &one, DISP_DTYPE_FLOAT32, &one, 0);
    } else {
      double v = ds + dstep * (double)i;
      disp__ew_copy_strided(p, &one, dt, &v, &one, DISP_DTYPE_FLOAT64, &one, 0);
    }
  }
  if (host != t) {
    disp_tensor *r = NULL;
    st = disp_aten_copy_(t, host, false, &r);
    disp_tensor_release(r);
    disp_tensor_release(host);
    if (st != DISP_OK) {
      disp_tensor_release(t);
      return st;
    }
  }
  *out = t;
  return DISP_OK;
}

disp_status disp__cea_arange(disp_scalar end, int32_t dtype, int32_t layout, disp_opt_device device,
                             disp_opt_bool pin_memory, disp_tensor **out0) {
  return arange_impl(disp_scalar_int(0), end, disp_scalar_int(1), dtype, layout, device, pin_memory, out0);
}

disp_status disp__cea_arange_start(disp_scalar start, disp_scalar end, int32_t dtype, int32_t layout,
                                   disp_opt_device device, disp_opt_bool pin_memory, disp_tensor **out0) {
  return arange_impl(start, end, disp_scalar_int(1), dtype, layout, device, pin_memory, out0);
}

disp_status disp__cea_arange_start_step(disp_scalar start, disp_scalar end, disp_scalar step, int32_t dtype,
                                        int32_t layout, disp_opt_device device, disp_opt_bool pin_memory,
                                        disp_tensor **out0) {
  return arange_impl(start, end, step, dtype, layout, device, pin_memory, out0);
}

/* ---- *_like ------------------------------------------------------------ */

disp_status disp__cea_empty_like(disp_tensor *self, int32_t dtype, int32_t layout, disp_opt_device device,
                                 disp_opt_bool pin_memory, int32_t memory_format, disp_tensor **out0) {
  disp_status st = check_dtype_arg("empty_like", dtype);
  if (st != DISP_OK) return st;
  if (dtype < 0) dtype = disp__t_dtype(self);
  if (!device.has_value) {
    device.type = disp__t_device_type(self);
    device.index = disp__t_device_index(self);
    device.has_value = true;
  }
  if (memory_format < 0) memory_format = DISP_MEMORY_FORMAT_PRESERVE;
  disp_int_list size = {disp__t_sizes(self), (size_t)disp__t_ndim(self)};
  if (memory_format == DISP_MEMORY_FORMAT_PRESERVE) {
    int64_t strides[DISP_TENSOR_MAX_DIMS];
    if (disp__ew_is_non_overlapping_and_dense(disp__t_sizes(self), disp__t_strides(self), disp__t_ndim(self)))
      memcpy(strides, disp__t_strides(self), (size_t)disp__t_ndim(self) * sizeof *strides);
    else
      disp__ew_infer_dense_strides(disp__t_sizes(self), disp__t_strides(self), disp__t_ndim(self), strides);
    disp_int_list stride = {strides, (size_t)disp__t_ndim(self)};
    return disp_aten_empty_strided(size, stride, dtype, layout, device, pin_memory, out0);
  }
  return disp_aten_empty_memory_format(size, dtype, layout, device, pin_memory, memory_format, out0);
}

static disp_status filled_like(disp_tensor *self, disp_scalar v, int32_t dtype, int32_t layout, disp_opt_device device,
                               disp_opt_bool pin_memory, int32_t memory_format, disp_tensor **out) {
  disp_tensor *t, *r = NULL;
  disp_status st = disp_aten_empty_like(self, dtype, layout, device, pin_memory, memory_format, &t);
  if (st != DISP_OK) return st;
  st = v.kind == DISP_SCALAR_NONE ? disp_aten_zero_(t, &r) : disp_aten_fill__Scalar(t, v, &r);
  disp_tensor_release(r);
  if (st != DISP_OK) {
    disp_tensor_release(t);
    return st;
  }
  *out = t;
  return DISP_OK;
}

disp_status disp__cea_zeros_like(disp_tensor *self, int32_t dtype, int32_t layout, disp_opt_device device,
                                 disp_opt_bool pin_memory, int32_t memory_format, disp_tensor **out0) {
  disp_scalar none = {DISP_SCALAR_NONE, {0}};
  return filled_like(self, none, dtype, layout, device, pin_memory, memory_format, out0);
}

disp_status disp__cea_ones_like(disp_tensor *self, int32_t dtype, int32_t layout, disp_opt_device device,
                                disp_opt_bool pin_memory, int32_t memory_format, disp_tensor **out0) {
  return filled_like(self, disp_scalar_int(1), dtype, layout, device, pin_memory, memory_format, out0);
}

disp_status disp__cea_full_like(disp_tensor *self, disp_scalar fill_value, int32_t dtype, int32_t layout,
                                disp_opt_device device, disp_opt_bool pin_memory, int32_t memory_format,
                                disp_tensor **out0) {
  if (fill_value.kind == DISP_SCALAR_NONE)
    return disp_set_error(DISP_ERR_INVALID_ARG, "full_like: fill_value must be a number");
  return filled_like(self, fill_value, dtype, layout, device, pin_memory, memory_format, out0);
}
