/*
 * test_pool - the CNN's memory-bound kernels: threshold_backward (relu's
 * backward) of the kernel table (cpu/threshold.c) on every capability this
 * CPU runs, bit for bit against the select 1.13 computes; then the operator
 * on dense float32 (the table's kernel) against strided operands (the
 * generic loop) and at 1, 2 and 3 threads. Inputs come from a small set of
 * values rich in ties, signed zeros and NaNs.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <disp/aten.h>
#include <disp/cpu.h>

#include "cpu/kernels.h"
#include "test.h"

static const disp_device cpu = {DISP_BACKEND_CPU, -1};

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* A value from a set rich in ties and NaNs (two payloads, both signs). */
static float pick(uint32_t *s) {
  *s = *s * 1103515245u + 12345u;
  uint32_t r = (*s >> 16) % 13;
  static const float v[] = {0.0f, -0.0f, 1.0f, 1.0f, -1.0f, 2.0f, 0.5f, -INFINITY, INFINITY, 3.0f, -2.0f};
  if (r == 11) return from_bits(0x7fc00001u); /* NaN, payload 1 */
  if (r == 12) return from_bits(0xffc00002u); /* -NaN, payload 2 */
  return v[r];
}

static void fill(float *x, int64_t n, uint32_t seed) {
  for (int64_t i = 0; i < n; i++) x[i] = pick(&seed);
}

/* The tables this CPU can run, default first. */
static int tables(const disp__cpu_kernel_table **t) {
  int n = 0;
  for (int c = 0; c <= (int)disp__cpu_capability_supported(); c++)
    if (disp__cpu_kernels_for((disp__cpu_cap)c)) t[n++] = disp__cpu_kernels_for((disp__cpu_cap)c);
  return n;
}

/* ---- the table's kernels ------------------------------------------------- */

TEST(threshold_backward_kernel_is_a_select_bit_for_bit) {
  const disp__cpu_kernel_table *t[DISP_CPU_CAP_COUNT];
  int nt = tables(t);
  enum { N = 300 };
  static float self[N], grad[N], o[N];
  static const float thresholds[] = {0.0f, -0.0f, 0.5f, -INFINITY, NAN};
  for (int64_t n = 0; n <= 70; n += (n < 20 ? 1 : 17))
    for (size_t ti = 0; ti < sizeof thresholds / sizeof *thresholds; ti++) {
      float th = thresholds[ti];
      fill(self, n, (uint32_t)n);
      fill(grad, n, (uint32_t)n + 1000);
      for (int k = 0; k < nt; k++) {
        t[k]->threshold_backward_f32(o, self, grad, th, n);
        for (int64_t i = 0; i < n; i++) {
          float want = self[i] <= th ? 0.0f : grad[i];
          if (bits(o[i]) != bits(want))
            TEST_FAIL_("%s threshold %g n=%lld: self %a grad %a gave %a", disp__cpu_capability_name(t[k]->cap), th,
                       (long long)n, self[i], grad[i], o[i]);
        }
        /* in place over grad */
        float g2[N];
        memcpy(g2, grad, sizeof(float) * (size_t)n);
        t[k]->threshold_backward_f32(g2, self, g2, th, n);
        ASSERT_TRUE(!memcmp(g2, o, sizeof(float) * (size_t)n));
      }
    }
  return 0;
}

/* ---- through the operators ----------------------------------------------- */

static disp_tensor *floats(const int64_t *sizes, int nd, uint32_t seed) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, nd, DISP_DTYPE_FLOAT32, cpu, &t) != DISP_OK) return NULL;
  fill(disp_tensor_data_ptr(t), disp_tensor_numel(t), seed);
  return t;
}

TEST(threshold_backward_does_not_depend_on_the_thread_count) {
  int64_t xs[4] = {8, 16, 28, 28};
  disp_tensor *x = floats(xs, 4, 5), *g = floats(xs, 4, 6), *r[3] = {NULL};
  int saved = disp_get_num_threads();
  for (int t = 0; t < 3; t++) {
    ASSERT_OK(disp_set_num_threads(t + 1));
    ASSERT_OK(disp_aten_threshold_backward(g, x, disp_scalar_int(0), &r[t]));
  }
  ASSERT_OK(disp_set_num_threads(saved));
  for (int t = 1; t < 3; t++)
    ASSERT_TRUE(!memcmp(disp_tensor_data_ptr(r[0]), disp_tensor_data_ptr(r[t]), (size_t)disp_tensor_numel(x) * 4));
  for (int t = 0; t < 3; t++) disp_tensor_release(r[t]);
  disp_tensor_release(x), disp_tensor_release(g);
  return 0;
}

/* threshold_backward on dense float32 (the table's kernel) against the
 * same values as strided views (every other column: the generic loop),
 * with the threshold rounded to float as 1.13's scalar_t threshold is. */
TEST(threshold_backward_dense_matches_the_generic_loop) {
  int64_t xs[2] = {37, 82};
  disp_tensor *s = floats(xs, 2, 7), *g = floats(xs, 2, 8), *sv = NULL, *gv = NULL, *sc = NULL, *gc = NULL;
  disp_opt_int none = {0, false};
  ASSERT_OK(disp_aten_slice_Tensor(s, 1, none, none, 2, &sv));
  ASSERT_OK(disp_aten_slice_Tensor(g, 1, none, none, 2, &gv));
  ASSERT_OK(disp_aten_contiguous(sv, DISP_MEMORY_FORMAT_CONTIGUOUS, &sc));
  ASSERT_OK(disp_aten_contiguous(gv, DISP_MEMORY_FORMAT_CONTIGUOUS, &gc));
  static const double thresholds[] = {0.0, 0.5, 1.0000000001, -1.0};
  for (size_t ti = 0; ti < sizeof thresholds / sizeof *thresholds; ti++) {
    disp_tensor *a = NULL, *b = NULL;
    ASSERT_OK(disp_aten_threshold_backward(gc, sc, disp_scalar_double(thresholds[ti]), &a));
    ASSERT_OK(disp_aten_threshold_backward(gv, sv, disp_scalar_double(thresholds[ti]), &b));
    const float *pa = disp_tensor_data_ptr(a), *pb = disp_tensor_data_ptr(b);
    const float *ps = disp_tensor_data_ptr(sc), *pg = disp_tensor_data_ptr(gc);
    const int64_t *bs = disp_tensor_strides(b);
    float th = (float)thresholds[ti];
    for (int64_t i = 0; i < xs[0]; i++)
      for (int64_t j = 0; j < xs[1] / 2; j++) {
        int64_t k = i * (xs[1] / 2) + j;
        ASSERT_EQ_INT(bits(pa[k]), bits(ps[k] <= th ? 0.0f : pg[k]));
        ASSERT_EQ_INT(bits(pb[i * bs[0] + j * bs[1]]), bits(pa[k]));
      }
    disp_tensor_release(a), disp_tensor_release(b);
  }
  disp_tensor *all[] = {s, g, sv, gv, sc, gc};
  for (int k = 0; k < 6; k++) disp_tensor_release(all[k]);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(threshold_backward_kernel_is_a_select_bit_for_bit),
    TEST_ENTRY(threshold_backward_does_not_depend_on_the_thread_count),
    TEST_ENTRY(threshold_backward_dense_matches_the_generic_loop),
    TEST_END};
TEST_MAIN()
