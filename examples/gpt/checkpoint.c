/*
 * checkpoint.c - saving and resuming the GPT example (checkpoint.h).
 */
#include "checkpoint.h"

#include "../device.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <disp/safetensors.h>

static const char *const kStates[2] = {"exp_avg", "exp_avg_sq"};

/* Parameter i's optimizer and its index there (checkpoint.h's grouping). */
static size_t group_index(const gpt_model *m, size_t i, int *group) {
  size_t k = 0;
  *group = !gpt_is_matrix(m, i);
  for (size_t j = 0; j < i; j++) k += (!gpt_is_matrix(m, j)) == *group;
  return k;
}

/* t on `dev` as a new reference (device.h's move: t itself, retained, when
 * it is there already). Files hold CPU tensors; a model on a device (gpt
 * --device) saves copies and loads through them. */
static disp_status on_device(disp_tensor *t, disp_device dev, disp_tensor **out) {
  *out = disp_tensor_retain(t);
  disp_status st = example_to_device(out, dev);
  if (st != DISP_OK) disp_tensor_release(*out), *out = NULL;
  return st;
}

/* set[name] = t, copied to the CPU first when it is elsewhere. */
static disp_status add_tensor(disp_safetensors *set, const char *name, disp_tensor *t) {
  disp_tensor *c = NULL;
  disp_status st = on_device(t, (disp_device){DISP_BACKEND_CPU, -1}, &c);
  if (st == DISP_OK) st = disp_safetensors_add(set, name, c);
  disp_tensor_release(c);
  return st;
}

static disp_status add_meta(disp_safetensors *set, const char *key, uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%" PRIu64, v);
  return disp_safetensors_set_metadata(set, key, buf);
}

disp_status checkpoint_save(const char *path, const gpt_model *m, const gpt_train_state *s) {
  disp_safetensors *set = NULL;
  disp_status st = disp_safetensors_new(&set);
  int64_t optim_step = 0;
  for (size_t i = 0; st == DISP_OK && i < m->nparams; i++) {
    st = add_tensor(set, m->names[i], m->params[i]);
    int g;
    size_t k = group_index(m, i, &g);
    for (int j = 0; st == DISP_OK && j < 2; j++) {
      disp_tensor *t = NULL;
      char name[96];
      st = disp_optim_state(s->opt[g], k, kStates[j], &t, &optim_step);
      snprintf(name, sizeof name, "optim.%s.%s", m->names[i], kStates[j]);
      if (st == DISP_OK && t) st = add_tensor(set, name, t);
    }
  }
  if (st == DISP_OK) st = disp_safetensors_set_metadata(set, "format", "disp-gpt-1");
  if (st == DISP_OK) st = add_meta(set, "step", (uint64_t)s->step);
  if (st == DISP_OK) st = add_meta(set, "optim_step", (uint64_t)optim_step);
  if (st == DISP_OK) st = add_meta(set, "batch_rng", s->batch_rng);
  if (st == DISP_OK) st = disp_safetensors_save(set, path);
  disp_safetensors_free(set);
  return st;
}

/* p = t, in place, outside autograd. */
static disp_status copy_into(disp_tensor *p, disp_tensor *t, const char *name) {
  int same = t && disp_tensor_ndim(t) == disp_tensor_ndim(p) && disp_tensor_dtype(t) == disp_tensor_dtype(p);
  for (int64_t d = 0; same && d < disp_tensor_ndim(p); d++) same = disp_tensor_sizes(t)[d] == disp_tensor_sizes(p)[d];
  if (!same) return disp_set_error(DISP_ERR_INVALID_ARG, "checkpoint: '%s' is missing or not the model's shape", name);
  disp_tensor *r = NULL;
  disp_tls_state g = disp_grad_mode_push(0);
  disp_status st = disp_aten_copy_(p, t, false, &r);
  disp_tls_restore(g);
  disp_tensor_release(r);
  return st;
}

static disp_status read_meta(const disp_safetensors *set, const char *key, uint64_t *v) {
  const char *s = disp_safetensors_metadata_get(set, key);
  char *end = NULL;
  if (s) *v = strtoull(s, &end, 10);
  if (!s || !*s || *end) return disp_set_error(DISP_ERR_INVALID_ARG, "checkpoint: metadata '%s' missing or bad", key);
  return DISP_OK;
}

static disp_status load_optim(const disp_safetensors *set, const gpt_model *m, gpt_train_state *s) {
  uint64_t step = 0, optim_step = 0, rng = 0;
  disp_status st = read_meta(set, "step", &step);
  if (st == DISP_OK) st = read_meta(set, "optim_step", &optim_step);
  if (st == DISP_OK) st = read_meta(set, "batch_rng", &rng);
  for (size_t i = 0; st == DISP_OK && optim_step && i < m->nparams; i++) {
    int g;
    size_t k = group_index(m, i, &g);
    for (int j = 0; st == DISP_OK && j < 2; j++) {
      char name[96];
      snprintf(name, sizeof name, "optim.%s.%s", m->names[i], kStates[j]);
      disp_tensor *t = disp_safetensors_get(set, name), *d = NULL;
      st = t ? on_device(t, disp_tensor_device(m->params[i]), &d)
             : disp_set_error(DISP_ERR_INVALID_ARG, "checkpoint: '%s' is missing", name);
      if (st == DISP_OK) st = disp_optim_set_state(s->opt[g], k, kStates[j], d, (int64_t)optim_step);
      disp_tensor_release(d);
    }
  }
  if (st == DISP_OK) s->step = (long)step, s->batch_rng = rng;
  return st;
}

disp_status checkpoint_load(const char *path, gpt_model *m, gpt_train_state *s) {
  disp_safetensors *set = NULL;
  disp_status st = disp_safetensors_load(path, &set);
  for (size_t i = 0; st == DISP_OK && i < m->nparams; i++)
    st = copy_into(m->params[i], disp_safetensors_get(set, m->names[i]), m->names[i]);
  if (st == DISP_OK && s && disp_safetensors_metadata_get(set, "step")) st = load_optim(set, m, s);
  disp_safetensors_free(set);
  return st;
}
