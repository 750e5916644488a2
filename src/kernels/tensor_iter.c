/*
 * tensor_iter.c - broadcasting, output layout, strided loops, dtype
 * conversion and reduction geometry shared by the elementwise kernels.
 */
#include "tensor_iter.h"

#include <stdio.h>

#include "elementwise_copy.h"
#include "parallel.h"
#include "tensor/dtype_cast.h"

/* ---- geometry ------------------------------------------------------------ */

disp_status disp__titer_broadcast(const char *op, disp_tensor *const *ins, int nin, int64_t *shape,
                                  int *ndim) {
  (void)op; /* the dispatcher prefixes the operator's name to messages */
  int nd = 0;
  for (int k = 0; k < nin; k++)
    if (ins[k] && disp__t_ndim(ins[k]) > nd) nd = disp__t_ndim(ins[k]);
  for (int i = 0; i < nd; i++) shape[i] = 1;
  for (int k = 0; k < nin; k++) {
    const disp_tensor *t = ins[k];
    if (!t) continue;
    for (int i = 0; i < disp__t_ndim(t); i++) {
      int d = nd - disp__t_ndim(t) + i;
      int64_t s = disp__t_size(t, i);
      if (s == shape[d]) continue;
      if (shape[d] == 1) {
        shape[d] = s;
      } else if (s != 1) {
        return disp_set_error(DISP_ERR_INVALID_ARG,
                              "The size of tensor a (%lld) must match the size of tensor b (%lld) at "
                              "non-singleton dimension %d", (long long)shape[d], (long long)s, d);
      }
    }
  }
  *ndim = nd;
  return DISP_OK;
}

static int is_channels_last(const disp_tensor *t) {
  if (disp__t_ndim(t) != 4) return 0;
  static const int order[4] = {1, 3, 2, 0};
  int64_t expected = 1;
  for (int k = 0; k < 4; k++) {
    int d = order[k];
    if (disp__t_size(t, d) != 1) {
      if (disp__t_stride(t, d) != expected) return 0;
      expected *= disp__t_size(t, d);
    }
  }
  return 1;
}

static int is_non_overlapping_and_dense(const disp_tensor *t) {
  if (disp__t_is_contiguous(t)) return 1;
  int n = disp__t_ndim(t), perm[DISP_TITER_MAX_DIMS];
  for (int i = 0; i < n; i++) perm[i] = i;
  /* insertion sort: size < 2 dims last, others by stride */
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0; j--) {
      int a = perm[j], b = perm[j - 1];
      int less = disp__t_size(t, a) < 2 ? 0 : disp__t_size(t, b) < 2 ? 1 : disp__t_stride(t, a) < disp__t_stride(t, b);
      if (!less) break;
      perm[j] = b;
      perm[j - 1] = a;
    }
  int64_t req = 1;
  for (int i = 0; i < n; i++) {
    int64_t s = disp__t_size(t, perm[i]);
    if (s < 2) return 1;
    if (disp__t_stride(t, perm[i]) != req) return 0;
    req *= s;
  }
  return 1;
}

static int same_sizes(const disp_tensor *a, const disp_tensor *b) {
  if (disp__t_ndim(a) != disp__t_ndim(b)) return 0;
  for (int i = 0; i < disp__t_ndim(a); i++)
    if (disp__t_size(a, i) != disp__t_size(b, i)) return 0;
  return 1;
}

void disp__titer_out_strides(disp_tensor *const *ins, int nin, const int64_t *shape, int ndim,
                             int64_t *strides) {
  /* TensorIterator's fast setup: every input of the output's shape */
  const disp_tensor *first = NULL;
  int same = 1, contig = 1, cl = 1, dense = 1;
  for (int k = 0; k < nin; k++) {
    const disp_tensor *t = ins[k];
    if (!t) continue;
    if (!first) first = t;
    if (disp__t_ndim(t) != ndim || !same_sizes(t, first)) same = 0;
    contig &= disp__t_is_contiguous(t);
    cl &= is_channels_last(t);
    dense &= is_non_overlapping_and_dense(t);
  }
  if (same && first) {
    if (contig) {
      disp__tensor_contiguous_strides(shape, ndim, strides);
      return;
    }
    if (cl) {
      int64_t e = 1;
      static const int order[4] = {1, 3, 2, 0};
      for (int k = 0; k < 4; k++) {
        strides[order[k]] = e;
        e *= shape[order[k]] > 1 ? shape[order[k]] : 1;
      }
      return;
    }
    if (dense) {
      /* the same strides everywhere: keep them (inputs checked last first) */
      int eq = 1;
      for (int k = 0; k < nin; k++)
        if (ins[k] && memcmp(disp__t_strides(ins[k]), disp__t_strides(first), sizeof(int64_t) * (size_t)ndim)) eq = 0;
      if (eq) {
        memcpy(strides, disp__t_strides(first), sizeof(int64_t) * (size_t)ndim);
        return;
      }
    }
  }
  /* general case: order dims as the inputs' strides do (reorder_dimensions),
   * perm[0] the fastest dim */
  int perm[DISP_TITER_MAX_DIMS];
  for (int i = 0; i < ndim; i++) perm[i] = ndim - 1 - i;
  for (int i = 1; i < ndim; i++) {
    int d1 = i;
    for (int d0 = i - 1; d0 >= 0; d0--) {
      int a = perm[d0], b = perm[d1], cmp = 0;
      for (int k = 0; k < nin && !cmp; k++) {
        const disp_tensor *t = ins[k];
        if (!t) continue;
        int off = ndim - disp__t_ndim(t);
        int64_t s0 = 0, s1 = 0;
        if (a >= off && !(disp__t_size(t, a - off) == 1 && shape[a] != 1)) s0 = disp__t_stride(t, a - off);
        if (b >= off && !(disp__t_size(t, b - off) == 1 && shape[b] != 1)) s1 = disp__t_stride(t, b - off);
        if (s0 == 0 || s1 == 0) continue;
        if (s0 < s1) cmp = -1;
        else if (s0 > s1) cmp = 1;
        else if (shape[a] > shape[b]) cmp = 1;
      }
      if (cmp > 0) {
        perm[d0] = b;
        perm[d1] = a;
        d1 = d0;
      } else if (cmp < 0) {
        break;
      }
    }
  }
  /* TensorIterator's allocate_or_resize_outputs: an unchanged (inverted)
   * order gives a plain contiguous output; any other order multiplies raw
   * sizes, so a zero-size dim zeroes the strides of the dims after it. */
  int inverted = 1;
  for (int i = 0; i < ndim; i++) inverted &= perm[i] == ndim - 1 - i;
  if (inverted) {
    disp__tensor_contiguous_strides(shape, ndim, strides);
    return;
  }
  int64_t e = 1;
  for (int i = 0; i < ndim; i++) {
    strides[perm[i]] = e;
    e *= shape[perm[i]];
  }
}

disp_device disp__titer_device(disp_tensor *const *ins, int nin) {
  for (int k = 0; k < nin; k++)
    if (ins[k] && disp__t_device_type(ins[k]) != DISP_BACKEND_CPU) return disp__t_device(ins[k]);
  return disp_device_make(DISP_BACKEND_CPU, -1);
}

disp_status disp__titer_out_geometry(const char *op, disp_tensor *const *ins, int nin, int64_t *shape,
                                     int64_t *strides, int *ndim) {
  disp_status st = disp__titer_broadcast(op, ins, nin, shape, ndim);
  if (st == DISP_OK) disp__titer_out_strides(ins, nin, shape, *ndim, strides);
  return st;
}

disp_status disp__titer_new_output(const char *op, disp_tensor *const *ins, int nin, disp_dtype dt,
                                   disp_device dev, disp_tensor **out) {
  int64_t shape[DISP_TITER_MAX_DIMS], strides[DISP_TITER_MAX_DIMS];
  int nd;
  disp_status st = disp__titer_out_geometry(op, ins, nin, shape, strides, &nd);
  if (st != DISP_OK) return st;
  return disp_tensor_empty_strided(shape, strides, nd, dt, dev, out);
}

disp_status disp__titer_check_internal_overlap(const char *op, const disp_tensor *t) {
  (void)op; /* the dispatcher prefixes the operator's name to messages */
  if (disp__t_is_contiguous(t)) return DISP_OK;
  for (int i = 0; i < disp__t_ndim(t); i++)
    if (disp__t_stride(t, i) == 0 && disp__t_size(t, i) > 1)
      return disp_set_error(DISP_ERR_INVALID_ARG,
                            "unsupported operation: more than one element of the written-to tensor "
                            "refers to a single memory location. Please clone() the tensor before "
                            "performing the operation.");
  return DISP_OK;
}

disp_status disp__titer_resize_out(const char *op, disp_tensor *out, const int64_t *shape, int ndim,
                                   const int64_t *strides) {
  if (ndim == disp__t_ndim(out) && !memcmp(shape, disp__t_sizes(out), sizeof(int64_t) * (size_t)ndim)) return DISP_OK;
  int64_t cs[DISP_TITER_MAX_DIMS];
  if (!strides) {
    disp__tensor_contiguous_strides(shape, ndim, cs);
    strides = cs;
  }
  if (!disp__t_storage(out)) return disp_set_error(DISP_ERR_INVALID_ARG, "cannot resize out without storage");
  size_t nb;
  disp_status st = disp__tensor_check_shape(op, shape, strides, ndim, NULL);
  if (st == DISP_OK)
    st = disp__tensor_storage_nbytes(shape, strides, ndim, disp__t_offset(out), disp_dtype_itemsize(disp__t_dtype(out)),
                                     &nb);
  if (st == DISP_OK && nb > disp__storage_nbytes(disp__t_storage(out)))
    st = disp__storage_resize(disp__t_storage(out), nb);
  if (st == DISP_OK) st = disp__tensor_set_sizes_strides(out, shape, strides, ndim);
  return st;
}

int disp__can_cast(disp_dtype from, disp_dtype to) {
  if (disp_dtype_is_floating(from) && disp_dtype_is_integral(to, 0)) return 0;
  if (from != DISP_DTYPE_BOOL && to == DISP_DTYPE_BOOL) return 0;
  return 1;
}

/* ---- loops --------------------------------------------------------------- */

/* Note [Parallel pointwise]: a loop is split across threads by blocks of
 * TITER_BLOCK elements of the innermost run, whole rows or parts of one,
 * so every call of the inner loop starts at a multiple of the block from
 * its row's start: a vector body plus scalar tail covers the same elements
 * the same way at any thread count, and the results are identical. Only
 * loops whose operand 0 moves on every dimension are split; a stride 0
 * there is a reduction into it, which stays serial. */
enum { TITER_BLOCK = 64 };

typedef disp_titer_plan walk_plan;

/* disp__titer_plan's body, inlined per operand count as walk_blocks_n. */
static inline __attribute__((always_inline)) int plan_n(disp_titer_plan *p, const int nops, char **data,
                                                         const int64_t *strides, const int64_t *shape, int ndim) {
  int dims[DISP_TITER_MAX_DIMS], n = 0;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] == 0) return 0;
    if (shape[i] != 1) dims[n++] = i;
  }
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0; j--) {
      int a = dims[j], b = dims[j - 1], less = 0;
      for (int k = 0; k < nops; k++) {
        int64_t sa = strides[k * ndim + a], sb = strides[k * ndim + b];
        if (sa < 0) sa = -sa;
        if (sb < 0) sb = -sb;
        if (sa != sb) {
          less = sa < sb;
          break;
        }
      }
      if (!less) break;
      dims[j] = b;
      dims[j - 1] = a;
    }
  int m = 0;
  for (int i = 0; i < n; i++) {
    int d = dims[i], ok = m > 0;
    for (int k = 0; k < nops && ok; k++) ok = strides[k * ndim + d] == p->st[k][m - 1] * p->sh[m - 1];
    if (ok) {
      p->sh[m - 1] *= shape[d];
      continue;
    }
    p->sh[m] = shape[d];
    for (int k = 0; k < nops; k++) p->st[k][m] = strides[k * ndim + d];
    m++;
  }
  if (m == 0) { /* one element: a run of one */
    p->sh[0] = 1;
    for (int k = 0; k < nops; k++) p->st[k][0] = 0;
    m = 1;
  }
  p->nops = nops;
  p->m = m;
  for (int k = 0; k < nops; k++) p->data[k] = data[k];
  return 1;
}

int disp__titer_plan(disp_titer_plan *p, int nops, char **data, const int64_t *strides, const int64_t *shape,
                     int ndim) {
  switch (nops) {
  case 2: return plan_n(p, 2, data, strides, shape, ndim);
  case 3: return plan_n(p, 3, data, strides, shape, ndim);
  default: return plan_n(p, nops, data, strides, shape, ndim);
  }
}

/* Runs blocks [lo, hi) of the plan (TITER_BLOCK elements of a row each,
 * the last of a row shorter) with `nops` operands. Inlined per operand
 * count by walk_blocks, so that the per-row pointer updates of a copy (2)
 * or a binary op (3) are straight-line code: a small op walks its rows in
 * a handful of instructions each. */
static inline __attribute__((always_inline)) void walk_blocks_n(int64_t lo, int64_t hi, const walk_plan *p,
                                                                 const int nops) {
  const int64_t row_len = p->sh[0], per_row = (row_len + TITER_BLOCK - 1) / TITER_BLOCK;
  int64_t row = lo / per_row, col = lo % per_row * TITER_BLOCK;
  const int64_t last_row = (hi - 1) / per_row, last_end = ((hi - 1) % per_row + 1) * TITER_BLOCK;
  int64_t idx[DISP_TITER_MAX_DIMS], inner[DISP_TITER_MAX_OPS];
  char *rp[DISP_TITER_MAX_OPS], *ptr[DISP_TITER_MAX_OPS];
  for (int k = 0; k < nops; k++) {
    rp[k] = p->data[k];
    inner[k] = p->st[k][0];
  }
  int64_t r = row;
  for (int d = 1; d < p->m; d++) {
    idx[d] = r % p->sh[d];
    r /= p->sh[d];
    for (int k = 0; k < nops; k++) rp[k] += idx[d] * p->st[k][d];
  }
  for (;;) {
    int64_t end = row == last_row && last_end < row_len ? last_end : row_len;
    for (int k = 0; k < nops; k++) ptr[k] = rp[k] + col * inner[k];
    p->loop(ptr, inner, end - col, p->ctx);
    if (row++ == last_row) return;
    col = 0;
    for (int d = 1; d < p->m; d++) {
      for (int k = 0; k < nops; k++) rp[k] += p->st[k][d];
      if (++idx[d] < p->sh[d]) break;
      for (int k = 0; k < nops; k++) rp[k] -= p->st[k][d] * p->sh[d];
      idx[d] = 0;
    }
  }
}

/* walk_blocks_n as a disp__range_fn. */
static void walk_blocks(int64_t lo, int64_t hi, void *arg) {
  const walk_plan *p = arg;
  switch (p->nops) {
  case 2: walk_blocks_n(lo, hi, p, 2); break;
  case 3: walk_blocks_n(lo, hi, p, 3); break;
  default: walk_blocks_n(lo, hi, p, p->nops); break;
  }
}

void disp__titer_loop_raw(int nops, char **data, const int64_t *strides, const int64_t *shape, int ndim,
                          disp_titer_loop loop, const void *ctx) {
  walk_plan p;
  if (!disp__titer_plan(&p, nops, data, strides, shape, ndim)) return;
  p.loop = loop;
  p.ctx = ctx;
  int64_t rows = 1, per_row = (p.sh[0] + TITER_BLOCK - 1) / TITER_BLOCK;
  for (int d = 1; d < p.m; d++) rows *= p.sh[d];
  int64_t blocks = rows * per_row, total = rows * p.sh[0];
  int split = total > DISP_GRAIN_SIZE;
  for (int d = 0; d < p.m && split; d++) split = p.st[0][d] != 0;
  if (!split) {
    walk_blocks(0, blocks, &p);
    return;
  }
  /* the grain in blocks: about DISP_GRAIN_SIZE elements whatever the row length */
  int64_t grain = (int64_t)((double)DISP_GRAIN_SIZE * (double)blocks / (double)total);
  disp__parallel_for(0, blocks, grain > 0 ? grain : 1, walk_blocks, &p);
}

void disp__titer_loop_flat(int nops, char **data, const int64_t *strides, int64_t n, disp_titer_loop loop,
                           const void *ctx) {
  if (n <= DISP_GRAIN_SIZE) loop(data, strides, n, ctx);
  else disp__titer_loop_raw(nops, data, strides, &n, 1, loop, ctx);
}

static char *data_of(const disp_tensor *t) { return disp__t_data(t); }

void disp__titer_bcast_strides(const disp_tensor *t, const int64_t *shape, int ndim, int64_t *out) {
  int off = ndim - disp__t_ndim(t);
  int64_t isz = (int64_t)disp_dtype_itemsize(disp__t_dtype(t));
  for (int i = 0; i < ndim; i++) {
    if (i < off || (disp__t_size(t, i - off) == 1 && shape[i] != 1)) out[i] = 0;
    else out[i] = disp__t_stride(t, i - off) * isz;
  }
}

disp_status disp__titer_copy(disp_tensor *dst, disp_tensor *src) {
  if (disp__t_numel(dst) == 0 || disp__t_device_type(dst) != DISP_BACKEND_CPU) return DISP_OK;
  int nd = disp__t_ndim(dst);
  int64_t strides[2 * DISP_TITER_MAX_DIMS];
  disp__titer_bcast_strides(dst, disp__t_sizes(dst), nd, strides);
  disp__titer_bcast_strides(src, disp__t_sizes(dst), nd, strides + nd);
  disp__ew_copy_bytes(data_of(dst), disp__t_dtype(dst), data_of(src), disp__t_dtype(src), strides, disp__t_sizes(dst),
                      nd);
  return DISP_OK;
}

disp_status disp__titer_contiguous_as(disp_tensor *t, disp_dtype dt, disp_tensor **out) {
  if (disp__t_is_contiguous(t) && disp__t_dtype(t) == dt) {
    *out = disp_tensor_retain(t);
    return DISP_OK;
  }
  disp_status st = disp_tensor_empty(disp__t_sizes(t), disp__t_ndim(t), dt, disp__t_device(t), out);
  if (st != DISP_OK) return st;
  return disp__titer_copy(*out, t);
}

disp_status disp__titer_run(const char *op, disp_tensor *out, disp_tensor *const *ins, int nin,
                            disp_dtype in_dt, disp_dtype out_dt, disp_titer_loop loop, const void *ctx) {
  (void)op;
  if (disp__t_device_type(out) != DISP_BACKEND_CPU || disp__t_numel(out) == 0) return DISP_OK;
  disp_tensor *conv[DISP_TITER_MAX_OPS] = {0}, *tmp_out = NULL, *target = out;
  disp_tensor *ops[DISP_TITER_MAX_OPS];
  disp_status st = DISP_OK;
  int fast = disp__t_is_contiguous(out);
  for (int k = 0; k < nin; k++) {
    disp_tensor *t = ins[k];
    if (disp__t_dtype(t) != in_dt) {
      if ((st = disp__titer_contiguous_as(t, in_dt, &conv[k])) != DISP_OK) goto done;
      t = conv[k];
    }
    ops[k + 1] = t;
    fast &= disp__t_is_contiguous(t) && same_sizes(t, out);
  }
  if (disp__t_dtype(out) != out_dt) {
    if ((st = disp_tensor_empty(disp__t_sizes(out), disp__t_ndim(out), out_dt, disp__t_device(out), &tmp_out)) !=
        DISP_OK)
      goto done;
    target = tmp_out;
  }
  ops[0] = target;
  char *data[DISP_TITER_MAX_OPS];
  for (int k = 0; k <= nin; k++) data[k] = data_of(ops[k]);
  if (fast) {
    int64_t s[DISP_TITER_MAX_OPS];
    for (int k = 0; k <= nin; k++) s[k] = (int64_t)disp_dtype_itemsize(disp__t_dtype(ops[k]));
    disp__titer_loop_flat(nin + 1, data, s, disp__t_numel(out), loop, ctx);
  } else {
    int nd = disp__t_ndim(out);
    int64_t strides[DISP_TITER_MAX_OPS * DISP_TITER_MAX_DIMS];
    for (int k = 0; k <= nin; k++) disp__titer_bcast_strides(ops[k], disp__t_sizes(out), nd, strides + k * nd);
    disp__titer_loop_raw(nin + 1, data, strides, disp__t_sizes(out), nd, loop, ctx);
  }
  if (tmp_out) st = disp__titer_copy(out, tmp_out);
done:
  for (int k = 0; k < nin; k++) disp_tensor_release(conv[k]);
  disp_tensor_release(tmp_out);
  return st;
}

/* ---- the pointwise driver ---------------------------------------------------------- */

disp_status disp__not_implemented(const char *kname, disp_dtype dt) {
  return disp_set_error(DISP_ERR_TYPE, "\"%s\" not implemented for '%s'", kname, disp_dtype_torch_name(dt));
}

static void format_shape(char *buf, size_t n, const int64_t *s, int nd) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < nd && k < n; i++) k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)s[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
}

/* Bytes [lo, hi) a strided tensor can touch in its storage. */
static void byte_range(const disp_tensor *t, int64_t *lo, int64_t *hi) {
  int64_t isz = (int64_t)disp_dtype_itemsize(disp__t_dtype(t)), end = disp__t_offset(t);
  for (int i = 0; i < disp__t_ndim(t); i++) end += (disp__t_size(t, i) - 1) * disp__t_stride(t, i);
  *lo = disp__t_offset(t) * isz;
  *hi = (end + 1) * isz;
}

/* PyTorch's get_overlap_status == PARTIAL: a is written while b is read,
 * and they share memory without being the very same view. */
static int partial_overlap(const disp_tensor *a, const disp_tensor *b) {
  if (a == b || !disp__t_storage(a) || disp__t_storage(a) != disp__t_storage(b) || disp__t_numel(a) == 0 ||
      disp__t_numel(b) == 0)
    return 0;
  int64_t alo, ahi, blo, bhi;
  byte_range(a, &alo, &ahi);
  byte_range(b, &blo, &bhi);
  if (alo >= bhi || blo >= ahi) return 0;
  if (alo == blo && disp__t_dtype(a) == disp__t_dtype(b) && disp__t_ndim(a) == disp__t_ndim(b) &&
      !memcmp(disp__t_sizes(a), disp__t_sizes(b), sizeof(int64_t) * (size_t)disp__t_ndim(a)) &&
      !memcmp(disp__t_strides(a), disp__t_strides(b), sizeof(int64_t) * (size_t)disp__t_ndim(a)))
    return 0; /* full overlap: elementwise in place is fine */
  return 1;
}

disp_status disp__titer_prepare_dest(const char *op, int mode, disp_tensor *dest, disp_tensor *const *ins, int nin,
                                disp_dtype result) {
  int64_t shape[DISP_TITER_MAX_DIMS];
  int nd;
  disp_status st = disp__titer_broadcast(op, ins, nin, shape, &nd);
  if (st != DISP_OK) return st;
  if (!disp__can_cast(result, disp__t_dtype(dest)))
    return disp_set_error(DISP_ERR_TYPE, "result type %s can't be cast to the desired output type %s",
                          disp_dtype_torch_name(result), disp_dtype_torch_name(disp__t_dtype(dest)));
  if ((st = disp__titer_check_internal_overlap(op, dest)) != DISP_OK) return st;
  for (int k = 0; k < nin; k++)
    if (ins[k] && partial_overlap(dest, ins[k]))
      return disp_set_error(DISP_ERR_INVALID_ARG,
                            "unsupported operation: some elements of the input tensor and the written-to "
                            "tensor refer to a single memory location. Please clone() the tensor before "
                            "performing the operation.");
  if (mode == DISP_PW_INPLACE) {
    if (nd != disp__t_ndim(dest) || memcmp(shape, disp__t_sizes(dest), sizeof(int64_t) * (size_t)nd)) {
      char a[256], b[256];
      format_shape(a, sizeof a, disp__t_sizes(dest), disp__t_ndim(dest));
      format_shape(b, sizeof b, shape, nd);
      return disp_set_error(DISP_ERR_INVALID_ARG, "output with shape %s doesn't match the broadcast shape %s", a, b);
    }
    return DISP_OK;
  }
  int64_t strides[DISP_TITER_MAX_DIMS];
  disp__titer_out_strides(ins, nin, shape, nd, strides);
  return disp__titer_resize_out(op, dest, shape, nd, strides);
}

/* Runs loops[compute] over ins into a fresh tensor of dtype `result`, or
 * into dest (DISP_PW_INPLACE/OUT, which is returned as a new reference). */
disp_status disp__pointwise(const char *op, const char *kname, int mode, disp_tensor *dest, disp_tensor *const *ins,
                             int nin, disp_dtype compute, disp_dtype result, const disp_titer_loop *loops,
                             const disp_titer_consts *c, disp_tensor **ret) {
  disp_titer_loop loop = loops[compute];
  if (!loop) return disp__not_implemented(kname, compute);
  disp_status st;
  disp_tensor *out;
  /* the small-tensor hot path: same shape, contiguous, one dtype, on the
   * CPU - no broadcasting, layout or conversion work at all */
  if (mode == DISP_PW_FRESH && disp__t_is_contiguous(ins[0]) && disp__t_dtype(ins[0]) == compute && compute == result &&
      disp__t_device_type(ins[0]) == DISP_BACKEND_CPU) {
    const disp_tensor *t0 = ins[0];
    int fast = 1;
    for (int k = 1; k < nin && fast; k++)
      fast = disp__t_is_contiguous(ins[k]) && disp__t_dtype(ins[k]) == compute &&
             disp__t_device_type(ins[k]) == DISP_BACKEND_CPU && same_sizes(ins[k], t0);
    if (fast) {
      if ((st = disp_tensor_empty(disp__t_sizes(t0), disp__t_ndim(t0), result, disp__t_device(t0), &out)) != DISP_OK)
        return st;
      if (disp__t_numel(out) > 0) {
        char *data[DISP_TITER_MAX_OPS];
        int64_t s[DISP_TITER_MAX_OPS], isz = (int64_t)disp_dtype_itemsize(result);
        data[0] = data_of(out);
        s[0] = isz;
        for (int k = 0; k < nin; k++) {
          data[k + 1] = data_of(ins[k]);
          s[k + 1] = isz;
        }
        disp__titer_loop_flat(nin + 1, data, s, disp__t_numel(out), loop, c);
      }
      *ret = out;
      return DISP_OK;
    }
  }
  if (mode == DISP_PW_FRESH) {
    st = disp__titer_new_output(op, ins, nin, result, disp__titer_device(ins, nin), &out);
    if (st != DISP_OK) return st;
  } else {
    if ((st = disp__titer_prepare_dest(op, mode, dest, ins, nin, result)) != DISP_OK) return st;
    out = disp_tensor_retain(dest);
  }
  st = disp__titer_run(op, out, ins, nin, compute, result, loop, c);
  if (st != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  *ret = out;
  return DISP_OK;
}

disp_dtype disp__result_type2(disp_tensor *a, disp_tensor *b) {
  disp__result_state s;
  disp__result_state_init(&s);
  disp__result_state_tensor(&s, a);
  disp__result_state_tensor(&s, b);
  return (disp_dtype)disp__result_state_get(&s);
}

void disp__consts_set(disp_titer_consts *c, int k, disp_scalar v) {
  c->d[k] = disp_scalar_to_double(v);
  /* A double past int64 (or NaN) has no int64 value: C leaves the
   * conversion undefined, x86's gives INT64_MIN; only integer loops read it. */
  c->i[k] = v.kind == DISP_SCALAR_INT ? v.v.i : v.kind == DISP_SCALAR_BOOL ? (int64_t)v.v.b : disp__double_to_int64(v.v.d);
}

/* ---- reductions ---------------------------------------------------------- */

disp_status disp__titer_wrap_dim(const char *op, int64_t dim, int ndim, int *out) {
  (void)op; /* the dispatcher prefixes the operator's name to messages */
  int64_t n = ndim > 0 ? ndim : 1;
  if (dim < -n || dim >= n)
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)", (long long)-n, (long long)(n - 1), (long long)dim);
  *out = (int)(dim < 0 ? dim + n : dim);
  return DISP_OK;
}

disp_status disp__reduce_shape(const char *op, const disp_tensor *self, const int64_t *dims, size_t ndims,
                               bool keepdim, uint64_t *mask, int64_t *shape, int *ndim) {
  uint64_t m = 0;
  int nd = disp__t_ndim(self);
  if (ndims == 0) {
    m = nd >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << nd) - 1);
  } else {
    for (size_t i = 0; i < ndims; i++) {
      int d = 0;
      disp_status st = disp__titer_wrap_dim(op, dims[i], nd, &d);
      if (st != DISP_OK) return st;
      if (nd == 0) continue; /* dim 0 of a 0-dim tensor: nothing to reduce */
      if (m & ((uint64_t)1 << d))
        return disp_set_error(DISP_ERR_INVALID_ARG, "dim %d appears multiple times in the list of dims",
                              d);
      m |= (uint64_t)1 << d;
    }
  }
  int k = 0;
  for (int i = 0; i < nd; i++) {
    if (m & ((uint64_t)1 << i)) {
      if (keepdim) shape[k++] = 1;
    } else {
      shape[k++] = disp__t_size(self, i);
    }
  }
  *mask = m;
  *ndim = k;
  return DISP_OK;
}

void disp__reduce_acc_strides(const disp_tensor *self, uint64_t mask, size_t isz, int64_t *strides) {
  int64_t e = (int64_t)isz;
  for (int i = disp__t_ndim(self) - 1; i >= 0; i--) {
    if (mask & ((uint64_t)1 << i)) {
      strides[i] = 0;
    } else {
      strides[i] = e;
      e *= disp__t_size(self, i);
    }
  }
}
