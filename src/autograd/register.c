/*
 * register.c - the built-in Autograd kernels, one for every operator
 * without a CompositeImplicitAutograd kernel, as 1.13's VariableType: an
 * operator with a derivative formula gets the shared recording kernel
 * (record.c), a differentiable one without a formula the autograd
 * fallback's node, and a non-differentiable one its generated pass-through
 * alone, which runs the operator below ADInplaceOrView (or below autograd,
 * for views and in-place operators) as 1.13's does.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "aten_kernels.h"
#include "error_internal.h"
#include "record_internal.h"

/* The manifest's formulas and non-differentiable operators (formula.h). */
static const ag_formula *formula_for(const char *op) {
  for (size_t i = 0; i < disp__ag_formula_count; i++)
    if (!strcmp(disp__ag_formulas[i].op, op)) return &disp__ag_formulas[i];
  return NULL;
}

static void info_free(void *p) {
  ag_op_info *info = p;
  if (disp__aten_autograd_info[info->id] == info) disp__aten_autograd_info[info->id] = NULL;
  disp__free(info);
}

/* Built-in operators 1.13 does not differentiate (the manifest's
 * NOT_DIFFERENTIABLE rows) get the pass-through alone (derivatives.yaml has
 * no entry, or marks every output non_differentiable; detach's view simply
 * has no graph). Not a fallthrough: the pass-through's guard is what leaves
 * e.g. zeros_like's result at version 0, although its kernel zeroes it in
 * place. */
static int is_not_differentiable(const char *op) {
  for (size_t i = 0; i < disp__ag_not_differentiable_count; i++)
    if (!strcmp(disp__ag_not_differentiable[i], op)) return 1;
  return 0;
}

/* The recording kernel for f: boxed calls reach record.c directly, typed
 * calls the generated pass-through, which hands over when a gradient is
 * wanted (disp__aten_autograd_info). */
static disp_status impl_formula(disp_library *m, const ag_formula *f, const disp__ag_passthrough *p) {
  const disp_op *op;
  disp_status st = disp_op_find(p->op, &op);
  if (st != DISP_OK) return st;
  ag_op_info *info = disp__calloc(1, sizeof *info);
  if (!info) return disp__fail(DISP_ERR_NO_MEMORY, "autograd: out of memory registering %s", p->op);
  if (f && disp__ag_info_init(info, op, f)) {
    disp__free(info);
    return disp__fail(DISP_ERR_SCHEMA, "autograd: the formula for %s names an argument its schema lacks", f->op);
  }
  info->id = p->id;
  disp_kernel k = disp_kernel_boxed(disp__ag_record_kernel, info, info_free);
  k.unboxed = p->fn;
  k.flags = DISP_KERNEL_WITH_KEYSET;
  disp__aten_autograd_info[p->id] = info;
  st = disp_library_impl(m, p->op, k, NULL);
  if (st != DISP_OK) {
    disp__aten_autograd_info[p->id] = NULL;
    disp__free(info);
  }
  return st;
}

void disp__aten_impl_autograd(disp_library *m) {
  for (size_t i = 0; i < disp__aten_autograd_passthrough_count; i++) {
    const disp__ag_passthrough *p = &disp__aten_autograd_passthroughs[i];
    if (is_not_differentiable(p->op))
      disp_library_impl(m, p->op, disp_kernel_unboxed(disp__ag_manual_kernel(p->op, p->fn), DISP_KERNEL_WITH_KEYSET),
                        NULL);
    else impl_formula(m, formula_for(p->op), p);
  }
  disp__ag_install_fallback();
}

int disp__ag_requires_grad(const disp_tensor *t) {
  return disp__ag_requires(t) && disp_grad_mode_enabled();
}

int disp__ag_list_requires_grad(disp_tensor_list l) {
  for (size_t i = 0; i < l.len; i++)
    if (disp__ag_requires_grad(l.data[i])) return 1;
  return 0;
}
