/*
 * train.c - the training loop the examples share (train.h).
 */
#include "train.h"

#include "device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int usage(const char *prog, const train_flags *d) {
  fprintf(stderr,
          "usage: %s [--epochs N] [--batch N] [--lr X] [--seed N] [--data DIR] [--threads N]\n"
          "       [--device cpu|NAME] [--plugin X.so]... [--steps N] [--loss-every N]\n"
          "  DISP_PLUGINS=a.so:b.so in the environment loads plugins too\n"
          "  defaults: --epochs %d --batch %lld --lr %g --seed %llu --data %s --device %s\n",
          prog, d->epochs, (long long)d->batch, d->lr, (unsigned long long)d->seed, d->data, d->device);
  return 1;
}

int train_parse_flags(int argc, char **argv, const char *prog, train_flags *f) {
  train_flags d = *f;
  for (int i = 1; i < argc; i += 2) { /* every option takes a value */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(prog, &d), 2;
    if (!v) return usage(prog, &d);
    if (!strcmp(a, "--epochs")) f->epochs = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--batch")) f->batch = strtoll(v, &end, 10);
    else if (!strcmp(a, "--lr")) f->lr = strtod(v, &end);
    else if (!strcmp(a, "--seed")) f->seed = strtoull(v, &end, 10);
    else if (!strcmp(a, "--threads")) f->threads = (int)strtol(v, &end, 10);
    else if (!strcmp(a, "--data")) f->data = v, end = (char *)v + strlen(v);
    else if (!strcmp(a, "--device")) f->device = v, end = (char *)v + strlen(v);
    else if (!strcmp(a, "--steps")) f->steps = strtoll(v, &end, 10);
    else if (!strcmp(a, "--loss-every")) f->loss_every = strtoll(v, &end, 10);
    else if (!strcmp(a, "--plugin")) {
      disp_plugin *p = NULL;
      if (disp_plugin_load(v, &p) != DISP_OK) {
        fprintf(stderr, "%s: %s\n", prog, disp_last_error());
        return 1;
      }
      end = (char *)v + strlen(v);
    } else return usage(prog, &d);
    if (!end || *end || f->epochs < 0 || f->batch <= 0 || !(f->lr > 0) || f->threads < 0 || f->steps < 0 ||
        f->loss_every < 0) {
      fprintf(stderr, "%s: bad value '%s' for %s\n", prog, v, a);
      return 1;
    }
  }
  return 0;
}

/* ---- the device ------------------------------------------------------------------ */

disp_status train_device(const train_flags *f, disp_device *out) { return example_find_device(f->device, out); }

static disp_status params_to_device(train_model *m, disp_device dev) {
  disp_status st = DISP_OK;
  for (size_t i = 0; i < m->nparams && st == DISP_OK && dev.type != DISP_BACKEND_CPU; i++) {
    st = example_to_device(&m->params[i], dev);
    if (st == DISP_OK) st = disp_tensor_set_requires_grad(m->params[i], 1);
  }
  return st;
}

/* ---- parameters ----------------------------------------------------------------- */

disp_status train_param(const int64_t *sizes, int ndim, int64_t fan_in, disp_tensor **out) {
  *out = NULL;
  if (ndim < 0 || ndim > DISP_DIMS_MAX) return disp_set_error(DISP_ERR_INVALID_ARG, "train_param: %d dimensions", ndim);
  double bound = fan_in > 0 ? 1.0 / sqrt((double)fan_in) : 0.0;
  disp_dims shape = {ndim, {0}};
  if (ndim) memcpy(shape.v, sizes, (size_t)ndim * sizeof *sizes);
  disp_scope s = disp_scope_begin();
  /* uniform in [-bound, bound): 2 * bound * U[0, 1) - bound, a leaf */
  *out = disp_keep(disp_requires_grad(disp_add_scalar(disp_mul_scalar(disp_rand(shape), 2 * bound), -bound)));
  disp_scope_end(&s);
  return *out ? DISP_OK : disp_last_status();
}

/* ---- one epoch ---------------------------------------------------------------------- */

typedef struct epoch_stats {
  double loss_sum;
  int64_t batches, images;
  double seconds;
} epoch_stats;

disp_status train_step(train_model *m, disp_optimizer *opt, disp_tensor *x, disp_tensor *y, double *loss) {
  /* count:step (scripts/count_lines.sh) */
  disp_scope s = disp_scope_begin();
  disp_tensor *l = disp_cross_entropy(m->forward(m->state, x), y);
  disp_zero_grad(opt), disp_backward(l), disp_step(opt); /* skipped after a failure (Note [Failed scopes]) */
  *loss = disp_item(l);
  return disp_scope_end(&s);
  /* count:end */
}

static void progress(int epoch, const train_flags *f, int64_t b, int64_t nb, const epoch_stats *s, double t0) {
  double dt = now_s() - t0;
  printf("\repoch %d/%d  batch %lld/%lld  loss %.4f  %.0f images/s   ", epoch, f->epochs, (long long)b,
         (long long)nb, s->loss_sum / (double)(s->batches ? s->batches : 1), dt > 0 ? (double)s->images / dt : 0.0);
  fflush(stdout);
}

static disp_status run_epoch(train_model *m, disp_optimizer *opt, const fmnist_set *train, int64_t *perm,
                             uint64_t *rng, int epoch, const train_flags *f, disp_device dev, epoch_stats *s) {
  int tty = isatty(STDOUT_FILENO) && !f->loss_every;
  int64_t nb = fmnist_batch_count(train, f->batch);
  if (f->steps && f->steps < nb) nb = f->steps;
  disp_status st = fmnist_shuffle(perm, train->count, rng);
  double t0 = now_s();
  memset(s, 0, sizeof *s);
  for (int64_t b = 0; st == DISP_OK && b < nb; b++) {
    disp_tensor *x = NULL, *y = NULL;
    double loss = 0;
    st = fmnist_batch(train, perm, f->batch, b, m->shape, &x, &y);
    if (st == DISP_OK) st = example_to_device(&x, dev);
    if (st == DISP_OK) st = example_to_device(&y, dev);
    if (st == DISP_OK) st = train_step(m, opt, x, y, &loss);
    if (st == DISP_OK) s->loss_sum += loss, s->batches++, s->images += disp_tensor_sizes(x)[0];
    if (st == DISP_OK && f->loss_every && (b + 1) % f->loss_every == 0)
      printf("epoch %d step %lld loss %.6f\n", epoch, (long long)(b + 1), loss);
    disp_tensor_release(x);
    disp_tensor_release(y);
    if (tty && (b % 20 == 0 || b + 1 == nb)) progress(epoch, f, b + 1, nb, s, t0);
  }
  s->seconds = now_s() - t0;
  if (tty) printf("\r%*s\r", 78, "");
  return st;
}

/* ---- evaluation ------------------------------------------------------------------------ */

/* Adds the number of x's images the model classifies as y says to *correct
 * (NaN after a failure: disp_item's value then; a count is never NaN). */
static disp_status correct_in(train_model *m, disp_tensor *x, disp_tensor *y, double *correct) {
  /* count:accuracy */
  DISP_NO_GRAD DISP_SCOPE *correct += disp_item(disp_sum(disp_eq(disp_argmax(m->forward(m->state, x), .dim = 1), y)));
  return isnan(*correct) ? disp_last_status() : DISP_OK;
  /* count:end */
}

static disp_status evaluate(train_model *m, const fmnist_set *test, disp_device dev, double *accuracy) {
  int64_t *order = malloc((size_t)test->count * sizeof *order), bs = 1000;
  double correct = 0;
  if (!order) return disp_set_error(DISP_ERR_NO_MEMORY, "evaluate: out of memory");
  for (int64_t i = 0; i < test->count; i++) order[i] = i;
  disp_status st = DISP_OK;
  for (int64_t b = 0; st == DISP_OK && b < fmnist_batch_count(test, bs); b++) {
    disp_tensor *x = NULL, *y = NULL;
    st = fmnist_batch(test, order, bs, b, m->shape, &x, &y);
    if (st == DISP_OK) st = example_to_device(&x, dev);
    if (st == DISP_OK) st = example_to_device(&y, dev);
    if (st == DISP_OK) st = correct_in(m, x, y, &correct);
    disp_tensor_release(x), disp_tensor_release(y);
  }
  free(order);
  *accuracy = test->count ? correct / (double)test->count : 0.0;
  return st;
}

/* ---- the whole run -------------------------------------------------------------------------- */

static int fail(const char *what, disp_status st) {
  fprintf(stderr, "%s: %s (%s)\n", what, disp_last_error(), disp_status_name(st));
  return 1;
}

static int load(const train_flags *f, fmnist_set *train, fmnist_set *test) {
  disp_status st = fmnist_load(f->data, 1, train);
  if (st == DISP_OK) st = fmnist_load(f->data, 0, test);
  if (st == DISP_OK) st = fmnist_normalize(train, FMNIST_MEAN, FMNIST_STD);
  if (st == DISP_OK) st = fmnist_normalize(test, FMNIST_MEAN, FMNIST_STD);
  if (st != DISP_OK) fprintf(stderr, "%s\n", disp_last_error());
  return st != DISP_OK;
}

int train_run(train_model *m, const train_flags *f) {
  fmnist_set train = {0}, test = {0};
  if (load(f, &train, &test)) return 1;
  if (f->threads > 0) disp_set_num_threads(f->threads);
  disp_adam_options o = disp_adam_options_default();
  o.lr = f->lr;
  disp_optimizer *opt = NULL;
  disp_device dev = disp_device_make(DISP_BACKEND_CPU, -1);
  disp_status st = train_device(f, &dev);
  if (st == DISP_OK) st = params_to_device(m, dev);
  if (st == DISP_OK) st = disp_optim_adam_new(m->params, m->nparams, &o, &opt);
  int64_t *perm = malloc((size_t)train.count * sizeof *perm);
  uint64_t rng = f->seed;
  int rc = st != DISP_OK ? fail("setup", st) : !perm ? fail("out of memory", DISP_ERR_NO_MEMORY) : 0;
  for (int64_t i = 0; perm && i < train.count; i++) perm[i] = i;
  char devname[64];
  disp_device_format(dev, devname, sizeof devname);
  printf("training on %lld images, %d epoch(s), batch %lld, Adam lr %g, %d thread(s), device %s\n",
         (long long)train.count, f->epochs, (long long)f->batch, f->lr, disp_get_num_threads(), devname);
  for (int e = 1; !rc && e <= f->epochs; e++) {
    epoch_stats s;
    st = run_epoch(m, opt, &train, perm, &rng, e, f, dev, &s);
    if (st != DISP_OK) rc = fail("training", st);
    else
      printf("epoch %d/%d: loss %.4f, %.1f s, %.0f images/s\n", e, f->epochs, s.loss_sum / (double)s.batches,
             s.seconds, (double)s.images / s.seconds);
  }
  double acc = 0;
  if (!rc && (st = evaluate(m, &test, dev, &acc)) != DISP_OK) rc = fail("evaluation", st);
  if (!rc) printf("test accuracy: %.4f\n", acc);
  free(perm);
  disp_optim_free(opt);
  fmnist_free(&train);
  fmnist_free(&test);
  return rc;
}
