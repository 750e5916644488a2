/*
 * train_step - one training step through the public API, beside libtorch:
 * forward, cross-entropy (mean), backward, Adam step (lr 1e-3), zero_grad
 * (1.13's default: gradients zeroed in place, not set to None; libtorch's
 * C++ Optimizer::zero_grad has no other mode) in float32, for
 *   MLPs linear-relu-linear 16-32-4 b8, 64-128-10 b32, 784-256-10 b128;
 *   the CNN of examples/cnn.c (conv3x3 32 - relu - maxpool2 - conv3x3 64 -
 *   relu - maxpool2 - linear 3136-128 - relu - linear 128-10) at b64.
 * Parameters are random with torch.nn's bounds (uniform in +-1/sqrt(fan_in)),
 * inputs uniform in [-1, 1), labels random classes: the same shapes on both
 * sides, each side its own random numbers.
 *
 * Prints, per case, us per step at 1 thread and at the default threads
 * (harness.h's method: alternating rounds with the twin, best of 5, each
 * the median of 7 runs), the ratio libtorch time / ours with issue 10's
 * target and PASS/MISS; instructions per step from callgrind for the
 * smallest; and the operators our side dispatches per step.
 *
 * Counting dispatched ops: one step runs with the dispatch trace on
 * (disp_trace_set, the public switch behind DISP_SHOW_DISPATCH_TRACE) and
 * stderr sent to a temporary file; every "[call]"/"[callBoxed]" line is one
 * operator call through the dispatcher, those at nesting depth 0 the ones
 * the step itself (or the autograd engine, the optimizer) made, and
 * "[redispatch]" lines the hops between keys inside a call. The twin
 * counts its side with a RecordFunction observer (train_torch --ops), which
 * sees every operator call but no redispatch.
 *
 * libtorch's side is bench/train_torch (at::linear etc., Tensor::backward,
 * torch::optim::Adam), built when bench/CMakeLists.txt found libtorch.
 *
 *   train_step                                  the tables (a few minutes)
 *   train_step --threads N --count NAME:ITERS   cases under callgrind (harness.h)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <disp.h>
#include <disp/optim.h>

#include "harness.h"
#include "models.h"

typedef struct step_case {
  int cnn;                   /* 0: MLP in-hidden-out; 1: the CNN */
  int64_t in, hidden, out, batch;
  double goal;               /* issue 10: libtorch time / ours at least this */
} step_case;

enum { NCASES = 4, MAXP = 8 };
static const step_case cases[NCASES] = {
    {0, 16, 32, 4, 8, 5.0},
    {0, 64, 128, 10, 32, 2.0},
    {0, 784, 256, 10, 128, 1.0},
    {1, 0, 0, 10, 64, 1.0},
};
/* Names the twin shares; iterations for about 10 ms a timed run. */
static const bench_spec specs[NCASES] = {
    {"step_16_32_4_b8", 300, 20, "16-32-4 b8"},
    {"step_64_128_10_b32", 100, 0, "64-128-10 b32"},
    {"step_784_256_10_b128", 6, 0, "784-256-10 b128"},
    {"step_cnn_b64", 1, 0, "cnn b64"},
};

/* One case's model, batch and optimizer, made on first use. */
typedef struct step_state {
  models_net net; /* examples/models.h's MLP (two layers) or CNN, on our parameters */
  disp_tensor *x, *y;
  disp_optimizer *opt;
} step_state;

static step_state states[NCASES];

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

/* A uniform float in [-1, 1) (a 64-bit LCG's top bits). */
static float uniform1(void) {
  rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
  return (float)(rng_state >> 40) / (float)(1 << 23) - 1.0f;
}

/* A new float32 CPU tensor of `sizes`, uniform in [-scale, scale). */
static disp_tensor *uniform(const int64_t *sizes, int ndim, float scale) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, ndim, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK)
    return NULL;
  float *p = disp_tensor_data_ptr(t);
  for (int64_t i = 0; i < disp_tensor_numel(t); i++) p[i] = scale * uniform1();
  return t;
}

/* A weight [rows, ...] and bias [rows] with torch.nn's bound 1/sqrt(fan_in),
 * appended to p[*n]. */
static int add_layer(disp_tensor **p, size_t *n, const int64_t *wsizes, int ndim, int64_t fan_in) {
  float bound = 1.0f / sqrtf((float)fan_in);
  disp_tensor *w = uniform(wsizes, ndim, bound), *b = uniform(wsizes, 1, bound);
  p[(*n)++] = w;
  p[(*n)++] = b;
  return w && b && disp_tensor_set_requires_grad(w, 1) == DISP_OK && disp_tensor_set_requires_grad(b, 1) == DISP_OK
             ? 0
             : -1;
}

static int make_state(int k) {
  const step_case *c = &cases[k];
  step_state *s = &states[k];
  disp_tensor *p[MAXP] = {0};
  size_t np = 0;
  int rc = 0;
  if (c->cnn) {
    const int64_t w1[4] = {32, 1, 3, 3}, w2[4] = {64, 32, 3, 3}, f1[2] = {128, MODELS_CNN_FLAT}, f2[2] = {10, 128};
    const int64_t xs[4] = {c->batch, 1, 28, 28};
    rc |= add_layer(p, &np, w1, 4, 9) | add_layer(p, &np, w2, 4, 32 * 9) | add_layer(p, &np, f1, 2, f1[1]) |
          add_layer(p, &np, f2, 2, 128);
    s->x = uniform(xs, 4, 1.0f);
  } else {
    const int64_t w1[2] = {c->hidden, c->in}, w2[2] = {c->out, c->hidden}, xs[2] = {c->batch, c->in};
    rc |= add_layer(p, &np, w1, 2, c->in) | add_layer(p, &np, w2, 2, c->hidden);
    s->x = uniform(xs, 2, 1.0f);
  }
  if (models_adopt(&s->net, c->cnn ? MODELS_CNN : MODELS_MLP, p, np) != DISP_OK) {
    for (size_t i = 0; i < np; i++) disp_tensor_release(p[i]);
    return -1;
  }
  int64_t n = c->batch;
  if (disp_tensor_empty(&n, 1, DISP_DTYPE_INT64, disp_device_make(DISP_BACKEND_CPU, -1), &s->y) != DISP_OK) return -1;
  int64_t *lab = disp_tensor_data_ptr(s->y);
  for (int64_t i = 0; i < n; i++) lab[i] = (int64_t)((uniform1() + 1.0f) * 0.5f * (float)c->out) % c->out;
  disp_adam_options o = disp_adam_options_default();
  o.lr = 1e-3;
  if (rc || !s->x || disp_optim_adam_new(s->net.params, s->net.nparams, &o, &s->opt) != DISP_OK) return -1;
  return 0;
}

static void free_state(step_state *s) {
  models_free(&s->net);
  disp_tensor_release(s->x), disp_tensor_release(s->y);
  disp_optim_free(s->opt);
  memset(s, 0, sizeof *s);
}

/* forward, cross-entropy, backward, Adam step, zero_grad. */
static disp_status train_step(int k) {
  step_state *s = &states[k];
  disp_tensor *logits = models_forward(&s->net, s->x), *loss = NULL; /* no scope open: ours */
  disp_status st = logits ? DISP_OK : disp_last_status();
  if (st == DISP_OK) st = disp_aten_cross_entropy_loss(logits, s->y, NULL, 1, -100, 0.0, &loss);
  if (st == DISP_OK) st = disp_autograd_backward(&loss, 1, NULL, 0, 0);
  if (st == DISP_OK) st = disp_optim_step(s->opt);
  if (st == DISP_OK) st = disp_optim_zero_grad(s->opt, 0);
  disp_tensor_release(loss), disp_tensor_release(logits);
  return st;
}

static int case_index(const char *name) {
  int k = 0;
  while (k < NCASES && strcmp(specs[k].name, name)) k++;
  return k;
}

static int run(const char *name, long iters) {
  int k = case_index(name);
  if (k == NCASES) return -1;
  if (!states[k].opt && make_state(k)) {
    fprintf(stderr, "train_step %s: %s\n", name, disp_last_error());
    free_state(&states[k]);
    return -1;
  }
  for (long i = 0; i < iters; i++)
    if (train_step(k) != DISP_OK) {
      fprintf(stderr, "train_step %s: %s\n", name, disp_last_error());
      return -1;
    }
  return 0;
}

/* ---- dispatched operators per step (see the top) ------------------------------ */

typedef struct op_counts {
  long top, calls, redispatches;
} op_counts;

/* Reads trace lines from f into *n. */
static void parse_trace(FILE *f, op_counts *n) {
  char line[600];
  memset(n, 0, sizeof *n);
  while (fgets(line, sizeof line, f)) {
    const char *p = line;
    while (*p == ' ') p++;
    if (!strncmp(p, "[redispatch]", 12)) n->redispatches++;
    else if (!strncmp(p, "[call", 5)) n->calls++, n->top += p == line;
  }
}

/* One step of case k (already warm) with the trace on and stderr in a file. */
static int count_ops(int k, op_counts *n) {
  FILE *tmp = tmpfile();
  int saved = dup(STDERR_FILENO);
  if (!tmp || saved < 0) return -1;
  fflush(stderr);
  dup2(fileno(tmp), STDERR_FILENO);
  disp_trace_set(1);
  disp_status st = train_step(k);
  disp_trace_set(0);
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  rewind(tmp);
  parse_trace(tmp, n);
  fclose(tmp);
  return st == DISP_OK ? 0 : -1;
}

/* The twin's "NAME top all" lines (train_torch --ops) into theirs[]. */
static void twin_op_counts(const char *twin, op_counts *theirs) {
  char cmd[4096], line[256], name[128];
  long top, all;
  int len = snprintf(cmd, sizeof cmd, "'%s' --ops", twin);
  for (int k = 0; k < NCASES && len > 0 && (size_t)len < sizeof cmd; k++)
    len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %s", specs[k].name);
  FILE *p = popen(cmd, "r");
  while (p && fgets(line, sizeof line, p))
    if (sscanf(line, "%127s %ld %ld", name, &top, &all) == 3 && case_index(name) < NCASES)
      theirs[case_index(name)] = (op_counts){top, all, -1};
  if (p) pclose(p);
}

static void print_op_counts(const char *twin) {
  op_counts theirs[NCASES];
  for (int k = 0; k < NCASES; k++) theirs[k] = (op_counts){-1, -1, -1};
  if (twin) twin_op_counts(twin, theirs);
  printf("dispatched operators per step (ours: the dispatch trace's \"[call]\" lines; libtorch: a RecordFunction\n"
         "observer on operator calls)\n");
  printf("%-16s %10s %10s %12s %14s %14s\n", "case", "top-level", "all calls", "redispatches", "libtorch top",
         "libtorch all");
  for (int k = 0; k < NCASES; k++) {
    op_counts n;
    char a[32], b[32];
    if (run(specs[k].name, 2) || count_ops(k, &n)) {
      printf("%-16s (failed: %s)\n", bench_label(&specs[k]), disp_last_error());
      continue;
    }
    bench_cell(a, sizeof a, "%.0f", (double)theirs[k].top);
    bench_cell(b, sizeof b, "%.0f", (double)theirs[k].calls);
    printf("%-16s %10ld %10ld %12ld %14s %14s\n", bench_label(&specs[k]), n.top, n.calls, n.redispatches, a, b);
  }
  printf("top-level: calls the step, the autograd engine or the optimizer made; all calls: also those made\n"
         "inside kernels (composites such as linear and cross_entropy_loss, autograd formulas).\n\n");
}

/* ---- the tables -------------------------------------------------------------- */

#ifdef DISP_BENCH_TORCH_EXE
static const char *const twin = DISP_BENCH_TORCH_EXE;
#else
static const char *const twin = NULL;
#endif

/* One table row per case: times at one thread setting, ratio, target. */
static void print_times(const char *threads, const double *ours, const double *theirs) {
  for (int k = 0; k < NCASES; k++)
    bench_print_ratio_row(bench_label(&specs[k]), threads, ours[k], theirs[k], cases[k].goal);
}

int main(int argc, char **argv) {
  int child = bench_child_main(argc, argv, run);
  if (child >= 0) return child;
  bench_print_header("libdispatch training step (forward, cross-entropy, backward, Adam, zero_grad; float32) "
                     "beside libtorch",
                     twin, "bench/train_torch, at:: ops, Tensor::backward, torch::optim::Adam");
  printf("\n");
  bench_ratio_header("case");
  if (bench_race_all(run, twin, specs, NCASES, print_times)) return 1;
  printf("ratio = libtorch us / ours; targets from issue 10.\n\n");

  bench_print_counts(twin, specs, NCASES, "step");
  printf("\n");
  print_op_counts(twin);
  for (int k = 0; k < NCASES; k++) free_state(&states[k]);
  disp_shutdown();
  return 0;
}
