/*
 * loss.c - mse_loss (+ backward), nll_loss_forward/backward, and the
 * nll_loss and cross_entropy_loss composites.
 *
 * Reductions: 0 none, 1 mean, 2 sum (at::Reduction).
 */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc_internal.h"
#include "aten_internal.h"
#include "aten_kernels.h"
#include "disp/aten.h"
#include "tensor/dtype_cast.h"
#include "parallel.h"
#include "tensor_iter.h"

enum { RED_NONE, RED_MEAN, RED_SUM };

/* ---- mse_loss ----------------------------------------------------------------- */

/* float16 arithmetic rounds every operation's result to float16. */
static inline float r16(float x) { return disp__half_to_float(disp__float_to_half(x)); }

/* 1.13's mse_cpu covers float32, float64 and float16 (not bfloat16). */
DISP_DEF_LOOP2(mse_f32, f32, f32, (a - b) * (a - b))
DISP_DEF_LOOP2(mse_f64, f64, f64, (a - b) * (a - b))
DISP_DEF_LOOP2(mse_f16, f16, f16, r16(a - b) * r16(a - b))
DISP_LOOP_TABLE(mse_loops, [DISP_DTYPE_FLOAT32] = mse_f32, [DISP_DTYPE_FLOAT64] = mse_f64,
                [DISP_DTYPE_FLOAT16] = mse_f16);

/* operands: out, self, target, grad_output; k0 the norm */
#define MSE_BWD(name, T)                                                                          \
  static void name(char **d, const int64_t *s, int64_t n, const void *ctx) {                     \
    T norm = (T)((const disp_titer_consts *)ctx)->d[0];                                           \
    for (int64_t i = 0; i < n; i++) {                                                             \
      T x = *(const T *)(d[1] + i * s[1]), y = *(const T *)(d[2] + i * s[2]);                     \
      T g = *(const T *)(d[3] + i * s[3]);                                                        \
      *(T *)(d[0] + i * s[0]) = norm * (x - y) * g;                                               \
    }                                                                                             \
  }
MSE_BWD(mse_bwd_f32, float)
MSE_BWD(mse_bwd_f64, double)
/* Integers too (1.13's mse_backward_cpu_out covers every integer type): the
 * norm is converted to the element type first, as the C++ kernel does. */
#define MSE_BWD_INT(name, T)                                                                      \
  static void name(char **d, const int64_t *s, int64_t n, const void *ctx) {                     \
    T norm = (T)((const disp_titer_consts *)ctx)->i[0];                                           \
    for (int64_t i = 0; i < n; i++) {                                                             \
      T x = *(const T *)(d[1] + i * s[1]), y = *(const T *)(d[2] + i * s[2]);                     \
      T g = *(const T *)(d[3] + i * s[3]);                                                        \
      *(T *)(d[0] + i * s[0]) = (T)((uint64_t)norm * (uint64_t)(x - y) * (uint64_t)g);             \
    }                                                                                             \
  }
MSE_BWD_INT(mse_bwd_i64, int64_t)
MSE_BWD_INT(mse_bwd_i32, int32_t)
MSE_BWD_INT(mse_bwd_i16, int16_t)
MSE_BWD_INT(mse_bwd_i8, int8_t)
MSE_BWD_INT(mse_bwd_u8, uint8_t)
DISP_LOOP_TABLE(mse_bwd_loops, [DISP_DTYPE_FLOAT32] = mse_bwd_f32, [DISP_DTYPE_FLOAT64] = mse_bwd_f64,
                [DISP_DTYPE_INT64] = mse_bwd_i64, [DISP_DTYPE_INT32] = mse_bwd_i32,
                [DISP_DTYPE_INT16] = mse_bwd_i16, [DISP_DTYPE_INT8] = mse_bwd_i8, [DISP_DTYPE_UINT8] = mse_bwd_u8);

static disp_status reduce_loss(disp_tensor *loss, int64_t reduction, disp_tensor **out0) {
  if (reduction == RED_NONE) {
    *out0 = loss;
    return DISP_OK;
  }
  disp_status st = reduction == RED_MEAN ? disp_aten_mean(loss, -1, out0) : disp_aten_sum(loss, -1, out0);
  disp_tensor_release(loss);
  return st;
}

static disp_status mse_impl(disp_tensor *self, disp_tensor *target, int64_t reduction, disp_tensor **out0) {
  if (reduction < 0 || reduction > 2)
    return disp_set_error(DISP_ERR_INVALID_ARG, "%lld is not a valid value for reduction",
                          (long long)reduction);
  disp_tensor *ins[2] = {self, target}, *loss;
  disp_dtype common = disp__result_type2(self, target);
  disp_status st = disp__pointwise("mse_loss", "mse_cpu", DISP_PW_FRESH, NULL, ins, 2, common, common, mse_loops,
                                   NULL, &loss);
  if (st != DISP_OK) return st;
  return reduce_loss(loss, reduction, out0);
}
disp_status disp__cpu_mse_loss(disp_tensor *self, disp_tensor *target, int64_t reduction, disp_tensor **out0) {
  return mse_impl(self, target, reduction, out0);
}

/* On Meta the same geometry is built and disp__pointwise computes nothing. */
static disp_status mse_backward_impl(disp_tensor *grad_output, disp_tensor *self, disp_tensor *target,
                                     int64_t reduction, disp_tensor **out0) {
  /* 1.13 runs a TensorIterator that insists on one dtype (self's, that of
   * its zeros_like(self) output): no promotion. */
  disp_tensor *operands[2] = {target, grad_output};
  for (int k = 0; k < 2; k++)
    if (disp__t_dtype(operands[k]) != disp__t_dtype(self))
      return disp_set_error(DISP_ERR_TYPE, "Found dtype %s but expected %s",
                            disp_dtype_torch_name(disp__t_dtype(operands[k])),
                            disp_dtype_torch_name(disp__t_dtype(self)));
  disp_dtype common = disp__t_dtype(self);
  disp_titer_consts c;
  c.d[0] = reduction == RED_MEAN ? 2.0 / (double)disp__t_numel(self) : 2.0;
  /* An empty self makes the mean's factor inf; the result is empty then,
   * but converting inf to an integer is undefined. */
  c.i[0] = disp__t_numel(self) ? (int64_t)c.d[0] : 0;
  disp_tensor *ins[3] = {self, target, grad_output}, *out;
  /* PyTorch writes into a contiguous zeros_like(self) */
  int64_t shape[DISP_TITER_MAX_DIMS];
  int nd;
  disp_status st = disp__titer_broadcast("mse_loss_backward", ins, 3, shape, &nd);
  if (st != DISP_OK) return st;
  if ((st = disp_tensor_empty(shape, nd, common, disp__t_device(self), &out)) != DISP_OK) return st;
  st = disp__pointwise("mse_loss_backward", "mse_backward_cpu_out", DISP_PW_OUT, out, ins, 3, common, common,
                       mse_bwd_loops, &c, out0);
  disp_tensor_release(out);
  return st;
}
disp_status disp__cpu_mse_loss_backward(disp_tensor *grad_output, disp_tensor *self, disp_tensor *target,
                                        int64_t reduction, disp_tensor **out0) {
  return mse_backward_impl(grad_output, self, target, reduction, out0);
}

/* ---- nll_loss ----------------------------------------------------------------- */

static char *data_of(const disp_tensor *t) { return disp__t_data(t); }

static void format_sizes(char *buf, size_t n, const disp_tensor *t) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < disp__t_ndim(t) && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)disp__t_size(t, i));
  if (k < n) snprintf(buf + k, n - k, "]");
}

/* PyTorch's data_ptr<scalar_t>() check: t must have self's dtype. */
static disp_status same_elem_type(const disp_tensor *self, const disp_tensor *t) {
  if (disp__t_dtype(t) == disp__t_dtype(self)) return DISP_OK;
  return disp_set_error(DISP_ERR_TYPE, "expected scalar type %s but found %s",
                        disp_dtype_torch_name(disp__t_dtype(self)), disp_dtype_torch_name(disp__t_dtype(t)));
}

/* The checks both nll kernels share; *batch is N (1 without a batch dim). */
static disp_status nll_check(const char *op, const disp_tensor *self, const disp_tensor *target,
                             const disp_tensor *weight, int64_t reduction, int64_t *batch, int64_t *classes) {
  (void)op; /* the dispatcher prefixes the operator's name to messages */
  if (disp__t_ndim(self) < 1 || disp__t_ndim(self) > 2)
    return disp_set_error(DISP_ERR_INVALID_ARG, "input tensor should be 1D or 2D");
  if (disp__t_ndim(target) > 1)
    return disp_set_error(DISP_ERR_INVALID_ARG, "0D or 1D target tensor expected, multi-target not supported");
  int no_batch = disp__t_ndim(self) == 1 && disp__t_ndim(target) == 0;
  if (!no_batch && disp__t_size(self, 0) != disp__t_size(target, 0)) {
    char a[128], b[128];
    format_sizes(a, sizeof a, self);
    format_sizes(b, sizeof b, target);
    return disp_set_error(DISP_ERR_INVALID_ARG, "size mismatch (got input: %s, target: %s)", a, b);
  }
  int64_t nc = disp__t_size(self, disp__t_ndim(self) - 1);
  if (weight && (disp__t_ndim(weight) != 1 || disp__t_numel(weight) != nc)) {
    char a[128];
    format_sizes(a, sizeof a, weight);
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "weight tensor should be defined either for all %lld classes or no classes but got "
                          "weight tensor of shape: %s", (long long)nc, a);
  }
  if (disp__t_dtype(target) != DISP_DTYPE_INT64 && disp__t_dtype(target) != DISP_DTYPE_UINT8)
    return disp_set_error(DISP_ERR_TYPE, "expected scalar type Long but found %s",
                          disp_dtype_torch_name(disp__t_dtype(target)));
  if (disp__t_dtype(self) != DISP_DTYPE_FLOAT32 && disp__t_dtype(self) != DISP_DTYPE_FLOAT64 &&
      disp__t_dtype(self) != DISP_DTYPE_BFLOAT16)
    return disp_set_error(DISP_ERR_TYPE, "\"nll_loss_out_frame\" not implemented for '%s'",
                          disp_dtype_torch_name(disp__t_dtype(self)));
  /* the kernels read weight (and the backward's total_weight and
   * grad_output) as self's element type */
  if (weight) {
    disp_status st = same_elem_type(self, weight);
    if (st != DISP_OK) return st;
  }
  if (reduction < 0 || reduction > 2)
    return disp_set_error(DISP_ERR_INVALID_ARG, "%lld is not a valid value for reduction",
                          (long long)reduction);
  *batch = disp__t_ndim(self) == 1 ? 1 : disp__t_size(self, 0);
  *classes = nc;
  return DISP_OK;
}

/* Element accessors over any strides. */
static double at1(const disp_tensor *t, int64_t i) {
  return disp__load_double(
      data_of(t) + (disp__t_ndim(t) ? i * disp__t_stride(t, 0) : 0) * (int64_t)disp_dtype_itemsize(disp__t_dtype(t)),
      disp__t_dtype(t));
}
static int64_t target_at(const disp_tensor *t, int64_t i) {
  return disp__load_int64(
      data_of(t) + (disp__t_ndim(t) ? i * disp__t_stride(t, 0) : 0) * (int64_t)disp_dtype_itemsize(disp__t_dtype(t)),
      disp__t_dtype(t));
}
static double input_at(const disp_tensor *x, int64_t i, int64_t c) {
  int64_t off = disp__t_ndim(x) == 1 ? c * disp__t_stride(x, 0) : i * disp__t_stride(x, 0) + c * disp__t_stride(x, 1);
  return disp__load_double(data_of(x) + off * (int64_t)disp_dtype_itemsize(disp__t_dtype(x)), disp__t_dtype(x));
}

/* Note [Deterministic loss sums]: nll_loss sums its samples in blocks of
 * NLL_BLOCK, each block in sample order, and adds the block sums in block
 * order: the blocks are fixed whatever the thread count (the threads take
 * whole blocks), so the loss is the same at 1, 2 or 3 threads. */
enum { NLL_BLOCK = 4096 };

typedef struct nll_job {
  const disp_tensor *self, *target, *weight;
  disp_tensor *per_sample; /* the per-sample losses, or NULL */
  int64_t ignore_index, nc, n;
  double *sums, *totals;   /* per block */
  _Atomic int64_t first_bad; /* lowest sample with a target out of range */
} nll_job;

/* The first out-of-range target at position i wins (a serial walk stops there). */
static void nll_bad(_Atomic int64_t *first, int64_t i) {
  int64_t seen = atomic_load(first);
  while (i < seen && !atomic_compare_exchange_weak(first, &seen, i)) {
  }
}

static void nll_blocks(int64_t lo, int64_t hi, void *arg) {
  nll_job *j = arg;
  for (int64_t b = lo; b < hi; b++) {
    double total = 0, sum = 0;
    int64_t end = (b + 1) * NLL_BLOCK < j->n ? (b + 1) * NLL_BLOCK : j->n;
    for (int64_t i = b * NLL_BLOCK; i < end; i++) {
      int64_t t = target_at(j->target, i);
      double v = 0;
      if (t != j->ignore_index) {
        if (t < 0 || t >= j->nc) {
          nll_bad(&j->first_bad, i);
          return;
        }
        double w = j->weight ? at1(j->weight, t) : 1.0;
        v = -input_at(j->self, i, t) * w;
        total += w;
      }
      disp_tensor *o = j->per_sample;
      if (o) disp__store_double(data_of(o) + i * (int64_t)disp_dtype_itemsize(disp__t_dtype(o)), disp__t_dtype(o), v);
      sum += v;
    }
    j->sums[b] = sum;
    j->totals[b] = total;
  }
}

/* The loss sum and weight total of n samples (Note [Deterministic loss
 * sums]), writing per-sample losses into per_sample when given. */
static disp_status nll_sum(const disp_tensor *self, const disp_tensor *target, const disp_tensor *weight,
                           int64_t ignore_index, disp_tensor *per_sample, int64_t nc, int64_t n, double *sum,
                           double *total) {
  int64_t nb = (n + NLL_BLOCK - 1) / NLL_BLOCK;
  double small[2 * 16], *buf = nb <= 16 ? small : disp__malloc(sizeof(double) * 2 * (size_t)nb);
  if (!buf) return disp_set_error(DISP_ERR_NO_MEMORY, "nll_loss_forward: out of memory");
  nll_job j = {self, target, weight, per_sample, ignore_index, nc, n, buf, buf + nb, INT64_MAX};
  disp__parallel_for(0, nb, DISP_GRAIN_SIZE / NLL_BLOCK, nll_blocks, &j);
  int64_t bad = atomic_load(&j.first_bad);
  disp_status st = DISP_OK;
  if (bad != INT64_MAX) {
    st = disp_set_error(DISP_ERR_INVALID_ARG, "Target %lld is out of bounds.", (long long)target_at(target, bad));
  } else {
    for (int64_t b = 0; b < nb; b++) *sum += buf[b], *total += buf[nb + b];
  }
  if (buf != small) disp__free(buf);
  return st;
}

static disp_status nll_fwd(disp_tensor *self, disp_tensor *target, disp_tensor *weight, int64_t reduction,
                           int64_t ignore_index, disp_tensor **out0, disp_tensor **out1) {
  const char *op = "nll_loss_forward";
  int64_t n = 0, nc = 0;
  disp_status st = nll_check(op, self, target, weight, reduction, &n, &nc);
  if (st != DISP_OK) return st;
  int per_sample = reduction == RED_NONE && disp__t_ndim(self) == 2;
  disp_tensor *out = NULL, *tw = NULL;
  st = disp_tensor_empty(&n, per_sample ? 1 : 0, disp__t_dtype(self), disp__t_device(self), &out);
  if (st == DISP_OK) st = disp_tensor_empty(NULL, 0, disp__t_dtype(self), disp__t_device(self), &tw);
  if (st != DISP_OK || disp__t_device_type(self) != DISP_BACKEND_CPU) goto done;
  double total = 0, sum = 0;
  if ((st = nll_sum(self, target, weight, ignore_index, per_sample ? out : NULL, nc, n, &sum, &total)) != DISP_OK)
    goto done;
  if (per_sample) {
    total = 0;
  } else {
    if (reduction == RED_MEAN) sum /= total;
    disp__store_double(data_of(out), disp__t_dtype(out), sum);
  }
  disp__store_double(data_of(tw), disp__t_dtype(tw), total);
done:
  if (st != DISP_OK) {
    disp_tensor_release(out);
    disp_tensor_release(tw);
    return st;
  }
  *out0 = out;
  *out1 = tw;
  return DISP_OK;
}

disp_status disp__cpu_nll_loss_forward(disp_tensor *self, disp_tensor *target, disp_tensor *weight, int64_t reduction,
                                       int64_t ignore_index, disp_tensor **out0, disp_tensor **out1) {
  return nll_fwd(self, target, weight, reduction, ignore_index, out0, out1);
}

/* Samples [lo, hi) of the nll_loss gradient: each writes only its row. */
typedef struct nll_grad_job {
  const disp_tensor *target, *weight, *grad_output;
  disp_tensor *out;
  int64_t ignore_index, nc;
  int per_sample;
  double g;
  _Atomic int64_t first_bad;
} nll_grad_job;

static void nll_grad_rows(int64_t lo, int64_t hi, void *arg) {
  nll_grad_job *j = arg;
  int64_t isz = (int64_t)disp_dtype_itemsize(disp__t_dtype(j->out));
  for (int64_t i = lo; i < hi; i++) {
    int64_t t = target_at(j->target, i);
    if (t == j->ignore_index) continue;
    if (t < 0 || t >= j->nc) {
      nll_bad(&j->first_bad, i);
      return;
    }
    double w = j->weight ? at1(j->weight, t) : 1.0;
    double gi = j->per_sample ? at1(j->grad_output, i) : j->g;
    disp__store_double(data_of(j->out) + (i * j->nc + t) * isz, disp__t_dtype(j->out), -w * gi);
  }
}

static disp_status nll_bwd(disp_tensor *grad_output, disp_tensor *self, disp_tensor *target, disp_tensor *weight,
                           int64_t reduction, int64_t ignore_index, disp_tensor *total_weight, disp_tensor **out0) {
  const char *op = "nll_loss_backward";
  int64_t n = 0, nc = 0;
  disp_status st = nll_check(op, self, target, weight, reduction, &n, &nc);
  if (st != DISP_OK) return st;
  if (disp__t_numel(total_weight) != 1)
    return disp_set_error(DISP_ERR_INVALID_ARG, "expected total_weight to be a single element tensor, got: %lld "
                                                "elements", (long long)disp__t_numel(total_weight));
  int per_sample = reduction == RED_NONE && disp__t_ndim(self) == 2;
  if (per_sample && (disp__t_ndim(grad_output) != 1 || disp__t_size(grad_output, 0) != n))
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "Expected a tensor of dimension 1 and tensor.size[0] == %lld but "
                          "got: dimension %d and tensor.size[0] == %lld",
                          (long long)n, disp__t_ndim(grad_output),
                          (long long)(disp__t_ndim(grad_output) ? disp__t_size(grad_output, 0) : 1));
  if (!per_sample && disp__t_numel(grad_output) != 1)
    return disp_set_error(DISP_ERR_INVALID_ARG, "Expected a single element grad_output tensor, but got: %lld",
                          (long long)disp__t_numel(grad_output));
  if (!per_sample && (st = same_elem_type(self, total_weight)) != DISP_OK) return st;
  if ((st = same_elem_type(self, grad_output)) != DISP_OK) return st;
  disp_tensor *out;
  if ((st = disp_tensor_empty(disp__t_sizes(self), disp__t_ndim(self), disp__t_dtype(self), disp__t_device(self),
                              &out)) != DISP_OK)
    return st;
  if (disp__t_device_type(self) != DISP_BACKEND_CPU) {
    *out0 = out;
    return DISP_OK;
  }
  size_t isz = disp_dtype_itemsize(disp__t_dtype(out));
  if (disp__t_numel(out) > 0) memset(data_of(out), 0, (size_t)disp__t_numel(out) * isz);
  double g = per_sample ? 0 : at1(grad_output, 0);
  if (reduction == RED_MEAN) g /= at1(total_weight, 0);
  nll_grad_job j = {target, weight, grad_output, out, ignore_index, nc, per_sample, g, INT64_MAX};
  disp__parallel_for(0, n, DISP_GRAIN_SIZE, nll_grad_rows, &j);
  int64_t bad = atomic_load(&j.first_bad);
  if (bad != INT64_MAX) {
    disp_tensor_release(out);
    return disp_set_error(DISP_ERR_INVALID_ARG, "Target %lld is out of bounds.", (long long)target_at(target, bad));
  }
  *out0 = out;
  return DISP_OK;
}

disp_status disp__cpu_nll_loss_backward(disp_tensor *grad_output, disp_tensor *self, disp_tensor *target,
                                        disp_tensor *weight, int64_t reduction, int64_t ignore_index,
                                        disp_tensor *total_weight, disp_tensor **out0) {
  return nll_bwd(grad_output, self, target, weight, reduction, ignore_index, total_weight, out0);
}

disp_status disp__cia_nll_loss(disp_tensor *self, disp_tensor *target, disp_tensor *weight, int64_t reduction,
                               int64_t ignore_index, disp_tensor **out0) {
  disp_tensor *tw = NULL;
  disp_status st = disp_aten_nll_loss_forward(self, target, weight, reduction, ignore_index, out0, &tw);
  disp_tensor_release(tw);
  return st;
}

/* ---- cross_entropy_loss -------------------------------------------------------- */

/* Temporaries of a composite, released together. */
typedef struct temps { disp_tensor *t[24]; int n; } temps;

static disp_tensor *keep(temps *tp, disp_tensor *t) {
  if (tp->n < (int)(sizeof tp->t / sizeof *tp->t)) tp->t[tp->n++] = t;
  return t;
}

static void release_all(temps *tp) {
  for (int i = 0; i < tp->n; i++) disp_tensor_release(tp->t[i]);
  tp->n = 0;
}

/* PyTorch's nll_loss_nd: 1-D/2-D inputs directly, (N,C,d...) with the
 * class dim moved last and flattened to (N*d, C) (the same sums as
 * nll_loss2d); `none` results get their (N,d...) shape back. Returns the
 * loss and the total weight. */
static disp_status nll_nd(temps *tp, disp_tensor *x, disp_tensor *target, disp_tensor *weight, int64_t reduction,
                          int64_t ignore_index, disp_tensor **loss, disp_tensor **total) {
  if (disp__t_ndim(x) < 1)
    return disp_set_error(DISP_ERR_INVALID_ARG, "Expected 1 or more dimensions (got %d)", disp__t_ndim(x));
  if (disp__t_ndim(x) != 1 && (disp__t_ndim(target) < 1 || disp__t_size(x, 0) != disp__t_size(target, 0)))
    return disp_set_error(DISP_ERR_INVALID_ARG, "Expected input batch_size (%lld) to match target batch_size "
                                                "(%lld).", (long long)disp__t_size(x, 0),
                          (long long)(disp__t_ndim(target) ? disp__t_size(target, 0) : 1));
  disp_status st;
  if (disp__t_ndim(x) <= 2) {
    if ((st = disp_aten_nll_loss_forward(x, target, weight, reduction, ignore_index, loss, total)) != DISP_OK)
      return st;
    keep(tp, *loss);
    keep(tp, *total);
    return DISP_OK;
  }
  int nd = disp__t_ndim(x);
  int ok = disp__t_ndim(target) == nd - 1;
  for (int i = 1; ok && i < nd - 1; i++) ok = disp__t_size(target, i) == disp__t_size(x, i + 1);
  if (!ok) {
    char a[128], b[128];
    int64_t want[DISP_TITER_MAX_DIMS];
    want[0] = disp__t_size(x, 0);
    for (int i = 2; i < nd; i++) want[i - 1] = disp__t_size(x, i);
    size_t k = (size_t)snprintf(a, sizeof a, "[");
    for (int i = 0; i < nd - 1 && k < sizeof a; i++)
      k += (size_t)snprintf(a + k, sizeof a - k, "%s%lld", i ? ", " : "", (long long)want[i]);
    if (k < sizeof a) snprintf(a + k, sizeof a - k, "]");
    format_sizes(b, sizeof b, target);
    return disp_set_error(DISP_ERR_INVALID_ARG, "Expected target size %s, got %s", a, b);
  }
  int64_t perm[DISP_TITER_MAX_DIMS], flat2[2] = {-1, disp__t_size(x, 1)}, flat1[1] = {-1};
  perm[0] = 0;
  for (int i = 2; i < nd; i++) perm[i - 1] = i;
  perm[nd - 1] = 1;
  disp_tensor *p, *x2, *t1, *l;
  if ((st = disp_aten_permute(x, (disp_int_list){perm, (size_t)nd}, &p)) != DISP_OK) return st;
  keep(tp, p);
  if ((st = disp_aten_reshape(p, (disp_int_list){flat2, 2}, &x2)) != DISP_OK) return st;
  keep(tp, x2);
  if ((st = disp_aten_reshape(target, (disp_int_list){flat1, 1}, &t1)) != DISP_OK) return st;
  keep(tp, t1);
  if ((st = disp_aten_nll_loss_forward(x2, t1, weight, reduction, ignore_index, &l, total)) != DISP_OK) return st;
  keep(tp, l);
  keep(tp, *total);
  if (reduction == RED_NONE) {
    if ((st = disp_aten_reshape(l, (disp_int_list){disp__t_sizes(target), (size_t)disp__t_ndim(target)}, &l)) !=
        DISP_OK)
      return st;
    keep(tp, l);
  }
  *loss = l;
  return DISP_OK;
}

/* weight viewed as (1, C, 1, ...) against x (C at class_dim) */
static disp_status weight_view(temps *tp, disp_tensor *weight, const disp_tensor *x, int class_dim, disp_tensor **out) {
  int64_t shape[DISP_TITER_MAX_DIMS];
  for (int i = 0; i < disp__t_ndim(x); i++) shape[i] = i == class_dim ? disp__t_numel(weight) : 1;
  disp_status st = disp_aten_view(weight, (disp_int_list){shape, (size_t)disp__t_ndim(x)}, out);
  if (st == DISP_OK) keep(tp, *out);
  return st;
}

#define TRY(call)                                                                                 \
  do {                                                                                            \
    if ((st = (call)) != DISP_OK) goto done;                                                      \
  } while (0)
#define T(var) keep(&tp, var)

static int same_shape(const disp_tensor *a, const disp_tensor *b) {
  return disp__t_ndim(a) == disp__t_ndim(b) &&
         !memcmp(disp__t_sizes(a), disp__t_sizes(b), sizeof(int64_t) * (size_t)disp__t_ndim(a));
}

disp_status disp__cia_cross_entropy_loss(disp_tensor *self, disp_tensor *target, disp_tensor *weight,
                                         int64_t reduction, int64_t ignore_index, double label_smoothing,
                                         disp_tensor **out0) {
  temps tp = {{0}, 0};
  disp_status st = DISP_OK;
  int cd = disp__t_ndim(self) == 1 ? 0 : 1;
  int64_t cdim = cd;
  disp_opt_int_list cdl = {{&cdim, 1}, true};
  disp_tensor *x, *r = NULL, *a, *b, *wv = NULL;
  if (label_smoothing < 0.0 || label_smoothing > 1.0)
    return disp_set_error(DISP_ERR_INVALID_ARG, "label_smoothing must be between 0.0 and 1.0. Got: %g",
                          label_smoothing);
  int soft = same_shape(self, target);
  if (soft) {
    if (!disp_dtype_is_floating(disp__t_dtype(target)))
      return disp_set_error(DISP_ERR_TYPE, "Expected floating point type for target with class probabilities, "
                                           "got %s", disp_dtype_torch_name(disp__t_dtype(target)));
    if (ignore_index >= 0)
      return disp_set_error(DISP_ERR_INVALID_ARG, "ignore_index is not supported for floating point target");
  }
  if (disp__t_ndim(self) < 1)
    return disp_set_error(DISP_ERR_INVALID_ARG, "Expected 1 or more dimensions (got 0)");
  int64_t nc = disp__t_size(self, cd);
  TRY(disp_aten_log_softmax_int(self, cd, (int32_t)disp__t_dtype(self), &x));
  T(x);
  if (weight) TRY(weight_view(&tp, weight, x, cd, &wv));
  if (soft) {
    /* -(x * target [* w]) summed over classes, or over all and / (numel/C) */
    disp_tensor *tg = target;
    if (label_smoothing > 0.0) {
      disp_tensor *w;
      TRY(disp_aten_mul_Scalar(target, disp_scalar_double(1.0 - label_smoothing), &a));
      T(a);
      TRY(disp__wrap_scalar(disp_scalar_double(label_smoothing / (double)nc), disp_device_make(DISP_BACKEND_CPU, -1),
                            &w));
      st = disp_aten_add_Tensor(a, w, disp_scalar_int(1), &tg);
      disp__unwrap_scalar(w);
      if (st != DISP_OK) goto done;
      T(tg);
    }
    TRY(disp_aten_mul_Tensor(x, tg, &a));
    T(a);
    if (wv) {
      TRY(disp_aten_mul_Tensor(a, wv, &a));
      T(a);
    }
    if (reduction == RED_NONE) {
      TRY(disp_aten_sum_dim_IntList(a, cdl, false, -1, &b));
      T(b);
      TRY(disp_aten_neg(b, &r));
    } else {
      TRY(disp_aten_sum(a, -1, &b));
      T(b);
      TRY(disp_aten_neg(b, &a));
      T(a);
      if (reduction == RED_SUM) r = disp_tensor_retain(a);
      else TRY(disp_aten_div_Scalar(a, disp_scalar_int(nc ? disp__t_numel(self) / nc : 0), &r));
    }
    goto done;
  }
  disp_tensor *nll, *tw;
  TRY(nll_nd(&tp, x, target, weight, reduction, ignore_index, &nll, &tw));
  if (label_smoothing <= 0.0) {
    r = disp_tensor_retain(nll);
    goto done;
  }
  /* smoothing term: -sum over classes of x [* w], zero where ignored */
  disp_tensor *smooth, *mask, *z;
  if (wv) {
    TRY(disp_aten_mul_Tensor(x, wv, &a));
    T(a);
  } else {
    a = x;
  }
  TRY(disp_aten_sum_dim_IntList(a, cdl, false, -1, &b));
  T(b);
  TRY(disp_aten_neg(b, &smooth));
  T(smooth);
  TRY(disp_aten_eq_Scalar(target, disp_scalar_int(ignore_index), &mask));
  T(mask);
  TRY(disp__wrap_scalar(disp_scalar_double(0.0), disp_device_make(DISP_BACKEND_CPU, -1), &z));
  st = disp_aten_where_self(mask, z, smooth, &smooth);
  disp__unwrap_scalar(z);
  if (st != DISP_OK) goto done;
  T(smooth);
  disp_tensor *ret = smooth;
  if (reduction != RED_NONE) {
    TRY(disp_aten_sum(smooth, -1, &ret));
    T(ret);
    if (reduction == RED_MEAN) {
      TRY(disp_aten_div_Tensor(ret, tw, &ret));
      T(ret);
    }
  }
  TRY(disp_aten_mul_Scalar(nll, disp_scalar_double(1.0 - label_smoothing), &a));
  T(a);
  TRY(disp_aten_mul_Scalar(ret, disp_scalar_double(label_smoothing / (double)nc), &b));
  T(b);
  TRY(disp_aten_add_Tensor(a, b, disp_scalar_int(1), &r));
done:
  release_all(&tp);
  if (st != DISP_OK) {
    disp_tensor_release(r);
    return st;
  }
  *out0 = r;
  return DISP_OK;
}
