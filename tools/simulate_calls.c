/*
 * simulate_calls.c - `disp simulate --calls`: each operator of a script is
 * called once, unboxed, in the ten scenarios of the conformance README
 * (section calls), and what ran is printed in that section's format.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simulate.h"

int disp_tool_simulate_calls(const sim_script *s, FILE *out);

typedef enum { CPU_DENSE, META, SPARSE_CPU, QUANTIZED_CPU, PRIVATEUSE1 } tensor_kind;

typedef struct scenario {
  const char *name;
  tensor_kind kind;
  int requires_grad;
  int call_in_inference;   /* called under InferenceMode */
  int made_in_inference;   /* an inference tensor */
} scenario;

static const scenario scenarios[] = {
    {"cpu", CPU_DENSE, 0, 0, 0},
    {"cpu_requires_grad", CPU_DENSE, 1, 0, 0},
    {"cpu_in_InferenceMode", CPU_DENSE, 0, 1, 0},
    {"cpu_inference_tensor", CPU_DENSE, 0, 0, 1},
    {"meta", META, 0, 0, 0},
    {"sparse_cpu", SPARSE_CPU, 0, 0, 0},
    {"quantized_cpu", QUANTIZED_CPU, 0, 0, 0},
    {"privateuse1", PRIVATEUSE1, 0, 0, 0},
    {"privateuse1_requires_grad", PRIVATEUSE1, 1, 0, 0},
    {"privateuse1_in_InferenceMode", PRIVATEUSE1, 0, 1, 0},
};

static void release_handle(void *h) { (void)h; }

/* A fresh tensor made the way a program would make it: the key set comes
 * from the tensor library's defaults, never written by hand here. */
static disp_status make_tensor(const scenario *sc, disp_tensor **out) {
  int64_t sizes[1] = {2};
  disp_tls_state saved = disp_tls_inference_mode_push(sc->made_in_inference);
  disp_status st;
  switch (sc->kind) {
    case META:
      st = disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_META, -1), out);
      break;
    case SPARSE_CPU:
      st = disp_tensor_new_opaque(sizes, 1, DISP_DTYPE_FLOAT32, DISP_LAYOUT_SPARSE_COO,
                                  disp_device_make(DISP_BACKEND_CPU, -1), &st, release_handle, out);
      break;
    case QUANTIZED_CPU:
      st = disp_tensor_empty(sizes, 1, DISP_DTYPE_QUINT8, disp_device_make(DISP_BACKEND_CPU, -1), out);
      break;
    case PRIVATEUSE1:
      st = disp_tensor_new_opaque(sizes, 1, DISP_DTYPE_FLOAT32, DISP_LAYOUT_STRIDED,
                                  disp_device_make(DISP_BACKEND_PRIVATEUSE1, 0), &st, release_handle, out);
      break;
    default:
      st = disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), out);
      break;
  }
  disp_tls_restore(saved);
  if (st == DISP_OK && sc->requires_grad) st = disp_tensor_set_requires_grad(*out, 1);
  return st;
}

static void first_sentence(const char *msg, FILE *out) {
  /* The expected files keep the first sentence; print the whole first line. */
  const char *nl = strchr(msg, '\n');
  fprintf(out, "%.*s\n", nl ? (int)(nl - msg) : (int)strlen(msg), msg);
}

int disp_tool_simulate_calls(const sim_script *s, FILE *out) {
  sim_set_log(out);
  int rc = 0;
  for (int i = 0; i < sim_num_ops(s); i++) {
    const disp_op *op = sim_op(s, i);
    fprintf(out, "== %s\n", disp_op_name(op));
    for (size_t k = 0; k < sizeof scenarios / sizeof *scenarios; k++) {
      const scenario *sc = &scenarios[k];
      disp_tensor *t = NULL, *result = NULL;
      if (make_tensor(sc, &t) != DISP_OK) {
        fprintf(stderr, "disp simulate --calls: cannot make the %s tensor: %s\n", sc->name, disp_last_error());
        rc = 1;
        continue;
      }
      char set[1024];
      disp_keyset_format(disp_tensor_keyset(t), set, sizeof set);
      fprintf(out, "scenario %s  tensor_keys=%s%s\n", sc->name, set,
              sc->call_in_inference ? "  (called under InferenceMode)" : "");
      disp_tls_state saved = disp_tls_inference_mode_push(sc->call_in_inference);
      disp_status st;
      DISP_CALL(st, op, disp_tensor_keyset(t), (disp_tensor *, disp_tensor **), t, &result);
      disp_tls_restore(saved);
      if (st == DISP_OK) {
        fprintf(out, "  result ok\n");
      } else {
        fprintf(out, "  result error ");
        first_sentence(disp_last_error(), out);
      }
      disp_tensor_release(result);
      disp_tensor_release(t);
    }
  }
  sim_set_log(NULL);
  return rc;
}
