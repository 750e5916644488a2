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

#include "train.h"

enum { C1 = 32, C2 = 64, HIDDEN = 128, FLAT = C2 * 7 * 7, NPARAMS = 8 };

typedef struct cnn {
  disp_tensor *params[NPARAMS]; /* conv1 w b, conv2 w b, fc1 w b, fc2 w b */
} cnn;

static const int64_t one2[2] = {1, 1}, two2[2] = {2, 2}, zero2[2] = {0, 0};

/* conv -> relu -> max_pool2d(2); takes its input reference. */
static disp_status block(disp_tensor *x, disp_tensor *w, disp_tensor *b, disp_tensor **out) {
  disp_int_list ones = {one2, 2}, twos = {two2, 2}, zeros = {zero2, 2};
  disp_tensor *c = NULL, *r = NULL;
  disp_status st = disp_aten_conv2d(x, w, b, ones, ones, ones, 1, &c);
  if (st == DISP_OK) st = disp_aten_relu(c, &r);
  if (st == DISP_OK) st = disp_aten_max_pool2d(r, twos, twos, zeros, ones, false, out);
  disp_tensor_release(x), disp_tensor_release(c), disp_tensor_release(r);
  return st;
}

static disp_status cnn_forward(void *state, disp_tensor *x, disp_tensor **logits) {
  cnn *m = state;
  disp_tensor *h1 = NULL, *h2 = NULL, *flat = NULL, *z = NULL, *r = NULL;
  disp_status st = block(disp_tensor_retain(x), m->params[0], m->params[1], &h1);
  if (st == DISP_OK) st = block(disp_tensor_retain(h1), m->params[2], m->params[3], &h2);
  if (st == DISP_OK) st = disp_aten_flatten_using_ints(h2, 1, -1, &flat);
  if (st == DISP_OK) st = disp_aten_linear(flat, m->params[4], m->params[5], &z);
  if (st == DISP_OK) st = disp_aten_relu(z, &r);
  if (st == DISP_OK) st = disp_aten_linear(r, m->params[6], m->params[7], logits);
  disp_tensor_release(h1), disp_tensor_release(h2), disp_tensor_release(flat);
  disp_tensor_release(z), disp_tensor_release(r);
  return st;
}

static disp_status cnn_init(cnn *m, uint64_t seed) {
  const int64_t w1[4] = {C1, 1, 3, 3}, w2[4] = {C2, C1, 3, 3}, f1[2] = {HIDDEN, FLAT}, f2[2] = {FMNIST_CLASSES, HIDDEN};
  disp_manual_seed(seed);
  disp_status st = train_param(w1, 4, 1 * 9, &m->params[0]);
  if (st == DISP_OK) st = train_param(&w1[0], 1, 1 * 9, &m->params[1]);
  if (st == DISP_OK) st = train_param(w2, 4, C1 * 9, &m->params[2]);
  if (st == DISP_OK) st = train_param(&w2[0], 1, C1 * 9, &m->params[3]);
  if (st == DISP_OK) st = train_param(f1, 2, FLAT, &m->params[4]);
  if (st == DISP_OK) st = train_param(&f1[0], 1, FLAT, &m->params[5]);
  if (st == DISP_OK) st = train_param(f2, 2, HIDDEN, &m->params[6]);
  if (st == DISP_OK) st = train_param(&f2[0], 1, HIDDEN, &m->params[7]);
  return st;
}

int main(int argc, char **argv) {
  train_flags f = {3, 64, 1e-3, 0, FMNIST_DEFAULT_DIR, 0, "cpu", 0, 0};
  int rc = train_parse_flags(argc, argv, "cnn", &f);
  if (rc) return rc == 2 ? 0 : rc;
  cnn m = {{0}};
  if (cnn_init(&m, f.seed) != DISP_OK) {
    fprintf(stderr, "cnn: %s\n", disp_last_error());
    return 1;
  }
  printf("CNN conv32-pool-conv64-pool-fc128-fc10 (ReLU), cross-entropy, Adam\n");
  train_model model = {&m, cnn_forward, m.params, NPARAMS, FMNIST_SHAPE_IMAGE};
  rc = train_run(&model, &f);
  for (int i = 0; i < NPARAMS; i++) disp_tensor_release(m.params[i]);
  return rc;
}
