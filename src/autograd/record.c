/*
 * record.c - the Autograd kernel every derivative formula shares (what
 * PyTorch generates per operator into VariableType), and the registration
 * of the built-in Autograd kernels.
 *
 * For a call whose differentiable inputs require grad (in grad mode) it:
 * refuses in-place updates of leaves that require grad, builds the node
 * with one edge per differentiable input, saves what the formula needs,
 * runs the operator below autograd, and makes the node the grad_fn of the
 * floating-point outputs. Otherwise it only redispatches below autograd.
 */
#include <stdlib.h>
#include <string.h>

#include "aten_kernels.h"
#include "error_internal.h"
#include "formula.h"
#include "record_internal.h"
#include "tls_internal.h"

disp_keyset disp__ag_below(disp_keyset ks) { return disp_keyset_and(ks, disp_keyset_after_autograd()); }

/* ---- what a formula's names mean for its operator ------------------------ */

static int arg_index(const disp_schema *s, const char *name, size_t len) {
  for (size_t i = 0; i < disp_schema_num_arguments(s); i++) {
    const char *a = disp_schema_argument_name(s, i);
    if (strlen(a) == len && !strncmp(a, name, len)) return (int)i;
  }
  return -1;
}

/* "result" is output 0, "resultN" output N; anything else an argument. */
static int parse_name(const disp_schema *s, const char *name, size_t len, int *pos) {
  if (len >= 6 && !strncmp(name, "result", 6)) {
    int k = len == 6 ? 0 : atoi(name + 6);
    if (k < 0 || (size_t)k >= disp_schema_num_returns(s)) return 1;
    *pos = -1 - k;
    return 0;
  }
  *pos = arg_index(s, name, len);
  return *pos < 0;
}

/* Splits a comma-separated list into positions; nonzero on a bad name. */
static int parse_list(const disp_schema *s, const char *list, int *pos, int max, int *n) {
  *n = 0;
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (*n == max || parse_name(s, p, len, &pos[*n])) return 1;
    (*n)++;
    p = e ? e + 1 : NULL;
  }
  return 0;
}

/* The differentiable input (edge) named name[0..len), or -1. */
static int diff_index(const disp_schema *s, const ag_op_info *info, const char *name, size_t len) {
  int pos = arg_index(s, name, len);
  for (int j = 0; pos >= 0 && j < info->ndiff; j++)
    if (info->diff[j] == pos) return j;
  return -1;
}

/* The saved names, each with its optional "@input" guard (Note [Saving
 * only what a gradient uses]); nonzero on a bad name or a guard on an
 * output. Precondition: info->diff parsed. */
static int parse_saved(const disp_schema *s, ag_op_info *info, const char *list) {
  char item[64];
  int n = 0;
  for (const char *p = list; p && *p; n++) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (n == AG_MAX_POS || len >= sizeof item) return 1;
    memcpy(item, p, len);
    item[len] = 0;
    char *at = strchr(item, '@');
    size_t name_len = at ? (size_t)(at - item) : len;
    if (parse_name(s, item, name_len, &info->saved[n])) return 1;
    info->saved_for[n] = at ? diff_index(s, info, at + 1, strlen(at + 1)) : -1;
    if (at && (info->saved_for[n] < 0 || info->saved[n] < 0)) return 1;
    p = e ? e + 1 : NULL;
  }
  info->nsaved = n;
  return 0;
}

static int is_tensor_list(const disp_schema *s, int pos) {
  const disp_type *t = disp_schema_argument_type(s, (size_t)pos);
  return disp_schema_type_kind(t) == DISP_TYPE_LIST;
}

int disp__ag_info_init(ag_op_info *info, const disp_op *op, const ag_formula *f) {
  const disp_schema *s = disp_op_schema(op);
  memset(info, 0, sizeof *info);
  info->f = f;
  info->op = op;
  info->name = disp_op_name(op);
  info->nargs = (int)disp_schema_num_arguments(s);
  info->nrets = (int)disp_schema_num_returns(s);
  if (parse_list(s, f->inputs, info->diff, AG_MAX_POS, &info->ndiff) || parse_saved(s, info, f->saved)) return 1;
  int nd = 0, pos[AG_MAX_POS];
  if (f->nondiff && parse_list(s, f->nondiff, pos, AG_MAX_POS, &nd)) return 1;
  for (int k = 0; k < nd; k++) {
    if (pos[k] >= 0) return 1;
    info->nondiff |= 1u << (-1 - pos[k]);
  }
  for (int j = 0; j < info->ndiff; j++) {
    if (info->diff[j] < 0) return 1;
    if (is_tensor_list(s, info->diff[j])) info->list_input = 1;
  }
  /* edges of a Tensor[] input do not line up with `inputs`: no guards there (1.13 has none either) */
  for (int k = 0; k < info->nsaved; k++)
    if (info->list_input && info->saved_for[k] >= 0) return 1;
  for (int i = 0; i < info->nargs && i < 32; i++)
    if (disp_schema_argument_is_write(s, (size_t)i)) info->written |= 1u << i;
  return 0;
}

/* ---- the decision -------------------------------------------------------- */

static const disp_value *arg_at(disp_stack *st, const ag_op_info *info, int pos) {
  return disp_stack_at(st, disp_stack_size(st) - (size_t)info->nargs + (size_t)pos);
}

static int value_requires_grad(const disp_value *v) {
  if (v->tag == DISP_VALUE_TENSOR) return disp__ag_requires(v->u.tensor);
  if (v->tag == DISP_VALUE_TENSOR_LIST)
    for (size_t i = 0; i < v->u.tensors.len; i++)
      if (disp__ag_requires(v->u.tensors.data[i])) return 1;
  return 0;
}

/* Grad mode on and a differentiable input requiring grad (a view whose
 * base does counts: writing it rebases the base's graph, or is refused). */
static int wants_graph(disp_stack *st, const ag_op_info *info) {
  if (!disp_grad_mode_enabled()) return 0;
  for (int j = 0; j < info->ndiff; j++)
    if (value_requires_grad(arg_at(st, info, info->diff[j]))) return 1;
  return 0;
}

/* PyTorch's check_inplace: a leaf that requires grad is never written. */
static disp_status check_inplace(disp_stack *st, const ag_op_info *info) {
  for (int i = 0; i < info->nargs && i < 32; i++) {
    if (!(info->written & (1u << i))) continue;
    const disp_value *v = arg_at(st, info, i);
    if (v->tag != DISP_VALUE_TENSOR) continue;
    disp_tensor *t = v->u.tensor;
    disp_status vs = disp__view_check_inplace(t);
    if (vs != DISP_OK) return vs;
    if (disp_tensor_requires_grad(t) && disp_tensor_is_leaf(t))
      return disp__fail(DISP_ERR_INVALID_ARG, "a leaf Variable that requires grad is being used in an in-place "
                                              "operation.");
  }
  return DISP_OK;
}

/* ---- the node ------------------------------------------------------------ */

/* Counts the edges: one per differentiable tensor, one per element of a
 * differentiable Tensor[]. */
static uint32_t count_edges(disp_stack *st, const ag_op_info *info) {
  uint32_t n = 0;
  for (int j = 0; j < info->ndiff; j++) {
    const disp_value *v = arg_at(st, info, info->diff[j]);
    n += v->tag == DISP_VALUE_TENSOR_LIST ? (uint32_t)v->u.tensors.len : 1;
  }
  return n;
}

static disp_status add_edge(disp_node *n, uint32_t e, disp_tensor *t) {
  return t ? disp__edge_set(n, e, t) : DISP_OK; /* None: no gradient; geometry stays empty */
}

static disp_status collect_edges(disp_node *n, disp_stack *st, const ag_op_info *info) {
  uint32_t e = 0;
  disp_status s = DISP_OK;
  for (int j = 0; j < info->ndiff && s == DISP_OK; j++) {
    const disp_value *v = arg_at(st, info, info->diff[j]);
    if (v->tag == DISP_VALUE_TENSOR_LIST)
      for (size_t i = 0; i < v->u.tensors.len && s == DISP_OK; i++) s = add_edge(n, e++, v->u.tensors.data[i]);
    else s = add_edge(n, e++, v->tag == DISP_VALUE_TENSOR ? v->u.tensor : NULL);
  }
  return s;
}

/* Non-tensor arguments are copied; tensors are kept only where saved. */
static int copy_args(ag_formula_state *fs, disp_stack *st, const ag_op_info *info) {
  fs->args_stack = disp_stack_new();
  if (!fs->args_stack) return 1;
  for (int i = 0; i < info->nargs; i++) {
    const disp_value *v = arg_at(st, info, i);
    int tensorish = v->tag == DISP_VALUE_TENSOR || v->tag == DISP_VALUE_TENSOR_LIST || v->tag == DISP_VALUE_STORAGE;
    if (disp_stack_push_value(fs->args_stack, tensorish ? &(disp_value){0} : v) != DISP_OK) return 1;
  }
  return 0;
}

/* Saves the inputs the formula names, each only when a gradient that uses
 * it is wanted (Note [Saving only what a gradient uses]); one the op
 * writes is saved as a clone of its value before the write (PyTorch's
 * original_self). */
static disp_status save_inputs(disp_node *n, ag_formula_state *fs, disp_stack *st, const ag_op_info *info) {
  for (int k = 0; k < info->nsaved; k++) {
    int pos = info->saved[k], guard = info->saved_for[k];
    if (pos < 0 || (guard >= 0 && !n->next[guard].fn)) continue;
    const disp_value *v = arg_at(st, info, pos);
    disp_tensor *t = v->tag == DISP_VALUE_TENSOR ? v->u.tensor : NULL, *keep = NULL;
    if (t && (info->written & (1u << pos))) {
      /* recorded (as PyTorch's self.clone() in VariableType): double
       * backward reaches self through the saved value */
      disp_status s = disp_aten_clone(t, -1, &keep);
      if (s != DISP_OK) return s;
      t = keep;
    }
    disp_status s = disp__saved_set(&fs->saved[k], t, 0, 0);
    disp_tensor_release(keep);
    if (s != DISP_OK) return s;
  }
  return DISP_OK;
}

static int differentiable_output(const disp_tensor *t) {
  return t && disp_dtype_is_floating(disp_tensor_dtype(t));
}

/* One output's history: output number nr of node n. */
static disp_status output_history(disp_node *n, disp_tensor *t, uint32_t nr, const ag_op_info *info,
                                  const ag_held *inputs) {
  if (!differentiable_output(t) || disp__held_contains(inputs, t)) return DISP_OK;
  if (info->written && disp__view_is_tracked(t)) return disp__view_rebase(t, n, nr);
  return disp__set_history(t, n, nr) ? DISP_ERR_NO_MEMORY : DISP_OK;
}

/* After the op: outputs get their history (a view output was marked by
 * its ADInplaceOrView kernel), saved outputs are kept. The elements of a
 * Tensor[] return are outputs of their own, numbered on from the returns
 * before them (1.13's flatten_tensor_args: split's pieces are outputs 0,
 * 1, ...), so the node receives that many gradients. */
static disp_status finish_outputs(disp_node *n, ag_formula_state *fs, disp_stack *st, const ag_op_info *info,
                                  const ag_held *inputs) {
  size_t base = disp_stack_size(st) - (size_t)info->nrets;
  uint32_t nr = 0;
  for (int i = 0; i < info->nrets; i++) {
    const disp_value *v = disp_stack_at(st, base + (size_t)i);
    int skip = (info->nondiff & (1u << i)) != 0;
    disp_status s = DISP_OK;
    if (v->tag == DISP_VALUE_TENSOR_LIST) {
      for (size_t e = 0; e < v->u.tensors.len && s == DISP_OK; e++, nr++)
        if (!skip) s = output_history(n, v->u.tensors.data[e], nr, info, inputs);
    } else {
      if (!skip && v->tag == DISP_VALUE_TENSOR) s = output_history(n, v->u.tensor, nr, info, inputs);
      nr++;
    }
    if (s != DISP_OK) return s;
  }
  n->num_inputs = nr;
  for (int k = 0; k < info->nsaved; k++) {
    int pos = info->saved[k];
    if (pos >= 0) continue;
    const disp_value *v = disp_stack_at(st, base + (size_t)(-1 - pos));
    disp_tensor *t = v->tag == DISP_VALUE_TENSOR ? v->u.tensor : NULL;
    disp_status s = disp__saved_set(&fs->saved[k], t, 1, (uint32_t)(-1 - pos));
    if (s != DISP_OK) return s;
  }
  return DISP_OK;
}

/* The tensors the op reads but does not write (ag_held). */
static int hold_inputs(ag_held *h, disp_stack *st, const ag_op_info *info) {
  for (int i = 0; i < info->nargs; i++) {
    const disp_value *v = arg_at(st, info, i);
    if (i < 32 && (info->written & (1u << i))) continue;
    if (v->tag == DISP_VALUE_TENSOR && disp__held_add(h, v->u.tensor)) return 1;
    for (size_t k = 0; v->tag == DISP_VALUE_TENSOR_LIST && k < v->u.tensors.len; k++)
      if (disp__held_add(h, v->u.tensors.data[k])) return 1;
  }
  return 0;
}

/* The op itself below autograd (its ADInplaceOrView kernel runs: ks has
 * the key), what its kernels call below ADInplaceOrView too, as the
 * generated pass-through (Note [Excluding keys around a redispatch]). */
static disp_status run_below(const ag_op_info *info, disp_keyset ks, disp_stack *st) {
  uint64_t keep = disp__tls_exclude_fast(DISP__BELOW_AD_INPLACE_OR_VIEW);
  disp_status s = disp_redispatch_boxed(info->op, disp__ag_below(ks), st);
  disp__tls_exclude_restore(keep);
  return s;
}

/* A tensor argument the formula does not differentiate may not require grad
 * (1.13's generated check_no_requires_grad, e.g. nll_loss's weight). */
static disp_status check_no_requires_grad(disp_stack *st, const ag_op_info *info) {
  for (int i = 0; i < info->nargs && i < 32; i++) {
    const disp_value *v = arg_at(st, info, i);
    int diff = 0;
    for (int j = 0; j < info->ndiff; j++) diff |= info->diff[j] == i;
    if (diff || (info->written & (1u << i)) || v->tag != DISP_VALUE_TENSOR || !disp_tensor_requires_grad(v->u.tensor))
      continue;
    const disp_schema *s = disp_op_schema(info->op);
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "The function '%s' is not differentiable with respect to argument '%s'. This input cannot have "
                      "requires_grad True.",
                      disp_schema_base_name(s), disp_schema_argument_name(s, (size_t)i));
  }
  return DISP_OK;
}

static disp_status record(const ag_op_info *info, disp_keyset ks, disp_stack *st) {
  disp_status s = check_no_requires_grad(st, info);
  if (s == DISP_OK) s = check_inplace(st, info);
  if (s != DISP_OK) return s;
  disp_node *n = disp__formula_node_new(info, count_edges(st, info));
  if (!n) return DISP_ERR_NO_MEMORY;
  ag_formula_state *fs = n->state;
  s = collect_edges(n, st, info);
  if (s == DISP_OK && copy_args(fs, st, info))
    s = disp__fail(DISP_ERR_NO_MEMORY, "autograd: out of memory recording %s", info->name);
  if (s == DISP_OK) s = save_inputs(n, fs, st, info);
  ag_held inputs = AG_HELD_INIT(inputs);
  if (s == DISP_OK && hold_inputs(&inputs, st, info)) s = disp__fail(DISP_ERR_NO_MEMORY, "autograd: out of memory holding the inputs of %s", info->name);
  if (s == DISP_OK) s = run_below(info, ks, st);
  if (s == DISP_OK) s = finish_outputs(n, fs, st, info, &inputs);
  disp__held_release(&inputs);
  disp__node_release(n); /* the outputs hold it now */
  return s;
}

disp_status disp__ag_record_kernel(const disp_op *op, disp_keyset ks, disp_stack *st, void *user_data) {
  const ag_op_info *info = user_data;
  if (!info->f) return disp__ag_fallback(op, ks, st, NULL);
  size_t base = disp_stack_size(st) - (size_t)info->nargs;
  disp_status s;
  s = wants_graph(st, info) ? record(info, ks, st) : run_below(info, ks, st);
  if (s != DISP_OK && disp_stack_size(st) > base) disp_stack_drop(st, disp_stack_size(st) - base);
  return s;
}
