/*
 * register.c - the built-in Autograd kernels: every operator with a
 * derivative formula gets the shared recording kernel (record.c), every
 * other one (without a CompositeImplicitAutograd kernel) its generated
 * pass-through.
 */
#include <stdlib.h>
#include <string.h>

#include "aten_kernels.h"
#include "error_internal.h"
#include "record_internal.h"

static const ag_formula_set *const sets[] = {
    &disp__ag_formulas_pointwise, &disp__ag_formulas_reduce, &disp__ag_formulas_linalg,
    &disp__ag_formulas_nn,        &disp__ag_formulas_shape,  &disp__ag_formulas_select,
    &disp__ag_formulas_copy,      &disp__ag_formulas_index,  &disp__ag_formulas_strided,
};

static const ag_formula *formula_for(const char *op) {
  for (size_t s = 0; s < sizeof sets / sizeof *sets; s++)
    for (size_t i = 0; i < sets[s]->n; i++)
      if (!strcmp(sets[s]->formulas[i].op, op)) return &sets[s]->formulas[i];
  return NULL;
}

static void info_free(void *p) {
  ag_op_info *info = p;
  if (disp__aten_autograd_info[info->id] == info) disp__aten_autograd_info[info->id] = NULL;
  free(info);
}

/* The recording kernel for f: boxed calls reach record.c directly, typed
 * calls the generated pass-through, which hands over when a gradient is
 * wanted (disp__aten_autograd_info). */
static disp_status impl_formula(disp_library *m, const ag_formula *f, const disp__ag_passthrough *p) {
  const disp_op *op;
  disp_status st = disp_op_find(f->op, &op);
  if (st != DISP_OK) return st;
  ag_op_info *info = malloc(sizeof *info);
  if (!info) return disp__fail(DISP_ERR_NO_MEMORY, "autograd: out of memory registering %s", f->op);
  if (disp__ag_info_init(info, op, f)) {
    free(info);
    return disp__fail(DISP_ERR_SCHEMA, "autograd: the formula for %s names an argument its schema lacks", f->op);
  }
  info->id = p->id;
  disp_kernel k = disp_kernel_boxed(disp__ag_record_kernel, info, info_free);
  k.unboxed = p->fn;
  k.flags = DISP_KERNEL_WITH_KEYSET;
  disp__aten_autograd_info[p->id] = info;
  st = disp_library_impl(m, f->op, k, NULL);
  if (st != DISP_OK) {
    disp__aten_autograd_info[p->id] = NULL;
    free(info);
  }
  return st;
}

void disp__aten_impl_autograd(disp_library *m) {
  for (size_t i = 0; i < disp__aten_autograd_passthrough_count; i++) {
    const disp__ag_passthrough *p = &disp__aten_autograd_passthroughs[i];
    const ag_formula *f = formula_for(p->op);
    if (f) impl_formula(m, f, p);
    else disp_library_impl(m, p->op, disp_kernel_unboxed(p->fn, DISP_KERNEL_WITH_KEYSET), NULL);
  }
}

int disp__ag_requires_grad(const disp_tensor *t) {
  return t && disp_tensor_requires_grad(t) && disp_grad_mode_enabled();
}

int disp__ag_list_requires_grad(disp_tensor_list l) {
  for (size_t i = 0; i < l.len; i++)
    if (disp__ag_requires_grad(l.data[i])) return 1;
  return 0;
}
