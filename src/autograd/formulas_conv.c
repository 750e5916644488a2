/*
 * formulas_conv.c - derivatives of convolution and max pooling, and of
 * their backward operators (1.13's derivatives.yaml). The backward calls
 * aten::convolution_backward and aten::max_pool2d_with_indices_backward
 * through the dispatcher, as 1.13 does, so a backend's own kernel for them
 * is the one autograd runs.
 */
#include "formula.h"

/* The arguments convolution and convolution_backward share, read from the
 * forward call at positions stride_pos.. (stride, padding, dilation,
 * transposed, output_padding, groups). */
typedef struct conv_args {
  disp_int_list stride, padding, dilation, output_padding;
  bool transposed;
  int64_t groups;
} conv_args;

static conv_args read_conv_args(ag_ctx *c, int stride_pos) {
  conv_args a;
  a.stride = ag_int_list(c, stride_pos);
  a.padding = ag_int_list(c, stride_pos + 1);
  a.dilation = ag_int_list(c, stride_pos + 2);
  a.transposed = ag_bool(c, stride_pos + 3);
  a.output_padding = ag_int_list(c, stride_pos + 4);
  a.groups = ag_int(c, stride_pos + 5);
  return a;
}

/* convolution_backward(grad_output, input, weight, bias_sizes, ...,
 * output_mask) with the forward's arguments a. */
static disp_status conv_backward(disp_tensor *go, disp_tensor *input, disp_tensor *weight, disp_opt_int_list bias_sizes,
                                 const conv_args *a, const bool mask[3], disp_tensor **gi, disp_tensor **gw,
                                 disp_tensor **gb) {
  disp_bool_list m = {mask, 3};
  return disp_aten_convolution_backward(go, input, weight, bias_sizes, a->stride, a->padding, a->dilation,
                                        a->transposed, a->output_padding, a->groups, m, gi, gw, gb);
}

/* convolution: input, weight, bias: convolution_backward(grad, input,
 * weight, bias->sizes(), stride, padding, dilation, transposed,
 * output_padding, groups, grad_input_mask). The mask asks only for the
 * gradients needed; bias_sizes is None when bias was None. */
static disp_status convolution_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  conv_args a = read_conv_args(c, 3);
  bool mask[3] = {ag_needs(c, 0), ag_needs(c, 1), ag_needs(c, 2)};
  int nd = 0;
  const int64_t *bs = ag_input_sizes(c, 2, &nd); /* no geometry: bias was None */
  disp_opt_int_list bias_sizes = {{bs, (size_t)nd}, nd > 0};
  return conv_backward(g[0], ag_saved(c, 0), ag_saved(c, 1), bias_sizes, &a, mask, &out[0], &out[1], &out[2]);
}

/* acc += t (acc NULL: acc = t); t is consumed. */
static disp_status accumulate(disp_tensor **acc, disp_tensor *t) {
  if (!*acc) {
    *acc = t;
    return DISP_OK;
  }
  disp_tensor *s = NULL;
  disp_status st = disp_aten_add_Tensor(*acc, t, disp_scalar_int(1), &s);
  disp_tensor_release(*acc), disp_tensor_release(t);
  *acc = s;
  return st;
}

/* ggb.contiguous().view([1, C, 1, ...]).expand(gO.sizes()). */
static disp_status bias_term(disp_tensor *ggb, disp_tensor *go, disp_tensor **out) {
  int nd = disp_tensor_ndim(go);
  if (nd < 2 || nd > 8) return disp_aten_expand(ggb, (disp_int_list){disp_tensor_sizes(go), (size_t)nd}, false, out);
  int64_t shape[8];
  for (int d = 0; d < nd; d++) shape[d] = d == 1 ? -1 : 1;
  disp_tensor *cg = NULL, *v = NULL;
  disp_status st = disp_aten_contiguous(ggb, DISP_MEMORY_FORMAT_CONTIGUOUS, &cg);
  if (st == DISP_OK) st = disp_aten_view(cg, (disp_int_list){shape, (size_t)nd}, &v);
  if (st == DISP_OK) st = disp_aten_expand(v, (disp_int_list){disp_tensor_sizes(go), (size_t)nd}, false, out);
  disp_tensor_release(cg), disp_tensor_release(v);
  return st;
}

/* The gradient of grad_output: conv(ggI, weight) + conv(input, ggW) + ggb,
 * each term present only when its grad is. */
static disp_status conv_ggo(disp_tensor *const *g, disp_tensor *input, disp_tensor *weight, const conv_args *a,
                            disp_tensor *go, disp_tensor **out) {
  disp_tensor *acc = NULL, *t = NULL;
  disp_status st = DISP_OK;
  if (g[0] && (st = disp_aten_convolution(g[0], weight, NULL, a->stride, a->padding, a->dilation, a->transposed,
                                           a->output_padding, a->groups, &t)) == DISP_OK)
    st = accumulate(&acc, t);
  if (st == DISP_OK && g[1] &&
      (st = disp_aten_convolution(input, g[1], NULL, a->stride, a->padding, a->dilation, a->transposed,
                                  a->output_padding, a->groups, &t)) == DISP_OK)
    st = accumulate(&acc, t);
  if (st == DISP_OK && g[2] && (st = bias_term(g[2], go, &t)) == DISP_OK) st = accumulate(&acc, t);
  if (st != DISP_OK) disp_tensor_release(acc), acc = NULL;
  *out = acc;
  return st;
}

/* convolution_backward: 1.13's _convolution_double_backward(ggI, ggW, ggb,
 * gO, weight, input, ...), written through the operator's own duality: the
 * backward is bilinear, so
 *   grad_output: conv(ggI, weight) + conv(input, ggW) + ggb
 *   input: convolution_backward(gO, input, ggW, mask [1,0,0]).grad_input
 *   weight: convolution_backward(gO, ggI, weight, mask [0,1,0]).grad_weight
 * (the same values; every piece dispatched, so differentiable again). */
static disp_status convolution_backward_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  disp_tensor *go = ag_saved(c, 0), *input = ag_saved(c, 1), *weight = ag_saved(c, 2), *unused = NULL;
  conv_args a = read_conv_args(c, 4);
  disp_opt_int_list none = {{NULL, 0}, false};
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = conv_ggo(g, input, weight, &a, go, &out[0]);
  if (st == DISP_OK && ag_needs(c, 1) && g[1]) {
    static const bool gi_only[3] = {true, false, false};
    st = conv_backward(go, input, g[1], none, &a, gi_only, &out[1], &unused, &unused);
  }
  if (st == DISP_OK && ag_needs(c, 2) && g[0]) {
    static const bool gw_only[3] = {false, true, false};
    st = conv_backward(go, g[0], weight, none, &a, gw_only, &unused, &out[2], &unused);
  }
  disp_tensor_release(unused);
  return st;
}

/* max_pool2d_with_indices: self: max_pool2d_with_indices_backward(grad,
 * self, kernel_size, stride, padding, dilation, ceil_mode, result1). */
static disp_status max_pool2d_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  if (!ag_needs(c, 0)) return DISP_OK;
  return disp_aten_max_pool2d_with_indices_backward(g[0], ag_saved(c, 0), ag_int_list(c, 1), ag_int_list(c, 2),
                                                    ag_int_list(c, 3), ag_int_list(c, 4), ag_bool(c, 5),
                                                    ag_saved(c, 1), out);
}

/* grad.view(lead..., -1).gather(-1, indices.view(lead..., -1)), as a
 * select through a one-hot mask of the flattened plane (this library has no
 * aten::gather): where(indices[..., None] == arange(HW), grad[..., None, :], 0).sum(-1). */
static disp_status gather_plane(disp_tensor *grad, disp_tensor *iv, int64_t hw, disp_tensor **out) {
  disp_tensor *ar = NULL, *iu = NULL, *hot = NULL, *gu = NULL, *zero = NULL, *sel = NULL;
  disp_opt_device dev = {(int32_t)disp_tensor_device(grad).type, disp_tensor_device(grad).index, true};
  disp_opt_bool nopin = {false, false};
  int64_t last = -1;
  disp_opt_int_list dl = {{&last, 1}, true};
  disp_status st = disp_aten_arange(disp_scalar_int(hw), (int32_t)disp_tensor_dtype(iv), -1, dev, nopin, &ar);
  if (st == DISP_OK) st = disp_aten_unsqueeze(iv, -1, &iu);
  if (st == DISP_OK) st = disp_aten_eq_Tensor(iu, ar, &hot);
  if (st == DISP_OK) st = disp_aten_unsqueeze(grad, -2, &gu);
  if (st == DISP_OK) st = disp_aten_scalar_tensor(disp_scalar_int(0), (int32_t)disp_tensor_dtype(grad), -1, dev, nopin, &zero);
  if (st == DISP_OK) st = disp_aten_where_self(hot, gu, zero, &sel);
  if (st == DISP_OK) st = disp_aten_sum_dim_IntList(sel, dl, false, -1, out);
  disp_tensor_release(ar), disp_tensor_release(iu), disp_tensor_release(hot);
  disp_tensor_release(gu), disp_tensor_release(zero), disp_tensor_release(sel);
  return st;
}

/* 1.13's max_pool_double_backward(grad, indices, 2): the gradient at each
 * pooled position is grad at the input position its index names. */
static disp_status max_pool_double_backward(disp_tensor *grad, disp_tensor *indices, disp_tensor **out) {
  int nd = disp_tensor_ndim(indices);
  if (nd < 2 || nd > 8 || disp_tensor_ndim(grad) != nd) return disp_aten_zeros_like(indices, -1, -1, (disp_opt_device){0}, (disp_opt_bool){0}, -1, out);
  int64_t size[8];
  for (int d = 0; d < nd - 2; d++) size[d] = disp_tensor_sizes(indices)[d];
  size[nd - 2] = -1;
  int64_t hw = disp_tensor_sizes(grad)[nd - 2] * disp_tensor_sizes(grad)[nd - 1];
  disp_int_list l = {size, (size_t)nd - 1}, shape = {disp_tensor_sizes(indices), (size_t)nd};
  disp_tensor *gc = NULL, *gv = NULL, *iv = NULL, *r = NULL;
  disp_status st = disp_aten_contiguous(grad, DISP_MEMORY_FORMAT_CONTIGUOUS, &gc);
  if (st == DISP_OK) st = disp_aten_reshape(gc, l, &gv);
  if (st == DISP_OK) st = disp_aten_reshape(indices, l, &iv);
  if (st == DISP_OK) st = gather_plane(gv, iv, hw, &r);
  if (st == DISP_OK) st = disp_aten_view(r, shape, out);
  disp_tensor_release(gc), disp_tensor_release(gv), disp_tensor_release(iv), disp_tensor_release(r);
  return st;
}

/* max_pool2d_with_indices_backward(grad_output, self, ..., indices):
 *   grad_output: max_pool_double_backward(grad, indices, 2)
 *   self: zeros_like(self) */
static disp_status max_pool2d_backward_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = max_pool_double_backward(g[0], ag_saved(c, 0), &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) st = ag_zeros_like_input(c, 1, &out[1]);
  return st;
}

static const ag_formula formulas[] = {
    {"aten::convolution", "ConvolutionBackward0", "input,weight,bias", "input,weight", convolution_backward, NULL},
    {"aten::convolution_backward", "ConvolutionBackwardBackward0", "grad_output,input,weight",
     "grad_output,input,weight", convolution_backward_backward, NULL},
    {"aten::max_pool2d_with_indices", "MaxPool2DWithIndicesBackward0", "self", "self,result1", max_pool2d_backward,
     "result1"},
    {"aten::max_pool2d_with_indices_backward", "MaxPool2DWithIndicesBackwardBackward0", "grad_output,self", "indices",
     max_pool2d_backward_backward, NULL},
};

const ag_formula_set disp__ag_formulas_conv = {formulas, sizeof formulas / sizeof *formulas};
