/*
 * test_autograd_misuse - issue 18, class 4: what 1.13 refuses in autograd,
 * refused here with its words and the tensors unchanged; arrays a caller
 * hands over are copied, never kept.
 */
#include <stdlib.h>
#include <string.h>

#include <disp.h>
#include <disp/aten.h>
#include <disp/function.h>

#include "test.h"

static disp_tensor *ones(int64_t n, int requires_grad) {
  int64_t sz[1] = {n};
  disp_int_list l = {sz, 1};
  disp_opt_device none = {0};
  disp_opt_bool no = {0};
  disp_tensor *t = NULL;
  if (disp_aten_ones(l, DISP_DTYPE_FLOAT32, -1, none, no, &t) != DISP_OK) return NULL;
  if (requires_grad && disp_tensor_set_requires_grad(t, 1) != DISP_OK) return NULL;
  return t;
}

/* 1.13: "Can't detach views in-place", and the view keeps its graph. */
TEST(detach__of_a_view_is_refused) {
  disp_tensor *a = ones(4, 1), *b = NULL, *v = NULL;
  ASSERT_TRUE(a);
  ASSERT_OK(disp_aten_mul_Scalar(a, disp_scalar_int(2), &b));
  int64_t sz[2] = {2, 2};
  ASSERT_OK(disp_aten_view(b, (disp_int_list){sz, 2}, &v));
  ASSERT_STATUS(disp_tensor_detach_(v), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "Can't detach views in-place. Use detach() instead.");
  ASSERT_TRUE(disp_tensor_grad_fn(v) != NULL && disp_tensor_requires_grad(v));
  ASSERT_OK(disp_tensor_detach_(b)); /* not a view: allowed */
  ASSERT_TRUE(disp_tensor_grad_fn(b) == NULL && !disp_tensor_requires_grad(b));
  disp_tensor_release(v), disp_tensor_release(b), disp_tensor_release(a);
  return 0;
}

/* 1.13's VariableTypeManual: resize_ of a tensor that requires grad and
 * set_ of a leaf that requires grad are refused; the tensor is unchanged. */
TEST(resize__and_set__of_tensors_that_require_grad_are_refused) {
  disp_tensor *leaf = ones(4, 1), *other = ones(6, 0), *out = NULL, *nonleaf = NULL;
  ASSERT_TRUE(leaf && other);
  int64_t sz[1] = {8};
  disp_storage *st = disp_tensor_storage(leaf);
  ASSERT_STATUS(disp_aten_resize_(leaf, (disp_int_list){sz, 1}, -1, &out), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "cannot resize variables that require grad");
  ASSERT_OK(disp_aten_mul_Scalar(leaf, disp_scalar_int(3), &nonleaf));
  ASSERT_STATUS(disp_aten_resize_(nonleaf, (disp_int_list){sz, 1}, -1, &out), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_aten_set__source_Tensor(leaf, other, &out), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "a leaf Variable that requires grad is being used in an in-place operation.");
  ASSERT_STATUS(disp_aten_set__source_Storage(leaf, disp_tensor_storage(other), &out), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(disp_tensor_storage(leaf) == st && disp_tensor_numel(leaf) == 4);
  /* with grad mode off (torch.no_grad()), set_ of the leaf is allowed */
  disp_tls_state g = disp_grad_mode_push(0);
  disp_status s = disp_aten_set__source_Tensor(leaf, other, &out);
  disp_tls_restore(g);
  ASSERT_OK(s);
  ASSERT_EQ_INT(disp_tensor_numel(leaf), 6);
  disp_tensor_release(out);
  /* a tensor that does not require grad resizes */
  ASSERT_OK(disp_aten_resize_(other, (disp_int_list){sz, 1}, -1, &out));
  ASSERT_EQ_INT(disp_tensor_numel(other), 8);
  disp_tensor_release(out);
  disp_tensor_release(nonleaf), disp_tensor_release(other), disp_tensor_release(leaf);
  return 0;
}

/* mark_non_differentiable / mark_dirty copy the caller's array: forward
 * scribbles over its own array after marking, and the marks hold. */
static disp_status twice_forward(disp_function_ctx *ctx, disp_tensor *const *in, size_t n, disp_tensor **out,
                                 size_t nout) {
  (void)n, (void)nout;
  disp_status st = disp_aten_mul_Scalar(in[0], disp_scalar_int(2), &out[0]);
  disp_tensor *marks[1] = {out[0]};
  if (st == DISP_OK) st = disp_ctx_mark_non_differentiable(ctx, marks, 1);
  marks[0] = NULL; /* the caller's array changes: the library must not care */
  return st;
}

static disp_status twice_backward(disp_function_ctx *ctx, disp_tensor *const *go, size_t nout, disp_tensor **gi,
                                  size_t n) {
  (void)ctx, (void)nout, (void)n;
  return disp_aten_mul_Scalar(go[0], disp_scalar_int(2), &gi[0]);
}

TEST(function_marks_are_copied) {
  static const disp_function_def twice = {"TwiceBackward", twice_forward, twice_backward};
  disp_tensor *a = ones(3, 1), *y = NULL;
  ASSERT_TRUE(a);
  ASSERT_OK(disp_function_apply(&twice, (disp_tensor *[]){a}, 1, &y, 1));
  ASSERT_FALSE(disp_tensor_requires_grad(y)); /* marked non-differentiable */
  disp_tensor_release(y), disp_tensor_release(a);
  return 0;
}

/* disp_function_apply copies the def and its name: a def built on the heap
 * and freed (scribbled first) right after the forward still backwards, and
 * the node keeps its name. */
static disp_status plain_twice_forward(disp_function_ctx *ctx, disp_tensor *const *in, size_t n, disp_tensor **out,
                                       size_t nout) {
  (void)ctx, (void)n, (void)nout;
  return disp_aten_mul_Scalar(in[0], disp_scalar_int(2), &out[0]);
}

TEST(function_def_and_name_are_copied) {
  disp_function_def *def = malloc(sizeof *def);
  char *name = malloc(32);
  ASSERT_TRUE(def && name);
  strcpy(name, "HeapTwiceBackward");
  *def = (disp_function_def){name, plain_twice_forward, twice_backward};
  disp_tensor *a = ones(3, 1), *y = NULL, *s = NULL;
  ASSERT_TRUE(a);
  ASSERT_OK(disp_function_apply(def, (disp_tensor *[]){a}, 1, &y, 1));
  memset(name, 'x', 31), name[31] = 0;
  memset(def, 0, sizeof *def);
  free(name), free(def);
  ASSERT_TRUE(disp_tensor_grad_fn(y) != NULL);
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(y)), "HeapTwiceBackward");
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  disp_tensor *g = disp_tensor_grad(a);
  ASSERT_TRUE(g != NULL);
  ASSERT_TRUE(((const float *)disp_tensor_data_ptr(g))[0] == 2.0f);
  disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(a);
  return 0;
}

/* ---- hooks that change the hook list while hooks run -------------------- */

typedef struct hook_state {
  disp_tensor *t;  /* the tensor the hooks are on */
  uint64_t self_id, other_id;
  int calls, added_calls, mode; /* mode 0: remove self, 1: remove other, 2: add one */
} hook_state;

static disp_status added_hook(disp_tensor *grad, disp_tensor **repl, void *ctx) {
  (void)grad, (void)repl;
  ((hook_state *)ctx)->added_calls++;
  return DISP_OK;
}

static disp_status counting_hook(disp_tensor *grad, disp_tensor **repl, void *ctx) {
  (void)grad, (void)repl;
  ((hook_state *)ctx)->added_calls += 100; /* "other": counted apart */
  return DISP_OK;
}

static disp_status editing_hook(disp_tensor *grad, disp_tensor **repl, void *ctx) {
  (void)grad, (void)repl;
  hook_state *h = ctx;
  h->calls++;
  if (h->mode == 0) return disp_tensor_remove_hook(h->t, h->self_id); /* one-shot */
  if (h->mode == 1) return h->calls == 1 ? disp_tensor_remove_hook(h->t, h->other_id) : DISP_OK;
  return disp_tensor_register_hook(h->t, added_hook, h, NULL, NULL);
}

/* sum(t * 1) backward: t gets a gradient, running its hooks (t a leaf, or
 * a computed tensor whose hooks are its node's pre-hooks). */
static int backward_through(disp_tensor *t) {
  disp_tensor *y = NULL, *s = NULL;
  ASSERT_OK(disp_aten_mul_Scalar(t, disp_scalar_int(1), &y));
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 1));
  disp_tensor_release(s), disp_tensor_release(y);
  return 0;
}

/* PyTorch's one-shot pattern and its relatives, on a leaf and on a
 * computed tensor: a hook removes itself, removes the next hook, or adds
 * one; nothing freed is touched (ASan), and the list is as the edits say. */
TEST(hooks_may_edit_the_hook_list_while_they_run) {
  for (int leaf = 0; leaf < 2; leaf++)
    for (int mode = 0; mode < 3; mode++) {
      disp_tensor *a = ones(3, 1), *t = NULL;
      ASSERT_TRUE(a);
      if (leaf) t = disp_tensor_retain(a);
      else ASSERT_OK(disp_aten_mul_Scalar(a, disp_scalar_int(2), &t));
      hook_state h = {t, 0, 0, 0, 0, mode};
      ASSERT_OK(disp_tensor_register_hook(t, editing_hook, &h, NULL, &h.self_id));
      ASSERT_OK(disp_tensor_register_hook(t, counting_hook, &h, NULL, &h.other_id));
      if (backward_through(t)) return 1;
      if (backward_through(t)) return 1;
      if (mode == 0) { /* ran once; the other ran both times */
        ASSERT_EQ_INT(h.calls, 1);
        ASSERT_EQ_INT(h.added_calls, 200);
        ASSERT_STATUS(disp_tensor_remove_hook(t, h.self_id), DISP_ERR_INVALID_ARG); /* gone already */
      } else if (mode == 1) { /* the other never ran */
        ASSERT_EQ_INT(h.calls, 2);
        ASSERT_EQ_INT(h.added_calls, 0);
      } else { /* pass 1 adds A1 (not run), pass 2 runs A1 and adds A2 */
        ASSERT_EQ_INT(h.calls, 2);
        ASSERT_EQ_INT(h.added_calls, 200 + 1);
      }
      disp_tensor_release(t), disp_tensor_release(a);
    }
  return 0;
}

/* The class across lists: a one-shot hook on a computed tensor that also
 * retains its grad removes itself and a hook of the leaf below it (another
 * list, run later in the same pass). Each removed hook's destroy runs once,
 * after the hooks stop running; the removed leaf hook never runs; the
 * retained gradient is still made. */
typedef struct cross_state {
  disp_tensor *t, *leaf;
  uint64_t self_id, leaf_id;
  int self_calls, leaf_calls, destroyed, destroyed_while_running, running;
} cross_state;

static void count_destroy(void *ctx) {
  cross_state *c = ctx;
  c->destroyed++;
  c->destroyed_while_running += c->running;
}

static disp_status leaf_hook(disp_tensor *grad, disp_tensor **repl, void *ctx) {
  (void)grad, (void)repl;
  ((cross_state *)ctx)->leaf_calls++;
  return DISP_OK;
}

static disp_status one_shot_cross(disp_tensor *grad, disp_tensor **repl, void *ctx) {
  (void)grad, (void)repl;
  cross_state *c = ctx;
  c->self_calls++;
  c->running = 1;
  disp_status st = disp_tensor_remove_hook(c->t, c->self_id);
  if (st == DISP_OK) st = disp_tensor_remove_hook(c->leaf, c->leaf_id);
  c->running = 0;
  return st;
}

TEST(hooks_removed_while_running_are_destroyed_once_after) {
  disp_tensor *a = ones(3, 1), *t = NULL;
  ASSERT_TRUE(a);
  ASSERT_OK(disp_aten_mul_Scalar(a, disp_scalar_int(2), &t));
  cross_state c = {0};
  c.t = t, c.leaf = a;
  ASSERT_OK(disp_tensor_retain_grad(t));
  ASSERT_OK(disp_tensor_register_hook(t, one_shot_cross, &c, count_destroy, &c.self_id));
  ASSERT_OK(disp_tensor_register_hook(a, leaf_hook, &c, count_destroy, &c.leaf_id));
  if (backward_through(t)) return 1;
  ASSERT_EQ_INT(c.self_calls, 1);
  ASSERT_EQ_INT(c.leaf_calls, 0);
  ASSERT_EQ_INT(c.destroyed, 2);
  ASSERT_EQ_INT(c.destroyed_while_running, 0);
  ASSERT_TRUE(disp_tensor_grad(t) != NULL && ((const float *)disp_tensor_data_ptr(disp_tensor_grad(t)))[0] == 1.0f);
  ASSERT_TRUE(disp_tensor_grad(a) != NULL && ((const float *)disp_tensor_data_ptr(disp_tensor_grad(a)))[0] == 2.0f);
  if (backward_through(t)) return 1; /* nothing runs or is destroyed again */
  ASSERT_EQ_INT(c.self_calls, 1);
  ASSERT_EQ_INT(c.destroyed, 2);
  disp_tensor_release(t), disp_tensor_release(a);
  ASSERT_EQ_INT(c.destroyed, 2);
  return 0;
}

/* A hook's replacement must keep the gradient's size, dtype and device
 * (1.13: "hook 'hook' has changed the size of value"). */
static disp_status replacing_hook(disp_tensor *grad, disp_tensor **repl, void *ctx) {
  int how = *(int *)ctx;
  if (how == 0) return disp_aten_to_dtype(grad, DISP_DTYPE_FLOAT64, false, false, -1, repl);
  if (how == 1) {
    int64_t sz[1] = {7};
    disp_opt_device none = {0};
    disp_opt_bool no = {0};
    return disp_aten_ones((disp_int_list){sz, 1}, DISP_DTYPE_FLOAT32, -1, none, no, repl);
  }
  disp_opt_device meta = {DISP_BACKEND_META, -1, true};
  return disp_aten_to_device(grad, meta, DISP_DTYPE_FLOAT32, false, false, -1, repl);
}

TEST(hook_replacements_keep_size_type_and_device) {
  static const char *const want[3] = {"hook 'hook' has changed the type of value (was float32 got float64)",
                                      "hook 'hook' has changed the size of value",
                                      "hook 'hook' has changed the device of value (was cpu got meta)"};
  for (int leaf = 0; leaf < 2; leaf++)
    for (int how = 0; how < 3; how++) {
      disp_tensor *a = ones(3, 1), *t = NULL, *y = NULL, *s = NULL;
      ASSERT_TRUE(a);
      if (leaf) t = disp_tensor_retain(a);
      else ASSERT_OK(disp_aten_mul_Scalar(a, disp_scalar_int(2), &t));
      ASSERT_OK(disp_tensor_register_hook(t, replacing_hook, &how, NULL, NULL));
      ASSERT_OK(disp_aten_mul_Scalar(t, disp_scalar_int(1), &y));
      ASSERT_OK(disp_aten_sum(y, -1, &s));
      ASSERT_TRUE(disp_autograd_backward(&s, 1, NULL, 0, 0) != DISP_OK);
      ASSERT_CONTAINS(disp_last_error(), want[how]);
      ASSERT_TRUE(disp_tensor_grad(a) == NULL); /* nothing accumulated */
      disp_tensor_release(s), disp_tensor_release(y), disp_tensor_release(t), disp_tensor_release(a);
    }
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(detach__of_a_view_is_refused),
    TEST_ENTRY(resize__and_set__of_tensors_that_require_grad_are_refused),
    TEST_ENTRY(function_marks_are_copied),
    TEST_ENTRY(function_def_and_name_are_copied),
    TEST_ENTRY(hooks_may_edit_the_hook_list_while_they_run),
    TEST_ENTRY(hooks_removed_while_running_are_destroyed_once_after),
    TEST_ENTRY(hook_replacements_keep_size_type_and_device),
    TEST_END};
TEST_MAIN()
