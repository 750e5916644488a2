/*
 * schema_print.c - printing a parsed schema exactly as PyTorch 1.13 prints
 * a FunctionSchema (function_schema.cpp operator<<, Argument and AliasInfo
 * printing, IValue repr for defaults), and the read-only accessors.
 *
 * Where PyTorch's own output cannot be parsed back (it then also fails to
 * read it), the printer writes a form that can, so that print -> parse ->
 * print is always stable:
 *   - an alias annotation of a list element stays next to the element's
 *     base type (`Tensor(a)?[]`, PyTorch: `Tensor?(a)[]`), and an element
 *     annotation without sets is not printed (PyTorch: `Tensor[]()[]`);
 *   - Device defaults print quoted (`Device d="cpu"`, PyTorch: `d=cpu`).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argcheck_internal.h"
#include "error_internal.h"
#include "schema_internal.h"

/* ---- types -------------------------------------------------------------- */

const char *disp__schema_kind_name(disp_type_kind kind) {
  switch (kind) {
    case DISP_TYPE_TENSOR: return "Tensor";
    case DISP_TYPE_INT: return "int";
    case DISP_TYPE_SYMINT: return "SymInt";
    case DISP_TYPE_FLOAT: return "float";
    case DISP_TYPE_COMPLEX: return "complex";
    case DISP_TYPE_BOOL: return "bool";
    case DISP_TYPE_STR: return "str";
    case DISP_TYPE_SCALAR: return "Scalar";
    case DISP_TYPE_SCALAR_TYPE: return "ScalarType";
    case DISP_TYPE_LAYOUT: return "Layout";
    case DISP_TYPE_MEMORY_FORMAT: return "MemoryFormat";
    case DISP_TYPE_DEVICE: return "Device";
    case DISP_TYPE_GENERATOR: return "Generator";
    case DISP_TYPE_STORAGE: return "Storage";
    case DISP_TYPE_STREAM: return "Stream";
    case DISP_TYPE_QSCHEME: return "QScheme";
    case DISP_TYPE_QUANTIZER: return "Quantizer";
    case DISP_TYPE_CAPSULE: return "Capsule";
    case DISP_TYPE_NONE: return "NoneType";
    case DISP_TYPE_ANY: return "Any";
    case DISP_TYPE_ANY_CLASS: return "AnyClassType";
    case DISP_TYPE_ANY_ENUM: return "AnyEnumType";
    case DISP_TYPE_LIST:
    case DISP_TYPE_OPTIONAL:
    case DISP_TYPE_TUPLE:
    case DISP_TYPE_DICT:
    case DISP_TYPE_FUTURE:
    case DISP_TYPE_RREF:
    case DISP_TYPE_CLASS:
    case DISP_TYPE_VAR:
      return NULL;
  }
  return NULL;
}

disp_type_kind disp__schema_fake_kind(disp_type_kind kind) {
  switch (kind) {
    case DISP_TYPE_SYMINT:
    case DISP_TYPE_SCALAR_TYPE:
    case DISP_TYPE_LAYOUT:
    case DISP_TYPE_MEMORY_FORMAT:
      return DISP_TYPE_INT;
    default:
      return kind;
  }
}

void disp__schema_print_type(disp_strbuf *b, const disp_type *t, int fake) {
  switch (t->kind) {
    case DISP_TYPE_LIST:
      disp__schema_print_type(b, t->elems[0], fake);
      disp__strbuf_append(b, "[]");
      return;
    case DISP_TYPE_OPTIONAL:
      disp__schema_print_type(b, t->elems[0], fake);
      disp__strbuf_appendc(b, '?');
      return;
    case DISP_TYPE_TUPLE:
      disp__strbuf_appendc(b, '(');
      for (size_t i = 0; i < t->num_elems; i++) {
        if (i) disp__strbuf_append(b, ", ");
        disp__schema_print_type(b, t->elems[i], fake);
      }
      disp__strbuf_appendc(b, ')');
      return;
    case DISP_TYPE_DICT:
      disp__strbuf_append(b, "Dict(");
      disp__schema_print_type(b, t->elems[0], fake);
      disp__strbuf_append(b, ", ");
      disp__schema_print_type(b, t->elems[1], fake);
      disp__strbuf_appendc(b, ')');
      return;
    case DISP_TYPE_FUTURE:
    case DISP_TYPE_RREF:
      disp__strbuf_append(b, t->kind == DISP_TYPE_FUTURE ? "Future(" : "RRef(");
      disp__schema_print_type(b, t->elems[0], fake);
      disp__strbuf_appendc(b, ')');
      return;
    case DISP_TYPE_CLASS:
    case DISP_TYPE_VAR:
      disp__strbuf_append(b, t->name);
      return;
    default:
      disp__strbuf_append(b, disp__schema_kind_name(fake ? disp__schema_fake_kind(t->kind)
                                                         : t->kind));
      return;
  }
}

/* ---- alias annotations -------------------------------------------------- */

static int sets_equal(const disp_alias_info *a) {
  if (a->num_before != a->num_after) return 0;
  for (size_t i = 0; i < a->num_before; i++) {
    int found = 0;
    for (size_t j = 0; j < a->num_after && !found; j++) {
      found = strcmp(a->before[i], a->after[j]) == 0;
    }
    if (!found) return 0;
  }
  return 1;
}

static void print_sets(disp_strbuf *b, const char **sets, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (i) disp__strbuf_appendc(b, '|');
    disp__strbuf_append(b, sets[i]);
  }
}

/* `(a|b! -> c)`; the after sets only when they differ from the before. */
static void print_alias(disp_strbuf *b, const disp_alias_info *a) {
  disp__strbuf_appendc(b, '(');
  print_sets(b, a->before, a->num_before);
  if (a->is_write) disp__strbuf_appendc(b, '!');
  if (!sets_equal(a)) {
    disp__strbuf_append(b, " -> ");
    print_sets(b, a->after, a->num_after);
  }
  disp__strbuf_appendc(b, ')');
}

/* Type with annotations: `T(alias)?`, `E(elem-alias)[N](alias)`. n is the
 * argument's fixed size, which belongs to its outermost list. */
static void print_annotated(disp_strbuf *b, const disp_type *t, const disp_alias_info *a,
                            int64_t n) {
  if (t->kind == DISP_TYPE_OPTIONAL) {
    print_annotated(b, t->elems[0], a, n);
    disp__strbuf_appendc(b, '?');
    return;
  }
  if (t->kind == DISP_TYPE_LIST) {
    print_annotated(b, t->elems[0], a ? a->contained : NULL, -1);
    if (n >= 0) disp__strbuf_appendf(b, "[%lld]", (long long)n);
    else disp__strbuf_append(b, "[]");
  } else {
    disp__schema_print_type(b, t, 0);
  }
  if (a && a->num_before) print_alias(b, a);
}

void disp__schema_print_arg_type(disp_strbuf *b, const disp_argument *a) {
  print_annotated(b, a->type, a->alias, a->n);
}

/* ---- values ------------------------------------------------------------- */

void disp__schema_print_quoted(disp_strbuf *b, const char *s, size_t len) {
  disp__strbuf_appendc(b, '"');
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    switch (c) {
      case '\\': disp__strbuf_append(b, "\\\\"); break;
      case '\'': disp__strbuf_append(b, "\\'"); break;
      case '"': disp__strbuf_append(b, "\\\""); break;
      case '\a': disp__strbuf_append(b, "\\a"); break;
      case '\b': disp__strbuf_append(b, "\\b"); break;
      case '\f': disp__strbuf_append(b, "\\f"); break;
      case '\n': disp__strbuf_append(b, "\\n"); break;
      case '\r': disp__strbuf_append(b, "\\r"); break;
      case '\t': disp__strbuf_append(b, "\\t"); break;
      case '\v': disp__strbuf_append(b, "\\v"); break;
      default:
        if (c > 0x1f && c < 0x7f) {
          disp__strbuf_appendc(b, (char)c);
        } else {
          /* PyTorch writes 3 octal digits (of a signed char, which garbles
           * bytes >= 0x80; the unsigned value is used here). */
          disp__strbuf_appendf(b, "\\%03o", c);
        }
    }
  }
  disp__strbuf_appendc(b, '"');
}

/* A double as PyTorch's IValue repr: integral values below 1e10 as `1.`
 * (`-0.` for negative zero), else 17 significant digits (%.17g). An
 * integral value from 1e10 to 1e17 then has no '.' or 'e' and reads back as
 * an int, unless the argument's type makes every number a float (`float`,
 * `float[]`); elsewhere (`Scalar`, `float?`, ...) it gets a '.' so that it
 * reads back as the same float, where 1.13 prints it without one. */
static void print_double(disp_strbuf *b, double d, int float_typed) {
  int c = fpclassify(d);
  if ((c == FP_NORMAL || c == FP_ZERO) && fabs(d) < 1e10) {
    int64_t i = (int64_t)d;
    if ((double)i == d) {
      if (i == 0 && signbit(d)) disp__strbuf_append(b, "-0.");
      else disp__strbuf_appendf(b, "%lld.", (long long)i);
      return;
    }
  }
  char buf[64];
  snprintf(buf, sizeof buf, "%.17g", d);
  /* A locale may use another decimal point; the schema language uses '.'.
   * %g writes only digits, sign, 'e' and the point, so anything else is the
   * point (possibly several bytes). */
  size_t o = 0;
  int in_point = 0;
  for (size_t i = 0; buf[i]; i++) {
    char ch = buf[i];
    int plain = (ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == 'e' ||
                (ch >= 'a' && ch <= 'z');
    if (plain) {
      buf[o++] = ch;
      in_point = 0;
    } else if (!in_point) {
      buf[o++] = '.';
      in_point = 1;
    }
  }
  buf[o] = '\0';
  disp__strbuf_append(b, buf);
  if (!float_typed && !strpbrk(buf, ".e")) disp__strbuf_appendc(b, '.');
}

/* float_typed: the argument's type reads every number back as a float. */
static void print_value(disp_strbuf *b, const disp_default *v, int float_typed) {
  switch (v->kind) {
    case DISP_DEFAULT_NONE: disp__strbuf_append(b, "None"); return;
    case DISP_DEFAULT_BOOL: disp__strbuf_append(b, v->i ? "True" : "False"); return;
    case DISP_DEFAULT_INT: disp__strbuf_appendf(b, "%lld", (long long)v->i); return;
    case DISP_DEFAULT_FLOAT: print_double(b, v->f, float_typed); return;
    case DISP_DEFAULT_STRING:
    case DISP_DEFAULT_DEVICE: disp__schema_print_quoted(b, v->str, v->str_len); return;
    case DISP_DEFAULT_LIST:
      disp__strbuf_appendc(b, '[');
      for (size_t i = 0; i < v->num_items; i++) {
        if (i) disp__strbuf_append(b, ", ");
        print_value(b, &v->items[i], float_typed);
      }
      disp__strbuf_appendc(b, ']');
      return;
  }
}

void disp__schema_print_default(disp_strbuf *b, const disp_argument *a) {
  const disp_default *v = a->default_value;
  const disp_type *t = a->type;
  const disp_type *unopt = t->kind == DISP_TYPE_OPTIONAL ? t->elems[0] : t;
  if ((t->kind == DISP_TYPE_STR || unopt->kind == DISP_TYPE_STR) &&
      v->kind == DISP_DEFAULT_STRING) {
    disp__schema_print_quoted(b, v->str, v->str_len);
    return;
  }
  /* PyTorch writes an int list whose items are all equal as one number, as
   * native_functions.yaml does (`int[2] stride=1`). Only `int` itself:
   * SymInt[] and ScalarType[] print their lists in full. 1.13 does so for
   * any such list, but the number reads back as N copies for `int[N]` and
   * not at all for `int[]` (its parser wants '['), so `int[] x=[1, 1]` and
   * `int[3] x=[7, 7]` would not survive a print and a parse: those keep
   * their full list here, every other default prints as in 1.13. */
  if (t->kind == DISP_TYPE_LIST && t->elems[0]->kind == DISP_TYPE_INT &&
      v->kind == DISP_DEFAULT_LIST && v->num_items > 1 && a->n == (int64_t)v->num_items) {
    int same = 1;
    for (size_t i = 1; same && i < v->num_items; i++) same = v->items[i].i == v->items[0].i;
    if (same) {
      print_value(b, &v->items[0], 0);
      return;
    }
  }
  disp_type_kind k = disp__schema_fake_kind(t->kind);
  if (k == DISP_TYPE_LIST) k = disp__schema_fake_kind(t->elems[0]->kind);
  print_value(b, v, k == DISP_TYPE_FLOAT);
}

void disp__schema_print_argument(disp_strbuf *b, const disp_argument *a) {
  disp__schema_print_arg_type(b, a);
  if (a->name[0]) {
    disp__strbuf_appendc(b, ' ');
    disp__strbuf_append(b, a->name);
  }
  if (a->default_value) {
    disp__strbuf_appendc(b, '=');
    disp__schema_print_default(b, a);
  }
}

void disp__schema_print(disp_strbuf *b, const disp_schema *s) {
  disp__strbuf_append(b, s->name);
  if (s->overload[0]) {
    disp__strbuf_appendc(b, '.');
    disp__strbuf_append(b, s->overload);
  }
  disp__strbuf_appendc(b, '(');
  int seen_kwarg_only = 0;
  for (size_t i = 0; i < s->num_args; i++) {
    if (i) disp__strbuf_append(b, ", ");
    if (s->args[i].kwarg_only && !seen_kwarg_only) {
      disp__strbuf_append(b, "*, ");
      seen_kwarg_only = 1;
    }
    disp__schema_print_argument(b, &s->args[i]);
  }
  if (s->is_vararg) {
    if (s->num_args) disp__strbuf_append(b, ", ");
    disp__strbuf_append(b, "...");
  }
  disp__strbuf_append(b, ") -> ");

  /* Parentheses unless there is exactly one return (and no `...`) or only
   * `...`; a single return that itself starts with '(' (a tuple type, e.g.
   * `((str, t)[])`) needs them anyway, or it would read as a return list. */
  int need_paren = !((s->num_rets == 1 && !s->is_varret) || (s->num_rets == 0 && s->is_varret));
  if (s->num_rets == 1 && !need_paren) {
    const disp_type *t = s->rets[0].type;
    while (t->kind == DISP_TYPE_LIST || t->kind == DISP_TYPE_OPTIONAL) t = t->elems[0];
    if (t->kind == DISP_TYPE_TUPLE) need_paren = 1;
  }
  if (need_paren) disp__strbuf_appendc(b, '(');
  for (size_t i = 0; i < s->num_rets; i++) {
    if (i) disp__strbuf_append(b, ", ");
    disp__schema_print_argument(b, &s->rets[i]);
  }
  if (s->is_varret) {
    if (s->num_rets) disp__strbuf_append(b, ", ");
    disp__strbuf_append(b, "...");
  }
  if (need_paren) disp__strbuf_appendc(b, ')');
}

char *disp_schema_to_string(const disp_schema *s) {
  DISP_REFUSE_NULL_PTR(s);
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__schema_print(&b, s);
  return disp__strbuf_steal(&b); /* NULL when the buffer ran out of memory */
}

/* ---- accessors ---------------------------------------------------------- */

const char *disp_schema_name(const disp_schema *s) {
  DISP_REFUSE_NULL_PTR(s);
  return s->name;
}
const char *disp_schema_base_name(const disp_schema *s) {
  DISP_REFUSE_NULL_PTR(s);
  return s->base_name;
}
const char *disp_schema_namespace(const disp_schema *s) {
  DISP_REFUSE_NULL_PTR(s);
  return s->ns;
}
const char *disp_schema_overload(const disp_schema *s) {
  DISP_REFUSE_NULL_PTR(s);
  return s->overload;
}
const char *disp_schema_qualified_name(const disp_schema *s) {
  DISP_REFUSE_NULL_PTR(s);
  return s->qualified;
}
size_t disp_schema_num_arguments(const disp_schema *s) { return s ? s->num_args : 0; }
size_t disp_schema_num_returns(const disp_schema *s) { return s ? s->num_rets : 0; }
int disp_schema_is_vararg(const disp_schema *s) { return s ? s->is_vararg : 0; }
int disp_schema_is_varret(const disp_schema *s) { return s ? s->is_varret : 0; }

static const disp_argument *arg_at(const disp_schema *s, size_t i) {
  return s && i < s->num_args ? &s->args[i] : NULL;
}
static const disp_argument *ret_at(const disp_schema *s, size_t i) {
  return s && i < s->num_rets ? &s->rets[i] : NULL;
}

/* arg_at / ret_at for the pointer accessors: past the end is NULL with a
 * message naming `fn` (Note [NULL arguments] (b)). */
static const disp_argument *arg_or_fail(const disp_schema *s, size_t i, const char *fn) {
  if (i < s->num_args) return &s->args[i];
  disp__fail(DISP_ERR_INVALID_ARG, "%s: index %zu is out of range for %zu argument%s", fn, i, s->num_args,
             s->num_args == 1 ? "" : "s");
  return NULL;
}
static const disp_argument *ret_or_fail(const disp_schema *s, size_t i, const char *fn) {
  if (i < s->num_rets) return &s->rets[i];
  disp__fail(DISP_ERR_INVALID_ARG, "%s: index %zu is out of range for %zu return%s", fn, i, s->num_rets,
             s->num_rets == 1 ? "" : "s");
  return NULL;
}

static int is_write(const disp_argument *a) { return a && a->alias && a->alias->is_write; }

static const char *alias_set(const disp_argument *a) {
  if (!a) return NULL;
  for (const disp_alias_info *info = a->alias; info; info = info->contained) {
    if (info->num_before) return info->before[0];
  }
  return NULL;
}

const char *disp_schema_argument_name(const disp_schema *s, size_t i) {
  DISP_REFUSE_NULL_PTR(s);
  const disp_argument *a = arg_or_fail(s, i, "disp_schema_argument_name");
  return a ? a->name : NULL;
}
const disp_type *disp_schema_argument_type(const disp_schema *s, size_t i) {
  DISP_REFUSE_NULL_PTR(s);
  const disp_argument *a = arg_or_fail(s, i, "disp_schema_argument_type");
  return a ? a->type : NULL;
}
const char *disp_schema_argument_type_str(const disp_schema *s, size_t i) {
  DISP_REFUSE_NULL_PTR(s);
  const disp_argument *a = arg_or_fail(s, i, "disp_schema_argument_type_str");
  return a ? a->type_str : NULL;
}
int64_t disp_schema_argument_list_size(const disp_schema *s, size_t i) {
  const disp_argument *a = arg_at(s, i);
  return a ? a->n : -1;
}
int disp_schema_argument_kwarg_only(const disp_schema *s, size_t i) {
  const disp_argument *a = arg_at(s, i);
  return a ? a->kwarg_only : 0;
}
int disp_schema_argument_has_default(const disp_schema *s, size_t i) {
  const disp_argument *a = arg_at(s, i);
  return a && a->default_value;
}
const char *disp_schema_argument_default_str(const disp_schema *s, size_t i) {
  DISP_REFUSE_NULL_PTR(s);
  const disp_argument *a = arg_or_fail(s, i, "disp_schema_argument_default_str");
  return a ? a->default_str : NULL;
}
int disp_schema_argument_is_write(const disp_schema *s, size_t i) { return is_write(arg_at(s, i)); }
const char *disp_schema_argument_alias_set(const disp_schema *s, size_t i) {
  DISP_REFUSE_NULL_PTR(s);
  const disp_argument *a = arg_or_fail(s, i, "disp_schema_argument_alias_set");
  return a ? alias_set(a) : NULL;
}

const char *disp_schema_return_name(const disp_schema *s, size_t i) {
  DISP_REFUSE_NULL_PTR(s);
  const disp_argument *a = ret_or_fail(s, i, "disp_schema_return_name");
  return a ? a->name : NULL;
}
const disp_type *disp_schema_return_type(const disp_schema *s, size_t i) {
  DISP_REFUSE_NULL_PTR(s);
  const disp_argument *a = ret_or_fail(s, i, "disp_schema_return_type");
  return a ? a->type : NULL;
}
const char *disp_schema_return_type_str(const disp_schema *s, size_t i) {
  DISP_REFUSE_NULL_PTR(s);
  const disp_argument *a = ret_or_fail(s, i, "disp_schema_return_type_str");
  return a ? a->type_str : NULL;
}
int64_t disp_schema_return_list_size(const disp_schema *s, size_t i) {
  const disp_argument *a = ret_at(s, i);
  return a ? a->n : -1;
}
int disp_schema_return_is_write(const disp_schema *s, size_t i) { return is_write(ret_at(s, i)); }
const char *disp_schema_return_alias_set(const disp_schema *s, size_t i) {
  DISP_REFUSE_NULL_PTR(s);
  const disp_argument *a = ret_or_fail(s, i, "disp_schema_return_alias_set");
  return a ? alias_set(a) : NULL;
}

/* No type has kind None's place to fill: a NULL type reads as `None`. */
disp_type_kind disp_schema_type_kind(const disp_type *t) { return t ? t->kind : DISP_TYPE_NONE; }
size_t disp_schema_type_num_elements(const disp_type *t) { return t ? t->num_elems : 0; }
const disp_type *disp_schema_type_element(const disp_type *t, size_t i) {
  DISP_REFUSE_NULL_PTR(t);
  if (i < t->num_elems) return t->elems[i];
  disp__fail(DISP_ERR_INVALID_ARG, "disp_schema_type_element: index %zu is out of range for %zu element%s", i,
             t->num_elems, t->num_elems == 1 ? "" : "s");
  return NULL;
}
const char *disp_schema_type_name(const disp_type *t) {
  DISP_REFUSE_NULL_PTR(t);
  return t->name ? t->name : disp__schema_kind_name(t->kind);
}
char *disp_schema_type_str(const disp_type *t) {
  DISP_REFUSE_NULL_PTR(t);
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__schema_print_type(&b, t, 0);
  return disp__strbuf_steal(&b);
}
