/*
 * test_gpt_kvcache.c - the GPT example's KV cache (examples/gpt/kvcache.h):
 * on a small random model, the cached logits of every position of a
 * sequence longer than the context are gpt_forward's last-position logits
 * over the last `context` tokens; bad input is an error, the cache kept.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvcache.h"
#include "model.h"
#include "test.h"

static const gpt_config small = {13, 8, 2, 2, 16}; /* vocab, context, layers, heads, width */
enum { N = 21 };                                    /* tokens: past the context twice */

/* gpt_init's, then every parameter redrawn from normal(0, 1): logits of
 * order one, so a wrong window shows far above the tolerance. */
static disp_status make_model(gpt_model *m) {
  disp_manual_seed(20);
  disp_status st = gpt_init(m, &small);
  for (size_t i = 0; st == DISP_OK && i < m->nparams; i++) {
    disp_scope s = disp_scope_begin();
    disp_grad_guard g = disp_no_grad_begin();
    const int64_t *sz = disp_tensor_sizes(m->params[i]);
    disp_dims shape = {disp_tensor_ndim(m->params[i]), {sz[0], disp_tensor_ndim(m->params[i]) > 1 ? sz[1] : 0}};
    disp_tensor *r = NULL, *src = disp_randn(shape);
    st = src ? disp_aten_copy_(m->params[i], src, false, &r) : disp_last_status();
    disp_tensor_release(r);
    disp_no_grad_end(&g);
    disp_status end = disp_scope_end(&s);
    if (st == DISP_OK) st = end;
  }
  return st;
}

static void tokens(int64_t *ids) {
  for (int i = 0; i < N; i++) ids[i] = (i * 7 + i * i) % small.vocab;
}

/* gpt_forward's logits for the position after ids[from..to] (inclusive),
 * copied to out[vocab]. */
static disp_status uncached(const gpt_model *m, const int64_t *ids, int from, int to, float *out) {
  disp_scope s = disp_scope_begin();
  disp_tensor *l = NULL;
  DISP_NO_GRAD l = disp_select(gpt_forward(m, disp_from(ids + from, 1, to - from + 1)), 1, -1);
  disp_tensor *c = disp_reshape(l, DISP_DIMS(-1));
  if (c) memcpy(out, disp_tensor_data_ptr(disp_clone(c)), (size_t)small.vocab * sizeof *out);
  return disp_scope_end(&s);
}

/* The largest |a - b| over a row, relative to the largest |b|. */
static double rel_diff(const float *a, const float *b) {
  double d = 0, scale = 0;
  for (int v = 0; v < small.vocab; v++) {
    d = fmax(d, fabs((double)a[v] - (double)b[v]));
    scale = fmax(scale, fabs((double)b[v]));
  }
  return d / scale;
}

/* The cached logits after `token` ([1, vocab]), into out[vocab]. */
static disp_status cached(const gpt_model *m, gpt_kv_cache *c, int64_t token, float *out) {
  disp_scope s = disp_scope_begin();
  disp_tensor *l = gpt_forward_cached(m, c, token);
  int shaped = l && disp_tensor_ndim(l) == 2 && disp_tensor_sizes(l)[0] == 1 && disp_tensor_sizes(l)[1] == small.vocab;
  if (shaped) memcpy(out, disp_tensor_data_ptr(disp_clone(l)), (size_t)small.vocab * sizeof *out);
  disp_status st = disp_scope_end(&s);
  if (l && !shaped) st = disp_set_error(DISP_ERR_INVALID_ARG, "test: the cached logits are not [1, vocab]");
  return st;
}

/* N tokens through a cache restarting over `keep` tokens: each position's
 * logits are gpt_forward's over the window the cache holds, which is
 * ids[t - len + 1 .. t], len growing to the context and falling to keep + 1
 * at each restart. 0 when they all match. */
static int windows_match(int64_t keep) {
  gpt_model m;
  gpt_kv_cache c;
  int64_t ids[N], len = 0;
  float want[64], got[64], other[64];
  tokens(ids);
  ASSERT_OK(make_model(&m));
  ASSERT_OK(gpt_kv_cache_init(&c, &m));
  if (keep >= 0) c.keep = keep;
  for (int t = 0; t < N; t++) {
    len = len < small.context ? len + 1 : c.keep + 1;
    int from = t + 1 - (int)len;
    ASSERT_OK(cached(&m, &c, ids[t], got));
    ASSERT_EQ_INT(c.len, len);
    ASSERT_OK(uncached(&m, ids, from, t, want));
    if (rel_diff(got, want) > 1e-5) TEST_FAIL_("position %d: relative difference %g", t, rel_diff(got, want));
    /* the test can tell a wrong window: one token shorter differs */
    if (len > 1) {
      ASSERT_OK(uncached(&m, ids, from + 1, t, other));
      ASSERT_TRUE(rel_diff(other, want) > 1e-3);
    }
  }
  /* a reset starts a new window */
  gpt_kv_cache_reset(&c);
  ASSERT_OK(cached(&m, &c, ids[5], got));
  ASSERT_OK(uncached(&m, ids, 5, 5, want));
  ASSERT_TRUE(rel_diff(got, want) <= 1e-5);
  gpt_kv_cache_free(&c);
  gpt_free(&m);
  return 0;
}

/* The default keep (context - 1): the uncached path's cropped window. */
TEST(cached_logits_are_the_cropped_windows) { return windows_match(-1); }

/* Restarting over fewer tokens: the windows the cache holds. */
TEST(restarts_keep_their_windows) {
  for (int64_t keep = 0; keep < small.context - 1; keep += 3)
    if (windows_match(keep)) TEST_FAIL_("keep %lld", (long long)keep);
  return 0;
}

TEST(bad_input_is_an_error_and_keeps_the_cache) {
  gpt_model m, other;
  gpt_kv_cache c;
  int64_t ids[N];
  float want[64], got[64];
  tokens(ids);
  ASSERT_OK(make_model(&m));
  ASSERT_STATUS(gpt_kv_cache_init(NULL, &m), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "gpt_kv_cache_init: cache is NULL");
  ASSERT_OK(gpt_kv_cache_init(&c, &m));
  for (int t = 0; t < 3; t++) ASSERT_OK(cached(&m, &c, ids[t], got));
  ASSERT_TRUE(gpt_forward_cached(&m, NULL, 1) == NULL);
  ASSERT_EQ_INT(disp_last_status(), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "gpt_forward_cached: cache is NULL");
  ASSERT_TRUE(gpt_forward_cached(NULL, &c, 1) == NULL);
  ASSERT_CONTAINS(disp_last_error(), "gpt_forward_cached: model is NULL");
  const int64_t bad[] = {-1, small.vocab, INT64_MAX};
  for (size_t i = 0; i < 3; i++) {
    ASSERT_TRUE(gpt_forward_cached(&m, &c, bad[i]) == NULL);
    ASSERT_EQ_INT(disp_last_status(), DISP_ERR_INVALID_ARG);
    ASSERT_CONTAINS(disp_last_error(), "outside the vocabulary [0, 13)");
  }
  gpt_config wider = small;
  wider.width = 32;
  ASSERT_OK(gpt_init(&other, &wider));
  ASSERT_TRUE(gpt_forward_cached(&other, &c, 1) == NULL);
  ASSERT_CONTAINS(disp_last_error(), "not made for this model's configuration");
  gpt_free(&other);
  c.keep = small.context;
  ASSERT_TRUE(gpt_forward_cached(&m, &c, 1) == NULL);
  ASSERT_CONTAINS(disp_last_error(), "the cache's keep 8 is outside [0, 8)");
  c.keep = -1;
  ASSERT_TRUE(gpt_forward_cached(&m, &c, 1) == NULL);
  c.keep = small.context - 1;
  gpt_kv_cache empty;
  memset(&empty, 0, sizeof empty);
  ASSERT_TRUE(gpt_forward_cached(&m, &empty, 1) == NULL);
  ASSERT_CONTAINS(disp_last_error(), "not made for this model's configuration");
  /* the cache is as it was: the next token continues the window */
  ASSERT_EQ_INT(c.len, 3);
  ASSERT_OK(cached(&m, &c, ids[3], got));
  ASSERT_OK(uncached(&m, ids, 0, 3, want));
  ASSERT_TRUE(rel_diff(got, want) <= 1e-5);
  gpt_kv_cache_free(&c);
  gpt_kv_cache_free(&c); /* twice: zeroed */
  gpt_free(&m);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(cached_logits_are_the_cropped_windows),
    TEST_ENTRY(restarts_keep_their_windows),
    TEST_ENTRY(bad_input_is_an_error_and_keeps_the_cache),
    TEST_END};
TEST_MAIN()
