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

/* The forward passes in the concise API (disp/easy.h): each call returns
 * its result, owned by the caller's scope. */

/* count:mlp_net count:cnn_net (scripts/count_lines.sh) */
/* linear, then relu -> linear for each further layer, over p's pairs. */
static disp_tensor *mlp(disp_tensor *h, disp_tensor *const *p, int layers) {
  for (int l = 0; l < layers; l++) h = disp_linear(l ? disp_relu(h) : h, p[2 * l], .bias = p[2 * l + 1]);
  return h;
}
/* count:end of mlp_net */

/* count:cnn_net */
/* two blocks of conv3x3 (padding 1) -> relu -> max_pool2d(2), then the MLP. */
static disp_tensor *cnn(disp_tensor *x, disp_tensor *const *p) {
  for (int i = 0; i < 4; i += 2)
    x = disp_max_pool2d(disp_relu(disp_conv2d(x, p[i], .bias = p[i + 1], .padding = DISP_DIMS(1, 1))), DISP_DIMS(2, 2));
  return mlp(disp_flatten(x, .start_dim = 1), p + 4, 2);
}
/* count:end */

disp_tensor *models_forward(void *net, disp_tensor *x) {
  const models_net *n = net;
  return n->kind == MODELS_CNN ? cnn(x, n->params) : mlp(x, n->params, n->layers);
}
