/*
 * unary.c - pointwise ops of one tensor: neg, exp, log, tanh, sigmoid,
 * sqrt, rsqrt, abs, relu, and those with scalar operands: pow.Tensor_Scalar,
 * clamp, clamp_min.
 *
 * The floating functions promote integral and bool inputs to the default
 * float (float32) as PyTorch's unary float ops do; float16 has no CPU kernel
 * for them in PyTorch 1.13, and the same error is given here.
 */
#include <math.h>

#include "aten_internal.h"
#include "aten_kernels.h"
#include "cpu/kernels.h"
#include "disp/aten.h"
#include "f32_map.h"
#include "op_rules.h"
#include "tensor_iter.h"

DISP_DEFS1(FLOAT, neg, -a)
DISP_DEFS1(INT, neg, 0 - (uint64_t)a)
DISP_LOOP_TABLE(neg_loops, DISP_ENTRIES(FLOAT, neg) DISP_ENTRIES(INT, neg));

#define FLOAT_NO_HALF(name, ...)                                                                  \
  DISP_DEF_LOOP1(name##_f32, f32, f32, __VA_ARGS__)                                               \
  DISP_DEF_LOOP1(name##_f64, f64, f64, __VA_ARGS__)                                               \
  DISP_DEF_LOOP1(name##_bf16, bf16, bf16, __VA_ARGS__)                                            \
  DISP_LOOP_TABLE(name##_loops, [DISP_DTYPE_FLOAT32] = name##_f32, [DISP_DTYPE_FLOAT64] = name##_f64, \
                  [DISP_DTYPE_BFLOAT16] = name##_bf16);

/* float32 exp, log, tanh and sigmoid compute in float with the kernel
 * table's vector functions (SLEEF, or libm in the baseline build), as 1.13's
 * Vectorized<float>, whatever the layout (f32_map.h). */
#define FLOAT_NO_HALF_TABLE(name, ...)                                                            \
  static void name##_f32(char **d_, const int64_t *s_, int64_t n_, const void *ctx_) {            \
    (void)ctx_;                                                                                   \
    disp__f32_map1(d_, s_, n_, disp__cpu_kernels()->name##_f32);                                   \
  }                                                                                               \
  DISP_DEF_LOOP1(name##_f64, f64, f64, __VA_ARGS__)                                               \
  DISP_DEF_LOOP1(name##_bf16, bf16, bf16, __VA_ARGS__)                                            \
  DISP_LOOP_TABLE(name##_loops, [DISP_DTYPE_FLOAT32] = name##_f32, [DISP_DTYPE_FLOAT64] = name##_f64, \
                  [DISP_DTYPE_BFLOAT16] = name##_bf16);

FLOAT_NO_HALF_TABLE(exp, exp((double)a))
FLOAT_NO_HALF_TABLE(log, log((double)a))
FLOAT_NO_HALF_TABLE(tanh, tanh((double)a))
FLOAT_NO_HALF_TABLE(sigmoid, 1.0 / (1.0 + exp(-(double)a)))
FLOAT_NO_HALF(sqrt, sqrt((double)a))
FLOAT_NO_HALF(rsqrt, 1.0 / sqrt((double)a))

/* x ** n for integers, wrapping like C++ integer arithmetic. */
static inline int64_t ipow(int64_t base, int64_t e) {
  uint64_t r = 1, b = (uint64_t)base;
  while (e > 0) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return (int64_t)r;
}

/* 1.13's pow kernel specializes some exponents for float, double and
 * bfloat16: 0.5 is sqrt, -0.5 rsqrt, -1 a reciprocal, 2, 3 and -2 products
 * in the element type (R rounds a product to it); others, and every
 * float16 exponent, go through std::pow. The difference shows at the edges:
 * pow(-inf, 0.5) is inf, sqrt(-inf) nan. */
static inline float rbf16(float x) { return disp__bf16_to_float(disp__float_to_bf16(x)); }
#define R_SAME(x) (x)
#define POW_SPECIAL(a, e, R)                                                                      \
  ((e) == 0.5 ? sqrt((double)(a))                                                                 \
   : (e) == -0.5 ? 1.0 / sqrt((double)(a))                                                        \
   : (e) == -1.0 ? 1.0 / (double)(a)                                                              \
   : (e) == 2.0 ? (double)R((a) * (a))                                                            \
   : (e) == 3.0 ? (double)R(R((a) * (a)) * (a))                                                   \
   : (e) == -2.0 ? 1.0 / (double)R((a) * (a))                                                     \
                 : pow((double)(a), (e)))
DISP_DEF_LOOP1(pow_f32, f32, f32, POW_SPECIAL(a, c_->d[0], R_SAME))
DISP_DEF_LOOP1(pow_f64, f64, f64, POW_SPECIAL(a, c_->d[0], R_SAME))
DISP_DEF_LOOP1(pow_bf16, bf16, bf16, POW_SPECIAL(a, c_->d[0], rbf16))
DISP_DEF_LOOP1(pow_f16, f16, f16, pow((double)a, c_->d[0]))
DISP_DEFS1(INT, pow, ipow(a, c_->i[0]))
DISP_LOOP_TABLE(pow_loops, [DISP_DTYPE_FLOAT32] = pow_f32, [DISP_DTYPE_FLOAT64] = pow_f64,
                [DISP_DTYPE_BFLOAT16] = pow_bf16, [DISP_DTYPE_FLOAT16] = pow_f16, DISP_ENTRIES(INT, pow));

/* clamp: NaN stays; std::min(std::max(a, lo), hi) */
#define CLAMP_LOOPS(name, ...)                                                                    \
  DISP_DEF_LOOP1(name##_f32, f32, f32, __VA_ARGS__)                                               \
  DISP_DEF_LOOP1(name##_f64, f64, f64, __VA_ARGS__)                                               \
  DISP_DEF_LOOP1(name##_bf16, bf16, bf16, __VA_ARGS__)                                            \
  DISP_DEFS1(INT, name, __VA_ARGS__)
#define CLAMP_TABLE(name, f32_loop)                                                               \
  DISP_LOOP_TABLE(name##_loops, [DISP_DTYPE_FLOAT32] = f32_loop, [DISP_DTYPE_FLOAT64] = name##_f64, \
                  [DISP_DTYPE_BFLOAT16] = name##_bf16, DISP_ENTRIES(INT, name));
#define MAXV(x, y) ((x) < (y) ? (y) : (x))
#define MINV(x, y) ((y) < (x) ? (y) : (x))
CLAMP_LOOPS(clamp_both, DISP_ISNAN(a) ? a : MINV(MAXV(a, k0), k1))
CLAMP_LOOPS(clamp_lo, DISP_ISNAN(a) ? a : MAXV(a, k0))
CLAMP_LOOPS(clamp_hi, DISP_ISNAN(a) ? a : MINV(a, k1))

/* clamp_min (and so relu) on dense float32: the table's single max, whose
 * NaN and -0 results are the generic loop's (std::max(a, lo)) bit for bit. */
static void clamp_lo_f32_table(char **d, const int64_t *s, int64_t n, const void *ctx) {
  if (s[0] == 4 && s[1] == 4)
    disp__cpu_kernels()->clamp_min_f32((float *)d[0], (const float *)d[1],
                                       (float)((const disp_titer_consts *)ctx)->d[0], n);
  else
    clamp_lo_f32(d, s, n, ctx);
}
CLAMP_TABLE(clamp_both, clamp_both_f32)
CLAMP_TABLE(clamp_lo, clamp_lo_f32_table)
CLAMP_TABLE(clamp_hi, clamp_hi_f32)

/* ---- neg and the floating functions ------------------------------------- */

static disp_status unary(const char *op, const char *kname, disp_tensor *self, disp_dtype compute,
                         const disp_titer_loop *loops, disp_tensor **out0) {
  disp_tensor *ins[1] = {self};
  return disp__pointwise(op, kname, DISP_PW_FRESH, NULL, ins, 1, compute, compute, loops, NULL, out0);
}

disp_status disp__neg_rules(const disp_tensor *self) {
  if (disp__t_dtype(self) == DISP_DTYPE_BOOL)
    return disp_set_error(DISP_ERR_TYPE, "Negation, the `-` operator, on a bool tensor is not supported. If "
                                         "you are trying to invert a mask, use the `~` or `logical_not()` operator "
                                         "instead.");
  return DISP_OK;
}

static disp_status neg_impl(disp_tensor *self, disp_tensor **out0) {
  disp_status st = disp__neg_rules(self);
  if (st != DISP_OK) return st;
  return unary("neg", "neg_cpu", self, disp__t_dtype(self), neg_loops, out0);
}
disp_status disp__cpu_neg(disp_tensor *self, disp_tensor **out0) { return neg_impl(self, out0); }

disp_dtype disp__float_unary_dtype(const disp_tensor *self) {
  return disp_dtype_is_floating(disp__t_dtype(self)) ? disp__t_dtype(self) : DISP_DTYPE_FLOAT32;
}

static disp_status float_unary(const char *op, const char *kname, disp_tensor *self, const disp_titer_loop *loops,
                               disp_tensor **out0) {
  return unary(op, kname, self, disp__float_unary_dtype(self), loops, out0);
}

/* One body for CPU and Meta (manifest: META_IS_CPU): the pointwise driver
 * computes only the geometry of a Meta result. */
#define FLOAT_UNARY(name, kname)                                                                  \
  disp_status disp__cpu_##name(disp_tensor *self, disp_tensor **out0) {                           \
    return float_unary(#name, kname, self, name##_loops, out0);                                   \
  }
FLOAT_UNARY(exp, "exp_vml_cpu")
FLOAT_UNARY(log, "log_vml_cpu")
FLOAT_UNARY(tanh, "tanh_vml_cpu")
FLOAT_UNARY(sigmoid, "sigmoid_cpu")
FLOAT_UNARY(sqrt, "sqrt_vml_cpu")
FLOAT_UNARY(rsqrt, "rsqrt_cpu")

/* ---- abs: composite ------------------------------------------------------- */

/* |x| = max(x, -x); for floating types "+ 0.0" then turns -0.0 into 0.0
 * (std::abs's result) while keeping NaN and infinities. */
disp_status disp__cea_abs(disp_tensor *self, disp_tensor **out0) {
  if (disp__t_dtype(self) == DISP_DTYPE_BOOL)
    return disp_set_error(DISP_ERR_TYPE, "\"abs_cpu\" not implemented for 'Bool'");
  disp_tensor *n = NULL, *m = NULL, *w = NULL;
  disp_status st;
  /* uint8 is its own absolute value (its negation wraps around): max(x, x)
   * still gives a fresh result laid out as an elementwise op's. */
  if (disp__t_dtype(self) == DISP_DTYPE_UINT8) return disp_aten_maximum(self, self, out0);
  st = disp_aten_neg(self, &n);
  if (st == DISP_OK) st = disp_aten_maximum(self, n, &m);
  disp_tensor_release(n);
  if (st != DISP_OK) return st;
  if (!disp_dtype_is_floating(disp__t_dtype(self))) {
    *out0 = m;
    return DISP_OK;
  }
  st = disp__wrap_scalar(disp_scalar_double(0.0), disp_device_make(DISP_BACKEND_CPU, -1), &w);
  if (st == DISP_OK) st = disp_aten_add_Tensor(m, w, disp_scalar_int(1), out0);
  disp__unwrap_scalar(w);
  disp_tensor_release(m);
  return st;
}

/* ---- pow ------------------------------------------------------------------ */

static disp_status pow_impl(disp_tensor *self, disp_scalar exponent, disp_tensor **out0) {
  disp__result_state s;
  disp__result_state_init(&s);
  disp__result_state_tensor(&s, self);
  disp__result_state_scalar(&s, exponent);
  disp_dtype common = (disp_dtype)disp__result_state_get(&s);
  if (disp_dtype_is_integral(disp__t_dtype(self), 1) && exponent.kind != DISP_SCALAR_DOUBLE &&
      (exponent.kind == DISP_SCALAR_INT ? exponent.v.i : 0) < 0)
    return disp_set_error(DISP_ERR_INVALID_ARG, "Integers to negative integer powers are not allowed.");
  disp_titer_consts c;
  disp__consts_set(&c, 0, exponent);
  disp_tensor *ins[1] = {self};
  return disp__pointwise("pow", "pow", DISP_PW_FRESH, NULL, ins, 1, common, common, pow_loops, &c, out0);
}
disp_status disp__cpu_pow_Tensor_Scalar(disp_tensor *self, disp_scalar exponent, disp_tensor **out0) {
  return pow_impl(self, exponent, out0);
}

/* ---- clamp, clamp_min, relu ----------------------------------------------- */

/* clamp's manual promotion: non-floating self promotes with the bounds. */
static disp_status clamp_impl(const char *op, const char *kname, int mode, disp_tensor *self, disp_scalar lo,
                              disp_scalar hi, disp_tensor **out0) {
  if (lo.kind == DISP_SCALAR_NONE && hi.kind == DISP_SCALAR_NONE)
    return disp_set_error(DISP_ERR_INVALID_ARG, "torch.clamp: At least one of 'min' or 'max' must not be None");
  disp_dtype rt = disp__t_dtype(self);
  if (!disp_dtype_is_floating(rt)) {
    disp__result_state s;
    disp__result_state_init(&s);
    disp__result_state_tensor(&s, self);
    if (lo.kind != DISP_SCALAR_NONE) disp__result_state_scalar(&s, lo);
    if (hi.kind != DISP_SCALAR_NONE) disp__result_state_scalar(&s, hi);
    rt = (disp_dtype)disp__result_state_get(&s);
    if (mode == DISP_PW_INPLACE && rt != disp__t_dtype(self))
      return disp_set_error(DISP_ERR_TYPE, "result type %s can't be cast to the desired output type %s",
                            disp_dtype_torch_name(rt), disp_dtype_torch_name(disp__t_dtype(self)));
  }
  disp_titer_consts c;
  memset(&c, 0, sizeof c);
  if (lo.kind != DISP_SCALAR_NONE) disp__consts_set(&c, 0, lo);
  if (hi.kind != DISP_SCALAR_NONE) disp__consts_set(&c, 1, hi);
  const disp_titer_loop *loops = lo.kind == DISP_SCALAR_NONE ? clamp_hi_loops
                               : hi.kind == DISP_SCALAR_NONE ? clamp_lo_loops : clamp_both_loops;
  disp_tensor *ins[1] = {self};
  return disp__pointwise(op, kname, mode, mode == DISP_PW_INPLACE ? self : NULL, ins, 1, rt, rt, loops, &c, out0);
}

disp_status disp__cpu_clamp(disp_tensor *self, disp_scalar min, disp_scalar max, disp_tensor **out0) {
  return clamp_impl("clamp", "clamp_scalar_cpu", DISP_PW_FRESH, self, min, max, out0);
}
disp_status disp__meta_clamp(disp_tensor *self, disp_scalar min, disp_scalar max, disp_tensor **out0) {
  return disp__cpu_clamp(self, min, max, out0);
}
disp_status disp__cpu_clamp_min(disp_tensor *self, disp_scalar min, disp_tensor **out0) {
  disp_scalar none = {DISP_SCALAR_NONE, {0}};
  return clamp_impl("clamp_min", "clamp_min_cpu", DISP_PW_FRESH, self, min, none, out0);
}
disp_status disp__meta_clamp_min(disp_tensor *self, disp_scalar min, disp_tensor **out0) {
  return disp__cpu_clamp_min(self, min, out0);
}

/* relu is clamp_min(self, 0) through the dispatcher, as in PyTorch; on Meta
 * that reaches clamp_min's Meta kernel (1.13 has no Meta relu: issue 4). */
disp_status disp__relu_rules(const disp_tensor *self) {
  if (disp__t_dtype(self) == DISP_DTYPE_BOOL)
    return disp_set_error(DISP_ERR_TYPE, "Boolean inputs not supported for relu");
  return DISP_OK;
}

static disp_status relu_impl(disp_tensor *self, disp_tensor **out0) {
  disp_status st = disp__relu_rules(self);
  if (st != DISP_OK) return st;
  return disp_aten_clamp_min(self, disp_scalar_int(0), out0);
}
disp_status disp__cpu_relu(disp_tensor *self, disp_tensor **out0) { return relu_impl(self, out0); }

static disp_status relu__impl(disp_tensor *self, disp_tensor **out0) {
  disp_status st = disp__relu_rules(self);
  if (st != DISP_OK) return st;
  disp_scalar none = {DISP_SCALAR_NONE, {0}};
  return clamp_impl("relu_", "clamp_min_cpu", DISP_PW_INPLACE, self, disp_scalar_int(0), none, out0);
}
disp_status disp__cpu_relu_(disp_tensor *self, disp_tensor **out0) { return relu__impl(self, out0); }
