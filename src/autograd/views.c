/*
 * views.c - the nodes of differentiable views: in-place updates through
 * them (1.13's CopySlices) and a view's regenerated grad_fn
 * (AsStridedBackward0). Which tensors are views, and when an update of one
 * may be recorded, is view_meta.c's.
 *
 * When an in-place operator writes a view that is in a graph, the base's
 * history is rebased: its grad_fn becomes a CopySlices node, which runs the
 * operator's backward on the view's slice of the base's gradient and passes
 * the rest through unchanged; the view's grad_fn becomes an
 * AsStridedBackward0 node over the base, so both read the new values'
 * history. A view whose base was written some other way gets such a node
 * when its grad_fn is next read (disp__view_refresh).
 */
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "engine_internal.h"
#include "error_internal.h"
#include "record_internal.h"

/* ---- geometry kept by the nodes ---------------------------------------------------- */

typedef struct strided {
  int ndim;
  int64_t *sizes, *strides; /* one block: sizes then strides */
  int64_t offset;           /* the view's: relative to the base's storage offset */
} strided;

static int strided_set(strided *g, const disp_tensor *t, int64_t base_offset) {
  g->ndim = disp_tensor_ndim(t);
  g->sizes = disp__malloc(2 * (size_t)(g->ndim ? g->ndim : 1) * sizeof *g->sizes);
  if (!g->sizes) return 1;
  g->strides = g->sizes + g->ndim;
  if (g->ndim) memcpy(g->sizes, disp_tensor_sizes(t), (size_t)g->ndim * sizeof *g->sizes);
  if (g->ndim) memcpy(g->strides, disp_tensor_strides(t), (size_t)g->ndim * sizeof *g->strides);
  g->offset = disp_tensor_storage_offset(t) - base_offset;
  return 0;
}

/* A zeroed tensor laid out as the base, and the view's window into it. */
static disp_status base_like(const strided *base, const strided *view, disp_tensor *like, disp_tensor **whole,
                             disp_tensor **window) {
  disp_int_list bs = {base->sizes, (size_t)base->ndim}, bt = {base->strides, (size_t)base->ndim};
  disp_int_list vs = {view->sizes, (size_t)view->ndim}, vt = {view->strides, (size_t)view->ndim};
  disp_opt_device dev = {(int32_t)disp_tensor_device(like).type, disp_tensor_device(like).index, true};
  disp_opt_bool none = {false, false};
  disp_opt_int off = {view->offset, true};
  disp_tensor *z = NULL;
  *whole = *window = NULL;
  disp_status st = disp_aten_empty_strided(bs, bt, (int32_t)disp_tensor_dtype(like), -1, dev, none, whole);
  if (st == DISP_OK) st = disp_aten_zero_(*whole, &z);
  disp_tensor_release(z);
  if (st == DISP_OK) st = disp_aten_as_strided(*whole, vs, vt, off, window);
  return st;
}

/* ---- AsStridedBackward0: the regenerated grad_fn of a rebased view -------------------- */

typedef struct view_state {
  strided base, view;
} view_state;

static disp_status view_apply(disp_node *n, disp_tensor *const *grads, disp_tensor **out) {
  view_state *s = n->state;
  disp_tensor *whole, *window, *same = NULL;
  disp_status st = base_like(&s->base, &s->view, grads[0], &whole, &window);
  if (st == DISP_OK) st = disp_aten_copy_(window, grads[0], false, &same);
  disp_tensor_release(same), disp_tensor_release(window);
  if (st == DISP_OK) out[0] = whole;
  else disp_tensor_release(whole);
  return st;
}

static void view_free(disp_node *n) {
  view_state *s = n->state;
  if (!s) return;
  disp__free(s->base.sizes), disp__free(s->view.sizes);
  disp__free(s);
}

static const ag_node_ops view_ops = {view_apply, NULL, view_free};

/* ---- CopySlices ---------------------------------------------------------------------- */

typedef struct copy_slices {
  strided base, view;
  disp_node *fn;      /* the in-place operator's node (owned) */
  uint32_t fn_output; /* which of its outputs the view was */
} copy_slices;

/* fn's backward on the view's slice of the base's gradient: its first
 * result lands back in the slice, the others go to fn's other inputs. */
static disp_status cs_apply(disp_node *n, disp_tensor *const *grads, disp_tensor **out) {
  copy_slices *s = n->state;
  disp_tensor *whole = NULL, *window = NULL, *slice = NULL, *same = NULL;
  disp_tensor *fg[8] = {0}, *res[16] = {0};
  if (s->fn->num_inputs > 8 || s->fn->num_next > 16)
    return disp__fail(DISP_ERR_INVALID_ARG, "CopySlices: %s has too many inputs", s->fn->name);
  disp_status st = base_like(&s->base, &s->view, grads[0], &whole, &window);
  if (st == DISP_OK) st = disp_aten_copy_(whole, grads[0], false, &same);
  disp_tensor_release(same), same = NULL;
  if (st == DISP_OK) st = disp_aten_clone(window, -1, &slice);
  fg[s->fn_output] = slice;
  if (st == DISP_OK) st = s->fn->ops->apply(s->fn, fg, res);
  if (st == DISP_OK) st = disp__validate_outputs(s->fn, res, disp_grad_mode_enabled());
  if (st == DISP_OK) st = res[0] ? disp_aten_copy_(window, res[0], false, &same) : disp_aten_zero_(window, &same);
  disp_tensor_release(same), disp_tensor_release(window), disp_tensor_release(slice), disp_tensor_release(res[0]);
  for (uint32_t e = 1; e < s->fn->num_next; e++) {
    if (st == DISP_OK) out[e] = res[e];
    else disp_tensor_release(res[e]);
  }
  if (st == DISP_OK) out[0] = whole;
  else disp_tensor_release(whole);
  return st;
}

static void cs_release_saved(disp_node *n) {
  copy_slices *s = n->state;
  if (s && s->fn->ops->release_saved && !s->fn->released) {
    s->fn->ops->release_saved(s->fn);
    s->fn->released = 1;
  }
}

static void cs_free(disp_node *n) {
  copy_slices *s = n->state;
  if (!s) return;
  disp__node_release(s->fn);
  disp__free(s->base.sizes), disp__free(s->view.sizes);
  disp__free(s);
}

static const ag_node_ops copy_slices_ops = {cs_apply, cs_release_saved, cs_free};

/* ---- rebasing ---------------------------------------------------------------------------- */

static disp_node *copy_slices_new(disp_tensor *base, disp_tensor *view, disp_node *fn, uint32_t out_nr) {
  copy_slices *s = disp__calloc(1, sizeof *s);
  disp_node *n = s ? disp__node_new(&copy_slices_ops, "torch::autograd::CopySlices", 1, fn->num_next ? fn->num_next : 1) : NULL;
  if (!n) return disp__free(s), NULL;
  n->state = s;
  s->fn = disp__node_retain(fn);
  s->fn_output = out_nr;
  int64_t boff = disp_tensor_storage_offset(base);
  int oom = strided_set(&s->base, base, boff) || strided_set(&s->view, view, boff) ||
            disp__gradient_edge(base, &n->next[0]) || disp__geom_set(&n->geom[0], base);
  for (uint32_t e = 1; !oom && e < fn->num_next; e++) {
    n->next[e].fn = disp__node_retain(fn->next[e].fn);
    n->next[e].input_nr = fn->next[e].input_nr;
    oom = disp__geom_copy(&n->geom[e], &fn->geom[e]);
  }
  if (oom) return disp__node_release(n), NULL;
  return n;
}

/* The view's AsStridedBackward0 over its base; its edge is `to` (taken). */
static disp_node *view_node_new(disp_tensor *base, disp_tensor *view, ag_edge to) {
  view_state *s = disp__calloc(1, sizeof *s);
  disp_node *n = s ? disp__node_new(&view_ops, "AsStridedBackward0", 1, 1) : NULL;
  if (!n) return disp__free(s), disp__node_release(to.fn), NULL;
  n->state = s;
  n->next[0] = to;
  int64_t boff = disp_tensor_storage_offset(base);
  if (strided_set(&s->base, base, boff) || strided_set(&s->view, view, boff) || disp__geom_set(&n->geom[0], base))
    return disp__node_release(n), NULL;
  return n;
}

disp_status disp__view_rebase(disp_tensor *view, disp_node *fn, uint32_t out_nr) {
  ag_meta *m = disp__meta_get(view);
  disp_tensor *base = m->view_base;
  disp_node *cs = copy_slices_new(base, view, fn, out_nr);
  disp_node *vn = cs ? view_node_new(base, view, (ag_edge){disp__node_retain(cs), 0}) : NULL;
  disp_status st = DISP_OK;
  if (!vn || disp__set_history(base, cs, 0) || disp__set_history(view, vn, 0))
    st = disp__fail(DISP_ERR_NO_MEMORY, "autograd: out of memory rebasing a view written by %s", fn->name);
  m->view_version = disp_tensor_version(view);
  disp__node_release(vn);
  disp__node_release(cs);
  return st;
}

disp_status disp__view_regenerate(disp_tensor *view) {
  ag_meta *m = disp__meta_get(view);
  ag_edge to;
  disp_status st = disp__gradient_edge(m->view_base, &to);
  if (st != DISP_OK) return st;
  disp_node *vn = view_node_new(m->view_base, view, to);
  if (!vn || disp__set_history(view, vn, 0))
    st = disp__fail(DISP_ERR_NO_MEMORY, "autograd: out of memory regenerating a view's grad_fn");
  disp__node_release(vn);
  return st;
}
