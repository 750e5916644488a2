/*
 * train_twin - does training in C compute what PyTorch computes, and how fast?
 * One of the examples' models (examples/models.h: the MLP 784-256-128-10 of
 * examples/mlp.c, or the CNN of examples/cnn.c), initialised as the examples
 * do from the seeded generator, trained (batch 64, cross-entropy, Adam lr
 * 1e-3, examples/train.c's train_step) on Fashion-MNIST here and by a
 * libtorch twin (bench/train_twin_torch) from the SAME initial weights and
 * the SAME batches: this program writes its initial parameters and the
 * first epoch's image order to a temporary file the twin reads; the twin
 * reads the images itself with zlib and normalizes them as
 * examples/train.c does ((x / 255 - FMNIST_MEAN) * (1 / FMNIST_STD) in float).
 *
 * Prints the loss of both sides every 20 steps (every 100 past 200) and the
 * largest relative difference |ours - libtorch| / |libtorch| over the first
 * 200 steps, for the MLP against issue 10's bound 1e-4 (PASS/MISS; the CNN:
 * Note [The twin's bound]); with --control, also libtorch against itself at
 * another thread count. Then each side's time for its steps (batch assembly
 * included, as an epoch of examples/train.c) and images/s. With --epoch (all
 * 938 batches of an epoch) the time ratio is checked against issue 10's
 * epoch target 1.5x. Without the dataset it says so and exits 0; without
 * the twin (libtorch not installed) it prints our side only.
 *
 *   train_twin [--model mlp|cnn] [--steps N | --epoch] [--threads N] [--control] [--data DIR] [--seed N]
 *   (defaults: mlp, 200 steps, our default threads, the Debian path, seed 0)
 *
 * Threads: both sides get the same count (disp_set_num_threads and
 * at::set_num_threads); at 1, the twin also gets OPENBLAS_NUM_THREADS=1,
 * otherwise its OpenBLAS keeps its own pool as libtorch runs by default
 * (bench/harness.h's rule).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <disp.h>
#include <disp/optim.h>

#include "models.h"
#include "train.h"

enum { BATCH = 64, CHECKED = 200 };
static const double bound_goal = 1e-4, epoch_goal = 1.5;
static const int64_t mlp_widths[4] = {FMNIST_PIXELS, 256, 128, FMNIST_CLASSES};

#ifdef DISP_BENCH_TORCH_EXE
static const char *const twin = DISP_BENCH_TORCH_EXE;
#else
static const char *const twin = NULL;
#endif

typedef struct twin_opts {
  models_kind model;
  int64_t steps; /* --epoch sets the epoch's batch count */
  int epoch, threads;
  int control; /* --control: the twin again at another thread count */
  const char *data;
  uint64_t seed;
} twin_opts;

typedef struct side {
  double *loss; /* per step */
  double seconds;
  int64_t images;
} side;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The twin's input: "DTWIN2\0\0", int64 model (0 MLP, 1 CNN), steps, batch,
 * nparams, nindices; per parameter int64 ndim, int64 sizes[ndim], float32
 * data; then int64 indices[nindices]: the epoch's image order, step s
 * taking indices [s * batch, min((s + 1) * batch, nindices)). Native byte
 * order. */
static int write_plan(FILE *f, const twin_opts *o, const models_net *n, const int64_t *perm, int64_t count) {
  int64_t head[5] = {o->model == MODELS_CNN, o->steps, BATCH, (int64_t)n->nparams, count};
  int ok = fwrite("DTWIN2\0\0", 1, 8, f) == 8 && fwrite(head, sizeof head, 1, f) == 1;
  for (size_t i = 0; ok && i < n->nparams; i++) {
    disp_tensor *p = n->params[i];
    int64_t nd = disp_tensor_ndim(p);
    size_t numel = (size_t)disp_tensor_numel(p);
    ok = fwrite(&nd, sizeof nd, 1, f) == 1 &&
         fwrite(disp_tensor_sizes(p), sizeof(int64_t), (size_t)nd, f) == (size_t)nd &&
         fwrite(disp_tensor_data_ptr(p), sizeof(float), numel, f) == numel;
  }
  ok = ok && fwrite(perm, sizeof *perm, (size_t)count, f) == (size_t)count;
  return ok && fflush(f) == 0 ? 0 : -1;
}

/* Runs the twin on the plan in `path`: its "STEP LOSS" lines fill
 * t->loss, "TIME SECONDS IMAGES" its time. Returns the steps it reported. */
static int64_t run_twin(const char *path, const twin_opts *o, int threads, side *t) {
  char cmd[8192], line[256];
  int64_t n = 0;
  long long s, images;
  double v;
  snprintf(cmd, sizeof cmd, "%s'%s' '%s' '%s' %d", threads == 1 ? "OPENBLAS_NUM_THREADS=1 " : "", twin, path,
           o->data, threads);
  FILE *p = popen(cmd, "r");
  while (p && fgets(line, sizeof line, p)) {
    if (sscanf(line, "TIME %lf %lld", &v, &images) == 2) t->seconds = v, t->images = images;
    else if (sscanf(line, "%lld %lf", &s, &v) == 2 && s >= 1 && s <= o->steps) t->loss[s - 1] = v, n++;
  }
  if (p && pclose(p) != 0) fprintf(stderr, "train_twin: %s failed\n", twin);
  return n;
}

/* Our steps; the plan goes to `plan` before the first changes anything. */
static int train_ours(const fmnist_set *train, const twin_opts *o, FILE *plan, side *ours) {
  models_net net = {0};
  disp_optimizer *opt = NULL;
  int64_t *perm = malloc((size_t)train->count * sizeof *perm);
  uint64_t rng = o->seed;
  disp_adam_options ao = disp_adam_options_default();
  ao.lr = 1e-3;
  disp_manual_seed(o->seed);
  disp_status st = !perm ? DISP_ERR_NO_MEMORY
                   : o->model == MODELS_CNN ? models_cnn_init(&net)
                                            : models_mlp_init(&net, mlp_widths, 3);
  if (st == DISP_OK) st = disp_optim_adam_new(net.params, net.nparams, &ao, &opt);
  if (st == DISP_OK) st = fmnist_shuffle(perm, train->count, &rng); /* train.c's first epoch */
  fmnist_shape shape = o->model == MODELS_CNN ? FMNIST_SHAPE_IMAGE : FMNIST_SHAPE_FLAT;
  train_model model = {&net, models_forward, net.params, net.nparams, shape};
  int rc = st != DISP_OK || (plan && write_plan(plan, o, &net, perm, train->count)) ? -1 : 0;
  double t0 = now_s();
  for (int64_t b = 0; !rc && b < o->steps; b++) {
    disp_tensor *x = NULL, *y = NULL;
    st = fmnist_batch(train, perm, BATCH, b, shape, &x, &y);
    if (st == DISP_OK) st = train_step(&model, opt, x, y, &ours->loss[b]);
    if (st == DISP_OK) ours->images += disp_tensor_sizes(x)[0];
    disp_tensor_release(x), disp_tensor_release(y);
    rc = st != DISP_OK ? -1 : 0;
  }
  ours->seconds = now_s() - t0;
  if (rc) fprintf(stderr, "train_twin: %s\n", st != DISP_OK ? disp_last_error() : "cannot write the plan");
  disp_optim_free(opt);
  models_free(&net);
  free(perm);
  return rc;
}

static double rel_diff(double a, double b) { return fabs(a - b) / (b != 0 ? fabs(b) : 1.0); }

/* How two runs' losses compare: the largest relative difference over the
 * first CHECKED steps (and its step), over all, and the first step past
 * issue 10's bound (0: none). A NaN counts as the largest. */
typedef struct agreement {
  double worst, worst_all;
  int64_t worst_step, first_past;
} agreement;

static agreement compare(const double *a, const double *b, int64_t steps) {
  agreement g = {0, 0, 0, 0};
  for (int64_t s = 0; s < steps; s++) {
    double d = rel_diff(a[s], b[s]);
    if (s < CHECKED && !(d <= g.worst)) g.worst = d, g.worst_step = s + 1;
    if (!(d <= g.worst_all)) g.worst_all = d;
    if (!g.first_past && !(d <= bound_goal)) g.first_past = s + 1;
  }
  return g;
}

static void print_agreement(const char *what, agreement g, int64_t steps) {
  int64_t checked = steps < CHECKED ? steps : CHECKED;
  printf("%s: largest relative difference over the first %lld steps %.3e (step %lld)", what, (long long)checked,
         g.worst, (long long)g.worst_step);
  if (steps > CHECKED) printf(", over all %lld %.3e", (long long)steps, g.worst_all);
  if (g.first_past) printf("; past %g from step %lld", bound_goal, (long long)g.first_past);
  printf("\n");
}

static void print_losses(const twin_opts *o, const side *ours, const side *theirs, int have_twin) {
  printf("%6s %14s %14s %12s\n", "step", "ours", "libtorch", "rel. diff");
  for (int64_t s = 0; s < o->steps; s++)
    if ((s + 1) % (s < CHECKED ? 20 : 100) == 0 || s == 0 || s + 1 == o->steps) {
      if (have_twin)
        printf("%6lld %14.8f %14.8f %12.3e\n", (long long)s + 1, ours->loss[s], theirs->loss[s],
               rel_diff(ours->loss[s], theirs->loss[s]));
      else printf("%6lld %14.8f %14s %12s\n", (long long)s + 1, ours->loss[s], "-", "-");
    }
}

/* Note [The twin's bound]: issue 10 bounds the MLP's first 200 losses at
 * 1e-4 relative. The CNN's rounding differences grow with the steps (max
 * pooling's and ReLU's choices flip on last-bit differences, and Adam
 * scales the updates of parameters with tiny gradients up): libtorch itself
 * at 2 threads leaves its own 1-thread losses by ~1e-2 within 200 steps.
 * So the CNN's check is --control's comparison: ours should stay as close
 * to libtorch as libtorch stays to itself. */
static void report_losses(const twin_opts *o, const side *ours, const side *theirs, const side *control,
                          int have_twin) {
  print_losses(o, ours, theirs, have_twin);
  if (!have_twin) {
    printf("(no libtorch side: %s)\n", twin ? "the twin failed" : "bench/train_twin_torch not built");
    return;
  }
  agreement g = compare(ours->loss, theirs->loss, o->steps);
  print_agreement("ours against libtorch", g, o->steps);
  if (control) {
    char what[96];
    snprintf(what, sizeof what, "libtorch at %d threads against itself at %d", o->threads == 1 ? 2 : 1, o->threads);
    print_agreement(what, compare(control->loss, theirs->loss, o->steps), o->steps);
  }
  if (o->model == MODELS_MLP)
    printf("issue 10's bound for the MLP: <= %g over the first %d steps: %s\n", bound_goal, CHECKED,
           g.worst <= bound_goal ? "PASS" : "MISS");
  else printf("(the CNN has no fixed bound: Note [The twin's bound] in bench/train_twin.c; --control)\n");
}

static void report_times(const twin_opts *o, const side *ours, const side *theirs, int have_twin) {
  printf("\n%-9s %8s %10s %12s\n", "side", "threads", "seconds", "images/s");
  printf("%-9s %8d %10.2f %12.0f\n", "ours", o->threads, ours->seconds, ours->images / ours->seconds);
  if (!have_twin || !(theirs->seconds > 0)) return;
  printf("%-9s %8d %10.2f %12.0f\n", "libtorch", o->threads, theirs->seconds, theirs->images / theirs->seconds);
  double r = theirs->seconds / ours->seconds;
  if (o->epoch) printf("ratio (libtorch time / ours) %.2fx; issue 10's epoch target >= %.1fx: %s\n", r, epoch_goal,
                       r >= epoch_goal ? "PASS" : "MISS");
  else printf("ratio (libtorch time / ours) %.2fx (an epoch's target applies with --epoch)\n", r);
}

static int usage(void) {
  fprintf(stderr, "usage: train_twin [--model mlp|cnn] [--steps N | --epoch] [--threads N] [--control] [--data DIR] "
                  "[--seed N]\n");
  return 1;
}

static int parse(int argc, char **argv, twin_opts *o) {
  *o = (twin_opts){MODELS_MLP, CHECKED, 0, disp_get_num_threads(), 0, FMNIST_DEFAULT_DIR, 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--epoch") || !strcmp(a, "--control")) {
      *(!strcmp(a, "--epoch") ? &o->epoch : &o->control) = 1;
      continue;
    }
    if (!v) return usage();
    i++;
    if (!strcmp(a, "--model") && (!strcmp(v, "mlp") || !strcmp(v, "cnn")))
      o->model = !strcmp(v, "cnn") ? MODELS_CNN : MODELS_MLP;
    else if (!strcmp(a, "--steps") && atoll(v) > 0) o->steps = atoll(v);
    else if (!strcmp(a, "--threads") && atoi(v) > 0) o->threads = atoi(v);
    else if (!strcmp(a, "--data")) o->data = v;
    else if (!strcmp(a, "--seed")) o->seed = strtoull(v, NULL, 10);
    else return usage();
  }
  return disp_set_num_threads(o->threads) == DISP_OK ? 0 : usage();
}

int main(int argc, char **argv) {
  twin_opts o;
  if (parse(argc, argv, &o)) return 1;
  fmnist_set train = {0};
  disp_status st = fmnist_load(o.data, 1, &train);
  if (st == DISP_OK) st = fmnist_normalize(&train, FMNIST_MEAN, FMNIST_STD);
  if (st != DISP_OK) {
    printf("train_twin: Fashion-MNIST not available, nothing compared:\n  %s\n", disp_last_error());
    fmnist_free(&train);
    return 0;
  }
  int64_t batches = fmnist_batch_count(&train, BATCH);
  if (o.epoch || o.steps > batches) o.steps = batches;
  printf("%s on Fashion-MNIST, batch %d, Adam lr 1e-3, seed %llu, %d thread(s): %lld steps here and in\n"
         "libtorch (bench/train_twin_torch) from the same initial weights and batches; loss per step\n\n",
         o.model == MODELS_CNN ? "CNN conv32-pool-conv64-pool-fc128-fc10" : "MLP 784-256-128-10 (ReLU)", BATCH,
         (unsigned long long)o.seed, o.threads, (long long)o.steps);
  char path[] = "/tmp/train_twin_XXXXXX";
  int fd = twin ? mkstemp(path) : -1;
  FILE *plan = fd >= 0 ? fdopen(fd, "wb") : NULL;
  side ours = {calloc((size_t)o.steps, sizeof(double)), 0, 0}, theirs = {calloc((size_t)o.steps, sizeof(double)), 0, 0};
  side control = {calloc((size_t)o.steps, sizeof(double)), 0, 0};
  int rc = ours.loss && theirs.loss && control.loss ? 0 : -1;
  for (int64_t s = 0; !rc && s < o.steps; s++) theirs.loss[s] = control.loss[s] = NAN;
  if (!rc) rc = train_ours(&train, &o, plan, &ours);
  if (plan) fclose(plan);
  int have_twin = !rc && plan && run_twin(path, &o, o.threads, &theirs) == o.steps;
  if (!rc && twin && !have_twin) fprintf(stderr, "train_twin: the twin gave no full run\n");
  int have_control = have_twin && o.control && run_twin(path, &o, o.threads == 1 ? 2 : 1, &control) == o.steps;
  if (fd >= 0) remove(path);
  if (!rc) {
    report_losses(&o, &ours, &theirs, have_control ? &control : NULL, have_twin);
    report_times(&o, &ours, &theirs, have_twin);
  }
  free(ours.loss), free(theirs.loss), free(control.loss);
  fmnist_free(&train);
  disp_shutdown();
  return rc ? 1 : 0;
}
