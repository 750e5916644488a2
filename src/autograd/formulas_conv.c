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
AG_BACKWARD(convolution_backward) {
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
AG_BACKWARD(convolution_backward_backward) {
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
AG_BACKWARD(max_pool2d_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  return disp_aten_max_pool2d_with_indices_backward(g[0], ag_saved(c, 0), ag_int_list(c, 1), ag_int_list(c, 2),
                                                    ag_int_list(c, 3), ag_int_list(c, 4), ag_bool(c, 5),
                                                    ag_saved(c, 1), out);
}

/* Note [Gathering through the pooling windows]
 * 1.13's max_pool_double_backward(grad, indices, 2) is grad, flattened per
 * plane, gathered at indices. This library has no gather; but each index
 * names a place inside its output position's window, so the gather is,
 * over the kH * kW offsets of a window, where(index == the flat position at
 * that offset, grad at that offset, what came before): one strided slice of
 * (padded) grad per offset, no bigger than the output. Every step is a
 * differentiable operator, so a further backward works too. */

/* The pooling arguments of max_pool2d_with_indices_backward (positions
 * 2..5) per spatial dim, as 1.13's max_pool2d expands them: one value is
 * both dims', an empty stride is the kernel size. */
typedef struct pool_args {
  int64_t k[2], s[2], p[2], d[2];
} pool_args;

static int64_t pick(disp_int_list l, int i, int64_t dflt) {
  return l.len == 0 ? dflt : l.len == 1 ? l.data[0] : l.data[i];
}

static pool_args read_pool_args(ag_ctx *c) {
  pool_args a;
  disp_int_list k = ag_int_list(c, 2), s = ag_int_list(c, 3), p = ag_int_list(c, 4), d = ag_int_list(c, 5);
  for (int i = 0; i < 2; i++) {
    a.k[i] = pick(k, i, 1);
    a.s[i] = pick(s, i, a.k[i]);
    a.p[i] = pick(p, i, 0);
    a.d[i] = pick(d, i, 1);
  }
  return a;
}

/* t with `before` and `after` places of value v added along dim; a new
 * reference (t itself when there are none). */
static disp_status pad_dim(disp_tensor *t, int dim, int64_t before, int64_t after, disp_scalar v, disp_tensor **out) {
  if (!before && !after) {
    *out = disp_tensor_retain(t);
    return DISP_OK;
  }
  int nd = disp_tensor_ndim(t);
  int64_t sizes[8];
  for (int i = 0; i < nd; i++) sizes[i] = disp_tensor_sizes(t)[i];
  disp_device dev = disp_tensor_device(t);
  disp_opt_device od = {(int32_t)dev.type, dev.index, true};
  disp_tensor *parts[3] = {0}, *fill[2] = {0};
  int64_t n[2] = {before, after};
  size_t np = 0;
  disp_status st = DISP_OK;
  for (int side = 0; side < 2 && st == DISP_OK; side++) {
    if (side == 1) parts[np++] = t;
    if (!n[side]) continue;
    sizes[dim] = n[side];
    st = disp_aten_full((disp_int_list){sizes, (size_t)nd}, v, (int32_t)disp_tensor_dtype(t), -1, od,
                        (disp_opt_bool){false, false}, &fill[side]);
    parts[np++] = fill[side];
  }
  if (st == DISP_OK) st = disp_aten_cat((disp_tensor_list){parts, np}, dim, out);
  disp_tensor_release(fill[0]), disp_tensor_release(fill[1]);
  return st;
}

/* t padded in its last two dims: pad[i] before dim i's values, to total[i]. */
static disp_status pad_plane(disp_tensor *t, const int64_t pad[2], const int64_t total[2], disp_scalar v,
                             disp_tensor **out) {
  int nd = disp_tensor_ndim(t);
  const int64_t *z = disp_tensor_sizes(t);
  disp_tensor *rows = NULL;
  disp_status st = pad_dim(t, nd - 2, pad[0], total[0] - z[nd - 2] - pad[0], v, &rows);
  if (st == DISP_OK) st = pad_dim(rows, nd - 1, pad[1], total[1] - z[nd - 1] - pad[1], v, out);
  disp_tensor_release(rows);
  return st;
}

/* t[..., r0::sH, c0::sW] for out places each way (the last two dims). */
static disp_status window_offset(disp_tensor *t, const int64_t start[2], const int64_t step[2], const int64_t n[2],
                                 disp_tensor **out) {
  int nd = disp_tensor_ndim(t);
  disp_tensor *r = NULL;
  disp_status st = disp_aten_slice_Tensor(t, nd - 2, (disp_opt_int){start[0], true},
                                          (disp_opt_int){start[0] + (n[0] - 1) * step[0] + 1, true}, step[0], &r);
  if (st == DISP_OK)
    st = disp_aten_slice_Tensor(r, nd - 1, (disp_opt_int){start[1], true},
                                (disp_opt_int){start[1] + (n[1] - 1) * step[1] + 1, true}, step[1], out);
  disp_tensor_release(r);
  return st;
}

/* The input plane's flat positions (int64, H x W), padded with -1, which
 * no index equals. */
static disp_status positions(disp_tensor *like, const int64_t hw[2], const int64_t pad[2], const int64_t total[2],
                             disp_tensor **out) {
  disp_device dev = disp_tensor_device(like);
  disp_tensor *flat = NULL, *plane = NULL;
  disp_status st = disp_aten_arange(disp_scalar_int(hw[0] * hw[1]), DISP_DTYPE_INT64, -1,
                                    (disp_opt_device){(int32_t)dev.type, dev.index, true},
                                    (disp_opt_bool){false, false}, &flat);
  if (st == DISP_OK) st = disp_aten_view(flat, (disp_int_list){hw, 2}, &plane);
  if (st == DISP_OK) st = pad_plane(plane, pad, total, disp_scalar_int(-1), out);
  disp_tensor_release(flat), disp_tensor_release(plane);
  return st;
}

/* acc = where(pos == indices, g at the offset, acc) for one window offset. */
static disp_status take_offset(disp_tensor *gp, disp_tensor *pos, disp_tensor *indices, const int64_t start[2],
                               const pool_args *a, const int64_t n[2], disp_tensor **acc) {
  disp_tensor *gk = NULL, *pk = NULL, *hit = NULL, *next = NULL;
  disp_status st = window_offset(gp, start, a->s, n, &gk);
  if (st == DISP_OK) st = window_offset(pos, start, a->s, n, &pk);
  if (st == DISP_OK) st = disp_aten_eq_Tensor(pk, indices, &hit);
  if (st == DISP_OK) st = disp_aten_where_self(hit, gk, *acc, &next);
  if (st == DISP_OK) disp_tensor_release(*acc), *acc = next;
  disp_tensor_release(gk), disp_tensor_release(pk), disp_tensor_release(hit);
  return st;
}

/* 1.13's max_pool_double_backward(grad, indices, 2): the gradient at each
 * pooled position is grad at the input position its index names (Note
 * [Gathering through the pooling windows]). */
static disp_status max_pool_double_backward(ag_ctx *c, disp_tensor *grad, disp_tensor *indices, disp_tensor **out) {
  int nd = disp_tensor_ndim(indices);
  if (nd < 3 || nd > 4 || disp_tensor_ndim(grad) != nd)
    return disp_aten_zeros_like(indices, (int32_t)disp_tensor_dtype(grad), -1, (disp_opt_device){0},
                                (disp_opt_bool){0}, -1, out);
  pool_args a = read_pool_args(c);
  int64_t hw[2], n[2], total[2];
  for (int i = 0; i < 2; i++) {
    hw[i] = disp_tensor_sizes(grad)[nd - 2 + i];
    n[i] = disp_tensor_sizes(indices)[nd - 2 + i];
    int64_t reach = (a.k[i] - 1) * a.d[i] + (n[i] - 1) * a.s[i] + 1; /* ceil_mode windows may pass the padding */
    total[i] = hw[i] + 2 * a.p[i] > reach ? hw[i] + 2 * a.p[i] : reach;
  }
  disp_tensor *gp = NULL, *pos = NULL, *acc = NULL;
  disp_status st = pad_plane(grad, a.p, total, disp_scalar_int(0), &gp);
  if (st == DISP_OK) st = positions(grad, hw, a.p, total, &pos);
  if (st == DISP_OK) st = ag_zeros_sized(grad, disp_tensor_sizes(indices), nd, &acc);
  for (int64_t kh = 0; kh < a.k[0] && st == DISP_OK; kh++)
    for (int64_t kw = 0; kw < a.k[1] && st == DISP_OK; kw++)
      st = take_offset(gp, pos, indices, (const int64_t[]){kh * a.d[0], kw * a.d[1]}, &a, n, &acc);
  if (st == DISP_OK) *out = acc, acc = NULL;
  disp_tensor_release(gp), disp_tensor_release(pos), disp_tensor_release(acc);
  return st;
}

/* max_pool2d_with_indices_backward(grad_output, self, ..., indices):
 *   grad_output: max_pool_double_backward(grad, indices, 2)
 *   self: zeros_like(self) */
AG_BACKWARD(max_pool2d_backward_backward) {
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = max_pool_double_backward(c, g[0], ag_saved(c, 0), &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) st = ag_zeros_like_input(c, 1, &out[1]);
  return st;
}
