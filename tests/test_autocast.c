/*
 * test_autocast - the autocast layer: thread state and regions, the
 * built-in AutocastCPU kernels (values against float32 with bfloat16
 * tolerance), the three cast policies, the cast cache, AutocastCUDA's list
 * on a fake CUDA device, an operator author's own AutocastCPU kernel and a
 * backend's AutocastPrivateUse1 kernel (seed 002, step 5), and the errors.
 *
 * Inputs are multiples of 1/8 below 3 in magnitude, exact in bfloat16, so
 * a lower-precision result differs from float32 only by its final rounding.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "test.h"

static disp_device dev(disp_backend b) { return disp_device_make(b, b == DISP_BACKEND_CPU ? -1 : 0); }

static uint64_t g_state = 7;
static float rnd8(void) {
  g_state = g_state * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((int64_t)((g_state >> 33) % 41) - 20) / 8.0f;
}

/* A float32 tensor of `dt` with random multiples of 1/8 (cast outside autocast). */
static disp_tensor *randt(const int64_t *sizes, int nd, disp_dtype dt) {
  disp_tensor *t = NULL, *r = NULL;
  if (disp_tensor_empty(sizes, nd, DISP_DTYPE_FLOAT32, dev(DISP_BACKEND_CPU), &t) != DISP_OK) return NULL;
  float *p = disp_tensor_data_ptr(t);
  for (int64_t i = 0; i < disp_tensor_numel(t); i++) p[i] = rnd8();
  if (dt == DISP_DTYPE_FLOAT32) return t;
  disp_status st = disp_aten_to_dtype(t, dt, false, false, -1, &r);
  disp_tensor_release(t);
  return st == DISP_OK ? r : NULL;
}

static disp_tensor *int_targets(const int64_t *vals, int64_t n) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(&n, 1, DISP_DTYPE_INT64, dev(DISP_BACKEND_CPU), &t) != DISP_OK) return NULL;
  memcpy(disp_tensor_data_ptr(t), vals, sizeof(int64_t) * (size_t)n);
  return t;
}

static int close_to(disp_tensor *got, disp_tensor *want, double rtol, double atol) {
  int ok = 0;
  if (disp_tensor_allclose(got, want, rtol, atol, 0, &ok) != DISP_OK) return 0;
  return ok;
}

static disp_int_list il(const int64_t *v, size_t n) {
  disp_int_list l = {v, n};
  return l;
}

static disp_autocast_guard cpu_on(void) {
  disp_autocast_guard g;
  disp_status st = disp_autocast_enter(DISP_BACKEND_CPU, DISP_DTYPE_BFLOAT16, 1, 1, &g);
  if (st != DISP_OK) fprintf(stderr, "enter failed: %s\n", disp_last_error());
  return g;
}

/* bfloat16 keeps 8 significant bits: one rounding of the result. */
#define BF16_RTOL 1e-2
#define BF16_ATOL 2e-2

/* ---- state ---------------------------------------------------------------- */

TEST(defaults_match_pytorch_1_13) {
  ASSERT_FALSE(disp_autocast_is_enabled(DISP_BACKEND_CPU));
  ASSERT_FALSE(disp_autocast_is_enabled(DISP_BACKEND_CUDA));
  ASSERT_FALSE(disp_autocast_is_enabled(DISP_BACKEND_PRIVATEUSE1));
  ASSERT_FALSE(disp_autocast_is_enabled(DISP_BACKEND_XLA));
  disp_dtype dt;
  ASSERT_OK(disp_autocast_get_dtype(DISP_BACKEND_CPU, &dt));
  ASSERT_EQ_INT(dt, DISP_DTYPE_BFLOAT16);
  ASSERT_OK(disp_autocast_get_dtype(DISP_BACKEND_CUDA, &dt));
  ASSERT_EQ_INT(dt, DISP_DTYPE_FLOAT16);
  ASSERT_OK(disp_autocast_get_dtype(DISP_BACKEND_PRIVATEUSE1, &dt));
  ASSERT_EQ_INT(dt, DISP_DTYPE_FLOAT16);
  ASSERT_TRUE(disp_autocast_is_cache_enabled());
  ASSERT_EQ_INT(disp_autocast_key(DISP_BACKEND_CPU), DISP_KEY_AUTOCAST_CPU);
  ASSERT_EQ_INT(disp_autocast_key(DISP_BACKEND_CUDA), DISP_KEY_AUTOCAST_CUDA);
  ASSERT_EQ_INT(disp_autocast_key(DISP_BACKEND_PRIVATEUSE1), DISP_KEY_AUTOCAST_PRIVATEUSE1);
  ASSERT_EQ_INT(disp_autocast_key(DISP_BACKEND_META), DISP_KEY_UNDEFINED);
  /* "on" is the excluded set itself */
  ASSERT_OK(disp_autocast_set_enabled(DISP_BACKEND_CPU, 1));
  ASSERT_FALSE(disp_keyset_has(disp_tls_excluded(), DISP_KEY_AUTOCAST_CPU));
  ASSERT_TRUE(disp_keyset_has(disp_tls_excluded(), DISP_KEY_AUTOCAST_CUDA));
  ASSERT_OK(disp_autocast_set_enabled(DISP_BACKEND_CPU, 0));
  ASSERT_TRUE(disp_keyset_has(disp_tls_excluded(), DISP_KEY_AUTOCAST_CPU));
  return 0;
}

TEST(nested_regions_restore_state) {
  disp_autocast_guard outer, inner, off;
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_CUDA, DISP_DTYPE_BFLOAT16, 1, 1, &outer));
  ASSERT_TRUE(disp_autocast_is_enabled(DISP_BACKEND_CUDA));
  ASSERT_FALSE(disp_autocast_is_enabled(DISP_BACKEND_CPU));
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_CUDA, DISP_DTYPE_FLOAT16, 1, 0, &inner));
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_CUDA, DISP_DTYPE_FLOAT16, 0, 0, &off));
  ASSERT_FALSE(disp_autocast_is_enabled(DISP_BACKEND_CUDA));
  /* three regions open (enabled=0 counts too, as in 1.13) */
  ASSERT_EQ_INT(disp_autocast_increment_nesting(), 4);
  ASSERT_EQ_INT(disp_autocast_decrement_nesting(), 3);
  disp_autocast_exit(&off);
  ASSERT_TRUE(disp_autocast_is_enabled(DISP_BACKEND_CUDA));
  disp_dtype dt;
  ASSERT_OK(disp_autocast_get_dtype(DISP_BACKEND_CUDA, &dt));
  ASSERT_EQ_INT(dt, DISP_DTYPE_FLOAT16);
  ASSERT_FALSE(disp_autocast_is_cache_enabled());
  ASSERT_OK(disp_autocast_exit(&inner));
  /* a second exit of one guard is refused and changes nothing */
  ASSERT_STATUS(disp_autocast_exit(&inner), DISP_ERR_INVALID_ARG);
  ASSERT_OK(disp_autocast_get_dtype(DISP_BACKEND_CUDA, &dt));
  ASSERT_EQ_INT(dt, DISP_DTYPE_BFLOAT16);
  ASSERT_TRUE(disp_autocast_is_cache_enabled());
  ASSERT_TRUE(disp_autocast_is_enabled(DISP_BACKEND_CUDA));
  disp_autocast_exit(&outer);
  ASSERT_FALSE(disp_autocast_is_enabled(DISP_BACKEND_CUDA));
  ASSERT_OK(disp_autocast_get_dtype(DISP_BACKEND_CUDA, &dt));
  ASSERT_EQ_INT(dt, DISP_DTYPE_FLOAT16);
  ASSERT_EQ_INT(disp_autocast_increment_nesting(), 1);
  ASSERT_EQ_INT(disp_autocast_decrement_nesting(), 0);
  return 0;
}

typedef struct seen_state {
  int cpu_enabled, cuda_enabled;
  disp_dtype cuda_dtype;
} seen_state;

static void *other_thread(void *arg) {
  seen_state *s = arg;
  s->cpu_enabled = disp_autocast_is_enabled(DISP_BACKEND_CPU);
  s->cuda_enabled = disp_autocast_is_enabled(DISP_BACKEND_CUDA);
  if (disp_autocast_get_dtype(DISP_BACKEND_CUDA, &s->cuda_dtype) != DISP_OK) s->cuda_dtype = DISP_DTYPE_COUNT;
  return NULL;
}

TEST(state_is_per_thread) {
  disp_autocast_guard g;
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_CUDA, DISP_DTYPE_BFLOAT16, 1, 1, &g));
  ASSERT_OK(disp_autocast_set_enabled(DISP_BACKEND_CPU, 1));
  seen_state s = {-1, -1, DISP_DTYPE_COUNT};
  pthread_t th;
  ASSERT_EQ_INT(pthread_create(&th, NULL, other_thread, &s), 0);
  pthread_join(th, NULL);
  ASSERT_OK(disp_autocast_set_enabled(DISP_BACKEND_CPU, 0));
  disp_dtype mine;
  ASSERT_OK(disp_autocast_get_dtype(DISP_BACKEND_CUDA, &mine));
  disp_autocast_exit(&g);
  ASSERT_EQ_INT(mine, DISP_DTYPE_BFLOAT16);
  ASSERT_EQ_INT(s.cpu_enabled, 0);
  ASSERT_EQ_INT(s.cuda_enabled, 0);
  ASSERT_EQ_INT(s.cuda_dtype, DISP_DTYPE_FLOAT16);
  return 0;
}

TEST(bad_dtype_and_device_are_errors_state_unchanged) {
  ASSERT_STATUS(disp_autocast_set_dtype(DISP_BACKEND_CPU, DISP_DTYPE_INT64), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "AutocastCPU only support Bfloat16");
  ASSERT_CONTAINS(disp_last_error(), "int64");
  ASSERT_STATUS(disp_autocast_set_dtype(DISP_BACKEND_CPU, DISP_DTYPE_FLOAT16), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_autocast_set_dtype(DISP_BACKEND_CUDA, DISP_DTYPE_FLOAT32), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "must be float16 or bfloat16, got float32");
  ASSERT_STATUS(disp_autocast_set_dtype(DISP_BACKEND_PRIVATEUSE1, (disp_dtype)99), DISP_ERR_INVALID_ARG);
  disp_dtype dt;
  ASSERT_OK(disp_autocast_get_dtype(DISP_BACKEND_CPU, &dt));
  ASSERT_EQ_INT(dt, DISP_DTYPE_BFLOAT16);
  ASSERT_OK(disp_autocast_get_dtype(DISP_BACKEND_CUDA, &dt));
  ASSERT_EQ_INT(dt, DISP_DTYPE_FLOAT16);
  ASSERT_OK(disp_autocast_set_dtype(DISP_BACKEND_PRIVATEUSE1, DISP_DTYPE_BFLOAT16));
  ASSERT_OK(disp_autocast_set_dtype(DISP_BACKEND_PRIVATEUSE1, DISP_DTYPE_FLOAT16));

  ASSERT_STATUS(disp_autocast_set_enabled(DISP_BACKEND_META, 1), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "device type 'meta' has no autocast");
  ASSERT_STATUS(disp_autocast_get_dtype(DISP_BACKEND_XLA, &dt), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_autocast_get_dtype(DISP_BACKEND_CPU, NULL), DISP_ERR_INVALID_ARG);

  /* a refused region changes nothing, and its guard is inert */
  disp_autocast_guard g;
  ASSERT_STATUS(disp_autocast_enter(DISP_BACKEND_CPU, DISP_DTYPE_FLOAT32, 1, 1, &g), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "disp_autocast_enter");
  ASSERT_FALSE(disp_autocast_is_enabled(DISP_BACKEND_CPU));
  ASSERT_EQ_INT(disp_autocast_increment_nesting(), 1);
  ASSERT_EQ_INT(disp_autocast_decrement_nesting(), 0);
  ASSERT_STATUS(disp_autocast_exit(&g), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_INT(disp_autocast_increment_nesting(), 1);
  ASSERT_EQ_INT(disp_autocast_decrement_nesting(), 0);
  ASSERT_STATUS(disp_autocast_enter(DISP_BACKEND_HIP, DISP_DTYPE_FLOAT16, 1, 1, &g), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_autocast_enter(DISP_BACKEND_CPU, DISP_DTYPE_BFLOAT16, 1, 1, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_autocast_exit(NULL), DISP_ERR_INVALID_ARG);
  return 0;
}

/* ---- region order --------------------------------------------------------- */

/* The thread's autocast state, to show that a refused exit changes nothing. */
typedef struct ac_state {
  int cpu_on, cuda_on, cache_on, nesting;
  disp_dtype cpu_dt, cuda_dt;
} ac_state;

static ac_state ac_snapshot(void) {
  ac_state s;
  s.cpu_on = disp_autocast_is_enabled(DISP_BACKEND_CPU);
  s.cuda_on = disp_autocast_is_enabled(DISP_BACKEND_CUDA);
  s.cache_on = disp_autocast_is_cache_enabled();
  s.nesting = disp_autocast_increment_nesting() - 1;
  disp_autocast_decrement_nesting();
  disp_autocast_get_dtype(DISP_BACKEND_CPU, &s.cpu_dt);
  disp_autocast_get_dtype(DISP_BACKEND_CUDA, &s.cuda_dt);
  return s;
}

static int ac_same(ac_state a, ac_state b) {
  return a.cpu_on == b.cpu_on && a.cuda_on == b.cuda_on && a.cache_on == b.cache_on &&
         a.nesting == b.nesting && a.cpu_dt == b.cpu_dt && a.cuda_dt == b.cuda_dt;
}

TEST(out_of_order_exit_is_refused_and_changes_nothing) {
  disp_autocast_guard a, b;
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_CPU, DISP_DTYPE_BFLOAT16, 1, 1, &a));
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_CUDA, DISP_DTYPE_BFLOAT16, 1, 0, &b));
  ac_state inside = ac_snapshot();
  ASSERT_EQ_INT(inside.nesting, 2);
  ASSERT_STATUS(disp_autocast_exit(&a), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "autocast regions must be exited in reverse order of entry");
  ASSERT_TRUE(ac_same(ac_snapshot(), inside));
  /* Exiting in the right order still works, and leaves autocast off. */
  ASSERT_OK(disp_autocast_exit(&b));
  ASSERT_OK(disp_autocast_exit(&a));
  ac_state after = ac_snapshot();
  ASSERT_FALSE(after.cpu_on);
  ASSERT_FALSE(after.cuda_on);
  ASSERT_TRUE(after.cache_on);
  ASSERT_EQ_INT(after.nesting, 0);
  ASSERT_EQ_INT(after.cuda_dt, DISP_DTYPE_FLOAT16);
  return 0;
}

TEST(exit_of_a_guard_not_open_is_refused) {
  ac_state outside = ac_snapshot();
  disp_autocast_guard never;
  memset(&never, 0, sizeof never);
  ASSERT_STATUS(disp_autocast_exit(&never), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "not an open autocast region");
  ASSERT_TRUE(ac_same(ac_snapshot(), outside));

  disp_autocast_guard g;
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_CPU, DISP_DTYPE_BFLOAT16, 1, 1, &g));
  ac_state inside = ac_snapshot();
  ASSERT_STATUS(disp_autocast_exit(&never), DISP_ERR_INVALID_ARG); /* another guard */
  ASSERT_TRUE(ac_same(ac_snapshot(), inside));
  /* A copy of the guard is the same region: either may exit it, once. */
  disp_autocast_guard copy = g;
  ASSERT_OK(disp_autocast_exit(&copy));
  ASSERT_TRUE(ac_same(ac_snapshot(), outside));
  ASSERT_STATUS(disp_autocast_exit(&g), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_autocast_exit(&copy), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(ac_same(ac_snapshot(), outside));
  return 0;
}

static void *exit_elsewhere(void *guard) {
  disp_status st = disp_autocast_exit(guard);
  return (void *)(intptr_t)(st == DISP_ERR_INVALID_ARG &&
                            strstr(disp_last_error(), "not an open autocast region") != NULL);
}

TEST(exit_from_another_thread_is_refused) {
  disp_autocast_guard g;
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_CPU, DISP_DTYPE_BFLOAT16, 1, 1, &g));
  ac_state inside = ac_snapshot();
  pthread_t t;
  void *refused = NULL;
  ASSERT_EQ_INT(pthread_create(&t, NULL, exit_elsewhere, &g), 0);
  ASSERT_EQ_INT(pthread_join(t, &refused), 0);
  ASSERT_TRUE(refused != NULL);
  ASSERT_TRUE(ac_same(ac_snapshot(), inside));
  ASSERT_OK(disp_autocast_exit(&g));
  ASSERT_FALSE(disp_autocast_is_enabled(DISP_BACKEND_CPU));
  return 0;
}

TEST(too_many_nested_regions_are_refused) {
  enum { N = 64 };
  static disp_autocast_guard g[N + 1];
  for (int i = 0; i < N; i++) ASSERT_OK(disp_autocast_enter(DISP_BACKEND_CPU, DISP_DTYPE_BFLOAT16, i % 2, 1, &g[i]));
  ac_state deep = ac_snapshot();
  ASSERT_STATUS(disp_autocast_enter(DISP_BACKEND_CPU, DISP_DTYPE_BFLOAT16, 1, 1, &g[N]), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "more than 64 nested autocast regions");
  ASSERT_TRUE(ac_same(ac_snapshot(), deep));
  for (int i = N - 1; i >= 0; i--) ASSERT_OK(disp_autocast_exit(&g[i]));
  ASSERT_FALSE(disp_autocast_is_enabled(DISP_BACKEND_CPU));
  ASSERT_EQ_INT(ac_snapshot().nesting, 0);
  return 0;
}

/* ---- helpers for operator authors --------------------------------------- */

TEST(eligibility_and_promote_type) {
  int64_t sz[1] = {2};
  disp_tensor *f32 = randt(sz, 1, DISP_DTYPE_FLOAT32), *bf = randt(sz, 1, DISP_DTYPE_BFLOAT16);
  disp_tensor *f64 = randt(sz, 1, DISP_DTYPE_FLOAT64), *f16 = randt(sz, 1, DISP_DTYPE_FLOAT16);
  disp_tensor *i64 = int_targets((const int64_t[]){1, 2}, 2), *meta = NULL;
  ASSERT_OK(disp_tensor_empty(sz, 1, DISP_DTYPE_FLOAT32, dev(DISP_BACKEND_META), &meta));
  ASSERT_TRUE(f32 && bf && f64 && f16 && i64);
  ASSERT_TRUE(disp_autocast_is_eligible(f32, DISP_BACKEND_CPU));
  ASSERT_TRUE(disp_autocast_is_eligible(bf, DISP_BACKEND_CPU));
  ASSERT_FALSE(disp_autocast_is_eligible(f64, DISP_BACKEND_CPU));
  ASSERT_FALSE(disp_autocast_is_eligible(i64, DISP_BACKEND_CPU));
  ASSERT_FALSE(disp_autocast_is_eligible(NULL, DISP_BACKEND_CPU));
  ASSERT_FALSE(disp_autocast_is_eligible(f32, DISP_BACKEND_CUDA));
  ASSERT_FALSE(disp_autocast_is_eligible(meta, DISP_BACKEND_CPU));
  ASSERT_FALSE(disp_autocast_is_eligible(f32, DISP_BACKEND_META));

  disp_dtype to;
  ASSERT_OK(disp_autocast_promote_type(DISP_DTYPE_BFLOAT16, DISP_BACKEND_CPU, (disp_tensor *[]){bf, bf}, 2, &to));
  ASSERT_EQ_INT(to, DISP_DTYPE_BFLOAT16);
  ASSERT_OK(disp_autocast_promote_type(DISP_DTYPE_BFLOAT16, DISP_BACKEND_CPU, (disp_tensor *[]){bf, f32}, 2, &to));
  ASSERT_EQ_INT(to, DISP_DTYPE_FLOAT32);
  /* float64, integer, None and other-device tensors do not take part */
  ASSERT_OK(disp_autocast_promote_type(DISP_DTYPE_BFLOAT16, DISP_BACKEND_CPU,
                                       (disp_tensor *[]){f64, i64, NULL, meta, bf}, 5, &to));
  ASSERT_EQ_INT(to, DISP_DTYPE_BFLOAT16);
  ASSERT_OK(disp_autocast_promote_type(DISP_DTYPE_BFLOAT16, DISP_BACKEND_CPU, NULL, 0, &to));
  ASSERT_EQ_INT(to, DISP_DTYPE_BFLOAT16);
  to = DISP_DTYPE_BOOL;
  ASSERT_STATUS(disp_autocast_promote_type(DISP_DTYPE_BFLOAT16, DISP_BACKEND_CPU, (disp_tensor *[]){bf, f16}, 2, &to),
                DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "Unexpected floating ScalarType in at::autocast::prioritize");
  ASSERT_EQ_INT(to, DISP_DTYPE_BOOL);
  ASSERT_STATUS(disp_autocast_promote_type(DISP_DTYPE_FLOAT64, DISP_BACKEND_CPU, (disp_tensor *[]){bf}, 1, &to),
                DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "promote type is double in at::autocast::prioritize");
  ASSERT_STATUS(disp_autocast_promote_type(DISP_DTYPE_BFLOAT16, DISP_BACKEND_VE, (disp_tensor *[]){bf}, 1, &to),
                DISP_ERR_INVALID_ARG);

  /* cached_cast: ineligible or same dtype -> the tensor itself, retained */
  disp_tensor *r = NULL;
  ASSERT_OK(disp_autocast_cached_cast(DISP_DTYPE_BFLOAT16, f64, DISP_BACKEND_CPU, &r));
  ASSERT_TRUE(r == f64);
  ASSERT_EQ_INT(disp_tensor_refcount(f64), 2);
  disp_tensor_release(r);
  ASSERT_OK(disp_autocast_cached_cast(DISP_DTYPE_BFLOAT16, bf, DISP_BACKEND_CPU, &r));
  ASSERT_TRUE(r == bf);
  disp_tensor_release(r);
  ASSERT_OK(disp_autocast_cached_cast(DISP_DTYPE_BFLOAT16, NULL, DISP_BACKEND_CPU, &r));
  ASSERT_TRUE(r == NULL);
  ASSERT_OK(disp_autocast_cached_cast(DISP_DTYPE_BFLOAT16, f32, DISP_BACKEND_CPU, &r));
  ASSERT_EQ_INT(disp_tensor_dtype(r), DISP_DTYPE_BFLOAT16);
  ASSERT_TRUE(close_to(r, f32, 0, 0));
  disp_tensor_release(r);
  ASSERT_STATUS(disp_autocast_cached_cast(DISP_DTYPE_BFLOAT16, f32, DISP_BACKEND_LAZY, &r), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(r == NULL);
  ASSERT_STATUS(disp_autocast_cached_cast((disp_dtype)77, f32, DISP_BACKEND_CPU, &r), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_autocast_cached_cast(DISP_DTYPE_BFLOAT16, f32, DISP_BACKEND_CPU, NULL), DISP_ERR_INVALID_ARG);

  /* the exclude helper excludes exactly the device type's key */
  disp_tls_state saved = disp_autocast_exclude_push(DISP_BACKEND_PRIVATEUSE1);
  ASSERT_TRUE(disp_keyset_has(disp_tls_excluded(), DISP_KEY_AUTOCAST_PRIVATEUSE1));
  disp_tls_restore(saved);
  disp_tls_state before = disp_tls_get();
  saved = disp_autocast_exclude_push(DISP_BACKEND_META);
  ASSERT_EQ_INT(disp_tls_excluded().repr, before.excluded.repr);
  disp_tls_restore(saved);

  disp_tensor *all[] = {f32, bf, f64, f16, i64, meta};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) disp_tensor_release(all[i]);
  return 0;
}

/* ---- the built-in AutocastCPU kernels ------------------------------------ */

/* op(a, b) outside autocast (float32) and inside (bfloat16, close to it). */
typedef disp_status (*binop)(disp_tensor *, disp_tensor *, disp_tensor **);

static int check_lower_precision(binop op, disp_tensor *a, disp_tensor *b) {
  disp_tensor *ref = NULL, *low = NULL, *after = NULL;
  ASSERT_OK(op(a, b, &ref));
  ASSERT_EQ_INT(disp_tensor_dtype(ref), DISP_DTYPE_FLOAT32);
  disp_autocast_guard g = cpu_on();
  ASSERT_TRUE(g.active);
  disp_status st = op(a, b, &low);
  disp_autocast_exit(&g);
  ASSERT_OK(st);
  ASSERT_EQ_INT(disp_tensor_dtype(low), DISP_DTYPE_BFLOAT16);
  ASSERT_TRUE(close_to(low, ref, BF16_RTOL, BF16_ATOL));
  ASSERT_OK(op(a, b, &after));
  ASSERT_EQ_INT(disp_tensor_dtype(after), DISP_DTYPE_FLOAT32);
  disp_tensor_release(ref);
  disp_tensor_release(low);
  disp_tensor_release(after);
  return 0;
}

TEST(mm_matmul_bmm_run_in_bfloat16) {
  disp_tensor *a = randt((const int64_t[]){5, 7}, 2, DISP_DTYPE_FLOAT32);
  disp_tensor *b = randt((const int64_t[]){7, 3}, 2, DISP_DTYPE_FLOAT32);
  disp_tensor *ba = randt((const int64_t[]){2, 5, 7}, 3, DISP_DTYPE_FLOAT32);
  disp_tensor *bb = randt((const int64_t[]){2, 7, 3}, 3, DISP_DTYPE_FLOAT32);
  ASSERT_TRUE(a && b && ba && bb);
  if (check_lower_precision(disp_aten_mm, a, b)) return 1;
  if (check_lower_precision(disp_aten_matmul, a, b)) return 1;
  if (check_lower_precision(disp_aten_matmul, ba, b)) return 1;
  if (check_lower_precision(disp_aten_bmm, ba, bb)) return 1;
  disp_tensor_release(a);
  disp_tensor_release(b);
  disp_tensor_release(ba);
  disp_tensor_release(bb);
  return 0;
}

static disp_tensor *g_bias;
static disp_status addmm_ab(disp_tensor *a, disp_tensor *b, disp_tensor **out) {
  return disp_aten_addmm(g_bias, a, b, disp_scalar_double(0.5), disp_scalar_int(2), out);
}
static disp_status linear_ab(disp_tensor *x, disp_tensor *w, disp_tensor **out) {
  return disp_aten_linear(x, w, g_bias, out);
}
static disp_status conv_ab(disp_tensor *x, disp_tensor *w, disp_tensor **out) {
  const int64_t one[2] = {1, 1}, pad[2] = {1, 0};
  return disp_aten_conv2d(x, w, g_bias, il(one, 2), il(pad, 2), il(one, 2), 1, out);
}

TEST(addmm_linear_conv2d_run_in_bfloat16) {
  disp_tensor *a = randt((const int64_t[]){4, 6}, 2, DISP_DTYPE_FLOAT32);
  disp_tensor *b = randt((const int64_t[]){6, 3}, 2, DISP_DTYPE_FLOAT32);
  disp_tensor *w = randt((const int64_t[]){3, 6}, 2, DISP_DTYPE_FLOAT32);
  disp_tensor *x = randt((const int64_t[]){2, 3, 5, 5}, 4, DISP_DTYPE_FLOAT32);
  disp_tensor *k = randt((const int64_t[]){4, 3, 3, 2}, 4, DISP_DTYPE_FLOAT32);
  ASSERT_TRUE(a && b && w && x && k);
  g_bias = randt((const int64_t[]){3}, 1, DISP_DTYPE_FLOAT32);
  if (check_lower_precision(addmm_ab, a, b)) return 1;
  if (check_lower_precision(linear_ab, a, w)) return 1;
  disp_tensor_release(g_bias);
  g_bias = NULL; /* bias=None */
  if (check_lower_precision(linear_ab, a, w)) return 1;
  if (check_lower_precision(conv_ab, x, k)) return 1;
  g_bias = randt((const int64_t[]){4}, 1, DISP_DTYPE_FLOAT32);
  if (check_lower_precision(conv_ab, x, k)) return 1;
  disp_tensor_release(g_bias);
  g_bias = NULL;
  disp_tensor *all[] = {a, b, w, x, k};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) disp_tensor_release(all[i]);
  return 0;
}

TEST(float64_and_disabled_regions_are_untouched) {
  disp_tensor *a = randt((const int64_t[]){3, 4}, 2, DISP_DTYPE_FLOAT64);
  disp_tensor *b = randt((const int64_t[]){4, 2}, 2, DISP_DTYPE_FLOAT64);
  disp_tensor *c = randt((const int64_t[]){3, 4}, 2, DISP_DTYPE_FLOAT32);
  disp_tensor *d = randt((const int64_t[]){4, 2}, 2, DISP_DTYPE_FLOAT32);
  disp_tensor *r = NULL, *s = NULL;
  disp_autocast_guard g = cpu_on(), off;
  disp_status st = disp_aten_mm(a, b, &r);
  /* torch.autocast(enabled=False) nested inside: float32 again */
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_CPU, DISP_DTYPE_BFLOAT16, 0, 1, &off));
  disp_status st2 = disp_aten_mm(c, d, &s);
  disp_autocast_exit(&off);
  ASSERT_TRUE(disp_autocast_is_enabled(DISP_BACKEND_CPU));
  disp_autocast_exit(&g);
  ASSERT_OK(st);
  ASSERT_OK(st2);
  ASSERT_EQ_INT(disp_tensor_dtype(r), DISP_DTYPE_FLOAT64);
  ASSERT_EQ_INT(disp_tensor_dtype(s), DISP_DTYPE_FLOAT32);
  /* CUDA autocast does not touch CPU tensors */
  disp_tensor *t = NULL;
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_CUDA, DISP_DTYPE_FLOAT16, 1, 1, &g));
  st = disp_aten_mm(c, d, &t);
  disp_autocast_exit(&g);
  ASSERT_OK(st);
  ASSERT_EQ_INT(disp_tensor_dtype(t), DISP_DTYPE_FLOAT32);
  disp_tensor *all[] = {a, b, c, d, r, s, t};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) disp_tensor_release(all[i]);
  return 0;
}

TEST(fp32_policy_losses_run_in_float32) {
  /* mse_loss, nll_loss, cross_entropy_loss are on 1.13's CPU fp32 list */
  disp_tensor *x = randt((const int64_t[]){4, 5}, 2, DISP_DTYPE_BFLOAT16);
  disp_tensor *y = randt((const int64_t[]){4, 5}, 2, DISP_DTYPE_BFLOAT16);
  disp_tensor *w = randt((const int64_t[]){5}, 1, DISP_DTYPE_BFLOAT16);
  disp_tensor *tgt = int_targets((const int64_t[]){0, 4, 2, 1}, 4);
  disp_tensor *x32 = NULL, *y32 = NULL, *w32 = NULL;
  ASSERT_TRUE(x && y && w && tgt);
  ASSERT_OK(disp_aten_to_dtype(x, DISP_DTYPE_FLOAT32, false, false, -1, &x32));
  ASSERT_OK(disp_aten_to_dtype(y, DISP_DTYPE_FLOAT32, false, false, -1, &y32));
  ASSERT_OK(disp_aten_to_dtype(w, DISP_DTYPE_FLOAT32, false, false, -1, &w32));
  disp_tensor *ref[3] = {NULL}, *got[3] = {NULL};
  ASSERT_OK(disp_aten_mse_loss(x32, y32, 1, &ref[0]));
  ASSERT_OK(disp_aten_nll_loss(x32, tgt, w32, 1, -100, &ref[1]));
  ASSERT_OK(disp_aten_cross_entropy_loss(x32, tgt, NULL, 2, -100, 0.1, &ref[2]));
  disp_autocast_guard g = cpu_on();
  disp_status st[3];
  st[0] = disp_aten_mse_loss(x, y, 1, &got[0]);
  st[1] = disp_aten_nll_loss(x, tgt, w, 1, -100, &got[1]);
  st[2] = disp_aten_cross_entropy_loss(x, tgt, NULL, 2, -100, 0.1, &got[2]);
  disp_autocast_exit(&g);
  for (int i = 0; i < 3; i++) {
    ASSERT_OK(st[i]);
    ASSERT_EQ_INT(disp_tensor_dtype(got[i]), DISP_DTYPE_FLOAT32);
    ASSERT_TRUE(close_to(got[i], ref[i], 1e-6, 1e-6));
    disp_tensor_release(got[i]);
    disp_tensor_release(ref[i]);
  }
  /* float32 inputs stay float32 (nothing to cast) */
  disp_tensor *r = NULL;
  g = cpu_on();
  disp_status st0 = disp_aten_mse_loss(x32, y32, 2, &r);
  disp_autocast_exit(&g);
  ASSERT_OK(st0);
  ASSERT_EQ_INT(disp_tensor_dtype(r), DISP_DTYPE_FLOAT32);
  disp_tensor *all[] = {x, y, w, tgt, x32, y32, w32, r};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) disp_tensor_release(all[i]);
  return 0;
}

TEST(cat_and_stack_promote) {
  disp_tensor *bf = randt((const int64_t[]){2, 3}, 2, DISP_DTYPE_BFLOAT16);
  disp_tensor *bf2 = randt((const int64_t[]){2, 3}, 2, DISP_DTYPE_BFLOAT16);
  disp_tensor *f32 = randt((const int64_t[]){2, 3}, 2, DISP_DTYPE_FLOAT32);
  disp_tensor *f16 = randt((const int64_t[]){2, 3}, 2, DISP_DTYPE_FLOAT16);
  ASSERT_TRUE(bf && bf2 && f32 && f16);
  disp_tensor *mixed[2] = {bf, f32}, *low[2] = {bf, bf2}, *bad[2] = {bf, f16};
  disp_tensor_list lm = {mixed, 2}, ll = {low, 2}, lb = {bad, 2};
  disp_tensor *c1 = NULL, *c2 = NULL, *s1 = NULL, *s2 = NULL, *e = NULL, *ref = NULL;
  ASSERT_OK(disp_aten_cat(lm, 0, &ref));
  disp_autocast_guard g = cpu_on();
  disp_status st[5];
  st[0] = disp_aten_cat(lm, 0, &c1);
  st[1] = disp_aten_cat(ll, 1, &c2);
  st[2] = disp_aten_stack(lm, 0, &s1);
  st[3] = disp_aten_stack(ll, 2, &s2);
  st[4] = disp_aten_cat(lb, 0, &e);
  char err[512];
  snprintf(err, sizeof err, "%s", disp_last_error());
  disp_autocast_exit(&g);
  for (int i = 0; i < 4; i++) ASSERT_OK(st[i]);
  ASSERT_EQ_INT(disp_tensor_dtype(c1), DISP_DTYPE_FLOAT32);
  ASSERT_TRUE(close_to(c1, ref, 0, 0));
  ASSERT_EQ_INT(disp_tensor_dtype(c2), DISP_DTYPE_BFLOAT16);
  ASSERT_EQ_INT(disp_tensor_size(c2, 1, &(int64_t){0}), DISP_OK);
  ASSERT_EQ_INT(disp_tensor_dtype(s1), DISP_DTYPE_FLOAT32);
  ASSERT_EQ_INT(disp_tensor_ndim(s1), 3);
  ASSERT_EQ_INT(disp_tensor_dtype(s2), DISP_DTYPE_BFLOAT16);
  /* bfloat16 with float16 under CPU autocast: 1.13's prioritize error, named by the op */
  ASSERT_STATUS(st[4], DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(e == NULL);
  ASSERT_STARTS_WITH(err, "aten::cat: ");
  ASSERT_CONTAINS(err, "Unexpected floating ScalarType in at::autocast::prioritize");
  disp_tensor *all[] = {bf, bf2, f32, f16, c1, c2, s1, s2, ref};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) disp_tensor_release(all[i]);
  return 0;
}

/* ---- the cast cache ----------------------------------------------------- */

TEST(cast_cache_holds_leaf_weights_for_one_region) {
  disp_tensor *x = randt((const int64_t[]){2, 4}, 2, DISP_DTYPE_FLOAT32);
  disp_tensor *w = randt((const int64_t[]){3, 4}, 2, DISP_DTYPE_FLOAT32);
  disp_tensor *plain = randt((const int64_t[]){3, 4}, 2, DISP_DTYPE_FLOAT32);
  ASSERT_TRUE(x && w && plain);
  ASSERT_OK(disp_tensor_set_requires_grad(w, 1));
  ASSERT_EQ_INT(disp_autocast_cache_size(), 0);

  disp_autocast_guard g = cpu_on();
  disp_tensor *c1 = NULL, *c2 = NULL, *y1 = NULL, *y2 = NULL, *p1 = NULL, *p2 = NULL;
  ASSERT_OK(disp_autocast_cached_cast(DISP_DTYPE_BFLOAT16, w, DISP_BACKEND_CPU, &c1));
  ASSERT_OK(disp_autocast_cached_cast(DISP_DTYPE_BFLOAT16, w, DISP_BACKEND_CPU, &c2));
  ASSERT_TRUE(c1 == c2); /* cast once */
  ASSERT_EQ_INT(disp_tensor_dtype(c1), DISP_DTYPE_BFLOAT16);
  ASSERT_EQ_INT(disp_autocast_cache_size(), 1);
  /* the cache's reference, and the AccumulateGrad node that c1's grad_fn
   * leads to (autograd records the cast of a leaf that requires grad) */
  ASSERT_EQ_INT(disp_tensor_refcount(w), 3);
  /* the built-in kernels go through the same cache */
  ASSERT_EQ_INT(disp_tensor_refcount(c1), 3); /* c1, c2, cache */
  ASSERT_OK(disp_aten_linear(x, w, NULL, &y1));
  ASSERT_OK(disp_aten_linear(x, w, NULL, &y2));
  ASSERT_EQ_INT(disp_autocast_cache_size(), 1);
  /* x needs no gradient, so neither product saved c1.t() (1.13 saves mat2
   * only for mat1's gradient): the graphs hold no reference to c1 */
  ASSERT_EQ_INT(disp_tensor_refcount(c1), 3);
  disp_tensor_release(y1), disp_tensor_release(y2);
  y1 = y2 = NULL;
  ASSERT_EQ_INT(disp_tensor_refcount(c1), 3);
  /* a tensor that does not require grad, or a float32 target, is not cached */
  ASSERT_OK(disp_autocast_cached_cast(DISP_DTYPE_BFLOAT16, plain, DISP_BACKEND_CPU, &p1));
  ASSERT_OK(disp_autocast_cached_cast(DISP_DTYPE_BFLOAT16, plain, DISP_BACKEND_CPU, &p2));
  ASSERT_TRUE(p1 != p2);
  ASSERT_EQ_INT(disp_autocast_cache_size(), 1);
  /* an inner region with the cache off neither reads nor fills it */
  disp_autocast_guard nocache;
  disp_tensor *c3 = NULL;
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_CPU, DISP_DTYPE_BFLOAT16, 1, 0, &nocache));
  ASSERT_OK(disp_autocast_cached_cast(DISP_DTYPE_BFLOAT16, w, DISP_BACKEND_CPU, &c3));
  disp_autocast_exit(&nocache);
  ASSERT_TRUE(c3 != c1);
  ASSERT_EQ_INT(disp_autocast_cache_size(), 1); /* not the outermost exit: kept */
  disp_autocast_exit(&g);
  ASSERT_EQ_INT(disp_autocast_cache_size(), 0); /* outermost exit clears it */
  ASSERT_EQ_INT(disp_tensor_refcount(w), 2);     /* c1's graph still holds it */
  ASSERT_EQ_INT(disp_tensor_refcount(c1), 2);

  /* autocast switched on by hand, outside any region: nothing is cached */
  disp_tensor *c4 = NULL;
  ASSERT_OK(disp_autocast_set_enabled(DISP_BACKEND_CPU, 1));
  disp_status st = disp_autocast_cached_cast(DISP_DTYPE_BFLOAT16, w, DISP_BACKEND_CPU, &c4);
  ASSERT_OK(disp_autocast_set_enabled(DISP_BACKEND_CPU, 0));
  ASSERT_OK(st);
  ASSERT_EQ_INT(disp_autocast_cache_size(), 0);

  /* clear_cache by hand, and disp_shutdown, drop what a region left */
  g = cpu_on();
  disp_tensor *c5 = NULL;
  ASSERT_OK(disp_autocast_cached_cast(DISP_DTYPE_BFLOAT16, w, DISP_BACKEND_CPU, &c5));
  ASSERT_EQ_INT(disp_autocast_cache_size(), 1);
  disp_autocast_clear_cache();
  ASSERT_EQ_INT(disp_autocast_cache_size(), 0);
  disp_tensor *c6 = NULL;
  ASSERT_OK(disp_autocast_cached_cast(DISP_DTYPE_BFLOAT16, w, DISP_BACKEND_CPU, &c6));
  ASSERT_TRUE(c6 != c5);
  disp_autocast_exit(&g);

  disp_tensor *all[] = {x, w, plain, c1, c2, y1, y2, p1, p2, c3, c4, c5, c6};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) disp_tensor_release(all[i]);
  return 0;
}

/* ---- an operator author's autocast kernel (seed 002, step 5) ------------- */

static disp_dtype g_seen[2];

/* CPU kernel: records what it was given, then adds. */
static disp_status myadd_cpu(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  g_seen[0] = disp_tensor_dtype(self);
  g_seen[1] = disp_tensor_dtype(other);
  return disp_aten_add_Tensor(self, other, disp_scalar_int(1), out);
}

typedef disp_status (*myop_fn)(disp_tensor *, disp_tensor *, disp_tensor **);

static disp_status call_op(const char *name, disp_tensor *a, disp_tensor *b, disp_tensor **out) {
  const disp_op *op;
  disp_fn entry;
  disp_status st = disp_op_find(name, &op);
  if (st == DISP_OK) st = disp_op_typed_entry(op, &entry);
  if (st != DISP_OK) return st;
  return ((myop_fn)entry)(a, b, out);
}

/* The seed's myadd_autocast: exclude the key, cast to the autocast dtype. */
static disp_status myadd_autocast(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  disp_tls_state saved = disp_autocast_exclude_push(DISP_BACKEND_CPU);
  disp_dtype to;
  disp_tensor *a = NULL, *b = NULL;
  disp_status st = disp_autocast_get_dtype(DISP_BACKEND_CPU, &to);
  if (st == DISP_OK) st = disp_autocast_cached_cast(to, self, DISP_BACKEND_CPU, &a);
  if (st == DISP_OK) st = disp_autocast_cached_cast(to, other, DISP_BACKEND_CPU, &b);
  if (st == DISP_OK) st = call_op("acops::myadd", a, b, out);
  disp_tensor_release(a);
  disp_tensor_release(b);
  disp_tls_restore(saved);
  return st;
}

/* The seed's step 5.1: run in the widest floating type of the inputs. */
static disp_status mywide_autocast(disp_tensor *t0, disp_tensor *t1, disp_tensor **out) {
  disp_tls_state saved = disp_autocast_exclude_push(DISP_BACKEND_CPU);
  disp_dtype lower, exec;
  disp_tensor *a = NULL, *b = NULL;
  disp_status st = disp_autocast_get_dtype(DISP_BACKEND_CPU, &lower);
  if (st == DISP_OK) st = disp_autocast_promote_type(lower, DISP_BACKEND_CPU, (disp_tensor *[]){t0, t1}, 2, &exec);
  if (st == DISP_OK) st = disp_autocast_cached_cast(exec, t0, DISP_BACKEND_CPU, &a);
  if (st == DISP_OK) st = disp_autocast_cached_cast(exec, t1, DISP_BACKEND_CPU, &b);
  if (st == DISP_OK) st = call_op("acops::mywide", a, b, out);
  disp_tensor_release(a);
  disp_tensor_release(b);
  disp_tls_restore(saved);
  return st;
}

static disp_library *impl_lib(const char *ns, disp_key key) {
  disp_library *lib = NULL;
  disp_library_new(DISP_LIBRARY_IMPL, ns, key, __FILE__, __LINE__, &lib);
  return lib;
}

TEST(user_op_with_its_own_autocast_cpu_kernel) {
  disp_library *def = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "acops", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  ASSERT_OK(disp_library_def(def, "myadd(Tensor self, Tensor other) -> Tensor", NULL));
  ASSERT_OK(disp_library_def(def, "mywide(Tensor self, Tensor other) -> Tensor", NULL));
  disp_library *cpu = impl_lib("acops", DISP_KEY_CPU), *ac = impl_lib("acops", DISP_KEY_AUTOCAST_CPU);
  ASSERT_TRUE(cpu && ac);
  ASSERT_OK(disp_library_impl(cpu, "myadd", disp_kernel_unboxed(DISP_FN(myadd_cpu), 0), NULL));
  ASSERT_OK(disp_library_impl(cpu, "mywide", disp_kernel_unboxed(DISP_FN(myadd_cpu), 0), NULL));
  ASSERT_OK(disp_library_impl(ac, "myadd", disp_kernel_unboxed(DISP_FN(myadd_autocast), 0), NULL));
  ASSERT_OK(disp_library_impl(ac, "mywide", disp_kernel_unboxed(DISP_FN(mywide_autocast), 0), NULL));

  disp_tensor *a = randt((const int64_t[]){3}, 1, DISP_DTYPE_FLOAT32);
  disp_tensor *b = randt((const int64_t[]){3}, 1, DISP_DTYPE_FLOAT32);
  disp_tensor *h = randt((const int64_t[]){3}, 1, DISP_DTYPE_BFLOAT16);
  disp_tensor *r1 = NULL, *r2 = NULL, *r3 = NULL, *r4 = NULL;
  ASSERT_OK(call_op("acops::myadd", a, b, &r1));
  ASSERT_EQ_INT(g_seen[0], DISP_DTYPE_FLOAT32);
  ASSERT_EQ_INT(disp_tensor_dtype(r1), DISP_DTYPE_FLOAT32);
  disp_autocast_guard g = cpu_on();
  disp_status st = call_op("acops::myadd", a, b, &r2);
  disp_dtype seen_add[2] = {g_seen[0], g_seen[1]};
  disp_status st2 = call_op("acops::mywide", h, a, &r3);
  disp_dtype seen_wide[2] = {g_seen[0], g_seen[1]};
  disp_status st3 = call_op("acops::mywide", h, h, &r4);
  disp_autocast_exit(&g);
  ASSERT_OK(st);
  ASSERT_OK(st2);
  ASSERT_OK(st3);
  ASSERT_EQ_INT(seen_add[0], DISP_DTYPE_BFLOAT16);
  ASSERT_EQ_INT(seen_add[1], DISP_DTYPE_BFLOAT16);
  ASSERT_EQ_INT(disp_tensor_dtype(r2), DISP_DTYPE_BFLOAT16);
  ASSERT_TRUE(close_to(r2, r1, BF16_RTOL, BF16_ATOL));
  ASSERT_EQ_INT(seen_wide[0], DISP_DTYPE_FLOAT32); /* bf16 + f32 run in f32 */
  ASSERT_EQ_INT(seen_wide[1], DISP_DTYPE_FLOAT32);
  ASSERT_EQ_INT(g_seen[0], DISP_DTYPE_BFLOAT16); /* bf16 + bf16 stay */

  const disp_op *op;
  ASSERT_OK(disp_op_find("acops::myadd", &op));
  char *table = disp_op_dump_table(op);
  ASSERT_CONTAINS(table, "\nAutocastCPU: registered at tests/test_autocast.c:");
  free(table);

  disp_tensor *all[] = {a, b, h, r1, r2, r3, r4};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) disp_tensor_release(all[i]);
  disp_library_free(ac);
  disp_library_free(cpu);
  disp_library_free(def);
  return 0;
}

/* ---- a fake device: host memory, a converting _to_copy and recording kernels */

static void *host_alloc(size_t n, disp_device d, void *ctx) {
  (void)d;
  (void)ctx;
  return n ? malloc(n) : NULL;
}
static void host_free(void *p, size_t n, disp_device d, void *ctx) {
  (void)n;
  (void)d;
  (void)ctx;
  free(p);
}

/* Its hooks: one device, host copies (allclose reads device tensors through
 * the d2h hook, disp/backend.h). */
static int one_device(void *ctx) {
  (void)ctx;
  return 1;
}
static int device_zero(void *ctx) {
  (void)ctx;
  return 0;
}
static disp_status set_zero(int index, void *ctx) {
  (void)ctx;
  return index == 0 ? DISP_OK : DISP_ERR_INVALID_ARG;
}
static disp_status host_d2h(void *dst, const void *src, disp_device dev, size_t n, void *ctx) {
  (void)dev, (void)ctx;
  memcpy(dst, src, n);
  return DISP_OK;
}
static const disp_device_hooks host_hooks = {one_device, device_zero, set_zero, NULL, NULL, host_d2h, NULL, NULL};

static float load(const void *p, disp_dtype dt, int64_t i) {
  switch (dt) {
    case DISP_DTYPE_FLOAT32: return ((const float *)p)[i];
    case DISP_DTYPE_BFLOAT16: return disp__bf16_to_f32(((const uint16_t *)p)[i]);
    default: return disp__f16_to_f32(((const uint16_t *)p)[i]);
  }
}
static void store(void *p, disp_dtype dt, int64_t i, float v) {
  switch (dt) {
    case DISP_DTYPE_FLOAT32: ((float *)p)[i] = v; break;
    case DISP_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = disp__f32_to_bf16(v); break;
    default: ((uint16_t *)p)[i] = disp__f32_to_f16(v); break;
  }
}

/* The device's _to_copy: contiguous float32/float16/bfloat16 only. */
static disp_status fake_to_copy(disp_tensor *self, int32_t dtype, int32_t layout, disp_opt_device device,
                                disp_opt_bool pin, bool non_blocking, int32_t memory_format, disp_tensor **out) {
  (void)layout, (void)device, (void)pin, (void)non_blocking, (void)memory_format;
  disp_dtype to = dtype < 0 ? disp_tensor_dtype(self) : (disp_dtype)dtype, from = disp_tensor_dtype(self);
  if (!disp_tensor_is_contiguous(self) || !disp_dtype_is_floating(to) || from == DISP_DTYPE_FLOAT64 ||
      to == DISP_DTYPE_FLOAT64)
    return disp_set_error(DISP_ERR_INVALID_ARG, "fake device: unsupported _to_copy");
  disp_status st = disp_tensor_empty(disp_tensor_sizes(self), disp_tensor_ndim(self), to, disp_tensor_device(self), out);
  if (st != DISP_OK) return st;
  for (int64_t i = 0; i < disp_tensor_numel(self); i++)
    store(disp_tensor_data_ptr(*out), to, i, load(disp_tensor_data_ptr(self), from, i));
  return DISP_OK;
}

/* Recording kernels: note the argument dtypes, return the first argument. */
static disp_dtype g_rec[3];
static disp_status rec2(disp_tensor *a, disp_tensor *b, disp_tensor **out) {
  g_rec[0] = disp_tensor_dtype(a);
  g_rec[1] = disp_tensor_dtype(b);
  *out = disp_tensor_retain(a);
  return DISP_OK;
}
static disp_status rec_mse(disp_tensor *a, disp_tensor *b, int64_t reduction, disp_tensor **out) {
  (void)reduction;
  return rec2(a, b, out);
}
static disp_status rec_cat(disp_tensor_list l, int64_t dim, disp_tensor **out) {
  (void)dim;
  return rec2(l.data[0], l.data[1], out);
}

static disp_tensor *on(disp_backend b, disp_dtype dt) {
  int64_t n = 4;
  disp_tensor *t = NULL;
  if (disp_tensor_empty(&n, 1, dt, dev(b), &t) != DISP_OK) return NULL;
  for (int64_t i = 0; i < n; i++) store(disp_tensor_data_ptr(t), dt, i, (float)i + 0.5f);
  return t;
}

TEST(autocast_cuda_follows_its_own_list) {
  disp_allocator host = {host_alloc, host_free, NULL, NULL};
  ASSERT_OK(disp_allocator_register(DISP_BACKEND_CUDA, &host));
  ASSERT_OK(disp_device_hooks_register(DISP_BACKEND_CUDA, &host_hooks));
  disp_library *cu = impl_lib("aten", DISP_KEY_CUDA);
  ASSERT_TRUE(cu != NULL);
  ASSERT_OK(DISP_IMPL_ATEN(cu, _to_copy, fake_to_copy));
  ASSERT_OK(DISP_IMPL_ATEN(cu, mm, rec2));
  ASSERT_OK(DISP_IMPL_ATEN(cu, mse_loss, rec_mse));
  ASSERT_OK(DISP_IMPL_ATEN(cu, cat, rec_cat));
  disp_tensor *f32 = on(DISP_BACKEND_CUDA, DISP_DTYPE_FLOAT32), *f16 = on(DISP_BACKEND_CUDA, DISP_DTYPE_FLOAT16);
  ASSERT_TRUE(f32 && f16);
  disp_tensor *r[4] = {NULL};
  disp_dtype seen[4][2];
  disp_autocast_guard g;
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_CUDA, DISP_DTYPE_FLOAT16, 1, 1, &g));
  disp_status st[4];
  st[0] = disp_aten_mm(f32, f32, &r[0]); /* lower_precision_fp */
  memcpy(seen[0], g_rec, sizeof seen[0]);
  st[1] = disp_aten_mse_loss(f16, f16, 1, &r[1]); /* fp32 */
  memcpy(seen[1], g_rec, sizeof seen[1]);
  disp_tensor *pair[2] = {f16, f32};
  st[2] = disp_aten_cat((disp_tensor_list){pair, 2}, 0, &r[2]); /* no CUDA kernel in 1.13: untouched */
  memcpy(seen[2], g_rec, sizeof seen[2]);
  disp_autocast_exit(&g);
  /* the CUDA dtype is the thread's: bfloat16 when set so */
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_CUDA, DISP_DTYPE_BFLOAT16, 1, 1, &g));
  st[3] = disp_aten_mm(f32, f16, &r[3]);
  memcpy(seen[3], g_rec, sizeof seen[3]);
  disp_autocast_exit(&g);
  for (int i = 0; i < 4; i++) ASSERT_OK(st[i]);
  ASSERT_EQ_INT(seen[0][0], DISP_DTYPE_FLOAT16);
  ASSERT_EQ_INT(seen[0][1], DISP_DTYPE_FLOAT16);
  ASSERT_EQ_INT(seen[1][0], DISP_DTYPE_FLOAT32);
  ASSERT_EQ_INT(seen[1][1], DISP_DTYPE_FLOAT32);
  ASSERT_EQ_INT(seen[2][0], DISP_DTYPE_FLOAT16);
  ASSERT_EQ_INT(seen[2][1], DISP_DTYPE_FLOAT32);
  ASSERT_EQ_INT(seen[3][0], DISP_DTYPE_BFLOAT16);
  ASSERT_EQ_INT(seen[3][1], DISP_DTYPE_BFLOAT16);
  /* values survive the round trip through the device's _to_copy */
  ASSERT_EQ_INT(disp_tensor_dtype(r[1]), DISP_DTYPE_FLOAT32);
  ASSERT_TRUE(close_to(r[1], f16, 0, 0));
  for (int i = 0; i < 4; i++) disp_tensor_release(r[i]);
  disp_tensor_release(f32);
  disp_tensor_release(f16);
  disp_library_free(cu);
  ASSERT_OK(disp_allocator_register(DISP_BACKEND_CUDA, NULL));
  ASSERT_OK(disp_device_hooks_register(DISP_BACKEND_CUDA, NULL));
  return 0;
}

/* A backend's own AutocastPrivateUse1 kernel for its own operator. */
static disp_status pu_op_autocast(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  disp_tls_state saved = disp_autocast_exclude_push(DISP_BACKEND_PRIVATEUSE1);
  disp_dtype to;
  disp_tensor *a = NULL, *b = NULL;
  disp_status st = disp_autocast_get_dtype(DISP_BACKEND_PRIVATEUSE1, &to);
  if (st == DISP_OK) st = disp_autocast_cached_cast(to, self, DISP_BACKEND_PRIVATEUSE1, &a);
  if (st == DISP_OK) st = disp_autocast_cached_cast(to, other, DISP_BACKEND_PRIVATEUSE1, &b);
  if (st == DISP_OK) st = call_op("pu1ops::scale", a, b, out);
  disp_tensor_release(a);
  disp_tensor_release(b);
  disp_tls_restore(saved);
  return st;
}

TEST(autocast_privateuse1_is_a_backend_s_own) {
  disp_allocator host = {host_alloc, host_free, NULL, NULL};
  ASSERT_OK(disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, &host));
  ASSERT_OK(disp_device_hooks_register(DISP_BACKEND_PRIVATEUSE1, &host_hooks));
  disp_library *def = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "pu1ops", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  ASSERT_OK(disp_library_def(def, "scale(Tensor self, Tensor other) -> Tensor", NULL));
  disp_library *pu = impl_lib("pu1ops", DISP_KEY_PRIVATEUSE1), *apu = impl_lib("pu1ops", DISP_KEY_AUTOCAST_PRIVATEUSE1);
  disp_library *aten = impl_lib("aten", DISP_KEY_PRIVATEUSE1);
  ASSERT_TRUE(pu && apu && aten);
  ASSERT_OK(disp_library_impl(pu, "scale", disp_kernel_unboxed(DISP_FN(rec2), 0), NULL));
  ASSERT_OK(disp_library_impl(apu, "scale", disp_kernel_unboxed(DISP_FN(pu_op_autocast), 0), NULL));
  ASSERT_OK(DISP_IMPL_ATEN(aten, _to_copy, fake_to_copy));
  ASSERT_OK(DISP_IMPL_ATEN(aten, mm, rec2));

  disp_tensor *x = on(DISP_BACKEND_PRIVATEUSE1, DISP_DTYPE_FLOAT32), *r[4] = {NULL};
  ASSERT_TRUE(x != NULL);
  ASSERT_TRUE(disp_keyset_has(disp_tensor_keyset(x), DISP_KEY_AUTOCAST_PRIVATEUSE1));
  disp_dtype seen[4];
  ASSERT_OK(call_op("pu1ops::scale", x, x, &r[0]));
  seen[0] = g_rec[0];
  disp_autocast_guard g;
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_PRIVATEUSE1, DISP_DTYPE_BFLOAT16, 1, 1, &g));
  disp_status st1 = call_op("pu1ops::scale", x, x, &r[1]);
  seen[1] = g_rec[0];
  /* aten::mm keeps the built-in fallthrough on AutocastPrivateUse1 */
  disp_status st2 = disp_aten_mm(x, x, &r[2]);
  seen[2] = g_rec[0];
  disp_autocast_exit(&g);
  ASSERT_OK(disp_autocast_enter(DISP_BACKEND_PRIVATEUSE1, DISP_DTYPE_FLOAT16, 1, 1, &g));
  disp_status st3 = call_op("pu1ops::scale", x, x, &r[3]);
  seen[3] = g_rec[0];
  disp_autocast_exit(&g);
  ASSERT_OK(st1);
  ASSERT_OK(st2);
  ASSERT_OK(st3);
  ASSERT_EQ_INT(seen[0], DISP_DTYPE_FLOAT32);
  ASSERT_EQ_INT(seen[1], DISP_DTYPE_BFLOAT16);
  ASSERT_EQ_INT(seen[2], DISP_DTYPE_FLOAT32);
  ASSERT_EQ_INT(seen[3], DISP_DTYPE_FLOAT16);
  ASSERT_TRUE(close_to(r[1], x, 0, 0));

  const disp_op *op;
  ASSERT_OK(disp_op_find("pu1ops::scale", &op));
  char *table = disp_op_dump_table(op);
  ASSERT_CONTAINS(table, "\nAutocastPrivateUse1: registered at tests/test_autocast.c:");
  free(table);
  ASSERT_OK(disp_op_find("aten::mm", &op));
  table = disp_op_dump_table(op);
  ASSERT_CONTAINS(table, "\nAutocastPrivateUse1: fallthrough registered by libdispatch");
  free(table);

  for (int i = 0; i < 4; i++) disp_tensor_release(r[i]);
  disp_tensor_release(x);
  disp_library_free(aten);
  disp_library_free(apu);
  disp_library_free(pu);
  disp_library_free(def);
  ASSERT_OK(disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, NULL));
  ASSERT_OK(disp_device_hooks_register(DISP_BACKEND_PRIVATEUSE1, NULL));
  return 0;
}

/* ---- the tables ---------------------------------------------------------- */

static int autocast_line(const char *op_name, const char *key, int want_kernel) {
  const disp_op *op;
  ASSERT_OK(disp_op_find(op_name, &op));
  char *table = disp_op_dump_table(op);
  char want[128];
  snprintf(want, sizeof want, "\n%s: %s", key,
           want_kernel ? "registered at generated/aten_autograd_gen.c:" : "fallthrough registered by libdispatch");
  int ok = table && strstr(table, want) != NULL;
  if (ok && want_kernel) {
    const char *line = strstr(table, want);
    ok = strstr(line, "[kernel]") != NULL && strstr(line, "[kernel]") < strchr(line + 1, '\n');
  }
  if (!ok) fprintf(stderr, "%s: expected '%s' in\n%s\n", op_name, want + 1, table ? table : "(null)");
  free(table);
  return ok;
}

TEST(tables_show_1_13_autocast_lists) {
  static const char *const cpu_and_cuda[] = {"aten::mm", "aten::addmm", "aten::bmm", "aten::matmul",
                                             "aten::linear", "aten::conv2d", "aten::mse_loss", "aten::nll_loss"};
  static const char *const cpu_only[] = {"aten::cross_entropy_loss", "aten::cat", "aten::stack"};
  static const char *const neither[] = {"aten::add.Tensor", "aten::relu", "aten::softmax.int", "aten::dropout",
                                        "aten::_to_copy"};
  for (size_t i = 0; i < sizeof cpu_and_cuda / sizeof *cpu_and_cuda; i++) {
    ASSERT_TRUE(autocast_line(cpu_and_cuda[i], "AutocastCPU", 1));
    ASSERT_TRUE(autocast_line(cpu_and_cuda[i], "AutocastCUDA", 1));
    ASSERT_TRUE(autocast_line(cpu_and_cuda[i], "AutocastPrivateUse1", 0));
  }
  for (size_t i = 0; i < sizeof cpu_only / sizeof *cpu_only; i++) {
    ASSERT_TRUE(autocast_line(cpu_only[i], "AutocastCPU", 1));
    ASSERT_TRUE(autocast_line(cpu_only[i], "AutocastCUDA", 0));
  }
  for (size_t i = 0; i < sizeof neither / sizeof *neither; i++) {
    ASSERT_TRUE(autocast_line(neither[i], "AutocastCPU", 0));
    ASSERT_TRUE(autocast_line(neither[i], "AutocastCUDA", 0));
  }
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(defaults_match_pytorch_1_13),
    TEST_ENTRY(nested_regions_restore_state),
    TEST_ENTRY(out_of_order_exit_is_refused_and_changes_nothing),
    TEST_ENTRY(exit_of_a_guard_not_open_is_refused),
    TEST_ENTRY(exit_from_another_thread_is_refused),
    TEST_ENTRY(too_many_nested_regions_are_refused),
    TEST_ENTRY(state_is_per_thread),
    TEST_ENTRY(bad_dtype_and_device_are_errors_state_unchanged),
    TEST_ENTRY(eligibility_and_promote_type),
    TEST_ENTRY(mm_matmul_bmm_run_in_bfloat16),
    TEST_ENTRY(addmm_linear_conv2d_run_in_bfloat16),
    TEST_ENTRY(float64_and_disabled_regions_are_untouched),
    TEST_ENTRY(fp32_policy_losses_run_in_float32),
    TEST_ENTRY(cat_and_stack_promote),
    TEST_ENTRY(cast_cache_holds_leaf_weights_for_one_region),
    TEST_ENTRY(user_op_with_its_own_autocast_cpu_kernel),
    TEST_ENTRY(autocast_cuda_follows_its_own_list),
    TEST_ENTRY(autocast_privateuse1_is_a_backend_s_own),
    TEST_ENTRY(tables_show_1_13_autocast_lists),
    TEST_END};

TEST_MAIN()
