/*
 * models.c - the example networks (models.h).
 */
#include "models.h"

#include <string.h>

#include "train.h" /* train_param */

void models_free(models_net *n) {
  for (size_t i = 0; i < n->nparams; i++) disp_tensor_release(n->params[i]);
  memset(n, 0, sizeof *n);
}

/* A layer's weight (wsizes) and bias (wsizes[0]) into n, as torch.nn does. */
static disp_status add_layer(models_net *n, const int64_t *wsizes, int ndim, int64_t fan_in) {
  disp_status st = train_param(wsizes, ndim, fan_in, &n->params[n->nparams]);
  if (st != DISP_OK) return st;
  n->nparams++;
  st = train_param(wsizes, 1, fan_in, &n->params[n->nparams]);
  if (st == DISP_OK) n->nparams++;
  return st;
}

disp_status models_mlp_init(models_net *n, const int64_t *widths, int layers) {
  memset(n, 0, sizeof *n);
  if (layers < 1 || layers > MODELS_MAX_LAYERS)
    return disp_set_error(DISP_ERR_INVALID_ARG, "models_mlp_init: %d layers (1 to %d)", layers, MODELS_MAX_LAYERS);
  n->kind = MODELS_MLP, n->layers = layers;
  disp_status st = DISP_OK;
  for (int l = 0; l < layers && st == DISP_OK; l++) {
    int64_t w[2] = {widths[l + 1], widths[l]};
    st = add_layer(n, w, 2, widths[l]);
  }
  if (st != DISP_OK) models_free(n);
  return st;
}

disp_status models_cnn_init(models_net *n) {
  const int64_t w1[4] = {32, 1, 3, 3}, w2[4] = {64, 32, 3, 3}, f1[2] = {128, MODELS_CNN_FLAT}, f2[2] = {10, 128};
  memset(n, 0, sizeof *n);
  n->kind = MODELS_CNN, n->layers = 4;
  disp_status st = add_layer(n, w1, 4, 1 * 9);
  if (st == DISP_OK) st = add_layer(n, w2, 4, 32 * 9);
  if (st == DISP_OK) st = add_layer(n, f1, 2, MODELS_CNN_FLAT);
  if (st == DISP_OK) st = add_layer(n, f2, 2, 128);
  if (st != DISP_OK) models_free(n);
  return st;
}

disp_status models_adopt(models_net *n, models_kind kind, disp_tensor **params, size_t nparams) {
  memset(n, 0, sizeof *n);
  int ok = kind == MODELS_CNN ? nparams == MODELS_CNN_PARAMS
                              : nparams >= 2 && nparams <= 2 * MODELS_MAX_LAYERS && nparams % 2 == 0;
  if (!ok) return disp_set_error(DISP_ERR_INVALID_ARG, "models_adopt: %zu parameters do not make that net", nparams);
  n->kind = kind, n->layers = (int)nparams / 2, n->nparams = nparams;
  memcpy(n->params, params, nparams * sizeof *params);
  return DISP_OK;
}

/* linear -> relu -> ... -> linear over layers [0, layers) of p; takes x's
 * reference. */
static disp_status mlp_layers(disp_tensor *x, disp_tensor *const *p, int layers, disp_tensor **logits) {
  disp_tensor *h = x;
  disp_status st = DISP_OK;
  for (int l = 0; l < layers && st == DISP_OK; l++) {
    disp_tensor *z = NULL;
    st = disp_aten_linear(h, p[2 * l], p[2 * l + 1], &z);
    disp_tensor_release(h);
    h = z;
    if (st == DISP_OK && l + 1 < layers) {
      st = disp_aten_relu(z, &h);
      disp_tensor_release(z);
    }
  }
  *logits = st == DISP_OK ? h : NULL;
  if (st != DISP_OK) disp_tensor_release(h);
  return st;
}

static const int64_t one2[2] = {1, 1}, two2[2] = {2, 2}, zero2[2] = {0, 0};

/* conv3x3 (padding 1) -> relu -> max_pool2d(2); takes x's reference. */
static disp_status conv_block(disp_tensor *x, disp_tensor *w, disp_tensor *b, disp_tensor **out) {
  disp_int_list ones = {one2, 2}, twos = {two2, 2}, zeros = {zero2, 2};
  disp_tensor *c = NULL, *r = NULL;
  disp_status st = disp_aten_conv2d(x, w, b, ones, ones, ones, 1, &c);
  if (st == DISP_OK) st = disp_aten_relu(c, &r);
  if (st == DISP_OK) st = disp_aten_max_pool2d(r, twos, twos, zeros, ones, false, out);
  disp_tensor_release(x), disp_tensor_release(c), disp_tensor_release(r);
  return st;
}

static disp_status cnn_forward(disp_tensor *const *p, disp_tensor *x, disp_tensor **logits) {
  disp_tensor *h1 = NULL, *h2 = NULL, *flat = NULL;
  disp_status st = conv_block(disp_tensor_retain(x), p[0], p[1], &h1);
  if (st == DISP_OK) st = conv_block(h1, p[2], p[3], &h2);
  if (st == DISP_OK) st = disp_aten_flatten_using_ints(h2, 1, -1, &flat);
  disp_tensor_release(h2);
  return st == DISP_OK ? mlp_layers(flat, p + 4, 2, logits) : st;
}

disp_status models_forward(void *net, disp_tensor *x, disp_tensor **logits) {
  const models_net *n = net;
  *logits = NULL;
  if (n->kind == MODELS_CNN) return cnn_forward(n->params, x, logits);
  return mlp_layers(disp_tensor_retain(x), n->params, n->layers, logits);
}
