/*
 * schema_lexer.c - tokens of the schema language, the constant literals
 * built from them (default values), and error messages that point at them.
 *
 * The token set is the subset of TorchScript's lexer that schemas use.
 * Differences from PyTorch, all on the lenient side: newlines are plain
 * whitespace (a schema is one declaration), only None/True/False are
 * keywords (so `from` and `to` stay argument names, as aten needs), and
 * `$N` is an identifier for alias sets, so that `Tensor!` (printed with a
 * generated set `$0`) can be read back.
 *
 * Default values are here rather than in the grammar (schema_parse.c)
 * because they are a self-contained constant sub-language: None, True,
 * False, strings, numbers, a few named constants and flat lists of them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "error_internal.h"
#include "schema_internal.h"

static int is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

static char cur_char(const disp_lexer *lx, size_t off) {
  return lx->pos + off < lx->len ? lx->src[lx->pos + off] : '\0';
}

/* Move one byte forward, keeping line and column. */
static void bump(disp_lexer *lx) {
  if (lx->pos >= lx->len) return;
  if (lx->src[lx->pos] == '\n') {
    lx->line++;
    lx->col = 1;
  } else {
    lx->col++;
  }
  lx->pos++;
}

static void skip_space(disp_lexer *lx) {
  for (;;) {
    char c = cur_char(lx, 0);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      bump(lx);
    } else if (c == '#') {
      /* A comment runs to the end of the line, as in TorchScript. */
      while (lx->pos < lx->len && lx->src[lx->pos] != '\n') bump(lx);
    } else {
      return;
    }
  }
}

/* Digits, an optional fraction and an optional exponent; or `.5`. The
 * exponent is only taken when digits follow, so `1e` is `1` then `e`. */
static void lex_number(disp_lexer *lx) {
  while (is_digit(cur_char(lx, 0))) bump(lx);
  if (cur_char(lx, 0) == '.' && !(cur_char(lx, 1) == '.' && cur_char(lx, 2) == '.')) {
    bump(lx);
    while (is_digit(cur_char(lx, 0))) bump(lx);
  }
  char e = cur_char(lx, 0);
  if (e == 'e' || e == 'E') {
    size_t k = 1;
    if (cur_char(lx, 1) == '+' || cur_char(lx, 1) == '-') k = 2;
    if (is_digit(cur_char(lx, k))) {
      while (k--) bump(lx);
      while (is_digit(cur_char(lx, 0))) bump(lx);
    }
  }
}

/* A quoted string; a backslash skips the next byte (escapes are decoded by
 * the parser). A raw newline or the end of input leaves it unterminated. */
static void lex_string(disp_lexer *lx, disp_token *t) {
  char quote = cur_char(lx, 0);
  bump(lx);
  for (;;) {
    if (lx->pos >= lx->len || lx->src[lx->pos] == '\n') {
      t->kind = DISP_TOK_ERROR;
      t->unterminated = 1;
      t->open_line = t->line;
      t->open_col = t->col;
      /* Point at where the closing quote was expected. */
      t->line = lx->line;
      t->col = lx->col;
      return;
    }
    char c = lx->src[lx->pos];
    if (c == '\\' && lx->pos + 1 < lx->len) {
      bump(lx);
      bump(lx);
      continue;
    }
    bump(lx);
    if (c == quote) {
      t->kind = DISP_TOK_STRING;
      return;
    }
  }
}

static void lex_one(disp_lexer *lx, disp_token *t) {
  skip_space(lx);
  memset(t, 0, sizeof *t);
  t->start = lx->pos;
  t->line = lx->line;
  t->col = lx->col;
  char c = cur_char(lx, 0);
  if (lx->pos >= lx->len) {
    t->kind = DISP_TOK_EOF;
  } else if (is_ident_start(c)) {
    while (is_ident_char(cur_char(lx, 0))) bump(lx);
    size_t n = lx->pos - t->start;
    const char *s = lx->src + t->start;
    if (n == 4 && memcmp(s, "None", 4) == 0) t->kind = DISP_TOK_NONE;
    else if (n == 4 && memcmp(s, "True", 4) == 0) t->kind = DISP_TOK_TRUE;
    else if (n == 5 && memcmp(s, "False", 5) == 0) t->kind = DISP_TOK_FALSE;
    else t->kind = DISP_TOK_IDENT;
  } else if (c == '$' && is_digit(cur_char(lx, 1))) {
    bump(lx);
    while (is_digit(cur_char(lx, 0))) bump(lx);
    t->kind = DISP_TOK_ALIAS_ID;
  } else if (is_digit(c) || (c == '.' && is_digit(cur_char(lx, 1)))) {
    lex_number(lx);
    t->kind = DISP_TOK_NUMBER;
  } else if (c == '"' || c == '\'') {
    lex_string(lx, t);
  } else if (c == '-' && cur_char(lx, 1) == '>') {
    bump(lx);
    bump(lx);
    t->kind = DISP_TOK_ARROW;
  } else if (c == '.' && cur_char(lx, 1) == '.' && cur_char(lx, 2) == '.') {
    bump(lx);
    bump(lx);
    bump(lx);
    t->kind = DISP_TOK_DOTS;
  } else if (strchr("()[],.:*!?|=-", c) != NULL) {
    bump(lx);
    t->kind = DISP_TOK_PUNCT;
    t->punct = c;
  } else {
    bump(lx);
    t->kind = DISP_TOK_ERROR;
  }
  t->len = lx->pos - t->start;
}

void disp__schema_lex_init(disp_lexer *lx, const char *src) {
  memset(lx, 0, sizeof *lx);
  lx->src = src;
  lx->len = strlen(src);
  lx->line = 1;
  lx->col = 1;
  lex_one(lx, &lx->ahead[0]);
  lex_one(lx, &lx->ahead[1]);
}

const disp_token *disp__schema_lex_peek(const disp_lexer *lx, int k) {
  DISP_ASSERT(k == 0 || k == 1);
  return &lx->ahead[k];
}

void disp__schema_lex_advance(disp_lexer *lx) {
  lx->ahead[0] = lx->ahead[1];
  lex_one(lx, &lx->ahead[1]);
}

/* ---- messages ----------------------------------------------------------- */

/* Longest token text quoted in a message before it is shortened. */
#define MAX_QUOTED 40

/* Bytes as text, control bytes as \xNN (tabs kept when keep_tabs, for the
 * quoted source line, so that the caret line can line up with them). */
static void append_visible(disp_strbuf *b, const char *s, size_t n, int keep_tabs) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c >= 0x20 && c < 0x7f) || (keep_tabs && c == '\t')) {
      disp__strbuf_appendc(b, (char)c);
    } else {
      disp__strbuf_appendf(b, "\\x%02x", c);
    }
  }
}

void disp__schema_describe_token(disp_strbuf *b, const disp_lexer *lx,
                                 const disp_token *t) {
  if (t->kind == DISP_TOK_EOF) {
    disp__strbuf_append(b, "end of input");
    return;
  }
  size_t n = t->len;
  int cut = 0;
  if (n > MAX_QUOTED) {
    n = MAX_QUOTED;
    cut = 1;
  }
  disp__strbuf_appendc(b, '\'');
  append_visible(b, lx->src + t->start, n, 0);
  if (cut) disp__strbuf_append(b, "...");
  disp__strbuf_appendc(b, '\'');
}

disp_status disp__schema_fail_at(const disp_lexer *lx, int line, int col,
                                 const char *fmt, ...) {
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__strbuf_appendf(&b, "%d:%d: error: ", line, col);
  va_list ap;
  va_start(ap, fmt);
  disp__strbuf_vappendf(&b, fmt, ap);
  va_end(ap);

  /* Find the offending line to quote it with a caret under the column. */
  size_t start = 0;
  for (int l = 1; l < line && start < lx->len; start++) {
    if (lx->src[start] == '\n') l++;
  }
  size_t end = start;
  while (end < lx->len && lx->src[end] != '\n') end++;
  disp__strbuf_appendc(&b, '\n');
  append_visible(&b, lx->src + start, end - start, 1);
  disp__strbuf_appendc(&b, '\n');
  /* Keep tabs so the caret lines up; a shown \xNN escape is 4 wide. */
  for (size_t i = start; i < end && i < start + (size_t)(col - 1); i++) {
    unsigned char c = (unsigned char)lx->src[i];
    if (c == '\t') disp__strbuf_appendc(&b, '\t');
    else if (c >= 0x20 && c < 0x7f) disp__strbuf_appendc(&b, ' ');
    else disp__strbuf_append(&b, "    ");
  }
  disp__strbuf_appendc(&b, '^');

  disp_status st = b.oom ? disp__fail(DISP_ERR_NO_MEMORY, "out of memory reporting a schema error")
                         : disp__fail(DISP_ERR_SCHEMA, "%s", disp__strbuf_cstr(&b));
  disp__strbuf_free(&b);
  return st;
}

disp_status disp__schema_fail_expected(const disp_lexer *lx, const disp_token *t,
                                       const char *what) {
  if (t->kind == DISP_TOK_ERROR && t->unterminated) {
    /* Wherever an unterminated string turns up, that is the error. */
    return disp__schema_fail_at(lx, t->line, t->col,
                                "expected '%c' to end the string started at %d:%d, found %s",
                                lx->src[t->start], t->open_line, t->open_col,
                                t->start + t->len < lx->len ? "end of line" : "end of input");
  }
  disp_strbuf found;
  disp__strbuf_init(&found);
  disp__schema_describe_token(&found, lx, t);
  disp_status st = found.oom ? disp__fail(DISP_ERR_NO_MEMORY, "out of memory parsing a schema")
                             : disp__schema_fail_at(lx, t->line, t->col, "expected %s, found %s",
                                                    what, disp__strbuf_cstr(&found));
  disp__strbuf_free(&found);
  return st;
}

/* ---- literal values ----------------------------------------------------- */

static int is_octal(char c) { return c >= '0' && c <= '7'; }

/* A STRING token (quotes included) with its escapes decoded into a
 * DISP_DEFAULT_STRING whose text lives in the arena. */
static disp_status decode_string(const disp_lexer *lx, const disp_token *t, disp_arena *arena,
                                 disp_default *v) {
  DISP_ASSERT(t->kind == DISP_TOK_STRING && t->len >= 2);
  const char *s = lx->src + t->start + 1;
  size_t n = t->len - 2;
  char *out = disp__arena_alloc(arena, n + 1);
  if (!out) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory parsing a schema");
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c != '\\') {
      out[o++] = c;
      continue;
    }
    char e = s[++i]; /* lex_string never ends a string right after a backslash */
    switch (e) {
      case '\\': case '\'': case '"': case '\n': out[o++] = e; break;
      case 'a': out[o++] = '\a'; break;
      case 'b': out[o++] = '\b'; break;
      case 'f': out[o++] = '\f'; break;
      case 'n': out[o++] = '\n'; break;
      case 'r': out[o++] = '\r'; break;
      case 't': out[o++] = '\t'; break;
      case 'v': out[o++] = '\v'; break;
      default:
        /* \nnn: exactly three octal digits, at most \377. */
        if (i + 2 < n && is_octal(e) && is_octal(s[i + 1]) && is_octal(s[i + 2]) && e <= '3') {
          out[o++] = (char)((e - '0') * 64 + (s[i + 1] - '0') * 8 + (s[i + 2] - '0'));
          i += 2;
        } else {
          return disp__schema_fail_at(lx, t->line, t->col,
                                      "invalid escape sequence in string literal");
        }
    }
  }
  out[o] = '\0';
  v->kind = DISP_DEFAULT_STRING;
  v->str = out;
  v->str_len = o;
  return DISP_OK;
}

/* The decimal point of the C library's current locale ("." normally), so
 * that numbers read the same under any LC_NUMERIC. */
static void locale_point(char *out, size_t cap) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f", 0.5);
  size_t n = strlen(buf); /* "0" + point + "5" */
  size_t plen = n >= 2 ? n - 2 : 0;
  if (plen == 0 || plen >= cap) {
    out[0] = '.';
    plen = 1;
  } else {
    memcpy(out, buf + 1, plen);
  }
  out[plen] = '\0';
}

/* A NUMBER token, negated when neg, into DISP_DEFAULT_FLOAT (when as_float or
 * the text has '.', 'e' or 'E') or DISP_DEFAULT_INT; out of range fails. */
static disp_status decode_number(const disp_lexer *lx, const disp_token *t, int neg, int as_float,
                                 disp_default *v) {
  DISP_ASSERT(t->kind == DISP_TOK_NUMBER);
  const char *text = lx->src + t->start;
  int is_float = as_float;
  for (size_t i = 0; i < t->len; i++) {
    if (text[i] == '.' || text[i] == 'e' || text[i] == 'E') is_float = 1;
  }
  /* A NUL-terminated copy for strtod/strtoll, sign and locale point in. */
  char point[8];
  locale_point(point, sizeof point);
  size_t plen = strlen(point);
  char *buf = disp__malloc(t->len * plen + 2);
  if (!buf) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory parsing a schema");
  size_t o = 0;
  if (neg) buf[o++] = '-';
  for (size_t i = 0; i < t->len; i++) {
    if (text[i] == '.') {
      memcpy(buf + o, point, plen);
      o += plen;
    } else {
      buf[o++] = text[i];
    }
  }
  buf[o] = '\0';
  char *end;
  errno = 0;
  int bad;
  if (is_float) {
    /* Out of range (ERANGE, which includes subnormals) fails, as
     * std::stod does in PyTorch; inf and nan cannot be written at all. */
    v->kind = DISP_DEFAULT_FLOAT;
    v->f = strtod(buf, &end);
  } else {
    v->kind = DISP_DEFAULT_INT;
    v->i = strtoll(buf, &end, 10);
  }
  bad = errno == ERANGE || *end != '\0';
  disp__free(buf);
  if (bad) return disp__schema_fail_expected(lx, t, is_float ? "a finite float within range"
                                                             : "a 64-bit integer");
  return DISP_OK;
}

/* ---- default values ----------------------------------------------------- *
 * The constants after `=` (PyTorch's parseDefaultValue and friends). What is
 * accepted depends on the argument's "fake" type (SymInt, ScalarType, Layout
 * and MemoryFormat count as int); the type only decides how numbers are read
 * and which list items are allowed, as in PyTorch (`int x="s"` is fine).
 */

/* The most copies a `T[N] x=v` default may expand to (N is user input). */
#define MAX_REPEAT 4096

static const disp_token *peek(const disp_lexer *lx) { return disp__schema_lex_peek(lx, 0); }
static int punct_is(const disp_token *t, char c) {
  return t->kind == DISP_TOK_PUNCT && t->punct == c;
}
static int ident_is(const disp_lexer *lx, const disp_token *t, const char *text) {
  size_t n = strlen(text);
  return t->kind == DISP_TOK_IDENT && t->len == n && memcmp(lx->src + t->start, text, n) == 0;
}
static disp_status no_memory(void) {
  return disp__fail(DISP_ERR_NO_MEMORY, "out of memory parsing a schema");
}

/* `['-'] NUMBER` as an INT or FLOAT. */
static disp_status parse_number(disp_lexer *lx, disp_type_kind kind, disp_default *v) {
  const disp_token start = *peek(lx);
  int neg = punct_is(&start, '-');
  if (neg) disp__schema_lex_advance(lx);
  const disp_token tok = *peek(lx);
  if (tok.kind != DISP_TOK_NUMBER) {
    return disp__schema_fail_expected(lx, &tok, neg ? "a number" : "a default value");
  }
  disp__schema_lex_advance(lx);
  if (kind == DISP_TYPE_COMPLEX) {
    return disp__schema_fail_at(lx, start.line, start.col,
                                "complex default values are not supported");
  }
  return decode_number(lx, &tok, neg, kind == DISP_TYPE_FLOAT, v);
}

/* PyTorch's parseSingleConstant; kind is the (fake) type it is for. */
static disp_status parse_single(disp_lexer *lx, disp_arena *arena, disp_type_kind kind,
                                disp_default *v) {
  static const struct {
    const char *name;
    int64_t value;
  } named[] = {
    /* ScalarType::Float, ComplexFloat, Long; Layout::Strided;
     * Reduction::Mean; MemoryFormat::Contiguous. */
    {"float", 6}, {"complex", 9}, {"long", 4},
    {"strided", 0}, {"Mean", 1}, {"contiguous_format", 0},
  };
  const disp_token t = *peek(lx);
  switch (t.kind) {
    case DISP_TOK_TRUE:
    case DISP_TOK_FALSE:
      v->kind = DISP_DEFAULT_BOOL;
      v->i = t.kind == DISP_TOK_TRUE;
      disp__schema_lex_advance(lx);
      return DISP_OK;
    case DISP_TOK_NONE:
      v->kind = DISP_DEFAULT_NONE;
      disp__schema_lex_advance(lx);
      return DISP_OK;
    case DISP_TOK_STRING:
      disp__schema_lex_advance(lx);
      return decode_string(lx, &t, arena, v);
    case DISP_TOK_IDENT:
      for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        if (ident_is(lx, &t, named[i].name)) {
          /* PyTorch keeps an int even for `float x=long`, prints `4` and
           * reads that back as 4.0 (`4.`); store what the printed text
           * means instead. No number reads back for complex: refuse. */
          if (kind == DISP_TYPE_COMPLEX) break;
          v->kind = kind == DISP_TYPE_FLOAT ? DISP_DEFAULT_FLOAT : DISP_DEFAULT_INT;
          v->i = named[i].value;
          v->f = (double)named[i].value;
          disp__schema_lex_advance(lx);
          return DISP_OK;
        }
      }
      return disp__schema_fail_expected(lx, &t, "a default value");
    default:
      return parse_number(lx, kind, v);
  }
}

/* A list item must already be of the element kind (PyTorch's convertToList
 * calls toInt / toDouble / toBool, which reject anything else). */
static disp_status check_item(disp_lexer *lx, const disp_token *at, disp_type_kind elem,
                              const disp_default *v) {
  disp_default_kind want = elem == DISP_TYPE_INT     ? DISP_DEFAULT_INT
                         : elem == DISP_TYPE_FLOAT ? DISP_DEFAULT_FLOAT
                                                   : DISP_DEFAULT_BOOL;
  if (v->kind == want) return DISP_OK;
  return disp__schema_fail_expected(lx, at, want == DISP_DEFAULT_INT     ? "an integer"
                                            : want == DISP_DEFAULT_FLOAT ? "a float"
                                                                       : "True or False");
}

static disp_status parse_list_default(disp_lexer *lx, disp_arena *arena,
                                      const disp_argument *arg, disp_default *v) {
  disp_type_kind ek = disp__schema_fake_kind(arg->type->elems[0]->kind);
  const disp_token at = *peek(lx);
  disp_status st;
  if (at.kind == DISP_TOK_IDENT) return disp__schema_fail_expected(lx, &at, "a list default value");
  if (ek != DISP_TYPE_INT && ek != DISP_TYPE_FLOAT && ek != DISP_TYPE_BOOL) {
    return disp__schema_fail_at(lx, at.line, at.col,
                                "list default values are only supported for int, float "
                                "and bool lists");
  }
  v->kind = DISP_DEFAULT_LIST;
  if (!punct_is(&at, '[')) {
    /* `int[2] x=1` means [1, 1]. Without a size there is no count to
     * repeat to, and PyTorch's parser wants a list ("expected '['"). */
    if (arg->n < 0) return disp__schema_fail_expected(lx, &at, "'['");
    int64_t count = arg->n;
    if (count > MAX_REPEAT) {
      return disp__schema_fail_at(lx, at.line, at.col,
                                  "a default for a list of size %lld is too large",
                                  (long long)count);
    }
    disp_default one = {0};
    if ((st = parse_single(lx, arena, ek, &one)) != DISP_OK) return st;
    if ((st = check_item(lx, &at, ek, &one)) != DISP_OK) return st;
    if (count) {
      v->items = disp__arena_alloc(arena, (size_t)count * sizeof *v->items);
      if (!v->items) return no_memory();
    }
    for (int64_t i = 0; i < count; i++) v->items[i] = one;
    v->num_items = (size_t)count;
    return DISP_OK;
  }
  disp__schema_lex_advance(lx);
  size_t cap = 0;
  if (!punct_is(peek(lx), ']')) {
    do {
      const disp_token item_at = *peek(lx);
      disp_default one = {0};
      if ((st = parse_single(lx, arena, ek, &one)) != DISP_OK) return st;
      if ((st = check_item(lx, &item_at, ek, &one)) != DISP_OK) return st;
      if (v->num_items == cap) {
        size_t ncap = cap ? cap * 2 : 4;
        disp_default *grown = disp__arena_alloc(arena, ncap * sizeof *grown);
        if (!grown) return no_memory();
        if (v->num_items) memcpy(grown, v->items, v->num_items * sizeof *grown);
        v->items = grown;
        cap = ncap;
      }
      v->items[v->num_items++] = one;
      if (!punct_is(peek(lx), ',')) break;
      disp__schema_lex_advance(lx);
    } while (1);
  }
  if (!punct_is(peek(lx), ']')) return disp__schema_fail_expected(lx, peek(lx), "']'");
  disp__schema_lex_advance(lx);
  return DISP_OK;
}

disp_status disp__schema_parse_default(disp_lexer *lx, disp_arena *arena,
                                       const disp_argument *arg, disp_default **out) {
  *out = NULL;
  disp_default *v = disp__arena_alloc(arena, sizeof *v);
  if (!v) return no_memory();
  const disp_token at = *peek(lx);
  disp_type_kind kind = disp__schema_fake_kind(arg->type->kind);
  disp_status st;
  switch (kind) {
    case DISP_TYPE_TENSOR:
    case DISP_TYPE_GENERATOR:
    case DISP_TYPE_QUANTIZER:
      if (at.kind != DISP_TOK_NONE) return disp__schema_fail_expected(lx, &at, "'None'");
      disp__schema_lex_advance(lx);
      v->kind = DISP_DEFAULT_NONE;
      break;
    case DISP_TYPE_STR:
    case DISP_TYPE_OPTIONAL:
    case DISP_TYPE_SCALAR:
    case DISP_TYPE_INT:
    case DISP_TYPE_BOOL:
    case DISP_TYPE_FLOAT:
    case DISP_TYPE_COMPLEX:
      if ((st = parse_single(lx, arena, kind, v)) != DISP_OK) return st;
      break;
    case DISP_TYPE_DEVICE:
      if (at.kind != DISP_TOK_STRING) return disp__schema_fail_expected(lx, &at, "a string literal");
      disp__schema_lex_advance(lx);
      if ((st = decode_string(lx, &at, arena, v)) != DISP_OK) return st;
      v->kind = DISP_DEFAULT_DEVICE;
      break;
    case DISP_TYPE_LIST:
      if ((st = parse_list_default(lx, arena, arg, v)) != DISP_OK) return st;
      break;
    default: {
      disp_strbuf b;
      disp__strbuf_init(&b);
      disp__schema_print_type(&b, arg->type, 0);
      st = b.oom ? no_memory()
                 : disp__schema_fail_at(lx, at.line, at.col,
                                        "default values are not supported for type '%s'",
                                        disp__strbuf_cstr(&b));
      disp__strbuf_free(&b);
      return st;
    }
  }
  *out = v;
  return DISP_OK;
}
