/*
 * optim_build.c - what building an optimizer costs per parameter.
 *
 *   build/bench/optim_build [n]
 *
 * Builds SGD and Adam over 1,000 .. n (default 100000) one-element
 * parameters and prints the time of each build and its time per parameter:
 * flat per-parameter figures mean building is (near) linear in the count
 * (issue 18: a pairwise duplicate check took 3.4 s at 100,000). Prints
 * figures, asserts nothing: run it by hand; CI only builds it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <disp.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds to build (and free) one optimizer of kind 0 (SGD) or 1 (Adam). */
static double time_build(disp_tensor *const *ps, size_t n, int kind) {
  disp_optimizer *opt = NULL;
  disp_sgd_options so = disp_sgd_options_default();
  disp_adam_options ao = disp_adam_options_default();
  so.lr = 0.1;
  double t0 = now_s();
  disp_status st = kind ? disp_optim_adam_new(ps, n, &ao, &opt) : disp_optim_sgd_new(ps, n, &so, &opt);
  double t = now_s() - t0;
  if (st != DISP_OK) {
    fprintf(stderr, "optim_build: %s\n", disp_last_error());
    return -1;
  }
  disp_optim_free(opt);
  return t;
}

int main(int argc, char **argv) {
  size_t max = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 100000;
  disp_tensor **ps = calloc(max ? max : 1, sizeof *ps);
  if (!ps) return 1;
  int64_t one = 1;
  for (size_t i = 0; i < max; i++)
    if (disp_tensor_empty(&one, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &ps[i]) != DISP_OK ||
        disp_tensor_set_requires_grad(ps[i], 1) != DISP_OK)
      return 1;
  printf("%10s %12s %14s %12s %14s\n", "params", "SGD s", "SGD ns/param", "Adam s", "Adam ns/param");
  for (size_t n = 1000; n <= max; n *= 10) {
    double sgd = time_build(ps, n, 0), adam = time_build(ps, n, 1);
    if (sgd < 0 || adam < 0) return 1;
    printf("%10zu %12.4f %14.1f %12.4f %14.1f\n", n, sgd, sgd * 1e9 / (double)n, adam, adam * 1e9 / (double)n);
  }
  for (size_t i = 0; i < max; i++) disp_tensor_release(ps[i]);
  free(ps);
  return 0;
}
