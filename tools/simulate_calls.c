/*
 * simulate_calls.c - `disp simulate --calls`: each operator of a script is
 * called once, boxed, in the ten scenarios of the conformance README
 * (section calls), and what ran is printed in that section's format.
 *
 * The arguments follow from the schema: the scenario's tensor for every
 * Tensor (a one-element list for Tensor[] and Tensor?[]), None for every
 * other optional, the schema defaults for the trailing defaulted arguments,
 * and a simple value (1, 1.0, False, "", float32, strided, contiguous, cpu,
 * a list of 1s) for the rest. An operator with an argument of any other
 * type (Dict, tuple, Generator, a class, ...) is refused, by name.
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

/* A list of n copies of one simple value, for int/float/bool lists. */
static disp_status push_simple_list(disp_stack *st, disp_type_kind elem, int64_t n) {
  enum { MAX_ITEMS = 64 };
  if (n < 0) n = 1; /* no fixed size: one item */
  if (n > MAX_ITEMS) return disp_set_error(DISP_ERR_TYPE, "a list of size %lld", (long long)n);
  int64_t ints[MAX_ITEMS];
  double doubles[MAX_ITEMS];
  bool bools[MAX_ITEMS];
  for (int64_t i = 0; i < n; i++) ints[i] = 1, doubles[i] = 1.0, bools[i] = false;
  switch (elem) {
    case DISP_TYPE_INT: case DISP_TYPE_SYMINT: return disp_stack_push_int_list(st, ints, (size_t)n);
    case DISP_TYPE_FLOAT: return disp_stack_push_double_list(st, doubles, (size_t)n);
    case DISP_TYPE_BOOL: return disp_stack_push_bool_list(st, bools, (size_t)n);
    default: return DISP_ERR_TYPE;
  }
}

/* A value for a non-tensor, non-optional argument; DISP_ERR_TYPE when this
 * tool has no value of that type to offer. */
static disp_status push_simple(disp_stack *st, const disp_type *t, int64_t n) {
  switch (disp_schema_type_kind(t)) {
    case DISP_TYPE_INT: case DISP_TYPE_SYMINT: return disp_stack_push_int(st, 1);
    case DISP_TYPE_FLOAT: return disp_stack_push_double(st, 1.0);
    case DISP_TYPE_BOOL: return disp_stack_push_bool(st, false);
    case DISP_TYPE_STR: return disp_stack_push_string(st, "");
    case DISP_TYPE_SCALAR: return disp_stack_push_scalar(st, disp_scalar_int(1));
    case DISP_TYPE_SCALAR_TYPE: return disp_stack_push_int(st, DISP_DTYPE_FLOAT32);
    case DISP_TYPE_LAYOUT: return disp_stack_push_int(st, DISP_LAYOUT_STRIDED);
    case DISP_TYPE_MEMORY_FORMAT: return disp_stack_push_int(st, 0); /* contiguous_format */
    case DISP_TYPE_DEVICE: return disp_stack_push_device(st, DISP_BACKEND_CPU, -1);
    case DISP_TYPE_LIST: return push_simple_list(st, disp_schema_type_kind(disp_schema_type_element(t, 0)), n);
    default: return DISP_ERR_TYPE;
  }
}

/*
 * Pushes op's arguments for a call with tensor `t` (NULL: None, for a dry
 * run that only checks every argument can be built). Errors: DISP_ERR_TYPE
 * "OP: cannot build an argument of type 'T' (argument N 'name')".
 */
static disp_status build_arguments(const disp_op *op, disp_tensor *t, disp_stack *st) {
  const disp_schema *s = disp_op_schema(op);
  size_t nargs = disp_schema_num_arguments(s), given = 0;
  /* Defaults only for the trailing run of defaulted non-tensor arguments:
   * disp_stack_fill_defaults fills from a position to the end. */
  for (size_t i = 0; i < nargs; i++)
    if (!disp_schema_argument_has_default(s, i) || sim_is_tensor_argument(disp_schema_argument_type(s, i)))
      given = i + 1;
  for (size_t i = 0; i < given; i++) {
    const disp_type *type = disp_schema_argument_type(s, i);
    disp_status rc;
    if (disp_schema_type_kind(type) == DISP_TYPE_TENSOR) rc = disp_stack_push_tensor(st, t);
    else if (sim_is_tensor_argument(type)) rc = disp_stack_push_tensor_list(st, &t, 1);
    else if (disp_schema_type_kind(type) == DISP_TYPE_OPTIONAL) rc = disp_stack_push_none(st);
    else rc = push_simple(st, type, disp_schema_argument_list_size(s, i));
    if (rc == DISP_ERR_TYPE)
      return disp_set_error(DISP_ERR_TYPE, "%s: cannot build an argument of type '%s' (argument %zu '%s')",
                            disp_op_name(op), disp_schema_argument_type_str(s, i), i + 1,
                            disp_schema_argument_name(s, i));
    if (rc != DISP_OK) return rc;
  }
  return disp_stack_fill_defaults(op, st, given);
}

/* Whether `disp simulate --calls` can call op: its arguments and returns
 * can be built. Sets the error naming the operator and the type when not. */
static disp_status check_callable(const disp_op *op) {
  disp_stack *st = disp_stack_new();
  if (!st) return disp_set_error(DISP_ERR_NO_MEMORY, "out of memory");
  disp_status rc = build_arguments(op, NULL, st);
  disp_stack_free(st);
  return rc == DISP_OK ? sim_check_returns(op) : rc;
}

/* One call of op with tensor t; prints its result line. */
static void call_once(const disp_op *op, disp_tensor *t, FILE *out) {
  disp_stack *st = disp_stack_new();
  disp_status rc = st ? build_arguments(op, t, st) : disp_set_error(DISP_ERR_NO_MEMORY, "out of memory");
  if (rc == DISP_OK) rc = disp_call_boxed(op, st);
  if (rc == DISP_OK) {
    fprintf(out, "  result ok\n");
  } else {
    fprintf(out, "  result error ");
    first_sentence(disp_last_error(), out);
  }
  disp_stack_free(st); /* the returns */
}

int disp_tool_simulate_calls(const sim_script *s, FILE *out) {
  sim_set_log(out);
  int rc = 0;
  for (int i = 0; i < sim_num_ops(s); i++) {
    const disp_op *op = sim_op(s, i);
    if (check_callable(op) != DISP_OK) {
      fprintf(stderr, "disp simulate --calls: %s\n", disp_last_error());
      rc = 1;
      continue;
    }
    fprintf(out, "== %s\n", disp_op_name(op));
    for (size_t k = 0; k < sizeof scenarios / sizeof *scenarios; k++) {
      const scenario *sc = &scenarios[k];
      disp_tensor *t = NULL;
      if (make_tensor(sc, &t) != DISP_OK) {
        fprintf(stderr, "disp simulate --calls: cannot make the %s tensor: %s\n", sc->name, disp_last_error());
        disp_tensor_release(t);
        rc = 1;
        continue;
      }
      char set[1024];
      disp_keyset_format(disp_tensor_keyset(t), set, sizeof set);
      fprintf(out, "scenario %s  tensor_keys=%s%s\n", sc->name, set,
              sc->call_in_inference ? "  (called under InferenceMode)" : "");
      disp_tls_state saved = disp_tls_inference_mode_push(sc->call_in_inference);
      call_once(op, t, out);
      disp_tls_restore(saved);
      disp_tensor_release(t);
    }
  }
  sim_set_log(NULL);
  return rc;
}
