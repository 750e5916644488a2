/*
 * gelu.c - aten::gelu and aten::gelu_backward: x * Phi(x) (approximate
 * "none") or its tanh approximation (approximate "tanh"), and the
 * derivative times grad_output, as 1.13's GeluKernelImpl and
 * GeluBackwardKernelImpl compute them.
 *
 * Float64 computes in double, and so does float32's tanh form (within 1
 * ulp of 1.13's Vectorized<float> tanh). Float32's exact form, the one a
 * GPT spends its time in, runs the kernel table's vector copy (cpu/gelu.c:
 * through erfc, a few ulp from exact; oneDNN's erf, which 1.13 uses for a
 * contiguous float32 tensor, is not more exact). 1.13 computes bfloat16 in
 * bfloat16 arithmetic, each operation rounded to bfloat16 (its scalar and
 * Vectorized<BFloat16> paths alike), so that is done here too: the same
 * formula runs with a rounding step after every operation, which is the
 * identity for the other dtypes. Float16 has no CPU kernel in 1.13, nor here.
 *
 * One body serves the CPU and the Meta key (manifest: META_IS_CPU): the
 * pointwise driver computes only the result's geometry for Meta tensors.
 */
#include <math.h>
#include <string.h>

#include "aten_internal.h"
#include "aten_kernels.h"
#include "cpu/kernels.h"
#include "f32_map.h"
#include "tensor/dtype_cast.h"
#include "tensor_iter.h"

typedef double (*rounding)(double);

static double exact(double v) { return v; }

static double to_bf16(double v) { return disp__bf16_to_float(disp__double_to_bf16(v)); }

/* 1.13's constants, in the compute type. */
#define SQRT_HALF 0.70710678118654752440       /* M_SQRT1_2 */
#define HALF_2_OVER_SQRT_PI_SQRT_HALF 0.3989422804014327 /* M_2_SQRTPI * M_SQRT1_2 * 0.5 */
#define SQRT_2_OVER_PI 0.79788456080286535588   /* M_SQRT2 * M_2_SQRTPI * 0.5 */
#define KAPPA 0.044715

static double gelu_none(double x, rounding r) {
  return r(r(x * 0.5) * r(1 + r(erf(r(x * r(SQRT_HALF))))));
}

static double gelu_tanh(double x, rounding r) {
  double cube = r(r(x * x) * x), inner = r(r(SQRT_2_OVER_PI) * r(x + r(r(KAPPA) * cube)));
  return r(r(0.5 * x) * r(1 + r(tanh(inner))));
}

static double gelu_none_grad(double dy, double x, rounding r) {
  double cdf = r(0.5 * r(1 + r(erf(r(x * r(SQRT_HALF))))));
  double pdf = r(r(HALF_2_OVER_SQRT_PI_SQRT_HALF) * r(exp(r(r(x * x) * -0.5))));
  return r(dy * r(cdf + r(x * pdf)));
}

static double gelu_tanh_grad(double dy, double x, rounding r) {
  double beta = r(SQRT_2_OVER_PI), kappa = r(KAPPA);
  double sq = r(x * x), cube = r(sq * x), inner = r(beta * r(x + r(kappa * cube))), t = r(tanh(inner));
  double left = r(0.5 * x), right = r(1 + t);
  double left_d = r(0.5 * right), tanh_d = r(1 - r(t * t));
  double inner_d = r(beta * r(1 + r(r(3 * kappa) * sq)));
  double right_d = r(r(left * tanh_d) * inner_d);
  return r(dy * r(left_d + right_d));
}

#define FLOATS(M, name, ...) \
  M(f32, FLOAT32, name, exact, __VA_ARGS__) M(f64, FLOAT64, name, exact, __VA_ARGS__) M(bf16, BFLOAT16, name, to_bf16, __VA_ARGS__)
#define DEF1(tag, E, name, R, f) DISP_DEF_LOOP1(name##_##tag, tag, tag, f((double)a, R))
#define DEF2(tag, E, name, R, f) DISP_DEF_LOOP2(name##_##tag, tag, tag, f((double)a, (double)b, R))
#define ENTRY(tag, E, name, R, f) [DISP_DTYPE_##E] = name##_##tag,

#define DOUBLES(M, name, ...) M(f64, FLOAT64, name, exact, __VA_ARGS__) M(bf16, BFLOAT16, name, to_bf16, __VA_ARGS__)

static void fwd_none_f32(char **d, const int64_t *s, int64_t n, const void *ctx) {
  (void)ctx;
  disp__f32_map1(d, s, n, disp__cpu_kernels()->gelu_f32);
}

static void bwd_none_f32(char **d, const int64_t *s, int64_t n, const void *ctx) {
  (void)ctx;
  disp__f32_map2(d, s, n, disp__cpu_kernels()->gelu_backward_f32);
}

DOUBLES(DEF1, fwd_none, gelu_none)
FLOATS(DEF1, fwd_tanh, gelu_tanh)
DOUBLES(DEF2, bwd_none, gelu_none_grad)
FLOATS(DEF2, bwd_tanh, gelu_tanh_grad)
DISP_LOOP_TABLE(fwd_none_loops, FLOATS(ENTRY, fwd_none, 0));
DISP_LOOP_TABLE(fwd_tanh_loops, FLOATS(ENTRY, fwd_tanh, 0));
DISP_LOOP_TABLE(bwd_none_loops, FLOATS(ENTRY, bwd_none, 0));
DISP_LOOP_TABLE(bwd_tanh_loops, FLOATS(ENTRY, bwd_tanh, 0));

/* 1.13's get_gelutype_enum: 0 none, 1 tanh, -1 refused (message set). */
static int approximation(const char *approximate) {
  if (approximate && !strcmp(approximate, "none")) return 0;
  if (approximate && !strcmp(approximate, "tanh")) return 1;
  disp_set_error(DISP_ERR_INVALID_ARG, "approximate argument must be either none or tanh.");
  return -1;
}

disp_status disp__cpu_gelu(disp_tensor *self, const char *approximate, disp_tensor **out0) {
  int kind = approximation(approximate);
  if (kind < 0) return DISP_ERR_INVALID_ARG;
  disp_dtype dt = disp_tensor_dtype(self);
  disp_tensor *ins[1] = {self};
  return disp__pointwise("gelu", "GeluKernelImpl", DISP_PW_FRESH, NULL, ins, 1, dt, dt,
                         kind ? fwd_tanh_loops : fwd_none_loops, NULL, out0);
}

/* 1.13 computes the exact form for a contiguous float32 CPU self of more
 * than one element with oneDNN, whose view of grad_output takes float32 or
 * bfloat16 only. */
static disp_status onednn_refuses(disp_tensor *grad_output, disp_tensor *self, int kind) {
  disp_dtype g = disp_tensor_dtype(grad_output);
  if (kind || disp_tensor_device(self).type != DISP_BACKEND_CPU || disp_tensor_dtype(self) != DISP_DTYPE_FLOAT32 ||
      !disp_tensor_is_contiguous(self) || disp_tensor_numel(self) <= 1 || g == DISP_DTYPE_FLOAT32 ||
      g == DISP_DTYPE_BFLOAT16)
    return DISP_OK;
  return disp_set_error(DISP_ERR_TYPE, "itensor_view_from_dense expects float/bfloat16 tensor input");
}

disp_status disp__cpu_gelu_backward(disp_tensor *grad_output, disp_tensor *self, const char *approximate,
                                    disp_tensor **out0) {
  int kind = approximation(approximate);
  if (kind < 0) return DISP_ERR_INVALID_ARG;
  disp_status st = onednn_refuses(grad_output, self, kind);
  if (st != DISP_OK) return st;
  disp_dtype dt = disp__result_type2(grad_output, self);
  disp_tensor *ins[2] = {grad_output, self};
  return disp__pointwise("gelu_backward", "GeluBackwardKernelImpl", DISP_PW_FRESH, NULL, ins, 2, dt, dt,
                         kind ? bwd_tanh_loops : bwd_none_loops, NULL, out0);
}
