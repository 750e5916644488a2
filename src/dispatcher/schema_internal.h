/*
 * schema_internal.h - the parsed form of an operator schema, shared by the
 * schema parser, printer and comparer and readable by the rest of the
 * library.
 *
 * Everything a schema owns (types, strings, argument arrays) lives in one
 * arena that disp_schema_free releases at once; nothing inside is freed
 * individually. Parsed schemas are never mutated, so readers need no locks.
 */
#ifndef DISP_SCHEMA_INTERNAL_H
#define DISP_SCHEMA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "disp/schema.h"
#include "strbuf_internal.h"

/* Limit on how deeply types may nest (`Tensor[][]...`, `((...))`), so that
 * the recursive parser, printer and comparer cannot overflow the stack. */
#define DISP_SCHEMA_MAX_DEPTH 64

/* ---- arena -------------------------------------------------------------- */

typedef struct disp_arena_chunk disp_arena_chunk;

typedef struct disp_arena {
  disp_arena_chunk *head;
} disp_arena;

/* Zeroed memory for n bytes, aligned for any type; NULL on OOM. */
void *disp__arena_alloc(disp_arena *a, size_t n);
/* A copy of the n bytes at s plus a NUL; NULL on OOM. */
char *disp__arena_strndup(disp_arena *a, const char *s, size_t n);
/* Release every chunk; the arena is empty (and reusable) afterwards. */
void disp__arena_free(disp_arena *a);

/* ---- types -------------------------------------------------------------- */

struct disp_type {
  disp_type_kind kind;
  int depth;              /* 1 for a leaf; 1 + deepest element otherwise */
  size_t num_elems;       /* see disp_schema_type_num_elements */
  disp_type **elems;
  const char *name;       /* CLASS: qualified name; VAR: the variable; else NULL */
};

/* ---- alias annotations -------------------------------------------------- */

/*
 * `Tensor(a! -> b|*)`: before = {a}, is_write, after = {b, *}. Sets keep
 * their first-seen order with duplicates dropped; the wildcard is "*".
 * Without `->` the after sets equal the before sets. For a list, `contained`
 * is the annotation of its elements (`Tensor(a)[]`: the list's own info has
 * no sets, its contained info has {a}); PyTorch keeps a vector of contained
 * infos but only ever fills one.
 */
typedef struct disp_alias_info {
  const char **before;
  size_t num_before;
  const char **after;
  size_t num_after;
  int is_write;
  struct disp_alias_info *contained; /* NULL when none */
} disp_alias_info;

/* ---- default values ----------------------------------------------------- */

typedef enum disp_default_kind {
  DISP_DEFAULT_NONE = 0,
  DISP_DEFAULT_BOOL,
  DISP_DEFAULT_INT,
  DISP_DEFAULT_FLOAT,
  DISP_DEFAULT_STRING,  /* may contain NUL bytes: use str_len */
  DISP_DEFAULT_DEVICE,  /* a device string such as "cpu" or "cuda:1" */
  DISP_DEFAULT_LIST     /* of BOOL, INT or FLOAT items */
} disp_default_kind;

/*
 * A default value, the subset of PyTorch's IValue a schema can hold. A list
 * keeps every item as written, so parse -> print -> parse gives it back
 * (`int[2] x=1` is stored as [1, 1]).
 */
typedef struct disp_default {
  disp_default_kind kind;
  int64_t i;          /* BOOL (0/1) and INT */
  double f;           /* FLOAT */
  const char *str;    /* STRING, DEVICE */
  size_t str_len;
  struct disp_default *items; /* LIST */
  size_t num_items;
  int broadcast;      /* always 0: `int[] x=1` no longer parses; call.c still reads it */
} disp_default;

/* ---- arguments and schemas ---------------------------------------------- */

typedef struct disp_argument {
  const char *name;          /* "" for an unnamed return */
  disp_type *type;           /* real type; `T[N]` is a LIST with n = N */
  int64_t n;                 /* fixed list size, or -1 */
  disp_default *default_value; /* NULL when none */
  int kwarg_only;
  disp_alias_info *alias;    /* NULL when unannotated */
  /* Precomputed printed forms, for the borrowed-string accessors. */
  const char *type_str;      /* type with alias and [N] */
  const char *default_str;   /* NULL when no default */
} disp_argument;

struct disp_schema {
  disp_arena arena;
  const char *name;        /* "ns::op" or "op" */
  const char *ns;          /* "ns" or "" */
  const char *base_name;   /* "op" */
  const char *overload;    /* "" when none */
  const char *qualified;   /* "ns::op.overload" or "ns::op" */
  disp_argument *args;
  size_t num_args;
  disp_argument *rets;
  size_t num_rets;
  int is_vararg;
  int is_varret;
};

/* ---- lexer and literals (schema_lexer.c) -------------------------------- */

typedef enum disp_tok_kind {
  DISP_TOK_EOF = 0,
  DISP_TOK_IDENT,    /* [A-Za-z_][A-Za-z0-9_]* */
  DISP_TOK_ALIAS_ID, /* $N: a fresh alias set as printed for `Tensor!` */
  DISP_TOK_NUMBER,   /* 12, 1., .5, 1e-05 (no sign) */
  DISP_TOK_STRING,   /* '...' or "..." with escapes, quotes included */
  DISP_TOK_NONE,     /* None */
  DISP_TOK_TRUE,     /* True */
  DISP_TOK_FALSE,    /* False */
  DISP_TOK_ARROW,    /* -> */
  DISP_TOK_DOTS,     /* ... */
  DISP_TOK_PUNCT,    /* one of ( ) [ ] , . : * ! ? | = - ; the char is `punct` */
  DISP_TOK_ERROR     /* a bad character or an unterminated string */
} disp_tok_kind;

typedef struct disp_token {
  disp_tok_kind kind;
  char punct;          /* DISP_TOK_PUNCT only */
  size_t start;        /* byte offset in the source */
  size_t len;
  int line, col;       /* 1-based */
  /* DISP_TOK_ERROR: an unterminated string reports its opening position. */
  int unterminated;
  int open_line, open_col;
} disp_token;

typedef struct disp_lexer {
  const char *src;
  size_t len;
  size_t pos;
  int line, col;
  disp_token ahead[2]; /* the current token and one of lookahead */
} disp_lexer;

void disp__schema_lex_init(disp_lexer *lx, const char *src);
/* The current token (k == 0) or the one after it (k == 1). */
const disp_token *disp__schema_lex_peek(const disp_lexer *lx, int k);
/* Consume the current token. */
void disp__schema_lex_advance(disp_lexer *lx);
/* Describe a token for "found Y": "'text'" (shortened) or "end of input". */
void disp__schema_describe_token(disp_strbuf *b, const disp_lexer *lx,
                                 const disp_token *t);
/* Fail with DISP_ERR_SCHEMA and a message "LINE:COL: error: <fmt>" followed
 * by the source line and a caret under the column. */
disp_status disp__schema_fail_at(const disp_lexer *lx, int line, int col,
                                 const char *fmt, ...) DISP_PRINTF(4, 5);

/* "LINE:COL: error: expected WHAT, found <t>" (an unterminated string is
 * reported as such whatever was expected). Returns DISP_ERR_SCHEMA. */
disp_status disp__schema_fail_expected(const disp_lexer *lx, const disp_token *t,
                                       const char *what);
/* The default value after `=` for argument arg (its type and fixed size
 * decide what is allowed), consumed from lx; *out lives in the arena. */
disp_status disp__schema_parse_default(disp_lexer *lx, disp_arena *arena,
                                       const disp_argument *arg, disp_default **out);

/* ---- printer (schema_print.c) ------------------------------------------- */

/* The printed base name of a leaf kind ("int", "Tensor", "Scalar", ...);
 * NULL for container kinds, CLASS and VAR. */
const char *disp__schema_kind_name(disp_type_kind kind);
/* The kind as PyTorch's Argument::type() sees it: SymInt, ScalarType,
 * Layout and MemoryFormat are `int`. */
disp_type_kind disp__schema_fake_kind(disp_type_kind kind);
/* Type as PyTorch's Type::str() prints it; fake != 0 prints fake kinds. */
void disp__schema_print_type(disp_strbuf *b, const disp_type *t, int fake);
/* An argument's type with alias annotations and [N] (no name/default). */
void disp__schema_print_arg_type(disp_strbuf *b, const disp_argument *a);
/* A default value as PyTorch prints it for this argument. */
void disp__schema_print_default(disp_strbuf *b, const disp_argument *a);
/* A whole argument: `Type(alias)? name=default`. */
void disp__schema_print_argument(disp_strbuf *b, const disp_argument *a);
/* The whole schema. */
void disp__schema_print(disp_strbuf *b, const disp_schema *s);
/* A string in double quotes with PyTorch's escapes (printQuotedString). */
void disp__schema_print_quoted(disp_strbuf *b, const char *s, size_t len);

/* ---- comparison (schema_compare.c) -------------------------------------- */

/* Structural type equality the way PyTorch compares Argument::type():
 * fake kinds (SymInt == int), class and variable names, element types. */
int disp__schema_types_equal(const disp_type *a, const disp_type *b);

/*
 * disp__schema_check_compatible - PyTorch's findSchemaDifferences: do two
 * schemas have the same number of arguments and returns and the same types
 * (ignoring names, defaults, alias annotations and overload)?
 * Returns DISP_OK with *reason_out = NULL when they do; DISP_ERR_MISMATCH
 * with *reason_out a new malloc'd reason (also set as the last error), e.g.
 * "Type mismatch in argument 2: int vs Tensor" (1-based, expected vs given);
 * DISP_ERR_NO_MEMORY. Thread-safe.
 */
disp_status disp__schema_check_compatible(const disp_schema *expected,
                                          const disp_schema *given,
                                          char **reason_out);

/* Two default values hold the same value (NULL equals only NULL). */
int disp__schema_defaults_equal(const disp_default *a, const disp_default *b);

/*
 * disp__schema_equal - PyTorch's FunctionSchema operator==: name, overload,
 * and every argument's and return's name, real type, fixed size, default,
 * kwarg-only marker and alias annotation; varargs. 1 when equal; else 0 and,
 * when why is non-NULL, a description of the first difference appended to it.
 */
int disp__schema_equal(const disp_schema *a, const disp_schema *b, disp_strbuf *why);

/* ---- parser entry (schema_parse.c) -------------------------------------- */

/* Which library block a namespace check words its message for. */
typedef enum disp_ns_context {
  DISP_NS_DEF,  /* "in schema string ... TORCH_LIBRARY block" */
  DISP_NS_IMPL  /* "in operator name ... TORCH_LIBRARY_IMPL block" */
} disp_ns_context;

/*
 * Parse a schema or, when allow_name_only, just an operator name. On
 * success *schema_out is the schema (NULL when only a name was given) and,
 * when qualified_out is non-NULL, *qualified_out a malloc'd registry key.
 */
disp_status disp__schema_parse_decl(const char *text, const char *default_ns,
                                    disp_ns_context ctx, int allow_name_only,
                                    disp_schema **schema_out, char **qualified_out);

#endif /* DISP_SCHEMA_INTERNAL_H */
