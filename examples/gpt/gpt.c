/*
 * gpt - a character-level GPT trained on Debian's fortunes, in C, with
 * nanoGPT's CPU configuration (4 layers, 4 heads, width 128, context 64,
 * batch 12, no dropout; AdamW lr 1e-3 with 100 warm-up steps and cosine
 * decay to 1e-4 over the run, betas 0.9/0.99, weight decay 0.1 on matrices
 * only, gradients clipped to norm 1.0; the output layer tied to the
 * embedding). Prints train/val loss every --eval-every steps and ends with
 * "val loss: X.XXXX".
 *
 *   gpt [--steps N] [--eval-every N] [--eval-iters N] [--seed N] [--threads N]
 *       [--data DIR] [--sample N] [--temperature T] [--top-k K] [--kv-keep K]
 *       [--loss-every N] [--stop N] [--save FILE] [--resume FILE] [--device cpu|NAME]
 *
 * --sample N then prints N characters generated as nanoGPT's generate does
 * (logits / --temperature, default 0.8; only the --top-k largest kept,
 * default 200, 0 keeps all; softmax; multinomial with the library's seeded
 * generator), one token at a time through a KV cache (kvcache.h), and a line
 * "sampled N tokens in X s (Y tokens/s)". Past the context the cache
 * restarts over its last --kv-keep tokens: 63 by default, nanoGPT's window
 * exactly (each token past the context costs a window's forward); fewer,
 * e.g. 32, restart less often (faster; each token then sees 33 to 64).
 *
 * --loss-every N prints "step S loss L" (%.9g) every N steps and, after the
 * last, "val loss exact: V" (%.9g) beside the four-digit line, for
 * bench/gpt_twin.sh's comparisons with the libtorch twin.
 * --stop N ends the run after step N (the schedule still spans --steps);
 * --save FILE then writes a checkpoint (checkpoint.h) that --resume FILE
 * continues from, taking the steps the uninterrupted run would take.
 * --device NAME trains there (a plugin's device: "openreg" loads the
 * build's libopenreg.so): the model is made on the CPU, so its initial
 * weights are the CPU run's, then moved; batches follow it. Sampling runs
 * on the CPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <disp.h>

#include "../device.h"
#include "checkpoint.h"
#include "corpus.h"
#include "kvcache.h"
#include "model.h"

typedef struct flags {
  long steps, eval_every, eval_iters, sample, threads, loss_every, stop;
  unsigned long long seed;
  const char *data, *save, *resume, *device;
  double temperature; /* --sample's */
  long top_k, kv_keep; /* kv_keep -1: the context - 1 */
} flags;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_flags(int argc, char **argv, flags *f) {
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    if (!v) break;
    const char **text = !strcmp(a, "--data")   ? &f->data
                        : !strcmp(a, "--save")   ? &f->save
                        : !strcmp(a, "--resume") ? &f->resume
                        : !strcmp(a, "--device") ? &f->device
                                                 : NULL; /* the flags that take text */
    if (text) {
      *text = v;
      if (i + 2 >= argc) return 0;
      continue;
    }
    if (!strcmp(a, "--temperature")) {
      f->temperature = strtod(v, &end);
      if (*end || !(f->temperature > 0 && f->temperature < INFINITY)) break;
      if (i + 2 >= argc) return 0;
      continue;
    }
    long n = strtol(v, &end, 10);
    if (*end || n < 0) break;
    if (!strcmp(a, "--steps")) f->steps = n;
    else if (!strcmp(a, "--eval-every")) f->eval_every = n;
    else if (!strcmp(a, "--eval-iters")) f->eval_iters = n;
    else if (!strcmp(a, "--sample")) f->sample = n;
    else if (!strcmp(a, "--top-k")) f->top_k = n;
    else if (!strcmp(a, "--kv-keep")) f->kv_keep = n;
    else if (!strcmp(a, "--threads")) f->threads = n;
    else if (!strcmp(a, "--seed")) f->seed = (unsigned long long)n;
    else if (!strcmp(a, "--loss-every")) f->loss_every = n;
    else if (!strcmp(a, "--stop")) f->stop = n;
    else break;
    if (i + 2 >= argc) return 0;
  }
  if (argc == 1) return 0;
  fprintf(stderr, "usage: gpt [--steps N] [--eval-every N] [--eval-iters N] [--seed N] [--threads N] "
                  "[--data DIR] [--sample N] [--temperature T] [--top-k K] [--kv-keep K] [--loss-every N] [--stop N] "
                  "[--save FILE] [--resume FILE] [--device cpu|NAME]\n");
  return 1;
}

/* The model's parameters and constants moved to dev (before the optimizers
 * take the parameters). */
static disp_status model_to(gpt_model *m, disp_device dev) {
  disp_status st = example_to_device(&m->mask, dev);
  if (st == DISP_OK) st = example_to_device(&m->pos, dev);
  for (size_t i = 0; st == DISP_OK && i < m->nparams; i++) st = example_to_device(&m->params[i], dev);
  return st;
}

/* A batch of a split (corpus_batch's, made on the CPU) on the model's device. */
static disp_status device_batch(const gpt_model *m, const corpus *c, int val, uint64_t *state, disp_tensor **x,
                                disp_tensor **y) {
  disp_device dev = disp_tensor_device(m->params[0]);
  disp_status st = corpus_batch(c, val, 12, m->cfg.context, state, x, y);
  if (st == DISP_OK) st = example_to_device(x, dev);
  if (st == DISP_OK) st = example_to_device(y, dev);
  if (st != DISP_OK) disp_tensor_release(*x), disp_tensor_release(*y), *x = *y = NULL;
  return st;
}

/* nanoGPT's get_lr: linear warm-up, then cosine decay to min_lr. */
static double lr_at(long it, long steps) {
  const double lr = 1e-3, min_lr = 1e-4;
  const long warmup = 100;
  if (it < warmup) return lr * (double)it / (double)warmup;
  if (it > steps) return min_lr;
  double ratio = (double)(it - warmup) / (double)(steps - warmup);
  return min_lr + 0.5 * (1.0 + cos(M_PI * ratio)) * (lr - min_lr);
}

/* torch.nn.utils.clip_grad_norm_(params, max_norm) of 1.13, op for op: the
 * 2-norm of each gradient (linalg_vector_norm), the 2-norm of those norms
 * stacked, coef = max_norm / (norm + 1e-6) clamped to at most 1, and every
 * gradient multiplied in place by that 0-dim tensor (no branch on it, as
 * 1.13 has none). 1.13's max_norm / tensor is reciprocal(tensor) * max_norm;
 * here 1 / tensor (div by a float32 one, the same correctly rounded value)
 * times max_norm. No grad, as 1.13's. *total: the norm, as the C++ API
 * returns it. */
static disp_status clip_grad_norm(const gpt_model *m, double max_norm, double *total) {
  disp_tensor **norms = malloc(m->nparams * sizeof *norms);
  if (!norms) return disp_set_error(DISP_ERR_NO_MEMORY, "gpt: out of memory");
  disp_grad_guard ng = disp_no_grad_begin();
  disp_scope s = disp_scope_begin();
  size_t n = 0;
  for (size_t i = 0; i < m->nparams; i++) {
    disp_tensor *g = disp_tensor_grad(m->params[i]);
    if (g) norms[n++] = disp_vector_norm(g, .ord = 2);
  }
  disp_tensor_list all = {norms, n};
  disp_tensor *norm = n ? disp_vector_norm(disp_stack(all), .ord = 2) : NULL;
  disp_tensor *one = norm ? disp_scalar(1.0, .device = disp_tensor_device(norm)) : NULL;
  disp_tensor *coef = disp_clamp(disp_mul_scalar(disp_div(one, disp_add_scalar(norm, 1e-6)), max_norm), .max = 1.0);
  *total = n ? disp_item(norm) : 0.0;
  disp_status st = DISP_OK;
  for (size_t i = 0; n && st == DISP_OK && i < m->nparams; i++) {
    disp_tensor *g = disp_tensor_grad(m->params[i]), *r = NULL;
    if (g) st = coef ? disp_aten_mul__Tensor(g, coef, &r) : disp_last_status();
    disp_tensor_release(r);
  }
  disp_status end = disp_scope_end(&s);
  disp_no_grad_end(&ng);
  free(norms);
  return st != DISP_OK ? st : end;
}

/* The mean loss of `iters` batches of a split, drawn from a fresh stream
 * of `seed` (the same batches at every evaluation). */
static double estimate_loss(const gpt_model *m, const corpus *c, int val, long iters, uint64_t seed) {
  double sum = 0;
  uint64_t state = seed;
  DISP_NO_GRAD for (long i = 0; i < iters; i++) DISP_SCOPE {
      disp_tensor *x = NULL, *y = NULL;
      if (device_batch(m, c, val, &state, &x, &y) != DISP_OK) sum = NAN;
      else sum += disp_item(gpt_loss(m, x, y));
      disp_tensor_release(x), disp_tensor_release(y);
    }
  return sum / (double)iters;
}

static disp_status make_optimizers(const gpt_model *m, disp_optimizer *opt[2]) {
  disp_tensor **groups[2];
  size_t n[2] = {0, 0};
  groups[0] = malloc(m->nparams * sizeof **groups), groups[1] = malloc(m->nparams * sizeof **groups);
  disp_status st = groups[0] && groups[1] ? DISP_OK : disp_set_error(DISP_ERR_NO_MEMORY, "gpt: out of memory");
  for (size_t i = 0; st == DISP_OK && i < m->nparams; i++) {
    int g = !gpt_is_matrix(m, i);
    groups[g][n[g]++] = m->params[i];
  }
  for (int g = 0; st == DISP_OK && g < 2; g++) {
    disp_adam_options o = disp_adamw_options_default();
    o.lr = 1e-3, o.beta2 = 0.99, o.weight_decay = g == 0 ? 0.1 : 0.0;
    st = disp_optim_adamw_new(groups[g], n[g], &o, &opt[g]);
  }
  free(groups[0]), free(groups[1]);
  return st;
}

/* One step: loss, gradients, clipping, both optimizers; *loss its value. */
static disp_status train_step(const gpt_model *m, disp_optimizer *opt[2], disp_tensor *x, disp_tensor *y,
                              double *loss) {
  disp_scope s = disp_scope_begin();
  disp_tensor *l = gpt_loss(m, x, y);
  disp_zero_grad(opt[0]), disp_zero_grad(opt[1]), disp_backward(l);
  *loss = disp_item(l);
  disp_status st = disp_scope_end(&s);
  double norm = 0;
  if (st == DISP_OK) st = clip_grad_norm(m, 1.0, &norm);
  if (st == DISP_OK) st = disp_optim_step(opt[0]);
  if (st == DISP_OK) st = disp_optim_step(opt[1]);
  return st;
}

/* The token after `prev` (appended to kv's window), as nanoGPT's generate
 * draws it: logits / temperature, those below the k-th largest set to -inf
 * (top-k; 0 keeps all), softmax, one multinomial draw. */
static disp_status next_token(const gpt_model *m, gpt_kv_cache *kv, int64_t prev, const flags *f, int64_t *out) {
  disp_scope s = disp_scope_begin();
  disp_tensor *logits = gpt_forward_cached(m, kv, prev); /* its own errors are not a chain's (kvcache.h) */
  disp_status st = logits ? DISP_OK : disp_last_status();
  if (logits) logits = disp_div(logits, disp_scalar(f->temperature));
  int64_t k = f->top_k < m->cfg.vocab ? f->top_k : m->cfg.vocab;
  if (logits && k > 0) { /* logits[logits < v[:, [-1]]] = -inf */
    disp_tensor *v = NULL, *i = NULL;
    st = disp_aten_topk(logits, k, -1, true, true, &v, &i);
    if (st == DISP_OK) logits = disp_masked_fill(logits, disp_lt(logits, disp_narrow(v, 1, k - 1, 1)), -INFINITY);
    disp_tensor_release(v), disp_tensor_release(i);
  }
  double next = st == DISP_OK ? disp_item(disp_multinomial(disp_softmax(logits, -1), 1)) : NAN;
  disp_status end = disp_scope_end(&s);
  if (st == DISP_OK) st = end;
  if (st == DISP_OK) *out = (int64_t)next;
  return st;
}

/* f->sample characters from the model, starting after a newline, and how
 * fast they came. */
static disp_status sample(const gpt_model *m, const corpus *c, const flags *f) {
  long n = f->sample;
  int64_t *ids = calloc((size_t)(n + 1), sizeof *ids);
  char *text = malloc((size_t)n + 1);
  gpt_kv_cache kv;
  memset(&kv, 0, sizeof kv); /* freed below whatever happens */
  disp_status st = ids && text ? gpt_kv_cache_init(&kv, m) : disp_set_error(DISP_ERR_NO_MEMORY, "gpt: out of memory");
  if (st == DISP_OK && f->kv_keep >= 0) kv.keep = f->kv_keep; /* checked by gpt_forward_cached */
  if (st == DISP_OK) ids[0] = corpus_encode(c, '\n');
  double t0 = now_s();
  for (long t = 1; st == DISP_OK && t <= n; t++) st = next_token(m, &kv, ids[t - 1], f, &ids[t]);
  double secs = now_s() - t0;
  if (st == DISP_OK) {
    corpus_decode(c, ids + 1, (size_t)n, text);
    text[n] = 0;
    printf("%s\nsampled %ld tokens in %.3f s (%.1f tokens/s)\n", text, n, secs, (double)n / secs);
  }
  gpt_kv_cache_free(&kv);
  free(ids), free(text);
  return st;
}

static int fail(const char *what) {
  fprintf(stderr, "gpt: %s: %s\n", what, disp_last_error());
  return 1;
}

int main(int argc, char **argv) {
  flags f = {2000, 250, 20, 0, 0, 0, -1, 1337, NULL, NULL, NULL, "cpu", 0.8, 200, -1}; /* stop -1: none */
  if (parse_flags(argc, argv, &f)) return 1;
  if (f.threads) disp_set_num_threads((int)f.threads);
  disp_device dev, cpu = {DISP_BACKEND_CPU, -1};
  if (example_find_device(f.device, &dev) != DISP_OK) return fail("--device");
  corpus c;
  if (corpus_load(f.data, &c) != DISP_OK) return fail("reading the corpus");
  printf("corpus: %zu files, %zu quotes, vocabulary %d, %zu training and %zu validation tokens\n", c.files,
         c.quotes, c.vocab, c.ntrain, c.nval);
  disp_manual_seed(f.seed);
  gpt_config cfg = {c.vocab, 64, 4, 4, 128};
  gpt_model m;
  gpt_train_state s = {{NULL, NULL}, 0, f.seed};
  int rc = 0;
  if (gpt_init(&m, &cfg) != DISP_OK) return corpus_free(&c), fail("making the model");
  if (model_to(&m, dev) != DISP_OK) rc = fail("moving the model to the device");
  if (!rc && dev.type != DISP_BACKEND_CPU) { /* where the parameters are, not where they were asked to be */
    char where[64];
    disp_device_format(disp_tensor_device(m.params[0]), where, sizeof where);
    printf("model on %s\n", where);
  }
  if (!rc && make_optimizers(&m, s.opt) != DISP_OK) rc = fail("making the optimizers");
  if (!rc && f.resume && checkpoint_load(f.resume, &m, &s) != DISP_OK) rc = fail("resuming");
  long end = f.stop >= 0 && f.stop < f.steps ? f.stop : f.steps;
  double t0 = now_s(), loss = 0;
  for (long it = s.step; !rc && it <= end; it++) {
    if (f.eval_every && (it % f.eval_every == 0 || it == f.steps))
      printf("step %ld: train loss %.4f, val loss %.4f (%.1f s)\n", it, estimate_loss(&m, &c, 0, f.eval_iters, f.seed + 1),
             estimate_loss(&m, &c, 1, f.eval_iters, f.seed + 2), now_s() - t0);
    if (it == end) break;
    disp_tensor *x = NULL, *y = NULL;
    disp_status st = device_batch(&m, &c, 0, &s.batch_rng, &x, &y);
    if (st == DISP_OK) st = disp_optim_set_lr(s.opt[0], lr_at(it, f.steps));
    if (st == DISP_OK) st = disp_optim_set_lr(s.opt[1], lr_at(it, f.steps));
    if (st == DISP_OK) st = train_step(&m, s.opt, x, y, &loss);
    disp_tensor_release(x), disp_tensor_release(y);
    if (st != DISP_OK) rc = fail("training");
    else s.step = it + 1;
    if (!rc && f.loss_every && s.step % f.loss_every == 0) printf("step %ld loss %.9g\n", s.step, loss);
  }
  if (!rc) printf("trained to step %ld in %.1f s\n", s.step, now_s() - t0);
  if (!rc && end == f.steps) {
    double val = estimate_loss(&m, &c, 1, f.eval_iters, f.seed + 2);
    printf("val loss: %.4f\n", val);
    if (f.loss_every) printf("val loss exact: %.9g\n", val); /* for bench/gpt_twin.sh's 1e-5 comparisons */
  }
  if (!rc && f.save && checkpoint_save(f.save, &m, &s) != DISP_OK) rc = fail("saving");
  if (!rc && f.sample && model_to(&m, cpu) != DISP_OK) rc = fail("moving the model to the CPU");
  if (!rc && f.sample && sample(&m, &c, &f) != DISP_OK) rc = fail("sampling");
  disp_optim_free(s.opt[0]), disp_optim_free(s.opt[1]);
  gpt_free(&m);
  corpus_free(&c);
  disp_shutdown();
  return rc;
}
