/*
 * null_args.h - what the generated cases of test_null_args (written by
 * gen_null_args.c) share with the hand-written runner (test_null_args.c):
 * the fixtures every valid argument comes from, and the case table.
 */
#ifndef NULL_ARGS_H
#define NULL_ARGS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

#include <disp.h>

/* Valid values, made once by the parent before it forks a child per case. */
typedef struct null_fixtures {
  const disp_op *op;          /* aten::add.Tensor */
  disp_stack *stack;          /* holds one int, so "empty" is never the reason to fail */
  disp_tensor *tensor;        /* float32 [2, 3] on the CPU */
  disp_tensor *tensors[2];    /* tensor twice */
  disp_storage *storage;      /* 64 bytes on the CPU */
  disp_library *lib;          /* a DEF library of namespace nulltest */
  disp_registration *reg;     /* its def of nulltest::nullfn */
  const disp_schema *schema;  /* aten::add.Tensor's schema */
  disp_schema *schema_owned;  /* a parsed copy */
  const disp_type *type;      /* the type of its first argument */
  disp_allocator allocator;   /* the CPU allocator */
  disp_value value;           /* an int */
  disp_scalar scalar;
  disp_key keys[2];
  int64_t sizes[2];           /* {2, 3} */
  int64_t strides[2];         /* {3, 1} */
  double doubles[2];
  bool bools[2];
  void *user;                 /* 64 bytes of caller memory */
  FILE *devnull;
  disp_keyset keyset;
  disp_device device;
  disp_gradcheck_options gradcheck_options; /* the defaults */
  disp_tls_state tls;
  disp_tensor *leaf;          /* float32 [2, 3], requires grad */
  disp_tensor *computed;      /* leaf * leaf */
  const disp_node *node;      /* its grad_fn, MulBackward0 */
  disp_tensor *fn_out;        /* null_function applied to leaf */
  disp_function_ctx *fn_ctx;  /* its ctx, alive with fn_out's graph */
  disp_kernel kernel;
  disp_dispatch dispatch;
  disp_int_list int_list;
  disp_double_list double_list;
  disp_bool_list bool_list;
  disp_tensor_list tensor_list;
  disp_opt_int opt_int;
  disp_opt_double opt_double;
  disp_opt_bool opt_bool;
  disp_opt_int_list opt_int_list;
  disp_opt_device opt_device;
  disp_sgd_options sgd_options;   /* lr 0.1 */
  disp_adam_options adam_options; /* the defaults */
  disp_optimizer *optimizer;      /* SGD over tensor */
  disp_device_hooks device_hooks; /* all NULL: never accepted */
  disp_generator *generator;      /* the CPU's */
  disp_generator_state generator_state; /* the CPU generator's, at setup */
  /* No plugin is loaded: every function taking a plugin takes just that one
   * pointer, so its only case passes NULL (tests/test_plugin.c has the rest). */
  disp_plugin *plugin;
  disp_safetensors *safetensors; /* an empty set */
} null_fixtures;

/* Where out-parameters point. Globals: what a call leaves here is reachable,
 * so LeakSanitizer reports only what a call really lost. */
typedef struct null_outs {
  const disp_op *op;
  disp_tensor *tensor;
  disp_tensor *tensor1, *tensor2; /* an operator's second and third results */
  disp_storage *storage;
  disp_library *lib;
  disp_registration *reg;
  disp_schema *schema;
  disp_autocast_guard guard;
  disp_value value;
  disp_scalar scalar;
  disp_dtype dtype;
  disp_device device;
  disp_fn fn;
  disp_key keys[DISP_KEY_COUNT];
  const char **names;
  char *str;
  char buf[256];
  size_t size;
  int64_t i64;
  uint64_t u64;
  uint32_t u32;
  disp_tensor *const *tensor_array;
  int i;
  disp_library_node node;
  disp_tensor_vec vec; /* empty: freeing it is a no-op */
  disp_optimizer *optimizer;
  disp_device_guard device_guard;
  disp_generator_state generator_state;
  disp_memory_stats memory_stats;
  disp_safetensors *safetensors;
  void *ptr;
  disp_plugin *plugin;
} null_outs;

extern null_fixtures fx;
extern null_outs fx_out;

/* What the call under test returned. */
typedef struct null_call_result {
  disp_status status;
  const void *ptr;
} null_call_result;
extern null_call_result null_result;

void null_keep_value(const void *v, size_t size);
void null_warning_handler(const char *message, void *user_data);
void null_release_data(void *data, void *ctx);
void null_release_handle(void *handle);
extern const disp_function_def null_function;
disp_status null_grad_hook(disp_tensor *grad, disp_tensor **replacement, void *ctx);
disp_status null_stub_fn(const disp_stub_iter *it);
disp_status null_gradcheck_fn(disp_tensor *const *inputs, size_t n, disp_tensor **outputs, size_t *nout, void *ctx);
disp_tensor *null_new_tensor_ref(void);
disp_value *null_new_value(void);

typedef enum null_ret_kind {
  NULL_RET_STATUS,  /* disp_status: DISP_ERR_INVALID_ARG naming function and argument */
  NULL_RET_POINTER, /* a pointer: NULL, with the same message */
  NULL_RET_VALUE,   /* a plain value: any harmless one, no crash */
  NULL_RET_VOID     /* nothing: a no-op */
} null_ret_kind;

/* One call: `function` with parameter `param` NULL. */
typedef struct null_case {
  const char *function;
  const char *param;
  const char *type;
  null_ret_kind ret;
  int schema_optional; /* the schema says `Tensor? param`: NULL means None */
  void (*call)(void);
} null_case;

extern const null_case null_cases[];
extern const size_t null_num_cases;
extern const char *const null_trivial[];
extern const size_t null_num_trivial;
extern const size_t null_num_functions;

/* One call: `function` with parameter `param` given the out-of-range
 * `value` (an enum past either end, a device of no backend). */
typedef struct null_bad_case {
  const char *function;
  const char *param;
  const char *value;
  null_ret_kind ret;
  void (*call)(void);
} null_bad_case;

extern const null_bad_case null_bad_cases[];
extern const size_t null_num_bad_cases;

/* The out-of-range devices the bad-value cases pass. */
disp_device null_bad_device_type(void);
disp_device null_bad_device_index(void);
disp_opt_device null_bad_opt_device_type(void);
disp_opt_device null_bad_opt_device_index(void);

#endif
