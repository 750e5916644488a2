/*
 * binary.c - pointwise ops of two tensors (and their scalar, in-place and
 * out= forms): add, sub, mul, div, maximum, minimum, pow, where, clamp and
 * the activation backward formulas.
 *
 * Every op is a promotion rule, a loop table and one call of binary_op,
 * which does geometry (fresh, in-place or out=) and runs the loop. CPU and
 * Meta kernels share everything; on Meta nothing is computed.
 */
#include <math.h>

#include "aten_internal.h"
#include "aten_kernels.h"
#include "cpu/kernels.h"
#include "disp/aten.h"
#include "op_rules.h"
#include "tensor_iter.h"

/* ---- float32 through the CPU kernel table -------------------------------- */

/* The table's binary kernels take a dense output and first operand and a
 * second operand that is dense or one broadcast value (sb 1 or 0); any
 * other strides run the generic loop. Both give the same bits. */
static int f32_dense(const int64_t *s) { return s[0] == 4 && s[1] == 4 && (s[2] == 4 || s[2] == 0); }
#define F(p) ((float *)(p))

static void add_f32(char **d, const int64_t *s, int64_t n, const void *ctx);
static void add1_f32(char **d, const int64_t *s, int64_t n, const void *ctx);
static void sub1_f32(char **d, const int64_t *s, int64_t n, const void *ctx);
/* the float32 entry of add, add1 and sub1: the table's kernel tests alpha */
static void add_f32_table(char **d, const int64_t *s, int64_t n, const void *ctx) {
  float alpha = (float)((const disp_titer_consts *)ctx)->d[0];
  if (f32_dense(s))
    disp__cpu_kernels()->add_f32(F(d[0]), F(d[1]), F(d[2]), s[2] / 4, alpha, n);
  else
    (alpha == 1.0f ? add1_f32 : alpha == -1.0f ? sub1_f32 : add_f32)(d, s, n, ctx);
}

/* mul commutes: a broadcast first operand swaps to second place */
static void mul_f32(char **d, const int64_t *s, int64_t n, const void *ctx);
static void mul_f32_table(char **d, const int64_t *s, int64_t n, const void *ctx) {
  if (f32_dense(s))
    disp__cpu_kernels()->mul_f32(F(d[0]), F(d[1]), F(d[2]), s[2] / 4, n);
  else if (s[0] == 4 && s[1] == 0 && s[2] == 4)
    disp__cpu_kernels()->mul_f32(F(d[0]), F(d[2]), F(d[1]), 0, n);
  else
    mul_f32(d, s, n, ctx);
}

static void div_f32(char **d, const int64_t *s, int64_t n, const void *ctx);
static void div_f32_table(char **d, const int64_t *s, int64_t n, const void *ctx) {
  if (f32_dense(s))
    disp__cpu_kernels()->div_f32(F(d[0]), F(d[1]), F(d[2]), s[2] / 4, n);
  else
    div_f32(d, s, n, ctx);
}
/* threshold_backward's operands are (self, grad): all dense, or the generic loop */
static void thr_f32(char **d, const int64_t *s, int64_t n, const void *ctx);
static void thr_f32_table(char **d, const int64_t *s, int64_t n, const void *ctx) {
  if (s[0] == 4 && s[1] == 4 && s[2] == 4)
    disp__cpu_kernels()->threshold_backward_f32(F(d[0]), F(d[1]), F(d[2]),
                                                (float)((const disp_titer_consts *)ctx)->d[0], n);
  else
    thr_f32(d, s, n, ctx);
}
#undef F

/* The float entries of a loop table, float32 through the kernel table. */
#define FLOAT_TABLE_ENTRIES(name)                                                                 \
  [DISP_DTYPE_FLOAT32] = name##_f32_table, [DISP_DTYPE_FLOAT64] = name##_f64,                     \
  [DISP_DTYPE_FLOAT16] = name##_f16, [DISP_DTYPE_BFLOAT16] = name##_bf16,

/* ---- loop tables --------------------------------------------------------- */

/* add: a + alpha * b; alpha == 1 (and -1, sub's) skip the multiply for every
 * dtype, as 1.13's add kernel; x * 1 is exact, so the results are the same */
DISP_DEFS2(FLOAT, add, a + k0 * b)
DISP_DEFS2(INT, add, (uint64_t)a + (uint64_t)k0 * (uint64_t)b) /* wraps, never UB */
DISP_DEFS2(BOOL, add, a + k0 * b)
DISP_LOOP_TABLE(add_loops, FLOAT_TABLE_ENTRIES(add) DISP_ENTRIES(INT, add) DISP_ENTRIES(BOOL, add));
DISP_DEF_LOOP2(add1_f32, f32, f32, a + b) /* add_f32_table's strided fallbacks */
DISP_DEF_LOOP2(add1_f64, f64, f64, a + b)
DISP_DEF_LOOP2(add1_f16, f16, f16, a + b)
DISP_DEF_LOOP2(add1_bf16, bf16, bf16, a + b)
DISP_DEFS2(INT, add1, (uint64_t)a + (uint64_t)b)
DISP_DEFS2(BOOL, add1, a + b)
DISP_LOOP_TABLE(add1_loops, [DISP_DTYPE_FLOAT32] = add_f32_table, [DISP_DTYPE_FLOAT64] = add1_f64,
                [DISP_DTYPE_FLOAT16] = add1_f16, [DISP_DTYPE_BFLOAT16] = add1_bf16, DISP_ENTRIES(INT, add1)
                DISP_ENTRIES(BOOL, add1));
DISP_DEF_LOOP2(sub1_f32, f32, f32, a - b)
DISP_DEF_LOOP2(sub1_f64, f64, f64, a - b)
DISP_DEF_LOOP2(sub1_f16, f16, f16, a - b)
DISP_DEF_LOOP2(sub1_bf16, bf16, bf16, a - b)
DISP_DEFS2(INT, sub1, (uint64_t)a - (uint64_t)b)
DISP_LOOP_TABLE(sub1_loops, [DISP_DTYPE_FLOAT32] = add_f32_table, [DISP_DTYPE_FLOAT64] = sub1_f64,
                [DISP_DTYPE_FLOAT16] = sub1_f16, [DISP_DTYPE_BFLOAT16] = sub1_bf16, DISP_ENTRIES(INT, sub1));

DISP_DEFS2(FLOAT, mul, a * b)
DISP_DEFS2(INT, mul, (uint64_t)a * (uint64_t)b)
DISP_DEFS2(BOOL, mul, a && b)
DISP_LOOP_TABLE(mul_loops, FLOAT_TABLE_ENTRIES(mul) DISP_ENTRIES(INT, mul) DISP_ENTRIES(BOOL, mul));

DISP_DEFS2(FLOAT, div, a / b)
DISP_LOOP_TABLE(div_loops, FLOAT_TABLE_ENTRIES(div));

/* std::max/std::min after the NaN checks, so signed zeros pick as PyTorch */
DISP_DEFS2(FLOAT, maxi, DISP_ISNAN(a) ? a : DISP_ISNAN(b) ? b : (a < b ? b : a))
DISP_DEFS2(INT, maxi, a < b ? b : a)
DISP_DEFS2(BOOL, maxi, a < b ? b : a)
DISP_LOOP_TABLE(max_loops, DISP_ENTRIES(FLOAT, maxi) DISP_ENTRIES(INT, maxi) DISP_ENTRIES(BOOL, maxi));
DISP_DEFS2(FLOAT, mini, DISP_ISNAN(a) ? a : DISP_ISNAN(b) ? b : (b < a ? b : a))
DISP_DEFS2(INT, mini, b < a ? b : a)
DISP_DEFS2(BOOL, mini, b < a ? b : a)
DISP_LOOP_TABLE(min_loops, DISP_ENTRIES(FLOAT, mini) DISP_ENTRIES(INT, mini) DISP_ENTRIES(BOOL, mini));

/* threshold_backward: operands (self, grad); k0 the threshold */
DISP_DEFS2(FLOAT, thr, a <= k0 ? 0 : b)
DISP_DEFS2(INT, thr, a <= k0 ? 0 : b)
DISP_LOOP_TABLE(thr_loops, FLOAT_TABLE_ENTRIES(thr) DISP_ENTRIES(INT, thr));

/* operands (grad_output, output) */
DISP_DEFS2(FLOAT, sigb, a * (1 - b) * b)
DISP_LOOP_TABLE(sigb_loops, DISP_ENTRIES(FLOAT, sigb));
DISP_DEFS2(FLOAT, tanhb, a * (1 - b * b))
DISP_LOOP_TABLE(tanhb_loops, DISP_ENTRIES(FLOAT, tanhb));

DISP_DEFS3(FLOAT, where, c ? a : b)
DISP_DEFS3(INT, where, c ? a : b)
DISP_DEFS3(BOOL, where, c ? a : b)

/* float32 runs with a contiguous output and condition and contiguous or
 * broadcast values go to the kernel table's vector select (the same bits). */
static void where_f32_table(char **d, const int64_t *s, int64_t n, const void *ctx) {
  if (s[0] == 4 && s[1] == 1 && (s[2] == 4 || s[2] == 0) && (s[3] == 4 || s[3] == 0))
    disp__cpu_kernels()->select_f32((float *)d[0], (const uint8_t *)d[1], (const float *)d[2], s[2] / 4,
                                    (const float *)d[3], s[3] / 4, n);
  else
    where_f32(d, s, n, ctx);
}
DISP_LOOP_TABLE(where_loops, [DISP_DTYPE_FLOAT32] = where_f32_table, [DISP_DTYPE_FLOAT64] = where_f64,
                [DISP_DTYPE_FLOAT16] = where_f16, [DISP_DTYPE_BFLOAT16] = where_bf16, DISP_ENTRIES(INT, where)
                    DISP_ENTRIES(BOOL, where));

/* ---- add / sub ------------------------------------------------------------ */

/* Whether the (already negated for sub) alpha in c is v for dtype dt, as
 * the loop reads it: the double for floating types, the integer otherwise,
 * and for bool any true value is 1. */
static int alpha_is(disp_dtype dt, const disp_titer_consts *c, int v) {
  if (disp_dtype_is_floating(dt)) return c->d[0] == (double)v;
  if (dt == DISP_DTYPE_BOOL) return v == 1 && c->i[0] != 0;
  return c->i[0] == v;
}

static const disp_titer_loop *add_loops_for(disp_dtype dt, const disp_titer_consts *c) {
  if (alpha_is(dt, c, 1)) return add1_loops;
  /* sub1 has no bool loop: bool subtraction was refused before */
  if (alpha_is(dt, c, -1) && dt != DISP_DTYPE_BOOL) return sub1_loops;
  return add_loops;
}

disp_status disp__add_rules(int sub, disp_tensor *self, disp_tensor *other, disp_scalar alpha,
                            disp_dtype *common_out) {
  disp_dtype common = disp__result_type2(self, other);
  *common_out = common; /* set on every path: -O3 checks the caller's use */
  if (sub && (disp__t_dtype(self) == DISP_DTYPE_BOOL || disp__t_dtype(other) == DISP_DTYPE_BOOL)) {
    if (disp__t_dtype(self) == disp__t_dtype(other))
      return disp_set_error(DISP_ERR_TYPE, "Subtraction, the `-` operator, with two bool tensors is not "
                                           "supported. Use the `^` or `logical_xor()` operator instead.");
    return disp_set_error(DISP_ERR_TYPE, "Subtraction, the `-` operator, with a bool tensor is not supported. "
                                         "If you are trying to invert a mask, use the `~` or `logical_not()` "
                                         "operator instead.");
  }
  if (disp_dtype_is_integral(common, 1) && alpha.kind == DISP_SCALAR_DOUBLE)
    return disp_set_error(DISP_ERR_TYPE, "For integral input tensors, argument alpha must not be a floating "
                                         "point number.");
  if (common != DISP_DTYPE_BOOL && alpha.kind == DISP_SCALAR_BOOL)
    return disp_set_error(DISP_ERR_TYPE, "Boolean alpha only supported for Boolean results.");
  return DISP_OK;
}

static disp_status add_common(const char *op, int sub, int mode, disp_tensor *self, disp_tensor *other,
                              disp_scalar alpha, disp_tensor *dest, disp_tensor **ret) {
  disp_dtype common;
  disp_status st = disp__add_rules(sub, self, other, alpha, &common);
  if (st != DISP_OK) return st;
  disp_titer_consts c;
  disp__consts_set(&c, 0, alpha);
  if (sub) {
    c.d[0] = -c.d[0];
    c.i[0] = (int64_t)(0 - (uint64_t)c.i[0]);
  }
  disp_tensor *ins[2] = {self, other};
  return disp__pointwise(op, sub ? "sub_cpu" : "add_cpu", mode, dest, ins, 2, common, common,
                         add_loops_for(common, &c), &c, ret);
}

disp_status disp__cpu_add_Tensor(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out0) {
  return add_common("add", 0, DISP_PW_FRESH, self, other, alpha, NULL, out0);
}
disp_status disp__cpu_add__Tensor(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out0) {
  return add_common("add_", 0, DISP_PW_INPLACE, self, other, alpha, self, out0);
}
disp_status disp__cpu_add_out(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor *out_,
                              disp_tensor **out0) {
  return add_common("add.out", 0, DISP_PW_OUT, self, other, alpha, out_, out0);
}
disp_status disp__cpu_sub_Tensor(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out0) {
  return add_common("sub", 1, DISP_PW_FRESH, self, other, alpha, NULL, out0);
}
disp_status disp__cpu_sub__Tensor(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out0) {
  return add_common("sub_", 1, DISP_PW_INPLACE, self, other, alpha, self, out0);
}

/* The non-functional composites PyTorch generates for structured ops: a
 * fresh output of the op's geometry on the input's device, then the out=
 * overload (the in-place form writes self through it). */
static disp_status via_add_out(disp_tensor *self, disp_tensor *other, disp_scalar alpha, int inplace,
                               disp_tensor **out0) {
  if (inplace) return disp_aten_add_out(self, other, alpha, self, out0);
  disp_tensor *meta_ins[2] = {self, other};
  int64_t shape[DISP_TITER_MAX_DIMS], strides[DISP_TITER_MAX_DIMS];
  int nd;
  disp_status st = disp__titer_broadcast("add", meta_ins, 2, shape, &nd);
  if (st != DISP_OK) return st;
  disp__titer_out_strides(meta_ins, 2, shape, nd, strides);
  disp_device dev = disp__titer_device(meta_ins, 2);
  disp_opt_device od = {dev.type, dev.index, true};
  disp_opt_bool pin = {false, false};
  disp_tensor *out;
  st = disp_aten_empty_strided((disp_int_list){shape, (size_t)nd}, (disp_int_list){strides, (size_t)nd},
                               (int32_t)disp__result_type2(self, other), -1, od, pin, &out);
  if (st != DISP_OK) return st;
  disp_tensor *r = NULL;
  st = disp_aten_add_out(self, other, alpha, out, &r);
  disp_tensor_release(out);
  if (st == DISP_OK) *out0 = r;
  return st;
}

/* PyTorch's sub.out is add with -alpha after the bool checks; with no
 * sub.out in the operator set, sub's composites go to add.out directly. */
static disp_status sub_checks(disp_tensor *self, disp_tensor *other) {
  if (disp__t_dtype(self) == DISP_DTYPE_BOOL || disp__t_dtype(other) == DISP_DTYPE_BOOL)
    return disp_set_error(DISP_ERR_TYPE, "Subtraction, the `-` operator, with a bool tensor is not supported. If you "
                                         "are trying to invert a mask, use the `~` or `logical_not()` operator "
                                         "instead.");
  return DISP_OK;
}

disp_scalar disp__scalar_negated(disp_scalar a) {
  if (a.kind == DISP_SCALAR_DOUBLE) return disp_scalar_double(-a.v.d);
  if (a.kind == DISP_SCALAR_INT) return disp_scalar_int((int64_t)(0 - (uint64_t)a.v.i));
  return a; /* bool alpha is refused by add for non-bool results anyway */
}

disp_status disp__ceanf_sub_Tensor(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out0) {
  disp_status st = sub_checks(self, other);
  return st != DISP_OK ? st : via_add_out(self, other, disp__scalar_negated(alpha), 0, out0);
}
disp_status disp__ceanf_sub__Tensor(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out0) {
  disp_status st = sub_checks(self, other);
  return st != DISP_OK ? st : via_add_out(self, other, disp__scalar_negated(alpha), 1, out0);
}

disp_status disp__ceanf_add_Tensor(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out0) {
  return via_add_out(self, other, alpha, 0, out0);
}
disp_status disp__ceanf_add__Tensor(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out0) {
  return via_add_out(self, other, alpha, 1, out0);
}

/* ---- mul / div ------------------------------------------------------------ */

static disp_status mul_common(const char *op, int mode, disp_tensor *self, disp_tensor *other, disp_tensor **ret) {
  disp_dtype common = disp__result_type2(self, other);
  disp_tensor *ins[2] = {self, other};
  return disp__pointwise(op, "mul_cpu", mode, mode == DISP_PW_INPLACE ? self : NULL, ins, 2, common, common, mul_loops, NULL, ret);
}

disp_status disp__cpu_mul_Tensor(disp_tensor *self, disp_tensor *other, disp_tensor **out0) {
  return mul_common("mul", DISP_PW_FRESH, self, other, out0);
}
disp_status disp__cpu_mul__Tensor(disp_tensor *self, disp_tensor *other, disp_tensor **out0) {
  return mul_common("mul_", DISP_PW_INPLACE, self, other, out0);
}

disp_dtype disp__div_dtype(disp_tensor *self, disp_tensor *other) {
  disp_dtype common = disp__result_type2(self, other);
  return disp_dtype_is_integral(common, 1) ? DISP_DTYPE_FLOAT32 : common;
}

static disp_status div_common(const char *op, int mode, disp_tensor *self, disp_tensor *other, disp_tensor **ret) {
  disp_dtype common = disp__div_dtype(self, other);
  disp_tensor *ins[2] = {self, other};
  return disp__pointwise(op, "div_true_cpu", mode, mode == DISP_PW_INPLACE ? self : NULL, ins, 2, common, common, div_loops, NULL,
                   ret);
}

disp_status disp__cpu_div_Tensor(disp_tensor *self, disp_tensor *other, disp_tensor **out0) {
  return div_common("div", DISP_PW_FRESH, self, other, out0);
}
disp_status disp__cpu_div__Tensor(disp_tensor *self, disp_tensor *other, disp_tensor **out0) {
  return div_common("div_", DISP_PW_INPLACE, self, other, out0);
}

/* ---- Scalar overloads: the Tensor overload with a wrapped number ---------- */

typedef disp_status (*tensor_overload2)(disp_tensor *, disp_tensor *, disp_tensor **);
typedef disp_status (*tensor_overload3)(disp_tensor *, disp_tensor *, disp_scalar, disp_tensor **);

static disp_status with_wrapped(disp_tensor *self, disp_scalar other, tensor_overload2 f2, tensor_overload3 f3,
                                disp_scalar alpha, disp_tensor **out0) {
  disp_tensor *w;
  disp_status st = disp__wrap_scalar(other, disp_device_make(DISP_BACKEND_CPU, -1), &w);
  if (st != DISP_OK) return st;
  st = f3 ? f3(self, w, alpha, out0) : f2(self, w, out0);
  disp__unwrap_scalar(w);
  return st;
}

disp_status disp__cea_add_Scalar(disp_tensor *self, disp_scalar other, disp_scalar alpha, disp_tensor **out0) {
  return with_wrapped(self, other, NULL, disp_aten_add_Tensor, alpha, out0);
}
disp_status disp__cea_sub_Scalar(disp_tensor *self, disp_scalar other, disp_scalar alpha, disp_tensor **out0) {
  return with_wrapped(self, other, NULL, disp_aten_sub_Tensor, alpha, out0);
}
disp_status disp__cea_mul_Scalar(disp_tensor *self, disp_scalar other, disp_tensor **out0) {
  return with_wrapped(self, other, disp_aten_mul_Tensor, NULL, other, out0);
}
disp_status disp__cea_div_Scalar(disp_tensor *self, disp_scalar other, disp_tensor **out0) {
  return with_wrapped(self, other, disp_aten_div_Tensor, NULL, other, out0);
}

/* ---- maximum / minimum ---------------------------------------------------- */

static disp_status minmax(const char *op, disp_tensor *self, disp_tensor *other, const disp_titer_loop *loops,
                          disp_tensor **out0) {
  disp_dtype common = disp__result_type2(self, other);
  disp_tensor *ins[2] = {self, other};
  return disp__pointwise(op, op, DISP_PW_FRESH, NULL, ins, 2, common, common, loops, NULL, out0);
}

disp_status disp__cpu_maximum(disp_tensor *self, disp_tensor *other, disp_tensor **out0) {
  return minmax("maximum", self, other, max_loops, out0);
}
disp_status disp__cpu_minimum(disp_tensor *self, disp_tensor *other, disp_tensor **out0) {
  return minmax("minimum", self, other, min_loops, out0);
}

/* ---- backward formulas ---------------------------------------------------- */

disp_status disp__cpu_threshold_backward(disp_tensor *grad_output, disp_tensor *self, disp_scalar threshold,
                                         disp_tensor **out0) {
  disp_tensor *ins[2] = {self, grad_output};
  disp_dtype common = disp__result_type2(self, grad_output);
  if (common == DISP_DTYPE_BOOL) return disp__not_implemented("threshold_cpu", common);
  disp_titer_consts c;
  disp__consts_set(&c, 0, threshold);
  return disp__pointwise("threshold_backward", "threshold_cpu", DISP_PW_FRESH, NULL, ins, 2, common, common, thr_loops, &c, out0);
}
disp_status disp__meta_threshold_backward(disp_tensor *grad_output, disp_tensor *self, disp_scalar threshold,
                                          disp_tensor **out0) {
  return disp__cpu_threshold_backward(grad_output, self, threshold, out0);
}

static disp_status act_backward(const char *op, const char *kname, disp_tensor *g, disp_tensor *o,
                                const disp_titer_loop *loops, disp_tensor **out0) {
  disp_tensor *ins[2] = {g, o};
  disp_dtype common = disp__result_type2(g, o);
  return disp__pointwise(op, kname, DISP_PW_FRESH, NULL, ins, 2, common, common, loops, NULL, out0);
}

disp_status disp__cpu_sigmoid_backward(disp_tensor *grad_output, disp_tensor *output, disp_tensor **out0) {
  return act_backward("sigmoid_backward", "sigmoid_backward_cpu", grad_output, output, sigb_loops, out0);
}
disp_status disp__meta_sigmoid_backward(disp_tensor *grad_output, disp_tensor *output, disp_tensor **out0) {
  return disp__cpu_sigmoid_backward(grad_output, output, out0);
}
disp_status disp__cpu_tanh_backward(disp_tensor *grad_output, disp_tensor *output, disp_tensor **out0) {
  return act_backward("tanh_backward", "tanh_backward_cpu", grad_output, output, tanhb_loops, out0);
}
disp_status disp__meta_tanh_backward(disp_tensor *grad_output, disp_tensor *output, disp_tensor **out0) {
  return disp__cpu_tanh_backward(grad_output, output, out0);
}

/* ---- where ---------------------------------------------------------------- */

/* The checks and the fresh output (broadcast shape, result dtype, layout
 * from the inputs) shared by the CPU and Meta kernels. */
static disp_status where_output(disp_tensor *const *ins, disp_dtype *common, disp_tensor **out) {
  *common = disp__result_type2(ins[1], ins[2]); /* set on every path: -O3 checks the caller's use */
  if (disp__t_dtype(ins[0]) != DISP_DTYPE_BOOL && disp__t_dtype(ins[0]) != DISP_DTYPE_UINT8)
    return disp_set_error(DISP_ERR_TYPE,
                          "where expected condition to be a boolean tensor, but got a tensor with dtype %s",
                          disp_dtype_torch_name(disp__t_dtype(ins[0])));
  if (!where_loops[*common]) return disp__not_implemented("where_cpu", *common);
  return disp__titer_new_output("where", ins, 3, *common, disp__titer_device(ins, 3), out);
}

/* 1.13 has no Meta where.self; issue 4 asks Meta for every CPU op. */
disp_status disp__meta_where_self(disp_tensor *condition, disp_tensor *self, disp_tensor *other, disp_tensor **out0) {
  disp_tensor *ins[3] = {condition, self, other};
  disp_dtype common;
  return where_output(ins, &common, out0);
}

disp_status disp__cpu_where_self(disp_tensor *condition, disp_tensor *self, disp_tensor *other, disp_tensor **out0) {
  disp_tensor *ins[3] = {condition, self, other};
  disp_dtype common;
  disp_tensor *out, *conv[2] = {NULL, NULL};
  disp_status st = where_output(ins, &common, &out);
  if (st != DISP_OK) return st;
  disp_titer_loop loop = where_loops[common];
  /* the condition keeps its own 1-byte dtype: convert only self and other */
  for (int k = 0; k < 2 && st == DISP_OK; k++)
    if (disp__t_dtype(ins[k + 1]) != common) {
      st = disp__titer_contiguous_as(ins[k + 1], common, &conv[k]);
      if (st == DISP_OK) ins[k + 1] = conv[k];
    }
  if (st == DISP_OK) {
    /* run with the condition typed as `common` is not wanted: go raw */
    if (disp__t_numel(out) > 0) {
      int nd = disp__t_ndim(out);
      int64_t strides[4 * DISP_TITER_MAX_DIMS];
      char *data[4];
      disp_tensor *all[4] = {out, ins[0], ins[1], ins[2]};
      for (int k = 0; k < 4; k++) {
        disp_tensor *t = all[k];
        int off = nd - disp__t_ndim(t);
        int64_t isz = (int64_t)disp_dtype_itemsize(disp__t_dtype(t));
        data[k] = (char *)disp__storage_data(disp__t_storage(t)) + disp__t_offset(t) * isz;
        for (int i = 0; i < nd; i++)
          strides[k * nd + i] = (i < off || (disp__t_size(t, i - off) == 1 && disp__t_size(out, i) != 1)) ? 0
                                : disp__t_stride(t, i - off) * isz;
      }
      disp__titer_loop_raw(4, data, strides, disp__t_sizes(out), nd, loop, NULL);
    }
  }
  disp_tensor_release(conv[0]);
  disp_tensor_release(conv[1]);
  if (st != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  *out0 = out;
  return DISP_OK;
}
