/*
 * formulas_linalg.c - derivatives of the matrix products (1.13's
 * derivatives.yaml: mm_mat1_backward / mm_mat2_backward for mm and addmm,
 * bmm).
 */
#include "formula.h"

/* 1.13's maybe_multiply: t itself (retained) when s is 1, else t * s. */
static disp_status maybe_multiply(disp_tensor *t, disp_scalar s, disp_tensor **out) {
  if (disp_scalar_to_double(s) == 1.0) {
    *out = disp_tensor_retain(t);
    return DISP_OK;
  }
  return disp_aten_mul_Scalar(t, s, out);
}

/* t.t() when tr, else t retained. */
static disp_status maybe_t(disp_tensor *t, int tr, disp_tensor **out) {
  if (tr) return disp_aten_t(t, out);
  *out = disp_tensor_retain(t);
  return DISP_OK;
}

/* maybe_multiply(op(a) @ op(b), alpha), transposed when tr; op(x) is x.t()
 * when its flag is set. */
static disp_status product(disp_tensor *a, int ta, disp_tensor *b, int tb, int tr, disp_scalar alpha,
                           disp_tensor **out) {
  disp_tensor *at = NULL, *bt = NULL, *p = NULL, *pt = NULL;
  disp_status st = maybe_t(a, ta, &at);
  if (st == DISP_OK) st = maybe_t(b, tb, &bt);
  if (st == DISP_OK) st = disp_aten_mm(at, bt, &p);
  if (st == DISP_OK) st = maybe_t(p, tr, &pt);
  if (st == DISP_OK) st = maybe_multiply(pt, alpha, out);
  disp_tensor_release(at), disp_tensor_release(bt), disp_tensor_release(p), disp_tensor_release(pt);
  return st;
}

/* Whether the j-th input was a column-major matrix (strides (1, rows)) at
 * forward time, the layout 1.13's mm_mat*_backward keeps for its gradient
 * (an nn.Linear weight.t()). It reads the input's recorded geometry, as
 * 1.13 reads its saved sym_strides, so the input itself need not be saved. */
static int column_major(ag_ctx *c, int j) {
  int nd;
  const int64_t *z = ag_input_sizes(c, j, &nd), *s = ag_input_strides(c, j);
  return nd == 2 && s && s[0] == 1 && s[1] == z[0];
}

/* mm_mat1_backward(grad, mat2, mat1 geometry, alpha): grad @ mat2.t(),
 * computed as (mat2 @ grad.t()).t() when mat1 (input j) was column-major. */
static disp_status mat1_backward(ag_ctx *c, int j, disp_tensor *grad, disp_tensor *mat2, disp_scalar alpha,
                                 disp_tensor **out) {
  if (column_major(c, j)) return product(mat2, 0, grad, 1, 1, alpha, out);
  return product(grad, 0, mat2, 1, 0, alpha, out);
}

/* mm_mat2_backward(grad, mat1, mat2 geometry, alpha): mat1.t() @ grad,
 * computed as (grad.t() @ mat1).t() when mat2 (input j) was column-major. */
static disp_status mat2_backward(ag_ctx *c, int j, disp_tensor *grad, disp_tensor *mat1, disp_scalar alpha,
                                 disp_tensor **out) {
  if (column_major(c, j)) return product(grad, 1, mat1, 0, 1, alpha, out);
  return product(mat1, 1, grad, 0, 0, alpha, out);
}

/* mm: self: mm_mat1_backward(grad, mat2, self geometry, 1);
 * mat2: mm_mat2_backward(grad, self, mat2 geometry, 1). Each saved matrix
 * is there only for the other's gradient (saved "self@mat2,mat2@self"). */
AG_BACKWARD(mm_backward) {
  disp_status st = DISP_OK;
  disp_scalar one = disp_scalar_int(1);
  disp_tensor *self = ag_saved(c, 0), *mat2 = ag_saved(c, 1);
  if (ag_needs(c, 0)) st = mat1_backward(c, 0, g[0], mat2, one, &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) st = mat2_backward(c, 1, g[0], self, one, &out[1]);
  return st;
}

/* addmm: self: maybe_multiply(grad, beta) (summed to self's shape by the
 * engine); mat1, mat2: as mm, times alpha. */
AG_BACKWARD(addmm_backward) {
  disp_status st = DISP_OK;
  disp_scalar beta = ag_scalar(c, 3), alpha = ag_scalar(c, 4);
  disp_tensor *mat1 = ag_saved(c, 0), *mat2 = ag_saved(c, 1);
  if (ag_needs(c, 0)) st = maybe_multiply(g[0], beta, &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) st = mat1_backward(c, 1, g[0], mat2, alpha, &out[1]);
  if (st == DISP_OK && ag_needs(c, 2)) st = mat2_backward(c, 2, g[0], mat1, alpha, &out[2]);
  return st;
}

/* a.bmm(b) with a's (ta) or b's (tb) last two dims swapped. */
static disp_status bmm_t(disp_tensor *a, int ta, disp_tensor *b, int tb, disp_tensor **out) {
  disp_tensor *at = NULL, *bt = NULL;
  disp_status st = ta ? disp_aten_transpose_int(a, 1, 2, &at) : DISP_OK;
  if (st == DISP_OK && tb) st = disp_aten_transpose_int(b, 1, 2, &bt);
  if (st == DISP_OK) st = disp_aten_bmm(ta ? at : a, tb ? bt : b, out);
  disp_tensor_release(at), disp_tensor_release(bt);
  return st;
}

/* bmm: self: grad.bmm(mat2.transpose(1, 2)); mat2: self.transpose(1, 2).bmm(grad). */
AG_BACKWARD(bmm_backward) {
  disp_status st = DISP_OK;
  if (ag_needs(c, 0)) st = bmm_t(g[0], 0, ag_saved(c, 1), 1, &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) st = bmm_t(ag_saved(c, 0), 1, g[0], 0, &out[1]);
  return st;
}
