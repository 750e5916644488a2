/*
 * strbuf_internal.h - a growable string, for messages and dumps.
 *
 * On allocation failure the buffer stops growing and remembers it (`oom`);
 * the text is then truncated, never corrupted. Callers that must report OOM
 * check `oom` once at the end.
 */
#ifndef DISP_STRBUF_INTERNAL_H
#define DISP_STRBUF_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include "disp/export.h"

typedef struct disp_strbuf {
  char *data;
  size_t len;
  size_t cap;
  int oom;
} disp_strbuf;

void disp__strbuf_init(disp_strbuf *b);
void disp__strbuf_free(disp_strbuf *b);
void disp__strbuf_append(disp_strbuf *b, const char *s);
void disp__strbuf_append_n(disp_strbuf *b, const char *s, size_t n);
void disp__strbuf_appendc(disp_strbuf *b, char c);
void disp__strbuf_appendf(disp_strbuf *b, const char *fmt, ...) DISP_PRINTF(2, 3);
void disp__strbuf_vappendf(disp_strbuf *b, const char *fmt, va_list ap);
/* Always a valid C string ("" when empty). Borrowed from the buffer. */
const char *disp__strbuf_cstr(disp_strbuf *b);
/* Hand the heap string to the caller (who frees it); NULL on OOM. Resets b. */
char *disp__strbuf_steal(disp_strbuf *b);

#endif
