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
  /* float: whether the kernel table's 2x2 kernel runs the inside columns
   * of rows with two taps, and the rows [blk_lo, blk_hi) it runs in one
   * call a plane (consecutive, their windows inside); else 0 */
  int two_by_two;
  int64_t blk_lo, blk_hi;
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

#ifdef CT_IS_FLOAT
/* The inside columns of rows [r0, r1) of a plane through the kernel
 * table's 2x2 kernel (each row's two taps dh rows apart; several rows in a
 * call only when their windows lie inside, so sh rows apart). */
static void PP(max_rows_2x2)(const PP(max_job) *j, const CT *xp, CT *yp, int64_t *ixp, int64_t r0, int64_t r1) {
  const pool_geom *g = j->g;
  if (j->in_lo == j->in_hi) return;
  int64_t first = j->rows[r0].first * g->iw + j->cols[j->in_lo].first, o = r0 * g->ow + j->in_lo;
  disp__cpu_kernels()->max_pool2x2_f32(xp + first, g->sh * g->iw, g->dh * g->iw, first, r1 - r0,
                                       j->in_hi - j->in_lo, yp + o, ixp + o, g->ow);
}
#endif

/* Output row oh of a plane: the edge windows, and unless the 2x2 block
 * call ran them (in_block), the inside ones. */
static void PP(max_row)(const PP(max_job) *j, const CT *xp, CT *yp, int64_t *ixp, int64_t oh, int in_block) {
  const pool_geom *g = j->g;
  pool_taps r = j->rows[oh];
  /* rows without taps, or too many for int32 tap numbers, take the general path */
  int inner = r.n > 0 && r.n <= INT32_MAX / g->kw;
  int64_t lo_in = inner ? j->in_lo : g->ow, hi_in = inner ? j->in_hi : g->ow;
  CT *y = yp + oh * g->ow;
  int64_t *ix = ixp + oh * g->ow;
  PP(max_row_edge)(g, r, j->cols, xp, y, ix, 0, lo_in);
  if (in_block) {
    /* the block call did the inside windows */
#ifdef CT_IS_FLOAT
  } else if (j->two_by_two && r.n == 2) {
    PP(max_rows_2x2)(j, xp, yp, ixp, oh, oh + 1);
#endif
  } else {
    PP(max_row_inner)(g, r, xp, y, ix, lo_in, hi_in);
  }
  PP(max_row_edge)(g, r, j->cols, xp, y, ix, hi_in, g->ow);
}

static void PP(max_planes)(int64_t lo, int64_t hi, void *arg) {
  const PP(max_job) *j = arg;
  const pool_geom *g = j->g;
  /* the block's rows need a visit only for their edge columns */
  int blk_edges = j->in_lo > 0 || j->in_hi < g->ow;
  for (int64_t p = lo; p < hi; p++) {
    const CT *xp = j->x + p * g->ih * g->iw;
    CT *yp = j->y + p * g->oh * g->ow;
    int64_t *ixp = j->ix + p * g->oh * g->ow;
#ifdef CT_IS_FLOAT
    if (j->blk_lo < j->blk_hi) PP(max_rows_2x2)(j, xp, yp, ixp, j->blk_lo, j->blk_hi);
#endif
    for (int64_t oh = 0; oh < j->blk_lo; oh++) PP(max_row)(j, xp, yp, ixp, oh, 0);
    for (int64_t oh = j->blk_lo; blk_edges && oh < j->blk_hi; oh++) PP(max_row)(j, xp, yp, ixp, oh, 1);
    for (int64_t oh = j->blk_hi; oh < g->oh; oh++) PP(max_row)(j, xp, yp, ixp, oh, 0);
  }
}

/* Planes [lo, hi) of the backward: dx of a plane is zeroed, then gathers
 * only its own grads, in the serial order (1.13 accumulates in the element
 * type). The first bad index (lowest position) is kept for the message, as
 * a serial walk would stop at it. */
typedef struct PP(scatter_job) {
  const pool_geom *g;
  const CT *dy;
  const int64_t *ix;
  CT *dx;
  int unpool_2x2; /* float: the windows are 2x2 at stride 2 and tile the planes from the top-left */
  _Atomic int64_t first_bad;
} PP(scatter_job);

static void PP(scatter_planes)(int64_t lo, int64_t hi, void *arg) {
  PP(scatter_job) *j = arg;
  const pool_geom *g = j->g;
  int64_t plane_in = g->ih * g->iw, plane_out = g->oh * g->ow;
  for (int64_t p = lo; p < hi; p++) {
    const CT *dyp = j->dy + p * plane_out;
    const int64_t *ixp = j->ix + p * plane_out;
    CT *dxp = j->dx + p * plane_in;
#ifdef CT_IS_FLOAT
    /* when every index is in its own window (the kernel checks), the
     * windows' writes are the zero-fill and scatter's result */
    if (j->unpool_2x2 && disp__cpu_kernels()->max_pool2x2_backward_f32(dxp, g->ih, g->iw, dyp, ixp, g->oh, g->ow))
      continue;
#endif
    memset(dxp, 0, sizeof(CT) * (size_t)plane_in);
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
#undef CSFX
