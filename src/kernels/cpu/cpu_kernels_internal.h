/*
 * cpu/cpu_kernels_internal.h - what the per-ISA sources of one copy share:
 * the vector macros and the declarations of this copy's kernels (named
 * with DISP_CPU_SUFFIX), gathered into its table by cpu/table.c.
 */
#ifndef DISP_CPU_KERNELS_INTERNAL_H
#define DISP_CPU_KERNELS_INTERNAL_H

#include <stddef.h>

#include "cpu/kernels.h"
#include "cpu/vec.h"

#ifndef DISP_CPU_SUFFIX
#error "src/kernels/cpu/ sources are compiled with -DDISP_CPU_SUFFIX=_<capability>"
#endif

void DISP_CPU_FN(add_f32)(float *o, const float *a, const float *b, int64_t sb, float alpha, int64_t n);
void DISP_CPU_FN(mul_f32)(float *o, const float *a, const float *b, int64_t sb, int64_t n);
void DISP_CPU_FN(div_f32)(float *o, const float *a, const float *b, int64_t sb, int64_t n);
void DISP_CPU_FN(clamp_min_f32)(float *o, const float *a, float lo, int64_t n);
void DISP_CPU_FN(exp_f32)(float *o, const float *a, int64_t n);
void DISP_CPU_FN(log_f32)(float *o, const float *a, int64_t n);
void DISP_CPU_FN(tanh_f32)(float *o, const float *a, int64_t n);
void DISP_CPU_FN(sigmoid_f32)(float *o, const float *a, int64_t n);
void DISP_CPU_FN(softmax_lastdim_f32)(float *o, const float *in, int64_t rows, int64_t len, int is_log);
void DISP_CPU_FN(softmax_inner_f32)(float *o, const float *in, int64_t len, int64_t inner, int64_t c0, int64_t c1,
                                    int is_log);
void DISP_CPU_FN(softmax_backward_lastdim_f32)(float *o, const float *g, const float *y, int64_t rows, int64_t len,
                                               int is_log);
float DISP_CPU_FN(sum_f32)(const float *a, int64_t n);
void DISP_CPU_FN(select_f32)(float *o, const uint8_t *c, const float *a, int64_t sa, const float *b, int64_t sb,
                             int64_t n);
void DISP_CPU_FN(gelu_f32)(float *o, const float *a, int64_t n);
void DISP_CPU_FN(gelu_backward_f32)(float *o, const float *dy, const float *x, int64_t n);
void DISP_CPU_FN(layer_norm_rows_f32)(const float *x, int64_t rows, int64_t n, const float *g, const float *b,
                                      float eps, float *y, float *mean, float *rstd);
void DISP_CPU_FN(layer_norm_backward_rows_f32)(const float *dy, const float *x, int64_t rows, int64_t n,
                                               const float *g, const float *mean, const float *rstd, float *dx);
void DISP_CPU_FN(layer_norm_param_grads_f32)(const float *dy, const float *x, const float *mean, const float *rstd,
                                             int64_t rows, int64_t n, int64_t c0, int64_t c1, float *dg, float *db);
#if defined(__AVX2__)
void DISP_CPU_FN(gemm_nt_f32)(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                              const float *b, int64_t ldb, float beta, const float *s, int64_t lds, float *c,
                              int64_t ldc);
#define DISP_CPU_GEMM_NT DISP_CPU_FN(gemm_nt_f32)
void DISP_CPU_FN(conv_small_forward_f32)(int64_t m, int64_t n, int64_t k, const float *w, const float *cols,
                                         const float *start, float *y);
void DISP_CPU_FN(conv_small_weight_grad_f32)(int64_t m, int64_t n, int64_t k, const float *dy, const float *cols,
                                             float *dw);
#define DISP_CPU_CONV_SMALL_FORWARD DISP_CPU_FN(conv_small_forward_f32)
#define DISP_CPU_CONV_SMALL_WEIGHT_GRAD DISP_CPU_FN(conv_small_weight_grad_f32)
#else
#define DISP_CPU_GEMM_NT NULL /* gemm_small.c: FMA copies only */
#define DISP_CPU_CONV_SMALL_FORWARD NULL /* conv_small.c: FMA copies only */
#define DISP_CPU_CONV_SMALL_WEIGHT_GRAD NULL
#endif
void DISP_CPU_FN(threshold_backward_f32)(float *o, const float *self, const float *grad, float threshold,
                                         int64_t n);
void DISP_CPU_FN(max_pool2x2_f32)(const float *x, int64_t row_step, int64_t tap_step, int64_t first, int64_t rows,
                                  int64_t cols, float *y, int64_t *ix, int64_t ow);
int DISP_CPU_FN(max_pool2x2_backward_f32)(float *dx, int64_t ih, int64_t iw, const float *dy, const int64_t *ix,
                                          int64_t oh, int64_t ow);

#endif
