/*
 * devtest.c - the helpers every device-generic test uses (devtest.h).
 */
#include "devtest.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int dt_fail(dt_ctx *c, const char *fmt, ...) {
  if (!c->failed++) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
  }
  return 0;
}

int dt_ok(dt_ctx *c, disp_status st, const char *what) {
  if (st == DISP_OK) return 1;
  return dt_fail(c, "%s: %s", what, disp_last_error());
}

disp_tensor *dt_keep(dt_ctx *c, disp_tensor *t) {
  if (!t) return NULL;
  if (c->nowned == DT_MAX_OWNED) {
    dt_fail(c, "test harness: more than %d tensors", DT_MAX_OWNED);
    disp_tensor_release(t);
    return NULL;
  }
  return c->owned[c->nowned++] = t;
}

/* xorshift64*: the same values on every machine, independent of the
 * library's generator (which the random-op tests exercise). */
static double next_uniform(uint64_t *s) {
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
  return (double)((*s * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

disp_tensor *dt_rand(dt_ctx *c, const int64_t *sizes, int ndim, uint64_t seed) {
  disp_tensor *t = NULL;
  int f64 = c->dtype == DISP_DTYPE_FLOAT64;
  if (!dt_ok(c, disp_tensor_empty(sizes, ndim, f64 ? DISP_DTYPE_FLOAT64 : DISP_DTYPE_FLOAT32,
                                  disp_device_make(DISP_BACKEND_CPU, -1), &t),
             "dt_rand"))
    return NULL;
  uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
  void *p = disp_tensor_data_ptr(t);
  for (int64_t i = 0; i < disp_tensor_numel(t); i++) {
    double v = 2.0 * next_uniform(&s) - 1.0;
    if (f64) ((double *)p)[i] = v;
    else ((float *)p)[i] = (float)v;
  }
  return dt_keep(c, t);
}

static disp_tensor *to_device(dt_ctx *c, disp_tensor *t, disp_device dev) {
  if (!t) return NULL;
  disp_opt_device d = {dev.type, dev.index, true};
  disp_tensor *r = NULL;
  if (!dt_ok(c, disp_aten_to_device(t, d, disp_tensor_dtype(t), false, true, -1, &r), "aten::to.device"))
    return NULL;
  return dt_keep(c, r);
}

disp_tensor *dt_on(dt_ctx *c, disp_tensor *cpu) { return to_device(c, cpu, c->dev); }

disp_tensor *dt_cpu(dt_ctx *c, disp_tensor *t) { return to_device(c, t, disp_device_make(DISP_BACKEND_CPU, -1)); }

static int same_shape(const disp_tensor *a, const disp_tensor *b) {
  int n = disp_tensor_ndim(a);
  return n == disp_tensor_ndim(b) && (!n || !memcmp(disp_tensor_sizes(a), disp_tensor_sizes(b), (size_t)n * 8));
}

int dt_close(dt_ctx *c, const char *what, disp_tensor *got, disp_tensor *want) {
  if (!got || !want) return dt_fail(c, "%s: no tensor to compare", what);
  if (disp_tensor_device(got).type != c->dev.type)
    return dt_fail(c, "%s: on %s, expected %s", what, disp_device_type_name(disp_tensor_device(got).type),
                   disp_device_type_name(c->dev.type));
  if (disp_tensor_dtype(got) != disp_tensor_dtype(want))
    return dt_fail(c, "%s: dtype %s, expected %s", what, disp_dtype_name(disp_tensor_dtype(got)),
                   disp_dtype_name(disp_tensor_dtype(want)));
  if (!same_shape(got, want)) return dt_fail(c, "%s: sizes differ from the CPU's", what);
  if (c->shapes_only) return 1;
  disp_tensor *host = dt_cpu(c, got);
  int close = 0;
  if (!host || !dt_ok(c, disp_tensor_allclose(host, want, c->rtol, c->atol, 1, &close), "allclose")) return 0;
  return close ? 1 : dt_fail(c, "%s: values differ from the CPU's beyond rtol %g atol %g", what, c->rtol, c->atol);
}
