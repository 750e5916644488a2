/*
 * train_twin - does training in C compute what PyTorch computes? The MLP of
 * examples/mlp.c (784-256-128-10, ReLU, torch.nn's default initialisation
 * from the seeded generator, examples/train.c's train_param) trained for 200 steps (batch 64, cross-entropy,
 * Adam lr 1e-3) on Fashion-MNIST here and by a libtorch twin
 * (bench/train_twin_torch) from the SAME initial weights and the SAME
 * batches: this program writes its initial parameters and the image indices
 * of every step to a temporary file the twin reads; the twin reads the
 * images itself with zlib and normalizes them as examples/train.c does
 * ((x / 255 - FMNIST_MEAN) * (1 / FMNIST_STD) in float).
 *
 * Prints the loss of both sides every 20 steps and the largest relative
 * difference |ours - libtorch| / |libtorch| over all 200 steps, against
 * issue 10's bound 1e-4 (PASS/MISS). Without the dataset it says so and
 * exits 0; without the twin (libtorch not installed) it prints our losses.
 *
 *   train_twin [--data DIR] [--seed N]       (defaults: the Debian path, 0)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <disp.h>
#include <disp/optim.h>

#include "train.h" /* train_param, and fmnist.h */

enum { STEPS = 200, BATCH = 64, LAYERS = 3, NPARAMS = 2 * LAYERS, EVERY = 20 };
static const int64_t widths[LAYERS + 1] = {FMNIST_PIXELS, 256, 128, FMNIST_CLASSES};
static const double bound_goal = 1e-4;

#ifdef DISP_BENCH_TORCH_EXE
static const char *const twin = DISP_BENCH_TORCH_EXE;
#else
static const char *const twin = NULL;
#endif

/* examples/mlp.c's mlp_init. */
static disp_status init_params(uint64_t seed, disp_tensor **p) {
  disp_manual_seed(seed);
  disp_status st = DISP_OK;
  for (int l = 0; l < LAYERS && st == DISP_OK; l++) {
    int64_t w[2] = {widths[l + 1], widths[l]};
    st = train_param(w, 2, widths[l], &p[2 * l]);
    if (st == DISP_OK) st = train_param(&w[0], 1, widths[l], &p[2 * l + 1]);
  }
  return st;
}

/* examples/mlp.c's forward: linear -> relu -> linear -> relu -> linear. */
static disp_status forward(void *state, disp_tensor *x, disp_tensor **logits) {
  disp_tensor *const *p = state;
  disp_tensor *h = disp_tensor_retain(x);
  disp_status st = DISP_OK;
  for (int l = 0; l < LAYERS && st == DISP_OK; l++) {
    disp_tensor *z = NULL;
    st = disp_aten_linear(h, p[2 * l], p[2 * l + 1], &z);
    disp_tensor_release(h);
    h = z;
    if (st == DISP_OK && l + 1 < LAYERS) {
      st = disp_aten_relu(z, &h);
      disp_tensor_release(z);
    }
  }
  *logits = st == DISP_OK ? h : NULL;
  if (st != DISP_OK) disp_tensor_release(h);
  return st;
}

/* The twin's input: "DTWIN1\0\0", int64 steps, batch, nparams; per parameter
 * int64 ndim, int64 sizes[ndim], float32 data; then int64 indices[steps *
 * batch] (the training images of each step, in order). Native byte order. */
static int write_plan(FILE *f, disp_tensor *const *p, const int64_t *perm) {
  int64_t head[3] = {STEPS, BATCH, NPARAMS};
  int ok = fwrite("DTWIN1\0\0", 1, 8, f) == 8 && fwrite(head, sizeof head, 1, f) == 1;
  for (int i = 0; ok && i < NPARAMS; i++) {
    int64_t nd = disp_tensor_ndim(p[i]);
    ok = fwrite(&nd, sizeof nd, 1, f) == 1 && fwrite(disp_tensor_sizes(p[i]), sizeof(int64_t), (size_t)nd, f) == (size_t)nd &&
         fwrite(disp_tensor_data_ptr(p[i]), sizeof(float), (size_t)disp_tensor_numel(p[i]), f) ==
             (size_t)disp_tensor_numel(p[i]);
  }
  ok = ok && fwrite(perm, sizeof *perm, (size_t)STEPS * BATCH, f) == (size_t)STEPS * BATCH;
  return ok && fflush(f) == 0 ? 0 : -1;
}

/* Runs the twin on the plan in `path`; its "STEP LOSS" lines fill theirs[].
 * Returns how many steps it reported. */
static int run_twin(const char *path, const char *data, double *theirs) {
  char cmd[8192], line[256];
  int n = 0, s;
  double v;
  snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", twin, path, data);
  FILE *p = popen(cmd, "r");
  while (p && fgets(line, sizeof line, p))
    if (sscanf(line, "%d %lf", &s, &v) == 2 && s >= 1 && s <= STEPS) theirs[s - 1] = v, n++;
  if (p && pclose(p) != 0) fprintf(stderr, "train_twin: %s failed\n", twin);
  return n;
}

/* Our 200 steps; the plan goes to `plan` before the first changes anything. */
static int train_ours(const fmnist_set *train, uint64_t seed, FILE *plan, double *ours) {
  disp_tensor *p[NPARAMS] = {0};
  disp_optimizer *opt = NULL;
  int64_t *perm = malloc((size_t)train->count * sizeof *perm);
  uint64_t rng = seed;
  disp_adam_options o = disp_adam_options_default();
  o.lr = 1e-3;
  disp_status st = perm ? init_params(seed, p) : DISP_ERR_NO_MEMORY;
  if (st == DISP_OK) st = disp_optim_adam_new(p, NPARAMS, &o, &opt);
  if (st == DISP_OK) st = fmnist_shuffle(perm, train->count, &rng); /* train.c's first epoch */
  train_model model = {p, forward, p, NPARAMS, FMNIST_SHAPE_FLAT}; /* examples/train.c's step */
  int rc = st != DISP_OK || (plan && write_plan(plan, p, perm)) ? -1 : 0;
  for (int64_t b = 0; !rc && b < STEPS; b++) {
    disp_tensor *x = NULL, *y = NULL;
    st = fmnist_batch(train, perm, BATCH, b, FMNIST_SHAPE_FLAT, &x, &y);
    if (st == DISP_OK) st = train_step(&model, opt, x, y, &ours[b]);
    disp_tensor_release(x), disp_tensor_release(y);
    rc = st != DISP_OK ? -1 : 0;
  }
  if (rc) fprintf(stderr, "train_twin: %s\n", st != DISP_OK ? disp_last_error() : "cannot write the plan");
  disp_optim_free(opt);
  for (int i = 0; i < NPARAMS; i++) disp_tensor_release(p[i]);
  free(perm);
  return rc;
}

static double rel_diff(double a, double b) { return fabs(a - b) / (b != 0 ? fabs(b) : 1.0); }

static void report(const double *ours, const double *theirs, int have_twin) {
  printf("%6s %14s %14s %12s\n", "step", "ours", "libtorch", "rel. diff");
  double worst = 0;
  int worst_step = 0;
  for (int s = 0; s < STEPS; s++) {
    double d = have_twin ? rel_diff(ours[s], theirs[s]) : 0;
    if (have_twin && !(d <= worst)) worst = d, worst_step = s + 1; /* a NaN counts as worst */
    if ((s + 1) % EVERY == 0 || s == 0) {
      if (have_twin) printf("%6d %14.8f %14.8f %12.3e\n", s + 1, ours[s], theirs[s], d);
      else printf("%6d %14.8f %14s %12s\n", s + 1, ours[s], "-", "-");
    }
  }
  if (!have_twin) {
    printf("(no libtorch side: %s)\n", twin ? "the twin failed" : "bench/train_twin_torch not built");
    return;
  }
  printf("largest relative difference over %d steps: %.3e (step %d); target <= %g: %s\n", STEPS, worst,
         worst_step, bound_goal, worst <= bound_goal ? "PASS" : "MISS");
}

int main(int argc, char **argv) {
  const char *data = FMNIST_DEFAULT_DIR;
  uint64_t seed = 0;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!strcmp(argv[i], "--data")) data = argv[i + 1];
    else if (!strcmp(argv[i], "--seed")) seed = strtoull(argv[i + 1], NULL, 10);
  if (argc % 2 == 0) {
    fprintf(stderr, "usage: train_twin [--data DIR] [--seed N]\n");
    return 1;
  }
  fmnist_set train = {0};
  disp_status st = fmnist_load(data, 1, &train);
  if (st == DISP_OK) st = fmnist_normalize(&train, FMNIST_MEAN, FMNIST_STD);
  if (st != DISP_OK) {
    printf("train_twin: Fashion-MNIST not available, nothing compared:\n  %s\n", disp_last_error());
    fmnist_free(&train);
    return 0;
  }
  printf("MLP 784-256-128-10 (ReLU) on Fashion-MNIST, batch %d, Adam lr 1e-3, seed %llu: %d steps here and in\n"
         "libtorch (bench/train_twin_torch) from the same initial weights and batches; loss per step\n\n",
         BATCH, (unsigned long long)seed, STEPS);
  char path[] = "/tmp/train_twin_XXXXXX";
  int fd = twin ? mkstemp(path) : -1;
  FILE *plan = fd >= 0 ? fdopen(fd, "wb") : NULL;
  double ours[STEPS], theirs[STEPS];
  for (int s = 0; s < STEPS; s++) theirs[s] = NAN;
  int rc = train_ours(&train, seed, plan, ours);
  if (plan) fclose(plan);
  int have_twin = !rc && plan && run_twin(path, data, theirs) == STEPS;
  if (!rc && twin && !have_twin) fprintf(stderr, "train_twin: the twin gave no full run\n");
  if (fd >= 0) remove(path);
  if (!rc) report(ours, theirs, have_twin);
  fmnist_free(&train);
  disp_shutdown();
  return rc ? 1 : 0;
}
