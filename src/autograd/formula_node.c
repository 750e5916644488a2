/*
 * formula_node.c - the node a formula records, and what its backward
 * function reads through ag_ctx.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "error_internal.h"
#include "record_internal.h"

struct ag_ctx {
  disp_node *node;
  ag_formula_state *fs;
  disp_tensor *saved[AG_MAX_POS]; /* unpacked for this pass */
};

static void release_saved(disp_node *n) {
  ag_formula_state *fs = n->state;
  for (int k = 0; k < fs->info->nsaved; k++) disp__saved_clear(&fs->saved[k]);
}

static void destroy_state(disp_node *n) {
  ag_formula_state *fs = n->state;
  disp_stack_free(fs->args_stack);
  disp__free(fs);
}

static int any_defined(disp_tensor *const *grads, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (grads[i]) return 1;
  return 0;
}

static disp_status apply(disp_node *n, disp_tensor *const *grads, disp_tensor **out) {
  ag_formula_state *fs = n->state;
  if (!any_defined(grads, n->num_inputs)) return DISP_OK; /* every result undefined */
  ag_ctx c = {n, fs, {0}};
  disp_status st = DISP_OK;
  for (int k = 0; k < fs->info->nsaved && st == DISP_OK; k++) {
    if (fs->saved[k].defined && !fs->saved[k].data) st = disp__node_fail_released(n);
    else st = disp__saved_unpack(&fs->saved[k], n, &c.saved[k]);
  }
  if (st == DISP_OK) st = fs->info->f->backward(&c, grads, out);
  for (int k = 0; k < fs->info->nsaved; k++) disp_tensor_release(c.saved[k]);
  return st;
}

static const ag_node_ops formula_ops = {apply, release_saved, destroy_state};

disp_node *disp__formula_node_new(const ag_op_info *info, uint32_t num_next) {
  ag_formula_state *fs = disp__calloc(1, sizeof *fs);
  if (!fs) {
    disp__fail(DISP_ERR_NO_MEMORY, "autograd: out of memory recording %s", info->name);
    return NULL;
  }
  fs->info = info;
  disp_node *n = disp__node_new(&formula_ops, info->f->node, (uint32_t)info->nrets, num_next);
  if (!n) {
    disp__free(fs);
    return NULL;
  }
  n->state = fs;
  n->fwd_op = info->name;
  return n;
}

/* ---- ag_ctx --------------------------------------------------------------- */

disp_tensor *ag_saved(ag_ctx *c, int i) { return i >= 0 && i < AG_MAX_POS ? c->saved[i] : NULL; }

const disp_value *ag_arg(ag_ctx *c, int pos) { return disp_stack_at(c->fs->args_stack, (size_t)pos); }

int64_t ag_int(ag_ctx *c, int pos) {
  const disp_value *v = ag_arg(c, pos);
  return v && v->tag == DISP_VALUE_INT ? v->u.i : v && v->tag == DISP_VALUE_BOOL ? v->u.b : 0;
}

double ag_double(ag_ctx *c, int pos) {
  const disp_value *v = ag_arg(c, pos);
  if (!v) return 0;
  return v->tag == DISP_VALUE_DOUBLE ? v->u.d : v->tag == DISP_VALUE_INT ? (double)v->u.i : 0;
}

int ag_bool(ag_ctx *c, int pos) {
  const disp_value *v = ag_arg(c, pos);
  return v && v->tag == DISP_VALUE_BOOL && v->u.b;
}

disp_scalar ag_scalar(ag_ctx *c, int pos) {
  const disp_value *v = ag_arg(c, pos);
  disp_scalar s = {DISP_SCALAR_NONE, {0}};
  if (!v) return s;
  if (v->tag == DISP_VALUE_INT) return disp_scalar_int(v->u.i);
  if (v->tag == DISP_VALUE_DOUBLE) return disp_scalar_double(v->u.d);
  if (v->tag == DISP_VALUE_BOOL) return disp_scalar_bool(v->u.b);
  return s;
}

disp_int_list ag_int_list(ag_ctx *c, int pos) {
  const disp_value *v = ag_arg(c, pos);
  disp_int_list l = {NULL, 0};
  if (v && v->tag == DISP_VALUE_INT_LIST) l.data = v->u.ints.data, l.len = v->u.ints.len;
  return l;
}

int ag_is_none(ag_ctx *c, int pos) {
  const disp_value *v = ag_arg(c, pos);
  return !v || v->tag == DISP_VALUE_NONE;
}

int ag_num_inputs(ag_ctx *c) { return (int)c->node->num_next; }

int ag_num_outputs(ag_ctx *c) { return (int)c->node->num_inputs; }

int ag_needs(ag_ctx *c, int j) {
  return j >= 0 && (uint32_t)j < c->node->num_next && c->node->next[j].fn != NULL;
}

const int64_t *ag_input_sizes(ag_ctx *c, int j, int *ndim) {
  const ag_geom *g = &c->node->geom[j];
  *ndim = g->ndim;
  return disp__geom_sizes(g);
}

const int64_t *ag_input_strides(ag_ctx *c, int j) { return disp__geom_strides(&c->node->geom[j]); }

int64_t ag_input_storage_offset(ag_ctx *c, int j) { return c->node->geom[j].storage_offset; }

disp_dtype ag_input_dtype(ag_ctx *c, int j) { return c->node->geom[j].dtype; }

disp_device ag_input_device(ag_ctx *c, int j) { return c->node->geom[j].device; }

int ag_create_graph(ag_ctx *c) {
  (void)c;
  return disp_grad_mode_enabled();
}
