/*
 * print.c - disp_tensor_format / disp_tensor_print: PyTorch's tensor repr
 * (torch/_tensor_str.py with the default print options: precision 4,
 * linewidth 80, threshold 1000, edgeitems 3).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "disp/tensor_util.h"
#include "argcheck_internal.h"
#include "device_internal.h"
#include "dtype_cast.h"
#include "strbuf_internal.h"
#include "tensor_internal.h"

enum { PRECISION = 4, LINEWIDTH = 80, THRESHOLD = 1000, EDGEITEMS = 3 };

typedef struct formatter {
  int floating, is_bool;
  int int_mode, sci_mode;
  int width;
} formatter;

typedef struct printer {
  const disp_tensor *t;
  const char *data;
  size_t itemsize;
  int summarize;
  formatter fmt;
  disp_strbuf *b;
  /* stats for the formatter */
  int have_nonzero;
  double min_abs, max_abs;
} printer;

static double elem_double(const printer *p, int64_t off) {
  return disp__load_double(p->data + off * (int64_t)p->itemsize, p->t->dtype);
}

static int64_t elem_int(const printer *p, int64_t off) {
  return disp__load_int64(p->data + off * (int64_t)p->itemsize, p->t->dtype);
}

/* The text of one value without padding (Python's formatting). */
static void format_value(const printer *p, int64_t off, char *buf, size_t n) {
  const formatter *f = &p->fmt;
  if (f->is_bool) {
    snprintf(buf, n, "%s", elem_int(p, off) ? "True" : "False");
    return;
  }
  if (!f->floating) {
    snprintf(buf, n, "%lld", (long long)elem_int(p, off));
    return;
  }
  double v = elem_double(p, off);
  if (isnan(v)) {
    snprintf(buf, n, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, n, "%s", v < 0 ? "-inf" : "inf");
    return;
  }
  if (f->sci_mode)
    snprintf(buf, n, "%.*e", PRECISION, v);
  else if (f->int_mode)
    snprintf(buf, n, "%.0f.", v);
  else
    snprintf(buf, n, "%.*f", PRECISION, v);
}

/* Calls fn on the storage offset of every element the repr shows. */
static void walk(printer *p, int dim, int64_t off, void (*fn)(printer *, int64_t)) {
  const disp_tensor *t = p->t;
  if (dim == t->ndim) {
    fn(p, off);
    return;
  }
  int64_t n = t->sizes[dim], s = t->strides[dim];
  for (int64_t i = 0; i < n; i++) {
    if (p->summarize && n > 2 * EDGEITEMS && i == EDGEITEMS) i = n - EDGEITEMS;
    walk(p, dim + 1, off + i * s, fn);
  }
}

static void stat_elem(printer *p, int64_t off) {
  if (p->fmt.floating) {
    double v = elem_double(p, off);
    if (!isfinite(v) || v == 0) return;
    double a = fabs(v);
    if (!p->have_nonzero || a < p->min_abs) p->min_abs = a;
    if (!p->have_nonzero || a > p->max_abs) p->max_abs = a;
    p->have_nonzero = 1;
    if (v != ceil(v)) p->fmt.int_mode = 0;
    return;
  }
  char buf[64];
  format_value(p, off, buf, sizeof buf);
  int len = (int)strlen(buf);
  if (len > p->fmt.width) p->fmt.width = len;
}

static void width_elem(printer *p, int64_t off) {
  double v = elem_double(p, off);
  if (!isfinite(v) || v == 0) return; /* PyTorch sizes the columns from nonzero finite values */
  char buf[64];
  format_value(p, off, buf, sizeof buf);
  int len = (int)strlen(buf);
  if (len > p->fmt.width) p->fmt.width = len;
}

static void make_formatter(printer *p) {
  formatter *f = &p->fmt;
  f->is_bool = p->t->dtype == DISP_DTYPE_BOOL;
  f->floating = disp_dtype_is_floating(p->t->dtype);
  f->int_mode = 1;
  f->sci_mode = 0;
  f->width = 1;
  walk(p, 0, p->t->storage_offset, stat_elem);
  if (!f->floating || !p->have_nonzero) return;
  double ratio = p->max_abs / p->min_abs;
  if (f->int_mode)
    f->sci_mode = ratio > 1000.0 || p->max_abs > 1e8;
  else
    f->sci_mode = ratio > 1000.0 || p->max_abs > 1e8 || p->min_abs < 1e-4;
  walk(p, 0, p->t->storage_offset, width_elem);
}

static void append_padded(printer *p, int64_t off) {
  char buf[64];
  format_value(p, off, buf, sizeof buf);
  for (int k = (int)strlen(buf); k < p->fmt.width; k++) disp__strbuf_appendc(p->b, ' ');
  disp__strbuf_append(p->b, buf);
}

static void newline_indent(printer *p, int newlines, int indent) {
  disp__strbuf_appendc(p->b, ',');
  for (int i = 0; i < newlines; i++) disp__strbuf_appendc(p->b, '\n');
  for (int i = 0; i < indent; i++) disp__strbuf_appendc(p->b, ' ');
}

static void vector_str(printer *p, int dim, int64_t off, int indent) {
  int64_t n = p->t->sizes[dim], s = p->t->strides[dim];
  int per_line = (LINEWIDTH - indent) / (p->fmt.width + 2);
  if (per_line < 1) per_line = 1;
  disp__strbuf_appendc(p->b, '[');
  int on_line = 0;
  for (int64_t i = 0; i < n; i++) {
    int dots = p->summarize && n > 2 * EDGEITEMS && i == EDGEITEMS;
    if (on_line == per_line) {
      newline_indent(p, 1, indent + 1);
      on_line = 0;
    } else if (i > 0) {
      disp__strbuf_append(p->b, ", ");
    }
    if (dots) {
      disp__strbuf_append(p->b, " ...");
      i = n - EDGEITEMS - 1;
    } else {
      append_padded(p, off + i * s);
    }
    on_line++;
  }
  disp__strbuf_appendc(p->b, ']');
}

static void tensor_str(printer *p, int dim, int64_t off, int indent) {
  int rest = p->t->ndim - dim;
  if (rest == 0) {
    append_padded(p, off);
    return;
  }
  if (rest == 1) {
    vector_str(p, dim, off, indent);
    return;
  }
  int64_t n = p->t->sizes[dim], s = p->t->strides[dim];
  disp__strbuf_appendc(p->b, '[');
  for (int64_t i = 0; i < n; i++) {
    if (i > 0) newline_indent(p, rest - 1, indent + 1);
    if (p->summarize && n > 2 * EDGEITEMS && i == EDGEITEMS) {
      disp__strbuf_append(p->b, "...");
      i = n - EDGEITEMS - 1;
      continue;
    }
    tensor_str(p, dim + 1, off + i * s, indent + 1);
  }
  disp__strbuf_appendc(p->b, ']');
}

static void append_shape(disp_strbuf *b, const disp_tensor *t) {
  disp__strbuf_append(b, "size=(");
  for (int d = 0; d < t->ndim; d++) disp__strbuf_appendf(b, "%s%lld", d ? ", " : "", (long long)t->sizes[d]);
  if (t->ndim == 1) disp__strbuf_appendc(b, ',');
  disp__strbuf_appendc(b, ')');
}

/* PyTorch's _add_suffixes: each suffix goes on the line unless it would
 * pass the line width. */
static void add_suffix(disp_strbuf *b, const char *suffix) {
  const char *s = disp__strbuf_cstr(b);
  const char *nl = strrchr(s, '\n');
  size_t last = nl ? strlen(nl + 1) + 2 : strlen(s) + 2; /* Python's len - rfind + 1 */
  if (last + strlen(suffix) + 2 > LINEWIDTH) {
    disp__strbuf_append(b, ",\n       ");
  } else {
    disp__strbuf_append(b, ", ");
  }
  disp__strbuf_append(b, suffix);
}

/* The values of t (which has some), read on the host: a tensor on another
 * device is copied through its device's hooks first. */
static disp_status format_values(const disp_tensor *t, disp_strbuf *b) {
  disp_tensor *h;
  disp_status st = disp__tensor_host_view("disp_tensor_format", t, &h);
  if (st != DISP_OK) return st;
  printer p;
  memset(&p, 0, sizeof p);
  p.t = h;
  p.data = (const char *)disp_storage_data(h->storage);
  p.itemsize = disp_dtype_itemsize(h->dtype);
  p.summarize = h->numel > THRESHOLD;
  p.b = b;
  make_formatter(&p);
  tensor_str(&p, 0, h->storage_offset, 7);
  disp_tensor_release(h);
  return DISP_OK;
}

disp_status disp_tensor_format(const disp_tensor *t, char **out) {
  DISP_REFUSE_NULL(t);
  DISP_REFUSE_NULL(out);
  if (!t->has_strides) return disp__fail(DISP_ERR_INVALID_ARG, "tensor_format: opaque tensors cannot be printed");
  disp_strbuf b, suffix;
  disp__strbuf_init(&b);
  disp__strbuf_init(&suffix);
  disp__strbuf_append(&b, "tensor(");
  const char *data = disp_tensor_data_ptr(t);
  char sufs[3][96];
  int nsuf = 0;
  if (t->device.type != DISP_BACKEND_CPU) {
    char dev[64];
    disp_device_format(t->device, dev, sizeof dev);
    snprintf(sufs[nsuf++], sizeof sufs[0], "device='%s'", dev);
  }
  int default_dtype = t->dtype == DISP_DTYPE_FLOAT32 || t->dtype == DISP_DTYPE_INT64 || t->dtype == DISP_DTYPE_BOOL;
  if (t->device.type == DISP_BACKEND_META || (!data && t->numel > 0)) {
    disp__strbuf_append(&b, "...");
    append_shape(&suffix, t);
    snprintf(sufs[nsuf++], sizeof sufs[0], "%s", disp__strbuf_cstr(&suffix));
    if (t->dtype != DISP_DTYPE_FLOAT32) snprintf(sufs[nsuf++], sizeof sufs[0], "dtype=torch.%s", disp_dtype_name(t->dtype));
  } else if (t->numel == 0) {
    disp__strbuf_append(&b, "[]");
    if (t->ndim != 1) {
      append_shape(&suffix, t);
      snprintf(sufs[nsuf++], sizeof sufs[0], "%s", disp__strbuf_cstr(&suffix));
    }
    if (t->dtype != DISP_DTYPE_FLOAT32) snprintf(sufs[nsuf++], sizeof sufs[0], "dtype=torch.%s", disp_dtype_name(t->dtype));
  } else {
    if (!default_dtype) snprintf(sufs[nsuf++], sizeof sufs[0], "dtype=torch.%s", disp_dtype_name(t->dtype));
    disp_status st = format_values(t, &b);
    if (st != DISP_OK) {
      disp__strbuf_free(&b);
      disp__strbuf_free(&suffix);
      return st;
    }
  }
  for (int i = 0; i < nsuf; i++) add_suffix(&b, sufs[i]);
  disp__strbuf_appendc(&b, ')');
  disp__strbuf_free(&suffix);
  char *s = disp__strbuf_steal(&b); /* malloc'd: the caller frees it */
  if (!s) return disp__fail(DISP_ERR_NO_MEMORY, "tensor_format: out of memory");
  *out = s;
  return DISP_OK;
}

disp_status disp_tensor_print(FILE *f, const disp_tensor *t) {
  DISP_REFUSE_NULL(f);
  DISP_REFUSE_NULL(t);
  char *s;
  disp_status st = disp_tensor_format(t, &s);
  if (st != DISP_OK) return st;
  fprintf(f, "%s\n", s);
  disp__free(s);
  return DISP_OK;
}
