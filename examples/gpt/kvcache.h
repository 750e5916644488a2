/*
 * kvcache.h - sampling the GPT of model.h one token at a time with a KV
 * cache: per layer, the keys and values of the positions so far, so a new
 * token computes only its own row (q, k, v, the MLP) and attends over the
 * cache (causal by construction: no mask).
 *
 * The logits gpt_forward_cached returns for a token are gpt_forward's
 * last-position logits over the tokens the cache holds (its window), up to
 * float association. Positions are absolute within the window (learned
 * wpe), so when the window is full (`context` tokens) a new token cannot
 * just shift it: every position would move. The cache then restarts over
 * its last `keep` tokens and the new one, recomputing their keys and values
 * in one batched pass (rows 0..keep), and grows one row a token again.
 *   keep = context - 1 (the default) is the uncached path's semantics,
 *   nanoGPT's generate cropping the window to the last `context` tokens;
 *   but then every token past the context costs a window's forward, as
 *   the uncached path does: only the first `context` tokens are cheap.
 *   A smaller keep restarts every context - keep tokens (context / 2: one
 *   half-window pass per context / 2 tokens), each token then conditioned
 *   on between keep + 1 and context tokens: faster, not nanoGPT's numbers.
 *
 * Example code, not libdispatch's API.
 */
#ifndef GPT_KVCACHE_H
#define GPT_KVCACHE_H

#include "model.h"

typedef struct gpt_kv_cache {
  gpt_config cfg;      /* the model's, to refuse another model */
  int64_t len;         /* positions cached: 0..cfg.context */
  int64_t keep;        /* tokens a restart keeps, 0..context-1 (init: context-1) */
  int64_t *ids;        /* [cfg.context] the tokens of rows 0..len-1 */
  disp_tensor **k, **v; /* per layer [1, heads, context, width / heads], owned */
} gpt_kv_cache;

/* gpt_kv_cache_init - an empty cache for m's configuration (zeros, on the
 * CPU), keep = context - 1 (the caller may lower it). Errors: DISP_ERR_INVALID_ARG (NULL), DISP_ERR_NO_MEMORY; on error
 * *c is left zeroed (gpt_kv_cache_free is safe). */
disp_status gpt_kv_cache_init(gpt_kv_cache *c, const gpt_model *m);

/* gpt_kv_cache_reset - forgets every position (a new sample). */
void gpt_kv_cache_reset(gpt_kv_cache *c);

/* gpt_kv_cache_free - releases everything; *c may be zeroed or half made. */
void gpt_kv_cache_free(gpt_kv_cache *c);

/*
 * gpt_forward_cached - appends `token` to the cached sequence and returns
 * the logits [1, vocab] (float32) for the next token, as above. Runs with
 * grad mode off. A concise result (owned by the current scope, with its
 * intermediates); NULL with the error set: NULL model or cache, a cache of
 * another configuration, keep outside [0, context), a token outside
 * [0, vocab) (DISP_ERR_INVALID_ARG, the cache unchanged), or a failure of the library (the cache is then
 * emptied: the next token starts a new window). Its argument errors are
 * set by disp_set_error, not by a concise call: check the result before
 * passing it on, or the next concise call replaces the message with
 * "ARG is NULL" (easy.h, Note [Concise errors]).
 * Thread safety: one thread per cache at a time; the model is only read.
 */
disp_tensor *gpt_forward_cached(const gpt_model *m, gpt_kv_cache *c, int64_t token);

#endif
