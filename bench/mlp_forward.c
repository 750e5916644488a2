/*
 * mlp_forward - an MLP forward pass through the public API, beside libtorch:
 * linear, relu, linear, log_softmax(dim 1) in float32 at three sizes
 * (in-hidden-out, batch): 16-32-4 b8, 64-128-10 b32, 784-256-10 b128.
 * Weights and inputs are random (uniform, torch.nn.Linear's scale), the same
 * shapes on both sides; every intermediate is a new tensor, as at::linear
 * etc. give them.
 *
 * Prints, per size, us per forward at 1 thread and at the default threads
 * (both sides the same setting; harness.h's method: alternating rounds,
 * best of 5, each the median of 7 runs), the ratio libtorch time / ours
 * with issue 9's target and PASS/MISS, then instructions per forward from
 * callgrind (only the measured loop, every pool at one thread).
 *
 * libtorch's side is bench/mlp_torch (at::linear, at::relu, at::log_softmax
 * under InferenceMode), built when bench/CMakeLists.txt found libtorch;
 * without it only our side is printed.
 *
 *   mlp_forward                                  the tables (about a minute)
 *   mlp_forward --threads N --count NAME:ITERS   cases under callgrind (harness.h)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <disp.h>

#include "harness.h"

typedef struct mlp_size {
  int64_t in, hidden, out, batch;
  double goal; /* issue 9: libtorch time / ours at least this */
} mlp_size;

enum { NSIZES = 3 };
static const mlp_size sizes[NSIZES] = {
    {16, 32, 4, 8, 5.0},
    {64, 128, 10, 32, 2.0},
    {784, 256, 10, 128, 1.2},
};
/* Names the twin shares; iterations for about 10 ms a timed run. */
static const bench_spec specs[NSIZES] = {
    {"mlp_16_32_4_b8", 3000, 300, "16-32-4 b8"},
    {"mlp_64_128_10_b32", 300, 30, "64-128-10 b32"},
    {"mlp_784_256_10_b128", 20, 3, "784-256-10 b128"},
};

/* x, w1, b1, w2, b2 per size, made on first use. */
static disp_tensor *params[NSIZES][5];

/* A new float32 CPU tensor of uniform values in [-scale, scale). */
static disp_tensor *uniform(int64_t r, int64_t c, float scale) {
  int64_t sz[2] = {r, c};
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sz, c ? 2 : 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK)
    return NULL;
  static uint64_t state = 0x9e3779b97f4a7c15u;
  float *p = disp_tensor_data_ptr(t);
  for (int64_t i = 0; i < r * (c ? c : 1); i++) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    p[i] = scale * ((float)(state >> 40) / (float)(1 << 23) - 1.0f);
  }
  return t;
}

static int make_params(int k) {
  const mlp_size *s = &sizes[k];
  disp_tensor **p = params[k];
  float s1 = 1.0f / sqrtf((float)s->in), s2 = 1.0f / sqrtf((float)s->hidden);
  p[0] = uniform(s->batch, s->in, 1.0f);
  p[1] = uniform(s->hidden, s->in, s1), p[2] = uniform(s->hidden, 0, s1);
  p[3] = uniform(s->out, s->hidden, s2), p[4] = uniform(s->out, 0, s2);
  for (int i = 0; i < 5; i++)
    if (!p[i]) return -1;
  return 0;
}

static disp_status forward(disp_tensor *const *p) {
  disp_tensor *h = NULL, *r = NULL, *o = NULL, *y = NULL;
  disp_status st = disp_aten_linear(p[0], p[1], p[2], &h);
  if (st == DISP_OK) st = disp_aten_relu(h, &r);
  if (st == DISP_OK) st = disp_aten_linear(r, p[3], p[4], &o);
  if (st == DISP_OK) st = disp_aten_log_softmax_int(o, 1, -1, &y);
  disp_tensor_release(h), disp_tensor_release(r), disp_tensor_release(o), disp_tensor_release(y);
  return st;
}

static int run(const char *name, long iters) {
  int k = 0;
  while (k < NSIZES && strcmp(specs[k].name, name)) k++;
  if (k == NSIZES || (!params[k][0] && make_params(k))) return -1;
  for (long i = 0; i < iters; i++)
    if (forward(params[k]) != DISP_OK) {
      fprintf(stderr, "mlp_forward %s: %s\n", name, disp_last_error());
      return -1;
    }
  return 0;
}

#ifdef DISP_BENCH_TORCH_EXE
static const char *const twin = DISP_BENCH_TORCH_EXE;
#else
static const char *const twin = NULL;
#endif

/* One table row per size: times at one thread setting, ratio, target. */
static void print_times(const char *threads, const double *ours, const double *theirs) {
  for (int k = 0; k < NSIZES; k++)
    bench_print_ratio_row(bench_label(&specs[k]), threads, ours[k], theirs[k], sizes[k].goal);
}

int main(int argc, char **argv) {
  int child = bench_child_main(argc, argv, run);
  if (child >= 0) return child;
  bench_print_header("libdispatch MLP forward (linear, relu, linear, log_softmax dim 1; float32) beside libtorch",
                     twin, "bench/mlp_torch, at::linear/relu/log_softmax under c10::InferenceMode");
  printf("\n");
  bench_ratio_header("size");
  if (bench_race_all(run, twin, specs, NSIZES, print_times)) return 1;

  printf("ratio = libtorch us / ours; targets from issue 9.\n\n");

  bench_print_counts(twin, specs, NSIZES, "forward");
  for (int k = 0; k < NSIZES; k++)
    for (int i = 0; i < 5; i++) disp_tensor_release(params[k][i]);
  disp_shutdown();
  return 0;
}
