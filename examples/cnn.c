/*
 * cnn.c - a small convolutional network trained on Fashion-MNIST in C.
 *
 * <DESC> Two conv(3x3, padding 1) + ReLU + max-pool(2) blocks (32 then 64
 * channels) and a classifier 3136-128-10, PyTorch's default initialisation,
 * cross-entropy, Adam; ends with the test accuracy. </DESC>
 *
 *   cnn [--epochs 3] [--batch 64] [--lr 1e-3] [--seed 0] [--data DIR] [--threads N]
 */
#include <stdio.h>

#include "models.h"
#include "train.h"

int main(int argc, char **argv) {
  train_flags f = {3, 64, 1e-3, 0, FMNIST_DEFAULT_DIR, 0, "cpu", 0, 0};
  int rc = train_parse_flags(argc, argv, "cnn", &f);
  if (rc) return rc == 2 ? 0 : rc;
  models_net m;
  disp_manual_seed(f.seed);
  if (models_cnn_init(&m) != DISP_OK) {
    fprintf(stderr, "cnn: %s\n", disp_last_error());
    return 1;
  }
  printf("CNN conv32-pool-conv64-pool-fc128-fc10 (ReLU), cross-entropy, Adam\n");
  train_model model = {&m, models_forward, m.params, m.nparams, FMNIST_SHAPE_IMAGE};
  rc = train_run(&model, &f);
  models_free(&m);
  return rc;
}
