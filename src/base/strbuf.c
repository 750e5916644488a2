/*
 * strbuf.c - growable strings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "strbuf_internal.h"

void disp__strbuf_init(disp_strbuf *b) { memset(b, 0, sizeof *b); }

void disp__strbuf_free(disp_strbuf *b) {
  disp__free(b->data);
  disp__strbuf_init(b);
}

static int reserve(disp_strbuf *b, size_t extra) {
  if (b->oom) return 0;
  if (b->len + extra + 1 <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + extra + 1) cap *= 2;
  char *p = disp__realloc(b->data, cap);
  if (!p) {
    b->oom = 1;
    return 0;
  }
  b->data = p;
  b->cap = cap;
  return 1;
}

void disp__strbuf_append_n(disp_strbuf *b, const char *s, size_t n) {
  if (!reserve(b, n)) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void disp__strbuf_append(disp_strbuf *b, const char *s) {
  disp__strbuf_append_n(b, s, strlen(s));
}

void disp__strbuf_appendc(disp_strbuf *b, char c) { disp__strbuf_append_n(b, &c, 1); }

void disp__strbuf_vappendf(disp_strbuf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0 || !reserve(b, (size_t)n)) return;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}

void disp__strbuf_appendf(disp_strbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  disp__strbuf_vappendf(b, fmt, ap);
  va_end(ap);
}

const char *disp__strbuf_cstr(disp_strbuf *b) { return b->data ? b->data : ""; }

char *disp__strbuf_steal(disp_strbuf *b) {
  char *s;
  if (b->oom) {
    disp__free(b->data);
    s = NULL;
  } else if (!b->data) {
    s = disp__calloc(1, 1);
  } else {
    s = b->data;
  }
  disp__strbuf_init(b);
  return s;
}
