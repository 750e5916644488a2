/*
 * cpu/table.c - this copy's kernel table (cpu/kernels.h): one per
 * capability, named disp__cpu_kernels<suffix>.
 */
#include "cpu_kernels_internal.h"

#if defined(__AVX512F__)
#define THIS_CAP DISP_CPU_AVX512
#elif defined(__AVX2__)
#define THIS_CAP DISP_CPU_AVX2
#else
#define THIS_CAP DISP_CPU_DEFAULT
#endif

extern const disp__cpu_kernel_table DISP_CPU_CAT(disp__cpu_kernels, DISP_CPU_SUFFIX);
const disp__cpu_kernel_table DISP_CPU_CAT(disp__cpu_kernels, DISP_CPU_SUFFIX) = {
    .cap = THIS_CAP,
    .add_f32 = DISP_CPU_FN(add_f32),
    .mul_f32 = DISP_CPU_FN(mul_f32),
    .div_f32 = DISP_CPU_FN(div_f32),
    .clamp_min_f32 = DISP_CPU_FN(clamp_min_f32),
    .exp_f32 = DISP_CPU_FN(exp_f32),
    .log_f32 = DISP_CPU_FN(log_f32),
    .tanh_f32 = DISP_CPU_FN(tanh_f32),
    .sigmoid_f32 = DISP_CPU_FN(sigmoid_f32),
    .softmax_lastdim_f32 = DISP_CPU_FN(softmax_lastdim_f32),
    .softmax_inner_f32 = DISP_CPU_FN(softmax_inner_f32),
    .softmax_backward_lastdim_f32 = DISP_CPU_FN(softmax_backward_lastdim_f32),
    .sum_f32 = DISP_CPU_FN(sum_f32),
    .gelu_f32 = DISP_CPU_FN(gelu_f32),
    .gelu_backward_f32 = DISP_CPU_FN(gelu_backward_f32),
    .gemm_nt_f32 = DISP_CPU_GEMM_NT,
    .threshold_backward_f32 = DISP_CPU_FN(threshold_backward_f32),
    .select_f32 = DISP_CPU_FN(select_f32),
    .max_pool2x2_f32 = DISP_CPU_FN(max_pool2x2_f32),
    .max_pool2x2_backward_f32 = DISP_CPU_FN(max_pool2x2_backward_f32),
    .conv_small_forward_f32 = DISP_CPU_CONV_SMALL_FORWARD,
    .conv_small_weight_grad_f32 = DISP_CPU_CONV_SMALL_WEIGHT_GRAD,
    .layer_norm_rows_f32 = DISP_CPU_FN(layer_norm_rows_f32),
    .layer_norm_backward_rows_f32 = DISP_CPU_FN(layer_norm_backward_rows_f32),
    .layer_norm_param_grads_f32 = DISP_CPU_FN(layer_norm_param_grads_f32),
};
