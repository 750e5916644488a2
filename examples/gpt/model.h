/*
 * model.h - a character-level GPT (nanoGPT's model, bias-free as its
 * defaults) written in the concise API (disp/easy.h).
 *
 * Parameters, in this order (nanoGPT's names; the output layer is tied to
 * wte, as nanoGPT ties lm_head.weight):
 *   0 transformer.wte.weight [vocab, width]   1 transformer.wpe.weight [context, width]
 *   per layer l (6 each, from 2 + 6 l): ln_1.weight [width],
 *     attn.c_attn.weight [3 width, width], attn.c_proj.weight [width, width],
 *     ln_2.weight [width], mlp.c_fc.weight [4 width, width],
 *     mlp.c_proj.weight [width, 4 width]   (prefix transformer.h.L.)
 *   last: transformer.ln_f.weight [width]
 * Initialised as nanoGPT does: normal(0, 0.02) for embeddings and linear
 * weights, 0.02 / sqrt(2 layers) for the two c_proj weights, layer norm
 * weights 1; drawn from the library's seeded generator in parameter order.
 *
 * Example code, not libdispatch's API.
 */
#ifndef GPT_MODEL_H
#define GPT_MODEL_H

#include <stddef.h>

#include <disp.h>

/* A layer's parameters, in order: layer l's are params[2 + GPT_PER_LAYER * l + k]. */
enum { GPT_LN1, GPT_ATTN, GPT_ATTN_PROJ, GPT_LN2, GPT_FC, GPT_MLP_PROJ, GPT_PER_LAYER };

typedef struct gpt_config {
  int64_t vocab, context, layers, heads, width;
} gpt_config;

typedef struct gpt_model {
  gpt_config cfg;
  disp_tensor **params; /* leaves that require grad, owned */
  size_t nparams;
  char (*names)[64];    /* params' names */
  disp_tensor *mask;    /* [context, context] bool, true above the diagonal */
  disp_tensor *pos;     /* [context] int64 0..context-1 */
} gpt_model;

/* gpt_init - a model of cfg, initialised as above. Errors: the library's
 * (DISP_ERR_INVALID_ARG for a width the heads do not divide). */
disp_status gpt_init(gpt_model *m, const gpt_config *cfg);

/* gpt_free - releases everything; *m may be half made or zeroed. */
void gpt_free(gpt_model *m);

/* gpt_is_matrix - whether parameter i takes weight decay (nanoGPT: every
 * parameter of two or more dimensions). */
int gpt_is_matrix(const gpt_model *m, size_t i);

/*
 * gpt_forward - the logits [B, T, vocab] for tokens idx [B, T] (int64,
 * T <= context), a concise result (owned by the current scope; NULL with
 * the error set: another shape, or T past the context, fails in narrow).
 */
disp_tensor *gpt_forward(const gpt_model *m, disp_tensor *idx);

/* gpt_loss - cross-entropy of the logits for idx against targets [B, T]
 * (mean over every position), a concise result. */
disp_tensor *gpt_loss(const gpt_model *m, disp_tensor *idx, disp_tensor *targets);

/* The pieces gpt_forward is made of, for kvcache.c's cached forward (the
 * same operators on the rows it computes); concise results, NULL in a chain
 * as any concise call:
 *   gpt_layer_norm  - layer norm over the last dim with weight w, no bias;
 *   gpt_split_heads - [B, T, C] -> [B, heads, T, C / heads] (a view);
 *   gpt_mlp         - x + c_proj(gelu(c_fc(ln_2(x)))) for the layer whose
 *                     parameters start at p. */
disp_tensor *gpt_layer_norm(disp_tensor *x, disp_tensor *w);
disp_tensor *gpt_split_heads(const gpt_model *m, disp_tensor *x, int64_t B, int64_t T);
disp_tensor *gpt_mlp(disp_tensor *x, disp_tensor *const *p);

#endif
