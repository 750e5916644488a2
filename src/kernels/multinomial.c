/*
 * multinomial.c - aten::multinomial: num_samples category indices per row
 * of a 1-D or 2-D tensor of non-negative weights.
 *
 * The algorithms are 1.13's (Distributions.cpp, MultinomialKernel.cpp):
 * without replacement, the exponential trick, the top
 * num_samples of p / q with q ~ Exp(1) (argmax for one sample; topk's
 * order for more, through stl_order.c); with replacement, a binary search
 * of a uniform draw in the row's normalised cumulative sum. The checks and
 * messages are 1.13's, in its order. The draws come from libdispatch's
 * device generator (README, difference 10), so the samples are not
 * 1.13's: tests check their properties (tools/check_ops.c,
 * tests/test_multinomial.c). A Generator argument is refused; draws follow
 * disp_manual_seed.
 *
 * One body serves the CPU and the Meta key (manifest: META_IS_CPU): a Meta
 * call makes the geometry after the checks that need no values.
 */
#include <math.h>

#include "alloc_internal.h"
#include "aten_internal.h"
#include "aten_kernels.h"
#include "random.h"
#include "stl_order.h"
#include "tensor/dtype_cast.h"
#include "tensor_iter.h"

#define MAX_CATEGORIES (INT64_C(1) << 24) /* FLOAT32_MAX_CONSECUTIVE_INT */

static disp_status check_args(disp_tensor *self, int64_t n, bool replacement, void *generator) {
  if (generator)
    return disp_set_error(DISP_ERR_INVALID_ARG, "multinomial: a Generator argument is not supported; pass None "
                                                "(draws come from the device generator, disp_manual_seed)");
  int nd = disp__t_ndim(self);
  if (nd < 1 || nd > 2) return disp_set_error(DISP_ERR_INVALID_ARG, "prob_dist must be 1 or 2 dim");
  if (!disp_dtype_is_floating(disp__t_dtype(self)))
    return disp_set_error(DISP_ERR_TYPE, "multinomial only supports floating-point dtypes for input, got: %s",
                          disp_dtype_torch_name(disp__t_dtype(self)));
  if (n <= 0) return disp_set_error(DISP_ERR_INVALID_ARG, "cannot sample n_sample <= 0 samples");
  int64_t ncat = disp__t_size(self, nd - 1);
  if (!replacement && n > ncat)
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  if (ncat > MAX_CATEGORIES) return disp_set_error(DISP_ERR_INVALID_ARG, "number of categories cannot exceed 2^24");
  return DISP_OK;
}

/* 1.13's checks of the fast path, over the whole tensor (p: rows x ncat). */
static disp_status check_fast(const double *p, int64_t rows, int64_t ncat) {
  for (int64_t e = 0; e < rows * ncat; e++)
    if (!(p[e] < INFINITY) || !(p[e] >= 0))
      return disp_set_error(DISP_ERR_INVALID_ARG, "probability tensor contains either `inf`, `nan` or element < 0");
  for (int64_t r = 0; r < rows; r++) {
    double s = 0;
    for (int64_t j = 0; j < ncat; j++) s += p[r * ncat + j];
    if (s == 0) return disp_set_error(DISP_ERR_INVALID_ARG, "invalid multinomial distribution (sum of probabilities <= 0)");
  }
  return DISP_OK;
}

/* The exponential trick: the indices of the n largest p / q (q ~ Exp(1)). */
static void sample_fast(const double *p, int64_t ncat, int64_t n, disp__rng *rng, stl_elem *q, int64_t *out) {
  for (int64_t j = 0; j < ncat; j++) {
    double e = -log1p(-disp__rng_uniform(rng, 53));
    q[j].v = p[j] / e;
    q[j].i = j;
  }
  if (n == 1) { /* argmax: the first of the largest (NaN is none: p/q >= 0) */
    int64_t best = 0;
    for (int64_t j = 1; j < ncat; j++)
      if (q[j].v > q[best].v) best = j;
    out[0] = best;
    return;
  }
  stl_cmp cmp = {1};
  if (n * 64 <= ncat) {
    disp__stl_partial_sort(q, n, ncat, cmp);
  } else {
    disp__stl_nth_element(q, n - 1, ncat, cmp);
    disp__stl_sort(q, n - 1, cmp);
  }
  for (int64_t j = 0; j < n; j++) out[j] = q[j].i;
}

/* With replacement: a uniform draw found in the normalised cumulative sum
 * (cum: ncat doubles of scratch). */
static disp_status sample_cumulative(const double *p, int64_t ncat, int64_t n, disp__rng *rng, double *cum,
                                     int64_t *out) {
  double sum = 0;
  for (int64_t j = 0; j < ncat; j++) {
    if (p[j] < 0)
      return disp_set_error(DISP_ERR_INVALID_ARG, "invalid multinomial distribution (encountering probability entry < 0)");
    if (!isfinite(p[j]))
      return disp_set_error(DISP_ERR_INVALID_ARG,
                            "invalid multinomial distribution (encountering probability entry = infinity or NaN)");
    sum += p[j];
    cum[j] = sum;
  }
  if (!(sum > 0))
    return disp_set_error(DISP_ERR_INVALID_ARG, "invalid multinomial distribution (sum of probabilities <= 0)");
  for (int64_t j = 0; j < ncat; j++) cum[j] /= sum;
  cum[ncat - 1] = 1;
  for (int64_t s = 0; s < n; s++) {
    double u = disp__rng_uniform(rng, 53);
    int64_t lo = 0, hi = ncat;
    while (hi > lo) {
      int64_t mid = lo + (hi - lo) / 2;
      if (cum[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    out[s] = lo;
  }
  return DISP_OK;
}

static disp_status sample(disp_tensor *self, int64_t n, bool replacement, disp_tensor *out) {
  disp_tensor *x = NULL;
  disp_status st = disp__titer_contiguous_as(self, DISP_DTYPE_FLOAT64, &x);
  if (st != DISP_OK) return st;
  int nd = disp__t_ndim(self);
  int64_t ncat = disp__t_size(self, nd - 1), rows = nd == 2 ? disp__t_size(self, 0) : 1;
  const double *p = disp__t_data(x);
  int64_t *o = disp__t_data(out);
  int fast = !replacement; /* 1.13.1: one sample with replacement searches too */
  void *scratch = fast ? disp__calloc((size_t)ncat, sizeof(stl_elem)) : disp__calloc((size_t)ncat, sizeof(double));
  if (!scratch) st = disp_set_error(DISP_ERR_NO_MEMORY, "multinomial: out of memory");
  if (st == DISP_OK && fast) st = check_fast(p, rows, ncat);
  if (st == DISP_OK) {
    disp__rng rng = disp__rng_reserve_on(disp__t_device(self), (uint64_t)(rows * (fast ? ncat : n)));
    for (int64_t r = 0; r < rows && st == DISP_OK; r++) {
      /* no samples or no categories: the empty tensor has no data to offset */
      int64_t *orow = n ? o + r * n : o;
      const double *prow = ncat ? p + r * ncat : p;
      if (fast) sample_fast(prow, ncat, n, &rng, scratch, orow);
      else st = sample_cumulative(prow, ncat, n, &rng, scratch, orow);
    }
  }
  disp__free(scratch);
  disp_tensor_release(x);
  return st;
}

disp_status disp__cpu_multinomial(disp_tensor *self, int64_t num_samples, bool replacement, void *generator,
                                  disp_tensor **out0) {
  disp_status st = check_args(self, num_samples, replacement, generator);
  if (st != DISP_OK) return st;
  int nd = disp__t_ndim(self);
  int64_t shape[2] = {nd == 2 ? disp__t_size(self, 0) : num_samples, num_samples};
  disp_tensor *out = NULL;
  if ((st = disp_tensor_empty(shape, nd, DISP_DTYPE_INT64, disp__t_device(self), &out)) != DISP_OK) return st;
  /* 1.13 returns an empty result before refusing float16 (on any device
   * here: the Meta call agrees with the CPU one) */
  if (disp__t_numel(out) > 0 && disp__t_dtype(self) == DISP_DTYPE_FLOAT16)
    st = disp_set_error(DISP_ERR_TYPE, "multinomial is not implemented for half on CPU");
  if (st == DISP_OK && disp__t_device_type(self) == DISP_BACKEND_CPU && disp__t_numel(out) > 0)
    st = sample(self, num_samples, replacement, out);
  if (st != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  *out0 = out;
  return DISP_OK;
}
