/*
 * optim_adam.c - torch.optim 1.13's _single_tensor_adam and
 * _single_tensor_adamw (not capturable, not differentiable) on contiguous
 * float32/float64 data. Each line of the loop is one of PyTorch's tensor
 * operations, rounded to the parameter's dtype as that operation rounds;
 * the scalars are Python floats (double) converted to the dtype:
 *
 *   step += 1
 *   AdamW:  param.mul_(1 - lr * weight_decay)
 *   Adam:   if weight_decay != 0: grad = grad.add(param, alpha=weight_decay)
 *   exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
 *   exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
 *   bias_correction1 = 1 - beta1 ** step;  bias_correction2 = 1 - beta2 ** step
 *   step_size = lr / bias_correction1;  bias_correction2_sqrt = sqrt(bias_correction2)
 *   amsgrad: torch.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq), used below
 *   denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
 *   param.addcdiv_(exp_avg, denom, value=-step_size)
 *
 * addcmul computes self + value * t1 * t2 and addcdiv self + value * t1 / t2,
 * left to right, as ATen's CPU kernels do; Note [Optimizer rounding] says
 * where a product and a sum are rounded once.
 */
#include <math.h>
#include <stdint.h>

#include "disp.h"
#include "optim_internal.h"
#if OPTIM_FMA_CLONES
#include <immintrin.h>
#endif

/* torch.maximum: NaN wins. */
#define NAN_MAX(a, b) ((a) != (a) || (a) > (b) ? (a) : (b))

/* One loop per dtype; vmax is NULL without amsgrad. */
#define DEFINE_ADAM_LOOP(NAME, T, SQRT, FMA, ATTR)                                                 \
  ATTR static void NAME(T *p, const T *g, T *m, T *v, T *vmax, int64_t n, const optim_adam_coef *c) { \
    const T b1 = (T)c->beta1, omb1 = (T)c->one_minus_beta1, b2 = (T)c->beta2;                  \
    const T omb2 = (T)c->one_minus_beta2, eps = (T)c->eps, wd = (T)c->weight_decay;            \
    const T decay = (T)c->decay, bc2 = (T)c->bias_correction2_sqrt, neg_step = (T)c->neg_step_size; \
    for (int64_t i = 0; i < n; ++i) {                                                          \
      T gi = c->maximize ? -g[i] : g[i];                                                       \
      if (c->adamw) p[i] = p[i] * decay;                                                       \
      else if (c->weight_decay != 0) gi = FMA(wd, p[i], gi);                                      \
      T mi = m[i] * b1;                                                                        \
      m[i] = mi = FMA(omb1, gi, mi);                                                              \
      T vi = v[i] * b2;                                                                        \
      v[i] = vi = FMA(omb2 * gi, gi, vi);                                                         \
      if (vmax) vmax[i] = vi = NAN_MAX(vmax[i], vi);                                           \
      T denom = SQRT(vi) / bc2 + eps;                                                          \
      p[i] = p[i] + neg_step * mi / denom;                                                     \
    }                                                                                          \
  }
DEFINE_ADAM_LOOP(adam_float, float, sqrtf, fmaf, )
DEFINE_ADAM_LOOP(adam_double, double, sqrt, fma, )
#if OPTIM_FMA_CLONES
DEFINE_ADAM_LOOP(adam_float_fma, float, __builtin_sqrtf, __builtin_fmaf, OPTIM_FMA_TARGET)
DEFINE_ADAM_LOOP(adam_double_fma, double, __builtin_sqrt, __builtin_fma, OPTIM_FMA_TARGET)

/* The float32 loop eight lanes at a time, the same operations in the same
 * order; returns how many elements it did (a multiple of 8), adam_float_fma
 * does the rest. */
OPTIM_FMA_TARGET static int64_t adam_float_avx2(float *p, const float *g, float *m, float *v, float *vmax,
                                                int64_t n, const optim_adam_coef *c) {
  const __m256 b1 = _mm256_set1_ps((float)c->beta1), omb1 = _mm256_set1_ps((float)c->one_minus_beta1);
  const __m256 b2 = _mm256_set1_ps((float)c->beta2), omb2 = _mm256_set1_ps((float)c->one_minus_beta2);
  const __m256 eps = _mm256_set1_ps((float)c->eps), wd = _mm256_set1_ps((float)c->weight_decay);
  const __m256 decay = _mm256_set1_ps((float)c->decay), bc2 = _mm256_set1_ps((float)c->bias_correction2_sqrt);
  const __m256 neg_step = _mm256_set1_ps((float)c->neg_step_size);
  const __m256 sign = _mm256_set1_ps(c->maximize ? -0.0f : 0.0f); /* xor with -0: exact negation */
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 pi = _mm256_loadu_ps(p + i), gi = _mm256_xor_ps(_mm256_loadu_ps(g + i), sign);
    if (c->adamw) pi = _mm256_mul_ps(pi, decay);
    else if (c->weight_decay != 0) gi = _mm256_fmadd_ps(wd, pi, gi);
    __m256 mi = _mm256_fmadd_ps(omb1, gi, _mm256_mul_ps(_mm256_loadu_ps(m + i), b1));
    __m256 vi = _mm256_fmadd_ps(_mm256_mul_ps(omb2, gi), gi, _mm256_mul_ps(_mm256_loadu_ps(v + i), b2));
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    if (vmax) { /* NAN_MAX(vmax, vi) */
      __m256 a = _mm256_loadu_ps(vmax + i);
      __m256 take_a = _mm256_or_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q), _mm256_cmp_ps(a, vi, _CMP_GT_OQ));
      vi = _mm256_blendv_ps(vi, a, take_a);
      _mm256_storeu_ps(vmax + i, vi);
    }
    __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), bc2), eps);
    _mm256_storeu_ps(p + i, _mm256_add_ps(pi, _mm256_div_ps(_mm256_mul_ps(neg_step, mi), denom)));
  }
  return i;
}
#endif

optim_adam_coef disp__optim_adam_coef(const disp_optimizer *opt, int64_t step) {
  const disp_adam_options *o = &opt->adam;
  double bias_correction1 = 1 - pow(o->beta1, (double)step);
  double bias_correction2 = 1 - pow(o->beta2, (double)step);
  optim_adam_coef c = {o->beta1, 1 - o->beta1, o->beta2, 1 - o->beta2, o->eps, o->weight_decay,
                 1 - o->lr * o->weight_decay, sqrt(bias_correction2), -(o->lr / bias_correction1),
                 opt->kind == OPTIM_ADAMW, o->maximize};
  return c;
}

void disp__optim_adam_update(disp_optimizer *opt, size_t i, disp_tensor *g) {
  optim_state *s = &opt->state[i];
  disp_tensor *p = opt->params[i];
  optim_adam_coef c = disp__optim_adam_coef(opt, ++s->step);
  int64_t n = disp_tensor_numel(p);
  void *pp = disp_tensor_data_ptr(p), *gp = disp_tensor_data_ptr(g);
  void *m = disp_tensor_data_ptr(s->t[OPTIM_EXP_AVG]), *v = disp_tensor_data_ptr(s->t[OPTIM_EXP_AVG_SQ]);
  void *vmax = opt->adam.amsgrad ? disp_tensor_data_ptr(s->t[OPTIM_MAX_EXP_AVG_SQ]) : NULL;
  int f32 = disp_tensor_dtype(p) == DISP_DTYPE_FLOAT32;
#if OPTIM_FMA_CLONES
  if (disp__optim_cpu_has_fma()) {
    if (f32) {
      int64_t k = adam_float_avx2(pp, gp, m, v, vmax, n, &c);
      adam_float_fma((float *)pp + k, (const float *)gp + k, (float *)m + k, (float *)v + k,
                     vmax ? (float *)vmax + k : NULL, n - k, &c);
    }
    else adam_double_fma(pp, gp, m, v, vmax, n, &c);
  } else
#endif
  if (f32) adam_float(pp, gp, m, v, vmax, n, &c);
  else adam_double(pp, gp, m, v, vmax, n, &c);
  disp__optim_bump(p, c.adamw ? 2 : 1); /* (AdamW: mul_) addcdiv_ */
  disp__optim_bump(s->t[OPTIM_EXP_AVG], 2);
  disp__optim_bump(s->t[OPTIM_EXP_AVG_SQ], 2);
  if (opt->adam.amsgrad) disp__optim_bump(s->t[OPTIM_MAX_EXP_AVG_SQ], 1);
}
