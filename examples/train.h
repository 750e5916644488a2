/*
 * train.h - what the training examples (mlp.c, cnn.c) share: flags,
 * PyTorch's default parameter initialisation, the epoch loop with its
 * progress line, and the test-set evaluation. A model is a forward function
 * over its parameters; the loop does cross-entropy, backward and an Adam
 * step per shuffled mini-batch.
 */
#ifndef TRAIN_H
#define TRAIN_H

#include <stdint.h>

#include <disp.h>

#include "fmnist.h"

/* Command-line settings (--epochs --batch --lr --seed --data --threads --device
 * --steps --loss-every). */
typedef struct train_flags {
  int epochs;
  int64_t batch;
  double lr;
  uint64_t seed;
  const char *data;
  int threads; /* 0: the library's default */
  const char *device; /* "cpu", or a plugin's device ("openreg"): --device */
  int64_t steps;      /* at most this many steps an epoch (0: all): --steps */
  int64_t loss_every; /* print "step S loss L" every this many steps (0: never): --loss-every */
} train_flags;

/* Parses argv over the defaults in *f; prints usage and returns 1 on a bad
 * flag, 2 after --help. */
int train_parse_flags(int argc, char **argv, const char *prog, train_flags *f);

/* A model: logits for a batch of inputs, as a concise result (disp/easy.h:
 * owned by the current scope; NULL with the error set). */
typedef disp_tensor *(*train_forward_fn)(void *model, disp_tensor *x);

/* A model's parameters are made on the CPU (the same values whatever the
 * device) and moved by train_run to the device the flags name. */
typedef struct train_model {
  void *state;
  train_forward_fn forward;
  disp_tensor **params; /* leaves that require grad, owned by the model */
  size_t nparams;
  fmnist_shape shape;   /* the input layout forward expects */
} train_model;

/*
 * train_param - a new parameter as torch.nn.Linear / Conv2d initialise
 * theirs: uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)] (kaiming_uniform with
 * a = sqrt(5) gives exactly that bound for weights; biases use it too),
 * drawn from the library's seeded generator. Requires grad.
 */
disp_status train_param(const int64_t *sizes, int ndim, int64_t fan_in, disp_tensor **out);

/* One training step on a batch: forward, cross-entropy (mean), zero_grad,
 * backward, optimizer step; *loss gets the batch's loss. The parameters
 * move only when every part succeeded. */
disp_status train_step(train_model *m, disp_optimizer *opt, disp_tensor *x, disp_tensor *y, double *loss);

/*
 * train_device - the device f names. A name no loaded plugin has registered
 * yet ("openreg") loads lib<name>.so from the build's lib/ directory next to
 * this program's bin/ (DISP_PLUGINS or disp_plugin_load work too).
 */
disp_status train_device(const train_flags *f, disp_device *out);

/* Trains m on the training set per f, printing progress; then prints the
 * test accuracy as the last line ("test accuracy: 0.XXXX"). */
int train_run(train_model *m, const train_flags *f);

#endif
