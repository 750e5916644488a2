/*
 * formulas_strided.c - the derivative of as_strided (1.13's
 * as_strided_backward): grad is written through the output's geometry
 * into a zero "storage", which is then read through the input's geometry.
 *
 * The input's sizes, strides and storage offset come from its geometry
 * recorded at forward time (1.13 saves self_geometry, not self, so the
 * input may be modified in place before the backward pass). Two cases of 1.13's algorithm need
 * index_add, which this library does not have: an output geometry whose
 * elements may overlap (gradients of one element add up) and an input one
 * that may (the sum is split by the count). Both are refused with an
 * error rather than answered wrongly, as is create_graph: the write into
 * the storage is an in-place copy into a view, which the engine does not
 * trace back to the storage.
 */
#include "error_internal.h"
#include "formula.h"

#define MAX_DIMS 64

typedef struct geom {
  int n;
  int64_t sizes[MAX_DIMS], strides[MAX_DIMS];
} geom;

/* 1.13's _maybe_overlapping_memory over dims of size > 1: visiting dims by
 * increasing stride, each stride must pass the span of those before. */
static int maybe_overlap(const geom *g) {
  unsigned char done[MAX_DIMS] = {0};
  int64_t span = 0;
  for (int k = 0; k < g->n; k++) {
    int best = -1;
    for (int i = 0; i < g->n; i++)
      if (!done[i] && (best < 0 || g->strides[i] < g->strides[best])) best = i;
    done[best] = 1;
    if (g->strides[best] <= span) return 1;
    span += g->strides[best] * (g->sizes[best] - 1);
  }
  return 0;
}

/* 1.13's _min_storage_size: elements a geometry reaches from offset 0. */
static int64_t min_storage(const geom *g, int64_t offset) {
  int64_t n = offset + 1;
  for (int i = 0; i < g->n; i++) n += (g->sizes[i] - 1) * g->strides[i];
  return n;
}

/* The output geometry without size-1 dims and expanded (stride 0) ones;
 * grad is squeezed and summed to match. *empty: a dim of size 0. */
static disp_status trim_output(ag_ctx *c, disp_tensor *grad, geom *out, int *empty, disp_tensor **g) {
  disp_int_list sizes = ag_int_list(c, 1), strides = ag_int_list(c, 2);
  disp_tensor *cur = disp_tensor_retain(grad);
  disp_status st = DISP_OK;
  out->n = 0;
  int64_t keep[MAX_DIMS];
  for (int i = (int)sizes.len - 1; i >= 0 && st == DISP_OK && !*empty; i--) {
    disp_tensor *next = NULL;
    if (sizes.data[i] == 0) *empty = 1;
    else if (sizes.data[i] == 1) st = disp_aten_squeeze_dim(cur, i, &next);
    else if (strides.data[i] == 0) st = disp_aten_sum_dim_IntList(cur, (disp_opt_int_list){{(int64_t[]){i}, 1}, true}, false, -1, &next);
    else keep[out->n++] = i;
    if (next) disp_tensor_release(cur), cur = next;
  }
  for (int k = 0; k < out->n; k++) { /* keep[] runs backwards */
    out->sizes[k] = sizes.data[keep[out->n - 1 - k]];
    out->strides[k] = strides.data[keep[out->n - 1 - k]];
  }
  *g = cur;
  return st;
}

/* The input's geometry without size-1 dims. */
static void trim_input(ag_ctx *c, geom *in, int *empty) {
  int nd;
  const int64_t *sizes = ag_input_sizes(c, 0, &nd), *strides = ag_input_strides(c, 0);
  in->n = 0;
  for (int i = 0; i < nd; i++) {
    if (sizes[i] == 0) *empty = 1;
    if (sizes[i] > 1) in->sizes[in->n] = sizes[i], in->strides[in->n++] = strides[i];
  }
}

static disp_status unsupported(const char *what) {
  return disp__fail(DISP_ERR_KERNEL, "as_strided: the derivative for %s is not implemented", what);
}

/* Writes g into zeros of `total` elements through out's geometry at
 * out_off, and reads them back through the input's geometry at in_off. */
static disp_status scatter_gather(ag_ctx *c, disp_tensor *g, const geom *out, int64_t out_off, int64_t in_off,
                                  int64_t total, disp_tensor **res) {
  int nd;
  const int64_t *sizes = ag_input_sizes(c, 0, &nd);
  disp_tensor *storage = NULL, *view = NULL, *copied = NULL;
  disp_status st = ag_zeros_sized(g, &total, 1, &storage);
  disp_int_list os = {out->sizes, (size_t)out->n}, ot = {out->strides, (size_t)out->n};
  if (st == DISP_OK) st = disp_aten_as_strided(storage, os, ot, (disp_opt_int){out_off, true}, &view);
  if (st == DISP_OK) st = disp_aten_copy_(view, g, false, &copied);
  disp_int_list is = {sizes, (size_t)nd}, it = {ag_input_strides(c, 0), (size_t)nd};
  if (st == DISP_OK) st = disp_aten_as_strided(storage, is, it, (disp_opt_int){in_off, true}, res);
  disp_tensor_release(storage), disp_tensor_release(view), disp_tensor_release(copied);
  return st;
}

static disp_status as_strided_backward(ag_ctx *c, disp_tensor *const *grads, disp_tensor **res) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *g = NULL;
  int nd;
  ag_input_sizes(c, 0, &nd);
  if (ag_int_list(c, 1).len > MAX_DIMS || nd > MAX_DIMS) return unsupported("over 64 dims");
  if (!ag_input_strides(c, 0)) return unsupported("an input without strides");
  if (ag_create_graph(c)) return unsupported("create_graph (double backward)");
  geom out, in;
  int empty = 0;
  disp_status st = trim_output(c, grads[0], &out, &empty, &g);
  trim_input(c, &in, &empty);
  if (st == DISP_OK && empty) st = ag_zeros_like_input(c, 0, res);
  else if (st == DISP_OK && maybe_overlap(&out)) st = unsupported("an output geometry that may overlap");
  else if (st == DISP_OK && maybe_overlap(&in)) st = unsupported("an input geometry that may overlap");
  else if (st == DISP_OK) {
    int64_t in_off = ag_input_storage_offset(c, 0), out_off = ag_is_none(c, 3) ? in_off : ag_int(c, 3);
    int64_t shared = in_off < out_off ? in_off : out_off;
    int64_t in_total = min_storage(&in, in_off - shared), out_total = min_storage(&out, out_off - shared);
    st = scatter_gather(c, g, &out, out_off - shared, in_off - shared, in_total > out_total ? in_total : out_total,
                        res);
  }
  disp_tensor_release(g);
  return st;
}

static const ag_formula formulas[] = {
    {"aten::as_strided", "AsStridedBackward0", "self", "", as_strided_backward, NULL},
};

const ag_formula_set disp__ag_formulas_strided = {formulas, sizeof formulas / sizeof *formulas};
