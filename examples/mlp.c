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

#include "models.h"
#include "train.h"

enum { LAYERS = 3 };
static const int64_t widths[LAYERS + 1] = {FMNIST_PIXELS, 256, 128, FMNIST_CLASSES};

int main(int argc, char **argv) {
  train_flags f = {12, 64, 1e-3, 0, FMNIST_DEFAULT_DIR, 0, "cpu", 0, 0};
  int rc = train_parse_flags(argc, argv, "mlp", &f);
  if (rc) return rc == 2 ? 0 : rc;
  models_net m;
  disp_manual_seed(f.seed);
  if (models_mlp_init(&m, widths, LAYERS) != DISP_OK) {
    fprintf(stderr, "mlp: %s\n", disp_last_error());
    return 1;
  }
  printf("MLP 784-256-128-10 (ReLU), cross-entropy, Adam\n");
  train_model model = {&m, models_forward, m.params, m.nparams, FMNIST_SHAPE_FLAT};
  rc = train_run(&model, &f);
  models_free(&m);
  return rc;
}
