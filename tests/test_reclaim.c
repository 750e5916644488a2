/*
 * test_reclaim.c - retired tables and kernel entries are freed while other
 * threads call (Note [Reclaiming retired tables]), fallback changes touch no
 * table, and user callbacks run outside the registry lock (Note [User
 * callbacks run unlocked]). CI also runs it under ThreadSanitizer.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include <disp.h>

#include "reclaim_internal.h"
#include "test.h"

static const disp_op *g_op;
static atomic_int g_stop;
static atomic_long g_calls, g_errors;

static disp_status cpu_identity(disp_tensor *self, disp_tensor **out) {
  *out = disp_tensor_retain(self);
  return DISP_OK;
}

static disp_status cpu_boxed(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)op, (void)ks, (void)s, (void)ud;
  return DISP_OK; /* self stays on the stack as the return */
}

static disp_tensor *cpu_tensor(void) {
  int64_t sizes[1] = {2};
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK)
    return NULL;
  return t;
}

/* Calls until told to stop, typed and boxed; every call must succeed and
 * return its argument, whichever kernel ran. */
static void *caller(void *arg) {
  (void)arg;
  disp_tensor *t = cpu_tensor();
  disp_stack *s = disp_stack_new();
  if (!t || !s) atomic_fetch_add(&g_errors, 1);
  for (long i = 0; t && s && !atomic_load_explicit(&g_stop, memory_order_relaxed); i++) {
    disp_status st;
    disp_tensor *out = NULL;
    if (i % 3 == 0) {
      disp_stack_push_tensor(s, t);
      st = disp_call_boxed(g_op, s);
      if (st == DISP_OK && disp_stack_at(s, 0)->u.tensor != t) st = DISP_ERR_KERNEL;
      disp_stack_clear(s);
    } else {
      DISP_CALL(st, g_op, disp_tensor_keyset(t), (disp_tensor *, disp_tensor **), t, &out);
      if (st == DISP_OK && out != t) st = DISP_ERR_KERNEL;
      disp_tensor_release(out);
    }
    if (st != DISP_OK) atomic_fetch_add(&g_errors, 1);
    atomic_fetch_add_explicit(&g_calls, 1, memory_order_relaxed);
  }
  disp_stack_free(s);
  disp_tensor_release(t);
  return NULL;
}

static int define_op(const char *ns, disp_library **def, disp_library **impl) {
  char name[64];
  if (disp_library_new(DISP_LIBRARY_DEF, ns, DISP_KEY_UNDEFINED, __FILE__, __LINE__, def) != DISP_OK) return 1;
  if (disp_library_def(*def, "op(Tensor self) -> Tensor", NULL) != DISP_OK) return 1;
  snprintf(name, sizeof name, "%s::op", ns);
  if (disp_op_find(name, &g_op) != DISP_OK) return 1;
  if (disp_library_new(DISP_LIBRARY_IMPL, ns, DISP_KEY_CPU, __FILE__, __LINE__, impl) != DISP_OK) return 1;
  return disp_library_impl(*impl, "op", disp_kernel_unboxed(DISP_FN(cpu_identity), 0), NULL) != DISP_OK;
}

/* Thousands of impl add/remove cycles with two threads calling: what is
 * retired is freed as it goes, never more than a couple of batches pile up. */
TEST(retired_tables_are_freed_while_threads_call) {
  disp_library *def = NULL, *base = NULL;
  ASSERT_EQ_INT(define_op("reclaim_a", &def, &base), 0);
  atomic_store(&g_stop, 0);
  pthread_t th[2];
  for (int i = 0; i < 2; i++) ASSERT_EQ_INT(pthread_create(&th[i], NULL, caller, NULL), 0);
  size_t most = 0;
  for (int cycle = 0; cycle < 5000; cycle++) {
    disp_library *lib = NULL;
    ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "reclaim_a", DISP_KEY_CPU, __FILE__, __LINE__, &lib));
    ASSERT_OK(disp_library_impl(lib, "op", disp_kernel_boxed(cpu_boxed, NULL, NULL), NULL));
    disp_library_free(lib);
    size_t pending = disp__reclaim_pending();
    if (pending > most) most = pending;
  }
  atomic_store(&g_stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  ASSERT_EQ_INT(atomic_load(&g_errors), 0);
  ASSERT_TRUE(atomic_load(&g_calls) > 0);
  /* 5000 cycles retire 20000 objects (a table and an entry per change);
   * all but the last unfreed batch or two are gone. */
  ASSERT_TRUE(most < 1000);
  disp_library_free(base);
  disp_library_free(def);
  return 0;
}

/* Threads that called once and exited do not hold reclamation up. */
static void *call_once(void *arg) {
  (void)arg;
  disp_tensor *t = cpu_tensor(), *out = NULL;
  disp_status st;
  DISP_CALL(st, g_op, disp_tensor_keyset(t), (disp_tensor *, disp_tensor **), t, &out);
  if (st != DISP_OK) atomic_fetch_add(&g_errors, 1);
  disp_tensor_release(out);
  disp_tensor_release(t);
  return NULL;
}

TEST(exited_threads_do_not_hold_reclamation) {
  disp_library *def = NULL, *base = NULL;
  ASSERT_EQ_INT(define_op("reclaim_b", &def, &base), 0);
  for (int i = 0; i < 20; i++) {
    pthread_t th;
    ASSERT_EQ_INT(pthread_create(&th, NULL, call_once, NULL), 0);
    pthread_join(th, NULL);
  }
  for (int cycle = 0; cycle < 200; cycle++) {
    disp_library *lib = NULL;
    ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "reclaim_b", DISP_KEY_CPU, __FILE__, __LINE__, &lib));
    ASSERT_OK(disp_library_impl(lib, "op", disp_kernel_boxed(cpu_boxed, NULL, NULL), NULL));
    disp_library_free(lib);
  }
  ASSERT_TRUE(disp__reclaim_pending() < 200);
  ASSERT_EQ_INT(atomic_load(&g_errors), 0);
  disp_library_free(base);
  disp_library_free(def);
  return 0;
}

/* Note [Fallback proxies]: a boxed fallback over a thousand operators
 * replaces no table; calls on its key reach it at once and fail cleanly
 * again after it is removed. */
static disp_status pu1_fallback(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)op, (void)ks, (void)s;
  atomic_fetch_add((atomic_long *)ud, 1);
  return DISP_OK;
}

TEST(fallback_changes_touch_no_table) {
  disp_library *def = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "reclaim_fb", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  for (int i = 0; i < 1000; i++) {
    char schema[64];
    snprintf(schema, sizeof schema, "op%d(Tensor self) -> Tensor", i);
    ASSERT_OK(disp_library_def(def, schema, NULL));
  }
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("reclaim_fb::op7", &op));
  static atomic_long hits;
  size_t before = disp__reclaim_pending();
  disp_library *fb = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "_", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &fb));
  ASSERT_OK(disp_library_fallback(fb, disp_kernel_boxed(pu1_fallback, &hits, NULL), NULL));
  ASSERT_TRUE(disp__reclaim_pending() <= before); /* nothing retired: no table replaced */
  disp_stack *s = disp_stack_new();
  disp_tensor *t = cpu_tensor();
  ASSERT_OK(disp_stack_push_tensor(s, t));
  ASSERT_OK(disp_redispatch_boxed(op, disp_keyset_of(DISP_KEY_PRIVATEUSE1), s));
  ASSERT_EQ_INT(atomic_load(&hits), 1);
  disp_stack_clear(s);
  char *table = disp_op_dump_table(op);
  ASSERT_CONTAINS(table, "PrivateUse1: registered at tests/test_reclaim.c");
  free(table);
  disp_library_free(fb);
  ASSERT_OK(disp_stack_push_tensor(s, t));
  ASSERT_EQ_INT(disp_redispatch_boxed(op, disp_keyset_of(DISP_KEY_PRIVATEUSE1), s), DISP_ERR_NO_KERNEL);
  ASSERT_CONTAINS(disp_last_error(), "Could not run 'reclaim_fb::op7' with arguments from the 'PrivateUse1' backend");
  ASSERT_EQ_INT(disp_stack_size(s), 0);
  ASSERT_EQ_INT(atomic_load(&hits), 1);
  disp_stack_free(s);
  disp_tensor_release(t);
  disp_library_free(def);
  return 0;
}

/* Case 6 of the hardening issue: callbacks that call back into the library
 * from a kernel's destroy and from the warning handler. Before, both ran
 * under the registry lock and deadlocked. */
static atomic_int g_destroy_found, g_warn_found;

static void destroy_and_look_up(void *ud) {
  const disp_op *op = NULL;
  if (disp_op_find((const char *)ud, &op) == DISP_OK) atomic_fetch_add(&g_destroy_found, 1);
}

static void warn_and_look_up(const char *msg, void *ud) {
  (void)msg;
  const disp_op *op = NULL;
  if (disp_op_find((const char *)ud, &op) == DISP_OK) atomic_fetch_add(&g_warn_found, 1);
}

TEST(user_callbacks_may_call_back_in) {
  disp_library *def = NULL, *base = NULL;
  ASSERT_EQ_INT(define_op("reclaim_cb", &def, &base), 0);
  disp_warning_handler prev = disp_set_warning_handler(warn_and_look_up, (void *)"reclaim_cb::op");
  disp_library *lib = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "reclaim_cb", DISP_KEY_CPU, __FILE__, __LINE__, &lib));
  /* Overrides the base kernel: a warning. */
  ASSERT_OK(disp_library_impl(lib, "op", disp_kernel_boxed(cpu_boxed, (void *)"reclaim_cb::op", destroy_and_look_up), NULL));
  ASSERT_EQ_INT(atomic_load(&g_warn_found), 1);
  ASSERT_EQ_INT(atomic_load(&g_destroy_found), 0);
  disp_library_free(lib); /* removal: the destroy callback */
  ASSERT_EQ_INT(atomic_load(&g_destroy_found), 1);
  disp_set_warning_handler(prev, NULL);
  disp_library_free(base);
  disp_library_free(def);
  return 0;
}

static void quiet(const char *msg, void *ud) { (void)msg, (void)ud; }

/* Fixture, run in each case's process before the case. */
static int setup_quiet_warnings(void) {
  disp_set_warning_handler(quiet, NULL);
  return 0;
}

TEST_LIST = {         TEST_ENTRY(retired_tables_are_freed_while_threads_call),
             TEST_ENTRY(exited_threads_do_not_hold_reclamation),
             TEST_ENTRY(fallback_changes_touch_no_table),
             TEST_ENTRY(user_callbacks_may_call_back_in),
             TEST_END};

TEST_MAIN_WITH(setup_quiet_warnings, NULL)
