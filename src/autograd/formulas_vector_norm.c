/*
 * formulas_vector_norm.c - the derivative of linalg_vector_norm (1.13's
 * linalg_vector_norm_backward, i.e. norm_backward in FunctionsManual),
 * written with dispatched operators so that double backward records it:
 *
 *   ord 0      no gradient (None)
 *   ord 1      sgn(x) * grad
 *   ord 2      grad * (x / norm), 0 where norm is 0
 *   ord +-inf  sgn(x) * grad / count * mask, mask = |x| == norm or NaN
 *   ord < 1    sgn(x) * |x|^(ord-1) (0 where x is 0) * grad * norm^(1-ord)
 *   ord < 2    sgn(x) * |x|^(ord-1) * grad / norm^(ord-1) (0 where norm is 0)
 *   otherwise  x * |x|^(ord-2) * grad / norm^(ord-1) (0 where norm is 0)
 *
 * grad and norm get the reduced dims back first (keepdim false). sgn of a
 * real x is where(x > 0, 1, where(x < 0, -1, 0)) (NaN gives 0, as 1.13's
 * sign). Every intermediate goes to a small pool released at the end.
 */
#include <math.h>

#include "formula.h"

#define POOL_MAX 64

typedef struct pool {
  disp_tensor *t[POOL_MAX];
  int n;
  disp_status st;
} pool;

/* Whether the next call may run: everything before it succeeded and the
 * pool has room. */
static int ready(pool *pl) {
  if (pl->st == DISP_OK && pl->n >= POOL_MAX)
    pl->st = disp_set_error(DISP_ERR_NO_MEMORY, "LinalgVectorNormBackward0: too many intermediates");
  return pl->st == DISP_OK;
}

/* The call's status; its result (written to SLOT) joins the pool. */
static disp_tensor *keep(pool *pl, disp_status st) {
  pl->st = st;
  return pl->t[pl->n++];
}

/* Runs `call` (which writes SLOT(pl)) only while everything before it
 * succeeded; NULL after a failure. A call's other arguments must be
 * computed before it (not inside its argument list): the order C
 * evaluates arguments in is unspecified, and SLOT must be read last. */
#define P(pl, call) (ready(pl) ? keep((pl), (call)) : (disp_tensor *)NULL)
#define SLOT(pl) (&(pl)->t[(pl)->n])

static void drain(pool *pl) {
  for (int i = 0; i < pl->n; i++) disp_tensor_release(pl->t[i]);
}

static disp_tensor *scalar(pool *pl, disp_tensor *like, double v) {
  return P(pl, ag_scalar_like(like, disp_scalar_double(v), SLOT(pl)));
}

/* sgn(x) for real x */
static disp_tensor *sgn(pool *pl, disp_tensor *x) {
  disp_tensor *zero = scalar(pl, x, 0), *one = scalar(pl, x, 1), *minus = scalar(pl, x, -1);
  disp_tensor *pos = P(pl, disp_aten_gt_Tensor(x, zero, SLOT(pl)));
  disp_tensor *neg = P(pl, disp_aten_lt_Tensor(x, zero, SLOT(pl)));
  disp_tensor *low = P(pl, disp_aten_where_self(neg, minus, zero, SLOT(pl)));
  return P(pl, disp_aten_where_self(pos, one, low, SLOT(pl)));
}

static disp_status retain_into(disp_tensor *t, disp_tensor **out) {
  *out = disp_tensor_retain(t);
  return DISP_OK;
}

/* t with the reduced dims back as size-1 dims (1.13's unsqueeze_multiple) */
static disp_tensor *unreduce(pool *pl, ag_ctx *c, disp_tensor *t, int nd) {
  disp_int_list dims = ag_int_list(c, 2);
  if (ag_bool(c, 3) || nd == 0 || ag_is_none(c, 2) || dims.len == 0 || pl->st != DISP_OK)
    return P(pl, retain_into(t, SLOT(pl)));
  uint64_t mask = 0;
  for (size_t i = 0; i < dims.len; i++) mask |= UINT64_C(1) << ag_wrap_dim(dims.data[i], nd);
  disp_tensor *r = t;
  for (int d = 0; d < nd; d++)
    if (mask >> d & 1) r = P(pl, disp_aten_unsqueeze(r, d, SLOT(pl)));
  return r;
}

/* v masked to 0 where `where_` (a bool tensor) holds */
static disp_tensor *zero_where(pool *pl, disp_tensor *v, disp_tensor *where_) {
  return P(pl, disp_aten_masked_fill_Scalar(v, where_, disp_scalar_int(0), SLOT(pl)));
}

static disp_tensor *inf_grad(pool *pl, ag_ctx *c, disp_tensor *x, disp_tensor *grad, disp_tensor *norm) {
  disp_tensor *ax = P(pl, disp_aten_abs(x, SLOT(pl)));
  disp_tensor *hit = P(pl, disp_aten_eq_Tensor(ax, norm, SLOT(pl)));
  disp_tensor *nan = P(pl, disp_aten_ne_Tensor(ax, ax, SLOT(pl)));
  disp_tensor *mask = P(pl, disp_aten_where_self(hit, hit, nan, SLOT(pl))); /* hit or NaN */
  disp_int_list dims = ag_int_list(c, 2);
  disp_opt_int_list sd = {dims, true}; /* an empty list sums everything, as 1.13's sum(dim={}) */
  disp_tensor *count = P(pl, disp_aten_sum_dim_IntList(mask, sd, true, -1, SLOT(pl)));
  disp_tensor *share = P(pl, disp_aten_div_Tensor(grad, count, SLOT(pl)));
  disp_tensor *picked = P(pl, disp_aten_mul_Tensor(share, mask, SLOT(pl)));
  disp_tensor *sg = sgn(pl, x);
  return P(pl, disp_aten_mul_Tensor(sg, picked, SLOT(pl)));
}

static disp_tensor *pow_grad(pool *pl, double p, disp_tensor *x, disp_tensor *grad, disp_tensor *norm) {
  disp_tensor *ax = P(pl, disp_aten_abs(x, SLOT(pl)));
  disp_tensor *norm0 = P(pl, disp_aten_eq_Scalar(norm, disp_scalar_int(0), SLOT(pl)));
  if (p < 1) {
    disp_tensor *pw = P(pl, disp_aten_pow_Tensor_Scalar(ax, disp_scalar_double(p - 1), SLOT(pl)));
    disp_tensor *x0 = P(pl, disp_aten_eq_Scalar(x, disp_scalar_int(0), SLOT(pl)));
    disp_tensor *sx = sgn(pl, x), *pw0 = zero_where(pl, pw, x0);
    disp_tensor *scaled = P(pl, disp_aten_mul_Tensor(sx, pw0, SLOT(pl)));
    disp_tensor *sg = P(pl, disp_aten_mul_Tensor(scaled, grad, SLOT(pl)));
    disp_tensor *np = P(pl, disp_aten_pow_Tensor_Scalar(norm, disp_scalar_double(1 - p), SLOT(pl)));
    return P(pl, disp_aten_mul_Tensor(sg, np, SLOT(pl)));
  }
  disp_tensor *scaled;
  if (p < 2) {
    disp_tensor *pw = P(pl, disp_aten_pow_Tensor_Scalar(ax, disp_scalar_double(p - 1), SLOT(pl)));
    disp_tensor *sx = sgn(pl, x);
    scaled = P(pl, disp_aten_mul_Tensor(sx, pw, SLOT(pl)));
  } else {
    disp_tensor *pw = P(pl, disp_aten_pow_Tensor_Scalar(ax, disp_scalar_double(p - 2), SLOT(pl)));
    scaled = P(pl, disp_aten_mul_Tensor(x, pw, SLOT(pl)));
  }
  disp_tensor *np = P(pl, disp_aten_pow_Tensor_Scalar(norm, disp_scalar_double(p - 1), SLOT(pl)));
  disp_tensor *ratio = P(pl, disp_aten_div_Tensor(grad, np, SLOT(pl)));
  disp_tensor *scale = zero_where(pl, ratio, norm0);
  return P(pl, disp_aten_mul_Tensor(scaled, scale, SLOT(pl)));
}

AG_BACKWARD(linalg_vector_norm_backward) {
  double p = disp_scalar_to_double(ag_scalar(c, 1));
  if (!ag_needs(c, 0) || !g[0] || p == 0) return DISP_OK;
  disp_tensor *x = ag_saved(c, 0);
  int nd = disp_tensor_ndim(x);
  pool pl = {{NULL}, 0, DISP_OK};
  disp_tensor *grad = unreduce(&pl, c, g[0], nd), *norm = unreduce(&pl, c, ag_saved(c, 1), nd), *r = NULL;
  if (p == 1) {
    disp_tensor *sx = sgn(&pl, x);
    r = P(&pl, disp_aten_mul_Tensor(sx, grad, SLOT(&pl)));
  } else if (p == 2) {
    disp_tensor *q = P(&pl, disp_aten_div_Tensor(x, norm, SLOT(&pl)));
    disp_tensor *norm0 = P(&pl, disp_aten_eq_Scalar(norm, disp_scalar_int(0), SLOT(&pl)));
    disp_tensor *q0 = zero_where(&pl, q, norm0);
    r = P(&pl, disp_aten_mul_Tensor(grad, q0, SLOT(&pl)));
  } else if (isinf(p)) {
    r = inf_grad(&pl, c, x, grad, norm);
  } else {
    r = pow_grad(&pl, p, x, grad, norm);
  }
  if (pl.st == DISP_OK) out[0] = disp_tensor_retain(r);
  drain(&pl);
  return pl.st;
}
