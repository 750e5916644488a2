/*
 * pool.c - max_pool2d_with_indices and its backward (CPU, Meta), and
 * max_pool2d (CompositeImplicitAutograd, through max_pool2d_with_indices,
 * as PyTorch 1.13 does on the CPU).
 *
 * Indices are flat positions h * W + w within an input plane. A nan in a
 * window wins (PyTorch's `val > max || isnan(val)`), so nan propagates.
 * float32 windows two taps wide at stride 2 (the CNNs' 2x2 pooling) run
 * through the CPU kernel table (cpu/pool.c), whose results are the general
 * loops' bit for bit; so does the backward where such windows tile the
 * plane and every index lies in its own window.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "aten_internal.h"
#include "aten_kernels.h"
#include "conv_util.h"
#include "cpu/kernels.h"
#include "gemm.h"
#include "parallel.h"
#include "tensor/checked_math_internal.h"

#define FAIL(...) disp_set_error(DISP_ERR_INVALID_ARG, __VA_ARGS__)

typedef struct pool_geom {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t nbatch, planes, ih, iw, oh, ow; /* nbatch 1 for 3-D input */
  int batched, cl;
} pool_geom;

/* PyTorch's pooling_output_shape, exact: 1.13's int64 terms wrap for a
 * huge kernel or dilation. Positive results are at most in + 1. */
static disp__conv_i128 pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, int ceil_mode) {
  typedef disp__conv_i128 i128;
  i128 num = (i128)in + 2 * (i128)pad - (i128)dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  i128 q = num / stride;
  if ((num % stride != 0) && ((num < 0) != (stride < 0))) q--; /* floor division */
  i128 out = q + 1;
  if (ceil_mode && (out - 1) * stride >= (i128)in + pad) out--;
  return out;
}

/* A window starts at s (oh * stride - pad: in int64, as the output size is
 * at most in + 1 taps past -pad) and has k taps d apart. PyTorch steps its
 * taps one at a time (`while (start < 0) start += dilation`), which for a
 * huge padding or dilation loops ~2^62 times or wraps; these compute the
 * same taps directly. */

/* One past the last tap inside [0, in): min(in, s + (k - 1) * d + 1). */
static int64_t window_end(int64_t s, int64_t k, int64_t d, int64_t in) {
  disp__conv_i128 e = (disp__conv_i128)s + (disp__conv_i128)(k - 1) * d + 1;
  return e > in ? in : (int64_t)e;
}

/* The first tap s + j * d that is >= 0. */
static int64_t first_tap(int64_t s, int64_t d) {
  if (s >= 0) return s;
  int64_t r = (int64_t)((-(disp__conv_i128)s) % d);
  return r == 0 ? 0 : d - r;
}

/* The taps of one window along one dim: first, first + d, ... (n of them,
 * all inside [0, in)). first may lie past the input when n is 0. */
typedef struct pool_taps {
  int64_t first, n;
} pool_taps;

static pool_taps window_taps(int64_t s, int64_t k, int64_t d, int64_t in) {
  int64_t end = window_end(s, k, d, in);
  pool_taps t = {first_tap(s, d), 0};
  if (t.first < end) t.n = (end - t.first - 1) / d + 1;
  return t;
}

/* The index a window reports when no tap beats -inf: its first tap,
 * r.first * iw + c.first (1.13's, also for an empty window, all taps in
 * the padding); where that passes int64 it is -1 here. */
static int64_t empty_index(pool_taps r, pool_taps c, int64_t iw) {
  int64_t i;
  if (r.n > 0 && c.n > 0) return r.first * iw + c.first; /* inside the plane */
  if (disp__mul_i64(r.first, iw, &i) || disp__add_i64(i, c.first, &i)) return -1;
  return i;
}

static disp_status pair(const char *what, disp_int_list l, int allow_empty, int64_t dflt0, int64_t dflt1,
                        int64_t *a, int64_t *b) {
  if (l.len == 0 && allow_empty) {
    *a = dflt0, *b = dflt1;
    return DISP_OK;
  }
  if (l.len == 1) {
    *a = *b = l.data[0];
    return DISP_OK;
  }
  if (l.len == 2) {
    *a = l.data[0], *b = l.data[1];
    return DISP_OK;
  }
  return FAIL("max_pool2d: %s", what);
}

static disp_status pool_geometry(const char *op, disp_tensor *self, disp_int_list kernel_size,
                                 disp_int_list stride, disp_int_list padding, disp_int_list dilation,
                                 bool ceil_mode, pool_geom *g) {
  disp_status st = pair("kernel_size must either be a single int, or a tuple of two ints", kernel_size, 0,
                        0, 0, &g->kh, &g->kw);
  if (st == DISP_OK)
    st = pair("stride must either be omitted, a single int, or a tuple of two ints", stride, 1, g->kh,
              g->kw, &g->sh, &g->sw);
  if (st == DISP_OK)
    st = pair("padding must either be a single int, or a tuple of two ints", padding, 0, 0, 0, &g->ph, &g->pw);
  if (st == DISP_OK)
    st = pair("dilation must be either a single int, or a tuple of two ints", dilation, 0, 1, 1, &g->dh, &g->dw);
  if (st != DISP_OK) return st;
  int nd = disp__t_ndim(self);
  if (nd != 3 && nd != 4)
    return FAIL("%s: non-empty 3D or 4D (batch mode) tensor expected for input", op);
  if (g->kh <= 0 || g->kw <= 0)
    return FAIL("%s: kernel size should be greater than zero, but got kH: %lld kW: %lld", op,
                (long long)g->kh, (long long)g->kw);
  if (g->sh <= 0 || g->sw <= 0)
    return FAIL("%s: stride should be greater than zero, but got dH: %lld dW: %lld", op, (long long)g->sh,
                (long long)g->sw);
  if (g->dh <= 0 || g->dw <= 0)
    return FAIL("%s: dilation should be greater than zero, but got dilationH: %lld dilationW: %lld", op,
                (long long)g->dh, (long long)g->dw);
  for (int d = nd == 4 ? 1 : 0; d < nd; d++)
    if (disp__t_size(self, d) == 0)
      return FAIL("%s: Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
                  "but got a tensor with a zero-size non-batch dimension", op);
  if (g->pw > g->kw / 2 || g->ph > g->kh / 2) {
    int w = g->pw > g->kw / 2;
    return FAIL("%s: pad should be at most half of kernel size, but got pad=%lld and kernel_size=%lld", op,
                (long long)(w ? g->pw : g->ph), (long long)(w ? g->kw : g->kh));
  }
  g->batched = nd == 4;
  g->nbatch = nd == 4 ? disp__t_size(self, 0) : 1;
  g->planes = disp__t_size(self, nd - 3);
  g->ih = disp__t_size(self, nd - 2);
  g->iw = disp__t_size(self, nd - 1);
  disp__conv_i128 oh = pool_out(g->ih, g->kh, g->ph, g->sh, g->dh, ceil_mode);
  disp__conv_i128 ow = pool_out(g->iw, g->kw, g->pw, g->sw, g->dw, ceil_mode);
  if (oh < 1 || ow < 1) {
    char hs[48], ws[48];
    disp__conv_format_i128(hs, sizeof hs, oh);
    disp__conv_format_i128(ws, sizeof ws, ow);
    return FAIL("%s: Given input size: (%lldx%lldx%lld). Calculated output size: (%lldx%sx%s). Output "
                "size is too small", op, (long long)g->planes, (long long)g->ih, (long long)g->iw,
                (long long)g->planes, hs, ws);
  }
  g->oh = (int64_t)oh, g->ow = (int64_t)ow;
  g->cl = disp__conv_channels_last(self);
  return DISP_OK;
}

static void out_sizes(const pool_geom *g, int64_t *sz, int *nd) {
  int n = 0;
  if (g->batched) sz[n++] = g->nbatch;
  sz[n++] = g->planes, sz[n++] = g->oh, sz[n++] = g->ow;
  *nd = n;
}

static disp_status check_dtype(const char *op, disp_dtype dt) {
  if (dt == DISP_DTYPE_FLOAT32 || dt == DISP_DTYPE_FLOAT64 || dt == DISP_DTYPE_BFLOAT16) return DISP_OK;
  (void)op;
  return FAIL("%s: \"max_pool2d\" not implemented for '%s'", op, disp_dtype_torch_name(dt));
}

static disp_status alloc_outs(const pool_geom *g, disp_tensor *self, disp_tensor **out, disp_tensor **idx) {
  int64_t sz[4];
  int nd;
  out_sizes(g, sz, &nd);
  disp_status st = disp__conv_empty(sz, nd, disp__t_dtype(self), disp__t_device(self), g->cl, out);
  if (st != DISP_OK) return st;
  st = disp__conv_empty(sz, nd, DISP_DTYPE_INT64, disp__t_device(self), g->cl, idx);
  if (st != DISP_OK) {
    disp_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

disp_status disp__meta_max_pool2d_with_indices(disp_tensor *self, disp_int_list kernel_size,
                                               disp_int_list stride, disp_int_list padding,
                                               disp_int_list dilation, bool ceil_mode, disp_tensor **out0,
                                               disp_tensor **out1) {
  pool_geom g;
  disp_status st = pool_geometry("max_pool2d_with_indices", self, kernel_size, stride, padding, dilation,
                                 ceil_mode, &g);
  if (st != DISP_OK) return st;
  return alloc_outs(&g, self, out0, out1);
}

/* The loops, once per compute type: float for float32 tensors (1.13's
 * float32 kernels compare and accumulate in float), double for the rest. */
#define CT float
#define CT_IS_FLOAT 1
#define CSFX _f32
#include "pool_prim.h"
#define CT double
#define CSFX _f64
#include "pool_prim.h"

/* Least planes per thread: about DISP_GRAIN_SIZE window taps. */
static int64_t plane_grain(const pool_geom *g) {
  double per = (double)g->oh * (double)g->ow * (double)g->kh * (double)g->kw; /* int64 may overflow */
  return per >= DISP_GRAIN_SIZE ? 1 : DISP_GRAIN_SIZE / (int64_t)(per > 1 ? per : 1) + 1;
}

/* The compute type: float for float32, double for the rest (exact for bfloat16). */
static disp_dtype pool_ct(disp_dtype dt) { return dt == DISP_DTYPE_FLOAT32 ? DISP_DTYPE_FLOAT32 : DISP_DTYPE_FLOAT64; }

/* The windows of every output row and column (the same for every plane). */
static pool_taps *make_taps(const pool_geom *g) {
  pool_taps *t = disp__malloc(sizeof(pool_taps) * (size_t)(g->oh + g->ow));
  for (int64_t i = 0; t && i < g->oh; i++) t[i] = window_taps(i * g->sh - g->ph, g->kh, g->dh, g->ih);
  for (int64_t i = 0; t && i < g->ow; i++) t[g->oh + i] = window_taps(i * g->sw - g->pw, g->kw, g->dw, g->iw);
  return t;
}

/* [*lo, *hi): of the n windows t (k taps, the i-th starting at i * s -
 * pad), those all inside the input; they are consecutive. */
static void inside_range(const pool_taps *t, int64_t n, int64_t k, int64_t s, int64_t pad, int64_t *lo,
                         int64_t *hi) {
  int64_t a = 0, b;
  while (a < n && !(t[a].n == k && t[a].first == a * s - pad)) a++;
  for (b = a; b < n && t[b].n == k && t[b].first == b * s - pad;) b++;
  *lo = a, *hi = b;
}

/* Whether float32's kernel-table 2x2 kernels apply: windows two taps wide,
 * adjacent, at stride 2, and a plane's indices within int32. */
static int pool_is_2x2(const pool_geom *g) {
  return g->kw == 2 && g->sw == 2 && g->dw == 1 && g->iw <= INT32_MAX / g->ih;
}

/* max_pool2d's forward in compute type ct over x into y and ix. */
static void max_pool_run(const pool_geom *g, disp_dtype ct, const pool_taps *t, const void *x, void *y, int64_t *ix) {
  int64_t np = g->nbatch * g->planes, grain = plane_grain(g);
  int64_t lo, hi;
  inside_range(t + g->oh, g->ow, g->kw, g->sw, g->pw, &lo, &hi);
  if (ct == DISP_DTYPE_FLOAT32) {
    max_job_f32 j = {g, t, t + g->oh, lo, hi, pool_is_2x2(g), 0, 0, x, y, ix};
    /* with two rows of taps, the inside rows run in one call a plane */
    if (j.two_by_two && g->kh == 2) inside_range(t, g->oh, g->kh, g->sh, g->ph, &j.blk_lo, &j.blk_hi);
    disp__parallel_for(0, np, grain, max_planes_f32, &j);
  } else {
    max_job_f64 j = {g, t, t + g->oh, lo, hi, 0, 0, 0, x, y, ix};
    disp__parallel_for(0, np, grain, max_planes_f64, &j);
  }
}

disp_status disp__cpu_max_pool2d_with_indices(disp_tensor *self, disp_int_list kernel_size,
                                              disp_int_list stride, disp_int_list padding,
                                              disp_int_list dilation, bool ceil_mode, disp_tensor **out0,
                                              disp_tensor **out1) {
  pool_geom g;
  disp_status st = pool_geometry("max_pool2d_with_indices", self, kernel_size, stride, padding, dilation,
                                 ceil_mode, &g);
  if (st == DISP_OK) st = check_dtype("max_pool2d_with_indices", disp__t_dtype(self));
  if (st != DISP_OK) return st;
  disp_tensor *out, *idx;
  if ((st = alloc_outs(&g, self, &out, &idx)) != DISP_OK) return st;
  disp_dtype ct = pool_ct(disp__t_dtype(self));
  void *xo = NULL, *yo = NULL, *io = NULL;
  const void *x = disp__conv_view_as(self, ct, &xo);
  void *y = disp__conv_out_as(out, ct, &yo);
  int64_t *ix = disp__conv_out_as(idx, DISP_DTYPE_INT64, &io);
  pool_taps *t = make_taps(&g);
  if (x && y && ix && t) max_pool_run(&g, ct, t, x, y, ix);
  else st = disp_set_error(DISP_ERR_NO_MEMORY, "max_pool2d_with_indices: out of memory");
  disp__free(t), disp__free(xo);
  disp__conv_out_done(out, yo, ct, st == DISP_OK);
  disp__conv_out_done(idx, io, DISP_DTYPE_INT64, st == DISP_OK);
  if (st != DISP_OK) {
    disp_tensor_release(out), disp_tensor_release(idx);
    return st;
  }
  *out0 = out;
  *out1 = idx;
  return DISP_OK;
}

static disp_status backward_geometry(disp_tensor *grad_output, disp_tensor *self, disp_int_list kernel_size,
                                     disp_int_list stride, disp_int_list padding, disp_int_list dilation,
                                     bool ceil_mode, disp_tensor *indices, pool_geom *g) {
  const char *op = "max_pool2d_with_indices_backward";
  disp_status st = pool_geometry(op, self, kernel_size, stride, padding, dilation, ceil_mode, g);
  if (st != DISP_OK) return st;
  int nd = disp__t_ndim(self);
  const int64_t want[3] = {g->planes, g->oh, g->ow};
  disp_tensor *ts[2] = {grad_output, indices};
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < 3; i++) {
      int d = nd - 3 + i;
      if (disp__t_ndim(ts[t]) != nd || disp__t_size(ts[t], d) != want[i])
        return FAIL("%s: Expected a tensor of dimension %d and tensor.size[%d] == %lld but got: dimension %d "
                    "and tensor.size[%d] = %lld", op, nd, d, (long long)want[i], disp__t_ndim(ts[t]), d,
                    (long long)(d < disp__t_ndim(ts[t]) ? disp__t_size(ts[t], d) : 0));
    }
  if (disp__t_dtype(indices) != DISP_DTYPE_INT64)
    return FAIL("%s: expected indices of dtype Long, got %s", op, disp_dtype_torch_name(disp__t_dtype(indices)));
  if (disp__t_dtype(grad_output) != disp__t_dtype(self))
    return FAIL("%s: expected scalar type %s but found %s", op, disp_dtype_torch_name(disp__t_dtype(self)),
                disp_dtype_torch_name(disp__t_dtype(grad_output)));
  return DISP_OK;
}

disp_status disp__meta_max_pool2d_with_indices_backward(disp_tensor *grad_output, disp_tensor *self,
                                                        disp_int_list kernel_size, disp_int_list stride,
                                                        disp_int_list padding, disp_int_list dilation,
                                                        bool ceil_mode, disp_tensor *indices,
                                                        disp_tensor **out0) {
  pool_geom g;
  disp_status st = backward_geometry(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode,
                                     indices, &g);
  if (st != DISP_OK) return st;
  return disp__conv_empty(disp__t_sizes(self), disp__t_ndim(self), disp__t_dtype(self), disp__t_device(self), g.cl,
                          out0);
}

/* Whether float32's kernel-table 2x2 backward applies: 2x2 windows at
 * stride 2 that tile the plane from the top-left (not overlapping, none in
 * the padding), indices within int32. */
static int unpool_is_2x2(const pool_geom *g) {
  return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->dh == 1 && g->dw == 1 && g->ph == 0 &&
         g->pw == 0 && 2 * g->oh <= g->ih && 2 * g->ow <= g->iw && g->iw <= INT32_MAX / g->ih;
}

/* The zero-fill and scatter in compute type ct; the first bad position, or INT64_MAX. */
static int64_t scatter_run(const pool_geom *g, disp_dtype ct, const void *dy, const int64_t *ix, void *dx) {
  int64_t np = g->nbatch * g->planes, grain = plane_grain(g);
  if (ct == DISP_DTYPE_FLOAT32) {
    scatter_job_f32 j = {g, dy, ix, dx, unpool_is_2x2(g), INT64_MAX};
    disp__parallel_for(0, np, grain, scatter_planes_f32, &j);
    return atomic_load(&j.first_bad);
  }
  scatter_job_f64 j = {g, dy, ix, dx, 0, INT64_MAX};
  disp__parallel_for(0, np, grain, scatter_planes_f64, &j);
  return atomic_load(&j.first_bad);
}

disp_status disp__cpu_max_pool2d_with_indices_backward(disp_tensor *grad_output, disp_tensor *self,
                                                       disp_int_list kernel_size, disp_int_list stride,
                                                       disp_int_list padding, disp_int_list dilation,
                                                       bool ceil_mode, disp_tensor *indices,
                                                       disp_tensor **out0) {
  const char *op = "max_pool2d_with_indices_backward";
  pool_geom g;
  disp_status st = backward_geometry(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode,
                                     indices, &g);
  if (st == DISP_OK) st = check_dtype(op, disp__t_dtype(self));
  if (st != DISP_OK) return st;
  disp_tensor *gi;
  if ((st = disp__conv_empty(disp__t_sizes(self), disp__t_ndim(self), disp__t_dtype(self), disp__t_device(self), g.cl,
                             &gi)) != DISP_OK)
    return st;
  disp_dtype ct = pool_ct(disp__t_dtype(self));
  void *dyo = NULL, *ixo = NULL, *dxo = NULL;
  const void *dy = disp__conv_view_as(grad_output, ct, &dyo);
  const int64_t *ix = disp__conv_view_as(indices, DISP_DTYPE_INT64, &ixo);
  void *dx = disp__conv_out_as(gi, ct, &dxo);
  if (!dy || !ix || !dx) st = disp_set_error(DISP_ERR_NO_MEMORY, "%s: out of memory", op);
  if (st == DISP_OK) {
    int64_t bad = scatter_run(&g, ct, dy, ix, dx);
    if (bad != INT64_MAX)
      /* printed as a double, as before (INT64_MAX shows as 2^63) */
      st = FAIL("%s: index %.0f is out of bounds for an input plane of %lld elements", op, (double)ix[bad],
                (long long)(g.ih * g.iw));
  }
  disp__free(dyo), disp__free(ixo);
  disp__conv_out_done(gi, dxo, ct, st == DISP_OK);
  if (st != DISP_OK) {
    disp_tensor_release(gi);
    return st;
  }
  *out0 = gi;
  return DISP_OK;
}

disp_status disp__cia_max_pool2d(disp_tensor *self, disp_int_list kernel_size, disp_int_list stride,
                                 disp_int_list padding, disp_int_list dilation, bool ceil_mode,
                                 disp_tensor **out0) {
  disp_tensor *out = NULL, *idx = NULL;
  disp_status st = disp_aten_max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode,
                                                     &out, &idx);
  if (st != DISP_OK) return st;
  disp_tensor_release(idx);
  *out0 = out;
  return DISP_OK;
}
