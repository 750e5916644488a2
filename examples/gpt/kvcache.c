/*
 * kvcache.c - the GPT's cached forward of kvcache.h, in the concise API.
 * The layer code mirrors model.c's (the same operators in the same order
 * on the rows it computes), so the cached logits differ from gpt_forward's
 * only in how the products' sums associate.
 */
#include "kvcache.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

disp_status gpt_kv_cache_init(gpt_kv_cache *c, const gpt_model *m) {
  if (!c || !m) return disp_set_error(DISP_ERR_INVALID_ARG, "gpt_kv_cache_init: %s is NULL", c ? "model" : "cache");
  memset(c, 0, sizeof *c);
  const gpt_config *g = &m->cfg;
  size_t L = (size_t)g->layers;
  c->ids = calloc((size_t)g->context, sizeof *c->ids);
  c->k = calloc(L, sizeof *c->k), c->v = calloc(L, sizeof *c->v);
  if (!c->ids || !c->k || !c->v)
    return gpt_kv_cache_free(c), disp_set_error(DISP_ERR_NO_MEMORY, "gpt_kv_cache_init: out of memory");
  c->cfg = *g;
  c->keep = g->context - 1;
  disp_dims shape = DISP_SHAPE(1, g->heads, g->context, g->width / g->heads);
  for (size_t l = 0; l < L; l++) {
    DISP_SCOPE c->k[l] = disp_keep(disp_zeros(shape)), c->v[l] = disp_keep(disp_zeros(shape));
    if (!c->k[l] || !c->v[l]) {
      disp_status st = disp_last_status();
      gpt_kv_cache_free(c);
      return st;
    }
  }
  return DISP_OK;
}

void gpt_kv_cache_reset(gpt_kv_cache *c) {
  if (c) c->len = 0;
}

void gpt_kv_cache_free(gpt_kv_cache *c) {
  if (!c) return;
  for (int64_t l = 0; l < c->cfg.layers; l++) {
    if (c->k) disp_tensor_release(c->k[l]);
    if (c->v) disp_tensor_release(c->v[l]);
  }
  free(c->ids), free(c->k), free(c->v);
  memset(c, 0, sizeof *c);
}

/* cache rows at..at+T-1 = rows [1, heads, T, hs], in place. */
static disp_status store(disp_tensor *cache, int64_t at, int64_t T, disp_tensor *rows) {
  disp_tensor *dst = disp_narrow(cache, 2, at, T), *r = NULL;
  if (!dst || !rows) return disp_last_status();
  disp_status st = disp_aten_copy_(dst, rows, false, &r);
  disp_tensor_release(r);
  return st;
}

/* Attention of x [1, T, C] at positions at..at+T-1 over cache rows
 * 0..at+T-1 of layer l, after storing x's keys and values there. The rows
 * past the diagonal are masked as model.c does; one row (T = 1) needs no
 * mask. NULL with *st set when a store fails. */
static disp_tensor *attention(const gpt_model *m, gpt_kv_cache *c, int64_t l, disp_tensor *x, int64_t at,
                              disp_status *st) {
  const gpt_config *g = &m->cfg;
  disp_tensor *const *p = m->params + 2 + l * GPT_PER_LAYER;
  int64_t T = disp_tensor_sizes(x)[1], C = g->width, n = at + T;
  disp_tensor *qkv[3] = {NULL, NULL, NULL};
  disp_split(disp_linear(x, p[GPT_ATTN]), C, 2, qkv, 3);
  disp_tensor *q = gpt_split_heads(m, qkv[0], 1, T);
  *st = store(c->k[l], at, T, gpt_split_heads(m, qkv[1], 1, T));
  if (*st == DISP_OK) *st = store(c->v[l], at, T, gpt_split_heads(m, qkv[2], 1, T));
  if (*st != DISP_OK) return NULL;
  disp_tensor *k = disp_narrow(c->k[l], 2, 0, n), *v = disp_narrow(c->v[l], 2, 0, n);
  disp_tensor *att = disp_mul_scalar(disp_matmul(q, disp_transpose(k, -2, -1)), 1.0 / sqrt((double)(C / g->heads)));
  if (T > 1) att = disp_masked_fill(att, disp_narrow(disp_narrow(m->mask, 0, at, T), 1, 0, n), -INFINITY);
  att = disp_softmax(att, -1);
  disp_tensor *y = disp_reshape(disp_transpose(disp_matmul(att, v), 1, 2), DISP_DIMS(1, T, C));
  return disp_linear(y, p[GPT_ATTN_PROJ]);
}

/* Tokens ids[0..T) at positions at..at+T-1, the cache holding rows
 * 0..at-1: stores their keys and values and returns the last position's
 * logits [1, vocab]. NULL with the error set on failure. */
static disp_tensor *forward_rows(const gpt_model *m, gpt_kv_cache *c, const int64_t *ids, int64_t T, int64_t at) {
  disp_tensor *const *p = m->params;
  disp_tensor *tok = disp_embedding(p[0], disp_from(ids, 1, T));
  disp_tensor *x = disp_add(tok, disp_embedding(p[1], disp_narrow(m->pos, 0, at, T)));
  disp_status st = DISP_OK;
  for (int64_t l = 0; x && l < m->cfg.layers; l++) {
    disp_tensor *const *pl = p + 2 + l * GPT_PER_LAYER;
    disp_tensor *a = attention(m, c, l, gpt_layer_norm(x, pl[GPT_LN1]), at, &st);
    if (st != DISP_OK) return NULL;
    x = gpt_mlp(disp_add(x, a), pl);
  }
  x = disp_narrow(x, 1, T - 1, 1); /* only the last position's logits */
  return disp_reshape(disp_linear(gpt_layer_norm(x, p[m->nparams - 1]), p[0]), DISP_DIMS(1, m->cfg.vocab));
}

static int same_config(const gpt_config *a, const gpt_config *b) {
  return a->vocab == b->vocab && a->context == b->context && a->layers == b->layers && a->heads == b->heads &&
         a->width == b->width;
}

/* Checks the arguments; DISP_OK or the error set. */
static disp_status check(const gpt_model *m, const gpt_kv_cache *c, int64_t token) {
  const char *f = "gpt_forward_cached";
  if (!m || !c) return disp_set_error(DISP_ERR_INVALID_ARG, "%s: %s is NULL", f, m ? "cache" : "model");
  if (!c->k || !same_config(&c->cfg, &m->cfg))
    return disp_set_error(DISP_ERR_INVALID_ARG, "%s: the cache was not made for this model's configuration", f);
  if (c->keep < 0 || c->keep >= m->cfg.context)
    return disp_set_error(DISP_ERR_INVALID_ARG, "%s: the cache's keep %lld is outside [0, %lld)", f,
                          (long long)c->keep, (long long)m->cfg.context);
  if (token < 0 || token >= m->cfg.vocab)
    return disp_set_error(DISP_ERR_INVALID_ARG, "%s: token %lld is outside the vocabulary [0, %lld)", f,
                          (long long)token, (long long)m->cfg.vocab);
  return DISP_OK;
}

disp_tensor *gpt_forward_cached(const gpt_model *m, gpt_kv_cache *c, int64_t token) {
  if (check(m, c, token) != DISP_OK) return NULL;
  disp_grad_guard g = disp_no_grad_begin();
  disp_tensor *logits;
  if (c->len < c->cfg.context) { /* one more row */
    c->ids[c->len] = token;
    logits = forward_rows(m, c, &token, 1, c->len);
    c->len = logits ? c->len + 1 : 0;
  } else { /* full: every position would move; restart over the last keep */
    memmove(c->ids, c->ids + c->len - c->keep, (size_t)c->keep * sizeof *c->ids);
    c->ids[c->keep] = token;
    logits = forward_rows(m, c, c->ids, c->keep + 1, 0);
    c->len = logits ? c->keep + 1 : 0;
  }
  disp_no_grad_end(&g);
  return logits;
}
