/*
 * schema_parse.c - the schema grammar (PyTorch's function_schema_parser.cpp
 * and schema_type_parser.cpp) and the public parse entry points.
 *
 *   decl     := name [ '(' args ')' '->' returns ]
 *   name     := IDENT [ ':' ':' IDENT ] [ '.' IDENT ]
 *   args     := [ arg-item { ',' arg-item } ]     arg-item := '*' | '...' | argument
 *   returns  := '...' | '(' [ ret-item { ',' ret-item } ] ')' | argument
 *   argument := type [ '[' NUMBER ']' [alias] ['?'] ] name [ '=' default ]
 *               (a return: type [...] [name], no default)
 *   type     := ( '(' types ')' | 'Future' '(' type ')' | 'RRef' '(' type ')'
 *              | 'Tensor' [alias] | 'Dict' '(' type ',' type ')' [alias]
 *              | '__torch__' '.' 'torch' '.' 'classes' '.' IDENT '.' IDENT
 *              | base [alias] ) { '[' ']' [alias] | '?' }
 *   alias    := '(' sets ['!'] [ '->' sets ] ')' | '!'
 *
 * Default values (after '=') are read by disp__schema_parse_default in
 * schema_lexer.c.
 *
 * Every function returns NULL / -1 on failure with p->st set; all memory
 * comes from the schema's arena, so failing just frees the arena.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "argcheck_internal.h"
#include "error_internal.h"
#include "schema_internal.h"

/* ---- arena -------------------------------------------------------------- */

struct disp_arena_chunk {
  disp_arena_chunk *next;
  size_t used;
  size_t cap;
};

#define ARENA_ALIGN _Alignof(max_align_t)
#define ROUND_UP(n) (((n) + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN)
#define CHUNK_HEADER ROUND_UP(sizeof(disp_arena_chunk))
#define CHUNK_MIN 4096

void *disp__arena_alloc(disp_arena *a, size_t n) {
  if (n > ((size_t)-1) / 4) return NULL;
  n = ROUND_UP(n == 0 ? 1 : n);
  disp_arena_chunk *c = a->head;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > CHUNK_MIN ? n : CHUNK_MIN;
    c = disp__malloc(CHUNK_HEADER + cap);
    if (!c) return NULL;
    c->next = a->head;
    c->used = 0;
    c->cap = cap;
    a->head = c;
  }
  void *p = (char *)c + CHUNK_HEADER + c->used;
  c->used += n;
  memset(p, 0, n);
  return p;
}

char *disp__arena_strndup(disp_arena *a, const char *s, size_t n) {
  char *d = disp__arena_alloc(a, n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

void disp__arena_free(disp_arena *a) {
  disp_arena_chunk *c = a->head;
  while (c) {
    disp_arena_chunk *next = c->next;
    disp__free(c);
    c = next;
  }
  a->head = NULL;
}

/* ---- parser state ------------------------------------------------------- */

typedef struct parser {
  disp_lexer lx;
  disp_arena *arena;
  disp_status st;
  int next_alias_id;      /* for `Tensor!`: $0, $1, ... */
  int default_line;       /* first default seen, for the vararg check */
  int default_col;
} parser;


static const disp_token *cur(parser *p) { return disp__schema_lex_peek(&p->lx, 0); }
static const disp_token *ahead(parser *p) { return disp__schema_lex_peek(&p->lx, 1); }
static void advance(parser *p) { disp__schema_lex_advance(&p->lx); }

static int is_punct(const disp_token *t, char c) {
  return t->kind == DISP_TOK_PUNCT && t->punct == c;
}
static int tok_is(parser *p, const disp_token *t, const char *text) {
  size_t n = strlen(text);
  return t->kind == DISP_TOK_IDENT && t->len == n &&
         memcmp(p->lx.src + t->start, text, n) == 0;
}
static int next_if_punct(parser *p, char c) {
  if (!is_punct(cur(p), c)) return 0;
  advance(p);
  return 1;
}
static int next_if_kind(parser *p, disp_tok_kind k) {
  if (cur(p)->kind != k) return 0;
  advance(p);
  return 1;
}

static void *oom(parser *p) {
  p->st = disp__fail(DISP_ERR_NO_MEMORY, "out of memory while parsing a schema");
  return NULL;
}

static void *alloc(parser *p, size_t n) {
  void *m = disp__arena_alloc(p->arena, n);
  return m ? m : oom(p);
}

static char *tok_text(parser *p, const disp_token *t) {
  char *s = disp__arena_strndup(p->arena, p->lx.src + t->start, t->len);
  return s ? s : oom(p);
}

/* "LINE:COL: error: expected WHAT, found <token>" at token t. */
static int fail_expected_at(parser *p, const disp_token *t, const char *what) {
  p->st = disp__schema_fail_expected(&p->lx, t, what);
  return -1;
}
static int fail_expected(parser *p, const char *what) {
  return fail_expected_at(p, cur(p), what);
}

static int expect_punct(parser *p, char c) {
  if (next_if_punct(p, c)) return 0;
  char what[4] = {'\'', c, '\'', '\0'};
  return fail_expected(p, what);
}

/* An identifier's text, consumed; NULL (after failing) otherwise. */
static char *expect_ident(parser *p, const char *what) {
  const disp_token *t = cur(p);
  if (t->kind != DISP_TOK_IDENT) {
    fail_expected(p, what);
    return NULL;
  }
  char *s = tok_text(p, t);
  if (s) advance(p);
  return s;
}

/* ---- types -------------------------------------------------------------- */

static disp_type *new_type(parser *p, disp_type_kind kind, size_t nelems) {
  disp_type *t = alloc(p, sizeof *t);
  if (!t) return NULL;
  t->kind = kind;
  t->depth = 1;
  t->num_elems = nelems;
  if (nelems) {
    t->elems = alloc(p, nelems * sizeof *t->elems);
    if (!t->elems) return NULL;
  }
  return t;
}

static int too_deep(parser *p, const disp_token *at) {
  p->st = disp__schema_fail_at(&p->lx, at->line, at->col,
                               "types nested deeper than %d levels", DISP_SCHEMA_MAX_DEPTH);
  return -1;
}

/* LIST / OPTIONAL / FUTURE / RREF around elem, within the depth limit. */
static disp_type *wrap(parser *p, disp_type_kind kind, disp_type *elem, const disp_token *at) {
  if (elem->depth + 1 > DISP_SCHEMA_MAX_DEPTH) {
    too_deep(p, at);
    return NULL;
  }
  disp_type *t = new_type(p, kind, 1);
  if (!t) return NULL;
  t->elems[0] = elem;
  t->depth = elem->depth + 1;
  return t;
}

static const struct {
  const char *name;
  disp_type_kind kind;
} base_types[] = {
  {"Generator", DISP_TYPE_GENERATOR},   {"Dimname", DISP_TYPE_STR},
  {"ScalarType", DISP_TYPE_SCALAR_TYPE}, {"Layout", DISP_TYPE_LAYOUT},
  {"MemoryFormat", DISP_TYPE_MEMORY_FORMAT}, {"Storage", DISP_TYPE_STORAGE},
  {"QScheme", DISP_TYPE_QSCHEME},       {"Quantizer", DISP_TYPE_QUANTIZER},
  {"ConstQuantizerPtr", DISP_TYPE_INT}, {"Device", DISP_TYPE_DEVICE},
  {"DeviceIndex", DISP_TYPE_INT},       {"Stream", DISP_TYPE_STREAM},
  {"Scalar", DISP_TYPE_SCALAR},         {"str", DISP_TYPE_STR},
  {"float", DISP_TYPE_FLOAT},           {"complex", DISP_TYPE_COMPLEX},
  {"int", DISP_TYPE_INT},               {"SymInt", DISP_TYPE_SYMINT},
  {"bool", DISP_TYPE_BOOL},             {"NoneType", DISP_TYPE_NONE},
  {"Capsule", DISP_TYPE_CAPSULE},       {"Any", DISP_TYPE_ANY},
  {"AnyClassType", DISP_TYPE_ANY_CLASS}, {"AnyEnumType", DISP_TYPE_ANY_ENUM},
};

/* ---- alias annotations -------------------------------------------------- */

static int set_has(const char **sets, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(sets[i], name) == 0) return 1;
  }
  return 0;
}

/* Add a set name (deduplicated, first-seen order). The arrays are small, so
 * they simply grow by copying within the arena. */
static int set_add(parser *p, const char ***sets, size_t *n, const char *name) {
  if (set_has(*sets, *n, name)) return 0;
  const char **grown = alloc(p, (*n + 1) * sizeof *grown);
  if (!grown) return -1;
  if (*n) memcpy(grown, *sets, *n * sizeof *grown);
  grown[(*n)++] = name;
  *sets = grown;
  return 0;
}

/* `a|b|*` before or after the arrow. After a wildcard further names are
 * not even read, as in PyTorch (so `(*|a)` fails at `a`). */
static int parse_alias_sets(parser *p, const char ***sets, size_t *n) {
  do {
    if (next_if_punct(p, '*')) {
      if (set_add(p, sets, n, "*") < 0) return -1;
    } else if (!set_has(*sets, *n, "*")) {
      const disp_token *t = cur(p);
      if (t->kind != DISP_TOK_IDENT && t->kind != DISP_TOK_ALIAS_ID) {
        return fail_expected(p, "an alias set name");
      }
      char *name = tok_text(p, t);
      if (!name) return -1;
      advance(p);
      if (set_add(p, sets, n, name) < 0) return -1;
    }
  } while (next_if_punct(p, '|'));
  return 0;
}

/* An optional annotation; *out is NULL when there is none. */
static int parse_alias(parser *p, disp_alias_info **out) {
  *out = NULL;
  if (next_if_punct(p, '(')) {
    disp_alias_info *a = alloc(p, sizeof *a);
    if (!a) return -1;
    if (parse_alias_sets(p, &a->before, &a->num_before) < 0) return -1;
    if (next_if_punct(p, '!')) a->is_write = 1;
    if (next_if_kind(p, DISP_TOK_ARROW)) {
      if (parse_alias_sets(p, &a->after, &a->num_after) < 0) return -1;
    } else {
      a->after = a->before;
      a->num_after = a->num_before;
    }
    if (expect_punct(p, ')') < 0) return -1;
    *out = a;
  } else if (next_if_punct(p, '!')) {
    /* `Tensor!`: written, in a fresh set. PyTorch leaves the after sets
     * empty and then prints `($0! -> )`, which it cannot read back; the
     * after sets equal the before sets here, so it prints `($0!)`. */
    disp_alias_info *a = alloc(p, sizeof *a);
    char name[32];
    snprintf(name, sizeof name, "$%d", p->next_alias_id++);
    char *s = a ? disp__arena_strndup(p->arena, name, strlen(name)) : NULL;
    if (!a || !s || set_add(p, &a->before, &a->num_before, s) < 0) {
      if (p->st == DISP_OK) oom(p);
      return -1;
    }
    a->after = a->before;
    a->num_after = a->num_before;
    a->is_write = 1;
    *out = a;
  }
  return 0;
}

/* Wrap a list element's annotation into the list's (PyTorch makes an empty
 * container annotation that inherits is_write when the list has none). */
static int nest_alias(parser *p, disp_alias_info *container, disp_alias_info *elem,
                      disp_alias_info **out) {
  if (elem) {
    if (!container) {
      container = alloc(p, sizeof *container);
      if (!container) return -1;
      container->is_write = elem->is_write;
    }
    container->contained = elem;
  }
  *out = container;
  return 0;
}

static disp_type_kind maybe_fake(disp_type_kind k, int fake) {
  return fake ? disp__schema_fake_kind(k) : k;
}

static disp_type *parse_type(parser *p, int depth, int fake, disp_alias_info **alias);

/* `T1, T2, ...)` elements of a tuple (after the '('); aliases inside are
 * dropped and element types are "fake" (SymInt -> int), as in PyTorch. */
static disp_type *parse_tuple(parser *p, int depth) {
  disp_type **elems = NULL;
  size_t n = 0, cap = 0;
  int max_depth = 0;
  if (!is_punct(cur(p), ')')) {
    do {
      disp_alias_info *ignored;
      disp_type *e = parse_type(p, depth + 1, 1, &ignored);
      if (!e) return NULL;
      if (n == cap) {
        size_t ncap = cap ? cap * 2 : 4;
        disp_type **grown = alloc(p, ncap * sizeof *grown);
        if (!grown) return NULL;
        if (n) memcpy(grown, elems, n * sizeof *grown);
        elems = grown;
        cap = ncap;
      }
      elems[n++] = e;
      if (e->depth > max_depth) max_depth = e->depth;
    } while (next_if_punct(p, ','));
  }
  if (expect_punct(p, ')') < 0) return NULL;
  disp_type *t = new_type(p, DISP_TYPE_TUPLE, 0);
  if (!t) return NULL;
  t->elems = elems;
  t->num_elems = n;
  t->depth = max_depth + 1;
  return t;
}

/* `__torch__.torch.classes.ns.Name` (after `__torch__`). Any class name is
 * accepted: this library has no class registry to check against. */
static disp_type *parse_class(parser *p) {
  if (expect_punct(p, '.') < 0) return NULL;
  if (!tok_is(p, cur(p), "torch")) return fail_expected(p, "'torch'"), NULL;
  advance(p);
  if (expect_punct(p, '.') < 0) return NULL;
  if (!tok_is(p, cur(p), "classes")) return fail_expected(p, "'classes'"), NULL;
  advance(p);
  if (expect_punct(p, '.') < 0) return NULL;
  char *ns = expect_ident(p, "an identifier");
  if (!ns || expect_punct(p, '.') < 0) return NULL;
  char *cls = expect_ident(p, "an identifier");
  if (!cls) return NULL;
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__strbuf_appendf(&b, "__torch__.torch.classes.%s.%s", ns, cls);
  char *name = b.oom ? NULL : disp__arena_strndup(p->arena, b.data, b.len);
  disp__strbuf_free(&b);
  disp_type *t = name ? new_type(p, DISP_TYPE_CLASS, 0) : oom(p);
  if (t) t->name = name;
  return t;
}

/* A base type name: the table, else a lower-case name is a type variable. */
static disp_type *parse_base(parser *p, int fake) {
  const disp_token *t = cur(p);
  if (t->kind == DISP_TOK_NONE) {
    advance(p);
    return new_type(p, DISP_TYPE_NONE, 0);
  }
  if (t->kind != DISP_TOK_IDENT) return fail_expected(p, "a type"), NULL;
  for (size_t i = 0; i < sizeof base_types / sizeof base_types[0]; i++) {
    if (tok_is(p, t, base_types[i].name)) {
      advance(p);
      return new_type(p, maybe_fake(base_types[i].kind, fake), 0);
    }
  }
  char first = p->lx.src[t->start];
  if (first >= 'a' && first <= 'z') {
    char *name = tok_text(p, t);
    disp_type *v = name ? new_type(p, DISP_TYPE_VAR, 0) : NULL;
    if (!v) return NULL;
    v->name = name;
    advance(p);
    return v;
  }
  return fail_expected(p, "a type"), NULL;
}

/* One `Future(T)` / `RRef(T)` (after the keyword). */
static disp_type *parse_wrapped(parser *p, int depth, disp_type_kind kind) {
  const disp_token at = *cur(p);
  disp_alias_info *ignored;
  if (expect_punct(p, '(') < 0) return NULL;
  disp_type *e = parse_type(p, depth + 1, 1, &ignored);
  if (!e || expect_punct(p, ')') < 0) return NULL;
  return wrap(p, kind, e, &at);
}

static disp_type *parse_type(parser *p, int depth, int fake, disp_alias_info **alias) {
  *alias = NULL;
  if (depth >= DISP_SCHEMA_MAX_DEPTH) return too_deep(p, cur(p)), NULL;
  const disp_token t = *cur(p);
  disp_type *type;
  if (is_punct(&t, '(')) {
    advance(p);
    type = parse_tuple(p, depth);
  } else if (tok_is(p, &t, "Future") || tok_is(p, &t, "RRef")) {
    disp_type_kind k = tok_is(p, &t, "Future") ? DISP_TYPE_FUTURE : DISP_TYPE_RREF;
    advance(p);
    type = parse_wrapped(p, depth, k);
  } else if (tok_is(p, &t, "Tensor")) {
    advance(p);
    type = new_type(p, DISP_TYPE_TENSOR, 0);
    if (type && parse_alias(p, alias) < 0) return NULL;
  } else if (tok_is(p, &t, "Dict")) {
    advance(p);
    disp_alias_info *ignored;
    if (expect_punct(p, '(') < 0) return NULL;
    disp_type *k = parse_type(p, depth + 1, 1, &ignored);
    if (!k || expect_punct(p, ',') < 0) return NULL;
    disp_type *v = parse_type(p, depth + 1, 1, &ignored);
    if (!v || expect_punct(p, ')') < 0) return NULL;
    type = new_type(p, DISP_TYPE_DICT, 2);
    if (!type) return NULL;
    type->elems[0] = k;
    type->elems[1] = v;
    type->depth = 1 + (k->depth > v->depth ? k->depth : v->depth);
    if (parse_alias(p, alias) < 0) return NULL;
  } else if (tok_is(p, &t, "__torch__")) {
    advance(p);
    type = parse_class(p);
  } else {
    type = parse_base(p, fake);
    if (type && parse_alias(p, alias) < 0) return NULL;
  }
  if (!type) return NULL;
  if (type->depth > DISP_SCHEMA_MAX_DEPTH) return too_deep(p, &t), NULL;

  /* Suffixes: `[]` with an optional annotation of the list, and `?`. */
  for (;;) {
    const disp_token at = *cur(p);
    if (is_punct(&at, '[') && is_punct(ahead(p), ']')) {
      advance(p);
      advance(p);
      type = wrap(p, DISP_TYPE_LIST, type, &at);
      disp_alias_info *container;
      if (!type || parse_alias(p, &container) < 0) return NULL;
      if (nest_alias(p, container, *alias, alias) < 0) return NULL;
    } else if (is_punct(&at, '?')) {
      advance(p);
      type = wrap(p, DISP_TYPE_OPTIONAL, type, &at);
      if (!type) return NULL;
    } else {
      return type;
    }
  }
}

/* ---- arguments and declarations ----------------------------------------- */

/* Fill the precomputed printed forms of an argument. */
static int finish_argument(parser *p, disp_argument *a) {
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__schema_print_arg_type(&b, a);
  char *ts = b.oom ? NULL : disp__arena_strndup(p->arena, b.data ? b.data : "", b.len);
  disp__strbuf_free(&b);
  if (!ts) return oom(p), -1;
  a->type_str = ts;
  if (a->default_value) {
    disp__strbuf_init(&b);
    disp__schema_print_default(&b, a);
    char *ds = b.oom ? NULL : disp__arena_strndup(p->arena, b.data ? b.data : "", b.len);
    disp__strbuf_free(&b);
    if (!ds) return oom(p), -1;
    a->default_str = ds;
  }
  return 0;
}

static int parse_argument(parser *p, int is_return, int kwarg_only, disp_argument *a) {
  memset(a, 0, sizeof *a);
  a->n = -1;
  a->type = parse_type(p, 0, 0, &a->alias);
  if (!a->type) return -1;
  const disp_token at = *cur(p);
  if (next_if_punct(p, '[')) {
    /* A fixed size `T[N]` only occurs here, at the argument level. */
    const disp_token num = *cur(p);
    int digits = num.kind == DISP_TOK_NUMBER;
    for (size_t i = 0; digits && i < num.len; i++) {
      char c = p->lx.src[num.start + i];
      digits = c >= '0' && c <= '9';
    }
    if (!digits) return fail_expected(p, "an integer");
    if (num.len > 10 || strtoll(p->lx.src + num.start, NULL, 10) > INT32_MAX) {
      p->st = disp__schema_fail_at(&p->lx, num.line, num.col, "list size out of range");
      return -1;
    }
    a->n = strtoll(p->lx.src + num.start, NULL, 10);
    advance(p);
    if (expect_punct(p, ']') < 0) return -1;
    a->type = wrap(p, DISP_TYPE_LIST, a->type, &at);
    disp_alias_info *container;
    if (!a->type || parse_alias(p, &container) < 0) return -1;
    if (nest_alias(p, container, a->alias, &a->alias) < 0) return -1;
    const disp_token q = *cur(p);
    if (next_if_punct(p, '?')) {
      a->type = wrap(p, DISP_TYPE_OPTIONAL, a->type, &q);
      if (!a->type) return -1;
    }
  }
  if (is_return) {
    if (cur(p)->kind == DISP_TOK_IDENT) {
      if (!(a->name = tok_text(p, cur(p)))) return -1;
      advance(p);
    } else {
      a->name = "";
    }
  } else {
    if (!(a->name = expect_ident(p, "an identifier"))) return -1;
    a->kwarg_only = kwarg_only;
    if (next_if_punct(p, '=')) {
      const disp_token *dflt = cur(p);
      if (!p->default_line) {
        p->default_line = dflt->line;
        p->default_col = dflt->col;
      }
      p->st = disp__schema_parse_default(&p->lx, p->arena, a, &a->default_value);
      if (p->st != DISP_OK) return -1;
    }
  }
  return finish_argument(p, a);
}

static int push_argument(parser *p, disp_argument **arr, size_t *n, size_t *cap,
                         const disp_argument *a) {
  if (*n == *cap) {
    size_t ncap = *cap ? *cap * 2 : 8;
    disp_argument *grown = alloc(p, ncap * sizeof *grown);
    if (!grown) return -1;
    if (*n) memcpy(grown, *arr, *n * sizeof *grown);
    *arr = grown;
    *cap = ncap;
  }
  (*arr)[(*n)++] = *a;
  return 0;
}

static int parse_arguments(parser *p, disp_schema *s) {
  size_t cap = 0;
  int kwarg_only = 0;
  if (expect_punct(p, '(') < 0) return -1;
  if (!is_punct(cur(p), ')')) {
    do {
      if (s->is_vararg) {
        const disp_token *t = cur(p);
        p->st = disp__schema_fail_at(&p->lx, t->line, t->col,
                                     "... must be the last element of the argument list");
        return -1;
      }
      if (next_if_punct(p, '*')) {
        kwarg_only = 1;
      } else if (next_if_kind(p, DISP_TOK_DOTS)) {
        s->is_vararg = 1;
      } else {
        disp_argument a;
        if (parse_argument(p, 0, kwarg_only, &a) < 0) return -1;
        if (push_argument(p, &s->args, &s->num_args, &cap, &a) < 0) return -1;
      }
    } while (next_if_punct(p, ','));
  }
  if (expect_punct(p, ')') < 0) return -1;
  if (s->is_vararg && p->default_line) {
    p->st = disp__schema_fail_at(&p->lx, p->default_line, p->default_col,
                                 "schemas with vararg (...) can't have default value args");
    return -1;
  }
  return 0;
}

static int parse_returns(parser *p, disp_schema *s) {
  size_t cap = 0;
  disp_argument a;
  if (!next_if_kind(p, DISP_TOK_ARROW)) return fail_expected(p, "'->'");
  if (next_if_kind(p, DISP_TOK_DOTS)) {
    s->is_varret = 1;
  } else if (next_if_punct(p, '(')) {
    if (!is_punct(cur(p), ')')) {
      do {
        if (s->is_varret) {
          const disp_token *t = cur(p);
          p->st = disp__schema_fail_at(&p->lx, t->line, t->col,
                                       "... must be the last element of the return list");
          return -1;
        }
        if (next_if_kind(p, DISP_TOK_DOTS)) {
          s->is_varret = 1;
        } else {
          if (parse_argument(p, 1, 0, &a) < 0) return -1;
          if (push_argument(p, &s->rets, &s->num_rets, &cap, &a) < 0) return -1;
        }
      } while (next_if_punct(p, ','));
    }
    if (expect_punct(p, ')') < 0) return -1;
  } else {
    if (parse_argument(p, 1, 0, &a) < 0) return -1;
    if (push_argument(p, &s->rets, &s->num_rets, &cap, &a) < 0) return -1;
  }
  return 0;
}

static int is_identifier(const char *s) {
  if (!s[0] || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_')) {
    return 0;
  }
  for (const char *c = s; *c; c++) {
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
          (*c >= '0' && *c <= '9'))) {
      return 0;
    }
  }
  return 1;
}

static char *arena_printf(parser *p, const char *fmt, ...) DISP_PRINTF(2, 3);
static char *arena_printf(parser *p, const char *fmt, ...) {
  disp_strbuf b;
  disp__strbuf_init(&b);
  va_list ap;
  va_start(ap, fmt);
  disp__strbuf_vappendf(&b, fmt, ap);
  va_end(ap);
  char *s = b.oom ? NULL : disp__arena_strndup(p->arena, b.data ? b.data : "", b.len);
  disp__strbuf_free(&b);
  return s ? s : oom(p);
}

/* `[ns::]name[.overload]`, resolved against default_ns, into s. */
static int parse_name(parser *p, disp_schema *s, const char *default_ns, disp_ns_context ctx) {
  char *first = expect_ident(p, "an identifier");
  if (!first) return -1;
  const char *ns = "";
  const char *base = first;
  if (next_if_punct(p, ':')) {
    if (expect_punct(p, ':') < 0) return -1;
    ns = first;
    if (!(base = expect_ident(p, "an identifier"))) return -1;
  }
  const char *overload = "";
  if (next_if_punct(p, '.')) {
    const disp_token at = *cur(p);
    char *ov = expect_ident(p, "an identifier");
    if (!ov) return -1;
    /* `default` names the overload-less op in Python (torch.ops.ns.op.default)
     * and dunder names are attributes there, so neither may be an overload. */
    if (strcmp(ov, "default") == 0 || strncmp(ov, "__", 2) == 0) {
      p->st = disp__schema_fail_at(&p->lx, at.line, at.col,
                                   "%s is not a legal overload name for aten operators", ov);
      return -1;
    }
    overload = ov;
  }
  if (default_ns) {
    if (!ns[0]) {
      ns = default_ns;
    } else if (strcmp(ns, default_ns) != 0) {
      if (ctx == DISP_NS_DEF) {
        p->st = disp__fail(DISP_ERR_SCHEMA,
                           "Explicitly provided namespace (%s) in schema string does not match "
                           "namespace of enclosing TORCH_LIBRARY block (%s).  Move this definition "
                           "to the (unique) TORCH_LIBRARY block corresponding to this namespace "
                           "(and consider deleting the namespace from your schema string.)",
                           ns, default_ns);
      } else {
        p->st = disp__fail(DISP_ERR_SCHEMA,
                           "Explicitly provided namespace (%s) in operator name does not match "
                           "namespace of enclosing TORCH_LIBRARY_IMPL block (%s).  Move this "
                           "definition to the TORCH_LIBRARY_IMPL block corresponding to this "
                           "namespace (and consider deleting the namespace from your schema "
                           "string.)",
                           ns, default_ns);
      }
      return -1;
    }
  }
  s->ns = ns[0] ? arena_printf(p, "%s", ns) : "";
  s->base_name = base;
  s->overload = overload;
  s->name = ns[0] ? arena_printf(p, "%s::%s", ns, base) : base;
  if (!s->ns || !s->name) return -1;
  s->qualified = overload[0] ? arena_printf(p, "%s.%s", s->name, overload) : s->name;
  return s->qualified ? 0 : -1;
}

disp_status disp__schema_parse_decl(const char *text, const char *default_ns,
                                    disp_ns_context ctx, int allow_name_only,
                                    disp_schema **schema_out, char **qualified_out) {
  if (schema_out) *schema_out = NULL;
  if (qualified_out) *qualified_out = NULL;
  if (!text) return disp__fail(DISP_ERR_INVALID_ARG, "schema text is NULL");
  if (default_ns && !is_identifier(default_ns)) {
    return disp__fail(DISP_ERR_INVALID_ARG, "namespace '%s' is not an identifier", default_ns);
  }
  disp_schema *s = disp__calloc(1, sizeof *s);
  if (!s) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory while parsing a schema");
  parser p;
  memset(&p, 0, sizeof p);
  p.arena = &s->arena;
  disp__schema_lex_init(&p.lx, text);

  int is_schema = 0;
  int ok = parse_name(&p, s, default_ns, ctx) == 0;
  if (ok && (is_punct(cur(&p), '(') || !allow_name_only)) {
    is_schema = 1;
    ok = parse_arguments(&p, s) == 0 && parse_returns(&p, s) == 0;
  }
  if (ok && cur(&p)->kind != DISP_TOK_EOF) {
    fail_expected(&p, is_schema ? "end of input" : "'(' or end of input");
    ok = 0;
  }
  if (ok && qualified_out) {
    *qualified_out = disp__malloc(strlen(s->qualified) + 1);
    if (!*qualified_out) {
      oom(&p);
      ok = 0;
    } else {
      strcpy(*qualified_out, s->qualified);
    }
  }
  if (!ok) {
    DISP_ASSERT(p.st != DISP_OK);
    disp_schema_free(s);
    return p.st;
  }
  if (is_schema && schema_out) {
    *schema_out = s;
  } else {
    disp_schema_free(s);
  }
  return DISP_OK;
}

/* ---- public API ----------------------------------------------------------- */

disp_status disp_schema_parse(const char *text, disp_schema **out) {
  DISP_REFUSE_NULL(out);
  *out = NULL; /* *out is NULL on every failure, this one included */
  DISP_REFUSE_NULL(text);
  return disp_schema_parse_ns(text, NULL, out);
}

disp_status disp_schema_parse_ns(const char *text, const char *default_ns, disp_schema **out) {
  DISP_REFUSE_NULL(out);
  *out = NULL; /* *out is NULL on every failure, this one included */
  DISP_REFUSE_NULL(text);
  return disp__schema_parse_decl(text, default_ns, DISP_NS_DEF, 0, out, NULL);
}

disp_status disp_schema_parse_name(const char *text, const char *default_ns,
                                   char **qualified_name_out) {
  DISP_REFUSE_NULL(qualified_name_out);
  *qualified_name_out = NULL; /* NULL on every failure, this one included */
  DISP_REFUSE_NULL(text);
  return disp__schema_parse_decl(text, default_ns, DISP_NS_IMPL, 1, NULL, qualified_name_out);
}

void disp_schema_free(disp_schema *s) {
  if (!s) return;
  disp__arena_free(&s->arena);
  disp__free(s);
}

disp_schema *disp_schema_copy(const disp_schema *s) {
  DISP_REFUSE_NULL_PTR(s);
  /* The printed form reads back to an identical schema (the fuzz target
   * checks exactly that), so a copy is a print and a parse. */
  char *text = disp_schema_to_string(s);
  if (!text) {
    disp__fail(DISP_ERR_NO_MEMORY, "out of memory copying a schema");
    return NULL;
  }
  disp_schema *copy = NULL;
  disp_status st = disp_schema_parse(text, &copy);
  disp__free(text);
  DISP_ASSERT(st == DISP_OK || st == DISP_ERR_NO_MEMORY);
  return copy;
}
