/*
 * check_ops.c - `disp check-ops`: runs reference cases (format:
 * shared/conformance/ops/README.md) through the dispatcher and compares.
 *
 * Each case is called the way a user would: every argument built from the
 * file and pushed on a disp_stack in schema order, the operator found by
 * name, and disp_call_boxed - the real call path, autograd keys and all.
 * By default every argument is pushed explicitly (the files list them all);
 * with --fill-defaults the trailing `defaulted` arguments are left off and
 * disp_stack_fill_defaults supplies them, which exercises the schema
 * defaults instead (cases whose defaulted arguments are not a suffix are
 * still pushed in full).
 *
 * Failures are sorted into classes so that whoever fixes them can
 * prioritize: kernel (operator or kernel missing), error (an error where
 * PyTorch succeeded, or none where it failed), value (dtype, sizes, values,
 * devices), stride (strides/offset of a fresh return), alias (sharing of
 * storage and view geometry), mutated (the state of a written input), and
 * harness (the file does not fit the schema).
 *
 * --device meta builds every input on the Meta device (no data) and checks
 * only what Meta kernels compute: dtype, sizes, strides, offset, aliasing.
 * That is how "Meta results agree with CPU results" is checked: both are
 * compared with the same PyTorch CPU reference.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_ops.h"
#include "simulate.h"
#include "tool_plugin.h"

static const char *const class_names[CL_COUNT] = {"kernel", "error", "value", "stride", "alias",
                                                  "mutated", "harness", "crash", "grad"};

void chk_addf(chk_report *r, unsigned cls, const char *fmt, ...) {
  r->classes |= cls;
  if (r->nmsgs++ >= 4 || r->len >= sizeof r->msg - 1) return; /* the first few say enough */
  const char *name = "?";
  for (int k = 0; k < CL_COUNT; k++)
    if (cls == 1u << k) name = class_names[k];
  int n = snprintf(r->msg + r->len, sizeof r->msg - r->len, "%s[%s] ", r->len ? "; " : "", name);
  if (n > 0) r->len += (size_t)n;
  if (r->len >= sizeof r->msg) { r->len = sizeof r->msg - 1; return; }
  va_list ap;
  va_start(ap, fmt);
  n = vsnprintf(r->msg + r->len, sizeof r->msg - r->len, fmt, ap);
  va_end(ap);
  if (n > 0) r->len += (size_t)n;
  if (r->len >= sizeof r->msg) r->len = sizeof r->msg - 1;
}

/* ---- the inputs of one call ---------------------------------------------- */


void chk_built_free(chk_built *b, size_t n) {
  for (size_t k = 0; k < n; k++) {
    disp_tensor_release(b[k].t);
    for (size_t e = 0; e < b[k].nlist; e++) disp_tensor_release(b[k].list[e]);
    free(b[k].list);
    disp_storage_release(b[k].st);
  }
  free(b);
}

disp_status chk_build_arg(const chk_value *v, const chk_opts *o, chk_built *b) {
  switch (v->kind) {
    case CHK_TENSOR: return chk_build_tensor(&v->t, o->device, &b->t);
    case CHK_STORAGE: return chk_build_storage(&v->t, o->device, &b->st);
    case CHK_TENSORS:
      if (!v->nelems) return DISP_OK;
      b->list = calloc(v->nelems, sizeof *b->list);
      if (!b->list) return disp_set_error(DISP_ERR_NO_MEMORY, "out of memory");
      b->nlist = v->nelems;
      for (size_t e = 0; e < v->nelems; e++) {
        if (v->elems[e].kind != CHK_TENSOR) continue;
        disp_status s = chk_build_tensor(&v->elems[e].t, o->device, &b->list[e]);
        if (s != DISP_OK) return s;
      }
      return DISP_OK;
    case CHK_TENSORMETA: return disp_set_error(DISP_ERR_INVALID_ARG, "tensormeta is not an input");
    default: return DISP_OK;
  }
}

disp_status chk_push_arg(disp_stack *s, const chk_value *v, const chk_built *b, const chk_opts *o) {
  switch (v->kind) {
    case CHK_NONE: return disp_stack_push_none(s);
    case CHK_TENSOR: return disp_stack_push_tensor(s, b->t);
    case CHK_TENSORS: return disp_stack_push_tensor_list(s, b->list, b->nlist);
    case CHK_STORAGE: return disp_stack_push_storage(s, b->st);
    case CHK_INT: case CHK_DTYPE: case CHK_LAYOUT: case CHK_MEMORY_FORMAT:
      return disp_stack_push_int(s, v->i);
    case CHK_INTS: return disp_stack_push_int_list(s, v->ints, v->nints);
    case CHK_BOOLS: { /* as many as the case lists: a fixed buffer would cut them silently */
      bool *tmp = malloc(v->nints ? v->nints * sizeof *tmp : 1);
      if (!tmp) return disp_set_error(DISP_ERR_NO_MEMORY, "check-ops: out of memory for a bool list");
      for (size_t k = 0; k < v->nints; k++) tmp[k] = v->ints[k] != 0;
      disp_status st = disp_stack_push_bool_list(s, tmp, v->nints);
      free(tmp);
      return st;
    }
    case CHK_FLOAT: return disp_stack_push_double(s, v->d);
    case CHK_BOOL: return disp_stack_push_bool(s, v->i != 0);
    case CHK_STR: return disp_stack_push_string(s, v->s);
    case CHK_SCALAR_INT: return disp_stack_push_scalar(s, disp_scalar_int(v->i));
    case CHK_SCALAR_FLOAT: return disp_stack_push_scalar(s, disp_scalar_double(v->d));
    /* The cases were called through Python's torch.ops, whose toIValue turns
     * a bool passed for a Scalar into an int (a Python bool is an int): the
     * operator received 1 or 0, and the recorded results have int semantics
     * (full#3 gives int64, add(bool, bool, alpha=True) is no error). */
    case CHK_SCALAR_BOOL: return disp_stack_push_scalar(s, disp_scalar_int(v->i != 0));
    case CHK_DEVICE:
      /* On a Meta or plugin-device run a device=cpu argument asks for that
       * device, so that factories reach its kernels too. */
      if (o->device.type != DISP_BACKEND_CPU && v->i == DISP_BACKEND_CPU)
        return disp_stack_push_device(s, o->device.type, o->device.index);
      return disp_stack_push_device(s, (int32_t)v->i, (int32_t)v->d);
    case CHK_TENSORMETA: break;
  }
  return disp_set_error(DISP_ERR_INVALID_ARG, "cannot push this value");
}

disp_tensor **chk_label_slot(const chk_case *c, chk_built *b, const char *label, size_t *arg) {
  const char *dot = strrchr(label, '.');
  for (size_t a = 0; a < c->nargs; a++) {
    const char *name = c->args[a].name;
    size_t len = strlen(name);
    *arg = a;
    if (!strcmp(name, label)) return b[a].t ? &b[a].t : NULL;
    if (dot && (size_t)(dot - label) == len && !strncmp(name, label, len)) {
      char *end;
      long e = strtol(dot + 1, &end, 10);
      if (*end || e < 0 || (size_t)e >= b[a].nlist || !b[a].list[e]) return NULL;
      return &b[a].list[e];
    }
  }
  *arg = c->nargs;
  return NULL;
}

/* The storage an input label names after the call ("self", "tensors.1", a
 * Storage argument), or NULL. */
static disp_storage *label_storage(const chk_case *c, const chk_built *b, const char *label,
                                   disp_tensor **tensor) {
  size_t a;
  disp_tensor **slot = chk_label_slot(c, (chk_built *)b, label, &a);
  *tensor = slot ? *slot : NULL;
  if (*tensor) return disp_tensor_storage(*tensor);
  return a < c->nargs && !strcmp(c->args[a].name, label) ? b[a].st : NULL;
}

/* ---- comparing ---------------------------------------------------------- */

static void tolerance(disp_dtype dt, double *rtol, double *atol) {
  switch (dt) {
    case DISP_DTYPE_FLOAT32: *rtol = 1.3e-6; *atol = 1e-5; break;
    case DISP_DTYPE_FLOAT16: *rtol = 1e-3; *atol = 1e-5; break;
    case DISP_DTYPE_BFLOAT16: *rtol = 1.6e-2; *atol = 1e-5; break;
    default: *rtol = 1e-7; *atol = 1e-7; break;
  }
}

static int close_enough(double got, double want, disp_dtype dt) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  if (isnan(got) || isinf(got)) return 0;
  double rtol, atol;
  tolerance(dt, &rtol, &atol);
  return fabs(got - want) <= atol + rtol * fabs(want);
}

static int next_index(int64_t *idx, const int64_t *sizes, int ndim) {
  for (int d = ndim - 1; d >= 0; d--) {
    if (++idx[d] < sizes[d]) return 1;
    idx[d] = 0;
  }
  return 0;
}

static int64_t numel_of(const int64_t *sizes, int ndim) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= sizes[d];
  return n;
}

static void format_dims(char *buf, size_t len, const int64_t *v, int n) {
  size_t k = 0;
  k += (size_t)snprintf(buf, len, "[");
  for (int d = 0; d < n && k < len; d++)
    k += (size_t)snprintf(buf + k, len - k, "%s%lld", d ? ", " : "", (long long)v[d]);
  if (k < len) snprintf(buf + k, len - k, "]");
}

/* Whether the CPU data of t reaches only inside its storage (a broken kernel
 * must give a FAIL, not a crash of the harness). */
static int readable(const disp_tensor *t) {
  disp_storage *st = disp_tensor_storage(t);
  if (!st || !disp_storage_data(st) || !disp_tensor_strides(t)) return 0;
  int nd = disp_tensor_ndim(t);
  const int64_t *sz = disp_tensor_sizes(t), *sd = disp_tensor_strides(t);
  int64_t last = disp_tensor_storage_offset(t);
  for (int d = 0; d < nd; d++) {
    if (sz[d] == 0) return 1;
    if (sd[d] < 0) return 0;
    last += (sz[d] - 1) * sd[d];
  }
  return last >= 0 && (size_t)(last + 1) * disp_tensor_itemsize(t) <= disp_storage_nbytes(st);
}

static const char *elem_ptr(const disp_tensor *t, const int64_t *idx) {
  const int64_t *sd = disp_tensor_strides(t);
  int64_t off = disp_tensor_storage_offset(t);
  for (int d = 0; d < disp_tensor_ndim(t); d++) off += idx[d] * sd[d];
  return (const char *)disp_storage_data(disp_tensor_storage(t)) + off * (int64_t)disp_tensor_itemsize(t);
}

/* Compares one element at p (dtype dt) with the token `want`. */
static int elem_matches(const char *p, disp_dtype dt, const char *want, char *got_text, size_t len) {
  if (disp_dtype_is_floating(dt)) {
    double g = chk_load_double(p, dt), w = strtod(want, NULL);
    snprintf(got_text, len, "%.17g", g);
    return close_enough(g, w, dt);
  }
  int64_t g = chk_load_int(p, dt), w = strtoll(want, NULL, 10);
  if (dt == DISP_DTYPE_BOOL) w = w != 0;
  snprintf(got_text, len, "%lld", (long long)g);
  return g == w;
}

/*
 * Compares a returned (or mutated) tensor with what the file records.
 * geom_class: the class of a strides/offset mismatch (stride for fresh
 * returns, alias for views, mutated for written inputs); vcls: the class of
 * any other mismatch (value, or mutated).
 */
static void compare_values(chk_report *r, const char *what, const disp_tensor *got, const chk_tensor *w,
                           unsigned vcls);

static int plugin_device(const chk_opts *o) {
  return o->device.type != DISP_BACKEND_CPU && o->device.type != DISP_BACKEND_META;
}

void chk_compare_tensor(chk_report *r, const char *what, const disp_tensor *got, const chk_value *want,
                           unsigned geom_class, unsigned vcls, const chk_opts *o) {
  const chk_tensor *w = &want->t;
  char a[256], b[256];
  if (disp_tensor_dtype(got) != w->dtype) {
    chk_addf(r, vcls, "%s: dtype %s, expected %s", what, disp_dtype_name(disp_tensor_dtype(got)),
         disp_dtype_name(w->dtype));
    return;
  }
  int nd = disp_tensor_ndim(got);
  if (nd != w->ndim || (nd && memcmp(disp_tensor_sizes(got), w->sizes, (size_t)nd * sizeof(int64_t)))) {
    format_dims(a, sizeof a, disp_tensor_sizes(got), nd);
    format_dims(b, sizeof b, w->sizes, w->ndim);
    chk_addf(r, vcls, "%s: sizes %s, expected %s", what, a, b);
    return;
  }
  const int64_t *gs = disp_tensor_strides(got);
  /* Note [Strides on a plugin's device]: the strides of a fresh result are
   * the backend's choice there (1.13's cpu_fallback itself returns an out=
   * result resized contiguous); views and written inputs keep theirs. */
  int fresh = geom_class == CL_STRIDE;
  if (fresh && plugin_device(o)) geom_class = 0;
  if (geom_class && (!gs || (nd && memcmp(gs, w->strides, (size_t)nd * sizeof(int64_t))))) {
    format_dims(a, sizeof a, gs ? gs : w->sizes, gs ? nd : 0);
    format_dims(b, sizeof b, w->strides, w->ndim);
    chk_addf(r, geom_class, "%s: strides %s, expected %s", what, a, b);
  }
  if (geom_class && disp_tensor_storage_offset(got) != w->offset)
    chk_addf(r, geom_class, "%s: storage offset %lld, expected %lld", what,
         (long long)disp_tensor_storage_offset(got), (long long)w->offset);
  disp_backend want_dev = o->device.type != DISP_BACKEND_CPU && (o->fresh_on_meta || !fresh)
                              ? o->device.type : DISP_BACKEND_CPU;
  if (disp_tensor_device(got).type != want_dev) {
    chk_addf(r, vcls, "%s: on device %s, expected %s", what,
         disp_device_type_name(disp_tensor_device(got).type), disp_device_type_name(want_dev));
    return;
  }
  if (want->kind != CHK_TENSOR || o->meta) return;
  if (numel_of(w->sizes, w->ndim) == 0) return;
  disp_tensor *host = NULL;
  if (chk_host_mirror(got, &host) != DISP_OK) {
    chk_addf(r, vcls, "%s: reading it back from %s: %s", what, disp_device_type_name(want_dev), disp_last_error());
    return;
  }
  compare_values(r, what, host, w, vcls);
  disp_tensor_release(host);
}

/* The element-by-element part of chk_compare_tensor, on a host tensor. */
static void compare_values(chk_report *r, const char *what, const disp_tensor *got, const chk_tensor *w,
                           unsigned vcls) {
  char a[256];
  int nd = w->ndim;
  if (!readable(got)) {
    chk_addf(r, vcls, "%s: the tensor reaches outside its storage (or has no data)", what);
    return;
  }
  int64_t idx[DISP_TENSOR_MAX_DIMS] = {0};
  int64_t bad = 0;
  do {
    int64_t woff = w->offset;
    for (int d = 0; d < nd; d++) woff += idx[d] * w->strides[d];
    char gt[64];
    if (!elem_matches(elem_ptr(got, idx), w->dtype, w->vals[woff], gt, sizeof gt)) {
      if (!bad++) {
        format_dims(a, sizeof a, idx, nd);
        chk_addf(r, vcls, "%s: value at %s is %s, expected %s", what, a, gt, w->vals[woff]);
      }
    }
  } while (next_index(idx, w->sizes, nd));
  if (bad > 1 && r->len < sizeof r->msg - 40) {
    int n = snprintf(r->msg + r->len, sizeof r->msg - r->len, " (%lld elements differ)", (long long)bad);
    if (n > 0) r->len += (size_t)n;
    if (r->len >= sizeof r->msg) r->len = sizeof r->msg - 1;
  }
}

static void compare_host_storage(chk_report *r, const char *what, const disp_tensor *got, const chk_tensor *w);

/* Compares the whole storage of a written input with the recorded values. */
static void compare_storage(chk_report *r, const char *what, const disp_tensor *dev_t, const chk_tensor *w) {
  disp_tensor *got = NULL;
  if (chk_host_mirror(dev_t, &got) != DISP_OK) {
    chk_addf(r, CL_MUTATED, "%s: reading it back: %s", what, disp_last_error());
    return;
  }
  compare_host_storage(r, what, got, w);
  disp_tensor_release(got);
}

static void compare_host_storage(chk_report *r, const char *what, const disp_tensor *got, const chk_tensor *w) {
  disp_storage *st = disp_tensor_storage(got);
  size_t item = disp_dtype_itemsize(w->dtype);
  if (!st || disp_storage_nbytes(st) < w->nvals * item || (w->nvals && !disp_storage_data(st))) {
    chk_addf(r, CL_MUTATED, "%s: storage holds %zu bytes, expected at least %zu", what,
         st ? disp_storage_nbytes(st) : 0, w->nvals * item);
    return;
  }
  const char *data = disp_storage_data(st);
  for (size_t k = 0; k < w->nvals; k++) {
    char gt[64];
    if (!elem_matches(data + k * item, w->dtype, w->vals[k], gt, sizeof gt)) {
      chk_addf(r, CL_MUTATED, "%s: storage element %zu is %s, expected %s", what, k, gt, w->vals[k]);
      return;
    }
  }
}

static int is_scalar_kind(chk_kind k) {
  return k == CHK_SCALAR_INT || k == CHK_SCALAR_FLOAT || k == CHK_SCALAR_BOOL;
}

static void compare_plain(chk_report *r, const char *what, const disp_value *got, const chk_value *want) {
  switch (want->kind) {
    case CHK_SCALAR_INT: case CHK_INT:
      if (got->tag != DISP_VALUE_INT) chk_addf(r, CL_VALUE, "%s: %s, expected an int", what, disp_value_tag_name(got->tag));
      else if (got->u.i != want->i) chk_addf(r, CL_VALUE, "%s: %lld, expected %lld", what, (long long)got->u.i, (long long)want->i);
      return;
    case CHK_SCALAR_FLOAT: case CHK_FLOAT:
      if (got->tag != DISP_VALUE_DOUBLE) chk_addf(r, CL_VALUE, "%s: %s, expected a float", what, disp_value_tag_name(got->tag));
      else if (!close_enough(got->u.d, want->d, DISP_DTYPE_FLOAT64))
        chk_addf(r, CL_VALUE, "%s: %.17g, expected %.17g", what, got->u.d, want->d);
      return;
    case CHK_SCALAR_BOOL: case CHK_BOOL:
      if (got->tag != DISP_VALUE_BOOL) chk_addf(r, CL_VALUE, "%s: %s, expected a bool", what, disp_value_tag_name(got->tag));
      else if (got->u.b != (want->i != 0)) chk_addf(r, CL_VALUE, "%s: %d, expected %d", what, got->u.b, (int)want->i);
      return;
    default:
      chk_addf(r, CL_HARNESS, "%s: cannot compare a return of this kind", what);
  }
}

/* ---- random results (README: tensormeta of rand, dropout) ---------------- */

static const chk_value *arg_value(const chk_case *c, const char *name, size_t *index) {
  for (size_t a = 0; a < c->nargs; a++)
    if (!strcmp(c->args[a].name, name)) { if (index) *index = a; return &c->args[a].v; }
  return NULL;
}

/* multinomial's samples (host mirrors): indices of the last dim of the
 * weights `in`, of a nonzero weight (while the row has enough of them),
 * distinct within a row without replacement. */
static void check_multinomial_host(chk_report *r, const chk_case *c, disp_tensor *in, disp_tensor *out) {
  const chk_value *rv = arg_value(c, "replacement", NULL);
  int replacement = rv && rv->kind == CHK_BOOL && rv->i;
  int nd = disp_tensor_ndim(in);
  int64_t ncat = disp_tensor_sizes(in)[nd - 1], rows = nd == 2 ? disp_tensor_sizes(in)[0] : 1;
  int64_t n = disp_tensor_sizes(out)[disp_tensor_ndim(out) - 1];
  disp_dtype dt = disp_tensor_dtype(in);
  for (int64_t row = 0; row < rows; row++) {
    int64_t ii[2] = {row, 0}, oi[2] = {row, 0}, *in_at = ii + (2 - nd), *out_at = oi + (2 - nd), nonzero = 0;
    for (int64_t j = 0; j < ncat; j++) {
      ii[1] = j;
      nonzero += chk_load_double(elem_ptr(in, in_at), dt) != 0;
    }
    for (int64_t s = 0; s < n; s++) {
      oi[1] = s;
      int64_t k = chk_load_int(elem_ptr(out, out_at), DISP_DTYPE_INT64);
      if (k < 0 || k >= ncat) {
        chk_addf(r, CL_VALUE, "multinomial sample %lld outside [0, %lld)", (long long)k, (long long)ncat);
        return;
      }
      ii[1] = k;
      if (chk_load_double(elem_ptr(in, in_at), dt) == 0 && (replacement || nonzero >= n)) {
        chk_addf(r, CL_VALUE, "multinomial drew category %lld of weight 0", (long long)k);
        return;
      }
      for (int64_t t = 0; t < s && !replacement; t++) {
        oi[1] = t;
        if (chk_load_int(elem_ptr(out, out_at), DISP_DTYPE_INT64) == k) {
          chk_addf(r, CL_VALUE, "multinomial drew category %lld twice without replacement", (long long)k);
          return;
        }
      }
      oi[1] = s;
    }
  }
}

/* rand's and dropout's results, read on the host (mirrors of device tensors). */
static void check_random_host(chk_report *r, const chk_case *c, disp_tensor *in, disp_tensor *out, disp_tensor *mask) {
  if (!readable(out) || disp_tensor_numel(out) == 0) return;
  if (!strcmp(c->op, "aten::multinomial")) {
    if (in && readable(in)) check_multinomial_host(r, c, in, out);
    return;
  }
  disp_dtype dt = disp_tensor_dtype(out);
  int nd = disp_tensor_ndim(out);
  const int64_t *sz = disp_tensor_sizes(out);
  int64_t idx[DISP_TENSOR_MAX_DIMS] = {0};
  if (!strcmp(c->op, "aten::rand") || !strncmp(c->op, "aten::rand.", 11)) {
    do {
      double x = chk_load_double(elem_ptr(out, idx), dt);
      if (!(x >= 0.0 && x < 1.0)) { chk_addf(r, CL_VALUE, "rand value %.17g outside [0, 1)", x); return; }
    } while (next_index(idx, sz, nd));
    return;
  }
  const chk_value *pv = arg_value(c, "p", NULL);
  if (!in || !pv || pv->kind != CHK_FLOAT) return;
  if (mask && (!readable(mask) || disp_tensor_dtype(mask) != DISP_DTYPE_BOOL || disp_tensor_ndim(mask) != nd)) return;
  if (!readable(in) || disp_tensor_ndim(in) != nd) return;
  double scale = 1.0 / (1.0 - pv->d);
  do {
    double x = chk_load_double(elem_ptr(in, idx), disp_tensor_dtype(in));
    double y = chk_load_double(elem_ptr(out, idx), dt);
    int kept = mask ? chk_load_int(elem_ptr(mask, idx), DISP_DTYPE_BOOL) != 0 : y != 0.0;
    /* a dropped inf or nan is input * 0 = nan, not 0 */
    int ok = kept ? close_enough(y, x * scale, dt) : y == 0.0 || (!isfinite(x) && isnan(y));
    if (!ok && !mask && !isfinite(x) && isnan(y)) ok = 1;
    if (!ok) {
      chk_addf(r, CL_VALUE, "dropout element %.17g of input %.17g is neither 0 nor input/(1-p)%s", y, x,
           mask ? " as the mask says" : "");
      return;
    }
  } while (next_index(idx, sz, nd));
}

static void check_random(chk_report *r, const chk_case *c, const chk_built *b, disp_stack *stack) {
  disp_value *v0 = disp_stack_at(stack, 0), *v1 = disp_stack_at(stack, 1);
  if (!v0 || v0->tag != DISP_VALUE_TENSOR || c->nouts < 1 || c->outs[0].kind != CHK_TENSORMETA) return;
  size_t ai;
  int native = !strcmp(c->op, "aten::native_dropout");
  const char *in_name = !strcmp(c->op, "aten::multinomial") ? "self" : "input";
  disp_tensor *dev[3] = {v0->u.tensor, arg_value(c, in_name, &ai) ? b[ai].t : NULL,
                         native && v1 && v1->tag == DISP_VALUE_TENSOR ? v1->u.tensor : NULL};
  disp_tensor *host[3] = {NULL, NULL, NULL};
  if (native && !dev[2]) return;
  disp_status st = DISP_OK;
  for (int k = 0; k < 3 && st == DISP_OK; k++)
    if (dev[k]) st = chk_host_mirror(dev[k], &host[k]);
  if (st == DISP_OK) check_random_host(r, c, host[1], host[0], host[2]);
  else chk_addf(r, CL_VALUE, "reading the result back: %s", disp_last_error());
  for (int k = 0; k < 3; k++) disp_tensor_release(host[k]);
}

disp_tensor *chk_flat_return(disp_stack *stack, size_t i) {
  for (size_t r = 0; r < disp_stack_size(stack); r++) {
    const disp_value *v = disp_stack_at(stack, r);
    size_t n = v->tag == DISP_VALUE_TENSOR_LIST ? v->u.tensors.len : 1;
    if (i >= n) {
      i -= n;
      continue;
    }
    if (v->tag == DISP_VALUE_TENSOR_LIST) return v->u.tensors.data[i];
    return v->tag == DISP_VALUE_TENSOR ? v->u.tensor : NULL;
  }
  return NULL;
}

const chk_value *chk_flat_out(const chk_case *c, size_t i) {
  for (size_t r = 0; r < c->nouts; r++) {
    const chk_value *v = &c->outs[r];
    size_t n = v->kind == CHK_TENSORS ? v->nelems : 1;
    if (i >= n) {
      i -= n;
      continue;
    }
    return v->kind == CHK_TENSORS ? &v->elems[i] : v;
  }
  return NULL;
}

/* ---- one case ----------------------------------------------------------- */

/* Errors PyTorch's Meta kernels do not raise: they depend on element values
 * or on which dtypes the CPU kernel was compiled for. */
/* Errors a Meta run cannot give: they depend on values, on the CPU's dtype
 * kernels, or on 1.13's oneDNN path of a CPU kernel (its ideep views,
 * "itensor_view_from_dense expects ...", refuse what the kernel proper
 * would take). */
static int error_needs_values(const chk_case *c) {
  return strstr(c->error, "out of bounds") || strstr(c->error, "index out of range") ||
         strstr(c->error, "not implemented for") ||
         strstr(c->error, "itensor_") || strstr(c->error, "Mask tensor can take 0 and 1 values only") ||
         strstr(c->error, "invalid multinomial distribution") || strstr(c->error, "probability tensor contains") ||
         (c->note && strstr(c->note, "no CPU kernel in 1.13"));
}

static void compare_returns(chk_report *r, const chk_case *c, const chk_built *b, disp_stack *stack,
                            const disp_schema *schema, const chk_opts *o) {
  size_t nret = disp_stack_size(stack);
  if (nret != c->nouts) {
    chk_addf(r, CL_VALUE, "%zu returns, expected %zu", nret, c->nouts);
    if (nret > c->nouts) nret = c->nouts;
  }
  for (size_t i = 0; i < nret; i++) {
    const disp_value *got = disp_stack_at(stack, i);
    const chk_value *want = &c->outs[i];
    char what[32];
    snprintf(what, sizeof what, "out %zu", i);
    if (want->kind == CHK_NONE) {
      if (got->tag != DISP_VALUE_NONE) chk_addf(r, CL_VALUE, "%s: %s, expected None", what, disp_value_tag_name(got->tag));
      continue;
    }
    if (want->kind == CHK_TENSORS) {
      if (got->tag != DISP_VALUE_TENSOR_LIST || got->u.tensors.len != want->nelems) {
        chk_addf(r, CL_VALUE, "%s: not a list of %zu tensors", what, want->nelems);
        continue;
      }
      for (size_t e = 0; e < want->nelems; e++) {
        char ew[64];
        snprintf(ew, sizeof ew, "%s.%zu", what, e);
        disp_tensor *t = got->u.tensors.data[e];
        if (want->elems[e].kind == CHK_NONE || !t) {
          if ((want->elems[e].kind == CHK_NONE) != !t) chk_addf(r, CL_VALUE, "%s: None mismatch", ew);
          continue;
        }
        chk_compare_tensor(r, ew, t, &want->elems[e], CL_STRIDE, CL_VALUE, o);
      }
      continue;
    }
    if (want->kind != CHK_TENSOR && want->kind != CHK_TENSORMETA) {
      if (!o->meta || !is_scalar_kind(want->kind)) compare_plain(r, what, got, want);
      continue;
    }
    if (got->tag != DISP_VALUE_TENSOR) {
      chk_addf(r, CL_VALUE, "%s: %s, expected a Tensor", what, disp_value_tag_name(got->tag));
      continue;
    }
    disp_tensor *t = got->u.tensor;
    disp_storage *ts = disp_tensor_storage(t);
    int aliased = 0;
    /* Note [Aliases on a plugin's device]: a return that the reference saw
     * aliasing an input although its schema does not annotate it
     * (native_dropout in eval mode hands back its input) shows the CPU
     * kernel's choice; a backend, or the CPU fallback, may return a fresh
     * tensor there (1.13's cpu_fallback does): either is right on a plugin's
     * device. */
    int lenient = 0;
    for (size_t k = 0; k < c->naliases; k++) lenient |= (size_t)c->aliases[k].ret == i;
    lenient &= plugin_device(o) && i < disp_schema_num_returns(schema) && !disp_schema_return_alias_set(schema, i);
    for (size_t k = 0; k < c->naliases && !lenient; k++) {
      if ((size_t)c->aliases[k].ret != i) continue;
      aliased = 1;
      disp_tensor *in;
      disp_storage *st = label_storage(c, b, c->aliases[k].label, &in);
      if (!st && !in) chk_addf(r, CL_HARNESS, "aliases names unknown input '%s'", c->aliases[k].label);
      else if (!ts || ts != st)
        chk_addf(r, CL_ALIAS, "%s does not share storage with %s", what, c->aliases[k].label);
    }
    if (!aliased && ts && !lenient) {
      for (size_t a = 0; a < c->nargs; a++) {
        int shares = (b[a].t && disp_tensor_storage(b[a].t) == ts) || (b[a].st && b[a].st == ts);
        for (size_t e = 0; e < b[a].nlist; e++)
          shares |= b[a].list[e] && disp_tensor_storage(b[a].list[e]) == ts;
        if (shares) chk_addf(r, CL_ALIAS, "%s shares storage with input %s (expected a fresh tensor)", what, c->args[a].name);
      }
    }
    chk_compare_tensor(r, what, t, want, aliased ? CL_ALIAS : CL_STRIDE, CL_VALUE, o);
  }
  for (size_t m = 0; m < c->nmuts; m++) {
    disp_tensor *in;
    label_storage(c, b, c->muts[m].label, &in);
    char what[96];
    snprintf(what, sizeof what, "mutated %s", c->muts[m].label);
    if (!in) { chk_addf(r, CL_HARNESS, "mutated names unknown input '%s'", c->muts[m].label); continue; }
    int before = r->nmsgs;
    chk_compare_tensor(r, what, in, &c->muts[m].v, CL_MUTATED, CL_MUTATED, o);
    if (r->nmsgs == before && !o->meta && c->muts[m].v.kind == CHK_TENSOR)
      compare_storage(r, what, in, &c->muts[m].v.t);
  }
  if (!o->meta) check_random(r, c, b, stack);
}

static void run_case(const chk_case *c, const chk_opts *gopts, chk_report *r) {
  chk_opts lo = *gopts;
  const chk_opts *o = &lo;
  for (size_t a = 0; a < c->nargs; a++) {
    chk_kind k = c->args[a].v.kind;
    if (k == CHK_TENSOR || k == CHK_TENSORS || k == CHK_STORAGE || k == CHK_DEVICE) lo.fresh_on_meta = 1;
  }
  const disp_op *op = NULL;
  if (disp_op_find(c->op, &op) != DISP_OK) {
    chk_addf(r, CL_KERNEL, "%s", disp_last_error());
    return;
  }
  const disp_schema *schema = disp_op_schema(op);
  size_t nargs = disp_schema_num_arguments(schema);
  if (nargs != c->nargs) {
    chk_addf(r, CL_HARNESS, "%zu args, the schema has %zu", c->nargs, nargs);
    return;
  }
  for (size_t a = 0; a < nargs; a++)
    if (strcmp(disp_schema_argument_name(schema, a), c->args[a].name)) {
      chk_addf(r, CL_HARNESS, "arg %zu is '%s', the schema says '%s'", a, c->args[a].name,
           disp_schema_argument_name(schema, a));
      return;
    }
  if (o->gradcheck) {
    chk_gradcheck(c, op, o, r);
    return;
  }
  chk_built *b = calloc(nargs ? nargs : 1, sizeof *b);
  disp_stack *stack = disp_stack_new();
  if (!b || !stack) {
    chk_addf(r, CL_HARNESS, "out of memory");
    free(b);
    disp_stack_free(stack);
    return;
  }
  /* With --fill-defaults, leave off the trailing run of defaulted args. */
  size_t given = nargs;
  if (o->fill_defaults)
    while (given > 0 && c->args[given - 1].defaulted) given--;
  disp_status st = DISP_OK;
  for (size_t a = 0; a < nargs && st == DISP_OK; a++) {
    st = chk_build_arg(&c->args[a].v, o, &b[a]);
    if (st == DISP_OK && a < given) st = chk_push_arg(stack, &c->args[a].v, &b[a], o);
  }
  if (st != DISP_OK) {
    chk_addf(r, CL_HARNESS, "building the arguments: %s", disp_last_error());
    goto done;
  }
  if (given < nargs && disp_stack_fill_defaults(op, stack, given) != DISP_OK) {
    chk_addf(r, CL_ERROR, "disp_stack_fill_defaults: %s", disp_last_error());
    goto done;
  }
  disp_clear_error();
  st = disp_call_boxed(op, stack);
  /* A Scalar return (item, _local_scalar_dense) reads an element: nothing a
   * Meta tensor can give, so PyTorch fails those on Meta whatever the case. */
  int scalar_ret = 0;
  for (size_t i = 0; i < disp_schema_num_returns(schema); i++)
    scalar_ret |= disp_schema_type_kind(disp_schema_return_type(schema, i)) == DISP_TYPE_SCALAR;
  int missing = st == DISP_ERR_NO_KERNEL || st == DISP_ERR_OP_NOT_FOUND;
  if (o->meta && scalar_ret && st != DISP_OK && (!c->error || missing)) {
    r->skip = 1;
    snprintf(r->msg, sizeof r->msg, "a Scalar result needs data: %s", disp_last_error());
    goto done;
  }
  /* A missing kernel is never the error a case expects, unless PyTorch's
   * own error was the missing kernel (_copy_from on CPU). */
  if (c->error && plugin_device(o) && strstr(c->error, "with arguments from the 'CPU' backend")) {
    r->skip = 1;
    snprintf(r->msg, sizeof r->msg, "the expected error is the CPU's missing kernel");
    goto done;
  }
  if (c->error) {
    if (missing && strncmp(c->error, "Could not run '", 15)) {
      chk_addf(r, CL_KERNEL, "%s (expected error: %s)", disp_last_error(), c->error);
    } else if (st != DISP_OK) {
      snprintf(r->info, sizeof r->info, "  error: %s\n  expected: %s\n", disp_last_error(), c->error);
    } else if (c->note && strstr(c->note, "no CPU kernel in 1.13")) {
      r->skip = 1;
      snprintf(r->msg, sizeof r->msg, "succeeds where 1.13 had no CPU kernel for the dtype");
    } else if (o->meta && error_needs_values(c)) {
      r->skip = 1;
      snprintf(r->msg, sizeof r->msg, "the error depends on values or CPU dtypes, not on Meta");
    } else {
      chk_addf(r, CL_ERROR, "succeeded, expected error: %s", c->error);
    }
    goto done;
  }
  if (st != DISP_OK) {
    chk_addf(r, missing ? CL_KERNEL : CL_ERROR, "%s", disp_last_error());
    goto done;
  }
  compare_returns(r, c, b, stack, schema, o);
  if (o->grad) chk_check_grad(c, op, o, r);
done:
  disp_stack_free(stack);
  chk_built_free(b, nargs);
}

/* ---- the command ---------------------------------------------------------- */

/*
 * --isolate: runs the case in a child process that sends its report back
 * through a pipe, so a kernel that crashes (or a sanitizer that aborts) costs
 * one FAIL [crash] instead of the whole run. The child leaves with _exit, so
 * LeakSanitizer does not look at it: leaks are for the normal mode.
 */
static void run_case_isolated(const chk_case *c, const chk_opts *o, chk_report *r) {
  int fd[2];
  if (pipe(fd) != 0) { run_case(c, o, r); return; }
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) { close(fd[0]); close(fd[1]); run_case(c, o, r); return; }
  if (pid == 0) {
    close(fd[0]);
    run_case(c, o, r);
    const char *p = (const char *)r;
    size_t left = sizeof *r;
    while (left) {
      ssize_t n = write(fd[1], p, left);
      if (n <= 0) break;
      p += n, left -= (size_t)n;
    }
    fflush(stdout);
    _exit(0);
  }
  close(fd[1]);
  size_t got = 0;
  char *p = (char *)r;
  while (got < sizeof *r) {
    ssize_t n = read(fd[0], p + got, sizeof *r - got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {}
  if (got != sizeof *r) {
    memset(r, 0, sizeof *r);
    if (WIFSIGNALED(status)) chk_addf(r, CL_CRASH, "killed by signal %d", WTERMSIG(status));
    else chk_addf(r, CL_CRASH, "the case's process exited with status %d", WEXITSTATUS(status));
  }
}

static void quiet_warning(const char *message, void *user_data) {
  if (*(const int *)user_data) printf("  warning: %s\n", message);
}

/*
 * The text of one case file, or NULL after saying why on stderr and as a
 * FAIL line: unreadable, a directory, or a NUL byte (which would end the
 * text early and silently drop the cases after it).
 */
static char *read_cases_file(const char *path) {
  size_t len = 0;
  char *text = sim_read_file(path, &len);
  char why[256];
  int col, nul_line = 0;
  if (!text) snprintf(why, sizeof why, "cannot read %s: %s", path, strerror(errno));
  else if ((nul_line = sim_nul_line(text, len, &col)) != 0)
    snprintf(why, sizeof why, "%s: line %d: contains a NUL byte", path, nul_line);
  else return text;
  free(text);
  fprintf(stderr, "disp check-ops: %s\n", why);
  printf("FAIL %s: %s\n", path, why);
  return NULL;
}

static const char *const check_usage =
    "usage: disp check-ops [--plugin X.so]... [--device DEVICE] [--grad | --gradcheck] [--verbose] [--fill-defaults] FILE...\n\n"
    "Runs reference cases (shared/conformance/ops format) through the dispatcher with\n"
    "disp_call_boxed and compares returns, aliasing, mutated inputs and errors with what\n"
    "PyTorch 1.13 recorded. Prints 'PASS <case>', 'FAIL <case>: [class] why' or\n"
    "'SKIP <case>: why' per case and 'N passed, M failed[, K skipped]' at the end;\n"
    "exit 1 on any failure. Failure classes: kernel error value stride alias mutated harness\n"
    "crash grad.\n\n"
    "  --device meta    build inputs on the Meta device; compare dtype, sizes, strides,\n"
    "                   offset and aliasing only\n"
    "  --device NAME    build inputs on a plugin's device (\"openreg\", \"openreg:1\"): values\n"
    "                   are copied in and read back through the device's copy hooks\n"
    "  --plugin X.so    load a backend plugin first (disp_plugin_load); may repeat\n"
    "                   (every disp command takes it)\n"
    "  --verbose        also print the messages of expected errors and warnings\n"
    "  --fill-defaults  leave off trailing defaulted arguments and let\n"
    "                   disp_stack_fill_defaults supply them (default: pass all)\n"
    "  --per-op         after each file, a line '== FILE: P passed, F failed, S skipped'\n"
    "  --failures-only  print only FAIL lines (and the --per-op lines)\n"
    "  --isolate        run each case in a child process: a crashing kernel gives\n"
    "                   'FAIL <case>: [crash] ...' and the run goes on\n"
    "  --grad           run only the cases with a requires_grad line and also check their\n"
    "                   gradients: the inputs made leaves, disp_autograd_grad with the\n"
    "                   grad_output tensors, compared with the grad lines (float64\n"
    "                   tolerances; no grad line: the gradient must be None)\n"
    "  --gradcheck      run only the cases with a requires_grad line, through\n"
    "                   disp_gradcheck and disp_gradgradcheck on their inputs (CPU only;\n"
    "                   a case noted 'kink' is skipped)\n";

/* One case file: runs its cases, prints their lines, adds to *t. */
static void run_file(const chk_opts *o, const char *path, chk_totals *t) {
  char *text = read_cases_file(path);
  if (!text) { t->failed++; t->by_class[6 /* harness */]++; return; }
  chk_case *cases = NULL;
  size_t ncases = 0;
  char err[512];
  int prc = chk_parse_file(text, &cases, &ncases, err, sizeof err);
  long p0 = t->passed, f0 = t->failed, s0 = t->skipped;
  for (size_t k = 0; k < ncases; k++) {
    chk_report r = {0};
    if ((o->grad || o->gradcheck) && !cases[k].nrequires_grad) { chk_case_free(&cases[k]); continue; }
    if (o->isolate) run_case_isolated(&cases[k], o, &r);
    else run_case(&cases[k], o, &r);
    if (r.skip) {
      if (!o->failures_only) printf("SKIP %s: %s\n", cases[k].name, r.msg);
      t->skipped++;
    } else if (r.classes) {
      printf("FAIL %s: %s\n", cases[k].name, r.msg);
      if (o->verbose && cases[k].note) printf("  note: %s\n", cases[k].note);
      t->failed++;
      for (int cl = 0; cl < CL_COUNT; cl++) t->by_class[cl] += (r.classes >> cl) & 1u;
    } else {
      if (!o->failures_only) printf("PASS %s\n", cases[k].name);
      t->passed++;
    }
    if (o->verbose) fputs(r.info, stdout);
    fflush(stdout);
    chk_case_free(&cases[k]);
  }
  free(cases);
  if (prc) { printf("FAIL %s: malformed file: %s\n", path, err); t->failed++; t->by_class[6 /* harness */]++; }
  if (o->per_op)
    printf("== %s: %ld passed, %ld failed, %ld skipped\n", path, t->passed - p0, t->failed - f0, t->skipped - s0);
  free(text);
}

void chk_run_files(const chk_opts *o, char *const *files, int n, chk_totals *t) {
  disp_set_warning_handler(quiet_warning, (void *)&o->verbose);
  /* which kernels ran: the same cases are run at each capability and thread count */
  char dev[64];
  disp_device_format(o->device, dev, sizeof dev);
  printf("== CPU capability %s, %d thread(s), device %s\n", disp_cpu_capability(), disp_get_num_threads(), dev);
  for (int i = 0; i < n; i++) run_file(o, files[i], t);
  disp_set_warning_handler(NULL, NULL);
  if (t->failed) {
    printf("failures by class:");
    for (int cl = 0; cl < CL_COUNT; cl++)
      if (t->by_class[cl]) printf(" %s %ld", class_names[cl], t->by_class[cl]);
    printf("\n");
  }
}

int disp_tool_check_ops(int argc, char **argv) {
  chk_opts o = {0};
  const char *device = NULL;
  char **files = calloc((size_t)argc + 1, sizeof *files);
  int nfiles = 0;
  if (!files) return fprintf(stderr, "disp check-ops: out of memory\n"), 2;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { fputs(check_usage, stdout); free(files); return 0; }
    if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) o.verbose = 1;
    else if (!strcmp(argv[i], "--fill-defaults")) o.fill_defaults = 1;
    else if (!strcmp(argv[i], "--per-op")) o.per_op = 1;
    else if (!strcmp(argv[i], "--failures-only")) o.failures_only = 1;
    else if (!strcmp(argv[i], "--isolate")) o.isolate = 1;
    else if (!strcmp(argv[i], "--grad")) o.grad = 1;
    else if (!strcmp(argv[i], "--gradcheck")) o.gradcheck = 1;
    else if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
    else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "disp check-ops: unknown option '%s'\n\n%s", argv[i], check_usage);
      free(files);
      return 2;
    } else files[nfiles++] = argv[i];
  }
  int rc = 2;
  if (!nfiles) fputs(check_usage, stderr);
  else if (!device || !disp_tool_parse_device("check-ops", device, &o.device)) {
    o.meta = o.device.type == DISP_BACKEND_META;
    if (o.grad && o.meta) fprintf(stderr, "disp check-ops: --grad compares values: not with --device meta\n");
    else {
      chk_totals t = {0};
      chk_run_files(&o, files, nfiles, &t);
      printf("%ld passed, %ld failed", t.passed, t.failed);
      if (t.skipped) printf(", %ld skipped", t.skipped);
      printf("\n");
      rc = t.failed ? 1 : 0;
    }
  }
  free(files);
  return rc;
}
