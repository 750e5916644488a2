/*
 * formulas_index.c - derivatives of the operators that take part of a
 * tensor or join tensors (1.13's derivatives.yaml: select.int,
 * slice.Tensor, cat, stack). Taking a part gives back grad placed in zeros
 * of the input's shape; joining gives each input its part of grad.
 *
 * PyTorch places grad by copying it into a view of zeros
 * (select_backward/slice_backward). Here it is put together with cat and
 * reshape instead, so that with create_graph the result stays a recorded
 * function of grad (an in-place copy into a view would need view tracking).
 */
#include "error_internal.h"
#include "formula.h"

#define MAX_DIMS 64

/* Arguments the forward would have refused (a dim out of range). */
static disp_status refused(ag_ctx *c) {
  (void)c;
  return disp__fail(DISP_ERR_INVALID_ARG, "autograd: a dimension out of range reached a backward");
}

static disp_status cat2(disp_tensor *a, disp_tensor *b, int64_t d, disp_tensor **out) {
  disp_tensor *parts[2] = {a, b};
  return disp_aten_cat((disp_tensor_list){parts, 2}, d, out);
}

/* g's elements along d spaced `step` apart (zeros between), cut to at
 * most `room` along d. */
static disp_status spread(disp_tensor *g, int64_t d, int64_t step, int64_t room, disp_tensor **out) {
  int nd = disp_tensor_ndim(g);
  const int64_t *gs = disp_tensor_sizes(g);
  int64_t len = gs[d];
  if (step == 1 || len == 0) {
    *out = disp_tensor_retain(g);
    return DISP_OK;
  }
  int64_t zs[MAX_DIMS + 1], rs[MAX_DIMS];
  for (int i = 0; i <= nd; i++) zs[i] = i <= d ? gs[i] : i == d + 1 ? step - 1 : gs[i - 1];
  for (int i = 0; i < nd; i++) rs[i] = i == d ? len * step : gs[i];
  disp_tensor *u = NULL, *z = NULL, *joined = NULL, *flat = NULL;
  disp_status st = disp_aten_unsqueeze(g, d + 1, &u);
  if (st == DISP_OK) st = ag_zeros_sized(g, zs, nd + 1, &z);
  if (st == DISP_OK) st = cat2(u, z, d + 1, &joined);
  if (st == DISP_OK) st = disp_aten_reshape(joined, (disp_int_list){rs, (size_t)nd}, &flat);
  if (st == DISP_OK) st = disp_aten_narrow(flat, d, 0, len * step < room ? len * step : room, out);
  disp_tensor_release(u), disp_tensor_release(z), disp_tensor_release(joined), disp_tensor_release(flat);
  return st;
}

/* Zeros like g but `n` long along d, appended to parts unless empty. */
static disp_status zeros_part(disp_tensor *g, int64_t d, int64_t n, disp_tensor **parts, size_t *np) {
  if (n <= 0) return DISP_OK;
  int nd = disp_tensor_ndim(g);
  int64_t zs[MAX_DIMS];
  for (int i = 0; i < nd; i++) zs[i] = i == d ? n : disp_tensor_sizes(g)[i];
  disp_status st = ag_zeros_sized(g, zs, nd, &parts[*np]);
  if (st == DISP_OK) (*np)++;
  return st;
}

/* A tensor of the j-th input's shape: zeros, with g's elements along d at
 * start, start + step, ... (g has the input's ndim). */
static disp_status embed(ag_ctx *c, disp_tensor *g, int64_t d, int64_t start, int64_t step, disp_tensor **out) {
  int nd;
  const int64_t *sizes = ag_input_sizes(c, 0, &nd);
  if (nd > MAX_DIMS || d < 0 || d >= nd) return refused(c);
  disp_tensor *parts[3] = {NULL, NULL, NULL}, *mid = NULL;
  size_t np = 0;
  disp_status st = zeros_part(g, d, start, parts, &np);
  if (st == DISP_OK) st = spread(g, d, step, sizes[d] - start, &mid);
  if (st == DISP_OK) {
    parts[np++] = mid;
    st = zeros_part(g, d, sizes[d] - start - disp_tensor_sizes(mid)[d], parts, &np);
  }
  if (st == DISP_OK && np == 1) *out = disp_tensor_retain(mid);
  else if (st == DISP_OK) st = disp_aten_cat((disp_tensor_list){parts, np}, d, out);
  for (size_t i = 0; i < np; i++) disp_tensor_release(parts[i]); /* mid is among them */
  return st;
}

/* select.int: grad placed at index along dim (1.13's select_backward). */
AG_BACKWARD(select_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  int nd;
  const int64_t *sizes = ag_input_sizes(c, 0, &nd);
  int64_t d = ag_wrap_dim(ag_int(c, 1), nd), index = ag_int(c, 2);
  if (nd == 0 || d < 0 || d >= nd) return refused(c);
  disp_tensor *u = NULL;
  disp_status st = disp_aten_unsqueeze(g[0], d, &u);
  if (st == DISP_OK) st = embed(c, u, d, index < 0 ? index + sizes[d] : index, 1, out);
  disp_tensor_release(u);
  return st;
}

/* The first index slice.Tensor took: start (None: 0), wrapped and clamped
 * to [0, size] as the forward did. */
static int64_t slice_start(ag_ctx *c, int64_t size) {
  int64_t start = ag_is_none(c, 2) ? 0 : ag_int(c, 2);
  if (start < 0) start += size;
  return start < 0 ? 0 : start > size ? size : start;
}

/* slice.Tensor: grad placed at start, start + step, ... along dim (1.13's
 * slice_backward). */
AG_BACKWARD(slice_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  int nd;
  const int64_t *sizes = ag_input_sizes(c, 0, &nd);
  int64_t d = ag_wrap_dim(ag_int(c, 1), nd), step = ag_int(c, 4);
  if (nd == 0 || d < 0 || d >= nd || step < 1) return refused(c);
  return embed(c, g[0], d, slice_start(c, sizes[d]), step, out);
}

/* cat: each input gets its part of grad along dim (narrow); a legacy empty
 * input of shape [0], which cat skipped, gets zeros of its shape. */
AG_BACKWARD(cat_backward) {
  int64_t d = ag_wrap_dim(ag_int(c, 1), disp_tensor_ndim(g[0])), offset = 0;
  disp_status st = DISP_OK;
  for (int j = 0; j < ag_num_inputs(c) && st == DISP_OK; j++) {
    int nd;
    const int64_t *sizes = ag_input_sizes(c, j, &nd);
    if (nd == 1 && sizes[0] == 0) {
      if (ag_needs(c, j)) st = ag_zeros_like_input(c, j, &out[j]);
      continue;
    }
    int64_t len = d < nd ? sizes[d] : 0;
    if (ag_needs(c, j)) st = disp_aten_narrow(g[0], d, offset, len, &out[j]);
    offset += len;
  }
  return st;
}

/* stack: input j gets grad.select(dim, j) (1.13's unbind). */
AG_BACKWARD(stack_backward) {
  int64_t d = ag_wrap_dim(ag_int(c, 1), disp_tensor_ndim(g[0]));
  disp_status st = DISP_OK;
  for (int j = 0; j < ag_num_inputs(c) && st == DISP_OK; j++)
    if (ag_needs(c, j)) st = disp_aten_select_int(g[0], d, j, &out[j]);
  return st;
}
