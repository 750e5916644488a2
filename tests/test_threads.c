/*
 * test_threads - every kernel that runs on the library's threads gives the
 * same result at 1, 2 and 3 threads (bit for bit; a tolerance only where a
 * reduction may reassociate), on sizes above the grain so the work really
 * is split; the pointwise driver runs on thread indices below the setting,
 * and a kernel called inside a parallel region runs inline.
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include <disp/cpu.h>

#include "parallel.h"
#include "tensor_iter.h"
#include "test.h"

static const disp_device cpu = {DISP_BACKEND_CPU, -1};

static disp_int_list ints(const int64_t *v, size_t n) {
  disp_int_list l = {v, n};
  return l;
}

/* A contiguous tensor of dtype dt with a deterministic pattern (integers
 * get small whole values). */
static disp_tensor *filled(const int64_t *sizes, int nd, disp_dtype dt, int seed) {
  disp_tensor *f = NULL, *t = NULL;
  if (disp_tensor_empty(sizes, nd, DISP_DTYPE_FLOAT64, cpu, &f) != DISP_OK) return NULL;
  double *p = disp_tensor_data_ptr(f);
  for (int64_t i = 0; i < disp_tensor_numel(f); i++)
    p[i] = (double)(((i + seed) * 7919) % 1013) / 64.0 - 7.5 + 1.0 / (double)(1 + (i % 7));
  if (disp__titer_contiguous_as(f, dt, &t) != DISP_OK) t = NULL;
  disp_tensor_release(f);
  return t;
}

/* Up to 3 results of one computation. */
typedef struct results {
  disp_tensor *t[4];
  int n;
} results;

typedef disp_status (*compute_fn)(results *r);

static void results_free(results *r) {
  for (int i = 0; i < r->n; i++) disp_tensor_release(r->t[i]);
  r->n = 0;
}

/* Whether a and b hold the same values: as float64 (every dtype here
 * converts exactly), bit for bit when tol is 0, else within tol relative. */
static int same(disp_tensor *a, disp_tensor *b, double tol) {
  if (disp_tensor_numel(a) != disp_tensor_numel(b)) return 0;
  disp_tensor *x = NULL, *y = NULL;
  int ok = disp__titer_contiguous_as(a, DISP_DTYPE_FLOAT64, &x) == DISP_OK &&
           disp__titer_contiguous_as(b, DISP_DTYPE_FLOAT64, &y) == DISP_OK;
  int64_t n = disp_tensor_numel(a);
  if (ok && tol == 0) {
    ok = n == 0 || memcmp(disp_tensor_data_ptr(x), disp_tensor_data_ptr(y), sizeof(double) * (size_t)n) == 0;
  } else if (ok) {
    const double *p = disp_tensor_data_ptr(x), *q = disp_tensor_data_ptr(y);
    for (int64_t i = 0; i < n && ok; i++) ok = fabs(p[i] - q[i]) <= tol * (1.0 + fabs(p[i]));
  }
  disp_tensor_release(x);
  disp_tensor_release(y);
  return ok;
}

/* f at 1 thread, then at 2 and 3: every result the same. */
static int check_threads(const char *what, compute_fn f, double tol) {
  int saved = disp_get_num_threads();
  results ref = {{0}, 0}, got = {{0}, 0};
  ASSERT_OK(disp_set_num_threads(1));
  ASSERT_OK(f(&ref));
  for (int threads = 2; threads <= 3; threads++) {
    ASSERT_OK(disp_set_num_threads(threads));
    ASSERT_OK(f(&got));
    ASSERT_EQ_INT(got.n, ref.n);
    for (int i = 0; i < ref.n; i++)
      if (!same(ref.t[i], got.t[i], tol))
        TEST_FAIL_("%s: result %d at %d threads differs from 1 thread", what, i, threads);
    results_free(&got);
  }
  results_free(&ref);
  ASSERT_OK(disp_set_num_threads(saved));
  return 0;
}

/* ---- pointwise and copies ----------------------------------------------- */

/* x (400, 301) read transposed from a (301, 400) tensor, plus a broadcast
 * row times alpha: 120400 elements through the strided driver. */
static disp_status add_strided_broadcast(results *r) {
  int64_t s[2] = {301, 400}, row[1] = {301}, vs[2] = {400, 301}, vst[2] = {1, 400};
  disp_tensor *base = filled(s, 2, DISP_DTYPE_FLOAT32, 1), *y = filled(row, 1, DISP_DTYPE_FLOAT32, 2), *xt = NULL;
  disp_status st = disp_tensor_new_view(base, vs, vst, 2, 0, &xt);
  if (st == DISP_OK) st = disp_aten_add_Tensor(xt, y, disp_scalar_double(0.5), &r->t[0]);
  r->n = st == DISP_OK;
  disp_tensor_release(xt), disp_tensor_release(base), disp_tensor_release(y);
  return st;
}

/* 250007 contiguous elements (the flat path, an odd tail), and a mixed
 * int64 + float32 add whose int64 operand is converted first. */
static disp_status add_flat_and_mixed(results *r) {
  int64_t n[1] = {250007};
  disp_tensor *a = filled(n, 1, DISP_DTYPE_FLOAT32, 3), *b = filled(n, 1, DISP_DTYPE_FLOAT32, 4);
  disp_tensor *c = filled(n, 1, DISP_DTYPE_INT64, 5);
  disp_status st = disp_aten_add_Tensor(a, b, disp_scalar_int(1), &r->t[0]);
  if (st == DISP_OK) st = disp_aten_mul_Tensor(c, a, &r->t[1]);
  r->n = st == DISP_OK ? 2 : 0;
  disp_tensor_release(a), disp_tensor_release(b), disp_tensor_release(c);
  return st;
}

/* Copies: float32 read with a step of 3 converted to float64 and float16,
 * and a broadcast copy_ of one row into (400, 301). */
static disp_status copies(results *r) {
  int64_t s[1] = {3 * 100003}, v[1] = {100003}, vst[1] = {3}, big[2] = {400, 301}, row[2] = {1, 301};
  disp_tensor *base = filled(s, 1, DISP_DTYPE_FLOAT32, 6), *x = NULL, *dst = NULL, *src = filled(row, 2, DISP_DTYPE_FLOAT64, 7);
  disp_tensor *tmp = NULL;
  disp_status st = disp_tensor_new_view(base, v, vst, 1, 0, &x);
  if (st == DISP_OK) st = disp_aten_to_dtype(x, DISP_DTYPE_FLOAT64, false, false, -1, &r->t[0]);
  if (st == DISP_OK) st = disp_aten_to_dtype(x, DISP_DTYPE_FLOAT16, false, false, -1, &r->t[1]);
  if (st == DISP_OK) st = disp_tensor_empty(big, 2, DISP_DTYPE_FLOAT32, cpu, &dst);
  if (st == DISP_OK) st = disp_aten_copy_(dst, src, false, &tmp);
  r->n = st == DISP_OK ? 3 : 0;
  if (st == DISP_OK) r->t[2] = dst;
  else disp_tensor_release(dst);
  disp_tensor_release(tmp), disp_tensor_release(x), disp_tensor_release(base), disp_tensor_release(src);
  return st;
}

TEST(pointwise_and_copies_equal_at_any_thread_count) {
  if (check_threads("add strided broadcast", add_strided_broadcast, 0)) return 1;
  if (check_threads("add flat / mixed mul", add_flat_and_mixed, 0)) return 1;
  if (check_threads("copies", copies, 0)) return 1;
  return 0;
}

/* ---- conv, pooling, losses, products ------------------------------------ */

/* 20 samples: the weight gradient sums them in three chunks (conv.c's
 * wgrad_chunks), which the threads share, as they share the bias
 * gradient's channels. */
static disp_status conv(results *r) {
  int64_t xs[4] = {20, 3, 24, 24}, ws[4] = {16, 3, 3, 3}, bs[1] = {16}, one[2] = {1, 1}, pad[2] = {1, 1};
  int64_t gs[4] = {20, 16, 24, 24};
  disp_tensor *x = filled(xs, 4, DISP_DTYPE_FLOAT32, 8), *w = filled(ws, 4, DISP_DTYPE_FLOAT32, 9);
  disp_tensor *b = filled(bs, 1, DISP_DTYPE_FLOAT32, 10), *g = filled(gs, 4, DISP_DTYPE_FLOAT32, 11);
  disp_status st = disp_aten_conv2d(x, w, b, ints(one, 2), ints(pad, 2), ints(one, 2), 1, &r->t[0]);
  bool mask[3] = {true, true, true};
  disp_bool_list m = {mask, 3};
  disp_opt_int_list bsz = {{bs, 1}, true};
  int64_t zero[2] = {0, 0};
  if (st == DISP_OK)
    st = disp_aten_convolution_backward(g, x, w, bsz, ints(one, 2), ints(pad, 2), ints(one, 2), false, ints(zero, 2), 1,
                                        m, &r->t[1], &r->t[2], &r->t[3]);
  r->n = st == DISP_OK ? 4 : (r->t[0] != NULL);
  disp_tensor_release(x), disp_tensor_release(w), disp_tensor_release(b), disp_tensor_release(g);
  return st;
}

static disp_status pool(results *r) {
  int64_t xs[4] = {4, 16, 41, 40}, k[2] = {3, 3}, s[2] = {2, 2}, p[2] = {1, 1}, d[2] = {1, 1};
  disp_tensor *x = filled(xs, 4, DISP_DTYPE_FLOAT32, 12);
  disp_status st = disp_aten_max_pool2d_with_indices(x, ints(k, 2), ints(s, 2), ints(p, 2), ints(d, 2), false,
                                                     &r->t[0], &r->t[1]);
  r->n = st == DISP_OK ? 2 : 0;
  if (st == DISP_OK)
    st = disp_aten_max_pool2d_with_indices_backward(r->t[0], x, ints(k, 2), ints(s, 2), ints(p, 2), ints(d, 2),
                                                    false, r->t[1], &r->t[2]);
  if (st == DISP_OK) r->n = 3;
  disp_tensor_release(x);
  return st;
}

/* nll_loss over 70001 samples with class weights, mean; per-sample; grad. */
static disp_status nll(results *r) {
  int64_t xs[2] = {70001, 10}, ts[1] = {70001}, cs[1] = {10};
  disp_tensor *x = filled(xs, 2, DISP_DTYPE_FLOAT32, 13), *w = filled(cs, 1, DISP_DTYPE_FLOAT32, 14);
  disp_tensor *t = NULL, *tw = NULL, *tw2 = NULL, *go = NULL;
  disp_status st = disp_tensor_empty(ts, 1, DISP_DTYPE_INT64, cpu, &t);
  if (st == DISP_OK)
    for (int64_t i = 0; i < ts[0]; i++) ((int64_t *)disp_tensor_data_ptr(t))[i] = (i * 31) % 10;
  if (st == DISP_OK) st = disp_aten_nll_loss_forward(x, t, w, 1, -100, &r->t[0], &tw);
  if (st == DISP_OK) st = disp_aten_nll_loss_forward(x, t, w, 0, 3, &r->t[1], &tw2);
  if (st == DISP_OK) st = disp_tensor_empty(NULL, 0, DISP_DTYPE_FLOAT32, cpu, &go);
  if (st == DISP_OK) *(float *)disp_tensor_data_ptr(go) = 0.75f;
  if (st == DISP_OK) st = disp_aten_nll_loss_backward(go, x, t, w, 1, -100, tw, &r->t[2]);
  r->n = st == DISP_OK ? 3 : 0;
  disp_tensor_release(x), disp_tensor_release(w), disp_tensor_release(t), disp_tensor_release(tw);
  disp_tensor_release(tw2), disp_tensor_release(go);
  return st;
}

static disp_status mse(results *r) {
  int64_t s[2] = {300, 401};
  disp_tensor *a = filled(s, 2, DISP_DTYPE_FLOAT32, 15), *b = filled(s, 2, DISP_DTYPE_FLOAT32, 16);
  disp_status st = disp_aten_mse_loss(a, b, 0, &r->t[0]);
  if (st == DISP_OK) st = disp_aten_mse_loss(a, b, 1, &r->t[1]);
  r->n = st == DISP_OK ? 2 : 0;
  disp_tensor_release(a), disp_tensor_release(b);
  return st;
}

static disp_status products(results *r) {
  int64_t as[2] = {301, 203}, bs[2] = {203, 257}, bias[1] = {257}, ba[3] = {4, 130, 100}, bb[3] = {4, 100, 150};
  disp_tensor *a = filled(as, 2, DISP_DTYPE_FLOAT32, 17), *b = filled(bs, 2, DISP_DTYPE_FLOAT32, 18);
  disp_tensor *c = filled(bias, 1, DISP_DTYPE_FLOAT32, 19);
  disp_tensor *x = filled(ba, 3, DISP_DTYPE_FLOAT64, 20), *y = filled(bb, 3, DISP_DTYPE_FLOAT64, 21);
  disp_status st = disp_aten_mm(a, b, &r->t[0]);
  if (st == DISP_OK) st = disp_aten_addmm(c, a, b, disp_scalar_double(0.5), disp_scalar_int(2), &r->t[1]);
  if (st == DISP_OK) st = disp_aten_bmm(x, y, &r->t[2]);
  r->n = st == DISP_OK ? 3 : 0;
  disp_tensor_release(a), disp_tensor_release(b), disp_tensor_release(c), disp_tensor_release(x), disp_tensor_release(y);
  return st;
}

/* The MLP benchmark's layers (bench/mlp_forward): linear 784 -> 256 and
 * 256 -> 10 on a batch of 128, 64 -> 128 on 32; Note [Threaded gemm] splits
 * the first on a unit boundary, never mid-unit (the others are too small). */
static disp_status linears(results *r) {
  static const int64_t shapes[3][3] = {{128, 784, 256}, {128, 256, 10}, {32, 64, 128}};
  disp_status st = DISP_OK;
  r->n = 0;
  for (int i = 0; i < 3 && st == DISP_OK; i++) {
    int64_t xs[2] = {shapes[i][0], shapes[i][1]}, ws[2] = {shapes[i][2], shapes[i][1]}, bs[1] = {shapes[i][2]};
    disp_tensor *x = filled(xs, 2, DISP_DTYPE_FLOAT32, 22 + i), *w = filled(ws, 2, DISP_DTYPE_FLOAT32, 25 + i);
    disp_tensor *b = filled(bs, 1, DISP_DTYPE_FLOAT32, 28 + i);
    st = x && w && b ? disp_aten_linear(x, w, b, &r->t[i]) : DISP_ERR_NO_MEMORY;
    if (st == DISP_OK) r->n++;
    disp_tensor_release(x), disp_tensor_release(w), disp_tensor_release(b);
  }
  return st;
}

TEST(kernels_equal_at_any_thread_count) {
  if (check_threads("conv2d and its backward", conv, 0)) return 1;
  if (check_threads("max_pool2d and its backward", pool, 0)) return 1;
  if (check_threads("nll_loss", nll, 0)) return 1;
  /* mse_loss's mean is a reduction: a tolerance for reassociation */
  if (check_threads("mse_loss", mse, 1e-6)) return 1;
  if (check_threads("mm / addmm / bmm", products, 0)) return 1;
  if (check_threads("linear (the MLP benchmark's shapes)", linears, 0)) return 1;
  return 0;
}

/* ---- the threads really run --------------------------------------------- */

typedef struct seen {
  atomic_uint mask;  /* bit i: thread index i ran a piece */
  atomic_int calls;
  atomic_int nested; /* pieces run inside an outer region */
} seen;

/* out = a + b on float32 that notes which thread ran it. */
static void instrumented_add(char **d, const int64_t *s, int64_t n, const void *ctx) {
  seen *w = (seen *)(uintptr_t)ctx;
  int t = disp__thread_index();
  atomic_fetch_or(&w->mask, 1u << (t < 31 ? t : 31));
  atomic_fetch_add(&w->calls, 1);
  if (disp__in_parallel_region()) atomic_fetch_add(&w->nested, 1);
  for (int64_t i = 0; i < n; i++)
    *(float *)(d[0] + i * s[0]) = *(const float *)(d[1] + i * s[1]) + *(const float *)(d[2] + i * s[2]);
}

enum { BIG = 1 << 20 };
static float g_a[BIG], g_b[BIG], g_o[2][BIG];

static void big_add(seen *w, float *out) {
  char *data[3] = {(char *)out, (char *)g_a, (char *)g_b};
  int64_t strides[3] = {4, 4, 4};
  disp__titer_loop_flat(3, data, strides, BIG, instrumented_add, w);
}

TEST(a_big_add_uses_two_threads) {
  int saved = disp_get_num_threads();
  for (int i = 0; i < BIG; i++) g_a[i] = (float)i, g_b[i] = 1.0f;
  seen w = {0, 0, 0};
  ASSERT_OK(disp_set_num_threads(2));
  big_add(&w, g_o[0]);
  for (int i = 0; i < BIG; i++) ASSERT_TRUE(g_o[0][i] == (float)i + 1.0f);
  /* Blocks ran on the caller (index 0) and/or the worker (1): either may
   * take them all, depending on who the OS runs first (test_thread_pool
   * checks without a race that a worker does take blocks); no other index. */
  ASSERT_TRUE(atomic_load(&w.mask) != 0);
  ASSERT_EQ_INT(atomic_load(&w.mask) & ~3u, 0);
  ASSERT_OK(disp_set_num_threads(saved));
  return 0;
}

static void outer(int64_t lo, int64_t hi, void *ctx) {
  for (int64_t i = lo; i < hi; i++) big_add(ctx, g_o[i]); /* inside a region: inline, one piece */
}

TEST(kernels_inside_a_region_run_inline) {
  int saved = disp_get_num_threads();
  seen w = {0, 0, 0};
  ASSERT_OK(disp_set_num_threads(2));
  disp__parallel_for(0, 2, 1, outer, &w);
#ifdef DISP_TEST_THREADS
  ASSERT_EQ_INT(atomic_load(&w.calls), 2);  /* one inline piece per outer chunk */
  ASSERT_EQ_INT(atomic_load(&w.nested), 2);
#else
  ASSERT_EQ_INT(atomic_load(&w.calls), 2); /* the one serial chunk, an add per index */
#endif
  ASSERT_OK(disp_set_num_threads(saved));
  return 0;
}

TEST_LIST = {TEST_ENTRY(pointwise_and_copies_equal_at_any_thread_count),
             TEST_ENTRY(kernels_equal_at_any_thread_count),
             TEST_ENTRY(a_big_add_uses_two_threads),
             TEST_ENTRY(kernels_inside_a_region_run_inline),
             TEST_END};
TEST_MAIN()
