/*
 * check_ops_parse.c - reading reference-vector files (format:
 * shared/conformance/ops/README.md) and building their tensors.
 *
 * Tokens are borrowed from the file text, which the parser cuts in place;
 * every array a case needs is its own allocation, freed by chk_case_free.
 * Nothing here trusts the file: a malformed line is an error with its line
 * number, never a crash.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_ops.h"

/* ---- float16 / bfloat16 ------------------------------------------------ */

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* float -> IEEE half, round to nearest even. */
static uint16_t f32_to_f16(float f) {
  uint32_t x = f32_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) /* inf or nan */
    return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
  if (ax < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
    /* the value in units of 2^-24, rounded to nearest even */
    float a = bits_f32(ax);
    float scaled = a * 16777216.0f; /* exact: power of two */
    float r = nearbyintf(scaled);   /* default rounding mode: nearest even */
    return (uint16_t)(sign | (uint16_t)r);
  }
  uint32_t mant_odd = (ax >> 13) & 1u;
  ax += 0xc8000fffu + mant_odd; /* rebias exponent (-112 << 23) and round */
  return (uint16_t)(sign | (ax >> 13));
}

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) { /* zero or subnormal: mant * 2^-24 */
    float v = (float)mant / 16777216.0f;
    return sign ? -v : v;
  }
  if (exp == 31) return bits_f32(sign | 0x7f800000u | (mant << 13));
  return bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

static uint16_t f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet nan */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

/* ---- elements ----------------------------------------------------------- */

static int parse_double(const char *tok, double *out) {
  char *end;
  errno = 0;
  double d = strtod(tok, &end);
  if (end == tok || *end) return 0;
  *out = d;
  return 1;
}

static int parse_int(const char *tok, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(tok, &end, 10);
  if (end == tok || *end || errno == ERANGE) return 0;
  *out = (int64_t)v;
  return 1;
}

int chk_store(void *p, disp_dtype dt, const char *tok) {
  double d = 0;
  int64_t i = 0;
  if (disp_dtype_is_floating(dt)) {
    if (!parse_double(tok, &d)) return 0;
  } else if (!parse_int(tok, &i)) {
    return 0;
  }
  switch (dt) {
    case DISP_DTYPE_FLOAT32: { float f = (float)d; memcpy(p, &f, 4); return 1; }
    case DISP_DTYPE_FLOAT64: memcpy(p, &d, 8); return 1;
    case DISP_DTYPE_FLOAT16: { uint16_t h = f32_to_f16((float)d); memcpy(p, &h, 2); return 1; }
    case DISP_DTYPE_BFLOAT16: { uint16_t h = f32_to_bf16((float)d); memcpy(p, &h, 2); return 1; }
    case DISP_DTYPE_INT64: memcpy(p, &i, 8); return 1;
    case DISP_DTYPE_INT32: { int32_t v = (int32_t)i; memcpy(p, &v, 4); return 1; }
    case DISP_DTYPE_INT16: { int16_t v = (int16_t)i; memcpy(p, &v, 2); return 1; }
    case DISP_DTYPE_INT8: { int8_t v = (int8_t)i; memcpy(p, &v, 1); return 1; }
    case DISP_DTYPE_UINT8: case DISP_DTYPE_QUINT8: { uint8_t v = (uint8_t)i; memcpy(p, &v, 1); return 1; }
    case DISP_DTYPE_BOOL: { uint8_t v = i != 0; memcpy(p, &v, 1); return 1; }
    default: return 0;
  }
}

double chk_load_double(const void *p, disp_dtype dt) {
  switch (dt) {
    case DISP_DTYPE_FLOAT32: { float f; memcpy(&f, p, 4); return f; }
    case DISP_DTYPE_FLOAT64: { double d; memcpy(&d, p, 8); return d; }
    case DISP_DTYPE_FLOAT16: { uint16_t h; memcpy(&h, p, 2); return f16_to_f32(h); }
    case DISP_DTYPE_BFLOAT16: { uint16_t h; memcpy(&h, p, 2); return bf16_to_f32(h); }
    default: return (double)chk_load_int(p, dt);
  }
}

int64_t chk_load_int(const void *p, disp_dtype dt) {
  switch (dt) {
    case DISP_DTYPE_INT64: { int64_t v; memcpy(&v, p, 8); return v; }
    case DISP_DTYPE_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case DISP_DTYPE_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case DISP_DTYPE_INT8: { int8_t v; memcpy(&v, p, 1); return v; }
    case DISP_DTYPE_UINT8: case DISP_DTYPE_QUINT8: { uint8_t v; memcpy(&v, p, 1); return v; }
    case DISP_DTYPE_BOOL: { uint8_t v; memcpy(&v, p, 1); return v != 0; }
    default: return (int64_t)chk_load_double(p, dt);
  }
}

/* ---- building ----------------------------------------------------------- */

static int host_device(disp_device dev) { return dev.type == DISP_BACKEND_CPU; }

/* A copy of host storage `st` on device `dev` (through its hooks). */
static disp_status to_device(disp_storage *st, disp_device dev, disp_storage **out) {
  size_t n = disp_storage_nbytes(st);
  disp_storage *d = NULL;
  disp_status s = disp_storage_new(n, dev, &d);
  if (s == DISP_OK && n) s = disp_device_copy(disp_storage_data(d), dev, disp_storage_data(st), disp_storage_device(st), n);
  if (s != DISP_OK) {
    disp_storage_release(d);
    return s;
  }
  *out = d;
  return DISP_OK;
}

disp_status chk_build_storage(const chk_tensor *t, disp_device dev, disp_storage **out) {
  size_t item = disp_dtype_itemsize(t->dtype);
  disp_storage *st = NULL;
  int meta = dev.type == DISP_BACKEND_META;
  disp_device where = meta ? dev : disp_device_make(DISP_BACKEND_CPU, -1);
  disp_status s = disp_storage_new(t->nvals * item, where, &st);
  if (s != DISP_OK) return s;
  char *data = disp_storage_data(st);
  if (!meta && data) {
    for (size_t k = 0; k < t->nvals; k++) {
      if (!chk_store(data + k * item, t->dtype, t->vals[k])) {
        disp_storage_release(st);
        return disp_set_error(DISP_ERR_INVALID_ARG, "bad %s value '%s'", disp_dtype_name(t->dtype),
                              t->vals[k]);
      }
    }
  }
  if (meta || host_device(dev)) {
    *out = st;
    return DISP_OK;
  }
  s = to_device(st, dev, out);
  disp_storage_release(st);
  return s;
}

disp_status chk_build_tensor(const chk_tensor *t, disp_device dev, disp_tensor **out) {
  disp_storage *st = NULL;
  disp_status s = chk_build_storage(t, dev, &st);
  if (s != DISP_OK) return s;
  s = disp_tensor_new_with_storage(st, t->offset, t->sizes, t->strides, t->ndim, t->dtype,
                                   disp_keyset_empty(), out);
  disp_storage_release(st);
  return s;
}

disp_status chk_host_mirror(const disp_tensor *t, disp_tensor **out) {
  disp_device dev = disp_tensor_device(t);
  disp_storage *st = disp_tensor_storage(t), *host = NULL;
  if (dev.type == DISP_BACKEND_CPU || dev.type == DISP_BACKEND_META || !st) {
    *out = disp_tensor_retain((disp_tensor *)t);
    return DISP_OK;
  }
  size_t n = disp_storage_nbytes(st);
  disp_status s = disp_storage_new(n, disp_device_make(DISP_BACKEND_CPU, -1), &host);
  if (s == DISP_OK && n) s = disp_device_copy(disp_storage_data(host), disp_storage_device(host), disp_storage_data(st), dev, n);
  if (s == DISP_OK)
    s = disp_tensor_new_with_storage(host, disp_tensor_storage_offset(t), disp_tensor_sizes(t), disp_tensor_strides(t),
                                     disp_tensor_ndim(t), disp_tensor_dtype(t), disp_keyset_empty(), out);
  disp_storage_release(host);
  return s;
}

/* ---- parsing ------------------------------------------------------------ */

typedef struct parser {
  char **lines;
  size_t nlines, pos;
  char *err;
  size_t errlen;
} parser;

static int perr(parser *p, size_t line, const char *fmt, ...) {
  int n = snprintf(p->err, p->errlen, "line %zu: ", line + 1);
  if (n < 0) n = 0;
  if ((size_t)n < p->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* Cuts a line into tokens at single spaces. New array (free()), NULL on OOM. */
static char **tokenize(char *line, size_t *n) {
  size_t cap = 1;
  for (const char *c = line; *c; c++) cap += *c == ' ';
  char **tok = malloc(cap * sizeof *tok);
  if (!tok) return NULL;
  size_t k = 0;
  for (char *c = line; *c;) {
    while (*c == ' ') c++;
    if (!*c) break;
    tok[k++] = c;
    while (*c && *c != ' ') c++;
    if (*c) *c++ = '\0';
  }
  *n = k;
  return tok;
}

/* A comma list of int64 ("-" is empty). New array in *out (NULL when empty). */
static int parse_int_list(const char *tok, int64_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (!strcmp(tok, "-")) return 1;
  size_t cap = 1;
  for (const char *c = tok; *c; c++) cap += *c == ',';
  int64_t *v = malloc(cap * sizeof *v);
  if (!v) return 0;
  size_t k = 0;
  const char *c = tok;
  for (;;) {
    char *end;
    errno = 0;
    long long x = strtoll(c, &end, 10);
    if (end == c || errno == ERANGE || (*end && *end != ',')) { free(v); return 0; }
    v[k++] = (int64_t)x;
    if (!*end) break;
    c = end + 1;
  }
  *out = v;
  *n = k;
  return 1;
}

static int parse_dims(const char *tok, int64_t *dims, int *ndim) {
  int64_t *v;
  size_t n;
  if (!parse_int_list(tok, &v, &n)) return 0;
  if (n > DISP_TENSOR_MAX_DIMS) { free(v); return 0; }
  if (n) memcpy(dims, v, n * sizeof *v);
  free(v);
  *ndim = (int)n;
  return 1;
}

static void value_free(chk_value *v) {
  free(v->ints);
  free(v->t.vals);
  for (size_t k = 0; k < v->nelems; k++) value_free(&v->elems[k]);
  free(v->elems);
  memset(v, 0, sizeof *v);
}

/* "tensor DTYPE SIZES STRIDES OFFSET V..." or "tensormeta ..." at tok[0]. */
static int parse_tensor(parser *p, size_t line, char **tok, size_t n, chk_value *v) {
  int meta = !strcmp(tok[0], "tensormeta");
  v->kind = meta ? CHK_TENSORMETA : CHK_TENSOR;
  if (n < 5) return perr(p, line, "tensor needs DTYPE SIZES STRIDES OFFSET");
  if (disp_dtype_parse(tok[1], &v->t.dtype) != DISP_OK) return perr(p, line, "bad dtype '%s'", tok[1]);
  int ns = 0;
  if (!parse_dims(tok[2], v->t.sizes, &v->t.ndim) || !parse_dims(tok[3], v->t.strides, &ns) ||
      ns != v->t.ndim)
    return perr(p, line, "bad sizes/strides '%s' '%s'", tok[2], tok[3]);
  /* Bounded so that the reach computed below cannot overflow. */
  const int64_t big = (int64_t)1 << 31;
  for (int d = 0; d < v->t.ndim; d++)
    if (v->t.sizes[d] < 0 || v->t.strides[d] < 0 || v->t.sizes[d] >= big || v->t.strides[d] >= big)
      return perr(p, line, "size or stride out of range");
  if (!parse_int(tok[4], &v->t.offset) || v->t.offset < 0 || v->t.offset >= big)
    return perr(p, line, "bad offset '%s'", tok[4]);
  if (meta && n != 5) return perr(p, line, "tensormeta has no values");
  v->t.nvals = n - 5;
  if (v->t.nvals) {
    v->t.vals = malloc(v->t.nvals * sizeof *v->t.vals);
    if (!v->t.vals) return perr(p, line, "out of memory");
    memcpy(v->t.vals, tok + 5, v->t.nvals * sizeof *v->t.vals);
  }
  /* Every element the geometry reaches must be listed (inputs and aliasing
   * returns list the whole storage; fresh returns at least what they reach). */
  if (!meta) {
    int64_t last = v->t.offset;
    int empty = 0;
    for (int d = 0; d < v->t.ndim; d++) {
      if (v->t.sizes[d] == 0) empty = 1;
      else last += (v->t.sizes[d] - 1) * v->t.strides[d];
    }
    if (!empty && (size_t)last >= v->t.nvals)
      return perr(p, line, "tensor reaches element %lld but lists %zu values", (long long)last,
                  v->t.nvals);
    int64_t scratch[1];
    for (size_t k = 0; k < v->t.nvals; k++)
      if (!chk_store(scratch, v->t.dtype, v->t.vals[k]))
        return perr(p, line, "bad %s value '%s'", disp_dtype_name(v->t.dtype), v->t.vals[k]);
  }
  return 0;
}

static int next_content_line(parser *p, size_t *line) {
  while (p->pos < p->nlines) {
    char *l = p->lines[p->pos];
    if (l[0] && l[0] != '#') { *line = p->pos++; return 1; }
    p->pos++;
  }
  return 0;
}

/* A value starting at tok[0]; `tensors K` consumes the K following lines. */
static int parse_value(parser *p, size_t line, char **tok, size_t n, chk_value *v);

static int parse_tensors(parser *p, size_t line, char **tok, size_t n, chk_value *v) {
  int64_t k;
  v->kind = CHK_TENSORS;
  if (n != 2 || !parse_int(tok[1], &k) || k < 0 || k > 100000) return perr(p, line, "bad 'tensors K'");
  if (k) {
    v->elems = calloc((size_t)k, sizeof *v->elems);
    if (!v->elems) return perr(p, line, "out of memory");
  }
  for (int64_t e = 0; e < k; e++) {
    size_t el;
    if (!next_content_line(p, &el)) return perr(p, line, "missing tensor-list element");
    size_t en;
    char **et = tokenize(p->lines[el], &en);
    if (!et) return perr(p, el, "out of memory");
    int rc = en && (!strcmp(et[0], "tensor") || !strcmp(et[0], "none"))
                 ? parse_value(p, el, et, en, &v->elems[e])
                 : perr(p, el, "expected a 'tensor' or 'none' element line");
    free(et);
    v->nelems = (size_t)e + 1;
    if (rc) return rc;
  }
  return 0;
}

static int parse_value(parser *p, size_t line, char **tok, size_t n, chk_value *v) {
  memset(v, 0, sizeof *v);
  if (n == 0) return perr(p, line, "missing value");
  const char *k = tok[0];
  if (!strcmp(k, "none")) { v->kind = CHK_NONE; return n == 1 ? 0 : perr(p, line, "junk after none"); }
  if (!strcmp(k, "tensor") || !strcmp(k, "tensormeta")) return parse_tensor(p, line, tok, n, v);
  if (!strcmp(k, "tensors")) return parse_tensors(p, line, tok, n, v);
  if (!strcmp(k, "storage")) {
    v->kind = CHK_STORAGE;
    if (n < 2 || disp_dtype_parse(tok[1], &v->t.dtype) != DISP_OK) return perr(p, line, "bad storage dtype");
    v->t.ndim = 1;
    v->t.sizes[0] = (int64_t)(n - 2);
    v->t.strides[0] = 1;
    v->t.nvals = n - 2;
    if (v->t.nvals) {
      v->t.vals = malloc(v->t.nvals * sizeof *v->t.vals);
      if (!v->t.vals) return perr(p, line, "out of memory");
      memcpy(v->t.vals, tok + 2, v->t.nvals * sizeof *v->t.vals);
    }
    int64_t scratch[1];
    for (size_t e = 0; e < v->t.nvals; e++)
      if (!chk_store(scratch, v->t.dtype, v->t.vals[e])) return perr(p, line, "bad storage value");
    return 0;
  }
  if (n != 2 && !(!strcmp(k, "scalar") && n == 3)) return perr(p, line, "bad '%s' value", k);
  if (!strcmp(k, "int")) { v->kind = CHK_INT; return parse_int(tok[1], &v->i) ? 0 : perr(p, line, "bad int"); }
  if (!strcmp(k, "float")) { v->kind = CHK_FLOAT; return parse_double(tok[1], &v->d) ? 0 : perr(p, line, "bad float"); }
  if (!strcmp(k, "bool")) {
    v->kind = CHK_BOOL;
    if (strcmp(tok[1], "0") && strcmp(tok[1], "1")) return perr(p, line, "bad bool");
    v->i = tok[1][0] == '1';
    return 0;
  }
  if (!strcmp(k, "ints") || !strcmp(k, "bools")) {
    v->kind = k[0] == 'i' ? CHK_INTS : CHK_BOOLS;
    if (!parse_int_list(tok[1], &v->ints, &v->nints)) return perr(p, line, "bad list '%s'", tok[1]);
    return 0;
  }
  if (!strcmp(k, "scalar")) {
    if (n != 3) return perr(p, line, "scalar needs a kind and a value");
    if (!strcmp(tok[1], "int")) { v->kind = CHK_SCALAR_INT; return parse_int(tok[2], &v->i) ? 0 : perr(p, line, "bad scalar int"); }
    if (!strcmp(tok[1], "float")) { v->kind = CHK_SCALAR_FLOAT; return parse_double(tok[2], &v->d) ? 0 : perr(p, line, "bad scalar float"); }
    if (!strcmp(tok[1], "bool")) {
      v->kind = CHK_SCALAR_BOOL;
      if (strcmp(tok[2], "0") && strcmp(tok[2], "1")) return perr(p, line, "bad scalar bool");
      v->i = tok[2][0] == '1';
      return 0;
    }
    return perr(p, line, "bad scalar kind '%s'", tok[1]);
  }
  if (!strcmp(k, "dtype")) {
    disp_dtype dt;
    v->kind = CHK_DTYPE;
    if (disp_dtype_parse(tok[1], &dt) != DISP_OK) return perr(p, line, "bad dtype '%s'", tok[1]);
    v->i = dt;
    return 0;
  }
  if (!strcmp(k, "layout")) {
    v->kind = CHK_LAYOUT;
    if (strcmp(tok[1], "strided")) return perr(p, line, "bad layout '%s'", tok[1]);
    v->i = DISP_LAYOUT_STRIDED;
    return 0;
  }
  if (!strcmp(k, "device")) {
    disp_device dev;
    v->kind = CHK_DEVICE;
    if (disp_device_parse(tok[1], &dev) != DISP_OK) return perr(p, line, "bad device '%s'", tok[1]);
    v->i = dev.type;
    v->d = dev.index;
    return 0;
  }
  if (!strcmp(k, "str")) {
    v->kind = CHK_STR;
    v->s = tok[1];
    return 0;
  }
  if (!strcmp(k, "memory_format")) {
    static const char *const names[] = {"contiguous_format", "preserve_format", "channels_last",
                                        "channels_last_3d"};
    v->kind = CHK_MEMORY_FORMAT;
    for (int m = 0; m < 4; m++)
      if (!strcmp(tok[1], names[m])) { v->i = m; return 0; }
    return perr(p, line, "bad memory_format '%s'", tok[1]);
  }
  return perr(p, line, "unknown value kind '%s'", k);
}

void chk_case_free(chk_case *c) {
  free(c->note);
  for (size_t k = 0; k < c->nargs; k++) value_free(&c->args[k].v);
  free(c->args);
  for (size_t k = 0; k < c->nouts; k++) value_free(&c->outs[k]);
  free(c->outs);
  free(c->aliases);
  for (size_t k = 0; k < c->nmuts; k++) value_free(&c->muts[k].v);
  free(c->muts);
  free(c->requires_grad);
  for (size_t k = 0; k < c->ngrad_outputs; k++) value_free(&c->grad_outputs[k].v);
  free(c->grad_outputs);
  for (size_t k = 0; k < c->ngrads; k++) value_free(&c->grads[k].v);
  free(c->grads);
  memset(c, 0, sizeof *c);
}

/* Grows *arr (of *n elements of size sz) by one zeroed element. */
static void *grow(void *arr, size_t *n, size_t sz) {
  char *a = realloc(arr, (*n + 1) * sz);
  if (!a) return NULL;
  memset(a + *n * sz, 0, sz);
  (*n)++;
  return a;
}

#define GROW(arr, n) ((tmp = grow((arr), &(n), sizeof *(arr))) ? ((arr) = tmp, 1) : 0)

/* `requires_grad L...`, `grad_output I TENSOR` or `grad L TENSOR`. */
static int parse_grad_line(parser *p, size_t line, char **tok, size_t n, chk_case *c) {
  void *tmp;
  if (!strcmp(tok[0], "requires_grad")) {
    for (size_t t = 1; t < n; t++) {
      if (!GROW(c->requires_grad, c->nrequires_grad)) return perr(p, line, "out of memory");
      c->requires_grad[c->nrequires_grad - 1] = tok[t];
    }
    return n > 1 ? 0 : perr(p, line, "requires_grad names no input");
  }
  if (n < 3) return perr(p, line, "%s needs a label and a tensor", tok[0]);
  int out = !strcmp(tok[0], "grad_output");
  chk_grad *g;
  if (out ? !GROW(c->grad_outputs, c->ngrad_outputs) : !GROW(c->grads, c->ngrads))
    return perr(p, line, "out of memory");
  g = out ? &c->grad_outputs[c->ngrad_outputs - 1] : &c->grads[c->ngrads - 1];
  int64_t idx = 0;
  if (out && (!parse_int(tok[1], &idx) || idx < 0 || idx > 64)) return perr(p, line, "bad return index");
  g->ret = (int)idx;
  g->label = out ? NULL : tok[1];
  int rc = parse_value(p, line, tok + 2, n - 2, &g->v);
  if (!rc && g->v.kind != CHK_TENSOR) rc = perr(p, line, "%s needs a tensor", tok[0]);
  return rc;
}

/* One block, from after its `case` line to its `end`. */
static int parse_block(parser *p, chk_case *c) {
  size_t line;
  void *tmp;
  while (next_content_line(p, &line)) {
    size_t n;
    char **tok = tokenize(p->lines[line], &n);
    if (!tok) return perr(p, line, "out of memory");
    int rc = 0;
    const char *k = n ? tok[0] : "";
    if (!strcmp(k, "end")) { free(tok); return 0; }
    if (!strcmp(k, "op") && n == 2) {
      c->op = tok[1];
    } else if (!strcmp(k, "note")) {
      /* the rest of the line, spaces restored from the tokens */
      size_t len = 0;
      for (size_t t = 1; t < n; t++) len += strlen(tok[t]) + 1;
      size_t old = c->note ? strlen(c->note) : 0;
      char *s = realloc(c->note, old + len + 3);
      if (!s) rc = perr(p, line, "out of memory");
      else {
        c->note = s;
        s[old] = '\0';
        if (old) strcat(s, "; ");
        for (size_t t = 1; t < n; t++) { strcat(s, tok[t]); if (t + 1 < n) strcat(s, " "); }
      }
    } else if (!strcmp(k, "arg") && n >= 3) {
      if (!GROW(c->args, c->nargs)) rc = perr(p, line, "out of memory");
      else {
        c->args[c->nargs - 1].name = tok[1];
        rc = parse_value(p, line, tok + 2, n - 2, &c->args[c->nargs - 1].v);
      }
    } else if (!strcmp(k, "defaulted")) {
      for (size_t t = 1; t < n && !rc; t++) {
        size_t a = 0;
        while (a < c->nargs && strcmp(c->args[a].name, tok[t])) a++;
        if (a == c->nargs) rc = perr(p, line, "defaulted '%s' is not an argument", tok[t]);
        else c->args[a].defaulted = 1;
      }
    } else if (!strcmp(k, "error")) {
      /* keep the text: the first token's start up to the end of the line */
      for (size_t t = 1; t + 1 < n; t++) tok[t][strlen(tok[t])] = ' ';
      c->error = n > 1 ? tok[1] : "";
    } else if (!strcmp(k, "out") && n >= 3) {
      int64_t idx;
      if (!parse_int(tok[1], &idx) || idx < 0 || idx > 64) rc = perr(p, line, "bad return index");
      else {
        while (!rc && c->nouts <= (size_t)idx)
          if (!GROW(c->outs, c->nouts)) rc = perr(p, line, "out of memory");
        if (!rc) {
          value_free(&c->outs[idx]);
          rc = parse_value(p, line, tok + 2, n - 2, &c->outs[idx]);
        }
      }
    } else if (!strcmp(k, "aliases") && n == 3) {
      int64_t idx;
      if (!parse_int(tok[1], &idx) || idx < 0 || idx > 64) rc = perr(p, line, "bad return index");
      else if (!GROW(c->aliases, c->naliases)) rc = perr(p, line, "out of memory");
      else {
        c->aliases[c->naliases - 1].ret = (int)idx;
        c->aliases[c->naliases - 1].label = tok[2];
      }
    } else if (!strcmp(k, "mutated") && n >= 3) {
      if (!GROW(c->muts, c->nmuts)) rc = perr(p, line, "out of memory");
      else {
        c->muts[c->nmuts - 1].label = tok[1];
        rc = parse_value(p, line, tok + 2, n - 2, &c->muts[c->nmuts - 1].v);
        if (!rc && c->muts[c->nmuts - 1].v.kind != CHK_TENSOR &&
            c->muts[c->nmuts - 1].v.kind != CHK_TENSORMETA)
          rc = perr(p, line, "mutated needs a tensor");
      }
    } else if (!strcmp(k, "requires_grad") || !strcmp(k, "grad_output") || !strcmp(k, "grad")) {
      rc = parse_grad_line(p, line, tok, n, c);
    } else {
      rc = perr(p, line, "unexpected line '%s'", k);
    }
    free(tok);
    if (rc) return rc;
  }
  return perr(p, p->nlines ? p->nlines - 1 : 0, "case %s has no 'end'", c->name);
}

int chk_parse_file(char *text, chk_case **cases, size_t *ncases, char *err, size_t errlen) {
  parser p = {0};
  p.err = err;
  p.errlen = errlen;
  *cases = NULL;
  *ncases = 0;
  size_t cap = 1;
  for (const char *c = text; *c; c++) cap += *c == '\n';
  p.lines = malloc(cap * sizeof *p.lines);
  if (!p.lines) { snprintf(err, errlen, "out of memory"); return -1; }
  for (char *l = text; l;) {
    char *nl = strchr(l, '\n');
    if (nl) *nl = '\0';
    size_t len = strlen(l);
    if (len && l[len - 1] == '\r') l[len - 1] = '\0';
    p.lines[p.nlines++] = l;
    l = nl ? nl + 1 : NULL;
  }
  int rc = 0;
  size_t line;
  void *tmp;
  while (!rc && next_content_line(&p, &line)) {
    char *l = p.lines[line];
    if (strncmp(l, "case ", 5) || !l[5] || strchr(l + 5, ' ')) {
      rc = perr(&p, line, "expected 'case <op>#<n>'");
      break;
    }
    if (!GROW(*cases, *ncases)) { rc = perr(&p, line, "out of memory"); break; }
    chk_case *c = &(*cases)[*ncases - 1];
    c->name = l + 5;
    c->lineno = (int)line + 1;
    rc = parse_block(&p, c);
    if (!rc && !c->op) rc = perr(&p, line, "case %s has no 'op' line", c->name);
    if (rc) { chk_case_free(c); (*ncases)--; }
  }
  free(p.lines);
  return rc;
}
