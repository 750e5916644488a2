/*
 * test_stress.c - many threads calling an operator while another thread
 * registers and removes kernels on it. Run under ThreadSanitizer in CI:
 * no data race, no crash, no torn table (every call runs one of the
 * kernels that were registered at some point, with a consistent key set).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <disp.h>

#include "test.h"

enum { CALLERS = 3, CALLS = 20000 };

static const disp_op *g_op;
static atomic_int g_stop;
static atomic_long g_cpu_a, g_cpu_b, g_autograd, g_errors, g_flips;

static disp_status cpu_a(disp_tensor *self, disp_tensor **out) {
  atomic_fetch_add_explicit(&g_cpu_a, 1, memory_order_relaxed);
  *out = disp_tensor_retain(self);
  return DISP_OK;
}

static disp_status cpu_b(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)op, (void)s, (void)ud;
  /* A consistent table gives this kernel exactly the CPU key. */
  if (disp_keyset_highest_key(ks) != DISP_KEY_CPU) atomic_fetch_add(&g_errors, 1);
  atomic_fetch_add_explicit(&g_cpu_b, 1, memory_order_relaxed);
  return DISP_OK; /* self stays on the stack as the return */
}

static disp_status autograd_kernel(disp_keyset ks, disp_tensor *self, disp_tensor **out) {
  atomic_fetch_add_explicit(&g_autograd, 1, memory_order_relaxed);
  disp_status st;
  DISP_REDISPATCH(st, g_op, disp_keyset_below(ks), (disp_tensor *, disp_tensor **), self, out);
  return st;
}

/* Until the calls have met both configurations (on a loaded machine the
 * writer's window can be missed many times); bounded by the writer's flips. */
static int seen_both(void) {
  return (atomic_load(&g_cpu_b) > 0 && atomic_load(&g_autograd) > 0) || atomic_load(&g_flips) > 200000;
}

static void *caller(void *arg) {
  long id = (long)(intptr_t)arg;
  int64_t sizes[1] = {4};
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK) {
    atomic_fetch_add(&g_errors, 1);
    return NULL;
  }
  disp_stack *s = disp_stack_new();
  /* At least CALLS calls, and on until the writer has flipped a few times:
   * on two cores the callers could otherwise finish before it starts. */
  for (int i = 0; i < CALLS || atomic_load(&g_flips) < 20 || !seen_both(); i++) {
    disp_tensor *out = NULL;
    disp_status st;
    if ((i + id) % 4 == 0) {
      disp_stack_push_tensor(s, t);
      st = disp_call_boxed(g_op, s);
      if (st == DISP_OK && (disp_stack_size(s) != 1 || disp_stack_at(s, 0)->u.tensor != t)) st = DISP_ERR_KERNEL;
      disp_stack_clear(s);
    } else {
      DISP_CALL(st, g_op, disp_tensor_keyset(t), (disp_tensor *, disp_tensor **), t, &out);
      if (st == DISP_OK && out != t) st = DISP_ERR_KERNEL;
      disp_tensor_release(out);
    }
    if (st != DISP_OK) atomic_fetch_add(&g_errors, 1);
  }
  disp_stack_free(s);
  if (disp_tensor_refcount(t) != 1) atomic_fetch_add(&g_errors, 1);
  disp_tensor_release(t);
  return NULL;
}

static void *writer(void *arg) {
  (void)arg;
  /* Flip until the callers are done, so every call races with a change. */
  while (!atomic_load(&g_stop)) {
    disp_library *b = NULL, *ag = NULL;
    disp_library_new(DISP_LIBRARY_IMPL, "stress", DISP_KEY_CPU, __FILE__, __LINE__, &b);
    disp_library_impl(b, "op", disp_kernel_boxed(cpu_b, NULL, NULL), NULL);
    disp_library_new(DISP_LIBRARY_IMPL, "stress", DISP_KEY_AUTOGRAD, __FILE__, __LINE__, &ag);
    disp_library_impl(ag, "op", disp_kernel_unboxed(DISP_FN(autograd_kernel), DISP_KERNEL_WITH_KEYSET), NULL);
    /* A fallback change recomputes every operator's table too. */
    disp_library *fb = NULL;
    disp_library_new(DISP_LIBRARY_IMPL, "_", DISP_KEY_PRIVATEUSE3, __FILE__, __LINE__, &fb);
    disp_library_fallback(fb, disp_kernel_fallthrough(), NULL);
    disp_library_free(fb);
    disp_library_free(ag);
    disp_library_free(b);
    atomic_fetch_add(&g_flips, 1);
  }
  return NULL;
}

TEST(calls_race_with_registration) {
  disp_library *def = NULL, *a = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "stress", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  ASSERT_OK(disp_library_def(def, "op(Tensor self) -> Tensor", NULL));
  ASSERT_OK(disp_op_find("stress::op", &g_op));
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "stress", DISP_KEY_CPU, __FILE__, __LINE__, &a));
  ASSERT_OK(disp_library_impl(a, "op", disp_kernel_unboxed(DISP_FN(cpu_a), 0), NULL));
  pthread_t callers[CALLERS], w;
  for (long i = 0; i < CALLERS; i++) ASSERT_EQ_INT(pthread_create(&callers[i], NULL, caller, (void *)(intptr_t)i), 0);
  ASSERT_EQ_INT(pthread_create(&w, NULL, writer, NULL), 0);
  for (int i = 0; i < CALLERS; i++) pthread_join(callers[i], NULL);
  atomic_store(&g_stop, 1);
  pthread_join(w, NULL);
  ASSERT_EQ_INT(atomic_load(&g_errors), 0);
  long total = atomic_load(&g_cpu_a) + atomic_load(&g_cpu_b);
  ASSERT_TRUE(total >= (long)CALLERS * CALLS);
  /* Both configurations were seen: the calls really raced the changes. */
  ASSERT_TRUE(atomic_load(&g_cpu_a) > 0 && atomic_load(&g_cpu_b) > 0 && atomic_load(&g_autograd) > 0);
  /* With only the first kernel left, calls reach it again. */
  char *table = disp_op_dump_table(g_op);
  ASSERT_CONTAINS(table, "CPU: registered at tests/test_stress.c");
  free(table);
  disp_library_free(a);
  disp_library_free(def);
  return 0;
}

static void quiet(const char *msg, void *ud) { (void)msg, (void)ud; }

/* Fixture, run in each case's process before the case. */
static int setup_quiet_warnings(void) {
  disp_set_warning_handler(quiet, NULL);
  return 0;
}

TEST_LIST = {TEST_ENTRY(calls_race_with_registration), TEST_END};

TEST_MAIN_WITH(setup_quiet_warnings, NULL)
