/*
 * model.c - the GPT of model.h in the concise API.
 */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* A leaf of `shape`: normal(0, std), or ones when std is 0. */
static disp_tensor *param(disp_dims shape, double std) {
  return disp_keep(disp_requires_grad(std > 0 ? disp_mul_scalar(disp_randn(shape), std) : disp_ones(shape)));
}

static disp_status add_param(gpt_model *m, const char *name, disp_dims shape, double std) {
  disp_scope s = disp_scope_begin();
  disp_tensor *p = param(shape, std);
  disp_status st = disp_scope_end(&s);
  if (st != DISP_OK) return st;
  snprintf(m->names[m->nparams], sizeof m->names[0], "%s", name);
  m->params[m->nparams++] = p;
  return DISP_OK;
}

static disp_status make_constants(gpt_model *m) {
  int64_t T = m->cfg.context;
  bool *above = malloc((size_t)(T * T) * sizeof *above);
  int64_t *pos = malloc((size_t)T * sizeof *pos);
  disp_status st = above && pos ? DISP_OK : disp_set_error(DISP_ERR_NO_MEMORY, "gpt_init: out of memory");
  for (int64_t i = 0; st == DISP_OK && i < T; i++) {
    pos[i] = i;
    for (int64_t j = 0; j < T; j++) above[i * T + j] = j > i;
  }
  if (st == DISP_OK) {
    m->mask = disp_from(above, T, T);
    m->pos = disp_from(pos, T);
    if (!m->mask || !m->pos) st = disp_last_status();
  }
  free(above), free(pos);
  return st;
}

disp_status gpt_init(gpt_model *m, const gpt_config *cfg) {
  memset(m, 0, sizeof *m);
  if (cfg->width % cfg->heads || cfg->layers < 1 || cfg->context < 1 || cfg->vocab < 1)
    return disp_set_error(DISP_ERR_INVALID_ARG, "gpt_init: width %lld is not a multiple of %lld heads",
                          (long long)cfg->width, (long long)cfg->heads);
  m->cfg = *cfg;
  size_t n = 3 + (size_t)cfg->layers * GPT_PER_LAYER;
  m->params = calloc(n, sizeof *m->params);
  m->names = calloc(n, sizeof *m->names);
  if (!m->params || !m->names) return gpt_free(m), disp_set_error(DISP_ERR_NO_MEMORY, "gpt_init: out of memory");
  int64_t C = cfg->width;
  double proj_std = 0.02 / sqrt(2.0 * (double)cfg->layers);
  disp_status st = add_param(m, "transformer.wte.weight", DISP_SHAPE(cfg->vocab, C), 0.02);
  if (st == DISP_OK) st = add_param(m, "transformer.wpe.weight", DISP_SHAPE(cfg->context, C), 0.02);
  for (int64_t l = 0; st == DISP_OK && l < cfg->layers; l++) {
    static const char *const parts[GPT_PER_LAYER] = {"ln_1.weight",        "attn.c_attn.weight", "attn.c_proj.weight",
                                                 "ln_2.weight",        "mlp.c_fc.weight",    "mlp.c_proj.weight"};
    disp_dims shapes[GPT_PER_LAYER] = {DISP_SHAPE(C), DISP_SHAPE(3 * C, C), DISP_SHAPE(C, C),
                                   DISP_SHAPE(C), DISP_SHAPE(4 * C, C), DISP_SHAPE(C, 4 * C)};
    const double stds[GPT_PER_LAYER] = {0, 0.02, proj_std, 0, 0.02, proj_std};
    for (int k = 0; st == DISP_OK && k < GPT_PER_LAYER; k++) {
      char name[64];
      snprintf(name, sizeof name, "transformer.h.%lld.%s", (long long)l, parts[k]);
      st = add_param(m, name, shapes[k], stds[k]);
    }
  }
  if (st == DISP_OK) st = add_param(m, "transformer.ln_f.weight", DISP_SHAPE(C), 0);
  if (st == DISP_OK) st = make_constants(m);
  if (st != DISP_OK) gpt_free(m);
  return st;
}

void gpt_free(gpt_model *m) {
  for (size_t i = 0; m->params && i < m->nparams; i++) disp_tensor_release(m->params[i]);
  free(m->params), free(m->names);
  disp_tensor_release(m->mask), disp_tensor_release(m->pos);
  memset(m, 0, sizeof *m);
}

int gpt_is_matrix(const gpt_model *m, size_t i) { return i < m->nparams && disp_tensor_ndim(m->params[i]) >= 2; }

disp_tensor *gpt_layer_norm(disp_tensor *x, disp_tensor *w) {
  return disp_layer_norm(x, DISP_DIMS(disp_tensor_sizes(w)[0]), .weight = w);
}

/* [B, T, C] -> [B, heads, T, C / heads] */
disp_tensor *gpt_split_heads(const gpt_model *m, disp_tensor *x, int64_t B, int64_t T) {
  int64_t H = m->cfg.heads;
  return disp_transpose(disp_view(x, DISP_DIMS(B, T, H, m->cfg.width / H)), 1, 2);
}

/* Causal self-attention over x [B, T, C] (nanoGPT's manual path). */
static disp_tensor *attention(const gpt_model *m, disp_tensor *x, disp_tensor *const *p) {
  int64_t B = disp_tensor_sizes(x)[0], T = disp_tensor_sizes(x)[1], C = m->cfg.width;
  disp_tensor *qkv[3] = {NULL, NULL, NULL}; /* nanoGPT's c_attn(x).split(n_embd, dim=2) */
  disp_split(disp_linear(x, p[GPT_ATTN]), C, 2, qkv, 3);
  disp_tensor *q = gpt_split_heads(m, qkv[0], B, T), *k = gpt_split_heads(m, qkv[1], B, T);
  disp_tensor *v = gpt_split_heads(m, qkv[2], B, T);
  disp_tensor *att = disp_mul_scalar(disp_matmul(q, disp_transpose(k, -2, -1)), 1.0 / sqrt((double)(C / m->cfg.heads)));
  disp_tensor *mask = disp_narrow(disp_narrow(m->mask, 0, 0, T), 1, 0, T);
  att = disp_softmax(disp_masked_fill(att, mask, -INFINITY), -1);
  disp_tensor *y = disp_reshape(disp_transpose(disp_matmul(att, v), 1, 2), DISP_DIMS(B, T, C));
  return disp_linear(y, p[GPT_ATTN_PROJ]);
}

disp_tensor *gpt_mlp(disp_tensor *x, disp_tensor *const *p) {
  return disp_add(x, disp_linear(disp_gelu(disp_linear(gpt_layer_norm(x, p[GPT_LN2]), p[GPT_FC])), p[GPT_MLP_PROJ]));
}

static disp_tensor *block(const gpt_model *m, disp_tensor *x, disp_tensor *const *p) {
  return gpt_mlp(disp_add(x, attention(m, gpt_layer_norm(x, p[GPT_LN1]), p)), p);
}

disp_tensor *gpt_forward(const gpt_model *m, disp_tensor *idx) {
  /* idx not [B, T], or T past the context: narrow fails, as a concise call
   * (the chain's first error, Note [Concise errors]) */
  int64_t T = idx && disp_tensor_ndim(idx) == 2 ? disp_tensor_sizes(idx)[1] : -1;
  disp_tensor *const *p = m->params;
  disp_tensor *x = disp_add(disp_embedding(p[0], idx), disp_embedding(p[1], disp_narrow(m->pos, 0, 0, T)));
  for (int64_t l = 0; l < m->cfg.layers; l++) x = block(m, x, p + 2 + l * GPT_PER_LAYER);
  return disp_linear(gpt_layer_norm(x, p[m->nparams - 1]), p[0]); /* tied to wte */
}

disp_tensor *gpt_loss(const gpt_model *m, disp_tensor *idx, disp_tensor *targets) {
  disp_tensor *logits = gpt_forward(m, idx);
  return disp_cross_entropy(disp_reshape(logits, DISP_DIMS(-1, m->cfg.vocab)), disp_reshape(targets, DISP_DIMS(-1)));
}
