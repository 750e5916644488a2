/*
 * mlp.c - a multilayer perceptron trained on Fashion-MNIST in C.
 *
 * <DESC> 784-256-128-10 with ReLU (torch.nn.Linear layers, PyTorch's default
 * initialisation), cross-entropy, Adam; shuffled mini-batches; prints a
 * progress line per epoch and ends with the test accuracy. </DESC>
 *
 *   mlp [--epochs 12] [--batch 64] [--lr 1e-3] [--seed 0] [--data DIR] [--threads N]
 */
#include <stdio.h>

#include "train.h"

enum { LAYERS = 3 };
static const int64_t widths[LAYERS + 1] = {FMNIST_PIXELS, 256, 128, FMNIST_CLASSES};

typedef struct mlp {
  disp_tensor *params[2 * LAYERS]; /* weight, bias per layer */
} mlp;

/* linear -> relu -> linear -> relu -> linear, as torch.nn.Sequential would. */
static disp_status mlp_forward(void *state, disp_tensor *x, disp_tensor **logits) {
  mlp *m = state;
  disp_tensor *h = disp_tensor_retain(x);
  disp_status st = DISP_OK;
  for (int l = 0; l < LAYERS && st == DISP_OK; l++) {
    disp_tensor *z = NULL;
    st = disp_aten_linear(h, m->params[2 * l], m->params[2 * l + 1], &z);
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

static disp_status mlp_init(mlp *m, uint64_t seed) {
  disp_manual_seed(seed);
  disp_status st = DISP_OK;
  for (int l = 0; l < LAYERS && st == DISP_OK; l++) {
    int64_t w[2] = {widths[l + 1], widths[l]};
    st = train_param(w, 2, widths[l], &m->params[2 * l]);
    if (st == DISP_OK) st = train_param(&w[0], 1, widths[l], &m->params[2 * l + 1]);
  }
  return st;
}

int main(int argc, char **argv) {
  train_flags f = {12, 64, 1e-3, 0, FMNIST_DEFAULT_DIR, 0, "cpu", 0, 0};
  int rc = train_parse_flags(argc, argv, "mlp", &f);
  if (rc) return rc == 2 ? 0 : rc;
  mlp m = {{0}};
  if (mlp_init(&m, f.seed) != DISP_OK) {
    fprintf(stderr, "mlp: %s\n", disp_last_error());
    return 1;
  }
  printf("MLP 784-256-128-10 (ReLU), cross-entropy, Adam\n");
  train_model model = {&m, mlp_forward, m.params, 2 * LAYERS, FMNIST_SHAPE_FLAT};
  rc = train_run(&model, &f);
  for (int i = 0; i < 2 * LAYERS; i++) disp_tensor_release(m.params[i]);
  return rc;
}
