/*
 * formulas_linalg.c - derivatives of the matrix products (1.13's
 * derivatives.yaml: mm_mat1_backward / mm_mat2_backward, addmm).
 */
#include "formula.h"

/* a.t() @ b or a @ b.t(), times alpha when it is not 1. */
static disp_status product(disp_tensor *a, int ta, disp_tensor *b, int tb, disp_scalar alpha, disp_tensor **out) {
  disp_tensor *at = NULL, *bt = NULL, *p = NULL;
  disp_status st = DISP_OK;
  if (ta) st = disp_aten_t(a, &at);
  if (st == DISP_OK && tb) st = disp_aten_t(b, &bt);
  if (st == DISP_OK) st = disp_aten_mm(ta ? at : a, tb ? bt : b, &p);
  disp_tensor_release(at);
  disp_tensor_release(bt);
  if (st != DISP_OK) return st;
  if (disp_scalar_to_double(alpha) == 1.0) {
    *out = p;
    return DISP_OK;
  }
  st = disp_aten_mul_Scalar(p, alpha, out);
  disp_tensor_release(p);
  return st;
}

/* mm: self: grad @ mat2.t(); mat2: self.t() @ grad. */
static disp_status mm_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  disp_status st = DISP_OK;
  disp_scalar one = disp_scalar_int(1);
  if (ag_needs(c, 0)) st = product(g[0], 0, ag_saved(c, 1), 1, one, &out[0]);
  if (st == DISP_OK && ag_needs(c, 1)) st = product(ag_saved(c, 0), 1, g[0], 0, one, &out[1]);
  return st;
}

/* addmm: self: grad * beta (summed to self's shape by the engine);
 * mat1: grad @ mat2.t() * alpha; mat2: mat1.t() @ grad * alpha. */
static disp_status addmm_backward(ag_ctx *c, disp_tensor *const *g, disp_tensor **out) {
  disp_status st = DISP_OK;
  disp_scalar beta = ag_scalar(c, 3), alpha = ag_scalar(c, 4);
  if (ag_needs(c, 0)) {
    if (disp_scalar_to_double(beta) == 1.0) out[0] = disp_tensor_retain(g[0]);
    else st = disp_aten_mul_Scalar(g[0], beta, &out[0]);
  }
  if (st == DISP_OK && ag_needs(c, 1)) st = product(g[0], 0, ag_saved(c, 1), 1, alpha, &out[1]);
  if (st == DISP_OK && ag_needs(c, 2)) st = product(ag_saved(c, 0), 1, g[0], 0, alpha, &out[2]);
  return st;
}

static const ag_formula formulas[] = {
    {"aten::mm", "MmBackward0", "self,mat2", "self,mat2", mm_backward, NULL},
    {"aten::addmm", "AddmmBackward0", "self,mat1,mat2", "mat1,mat2", addmm_backward, NULL},
};

const ag_formula_set disp__ag_formulas_linalg = {formulas, sizeof formulas / sizeof *formulas};
