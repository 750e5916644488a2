/*
 * cpu/kernels.h - the hot float32 kernels compiled once per CPU capability
 * (PyTorch's DispatchStub with CPU_CAPABILITY), as one table of function
 * pointers per capability.
 *
 * Every source in src/kernels/cpu/ is compiled three times on x86-64
 * (baseline; AVX2+FMA+F16C; AVX-512 F/BW/VL/DQ) with DISP_CPU_SUFFIX naming
 * its copy, and once elsewhere; only these objects get ISA flags. Each copy
 * defines disp__cpu_kernels<suffix>. The kernels work on plain contiguous
 * arrays, on any sub-range the caller gives (the callers split work across
 * threads), never allocate and never fail. They take no locks: any thread.
 *
 * Results are the same for every capability where the operation is exact
 * (add, mul, div, clamp_min: one rounding per element, no fused multiply-add,
 * so alpha != 1 rounds the product first as 1.13's baseline build does);
 * exp, log, tanh, sigmoid and the softmaxes use SLEEF's 1-ulp functions in
 * the vector builds and libm in the baseline one, as 1.13's DEFAULT and
 * AVX2 builds do; sum's association depends on the vector width.
 */
#ifndef DISP_CPU_KERNELS_H
#define DISP_CPU_KERNELS_H

#include <stdint.h>

#include "cpu_capability.h"

/* Binary ops: o[i] = a[i] OP b[i * sb], sb 1 (contiguous) or 0 (b is one
 * broadcast value); add computes a + alpha * b (no multiply when alpha is 1). */
typedef void (*disp__k_add_f32)(float *o, const float *a, const float *b, int64_t sb, float alpha, int64_t n);
typedef void (*disp__k_bin_f32)(float *o, const float *a, const float *b, int64_t sb, int64_t n);
/* o[i] = f(a[i]); o may equal a. */
typedef void (*disp__k_un_f32)(float *o, const float *a, int64_t n);

typedef struct disp__cpu_kernel_table {
  disp__cpu_cap cap;
  disp__k_add_f32 add_f32;
  disp__k_bin_f32 mul_f32, div_f32;
  /* o[i] = max(a[i], lo) as std::max(a, lo): NaN stays NaN, -0 stays -0
   * (1.13's clamp_min; relu is clamp_min(0)) */
  void (*clamp_min_f32)(float *o, const float *a, float lo, int64_t n);
  disp__k_un_f32 exp_f32, log_f32, tanh_f32, sigmoid_f32;
  /* (log_)softmax of `rows` contiguous rows of `len` (1.13's lastdim
   * kernels: max, exps, float sum, then a multiply by 1/sum, or x - max -
   * log(sum)). o must not overlap in (it holds the exps meanwhile). */
  void (*softmax_lastdim_f32)(float *o, const float *in, int64_t rows, int64_t len, int is_log);
  /* (log_)softmax along a non-last dim of one (len, inner) slab, for the
   * columns [c0, c1) of it (1.13's _vec_softmax / _vec_logsoftmax). */
  void (*softmax_inner_f32)(float *o, const float *in, int64_t len, int64_t inner, int64_t c0, int64_t c1,
                            int is_log);
  /* Their gradients over `rows` contiguous rows of `len`, given the
   * forward's output y and the incoming gradient g (1.13's lastdim backward
   * kernels: the row's sum of g * y (or of g) in float, then (g - sum) * y,
   * or g - exp(y) * sum). o may equal g. */
  void (*softmax_backward_lastdim_f32)(float *o, const float *g, const float *y, int64_t rows, int64_t len,
                                       int is_log);
  /* The sum of n contiguous floats: several vector accumulators, blocks
   * combined in a cascade (1.13's cascade_sum), in float. */
  float (*sum_f32)(const float *a, int64_t n);
  /* GELU, approximate "none": o[i] = a[i] * Phi(a[i]); its gradient
   * o[i] = dy[i] * (Phi(x[i]) + x[i] * phi(x[i])) (cpu/gelu.c: Phi through
   * erfc, a few ulp from exact; o may equal an input). */
  disp__k_un_f32 gelu_f32;
  void (*gelu_backward_f32)(float *o, const float *dy, const float *x, int64_t n);
  /* c = alpha * a @ b + beta * s for small products (gemm.c's Note [Small
   * products]): a m x k (row i at a + i * lda), b k x n given by its columns
   * (column j at b + j * ldb), c m x n row-major (ldc), s m x n with
   * contiguous rows (row i at s + i * lds: s == c for BLAS's in-place
   * form, lds 0 for one row repeated); s is not read when beta is 0.
   * NULL in copies without it (the baseline). */
  void (*gemm_nt_f32)(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, const float *s, int64_t lds, float *c,
                      int64_t ldc);
  /* threshold_backward: o[i] = self[i] <= threshold ? 0 : grad[i] (a
   * select: the same bits in every copy; o may be self or grad). */
  void (*threshold_backward_f32)(float *o, const float *self, const float *grad, float threshold, int64_t n);
  /* where: o[i] = c[i] ? a[i * sa] : b[i * sb], c one byte per element
   * (nonzero: true), sa and sb 1 (contiguous) or 0 (one broadcast value);
   * a select, the same bits in every copy. */
  void (*select_f32)(float *o, const uint8_t *c, const float *a, int64_t sa, const float *b, int64_t sb, int64_t n);
  /* max_pool2d's windows of two by two taps, the columns adjacent and two
   * apart from one output to the next (kernel width 2, stride 2, no
   * dilation along the width; cpu/pool.c): rows x cols outputs whose taps
   * lie inside the input, output (r, c) reading x[r * row_step + 2c + {0,
   * 1, tap_step, tap_step + 1}] (1.13's tap order: ties keep the first, NaN
   * wins) into y[r * ow + c] and its index, first plus that offset; every
   * index must fit in int32. */
  void (*max_pool2x2_f32)(const float *x, int64_t row_step, int64_t tap_step, int64_t first, int64_t rows,
                          int64_t cols, float *y, int64_t *ix, int64_t ow);
  /* Its backward over one ih x iw plane whose oh x ow outputs' windows
   * tile it from the top-left (2oh <= ih, 2ow <= iw, ih * iw <= INT32_MAX):
   * writes every dx element, 0 + dy where an index points, +0 elsewhere
   * (1.13's zero-fill and scatter, exactly, when the windows are the
   * indices' own). Returns 0, with dx partly written, when some index is
   * not a tap of its own output's window. */
  int (*max_pool2x2_backward_f32)(float *dx, int64_t ih, int64_t iw, const float *dy, const int64_t *ix,
                                  int64_t oh, int64_t ow);
  /* A convolution's products on im2col columns cols (k x n, k the input
   * channels x taps, few) for conv_prim.h, where BLAS is slow
   * (cpu/conv_small.c): the forward y (m x n) = start[i] (row i's starting
   * value, the bias) + w (m x k) @ cols, the weight gradient dw (m x k) +=
   * dy (m x n) @ cols^T; all contiguous row-major. NULL in copies without
   * them (the baseline). */
  void (*conv_small_forward_f32)(int64_t m, int64_t n, int64_t k, const float *w, const float *cols,
                                 const float *start, float *y);
  void (*conv_small_weight_grad_f32)(int64_t m, int64_t n, int64_t k, const float *dy, const float *cols,
                                     float *dw);
  /* Layer norm of `rows` contiguous rows of n (layer_norm.c): y = (x -
   * mean) * rstd * g + b (g, b may be NULL), each row's mean and rstd =
   * 1 / sqrt(var + eps) stored (NaN for a row holding inf or NaN). */
  void (*layer_norm_rows_f32)(const float *x, int64_t rows, int64_t n, const float *g, const float *b, float eps,
                              float *y, float *mean, float *rstd);
  /* Its input gradient over `rows` rows: dx = rstd * dy * g + B * x + C
   * with the row's sums of dy * g * x and dy * g (g may be NULL). */
  void (*layer_norm_backward_rows_f32)(const float *dy, const float *x, int64_t rows, int64_t n, const float *g,
                                       const float *mean, const float *rstd, float *dx);
  /* Its weight and bias gradients for the columns [c0, c1): dg[j] = sum
   * over rows of dy * (x - mean) * rstd, db[j] = sum of dy (either NULL),
   * rows added in order. */
  void (*layer_norm_param_grads_f32)(const float *dy, const float *x, const float *mean, const float *rstd,
                                     int64_t rows, int64_t n, int64_t c0, int64_t c1, float *dg, float *db);
} disp__cpu_kernel_table;

/* The table of the capability in use (disp__cpu_capability()), decided
 * once; never NULL. */
const disp__cpu_kernel_table *disp__cpu_kernels(void);

/* The table compiled for capability c, or NULL when this build has none
 * for it (whether the CPU can run it is disp__cpu_capability_supported's
 * answer). For tests that compare every capability. */
const disp__cpu_kernel_table *disp__cpu_kernels_for(disp__cpu_cap c);

#endif
