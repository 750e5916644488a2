/*
 * random.c - draws from the device generators (src/tensor/generator.c) and the rand/randn kernels
 * (CompositeExplicitAutograd: computed on the CPU, made on Meta without
 * values, copied with _to_copy to any other device).
 */
#include "random.h"

#include <math.h>

#include "aten_internal.h"
#include "aten_kernels.h"
#include "disp/backend.h"
#include "disp/random.h"
#include "gemm.h"
#include "tensor/checked_math_internal.h"

disp__rng disp__rng_reserve_on(disp_device dev, uint64_t n) {
  /* A device without a generator slot (bad index) draws from the CPU's:
   * the caller has already validated the device it creates on. */
  disp_generator *g = disp_device_generator(dev);
  if (!g) g = disp_device_generator(disp_device_make(DISP_BACKEND_CPU, 0));
  disp_generator_state s;
  disp_generator_reserve(g, n, &s);
  disp__rng r = {s.seed, s.offset};
  return r;
}

disp__rng disp__rng_reserve(uint64_t n) { return disp__rng_reserve_on(disp_device_make(DISP_BACKEND_CPU, 0), n); }

uint64_t disp__rng_u64(disp__rng *r) { return disp_generator_draw(r->seed, r->next++); }

double disp__rng_uniform(disp__rng *r, int bits) {
  return (double)(disp__rng_u64(r) >> (64 - bits)) * ldexp(1.0, -bits);
}

double disp__rng_normal(disp__rng *r) {
  double u1 = 1.0 - disp__rng_uniform(r, 53); /* (0, 1]: log is finite */
  double u2 = disp__rng_uniform(r, 53);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int disp__rng_bernoulli(disp__rng *r, double p) { return disp__rng_uniform(r, 53) < p; }

static int dtype_bits(disp_dtype dt) {
  switch (dt) {
    case DISP_DTYPE_FLOAT64: return 53;
    case DISP_DTYPE_FLOAT16: return 11;
    case DISP_DTYPE_BFLOAT16: return 8;
    default: return 24;
  }
}

/* Writes v(i) to every element of t in row-major order (any strides). */
static void fill_with(disp_tensor *t, int normal, disp_device from) {
  if (disp__t_numel(t) == 0) return;
  disp__rng r = disp__rng_reserve_on(from, (uint64_t)disp__t_numel(t) * (normal ? 2u : 1u));
  int bits = dtype_bits(disp__t_dtype(t));
  char *base = disp_tensor_data_ptr(t);
  int64_t isz = (int64_t)disp_dtype_itemsize(disp__t_dtype(t));
  int64_t idx[DISP_TENSOR_MAX_DIMS] = {0}, off = 0;
  for (int64_t i = 0; i < disp__t_numel(t); i++) {
    disp__store_f64(base + off * isz, disp__t_dtype(t), normal ? disp__rng_normal(&r) : disp__rng_uniform(&r, bits));
    for (int d = disp__t_ndim(t) - 1; d >= 0; d--) {
      if (++idx[d] < disp__t_size(t, d)) {
        off += disp__t_stride(t, d);
        break;
      }
      off -= disp__t_stride(t, d) * (idx[d] - 1);
      idx[d] = 0;
    }
  }
}

void disp__fill_uniform(disp_tensor *t) { fill_with(t, 0, disp__t_device(t)); }
void disp__fill_normal(disp_tensor *t) { fill_with(t, 1, disp__t_device(t)); }

static disp_status random_factory(const char *op, const char *kname, int normal, disp_int_list size,
                                  int32_t dtype, int32_t layout, disp_opt_device device, disp_tensor **out0) {
  disp_dtype dt = dtype < 0 ? DISP_DTYPE_FLOAT32 : (disp_dtype)dtype;
  if (!disp_dtype_is_floating(dt))
    return disp_set_error(DISP_ERR_INVALID_ARG, "%s: \"%s\" not implemented for '%s'", op, kname,
                          disp_dtype_torch_name(dt));
  if (layout >= 0 && layout != DISP_LAYOUT_STRIDED)
    return disp_set_error(DISP_ERR_INVALID_ARG, "%s: only the strided layout is supported, got %s", op,
                          disp_layout_name((disp_layout)layout));
  disp_device dev = device.has_value ? disp_device_make((disp_backend)device.type, device.index)
                                     : disp_device_make(DISP_BACKEND_CPU, -1);
  int n = 0;
  disp_status st = disp__check_ndim(op, size.len, &n);
  if (st != DISP_OK) return st;
  if (dev.type == DISP_BACKEND_META)
    return disp_tensor_empty(size.data, n, dt, dev, out0);
  disp_tensor *t;
  st = disp_tensor_empty(size.data, n, dt, disp_device_make(DISP_BACKEND_CPU, -1), &t);
  if (st != DISP_OK) return st;
  /* The values come from the generator of the device they are made for
   * (as torch.rand(device=d) draws from d's default generator). */
  fill_with(t, normal, dev);
  if (dev.type == DISP_BACKEND_CPU) {
    *out0 = t;
    return DISP_OK;
  }
  /* Another backend: the values are made here and copied there. */
  disp_opt_device od = {dev.type, dev.index, true};
  disp_opt_bool nopin = {false, false};
  st = disp_aten__to_copy(t, (int32_t)dt, -1, od, nopin, false, -1, out0);
  disp_tensor_release(t);
  return st;
}

disp_status disp__cea_rand(disp_int_list size, int32_t dtype, int32_t layout, disp_opt_device device,
                           disp_opt_bool pin_memory, disp_tensor **out0) {
  (void)pin_memory;
  return random_factory("rand", "check_uniform_bounds", 0, size, dtype, layout, device, out0);
}

disp_status disp__cea_randn(disp_int_list size, int32_t dtype, int32_t layout, disp_opt_device device,
                            disp_opt_bool pin_memory, disp_tensor **out0) {
  (void)pin_memory;
  return random_factory("randn", "normal_kernel_cpu", 1, size, dtype, layout, device, out0);
}
