/*
 * formulas_norm.c - derivatives of embedding and layer norm and of their
 * backward operators (1.13's derivatives.yaml: embedding_backward,
 * embedding_dense_double_backward, native_layer_norm_backward,
 * layer_norm_double_backward). Every step is a dispatched operator, so
 * with create_graph the backward is recorded too.
 */
#include "formula.h"

#define MAX_DIMS 64

/* A chain of operator calls: STEP(st, call) runs call while st is OK. */
#define STEP(st, call)                  \
  do {                                  \
    if ((st) == DISP_OK) (st) = (call); \
  } while (0)

/* ---- embedding ---------------------------------------------------------------- */

/* embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse):
 * weight gets embedding_backward(grad, indices, weight.size(0), ...),
 * which for dense gradients is embedding_dense_backward. */
AG_BACKWARD(embedding_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  if (ag_bool(c, 4))
    return disp_set_error(DISP_ERR_INVALID_ARG, "embedding: sparse gradients are not supported by libdispatch");
  int nd = 0;
  const int64_t *ws = ag_input_sizes(c, 0, &nd);
  return disp_aten_embedding_dense_backward(g[0], ag_saved(c, 0), nd > 0 ? ws[0] : 0, ag_int(c, 2), ag_bool(c, 3),
                                            &out[0]);
}

/* embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
 * scale): grad_output gets grad's rows picked by indices (the embedding
 * of grad), zero where the index is padding_idx. As in 1.13 the
 * frequency scaling is not applied here. */
AG_BACKWARD(embedding_dense_double_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *indices = ag_saved(c, 0), *rows = NULL;
  int64_t padding_idx = ag_int(c, 3);
  disp_status st = disp_aten_embedding(g[0], indices, -1, false, false, &rows);
  if (st != DISP_OK || padding_idx < 0) {
    out[0] = rows;
    return st;
  }
  disp_tensor *hit = NULL, *hit1 = NULL, *zero = NULL;
  STEP(st, disp_aten_eq_Scalar(indices, disp_scalar_int(padding_idx), &hit));
  STEP(st, disp_aten_unsqueeze(hit, -1, &hit1));
  STEP(st, ag_scalar_like(rows, disp_scalar_int(0), &zero));
  STEP(st, disp_aten_where_self(hit1, zero, rows, &out[0]));
  disp_tensor_release(hit), disp_tensor_release(hit1), disp_tensor_release(zero), disp_tensor_release(rows);
  return st;
}

/* ---- native_layer_norm ---------------------------------------------------------- */

/* native_layer_norm(input, normalized_shape, weight, bias, eps): input,
 * weight, bias get native_layer_norm_backward(grad, input,
 * normalized_shape, mean, rstd, weight, bias, grad_input_mask); nothing
 * when only mean or rstd got a gradient (1.13: grad.defined() ? ... : ()). */
AG_BACKWARD(native_layer_norm_grad) {
  if (!g[0]) return DISP_OK;
  bool mask[3] = {ag_needs(c, 0), ag_needs(c, 1), ag_needs(c, 2)};
  return disp_aten_native_layer_norm_backward(g[0], ag_saved(c, 0), ag_int_list(c, 1), ag_saved(c, 3), ag_saved(c, 4),
                                              ag_saved(c, 1), ag_saved(c, 2), (disp_bool_list){mask, 3}, &out[0],
                                              &out[1], &out[2]);
}

/* What layer_norm_double_backward works with: the normalized input and
 * its rows' geometry. */
typedef struct ln_ctx {
  disp_tensor *gy, *x, *w, *rstd, *xhat;
  int64_t dims[MAX_DIMS];
  size_t ndims;
  double inv_n; /* 1 / N */
  disp_int_list ns;
} ln_ctx;

/* sum over the normalized dims, kept as size 1 */
static disp_status row_sum(const ln_ctx *l, disp_tensor *t, disp_tensor **out) {
  disp_opt_int_list dl = {{l->dims, l->ndims}, true};
  return disp_aten_sum_dim_IntList(t, dl, true, -1, out);
}

static disp_status row_mean(const ln_ctx *l, disp_tensor *t, disp_tensor **out) {
  disp_tensor *s = NULL;
  disp_status st = row_sum(l, t, &s);
  STEP(st, disp_aten_mul_Scalar(s, disp_scalar_double(l->inv_n), out));
  disp_tensor_release(s);
  return st;
}

/* a * b, released by the caller */
static disp_status mul(disp_tensor *a, disp_tensor *b, disp_tensor **out) { return disp_aten_mul_Tensor(a, b, out); }

/* acc += t (acc NULL: acc = t); t is consumed. */
static disp_status accumulate(disp_tensor **acc, disp_tensor *t, disp_status st) {
  if (st != DISP_OK || !*acc) {
    if (st == DISP_OK) *acc = t;
    else disp_tensor_release(t);
    return st;
  }
  disp_tensor *s = NULL;
  st = disp_aten_add_Tensor(*acc, t, disp_scalar_int(1), &s);
  disp_tensor_release(*acc), disp_tensor_release(t);
  *acc = s;
  return st;
}

/* J v = rstd (v - mean(v) - xhat mean(xhat v)): v times the Jacobian of
 * xhat with respect to x (symmetric), row by row. */
static disp_status jac(const ln_ctx *l, disp_tensor *v, disp_tensor **out) {
  disp_tensor *t[5] = {0};
  disp_status st = DISP_OK;
  STEP(st, row_mean(l, v, &t[0]));
  STEP(st, mul(l->xhat, v, &t[1]));
  STEP(st, row_mean(l, t[1], &t[2]));
  STEP(st, mul(l->xhat, t[2], &t[3]));
  STEP(st, disp_aten_sub_Tensor(v, t[0], disp_scalar_int(1), &t[4]));
  disp_tensor_release(t[0]), t[0] = NULL;
  STEP(st, disp_aten_sub_Tensor(t[4], t[3], disp_scalar_int(1), &t[0]));
  STEP(st, mul(l->rstd, t[0], out));
  for (int i = 0; i < 5; i++) disp_tensor_release(t[i]);
  return st;
}

/* The input's gradient from ggx = a, with c = g - mean(g), g = gy * w:
 * rstd^2 / N (-<a,c> xhat + 3 <a,xhat> <xhat,c> xhat / N
 *             - <xhat,c> (a - mean(a)) - <a,xhat> c),
 * <,> sums over a row. (mean and rstd vary with x: this is the derivative
 * of rstd (g - mean(g) - xhat mean(xhat g)) through them.) */
static disp_status input_from_ggx(const ln_ctx *l, disp_tensor *a, disp_tensor *gw, disp_tensor **out) {
  disp_tensor *t[16] = {0};
  disp_status st = DISP_OK;
  STEP(st, row_mean(l, gw, &t[0]));
  STEP(st, disp_aten_sub_Tensor(gw, t[0], disp_scalar_int(1), &t[1])); /* c */
  STEP(st, mul(a, t[1], &t[2]));
  STEP(st, row_sum(l, t[2], &t[3])); /* <a,c> */
  STEP(st, mul(a, l->xhat, &t[4]));
  STEP(st, row_sum(l, t[4], &t[5])); /* <a,xhat> */
  STEP(st, mul(l->xhat, t[1], &t[6]));
  STEP(st, row_sum(l, t[6], &t[7])); /* <xhat,c> */
  STEP(st, mul(t[5], t[7], &t[8]));
  STEP(st, disp_aten_mul_Scalar(t[8], disp_scalar_double(3 * l->inv_n), &t[9]));
  STEP(st, disp_aten_sub_Tensor(t[9], t[3], disp_scalar_int(1), &t[10])); /* 3<a,xhat><xhat,c>/N - <a,c> */
  STEP(st, mul(t[10], l->xhat, &t[11]));
  STEP(st, row_mean(l, a, &t[12]));
  STEP(st, disp_aten_sub_Tensor(a, t[12], disp_scalar_int(1), &t[13])); /* a - mean(a) */
  STEP(st, mul(t[7], t[13], &t[14]));
  STEP(st, disp_aten_sub_Tensor(t[11], t[14], disp_scalar_int(1), &t[15]));
  disp_tensor_release(t[0]), t[0] = NULL;
  disp_tensor_release(t[2]), t[2] = NULL;
  disp_tensor_release(t[4]), t[4] = NULL;
  disp_tensor_release(t[6]), t[6] = NULL;
  STEP(st, mul(t[5], t[1], &t[0]));
  STEP(st, disp_aten_sub_Tensor(t[15], t[0], disp_scalar_int(1), &t[2]));
  STEP(st, mul(l->rstd, l->rstd, &t[4]));
  STEP(st, disp_aten_mul_Scalar(t[4], disp_scalar_double(l->inv_n), &t[6]));
  STEP(st, mul(t[6], t[2], out));
  for (int i = 0; i < 16; i++) disp_tensor_release(t[i]);
  return st;
}

/* grad_out's gradient: w J(ggx) + xhat ggw + ggb (each when present). */
static disp_status grad_out_grad(const ln_ctx *l, disp_tensor *jgg, disp_tensor *ggw, disp_tensor *ggb,
                                 disp_tensor **out) {
  disp_tensor *acc = NULL, *t = NULL;
  disp_status st = DISP_OK;
  if (jgg) {
    if (l->w) st = mul(l->w, jgg, &t);
    else t = disp_tensor_retain(jgg);
    st = accumulate(&acc, t, st);
  }
  if (ggw && st == DISP_OK) {
    t = NULL, st = mul(l->xhat, ggw, &t);
    st = accumulate(&acc, t, st);
  }
  if (ggb && st == DISP_OK) {
    disp_int_list full = {disp_tensor_sizes(l->gy), (size_t)disp_tensor_ndim(l->gy)};
    t = NULL, st = disp_aten_expand(ggb, full, false, &t);
    st = accumulate(&acc, t, st);
  }
  if (st != DISP_OK) disp_tensor_release(acc), acc = NULL;
  *out = acc;
  return st;
}

static disp_status ln_ctx_init(ag_ctx *c, ln_ctx *l) {
  l->gy = ag_saved(c, 0), l->x = ag_saved(c, 1), l->w = ag_saved(c, 4), l->rstd = ag_saved(c, 3), l->xhat = NULL;
  l->ns = ag_int_list(c, 2);
  int nd = disp_tensor_ndim(l->x);
  l->ndims = l->ns.len <= MAX_DIMS ? l->ns.len : MAX_DIMS;
  double n = 1;
  for (size_t i = 0; i < l->ndims; i++) l->dims[i] = nd - (int64_t)l->ndims + (int64_t)i, n *= (double)l->ns.data[i];
  l->inv_n = n > 0 ? 1.0 / n : 0;
  disp_tensor *d = NULL;
  disp_status st = disp_aten_sub_Tensor(l->x, ag_saved(c, 2), disp_scalar_int(1), &d);
  STEP(st, mul(d, l->rstd, &l->xhat));
  disp_tensor_release(d);
  return st;
}

/* native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd,
 * weight, bias, output_mask) -> (gx, gw, gb): grad_out, input and weight
 * get layer_norm_double_backward's gradients from ggx, ggw, ggb. That
 * formula differentiates through mean and rstd as functions of input, so
 * mean and rstd themselves (1.13: not_implemented) get none: zero here,
 * which lets create_graph reach native_layer_norm's saved mean and rstd;
 * bias gets none (1.13: Tensor()). */
AG_BACKWARD(layer_norm_double_backward) {
  ln_ctx l;
  disp_status st = ln_ctx_init(c, &l);
  disp_tensor *ggx = g[0], *ggw = l.w ? g[1] : NULL, *ggb = g[2], *jgg = NULL, *gg = NULL;
  if (ggx) STEP(st, jac(&l, ggx, &jgg));
  if (ag_needs(c, 0)) STEP(st, grad_out_grad(&l, jgg, ggw, ggb, &out[0]));
  if (ag_needs(c, 1)) { /* input: from ggx, and J(gy ggw) from ggw */
    disp_tensor *acc = NULL, *t = NULL, *u = NULL;
    if (ggx) {
      if (l.w) STEP(st, mul(l.gy, l.w, &gg));
      STEP(st, input_from_ggx(&l, ggx, l.w ? gg : l.gy, &t));
      st = accumulate(&acc, t, st), t = NULL;
    }
    if (ggw) {
      STEP(st, mul(l.gy, ggw, &u));
      STEP(st, jac(&l, u, &t));
      st = accumulate(&acc, t, st), t = NULL;
      disp_tensor_release(u);
    }
    if (st == DISP_OK) out[1] = acc;
    else disp_tensor_release(acc);
  }
  if (ag_needs(c, 4) && l.w && jgg) { /* weight: sum over rows of gy J(ggx) */
    disp_tensor *t = NULL;
    STEP(st, mul(l.gy, jgg, &t));
    STEP(st, ag_sum_to(t, l.ns.data, (int)l.ns.len, &out[4]));
    disp_tensor_release(t);
  }
  disp_tensor_release(jgg), disp_tensor_release(gg), disp_tensor_release(l.xhat);
  return st;
}
