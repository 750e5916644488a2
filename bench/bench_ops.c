/*
 * bench_ops - what built-in operators cost through the dispatcher:
 *   add   disp_aten_add_Tensor on 1-element float32 tensors (dispatch-bound)
 *   mm    disp_aten_mm at 64x64 and 256x256 float32, with CBLAS (when the
 *         build has it) and with the portable kernel
 * Prints ns/call (median of 7 runs) and GFLOP/s for mm. libtorch is
 * run side by side (bench/ops_torch, same cases) when bench/CMakeLists.txt
 * found it installed; otherwise the reference figures
 * (libtorch 1.13 on this kind of machine: add 1.4-1.8 us, mm 256 12 ms with
 * the reference BLAS) are printed beside ours.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <disp.h>

#include "gemm.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static disp_tensor *filled(int64_t r, int64_t c) {
  int64_t sz[2] = {r, c};
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sz, 2, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK) {
    fprintf(stderr, "bench_ops: %s\n", disp_last_error());
    exit(1);
  }
  float *p = disp_tensor_data_ptr(t);
  for (int64_t i = 0; i < r * c; i++) p[i] = (float)((i * 7) % 13) / 8.0f;
  return t;
}

/* Median ns per call of `iters` calls, over 7 runs. */
#define MEASURE(result, iters, body)                      \
  do {                                                    \
    double runs_[7];                                      \
    for (int r_ = 0; r_ < 7; r_++) {                      \
      double t0_ = now_ns();                              \
      for (long i_ = 0; i_ < (iters); i_++) { body; }     \
      runs_[r_] = (now_ns() - t0_) / (double)(iters);     \
    }                                                     \
    qsort(runs_, 7, sizeof(double), cmp);                 \
    (result) = runs_[3];                                  \
  } while (0)

int main(void) {
  disp_tensor *a = filled(1, 1), *b = filled(1, 1), *out = NULL;
  if (disp_aten_add_Tensor(a, b, disp_scalar_int(1), &out) != DISP_OK) {
    printf("add: not available yet (%s)\n", disp_last_error());
  } else {
    disp_tensor_release(out);
    double ns;
    MEASURE(ns, 200000, {
      disp_aten_add_Tensor(a, b, disp_scalar_int(1), &out);
      disp_tensor_release(out);
    });
    printf("add 1-element float32      %10.1f ns/call   (libtorch 1.13 reference: 1400-1800 ns)\n", ns);
  }
  disp_tensor_release(a), disp_tensor_release(b);

  static const int sizes[2] = {64, 256};
  for (int s = 0; s < 2; s++) {
    int n = sizes[s];
    disp_tensor *x = filled(n, n), *y = filled(n, n);
    for (int portable = 0; portable < 2; portable++) {
      if (!portable && !disp__gemm_have_blas()) continue;
      disp__gemm_force_portable(portable);
      long iters = n == 64 ? 2000 : 40;
      double ns;
      MEASURE(ns, iters, {
        if (disp_aten_mm(x, y, &out) != DISP_OK) {
          fprintf(stderr, "mm: %s\n", disp_last_error());
          exit(1);
        }
        disp_tensor_release(out);
      });
      double gflops = 2.0 * n * n * n / ns;
      printf("mm %3dx%-3d float32 %-8s %10.0f ns/call  %6.2f GFLOP/s%s\n", n, n,
             portable ? "portable" : "cblas", ns, gflops,
             n == 256 ? "   (libtorch 1.13 reference BLAS: 12 ms)" : "");
    }
    disp__gemm_force_portable(0);
    disp_tensor_release(x), disp_tensor_release(y);
  }
#ifdef DISP_BENCH_TORCH_EXE
  fflush(stdout);
  if (system(DISP_BENCH_TORCH_EXE) != 0) printf("libtorch side: %s failed\n", DISP_BENCH_TORCH_EXE);
#else
  printf("libtorch not installed: compared with the reference figures above\n");
#endif
  disp_shutdown();
  return 0;
}
