/*
 * hooks.c - tensor hooks and retain_grad.
 *
 * A leaf's hooks live in its meta and run in its AccumulateGrad before the
 * gradient is added; a computed tensor's hooks are pre-hooks of its
 * grad_fn, watching the gradient input output_nr (PyTorch 1.13 registers
 * them the same way). retain_grad is one more pre-hook, run after the
 * others, that copies the gradient into the tensor through a weak pointer
 * (a strong one would be a cycle: tensor -> grad_fn -> hook -> tensor).
 */
#include <stdlib.h>

#include "alloc_internal.h"
#include "argcheck_internal.h"
#include "autograd_internal.h"
#include "error_internal.h"
#include "record_internal.h"

static uint64_t next_hook_id = 1;

/* How many hook runs are under way on this thread: while any is, a removed
 * hook is only marked dead, so that a run walking the list (perhaps calling
 * the very hook that removes itself, PyTorch's one-shot pattern) never
 * steps on freed memory. The outermost run frees its list's dead hooks. */
static _Thread_local int tls_runs;

static void hook_free(ag_hook *h) {
  if (h->destroy) h->destroy(h->ctx);
  if (h->retain) disp__weak_release(h->retain);
  disp__free(h);
}

static ag_weak *weak_of(disp_tensor *t, ag_meta *m) {
  if (!m->weak) {
    m->weak = disp__calloc(1, sizeof *m->weak);
    if (!m->weak) return NULL;
    atomic_init(&m->weak->refs, 1);
    m->weak->t = t;
  }
  atomic_fetch_add_explicit(&m->weak->refs, 1, memory_order_relaxed);
  return m->weak;
}

/* Appends h to the list at *head (registration order). */
static void append(ag_hook **head, ag_hook *h) {
  while (*head) head = &(*head)->next;
  *head = h;
}

disp_status disp_tensor_register_hook(disp_tensor *t, disp_grad_hook fn, void *ctx, void (*destroy)(void *ctx),
                                      uint64_t *id) {
  DISP_REFUSE_NULL(t);
  DISP_REFUSE_NULL(fn);
  if (id) *id = 0;
  if (!disp_tensor_requires_grad(t))
    return disp__fail(DISP_ERR_INVALID_ARG, "cannot register a hook on a tensor that doesn't require gradient");
  ag_meta *m = disp__meta_ensure(t);
  ag_hook *h = m ? disp__calloc(1, sizeof *h) : NULL;
  if (!h) return disp__fail(DISP_ERR_NO_MEMORY, "register_hook: out of memory");
  h->id = __atomic_fetch_add(&next_hook_id, 1, __ATOMIC_RELAXED);
  h->fn = fn;
  h->ctx = ctx;
  h->destroy = destroy;
  if (m->grad_fn) {
    h->output_nr = m->output_nr;
    append(&m->grad_fn->pre_hooks, h);
  } else {
    append(&m->leaf_hooks, h);
  }
  if (id) *id = h->id;
  return DISP_OK;
}

static int unlink_hook(ag_hook **head, uint64_t id) {
  for (; *head; head = &(*head)->next) {
    ag_hook *h = *head;
    if (h->id != id || h->retain || h->dead) continue;
    if (tls_runs > 0) {
      h->dead = 1;
    } else {
      *head = h->next;
      hook_free(h);
    }
    return 1;
  }
  return 0;
}

static void sweep_dead(ag_hook **head) {
  while (*head) {
    ag_hook *h = *head;
    if (!h->dead) {
      head = &h->next;
      continue;
    }
    *head = h->next;
    hook_free(h);
  }
}

disp_status disp_tensor_remove_hook(disp_tensor *t, uint64_t id) {
  DISP_REFUSE_NULL(t);
  ag_meta *m = disp__meta_get(t);
  if (m && (unlink_hook(&m->leaf_hooks, id) || (m->grad_fn && unlink_hook(&m->grad_fn->pre_hooks, id))))
    return DISP_OK;
  return disp__fail(DISP_ERR_INVALID_ARG, "remove_hook: no hook with id %llu on this tensor",
                    (unsigned long long)id);
}

disp_status disp_tensor_retain_grad(disp_tensor *t) {
  DISP_REFUSE_NULL(t);
  if (!disp_tensor_requires_grad(t))
    return disp__fail(DISP_ERR_INVALID_ARG, "can't retain_grad on Tensor that has requires_grad=False");
  ag_meta *m = disp__meta_get(t);
  if (!m || !m->grad_fn || m->retains_grad) return DISP_OK; /* leaves keep their grad anyway */
  ag_hook *h = disp__calloc(1, sizeof *h);
  if (h) h->retain = weak_of(t, m);
  if (!h || !h->retain) {
    disp__free(h);
    return disp__fail(DISP_ERR_NO_MEMORY, "retain_grad: out of memory");
  }
  h->output_nr = m->output_nr;
  append(&m->grad_fn->pre_hooks, h);
  m->retains_grad = 1;
  return DISP_OK;
}

/* retain_grad's effect: the first gradient cloned, later ones added. */
static disp_status retain(ag_weak *w, disp_tensor *grad) {
  disp_tensor *t = w->t;
  if (!t || !grad) return DISP_OK;
  ag_meta *m = disp__meta_get(t);
  disp_tensor *sum;
  disp_status st = m->grad ? disp_aten_add_Tensor(m->grad, grad, disp_scalar_int(1), &sum)
                           : disp_aten_clone(grad, -1, &sum);
  if (st != DISP_OK) return st;
  disp_tensor_release(m->grad);
  m->grad = sum;
  return DISP_OK;
}

/* 1.13's check_single_result: a hook may replace a gradient only with one
 * of the same size, type and device. */
static disp_status check_replacement(const disp_tensor *was, const disp_tensor *got) {
  if (disp_tensor_dtype(was) != disp_tensor_dtype(got))
    return disp__fail(DISP_ERR_INVALID_ARG, "hook 'hook' has changed the type of value (was %s got %s)",
                      disp_dtype_name(disp_tensor_dtype(was)), disp_dtype_name(disp_tensor_dtype(got)));
  if (!disp_device_equal(disp_tensor_device(was), disp_tensor_device(got))) {
    char a[48], b[48];
    disp_device_format(disp_tensor_device(was), a, sizeof a);
    disp_device_format(disp_tensor_device(got), b, sizeof b);
    return disp__fail(DISP_ERR_INVALID_ARG, "hook 'hook' has changed the device of value (was %s got %s)", a, b);
  }
  int nd = disp_tensor_ndim(was);
  int same = nd == disp_tensor_ndim(got);
  const int64_t *ws = disp_tensor_sizes(was), *gs = disp_tensor_sizes(got);
  for (int d = 0; same && d < nd; d++) same = ws[d] == gs[d];
  return same ? DISP_OK : disp__fail(DISP_ERR_INVALID_ARG, "hook 'hook' has changed the size of value");
}

/* Runs one hook on *grad (a reference the caller owns), replacing it. */
static disp_status run_one(ag_hook *h, disp_tensor **grad) {
  if (h->retain) return retain(h->retain, *grad);
  if (!*grad) return DISP_OK;
  disp_tensor *repl = NULL;
  disp_status st = h->fn(*grad, &repl, h->ctx);
  if (st == DISP_OK && repl) st = check_replacement(*grad, repl);
  if (st != DISP_OK) {
    disp_tensor_release(repl);
    return st;
  }
  if (repl) {
    disp_tensor_release(*grad);
    *grad = repl;
  }
  return DISP_OK;
}

disp_status disp__hooks_run(ag_hook **head, int watch_nr, disp_tensor **grad) {
  ag_hook *last = *head; /* hooks added by a hook wait for the next run */
  while (last && last->next) last = last->next;
  disp_status st = DISP_OK;
  tls_runs++;
  for (int pass = 0; pass < 2 && st == DISP_OK; pass++) /* tensor hooks, then retain_grad (1.13's order) */
    for (ag_hook *h = last ? *head : NULL; h && st == DISP_OK; h = h == last ? NULL : h->next) {
      if (h->dead || (h->retain != NULL) != pass || (watch_nr >= 0 && h->output_nr != (uint32_t)watch_nr)) continue;
      st = run_one(h, grad);
    }
  if (--tls_runs == 0) sweep_dead(head);
  return st;
}
