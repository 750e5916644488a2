/*
 * pool_prim.h - max_pool2d's forward and backward loops of pool.c, written
 * once for a compute type. pool.c includes it once per type after defining
 * CT (the element type), CSFX (the name suffix) and, for float,
 * CT_IS_FLOAT; each inclusion undefines them. No include guard, on purpose.
 */
#define PP_CAT2(a, b) a##b
#define PP_CAT(a, b) PP_CAT2(a, b)
#define PP(name) PP_CAT(name, CSFX)

/* Planes [lo, hi) of max_pool2d's forward: each writes only its own
 * outputs, so the planes run on the library's threads. */
typedef struct PP(max_job) {
  const pool_geom *g;
  const pool_taps *rows, *cols; /* the window of each output row, column */
  int64_t in_lo, in_hi;         /* the columns whose windows lie inside */
  const CT *x;
  CT *y;
  int64_t *ix;
} PP(max_job);

/* Outputs [o0, o1) of row r whose windows lie inside the plane (kw taps,
 * the first at ow * sw - pw; r.n * kw below 2^31): tap by tap over the
 * outputs, keeping each output's best tap number (int32, the lanes of a
 * float), so the inner loop is branch-free and vectorizes. Each output
 * still sees its taps in the serial order, so the results are the same. */
static void PP(max_row_inner)(const pool_geom *g, pool_taps r, const CT *xp, CT *y, int64_t *ix, int64_t o0,
                              int64_t o1) {
  enum { CHUNK = 64, TAPS = 256 };
  if (o0 >= o1) return; /* no inside windows: the offsets below may not fit */
  /* each tap's offset from the window's first, so indices need no
   * division (windows of up to TAPS taps, the usual ones) */
  int64_t offs[TAPS], *off = r.n * g->kw <= TAPS ? offs : NULL;
  for (int64_t t = 0; off && t < r.n * g->kw; t++) off[t] = (t / g->kw) * g->dh * g->iw + (t % g->kw) * g->dw;
  for (int64_t c0 = o0; c0 < o1; c0 += CHUNK) {
    int64_t m = o1 - c0 < CHUNK ? o1 - c0 : CHUNK, sw = g->sw;
    CT mv[CHUNK];
    int32_t bt[CHUNK];
    for (int64_t i = 0; i < m; i++) mv[i] = (CT)-INFINITY, bt[i] = 0;
    for (int64_t a = 0; a < r.n; a++)
      for (int64_t b = 0; b < g->kw; b++) {
        const CT *xr = xp + (r.first + a * g->dh) * g->iw + b * g->dw - g->pw + c0 * sw;
        int32_t t = (int32_t)(a * g->kw + b);
        for (int64_t i = 0; i < m; i++) {
          CT v = xr[i * sw];
          int take = (v > mv[i]) | (v != v);
          mv[i] = take ? v : mv[i];
          bt[i] = take ? t : bt[i];
        }
      }
    memcpy(y + c0, mv, sizeof(CT) * (size_t)m);
    int64_t first = r.first * g->iw - g->pw + c0 * sw;
    if (off) {
      for (int64_t i = 0; i < m; i++) ix[c0 + i] = first + off[bt[i]] + i * sw;
    } else {
      for (int64_t i = 0; i < m; i++)
        ix[c0 + i] = first + (bt[i] / g->kw) * g->dh * g->iw + (bt[i] % g->kw) * g->dw + i * sw;
    }
  }
}

/* max_row_inner for the usual 2x2 window at stride 2 (kw 2, sw 2, dw 1,
 * r.n 2) of float, four outputs at a time in one SSE-sized vector (GCC/Clang
 * vector extensions: the build's -O2 vectorizes no loop here, and branches
 * on comparisons of random data mispredict half the time). Tap by tap,
 * branch-free; each output still sees its taps in the serial order (the
 * first is kept unless a later one is larger or NaN), so the results are
 * max_row_inner's. The taps of a row are the even and odd elements of 8
 * consecutive ones. */
#if POOL_HAVE_VECTORS && defined(CT_IS_FLOAT)
#define PP_LANES 4
typedef float PP(vec) __attribute__((vector_size(16)));
typedef int32_t PP(ivec) __attribute__((vector_size(16))); /* its comparisons' masks */

static void PP(max4_2x2)(const CT *x0, int64_t step, CT *y, int64_t *ix, int64_t k0) {
  PP(vec) lo, hi, tap[4];
  for (int r = 0; r < 2; r++) {
    memcpy(&lo, x0 + r * step, sizeof lo);
    memcpy(&hi, x0 + r * step + 4, sizeof hi);
    tap[2 * r] = __builtin_shufflevector(lo, hi, 0, 2, 4, 6);
    tap[2 * r + 1] = __builtin_shufflevector(lo, hi, 1, 3, 5, 7);
  }
  PP(vec) m = tap[0];
  PP(ivec) bt = {0}; /* the best tap of each output, 0..3 */
  for (int t = 1; t < 4; t++) {
    PP(vec) v = tap[t];
    PP(ivec) take = (v > m) | (v != v);
    m = (PP(vec))(((PP(ivec))v & take) | ((PP(ivec))m & ~take));
    bt = (bt & ~take) | (take & t);
  }
  memcpy(y, &m, sizeof m);
  for (int i = 0; i < 4; i++) ix[i] = k0 + 2 * i + (bt[i] & 1) + (bt[i] >> 1) * step;
}

static void PP(max_row_2x2)(const pool_geom *g, pool_taps r, const CT *xp, CT *y, int64_t *ix, int64_t o0,
                            int64_t o1) {
  const int64_t row0 = r.first * g->iw - g->pw, step = g->dh * g->iw;
  if (o1 - o0 < PP_LANES) {
    PP(max_row_inner)(g, r, xp, y, ix, o0, o1);
    return;
  }
  /* the last group may overlap the one before: its outputs are written
   * twice with the same values */
  for (int64_t ow = o0;; ow += PP_LANES) {
    ow = ow + PP_LANES > o1 ? o1 - PP_LANES : ow;
    PP(max4_2x2)(xp + row0 + 2 * ow, step, y + ow, ix + ow, row0 + 2 * ow);
    if (ow + PP_LANES == o1) break;
  }
}
#endif

/* Outputs [o0, o1) of row r, any window (padding, empty, huge dilation). */
static void PP(max_row_edge)(const pool_geom *g, pool_taps r, const pool_taps *cols, const CT *xp, CT *y,
                             int64_t *ix, int64_t o0, int64_t o1) {
  for (int64_t ow = o0; ow < o1; ow++) {
    pool_taps c = cols[ow];
    int64_t best = empty_index(r, c, g->iw);
    CT mv = (CT)-INFINITY;
    for (int64_t a = 0; a < r.n; a++) {
      int64_t at = (r.first + a * g->dh) * g->iw + c.first;
      for (int64_t b = 0; b < c.n; b++, at += g->dw) {
        CT v = xp[at];
        if (v > mv || v != v) mv = v, best = at;
      }
    }
    y[ow] = mv;
    ix[ow] = best;
  }
}

static void PP(max_planes)(int64_t lo, int64_t hi, void *arg) {
  const PP(max_job) *j = arg;
  const pool_geom *g = j->g;
  for (int64_t p = lo; p < hi; p++) {
    const CT *xp = j->x + p * g->ih * g->iw;
    for (int64_t oh = 0; oh < g->oh; oh++) {
      pool_taps r = j->rows[oh];
      /* rows without taps, or too many for int32 tap numbers, take the general path */
      int inner = r.n > 0 && r.n <= INT32_MAX / g->kw;
      int64_t o = (p * g->oh + oh) * g->ow, lo_in = inner ? j->in_lo : g->ow, hi_in = inner ? j->in_hi : g->ow;
      CT *y = j->y + o;
      int64_t *ix = j->ix + o;
      PP(max_row_edge)(g, r, j->cols, xp, y, ix, 0, lo_in);
#ifdef PP_LANES
      if (r.n == 2 && g->kw == 2 && g->sw == 2 && g->dw == 1) PP(max_row_2x2)(g, r, xp, y, ix, lo_in, hi_in);
      else
#endif
        PP(max_row_inner)(g, r, xp, y, ix, lo_in, hi_in);
      PP(max_row_edge)(g, r, j->cols, xp, y, ix, hi_in, g->ow);
    }
  }
}

/* Planes [lo, hi) of the backward: dx of a plane gathers only its own
 * grads, in the serial order (1.13 accumulates in the element type). The
 * first bad index (lowest position) is kept for the message, as a serial
 * walk would stop at it. */
typedef struct PP(scatter_job) {
  const pool_geom *g;
  const CT *dy;
  const int64_t *ix;
  CT *dx;
  _Atomic int64_t first_bad;
} PP(scatter_job);

static void PP(scatter_planes)(int64_t lo, int64_t hi, void *arg) {
  PP(scatter_job) *j = arg;
  int64_t plane_in = j->g->ih * j->g->iw, plane_out = j->g->oh * j->g->ow;
  for (int64_t p = lo; p < hi; p++) {
    const CT *dyp = j->dy + p * plane_out;
    const int64_t *ixp = j->ix + p * plane_out;
    CT *dxp = j->dx + p * plane_in;
    for (int64_t o = 0; o < plane_out; o++) {
      int64_t k = ixp[o];
      if (k < 0 || k >= plane_in) {
        int64_t q = p * plane_out + o, seen = atomic_load(&j->first_bad);
        while (q < seen && !atomic_compare_exchange_weak(&j->first_bad, &seen, q)) {
        }
        return;
      }
      dxp[k] += dyp[o];
    }
  }
}

#undef PP
#undef PP_CAT
#undef PP_CAT2
#undef CT
#undef CT_IS_FLOAT
#undef PP_LANES
#undef CSFX
