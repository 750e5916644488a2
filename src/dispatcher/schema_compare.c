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
 */
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
