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
    if (f32) sgd_float_fma(pp, gp, bp, n, &c);
    else sgd_double_fma(pp, gp, bp, n, &c);
  } else
#endif
  if (f32) sgd_float(pp, gp, bp, n, &c);
  else sgd_double(pp, gp, bp, n, &c);
  s->step++;
  disp__optim_bump(p, 1);                        /* param.add_ */
  if (buf && !c.first) disp__optim_bump(buf, 2); /* buf.mul_().add_() */
}
