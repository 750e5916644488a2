/*
 * checkpoint.h - the GPT example's checkpoints, as safetensors files
 * (disp/safetensors.h): every parameter under its nanoGPT name (model.h),
 * the AdamW state as "optim.NAME.exp_avg" and "optim.NAME.exp_avg_sq", and
 * in __metadata__ "step" (steps taken), "optim_step" (AdamW's step count),
 * "batch_rng" (the batch generator's state) and "format" ("disp-gpt-1").
 * A model trained elsewhere (the libtorch twin's export, a PyTorch file
 * converted by from_pytorch.py) loads with only the parameters: no step
 * metadata, so step 0 and fresh optimizers. Files hold CPU tensors; a model
 * on another device (gpt --device) saves copies and loads into its own.
 */
#ifndef GPT_CHECKPOINT_H
#define GPT_CHECKPOINT_H

#include <stdint.h>

#include "model.h"

/* The two optimizers of a run: [0] the matrices (weight decay), [1] the
 * rest, each over its parameters in model order. */
typedef struct gpt_train_state {
  disp_optimizer *opt[2];
  long step;          /* steps taken */
  uint64_t batch_rng; /* corpus_batch's state */
} gpt_train_state;

/* checkpoint_save - m and s to path. Errors: the library's (the message
 * names the file). */
disp_status checkpoint_save(const char *path, const gpt_model *m, const gpt_train_state *s);

/* checkpoint_load - the parameters from path into m (copied: shapes must
 * match), and, when the file has them and s is not NULL, the optimizer
 * state, step and batch generator into s. Errors: the library's; a missing
 * or misshapen parameter is DISP_ERR_INVALID_ARG naming it. */
disp_status checkpoint_load(const char *path, gpt_model *m, gpt_train_state *s);

#endif
