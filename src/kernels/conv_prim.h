/*
 * conv_prim.h - the convolution primitives of conv.c (im2col/col2im and the
 * three GEMM products), written once for a compute type. conv.c includes
 * it once per type after defining CT (the element type), CSFX (the name
 * suffix), CGEMM (gemm.h's product of that type) and, for float,
 * CT_IS_FLOAT; each inclusion undefines them. No include guard, on purpose.
 */
#define CP_CAT2(a, b) a##b
#define CP_CAT(a, b) CP_CAT2(a, b)
#define CP(name) CP_CAT(name, CSFX)

/* CP(im2col) and CP(col2im) run over channels on the library's threads: each
 * channel reads (writes) only its own rows of cols and plane of x. */
typedef struct CP(cols_job) {
  const geom *gm;
  CT *x, *cols;
} CP(cols_job);

#if CONV_HAVE_VECTORS
/* 16 bytes of CT (the baseline's SSE register; a 32-byte vector would go
 * through the stack there): the row loops below go a vector at a time, as
 * the -O2 build vectorizes no loop; each element's operation is the same
 * either way, so results do not change. */
typedef CT CP(vec) __attribute__((vector_size(16)));
enum { CP(VLEN) = 16 / sizeof(CT) };
#endif

/* dst[i] += src[i] for i < n. */
static void CP(add_to)(CT *dst, const CT *src, int64_t n) {
  int64_t i = 0;
#if CONV_HAVE_VECTORS
  for (; i + CP(VLEN) <= n; i += CP(VLEN)) {
    CP(vec) a, b;
    memcpy(&a, dst + i, sizeof a);
    memcpy(&b, src + i, sizeof b);
    a += b;
    memcpy(dst + i, &a, sizeof a);
  }
#endif
  for (; i < n; i++) dst[i] += src[i];
}

/* dst[i] = v for i < n. */
static void CP(fill)(CT *dst, CT v, int64_t n) {
  int64_t i = 0;
#if CONV_HAVE_VECTORS
  CP(vec) vv = {0};
  vv += v;
  for (; i + CP(VLEN) <= n; i += CP(VLEN)) memcpy(dst + i, &vv, sizeof vv);
#endif
  for (; i < n; i++) dst[i] = v;
}

/* Zeroes the padded columns [0, lo) and [hi, W) of rows [a, b) of tap t
 * in p (a plane of width W), a column at a time: strided stores, where a
 * loop per row becomes two tiny memset calls per row. */
static void CP(zero_pad_columns)(CT *p, int64_t W, const tap_span *t) {
  for (int64_t ow = 0; ow < t->lo; ow++)
    for (int64_t oh = t->a; oh < t->b; oh++) p[oh * W + ow] = 0;
  for (int64_t ow = t->hi; ow < W; ow++)
    for (int64_t oh = t->a; oh < t->b; oh++) p[oh * W + ow] = 0;
}

/* same_width (conv.c): tap t's row of columns for one depth slice, dst
 * (out[1] x W), from the input plane xp (in[1] x W) or NULL (a padded
 * slice): the inside block copied at once, every other position zero. */
static void CP(shift_copy)(const geom *gm, const tap_span *t, const CT *xp, CT *dst) {
  int64_t W = gm->out[2], n = gm->out[1] * W;
  if (!xp || t->empty) {
    memset(dst, 0, sizeof(CT) * (size_t)n);
    return;
  }
  memset(dst, 0, sizeof(CT) * (size_t)t->q0);
  memcpy(dst + t->q0, xp + (t->q0 + t->shift), sizeof(CT) * (size_t)(t->q1 - t->q0));
  memset(dst + t->q1, 0, sizeof(CT) * (size_t)(n - t->q1));
  /* the block also copied the neighbouring rows' ends into the padded columns */
  CP(zero_pad_columns)(dst, W, t);
}

/* The adjoint of CP(shift_copy): xp += the inside part of src, as one block
 * after src's padded columns are zeroed (so the block adds +0 there, which
 * leaves every bit of an x that is not -0; x starts as +0, where sums
 * never reach -0, or as a bias, where only a -0 bias with nothing but -0
 * terms could turn +0; each element sees its real terms in the same
 * order). */
static void CP(shift_add)(const geom *gm, const tap_span *t, CT *src, CT *xp) {
  if (t->empty) return;
  CP(zero_pad_columns)(src, gm->out[2], t);
  CP(add_to)(xp + (t->q0 + t->shift), src + t->q0, t->q1 - t->q0);
}

/* One tap's row of the columns (OUT) and one channel xc of the input:
 * CP(im2col_tap) fills the row from xc, CP(col2im_tap) adds it back. t is
 * the tap's span when same_width, else NULL. */
typedef void (*CP(tap_fn))(const geom *gm, const tap_span *t, int64_t kd, int64_t kh, int64_t kw, CT *xc,
                           CT *row);

/* Any geometry: the row of tap (kd, kh, kw) from channel xc. */
static void CP(im2col_row)(const geom *gm, int64_t kd, int64_t kh, int64_t kw, const CT *xc, CT *row) {
  /* the outputs [lo, hi) of a line whose iw = ow*s - p + kw*d falls inside
   * the input line: copied (one memcpy at stride 1); the rest padding */
  int64_t off = kw * gm->d[2] - gm->p[2], lo, hi;
  cols_span(gm, off, &lo, &hi);
  /* one memset for every padded position of the row, not two tiny ones
   * per output line */
  memset(row, 0, sizeof(CT) * (size_t)prod3(gm->out));
  for (int64_t od = 0; od < gm->out[0]; od++) {
    int64_t id = od * gm->s[0] - gm->p[0] + kd * gm->d[0];
    for (int64_t oh = 0; oh < gm->out[1] && id >= 0 && id < gm->in[0]; oh++) {
      int64_t ih = oh * gm->s[1] - gm->p[1] + kh * gm->d[1];
      if (ih < 0 || ih >= gm->in[1] || hi <= lo) continue;
      CT *dst = row + (od * gm->out[1] + oh) * gm->out[2];
      const CT *src = xc + (id * gm->in[1] + ih) * gm->in[2] + off;
      if (gm->s[2] == 1) memcpy(dst + lo, src + lo, sizeof(CT) * (size_t)(hi - lo));
      else
        for (int64_t ow = lo; ow < hi; ow++) dst[ow] = src[ow * gm->s[2]];
    }
  }
}

/* The adjoint of CP(im2col_row): xc += the scatter of row. */
static void CP(col2im_row)(const geom *gm, int64_t kd, int64_t kh, int64_t kw, const CT *row, CT *xc) {
  /* only the outputs [lo, hi) land inside a line (as in CP(im2col_row)):
   * no test per element, same sums */
  int64_t off = kw * gm->d[2] - gm->p[2], lo, hi;
  cols_span(gm, off, &lo, &hi);
  for (int64_t od = 0; od < gm->out[0]; od++) {
    int64_t id = od * gm->s[0] - gm->p[0] + kd * gm->d[0];
    for (int64_t oh = 0; oh < gm->out[1] && id >= 0 && id < gm->in[0]; oh++) {
      int64_t ih = oh * gm->s[1] - gm->p[1] + kh * gm->d[1];
      if (ih < 0 || ih >= gm->in[1] || hi <= lo) continue;
      const CT *src = row + (od * gm->out[1] + oh) * gm->out[2];
      CT *dst = xc + (id * gm->in[1] + ih) * gm->in[2] + off;
      if (gm->s[2] == 1)
        for (int64_t ow = lo; ow < hi; ow++) dst[ow] += src[ow];
      else
        for (int64_t ow = lo; ow < hi; ow++) dst[ow * gm->s[2]] += src[ow];
    }
  }
}

static void CP(im2col_tap)(const geom *gm, const tap_span *t, int64_t kd, int64_t kh, int64_t kw, CT *xc,
                           CT *row) {
  if (!t) {
    CP(im2col_row)(gm, kd, kh, kw, xc, row);
    return;
  }
  int64_t plane_in = gm->in[1] * gm->in[2], plane_out = gm->out[1] * gm->out[2];
  for (int64_t od = 0; od < gm->out[0]; od++) {
    int64_t id = depth_in(gm, od, kd);
    CP(shift_copy)(gm, t, id >= 0 ? xc + id * plane_in : NULL, row + od * plane_out);
  }
}

/* Zeroes the padded positions of row on the way (CP(shift_add)). */
static void CP(col2im_tap)(const geom *gm, const tap_span *t, int64_t kd, int64_t kh, int64_t kw, CT *xc,
                           CT *row) {
  if (!t) {
    CP(col2im_row)(gm, kd, kh, kw, row, xc);
    return;
  }
  int64_t plane_in = gm->in[1] * gm->in[2], plane_out = gm->out[1] * gm->out[2];
  for (int64_t od = 0; od < gm->out[0]; od++) {
    int64_t id = depth_in(gm, od, kd);
    if (id >= 0) CP(shift_add)(gm, t, row + od * plane_out, xc + id * plane_in);
  }
}

/* fn over the rows cols[(c*K + kk)] of channels [c0, c1) of j->x (C x IN),
 * a tap at a time (its span worked out once for every channel). col2im
 * still gives each element of x its terms in tap order: a tap sends at
 * most one term to it. */
static void CP(each_tap)(const CP(cols_job) *j, int64_t c0, int64_t c1, CP(tap_fn) fn) {
  const geom *gm = j->gm;
  int64_t K = prod3(gm->k), OUT = prod3(gm->out), IN = prod3(gm->in);
  int same = same_width(gm);
  for (int64_t kd = 0; kd < gm->k[0]; kd++)
    for (int64_t kh = 0; kh < gm->k[1]; kh++)
      for (int64_t kw = 0; kw < gm->k[2]; kw++) {
        int64_t kk = (kd * gm->k[1] + kh) * gm->k[2] + kw;
        tap_span t = same ? same_tap(gm, kh, kw) : (tap_span){0};
        for (int64_t c = c0; c < c1; c++)
          fn(gm, same ? &t : NULL, kd, kh, kw, j->x + c * IN, j->cols + (c * K + kk) * OUT);
      }
}

static void CP(im2col_range)(int64_t c0, int64_t c1, void *arg) { CP(each_tap)(arg, c0, c1, CP(im2col_tap)); }

static void CP(col2im_range)(int64_t c0, int64_t c1, void *arg) { CP(each_tap)(arg, c0, c1, CP(col2im_tap)); }

/* cols[(c*K + kk)][o] for the cg channels of sample x. */
static void CP(im2col)(const geom *gm, const CT *x, int64_t cg, CT *cols) {
  CP(cols_job) j = {gm, (CT *)(uintptr_t)x, cols};
  disp__parallel_for(0, cg, cols_grain(gm), CP(im2col_range), &j);
}

/* The adjoint of CP(im2col): x += the scatter of cols. */
static void CP(col2im)(const geom *gm, CT *cols, int64_t cg, CT *x) {
  CP(cols_job) j = {gm, x, cols};
  disp__parallel_for(0, cg, cols_grain(gm), CP(col2im_range), &j);
}

static disp__mat CP(dm)(CT *p, int64_t rs, int64_t cs) {
  disp__mat m = {p, rs, cs};
  return m;
}

/* A malloc'd CP(im2col) buffer (ck x OUT), or NULL on overflow or OOM. */
static CT *CP(cols_alloc)(const geom *gm) {
  int64_t ck = gm->ci / gm->g * prod3(gm->k), ncols;
  size_t bytes;
  if (disp__mul_i64(ck, prod3(gm->out), &ncols) || disp__mul_size(sizeof(CT), (size_t)(ncols > 0 ? ncols : 1), &bytes))
    return NULL;
  return disp__malloc(bytes);
}

/* One primitive's arguments and the failure of any of its threads. */
typedef struct CP(prim_job) {
  int prim;
  const geom *gm;
  const CT *a, *b;
  CT *y;
  const double *bias; /* the output's starting value per channel, or NULL (zero) */
  atomic_int failed;
} CP(prim_job);

/* planes consecutive planes of sp elements: plane i set to bias[i], or
 * zeroed when bias is NULL. */
static void CP(init_planes)(CT *y, const double *bias, int64_t planes, int64_t sp) {
  if (!bias) {
    memset(y, 0, sizeof(CT) * (size_t)(planes * sp));
    return;
  }
  for (int64_t i = 0; i < planes; i++) CP(fill)(y + i * sp, (CT)bias[i], sp);
}

/* The forward's product y (og x OUT) = bias (per row; zero when NULL) + w
 * (og x ck) @ cols and the weight gradient's dw (og x ck) += dy (og x OUT)
 * @ cols^T: the kernel table's small-convolution kernels where small_conv
 * (conv.c) picks them, else BLAS. */
static disp_status CP(forward_product)(int64_t og, int64_t OUT, int64_t ck, const CT *w, CT *cols,
                                       const double *bias, CT *y) {
#ifdef CT_IS_FLOAT
  const disp__cpu_kernel_table *kt = small_conv(ck);
  if (kt) {
    /* the starting values rounded to float, as CP(init_planes) rounds them */
    enum { ROWS = 64 };
    float start[ROWS];
    for (int64_t i0 = 0; i0 < og; i0 += ROWS) {
      int64_t rows = og - i0 < ROWS ? og - i0 : ROWS;
      for (int64_t i = 0; i < rows; i++) start[i] = bias ? (float)bias[i0 + i] : 0.0f;
      kt->conv_small_forward_f32(rows, OUT, ck, w + i0 * ck, cols, start, y + i0 * OUT);
    }
    return DISP_OK;
  }
#endif
  CP(init_planes)(y, bias, og, OUT);
  return CGEMM(og, OUT, ck, 1.0, CP(dm)((CT *)w, ck, 1), CP(dm)(cols, OUT, 1), 1.0, CP(dm)(y, OUT, 1));
}

static disp_status CP(weight_product)(int64_t og, int64_t OUT, int64_t ck, const CT *dy, CT *cols, CT *dw) {
#ifdef CT_IS_FLOAT
  const disp__cpu_kernel_table *kt = small_conv(ck);
  if (kt) {
    kt->conv_small_weight_grad_f32(og, OUT, ck, dy, cols, dw);
    return DISP_OK;
  }
#endif
  return CGEMM(og, ck, OUT, 1.0, CP(dm)((CT *)dy, OUT, 1), CP(dm)(cols, 1, OUT), 1.0, CP(dm)(dw, ck, 1));
}

/* FWD or BWD_IN of samples [lo, hi): each writes only its own part of y,
 * so samples run on the library's threads, each with its own columns.
 * Every output starts as the bias (zero without one) and the products
 * accumulate onto it, as 1.13's slow kernels do (output.copy_(bias), then
 * gemm with beta 1, or col2im): no separate pass adds the bias. The
 * products always take beta 1 onto a buffer set here: with beta 0
 * OpenBLAS first zeroes C in a slow pass of its own (OpenBLAS 0.3.21 on
 * Zen, the CNN's 288x196x64 input-gradient product: 98 us with beta 0,
 * 83 us as memset and beta 1, the memset 2.4 us of it). */
static void CP(prim_samples)(int64_t lo, int64_t hi, void *arg) {
  CP(prim_job) *j = arg;
  const geom *gm = j->gm;
  int64_t OUT = prod3(gm->out), IN = prod3(gm->in);
  int64_t cg = gm->ci / gm->g, og = gm->co / gm->g, ck = cg * prod3(gm->k);
  CT *cols = CP(cols_alloc)(gm);
  disp_status st = cols ? DISP_OK : DISP_ERR_NO_MEMORY;
  for (int64_t n = lo; n < hi && st == DISP_OK; n++) {
    if (j->prim == PRIM_BWD_IN) CP(init_planes)(j->y + n * gm->ci * IN, j->bias, gm->ci, IN);
    for (int64_t g = 0; g < gm->g && st == DISP_OK; g++) {
      const CT *w = j->b + g * og * ck;
      if (j->prim == PRIM_FWD) {
        CT *y = j->y + (n * gm->co + g * og) * OUT;
        CP(im2col)(gm, j->a + (n * gm->ci + g * cg) * IN, cg, cols);
        st = CP(forward_product)(og, OUT, ck, w, cols, j->bias ? j->bias + g * og : NULL, y);
      } else {
        memset(cols, 0, sizeof(CT) * (size_t)(ck * OUT));
        st = CGEMM(ck, OUT, og, 1.0, CP(dm)((CT *)w, 1, ck),
                   CP(dm)((CT *)j->a + (n * gm->co + g * og) * OUT, OUT, 1), 1.0, CP(dm)(cols, OUT, 1));
        if (st == DISP_OK) CP(col2im)(gm, cols, cg, j->y + (n * gm->ci + g * cg) * IN);
      }
    }
  }
  disp__free(cols);
  if (st != DISP_OK) atomic_store(&j->failed, 1);
}

/* dw (co x ck) = the weight gradient of samples [n0, n1), summed in sample
 * order (each sample's product added onto the last). */
static disp_status CP(weight_grad_range)(const geom *gm, const CT *x, const CT *dy, int64_t n0, int64_t n1,
                                         CT *dw) {
  int64_t OUT = prod3(gm->out), IN = prod3(gm->in);
  int64_t cg = gm->ci / gm->g, og = gm->co / gm->g, ck = cg * prod3(gm->k);
  CT *cols = CP(cols_alloc)(gm);
  if (!cols) return DISP_ERR_NO_MEMORY;
  disp_status st = DISP_OK;
  memset(dw, 0, sizeof(CT) * (size_t)(gm->co * ck));
  for (int64_t n = n0; n < n1 && st == DISP_OK; n++)
    for (int64_t g = 0; g < gm->g && st == DISP_OK; g++) {
      CP(im2col)(gm, x + (n * gm->ci + g * cg) * IN, cg, cols);
      st = CP(weight_product)(og, OUT, ck, dy + (n * gm->co + g * og) * OUT, cols, dw + g * og * ck);
    }
  disp__free(cols);
  return st;
}

/* BWD_W over chunks of samples (wgrad_chunks in conv.c): chunk c's partial
 * sum into part[c], the chunks on the library's threads. */
typedef struct CP(wgrad_job) {
  const geom *gm;
  const CT *x, *dy;
  CT *part;
  int64_t per; /* samples per chunk */
  atomic_int failed;
} CP(wgrad_job);

static void CP(wgrad_chunks)(int64_t c0, int64_t c1, void *arg) {
  CP(wgrad_job) *j = arg;
  int64_t size = j->gm->co * (j->gm->ci / j->gm->g) * prod3(j->gm->k);
  for (int64_t c = c0; c < c1; c++) {
    int64_t n0 = c * j->per, n1 = n0 + j->per < j->gm->n ? n0 + j->per : j->gm->n;
    if (CP(weight_grad_range)(j->gm, j->x, j->dy, n0, n1, j->part + c * size) != DISP_OK)
      atomic_store(&j->failed, 1);
  }
}

/* BWD_W: dW = the sum over samples. The samples are cut into chunks that
 * depend on the shapes only (wgrad_chunks); each chunk sums its samples in
 * order, the chunks run on the library's threads (one parallel region, not
 * two per sample), and dW adds the chunks' sums in chunk order: the same
 * bits at any thread count. */
static disp_status CP(prim_weight_grad)(const geom *gm, const CT *x, const CT *dy, CT *dw) {
  int64_t size = gm->co * (gm->ci / gm->g) * prod3(gm->k), chunks = wgrad_chunks(gm, sizeof(CT));
  if (chunks <= 1) return CP(weight_grad_range)(gm, x, dy, 0, gm->n, dw);
  CT *part = disp__malloc(sizeof(CT) * (size_t)(chunks * size));
  if (!part) return DISP_ERR_NO_MEMORY;
  CP(wgrad_job) j = {gm, x, dy, part, (gm->n + chunks - 1) / chunks, 0};
  disp__parallel_for(0, chunks, 1, CP(wgrad_chunks), &j);
  if (!atomic_load(&j.failed)) {
    memcpy(dw, part, sizeof(CT) * (size_t)size);
    for (int64_t c = 1; c < chunks; c++) CP(add_to)(dw, part + c * size, size);
  }
  disp__free(part);
  return atomic_load(&j.failed) ? DISP_ERR_NO_MEMORY : DISP_OK;
}

/* Runs one primitive. FWD: a=X, b=W -> y=Y. BWD_IN: a=dY, b=W -> y=dX.
 * BWD_W: a=X, b=dY -> y=dW. Outputs are overwritten; bias (FWD and BWD_IN
 * only, else NULL) is added to every output channel (its value per
 * channel, already rounded to the output dtype). */
static disp_status CP(run_prim)(int prim, const geom *gm, const CT *a, const CT *b, CT *y, const double *bias) {
  disp_status st = DISP_OK;
  if (prim == PRIM_BWD_W) {
    st = CP(prim_weight_grad)(gm, a, b, y);
  } else {
    CP(prim_job) j = {prim, gm, a, b, y, bias, 0};
    /* a sample's work: about its output and its columns */
    double per = ((double)gm->ci * (double)prod3(gm->in) + (double)gm->co * (double)prod3(gm->out)) *
                 (double)prod3(gm->k);
    disp__parallel_for(0, gm->n, work_grain(per), CP(prim_samples), &j);
    if (atomic_load(&j.failed)) st = DISP_ERR_NO_MEMORY;
  }
  /* every failure of a primitive is memory (columns, gemm packing) */
  if (st != DISP_OK) return disp_set_error(DISP_ERR_NO_MEMORY, "convolution: out of memory");
  return DISP_OK;
}


/* One (sample, channel) plane of the bias gradient summed alone: float
 * with the CPU capability's vector cascade sum (the kernel of 1.13's
 * at::sum), double in order. */
static CT CP(plane_sum)(const CT *p, int64_t len) {
#ifdef CT_IS_FLOAT
  return disp__cpu_kernels()->sum_f32(p, len);
#else
  CT s = 0;
  for (int64_t k = 0; k < len; k++) s += p[k];
  return s;
#endif
}

/* r[c] = the sum of dy[n, c, ...] over n and the spatial dims, in the order
 * of 1.13's at::sum_out(grad_bias, grad_output, {0, 2, 3}): each plane
 * summed alone (CP(plane_sum)), the planes added into r[c] in sample order.
 * Channels [c0, c1) go to one thread, which walks them sample by sample
 * (memory in order); each r[c] sees the same additions at any thread
 * count. */
typedef struct CP(bias_job) {
  CT *r;
  const CT *dy;
  int64_t n, c, sp;
} CP(bias_job);

static void CP(sum_bias_range)(int64_t c0, int64_t c1, void *arg) {
  const CP(bias_job) *j = arg;
  for (int64_t ch = c0; ch < c1; ch++) j->r[ch] = 0;
  for (int64_t i = 0; i < j->n; i++)
    for (int64_t ch = c0; ch < c1; ch++) j->r[ch] += CP(plane_sum)(j->dy + (i * j->c + ch) * j->sp, j->sp);
}

static void CP(sum_bias)(CT *r, const CT *dy, int64_t n, int64_t c, int64_t sp) {
  CP(bias_job) j = {r, dy, n, c, sp};
  disp__parallel_for(0, c, work_grain((double)n * (double)sp), CP(sum_bias_range), &j);
}

#undef CP
#undef CP_CAT
#undef CP_CAT2
#undef CT
#undef CT_IS_FLOAT
#undef CSFX
#undef CGEMM
