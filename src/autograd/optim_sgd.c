/*
 * optim_sgd.c - torch.optim 1.13's _single_tensor_sgd on contiguous
 * float32/float64 data. Each line of the loop is one of PyTorch's tensor
 * operations, rounded as that operation rounds (Note [Optimizer rounding]),
 * its Python-float arguments converted to the dtype first:
 *
 *   d_p = grad (or -grad when maximizing)
 *   if weight_decay != 0:  d_p = d_p.add(param, alpha=weight_decay)
 *   if momentum != 0:
 *     first step:  buf = clone(d_p)
 *     later:       buf.mul_(momentum).add_(d_p, alpha=1 - dampening)
 *     d_p = d_p.add(buf, alpha=momentum) if nesterov else buf
 *   param.add_(d_p, alpha=-lr)
 */
#include <math.h>
#include <stdint.h>

#include "disp.h"
#include "optim_internal.h"
#if OPTIM_FMA_CLONES
#include <immintrin.h>
#endif

/* The update's scalars, in double as Python holds them. */
typedef struct sgd_coef {
  double weight_decay, momentum, one_minus_dampening, neg_lr;
  int nesterov, maximize, first;
} sgd_coef;

/* One loop per dtype and instruction set; the flags are loop-invariant. */
#define DEFINE_SGD_LOOP(NAME, T, FMA, ATTR)                                        \
  ATTR static void NAME(T *p, const T *g, T *buf, int64_t n, const sgd_coef *c) {  \
    const T wd = (T)c->weight_decay, mom = (T)c->momentum;                         \
    const T damp1 = (T)c->one_minus_dampening, neg_lr = (T)c->neg_lr;              \
    for (int64_t i = 0; i < n; ++i) {                                              \
      T d = c->maximize ? -g[i] : g[i];                                            \
      if (c->weight_decay != 0) d = FMA(wd, p[i], d);                              \
      if (c->momentum != 0) {                                                      \
        T b = c->first ? d : buf[i] * mom;                                         \
        if (!c->first) b = FMA(damp1, d, b);                                       \
        buf[i] = b;                                                                \
        d = c->nesterov ? FMA(mom, b, d) : b;                                      \
      }                                                                            \
      p[i] = FMA(neg_lr, d, p[i]);                                                 \
    }                                                                              \
  }
DEFINE_SGD_LOOP(sgd_float, float, fmaf, )
DEFINE_SGD_LOOP(sgd_double, double, fma, )
#if OPTIM_FMA_CLONES
DEFINE_SGD_LOOP(sgd_float_fma, float, __builtin_fmaf, OPTIM_FMA_TARGET)
DEFINE_SGD_LOOP(sgd_double_fma, double, __builtin_fma, OPTIM_FMA_TARGET)

/* The float32 loop eight lanes at a time, the same operations in the same
 * order; returns how many elements it did (a multiple of 8), sgd_float_fma
 * does the rest. */
OPTIM_FMA_TARGET static int64_t sgd_float_avx2(float *p, const float *g, float *buf, int64_t n, const sgd_coef *c) {
  const __m256 wd = _mm256_set1_ps((float)c->weight_decay), mom = _mm256_set1_ps((float)c->momentum);
  const __m256 damp1 = _mm256_set1_ps((float)c->one_minus_dampening), neg_lr = _mm256_set1_ps((float)c->neg_lr);
  const __m256 sign = _mm256_set1_ps(c->maximize ? -0.0f : 0.0f); /* xor with -0: exact negation */
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 pi = _mm256_loadu_ps(p + i), d = _mm256_xor_ps(_mm256_loadu_ps(g + i), sign);
    if (c->weight_decay != 0) d = _mm256_fmadd_ps(wd, pi, d);
    if (c->momentum != 0) {
      __m256 b = c->first ? d : _mm256_fmadd_ps(damp1, d, _mm256_mul_ps(_mm256_loadu_ps(buf + i), mom));
      _mm256_storeu_ps(buf + i, b);
      d = c->nesterov ? _mm256_fmadd_ps(mom, b, d) : b;
    }
    _mm256_storeu_ps(p + i, _mm256_fmadd_ps(neg_lr, d, pi));
  }
  return i;
}
#endif

void disp__optim_sgd_update(disp_optimizer *opt, size_t i, disp_tensor *g) {
  const disp_sgd_options *o = &opt->sgd;
  optim_state *s = &opt->state[i];
  disp_tensor *p = opt->params[i], *buf = s->t[OPTIM_MOMENTUM_BUFFER];
  sgd_coef c = {o->weight_decay, o->momentum, 1.0 - o->dampening, -o->lr, o->nesterov, o->maximize, s->step == 0};
  int64_t n = disp_tensor_numel(p);
  void *pp = disp_tensor_data_ptr(p), *gp = disp_tensor_data_ptr(g);
  void *bp = buf ? disp_tensor_data_ptr(buf) : NULL;
  int f32 = disp_tensor_dtype(p) == DISP_DTYPE_FLOAT32;
#if OPTIM_FMA_CLONES
  if (disp__optim_cpu_has_fma()) {
    if (f32) {
      int64_t done = sgd_float_avx2(pp, gp, bp, n, &c);
      sgd_float_fma((float *)pp + done, (const float *)gp + done, bp ? (float *)bp + done : NULL, n - done, &c);
    }
    else sgd_double_fma(pp, gp, bp, n, &c);
  } else
#endif
  if (f32) sgd_float(pp, gp, bp, n, &c);
  else sgd_double(pp, gp, bp, n, &c);
  s->step++;
  disp__optim_bump(p, 1);                        /* param.add_ */
  if (buf && !c.first) disp__optim_bump(buf, 2); /* buf.mul_().add_() */
}
