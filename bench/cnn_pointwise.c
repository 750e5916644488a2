/*
 * cnn_pointwise - the CNN's memory-bound kernels at its own shapes, beside
 * libtorch, float32 on the CPU: relu, threshold_backward (relu's backward),
 * max_pool2d_with_indices (2x2, stride 2) and its backward, on the two
 * activations of examples/cnn.c at batch 64:
 *   *_32x28   [64, 32, 28, 28] (after conv 1 -> 32)
 *   *_64x14   [64, 64, 14, 14] (after conv 32 -> 64)
 * relu's input is uniform in [-1, 1); threshold_backward and the pooling
 * take relu's output (half of it zeros, so the 2x2 windows have ties) and a
 * gradient of the output's shape; the pooling backward takes the forward's
 * own indices, as autograd gives them.
 *
 * Prints, per case, ns per call at 1 thread and at the default threads
 * (harness.h's method: alternating rounds with the twin, best of 5, each
 * the median of 7 runs), the ratio libtorch / ours, and ns per input element
 * beside one thread's memcpy of the bytes the case moves at the least (so
 * the distance to the memory limit shows); then instructions per call from
 * callgrind.
 *
 * libtorch's side is bench/cnn_pointwise_torch (the same at:: operators
 * under InferenceMode), built when bench/CMakeLists.txt found libtorch.
 *
 *   cnn_pointwise                                  the tables (about a minute)
 *   cnn_pointwise --threads N --count NAME:ITERS   cases under callgrind (harness.h)
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <disp.h>

#include "harness.h"

typedef enum cp_op { CP_RELU, CP_THRB, CP_POOL, CP_POOLB } cp_op;

typedef struct cp_case {
  cp_op op;
  int64_t shape[4]; /* the activation: relu's input, the pooling's input */
} cp_case;

#define ACT28 {64, 32, 28, 28}
#define ACT14 {64, 64, 14, 14}
static const cp_case cases[] = {
    {CP_RELU, ACT28}, {CP_RELU, ACT14}, {CP_THRB, ACT28}, {CP_THRB, ACT14},
    {CP_POOL, ACT28}, {CP_POOL, ACT14}, {CP_POOLB, ACT28}, {CP_POOLB, ACT14},
};
enum { NCASES = sizeof cases / sizeof *cases };
#define SPEC(name) {name, 20, 2, NULL}
static const bench_spec specs[NCASES] = {
    SPEC("relu_32x28"),  SPEC("relu_64x14"),  SPEC("thrb_32x28"),  SPEC("thrb_64x14"),
    SPEC("pool_32x28"),  SPEC("pool_64x14"),  SPEC("poolb_32x28"), SPEC("poolb_64x14"),
};

/* Bytes a case must move per input element at the least: relu reads and
 * writes a float; threshold_backward reads two and writes one; the pooling
 * reads a float and writes a quarter of a float and of an int64; its
 * backward reads those and writes a float. */
static double min_bytes(cp_op op) {
  switch (op) {
  case CP_RELU: return 8;
  case CP_THRB: return 12;
  case CP_POOL:
  case CP_POOLB: return 4 + 0.25 * (4 + 8);
  }
  return 0;
}

static const int64_t two[2] = {2, 2}, zero[2] = {0, 0}, one[2] = {1, 1};
#define K2 ((disp_int_list){two, 2})
#define P0 ((disp_int_list){zero, 2})
#define D1 ((disp_int_list){one, 2})

/* The operands of the case run last: x (relu's input), y = relu(x), the
 * pooling's outputs and a gradient for each of y and the pooled output. */
static int current = -1;
static disp_tensor *x, *y, *gy, *pooled, *idx, *gpooled;

static void drop_operands(void) {
  disp_tensor *all[] = {x, y, gy, pooled, idx, gpooled};
  for (int i = 0; i < 6; i++) disp_tensor_release(all[i]);
  x = y = gy = pooled = idx = gpooled = NULL;
}

/* A float32 tensor of `shape`, uniform in [-1, 1). */
static disp_tensor *uniform(const int64_t *shape, unsigned seed) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(shape, 4, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK)
    return NULL;
  float *p = disp_tensor_data_ptr(t);
  uint32_t s = seed * 2654435761u + 1;
  for (int64_t i = 0, n = disp_tensor_numel(t); i < n; i++) {
    s = s * 1103515245u + 12345u;
    p[i] = (float)(s >> 8) / 8388608.0f - 1.0f;
  }
  return t;
}

static int select_case(int k) {
  if (current == k) return 0;
  drop_operands();
  current = k;
  const int64_t *sh = cases[k].shape, psh[4] = {sh[0], sh[1], sh[2] / 2, sh[3] / 2};
  if (!(x = uniform(sh, 1)) || !(gy = uniform(sh, 2)) || !(gpooled = uniform(psh, 3))) return -1;
  if (disp_aten_relu(x, &y) != DISP_OK) return -1;
  return disp_aten_max_pool2d_with_indices(y, K2, K2, P0, D1, false, &pooled, &idx) == DISP_OK ? 0 : -1;
}

static disp_status call(cp_op op) {
  disp_tensor *out = NULL, *out2 = NULL;
  disp_status st = DISP_ERR_INVALID_ARG;
  switch (op) {
  case CP_RELU: st = disp_aten_relu(x, &out); break;
  case CP_THRB: st = disp_aten_threshold_backward(gy, y, disp_scalar_int(0), &out); break;
  case CP_POOL: st = disp_aten_max_pool2d_with_indices(y, K2, K2, P0, D1, false, &out, &out2); break;
  case CP_POOLB: st = disp_aten_max_pool2d_with_indices_backward(gpooled, y, K2, K2, P0, D1, false, idx, &out); break;
  }
  disp_tensor_release(out);
  disp_tensor_release(out2);
  return st;
}

static int run(const char *name, long iters) {
  int k = 0;
  while (k < NCASES && strcmp(specs[k].name, name)) k++;
  if (k == NCASES || select_case(k)) {
    fprintf(stderr, "cnn_pointwise %s: %s\n", name, k == NCASES ? "unknown case" : disp_last_error());
    return -1;
  }
  disp_status st = DISP_OK;
  for (long i = 0; i < iters && st == DISP_OK; i++) st = call(cases[k].op);
  if (st == DISP_OK) return 0;
  fprintf(stderr, "cnn_pointwise %s: %s\n", name, disp_last_error());
  return -1;
}

static double elements(const cp_case *c) { return (double)(c->shape[0] * c->shape[1] * c->shape[2] * c->shape[3]); }

#ifdef DISP_BENCH_TORCH_EXE
static const char *const twin = DISP_BENCH_TORCH_EXE;
#else
static const char *const twin = NULL;
#endif

static double copy_ns[NCASES]; /* one memcpy of each case's least bytes */

static void print_times(const char *threads, const double *ours, const double *theirs) {
  for (int k = 0; k < NCASES; k++) {
    double n = elements(&cases[k]), ratio = theirs[k] > 0 && ours[k] > 0 ? theirs[k] / ours[k] : -1;
    char a[32], b[32], r[32], e[32], te[32], ce[32];
    bench_cell(a, sizeof a, "%.1f", ours[k] / 1e3);
    bench_cell(b, sizeof b, "%.1f", theirs[k] > 0 ? theirs[k] / 1e3 : -1);
    bench_cell(r, sizeof r, "%.2fx", ratio);
    bench_cell(e, sizeof e, "%.3f", ours[k] / n);
    bench_cell(te, sizeof te, "%.3f", theirs[k] > 0 ? theirs[k] / n : -1);
    bench_cell(ce, sizeof ce, "%.3f", copy_ns[k] > 0 ? copy_ns[k] / n : -1);
    printf("%-13s %-7s %10s %12s %7s %8s %8s %8s\n", specs[k].name, threads, a, b, r, e, te, ce);
  }
}

int main(int argc, char **argv) {
  int child = bench_child_main(argc, argv, run);
  if (child >= 0) return child;
  bench_print_header("relu, threshold_backward and max_pool2d 2x2 at the CNN's shapes (float32, batch 64)",
                     twin, "bench/cnn_pointwise_torch, the same at:: operators under c10::InferenceMode");
  for (int k = 0; k < NCASES; k++)
    copy_ns[k] = bench_copy_ns((size_t)(elements(&cases[k]) * min_bytes(cases[k].op) / 2));
  printf("%-13s %-7s %10s %12s %7s %8s %8s %8s\n", "case", "threads", "ours us", "libtorch us", "ratio", "ns/el",
         "lt ns/el", "copy/el");
  int st = bench_race_all(run, twin, specs, NCASES, print_times);
  printf("ratio = libtorch time / ours. ns/el: per input element (the activation); copy/el: one thread's\n"
         "memcpy of the least bytes the case moves (relu 8 a element, threshold_backward 12, the pooling 7),\n"
         "half read and half written, so a kernel at copy/el runs at the copy bandwidth.\n\n");
  if (st == 0) bench_print_counts(twin, specs, NCASES, "call");
  drop_operands();
  disp_shutdown();
  return st ? 1 : 0;
}
