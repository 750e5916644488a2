/*
 * engine.c - runs a graph backward (PyTorch's torch/csrc/autograd/engine.cpp,
 * on the calling thread).
 *
 * A pass discovers the nodes reachable from its roots and counts, per node,
 * the edges that lead into it. A node runs once every such edge has
 * delivered (its gradient inputs summed in its buffer); among ready nodes
 * the most recently created runs first, as PyTorch's ready queue orders by
 * sequence number. For autograd.grad only the nodes on a path to a
 * requested input run, and the gradient arriving at that input is captured
 * instead of accumulated.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "engine_internal.h"
#include "error_internal.h"
#include "record_internal.h"

typedef struct ag_task {
  disp_node *node;
  disp_tensor **buf; /* node->num_inputs gradients summed so far */
  int deps;
  int order;         /* position in topological order */
  unsigned char needed;
  int first_capture; /* index into the pass's captures, -1 none */
} ag_task;

typedef struct capture {
  disp_node *fn;
  uint32_t input_nr;
  int next; /* next capture of the same node, -1 */
  disp_tensor *grad;
} capture;

typedef struct pass {
  ag_task **tasks; /* discovery order */
  size_t n, cap;
  ag_task **heap;  /* ready nodes, max-heap on seq */
  size_t nheap;
  capture *caps;
  size_t ncaps;
  int retain_graph, create_graph;
} pass;

/* ---- discovery ----------------------------------------------------------- */

static ag_task *task_of(pass *p, disp_node *n) {
  if (n->task) return n->task;
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 16;
    ag_task **t = disp__realloc(p->tasks, cap * sizeof *t);
    if (!t) return NULL;
    p->tasks = t, p->cap = cap;
  }
  ag_task *t = disp__calloc(1, sizeof *t);
  if (t && n->num_inputs) t->buf = disp__calloc(n->num_inputs, sizeof *t->buf);
  if (!t || (n->num_inputs && !t->buf)) {
    if (t) disp__free(t->buf);
    disp__free(t);
    return NULL;
  }
  t->node = n;
  t->first_capture = -1;
  n->task = t;
  p->tasks[p->n++] = t;
  return t;
}

/* Every node reachable from the roots, with its count of incoming edges.
 * The task list doubles as the work list: tasks are appended as found. */
static int discover(pass *p) {
  for (size_t i = 0; i < p->n; i++) {
    disp_node *n = p->tasks[i]->node;
    for (uint32_t e = 0; e < n->num_next; e++) {
      disp_node *m = n->next[e].fn;
      if (!m) continue;
      ag_task *t = task_of(p, m);
      if (!t) return 1;
      t->deps++;
    }
  }
  return 0;
}

/* Kahn's order over a copy of the counts, then "needed" from the leaves
 * back: a node is needed when an edge of it reaches a capture or a needed
 * node. backward() needs every node. */
static int mark_needed(pass *p) {
  if (!p->ncaps) {
    for (size_t i = 0; i < p->n; i++) p->tasks[i]->needed = 1;
    return 0;
  }
  int *left = disp__malloc(p->n * sizeof *left);
  ag_task **order = disp__malloc(p->n * sizeof *order);
  if (!left || !order) return disp__free(left), disp__free(order), 1;
  size_t head = 0, tail = 0;
  for (size_t i = 0; i < p->n; i++) {
    p->tasks[i]->order = (int)i;
    left[i] = p->tasks[i]->deps;
  }
  for (size_t i = 0; i < p->n; i++)
    if (!left[i]) order[tail++] = p->tasks[i];
  while (head < tail) {
    disp_node *n = order[head++]->node;
    for (uint32_t e = 0; e < n->num_next; e++)
      if (n->next[e].fn && --left[n->next[e].fn->task->order] == 0) order[tail++] = n->next[e].fn->task;
  }
  for (size_t i = tail; i-- > 0;) {
    disp_node *n = order[i]->node;
    for (uint32_t e = 0; e < n->num_next && !order[i]->needed; e++) {
      disp_node *m = n->next[e].fn;
      if (m && (m->task->needed || m->task->first_capture >= 0)) order[i]->needed = 1;
    }
  }
  disp__free(left);
  disp__free(order);
  return 0;
}

/* ---- the ready heap ------------------------------------------------------ */

static int before(const ag_task *a, const ag_task *b) { return a->node->seq > b->node->seq; }

static void heap_push(pass *p, ag_task *t) {
  size_t i = p->nheap++;
  p->heap[i] = t;
  while (i && before(p->heap[i], p->heap[(i - 1) / 2])) {
    ag_task *x = p->heap[i];
    p->heap[i] = p->heap[(i - 1) / 2];
    p->heap[(i - 1) / 2] = x;
    i = (i - 1) / 2;
  }
}

static ag_task *heap_pop(pass *p) {
  ag_task *top = p->heap[0];
  p->heap[0] = p->heap[--p->nheap];
  for (size_t i = 0;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < p->nheap && before(p->heap[l], p->heap[m])) m = l;
    if (r < p->nheap && before(p->heap[r], p->heap[m])) m = r;
    if (m == i) break;
    ag_task *x = p->heap[i];
    p->heap[i] = p->heap[m];
    p->heap[m] = x;
    i = m;
  }
  return top;
}

/* ---- gradients in flight ------------------------------------------------- */

/* Adds g (a reference the buffer takes) into slot *dst (PyTorch's InputBuffer). */
static disp_status buffer_add(disp_tensor **dst, disp_tensor *g) {
  if (!g) return DISP_OK;
  if (!*dst) {
    *dst = g;
    return DISP_OK;
  }
  disp_tensor *sum;
  disp_status st = disp_aten_add_Tensor(*dst, g, disp_scalar_int(1), &sum);
  disp_tensor_release(g);
  if (st != DISP_OK) return st;
  disp_tensor_release(*dst);
  *dst = sum;
  return DISP_OK;
}

static void pass_free(pass *p) {
  for (size_t i = 0; i < p->n; i++) {
    ag_task *t = p->tasks[i];
    for (uint32_t k = 0; k < t->node->num_inputs; k++) disp_tensor_release(t->buf[k]);
    t->node->task = NULL;
    disp__free(t->buf);
    disp__free(t);
  }
  for (size_t i = 0; i < p->ncaps; i++) disp_tensor_release(p->caps[i].grad);
  disp__free(p->tasks);
  disp__free(p->heap);
  disp__free(p->caps);
}

/* ---- running one node ---------------------------------------------------- */

static disp_status run_pre_hooks(ag_task *t) {
  disp_node *n = t->node;
  for (uint32_t i = 0; i < n->num_inputs && n->pre_hooks; i++) {
    disp_status st = disp__hooks_run(&n->pre_hooks, (int)i, &t->buf[i]);
    if (st != DISP_OK) return st;
  }
  return DISP_OK;
}

static void take_captures(pass *p, ag_task *t) {
  for (int c = t->first_capture; c >= 0; c = p->caps[c].next) {
    disp_tensor *g = t->buf[p->caps[c].input_nr];
    disp_tensor_release(p->caps[c].grad);
    p->caps[c].grad = disp_tensor_retain(g);
  }
}

static disp_status call_node(pass *p, ag_task *t, disp_tensor **out) {
  disp_node *n = t->node;
  disp_tls_state g = disp_grad_mode_push(p->create_graph);
  disp_status st = n->ops->apply(n, t->buf, out);
  disp_tls_restore(g);
  if (st != DISP_OK) {
    disp__error_prefix("%s: ", n->name);
    return st;
  }
  st = disp__validate_outputs(n, out, p->create_graph);
  if (st == DISP_OK && disp__ag_anomaly()) st = disp__check_nan(n, out);
  if (!p->retain_graph && n->ops->release_saved && !n->released) {
    n->ops->release_saved(n);
    n->released = 1;
  }
  return st;
}

/* Hands each result to the node its edge leads to; a node whose last
 * edge delivered becomes ready. */
static disp_status deliver(pass *p, disp_node *n, disp_tensor **out) {
  disp_status st = DISP_OK;
  for (uint32_t e = 0; e < n->num_next; e++) {
    disp_node *m = n->next[e].fn;
    disp_tensor *g = out ? out[e] : NULL;
    if (out) out[e] = NULL;
    if (!m) {
      disp_tensor_release(g);
      continue;
    }
    if (st == DISP_OK) st = buffer_add(&m->task->buf[n->next[e].input_nr], g);
    else disp_tensor_release(g);
    if (--m->task->deps == 0) heap_push(p, m->task);
  }
  return st;
}

static disp_status run_task(pass *p, ag_task *t) {
  disp_status st = run_pre_hooks(t);
  if (st != DISP_OK) return st;
  take_captures(p, t);
  disp_node *n = t->node;
  if (!t->needed) return deliver(p, n, NULL);
  disp_tensor *inline_out[8] = {0}, **out = inline_out;
  if (n->num_next > 8 && !(out = disp__calloc(n->num_next, sizeof *out)))
    return disp__fail(DISP_ERR_NO_MEMORY, "autograd: out of memory running %s", n->name);
  st = call_node(p, t, out);
  disp_status st2 = deliver(p, n, st == DISP_OK ? out : NULL);
  for (uint32_t e = 0; st != DISP_OK && e < n->num_next; e++) disp_tensor_release(out[e]);
  if (out != inline_out) disp__free(out);
  return st != DISP_OK ? st : st2;
}

/* ---- a whole pass ---------------------------------------------------------- */

/* `what`: the pass's structure that could not be allocated. */
static disp_status oom(const char *what) {
  return disp__fail(DISP_ERR_NO_MEMORY, "autograd: out of memory in backward (%s)", what);
}

disp_status disp__engine_run(const ag_edge *roots, disp_tensor **root_grads, size_t nroots, const ag_edge *inputs,
                             size_t ninputs, int retain_graph, int create_graph, disp_tensor **captured) {
  pass p = {0};
  p.retain_graph = retain_graph;
  p.create_graph = create_graph;
  disp_status st = DISP_OK;
  for (size_t i = 0; i < nroots && st == DISP_OK; i++)
    if (!task_of(&p, roots[i].fn)) st = oom("a task");
  if (st == DISP_OK && discover(&p)) st = oom("the graph's tasks");
  if (st == DISP_OK && ninputs) {
    p.caps = disp__calloc(ninputs, sizeof *p.caps);
    if (!p.caps) st = oom("the captured gradients");
    for (size_t i = 0; st == DISP_OK && i < ninputs; i++) {
      capture *c = &p.caps[p.ncaps++];
      c->fn = inputs[i].fn, c->input_nr = inputs[i].input_nr, c->next = -1;
      if (c->fn && c->fn->task) c->next = c->fn->task->first_capture, c->fn->task->first_capture = (int)i;
    }
  }
  if (st == DISP_OK && mark_needed(&p)) st = oom("the needed nodes");
  if (st == DISP_OK && !(p.heap = disp__malloc((p.n ? p.n : 1) * sizeof *p.heap))) st = oom("the ready queue");
  for (size_t i = 0; st == DISP_OK && i < nroots; i++) {
    st = buffer_add(&roots[i].fn->task->buf[roots[i].input_nr], root_grads[i]);
    root_grads[i] = NULL;
  }
  for (size_t i = 0; st == DISP_OK && i < p.n; i++)
    if (p.tasks[i]->deps == 0) heap_push(&p, p.tasks[i]);
  while (st == DISP_OK && p.nheap) st = run_task(&p, heap_pop(&p));
  for (size_t i = 0; st == DISP_OK && captured && i < p.ncaps; i++) {
    captured[i] = p.caps[i].grad;
    p.caps[i].grad = NULL;
  }
  /* The root gradients are the engine's from the call on, used or not. */
  for (size_t i = 0; i < nroots; i++) {
    disp_tensor_release(root_grads[i]);
    root_grads[i] = NULL;
  }
  pass_free(&p);
  return st;
}
