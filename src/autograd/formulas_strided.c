/*
 * formulas_strided.c - the derivative of as_strided (1.13's
 * as_strided_backward): grad is written through the output's geometry
 * into a zero "storage", which is then read through the input's geometry.
 *
 * The input's sizes, strides and storage offset come from its geometry
 * recorded at forward time (1.13 saves self_geometry, not self, so the
 * input may be modified in place before the backward pass). Where a
 * geometry's elements may overlap, 1.13 uses index_add_, which this
 * library does not have: an output geometry that overlaps adds up the
 * gradients of the elements that meet, and an input one splits each sum by
 * how many of its elements meet there. Both are scatter_add here: one add_
 * into an as_strided view of the storage for each index of the dims that
 * overlap the others (Note [Scattering through an overlapping geometry]).
 * Every step is a dispatched, recorded operator (the in-place writes into
 * views of the fresh storage rebase it, as 1.13's copy_ does), so
 * create_graph differentiates through it.
 */
#include "error_internal.h"
#include "formula.h"

#define MAX_DIMS 64

typedef struct geom {
  int n;
  int64_t sizes[MAX_DIMS], strides[MAX_DIMS];
} geom;

/* Note [Scattering through an overlapping geometry]
 * Visiting dims by increasing stride (larger dims first among equal
 * strides), a dim whose stride passes the span of the dims kept before it
 * cannot meet them: it is kept, the others are looped over. No two
 * elements of the kept dims meet, so one add_ writes them all; a geometry
 * loops over nothing exactly when 1.13's _maybe_overlapping_memory says it
 * does not overlap. A sliding window (sizes (n, k), strides (1, 1)) loops
 * k times over a write of n elements. Returns how many dims are looped. */
static int split_dims(const geom *g, unsigned char *keep) {
  unsigned char done[MAX_DIMS] = {0};
  int64_t span = 0;
  int looped = 0;
  for (int k = 0; k < g->n; k++) {
    int best = -1;
    for (int i = 0; i < g->n; i++)
      if (!done[i] && (best < 0 || g->strides[i] < g->strides[best] ||
                       (g->strides[i] == g->strides[best] && g->sizes[i] > g->sizes[best])))
        best = i;
    done[best] = 1;
    keep[best] = g->strides[best] > span;
    if (keep[best]) span += g->strides[best] * (g->sizes[best] - 1);
    else looped++;
  }
  return looped;
}

static int maybe_overlap(const geom *g) {
  unsigned char keep[MAX_DIMS];
  return split_dims(g, keep) > 0;
}

/* values with the looped dims fixed at idx (one per dim; kept dims ignored):
 * the slab one add_ writes. A new reference. */
static disp_status slab(disp_tensor *values, const geom *g, const unsigned char *keep, const int64_t *idx,
                        disp_tensor **out) {
  disp_tensor *cur = disp_tensor_retain(values);
  disp_status st = DISP_OK;
  for (int d = g->n - 1; d >= 0 && st == DISP_OK; d--) { /* last dim first: earlier dims keep their place */
    if (keep[d]) continue;
    disp_tensor *next = NULL;
    st = disp_aten_select_int(cur, d, idx[d], &next);
    disp_tensor_release(cur);
    cur = next;
  }
  *out = cur;
  return st;
}

/* Advances the looped dims' indices like an odometer; 0 after the last. */
static int next_index(const geom *g, const unsigned char *keep, int64_t *idx) {
  for (int d = g->n - 1; d >= 0; d--) {
    if (keep[d]) continue;
    if (++idx[d] < g->sizes[d]) return 1;
    idx[d] = 0;
  }
  return 0;
}

/* storage[offset + sum_d i_d * stride_d] += values[i] for every index i of
 * the geometry g (values has g's sizes): 1.13's index_add_ through it,
 * written one slab at a time (the Note above). */
static disp_status scatter_add(disp_tensor *storage, disp_tensor *values, const geom *g, int64_t offset) {
  unsigned char keep[MAX_DIMS];
  int64_t idx[MAX_DIMS] = {0}, ks[MAX_DIMS], kt[MAX_DIMS];
  int nl = split_dims(g, keep), nk = 0;
  for (int d = 0; d < g->n; d++)
    if (keep[d]) ks[nk] = g->sizes[d], kt[nk++] = g->strides[d];
  disp_int_list sizes = {ks, (size_t)nk}, strides = {kt, (size_t)nk};
  disp_status st = DISP_OK;
  do {
    int64_t off = offset;
    for (int d = 0; d < g->n; d++) off += keep[d] ? 0 : idx[d] * g->strides[d];
    disp_tensor *part = NULL, *view = NULL, *same = NULL;
    st = nl ? slab(values, g, keep, idx, &part) : DISP_OK;
    if (st == DISP_OK) st = disp_aten_as_strided(storage, sizes, strides, (disp_opt_int){off, true}, &view);
    if (st == DISP_OK) st = disp_aten_add__Tensor(view, nl ? part : values, disp_scalar_int(1), &same);
    disp_tensor_release(part), disp_tensor_release(view), disp_tensor_release(same);
  } while (st == DISP_OK && next_index(g, keep, idx));
  return st;
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

/* storage / count, where count[k] is how many elements of the input
 * geometry `in` (at in_off) read storage[k]: each gradient sum is split
 * among the elements that share it, as 1.13. 1.13 divides by the raw
 * count (nan where no element reads); here by at least 1, so those unread
 * places hold 0 and a double backward through them stays finite. */
static disp_status split_shared(disp_tensor **storage, const geom *in, int64_t in_off) {
  int64_t total = disp_tensor_numel(*storage);
  disp_tensor *count = NULL, *ones = NULL, *atleast1 = NULL, *q = NULL;
  disp_int_list is = {in->sizes, (size_t)in->n};
  disp_device dev = disp_tensor_device(*storage);
  disp_status st = ag_zeros_sized(*storage, &total, 1, &count);
  if (st == DISP_OK)
    st = disp_aten_ones(is, (int32_t)disp_tensor_dtype(*storage), -1, (disp_opt_device){(int32_t)dev.type, dev.index, true},
                        (disp_opt_bool){false, false}, &ones);
  if (st == DISP_OK) st = scatter_add(count, ones, in, in_off);
  if (st == DISP_OK) st = disp_aten_clamp_min(count, disp_scalar_int(1), &atleast1);
  if (st == DISP_OK) st = disp_aten_div_Tensor(*storage, atleast1, &q);
  if (st == DISP_OK) disp_tensor_release(*storage), *storage = q, q = NULL;
  disp_tensor_release(count), disp_tensor_release(ones), disp_tensor_release(atleast1), disp_tensor_release(q);
  return st;
}

/* The trimmed gradient g through the output geometry `out` into a zero
 * storage of `total` elements, read back through the input's geometry. */
static disp_status through_storage(ag_ctx *c, disp_tensor *g, const geom *out, const geom *in, int64_t out_off,
                                   int64_t in_off, int64_t total, disp_tensor **res) {
  int nd;
  const int64_t *sizes = ag_input_sizes(c, 0, &nd);
  disp_int_list is = {sizes, (size_t)nd}, it = {ag_input_strides(c, 0), (size_t)nd};
  disp_tensor *storage = NULL;
  disp_status st = ag_zeros_sized(g, &total, 1, &storage);
  if (st == DISP_OK) st = scatter_add(storage, g, out, out_off);
  if (st == DISP_OK && maybe_overlap(in)) st = split_shared(&storage, in, in_off);
  if (st == DISP_OK) st = disp_aten_as_strided(storage, is, it, (disp_opt_int){in_off, true}, res);
  disp_tensor_release(storage);
  return st;
}

AG_BACKWARD(as_strided_backward) {
  if (!ag_needs(c, 0)) return DISP_OK;
  disp_tensor *trimmed = NULL;
  int nd;
  ag_input_sizes(c, 0, &nd);
  if (ag_int_list(c, 1).len > MAX_DIMS || nd > MAX_DIMS || !ag_input_strides(c, 0))
    return disp__fail(DISP_ERR_KERNEL, "as_strided: the derivative for an input over 64 dims or without strides is "
                                       "not implemented");
  geom out_geom, in;
  int empty = 0;
  disp_status st = trim_output(c, g[0], &out_geom, &empty, &trimmed);
  trim_input(c, &in, &empty);
  if (st == DISP_OK && empty) st = ag_zeros_like_input(c, 0, out);
  else if (st == DISP_OK) {
    int64_t in_off = ag_input_storage_offset(c, 0), out_off = ag_is_none(c, 3) ? in_off : ag_int(c, 3);
    int64_t shared = in_off < out_off ? in_off : out_off;
    int64_t in_total = min_storage(&in, in_off - shared), out_total = min_storage(&out_geom, out_off - shared);
    st = through_storage(c, trimmed, &out_geom, &in, out_off - shared, in_off - shared,
                         in_total > out_total ? in_total : out_total, out);
  }
  disp_tensor_release(trimmed);
  return st;
}
