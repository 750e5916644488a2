/*
 * schema_compare.c - do two schemas describe the same calling convention?
 *
 * PyTorch's findSchemaDifferences (op_registration/infer_schema.cpp), used
 * when a kernel's schema (inferred from its C++ signature, or given with
 * it) is checked against the operator's definition. Only the number and
 * types of arguments and returns matter: names, defaults, alias annotations,
 * fixed list sizes and the overload name do not. Types are compared as
 * Argument::type() sees them, so SymInt, ScalarType, Layout and
 * MemoryFormat equal `int`, and the messages print them as `int`.
 *
 * disp__schema_equal is the strict comparison (every part, defaults
 * included) that a parse -> print -> parse round trip must pass.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error_internal.h"
#include "schema_internal.h"

int disp__schema_types_equal(const disp_type *a, const disp_type *b) {
  if (a == b) return 1;
  if (disp__schema_fake_kind(a->kind) != disp__schema_fake_kind(b->kind)) return 0;
  if (a->num_elems != b->num_elems) return 0;
  if (a->kind == DISP_TYPE_CLASS || a->kind == DISP_TYPE_VAR) {
    return strcmp(a->name, b->name) == 0;
  }
  for (size_t i = 0; i < a->num_elems; i++) {
    if (!disp__schema_types_equal(a->elems[i], b->elems[i])) return 0;
  }
  return 1;
}

/* "Type mismatch in argument 2: int vs Tensor" for the first mismatch in
 * the lists, into b; 0 when all types are equal. */
static int first_mismatch(disp_strbuf *b, const char *what, const disp_argument *lhs,
                          const disp_argument *rhs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (disp__schema_types_equal(lhs[i].type, rhs[i].type)) continue;
    disp__strbuf_appendf(b, "Type mismatch in %s %zu: ", what, i + 1);
    disp__schema_print_type(b, lhs[i].type, 1);
    disp__strbuf_append(b, " vs ");
    disp__schema_print_type(b, rhs[i].type, 1);
    return 1;
  }
  return 0;
}

disp_status disp__schema_check_compatible(const disp_schema *expected,
                                          const disp_schema *given,
                                          char **reason_out) {
  if (!reason_out) return disp__fail(DISP_ERR_INVALID_ARG, "reason output pointer is NULL");
  *reason_out = NULL;
  if (!expected || !given) return disp__fail(DISP_ERR_INVALID_ARG, "schema is NULL");

  disp_strbuf b;
  disp__strbuf_init(&b);
  /* The order and wording are PyTorch's, down to the period that only the
   * argument-count message has. */
  if (expected->num_args != given->num_args) {
    disp__strbuf_appendf(&b, "The number of arguments is different. %zu vs %zu.",
                         expected->num_args, given->num_args);
  } else if (expected->num_rets != given->num_rets) {
    disp__strbuf_appendf(&b, "The number of returns is different. %zu vs %zu",
                         expected->num_rets, given->num_rets);
  } else if (!first_mismatch(&b, "argument", expected->args, given->args,
                             expected->num_args)) {
    first_mismatch(&b, "return", expected->rets, given->rets, expected->num_rets);
  }
  if (b.len == 0 && !b.oom) return DISP_OK;
  char *reason = disp__strbuf_steal(&b);
  if (!reason) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory comparing schemas");
  *reason_out = reason;
  return disp__fail(DISP_ERR_MISMATCH, "%s", reason);
}

/* ---- full equality (PyTorch's FunctionSchema operator==) ---------------- */

static int real_types_equal(const disp_type *a, const disp_type *b) {
  if (a->kind != b->kind || a->num_elems != b->num_elems) return 0;
  if ((a->name || b->name) && (!a->name || !b->name || strcmp(a->name, b->name) != 0)) return 0;
  for (size_t i = 0; i < a->num_elems; i++)
    if (!real_types_equal(a->elems[i], b->elems[i])) return 0;
  return 1;
}

int disp__schema_defaults_equal(const disp_default *a, const disp_default *b) {
  if (!a || !b) return a == b;
  if (a->kind != b->kind) return 0;
  switch (a->kind) {
    case DISP_DEFAULT_NONE: return 1;
    case DISP_DEFAULT_BOOL:
    case DISP_DEFAULT_INT: return a->i == b->i;
    case DISP_DEFAULT_FLOAT:
      /* -0. and 0. print differently, so they differ here too. */
      return a->f == b->f && signbit(a->f) == signbit(b->f);
    case DISP_DEFAULT_STRING:
    case DISP_DEFAULT_DEVICE:
      return a->str_len == b->str_len && memcmp(a->str, b->str, a->str_len) == 0;
    case DISP_DEFAULT_LIST:
      if (a->num_items != b->num_items) return 0;
      for (size_t i = 0; i < a->num_items; i++)
        if (!disp__schema_defaults_equal(&a->items[i], &b->items[i])) return 0;
      return 1;
  }
  return 0;
}

static int name_sets_equal(const char **a, size_t na, const char **b, size_t nb) {
  if (na != nb) return 0;
  for (size_t i = 0; i < na; i++)
    if (strcmp(a[i], b[i]) != 0) return 0;
  return 1;
}

static int alias_equal(const disp_alias_info *a, const disp_alias_info *b) {
  if (!a || !b) return a == b;
  return a->is_write == b->is_write && name_sets_equal(a->before, a->num_before, b->before, b->num_before) &&
         name_sets_equal(a->after, a->num_after, b->after, b->num_after) &&
         alias_equal(a->contained, b->contained);
}

/* Which part of two arguments differs ("name", "type", ...); NULL if none. */
static const char *argument_difference(const disp_argument *a, const disp_argument *b) {
  if (strcmp(a->name, b->name) != 0) return "name";
  if (!real_types_equal(a->type, b->type)) return "type";
  if (a->n != b->n) return "list size";
  if (!disp__schema_defaults_equal(a->default_value, b->default_value)) return "default value";
  if (a->kwarg_only != b->kwarg_only) return "kwarg-only marker";
  if (!alias_equal(a->alias, b->alias)) return "alias annotation";
  return NULL;
}

static int arguments_differ(disp_strbuf *why, const char *what, const disp_argument *a,
                            const disp_argument *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const char *part = argument_difference(&a[i], &b[i]);
    if (!part) continue;
    disp__strbuf_appendf(why, "%s %zu differs in its %s: ", what, i + 1, part);
    disp__schema_print_argument(why, &a[i]);
    disp__strbuf_append(why, " vs ");
    disp__schema_print_argument(why, &b[i]);
    return 1;
  }
  return 0;
}

int disp__schema_equal(const disp_schema *a, const disp_schema *b, disp_strbuf *why) {
  disp_strbuf scratch;
  disp__strbuf_init(&scratch);
  disp_strbuf *w = why ? why : &scratch;
  size_t before = w->len;
  if (strcmp(a->name, b->name) != 0 || strcmp(a->overload, b->overload) != 0)
    disp__strbuf_appendf(w, "names differ: %s vs %s", a->qualified, b->qualified);
  else if (a->num_args != b->num_args || a->num_rets != b->num_rets)
    disp__strbuf_appendf(w, "%zu arguments and %zu returns vs %zu and %zu", a->num_args, a->num_rets,
                         b->num_args, b->num_rets);
  else if (a->is_vararg != b->is_vararg || a->is_varret != b->is_varret)
    disp__strbuf_append(w, "varargs or varrets differ");
  else if (!arguments_differ(w, "argument", a->args, b->args, a->num_args))
    arguments_differ(w, "return", a->rets, b->rets, a->num_rets);
  int equal = w->len == before && !w->oom;
  disp__strbuf_free(&scratch);
  return equal;
}
