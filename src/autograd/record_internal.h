/*
 * record_internal.h - a formula bound to its operator, and the node that
 * recording it makes (record.c, formula_node.c, register.c).
 */
#ifndef DISP_AUTOGRAD_RECORD_INTERNAL_H
#define DISP_AUTOGRAD_RECORD_INTERNAL_H

#include "formula.h"

#define AG_MAX_POS 8

/* A formula's names resolved against its operator's schema, once. */
typedef struct ag_op_info {
  const ag_formula *f;   /* NULL: a differentiable operator without one (the fallback's modes) */
  const disp_op *op;
  const char *name;      /* the operator's qualified name */
  int nargs, nrets;
  int ndiff, nsaved;
  int diff[AG_MAX_POS];  /* argument positions of the differentiable inputs */
  int saved[AG_MAX_POS]; /* >= 0: an argument; -1 - k: output k */
  int saved_for[AG_MAX_POS]; /* >= 0: saved only when that edge's gradient is wanted; -1: always */
  uint32_t written;      /* arguments the op writes (Tensor(a!)) */
  uint32_t nondiff;      /* outputs that never get a history */
  unsigned char list_input; /* a differentiable Tensor[]: one edge per element */
  int id;                /* ATEN_ID of a built-in operator */
} ag_op_info;

/* Nonzero when a name of f is not in the schema (or too many). */
int disp__ag_info_init(ag_op_info *info, const disp_op *op, const ag_formula *f);

/* A formula node's state. */
typedef struct ag_formula_state {
  const ag_op_info *info;
  disp_stack *args_stack; /* copies of the arguments, tensors as None */
  ag_saved_var saved[AG_MAX_POS];
} ag_formula_state;

/* A node for info's formula with num_next edges (unset); NULL on OOM. */
disp_node *disp__formula_node_new(const ag_op_info *info, uint32_t num_next);

/* The shared Autograd kernel, disp__ag_record_kernel (user_data: the
 * ag_op_info), is declared in the generated aten_kernels.h. */
#include "aten_kernels.h"

/* The autograd fallback with its modes (fallback.c); installed into the
 * dispatcher's built-in fallback by disp__ag_install_fallback. */
disp_status disp__ag_fallback(const disp_op *op, disp_keyset ks, disp_stack *st, void *user_data);
void disp__ag_install_fallback(void);

/* The kernel to register on Autograd for a not-differentiable op: a
 * hand-written check wrapping `passthrough` (manual.c: resize_, set_), or
 * passthrough itself. */
disp_fn disp__ag_manual_kernel(const char *op, disp_fn passthrough);

/* Runs hooks of `list` watching gradient input watch_nr (-1: all) on *grad. */
/* The hooks registered when the run starts run in order; one may remove
 * itself or any other (skipped from then on) or add one (it runs from the
 * next pass on). A replacement gradient must keep the size, dtype and
 * device of the one it replaces (1.13's check_single_result). */
disp_status disp__hooks_run(ag_hook **head, int watch_nr, disp_tensor **grad);

#endif
