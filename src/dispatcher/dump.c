/*
 * dump.c - PyTorch's dumpComputedTable() and dumpState() for an operator.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "argcheck_internal.h"
#include "registry_internal.h"
#include "schema_internal.h"
#include "strbuf_internal.h"

static void table_line(disp_strbuf *b, disp_key k, const disp_kernel_entry *e, disp_provenance p) {
  disp__strbuf_appendf(b, "%s: %s%s [%s]\n", disp_key_name(k),
                       (e->flags & DISP_KERNEL_FALLTHROUGH) ? "fallthrough " : "", e->debug,
                       disp__provenance_name(p));
}

char *disp_op_dump_table(const disp_op *op) {
  DISP_REFUSE_NULL_PTR(op);
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__lock();
  for (int i = 0; i < DISP_NUM_RUNTIME_ENTRIES; i++) {
    disp_key k = disp_key_for_table_index(i);
    disp_provenance p;
    const disp_kernel_entry *e = disp__op_compute_entry(op, k, &p);
    if (e) table_line(&b, k, e, p);
  }
  disp__unlock();
  return disp__strbuf_steal(&b);
}

char *disp_fallback_dump(void) {
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__lock();
  for (int i = 1; i < DISP_NUM_RUNTIME_ENTRIES; i++) {
    const disp_fallback_slot *fb = &disp__registry.fallbacks[i];
    const disp_kernel_entry *e = fb->user ? fb->user : fb->builtin;
    if (e) table_line(&b, disp_key_for_table_index(i), e, DISP_PROV_FALLBACK);
  }
  disp__unlock();
  return disp__strbuf_steal(&b);
}

char *disp_op_dump_state(const disp_op *op) {
  DISP_REFUSE_NULL_PTR(op);
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__lock();
  disp__strbuf_appendf(&b, "name: %s\n", op->name);
  const disp_schema *s = atomic_load(&((disp_op *)op)->schema);
  if (s) {
    char *text = disp_schema_to_string(s);
    disp__strbuf_appendf(&b, "schema: %s\n", text ? text : "?");
    disp__free(text);
    disp__strbuf_appendf(&b, "debug: %s\n", op->def->debug);
    disp__strbuf_append(&b, "alias analysis kind: FROM_SCHEMA\n");
  } else {
    disp__strbuf_append(&b, "schema: (none)\n");
  }
  /* Keys in enum order (functionality, per-backend, alias), like PyTorch. */
  for (int k = 0; k < DISP_KEY_COUNT; k++) {
    int i = 0;
    for (const disp_kernel_node *n = op->kernels[k]; n; n = n->next, i++) {
      const disp_kernel_entry *e = n->entry;
      char *inferred = e->schema ? disp_schema_to_string(e->schema) : NULL;
      disp__strbuf_appendf(&b, "%s%s%s: %s :: %s [ %s%s%s]\n", disp_key_name((disp_key)k),
                           disp_key_is_alias((disp_key)k) ? "[alias]" : "",
                           i > 0 ? " (inactive)" : "", e->debug, inferred ? inferred : "(none)",
                           (e->flags & DISP_KERNEL_FALLTHROUGH) ? "fallthrough " : "",
                           e->boxed ? "boxed " : "", e->unboxed ? "unboxed " : "");
      disp__free(inferred);
    }
  }
  disp__unlock();
  return disp__strbuf_steal(&b);
}
