/*
 * models.h - the example networks, written once for the training examples
 * (mlp.c, cnn.c) and the benchmarks that train them (bench/train_step,
 * bench/train_twin):
 *   an MLP of any widths: linear -> relu -> ... -> linear, as
 *     torch.nn.Sequential(Linear, ReLU, ..., Linear) computes it;
 *   the CNN: conv3x3(1->32, padding 1) -> relu -> max_pool2d(2) ->
 *     conv3x3(32->64, padding 1) -> relu -> max_pool2d(2) -> flatten ->
 *     linear(3136->128) -> relu -> linear(128->10).
 * A models_net owns its parameters (weight, bias per layer, in layer
 * order). Single-threaded use, as any one training loop.
 */
#ifndef MODELS_H
#define MODELS_H

#include <stddef.h>
#include <stdint.h>

#include <disp.h>

enum {
  MODELS_MAX_LAYERS = 8,
  MODELS_CNN_PARAMS = 8, /* conv1 w b, conv2 w b, fc1 w b, fc2 w b */
  MODELS_CNN_FLAT = 64 * 7 * 7
};

typedef enum models_kind { MODELS_MLP, MODELS_CNN } models_kind;

typedef struct models_net {
  models_kind kind;
  int layers; /* MLP: linear layers; CNN: 4 (two convs, two linears) */
  disp_tensor *params[2 * MODELS_MAX_LAYERS];
  size_t nparams;
} models_net;

/*
 * models_mlp_init - an MLP with widths[0] inputs, widths[layers] outputs and
 * widths[1..layers-1] hidden units (1 <= layers <= MODELS_MAX_LAYERS),
 * initialised as torch.nn.Linear does (train.h's train_param: uniform in
 * +-1/sqrt(fan_in), from the library's seeded generator; call
 * disp_manual_seed first for a given run). On failure *n holds nothing.
 */
disp_status models_mlp_init(models_net *n, const int64_t *widths, int layers);

/* models_cnn_init - the CNN above, initialised as torch.nn.Conv2d/Linear do. */
disp_status models_cnn_init(models_net *n);

/*
 * models_adopt - a net of `kind` over parameters the caller made (e.g.
 * other random numbers); takes the references in params[0..nparams). For
 * an MLP, nparams = 2 * layers; for the CNN, MODELS_CNN_PARAMS.
 */
disp_status models_adopt(models_net *n, models_kind kind, disp_tensor **params, size_t nparams);

/*
 * models_forward - the logits of net (a models_net *) for the batch x:
 * [B, widths[0]] for an MLP, [B, 1, 28, 28] for the CNN. A concise result
 * (disp/easy.h): owned by the current scope, or by the caller outside any;
 * NULL with the error set. Matches train.h's train_forward_fn.
 */
disp_tensor *models_forward(void *net, disp_tensor *x);

/* models_free - releases the parameters; *n may be zeroed or half made. */
void models_free(models_net *n);

#endif
