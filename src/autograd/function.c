/*
 * function.c - custom autograd functions (disp/function.h), as PyTorch's
 * torch.autograd.Function.apply and its ctx.
 *
 * The ctx is the node's state: created per application, it keeps the saved
 * tensors, the user's data and the outputs' geometry (to materialize zero
 * gradients) until the graph dies. An application that records nothing
 * (grad mode off, no input requiring grad) frees it on return.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "argcheck_internal.h"
#include "error_internal.h"
#include "record_internal.h"
#include "disp/function.h"

struct disp_function_ctx {
  const disp_function_def *def; /* &own_def: the caller's def may be gone by backward */
  disp_function_def own_def;
  char *own_name; /* own_def.name, copied */
  disp_node *node; /* NULL when the application records nothing */
  size_t n_inputs, n_outputs;
  unsigned char in_forward, materialize;
  disp_tensor **to_save; /* forward: retained, converted after the outputs are known */
  ag_saved_var *saved;
  disp_tensor **unpacked; /* backward: what disp_ctx_saved_tensors handed out */
  size_t nsaved;
  disp_tensor **dirty, **nondiff; /* forward only: copies of the caller's arrays, tensors borrowed */
  size_t ndirty, nnondiff;
  ag_geom *out_geom;
  void *data;
  void (*destroy)(void *data);
};

static void release_unpacked(disp_function_ctx *c) {
  for (size_t i = 0; c->unpacked && i < c->nsaved; i++) {
    disp_tensor_release(c->unpacked[i]);
    c->unpacked[i] = NULL;
  }
}

static void ctx_free(disp_function_ctx *c) {
  for (size_t i = 0; c->to_save && i < c->nsaved; i++) disp_tensor_release(c->to_save[i]);
  for (size_t i = 0; c->saved && i < c->nsaved; i++) disp__saved_clear(&c->saved[i]);
  release_unpacked(c);
  for (size_t i = 0; c->out_geom && i < c->n_outputs; i++) disp__geom_clear(&c->out_geom[i]);
  if (c->destroy) c->destroy(c->data);
  disp__free(c->dirty), disp__free(c->nondiff);
  disp__free(c->to_save), disp__free(c->saved), disp__free(c->unpacked), disp__free(c->out_geom);
  disp__free(c->own_name);
  disp__free(c);
}

/* ---- the node -------------------------------------------------------------- */

static disp_status zeros_of(const ag_geom *g, disp_tensor **out) {
  disp_int_list l = {disp__geom_sizes(g), (size_t)g->ndim};
  disp_opt_device d = {(int32_t)g->device.type, g->device.index, true};
  disp_opt_bool none = {false, false};
  return disp_aten_zeros(l, (int32_t)g->dtype, -1, d, none, out);
}

static disp_status apply(disp_node *n, disp_tensor *const *grads, disp_tensor **out) {
  disp_function_ctx *c = n->state;
  disp_tensor *inline_g[8] = {0}, **g = c->n_outputs <= 8 ? inline_g : disp__calloc(c->n_outputs, sizeof *g);
  if (!g) return disp__fail(DISP_ERR_NO_MEMORY, "%s: out of memory", n->name);
  disp_status st = DISP_OK;
  for (size_t i = 0; i < c->n_outputs && st == DISP_OK; i++) {
    if (grads[i] || !c->materialize) g[i] = disp_tensor_retain(grads[i]);
    else st = zeros_of(&c->out_geom[i], &g[i]);
  }
  if (st == DISP_OK) st = c->def->backward(c, g, c->n_outputs, out, c->n_inputs);
  release_unpacked(c);
  for (size_t i = 0; i < c->n_outputs; i++) disp_tensor_release(g[i]);
  if (g != inline_g) disp__free(g);
  return st;
}

static void release_saved(disp_node *n) {
  disp_function_ctx *c = n->state;
  if (!c) return;
  for (size_t i = 0; c->saved && i < c->nsaved; i++) disp__saved_clear(&c->saved[i]);
}

static void destroy_state(disp_node *n) {
  if (n->state) ctx_free(n->state);
}

static const ag_node_ops function_ops = {apply, release_saved, destroy_state};

/* ---- ctx functions ----------------------------------------------------------- */

disp_status disp_ctx_save_for_backward(disp_function_ctx *ctx, disp_tensor *const *tensors, size_t n) {
  DISP_REFUSE_NULL(ctx);
  DISP_REFUSE_NULL_ARRAY(tensors, n);
  if (!ctx->in_forward) return disp__fail(DISP_ERR_INVALID_ARG, "save_for_backward can only be called from forward");
  if (ctx->to_save || ctx->saved)
    return disp__fail(DISP_ERR_INVALID_ARG, "save_for_backward: called twice in one forward");
  if (!n) return DISP_OK;
  ctx->to_save = disp__calloc(n, sizeof *ctx->to_save);
  if (!ctx->to_save) return disp__fail(DISP_ERR_NO_MEMORY, "save_for_backward: out of memory");
  for (size_t i = 0; i < n; i++) ctx->to_save[i] = disp_tensor_retain(tensors[i]);
  ctx->nsaved = n;
  return DISP_OK;
}

disp_status disp_ctx_saved_tensors(disp_function_ctx *ctx, disp_tensor *const **tensors, size_t *n) {
  DISP_REFUSE_NULL(ctx);
  DISP_REFUSE_NULL(tensors);
  DISP_REFUSE_NULL(n);
  *tensors = NULL, *n = 0;
  if (ctx->in_forward) return disp__fail(DISP_ERR_INVALID_ARG, "saved_tensors can only be read in backward");
  if (!ctx->nsaved) return DISP_OK;
  if (!ctx->unpacked && !(ctx->unpacked = disp__calloc(ctx->nsaved, sizeof *ctx->unpacked)))
    return disp__fail(DISP_ERR_NO_MEMORY, "saved_tensors: out of memory");
  release_unpacked(ctx);
  for (size_t i = 0; i < ctx->nsaved; i++) {
    if (ctx->saved[i].defined && !ctx->saved[i].data) return disp__node_fail_released(ctx->node);
    disp_status st = disp__saved_unpack(&ctx->saved[i], ctx->node, &ctx->unpacked[i]);
    if (st != DISP_OK) return st;
  }
  *tensors = ctx->unpacked;
  *n = ctx->nsaved;
  return DISP_OK;
}

void disp_ctx_set_data(disp_function_ctx *ctx, void *data, void (*destroy)(void *data)) {
  if (!ctx) return;
  if (ctx->destroy && ctx->data != data) ctx->destroy(ctx->data);
  ctx->data = data;
  ctx->destroy = destroy;
}

void *disp_ctx_data(const disp_function_ctx *ctx) {
  DISP_REFUSE_NULL_PTR(ctx);
  return ctx->data;
}

int disp_ctx_needs_input_grad(const disp_function_ctx *ctx, size_t i) {
  return ctx && ctx->node && i < ctx->n_inputs && ctx->node->next[i].fn != NULL;
}

/* The caller's array is copied: it may be a local of forward's that is gone
 * (or reused) by the time apply reads the marks. A later call replaces. */
static disp_status copy_marks(disp_tensor ***to, size_t *nto, disp_tensor *const *tensors, size_t n,
                              const char *what) {
  disp_tensor **copy = NULL;
  if (n) {
    copy = disp__malloc(n * sizeof *copy);
    if (!copy) return disp__fail(DISP_ERR_NO_MEMORY, "%s: out of memory", what);
    memcpy(copy, tensors, n * sizeof *copy);
  }
  disp__free(*to);
  *to = copy, *nto = n;
  return DISP_OK;
}

disp_status disp_ctx_mark_dirty(disp_function_ctx *ctx, disp_tensor *const *tensors, size_t n) {
  DISP_REFUSE_NULL(ctx);
  DISP_REFUSE_NULL_ARRAY(tensors, n);
  if (!ctx->in_forward) return disp__fail(DISP_ERR_INVALID_ARG, "mark_dirty can only be called from forward");
  return copy_marks(&ctx->dirty, &ctx->ndirty, tensors, n, "mark_dirty");
}

disp_status disp_ctx_mark_non_differentiable(disp_function_ctx *ctx, disp_tensor *const *tensors, size_t n) {
  DISP_REFUSE_NULL(ctx);
  DISP_REFUSE_NULL_ARRAY(tensors, n);
  if (!ctx->in_forward)
    return disp__fail(DISP_ERR_INVALID_ARG, "mark_non_differentiable can only be called from forward");
  return copy_marks(&ctx->nondiff, &ctx->nnondiff, tensors, n, "mark_non_differentiable");
}

void disp_ctx_set_materialize_grads(disp_function_ctx *ctx, int materialize) {
  if (ctx) ctx->materialize = (unsigned char)(materialize != 0);
}

/* ---- apply ------------------------------------------------------------------- */

static int in_list(disp_tensor *const *l, size_t n, const disp_tensor *t) {
  for (size_t i = 0; i < n; i++)
    if (l[i] == t) return 1;
  return 0;
}

static disp_status make_node(disp_function_ctx *c, disp_tensor *const *inputs, size_t n) {
  disp_node *node = disp__node_new(&function_ops, c->def->name ? c->def->name : "CustomFunctionBackward",
                                   (uint32_t)c->n_outputs, (uint32_t)n);
  if (!node) return DISP_ERR_NO_MEMORY;
  for (size_t i = 0; i < n; i++) {
    disp_status st = inputs[i] ? disp__edge_set(node, (uint32_t)i, inputs[i]) : DISP_OK;
    if (st != DISP_OK) {
      disp__node_release(node);
      return st;
    }
  }
  node->state = c;
  node->fwd_op = node->name;
  c->node = node;
  return DISP_OK;
}

/* An input returned as it is comes back as a new alias carrying the graph
 * (1.13 returns input.view_as(input)), so the input's own history stays. */
static disp_status alias_of(disp_tensor *t, disp_tensor **out) {
  return disp_tensor_new_view(t, disp_tensor_sizes(t), disp_tensor_strides(t), disp_tensor_ndim(t),
                              disp_tensor_storage_offset(t), out);
}

static disp_status set_output(disp_function_ctx *c, disp_tensor *const *inputs, size_t n, disp_tensor **outputs,
                              uint32_t i) {
  disp_tensor *t = outputs[i];
  if (disp__geom_set(&c->out_geom[i], t)) return disp__fail(DISP_ERR_NO_MEMORY, "%s: out of memory", c->def->name);
  if (in_list(c->nondiff, c->nnondiff, t) || !disp_dtype_is_floating(disp_tensor_dtype(t))) return DISP_OK;
  if (in_list(c->dirty, c->ndirty, t)) {
    if (disp_tensor_requires_grad(t) && disp_tensor_is_leaf(t))
      return disp__fail(DISP_ERR_INVALID_ARG,
                        "a leaf Variable that requires grad has been used in an in-place operation.");
  } else if (in_list(inputs, n, t)) {
    disp_tensor *a;
    disp_status st = alias_of(t, &a);
    if (st != DISP_OK) return st;
    disp_tensor_release(t);
    outputs[i] = t = a;
  }
  return disp__set_history(t, c->node, i) ? DISP_ERR_NO_MEMORY : DISP_OK;
}

/* Saved tensors become saved variables once the outputs are known: an
 * output is kept as an alias without the graph (Note [Who holds whom]). */
static disp_status convert_saved(disp_function_ctx *c, disp_tensor **outputs) {
  if (!c->nsaved) return DISP_OK;
  c->saved = disp__calloc(c->nsaved, sizeof *c->saved);
  if (!c->saved) return disp__fail(DISP_ERR_NO_MEMORY, "%s: out of memory", c->def->name);
  for (size_t i = 0; i < c->nsaved; i++) {
    int out_nr = -1;
    for (size_t j = 0; j < c->n_outputs && out_nr < 0; j++)
      if (c->to_save[i] && c->to_save[i] == outputs[j]) out_nr = (int)j;
    disp_status st = disp__saved_set(&c->saved[i], c->to_save[i], out_nr >= 0, out_nr >= 0 ? (uint32_t)out_nr : 0);
    if (st != DISP_OK) return st;
    disp_tensor_release(c->to_save[i]);
    c->to_save[i] = NULL;
  }
  return DISP_OK;
}

static disp_status finish(disp_function_ctx *c, disp_tensor *const *inputs, size_t n, disp_tensor **outputs) {
  for (size_t i = 0; i < c->n_outputs; i++)
    if (!outputs[i]) return disp__fail(DISP_ERR_INVALID_ARG, "%s: forward left output %zu NULL", c->def->name, i);
  for (size_t d = 0; d < c->ndirty; d++)
    if (!in_list(outputs, c->n_outputs, c->dirty[d]) || !in_list(inputs, n, c->dirty[d]))
      return disp__fail(DISP_ERR_INVALID_ARG,
                        "Some elements marked as dirty during the forward method were not returned as output. The "
                        "inputs that are modified inplace must all be outputs of the Function.");
  if (!c->node) return DISP_OK;
  disp_status st = DISP_OK;
  for (uint32_t i = 0; i < c->n_outputs && st == DISP_OK; i++) st = set_output(c, inputs, n, outputs, i);
  if (st == DISP_OK) st = convert_saved(c, outputs);
  return st;
}

static int any_requires_grad(disp_tensor *const *inputs, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (disp__ag_requires(inputs[i])) return 1;
  return 0;
}

disp_status disp_function_apply(const disp_function_def *def, disp_tensor *const *inputs, size_t n,
                                 disp_tensor **outputs, size_t nout) {
  DISP_REFUSE_NULL(def);
  DISP_REFUSE_NULL_ARRAY(inputs, n);
  DISP_REFUSE_NULL_ARRAY(outputs, nout);
  for (size_t i = 0; i < nout; i++) outputs[i] = NULL;
  if (!def->forward || !def->backward)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_function_apply: %s has no forward or no backward",
                      def->name ? def->name : "the function");
  disp_function_ctx *c = disp__calloc(1, sizeof *c);
  if (c) c->out_geom = disp__calloc(nout + 1, sizeof *c->out_geom);
  size_t name_len = def->name ? strlen(def->name) + 1 : 0;
  if (c && name_len) c->own_name = disp__malloc(name_len);
  if (!c || !c->out_geom || (name_len && !c->own_name)) {
    if (c) disp__free(c->out_geom), disp__free(c->own_name), disp__free(c);
    return disp__fail(DISP_ERR_NO_MEMORY, "disp_function_apply: out of memory");
  }
  c->own_def = *def;
  if (name_len) memcpy(c->own_name, def->name, name_len);
  c->own_def.name = c->own_name;
  c->def = &c->own_def, c->n_inputs = n, c->n_outputs = nout, c->materialize = 1;
  if (disp_grad_mode_enabled() && any_requires_grad(inputs, n)) {
    disp_status made = make_node(c, inputs, n);
    if (made != DISP_OK) {
      ctx_free(c);
      return made;
    }
  }
  c->in_forward = 1;
  disp_tls_state g = disp_grad_mode_push(0);
  disp_status st = def->forward(c, inputs, n, outputs, nout);
  disp_tls_restore(g);
  if (st == DISP_OK) st = finish(c, inputs, n, outputs);
  c->in_forward = 0;
  disp__free(c->dirty), disp__free(c->nondiff);
  c->dirty = c->nondiff = NULL, c->ndirty = c->nnondiff = 0;
  if (st != DISP_OK)
    for (size_t i = 0; i < nout; i++) disp_tensor_release(outputs[i]), outputs[i] = NULL;
  if (c->node) disp__node_release(c->node); /* the outputs hold it now; it frees c with the graph */
  else ctx_free(c);
  return st;
}
