/*
 * test_null_args - every exported function, called with each of its pointer
 * parameters NULL in turn (status.h's Note [NULL arguments]).
 *
 * The calls are generated (gen_null_args.c) from the public headers and the
 * library's export list, so a new function is covered the moment it is
 * exported. Each call runs in a forked child: a crash, an abort, a hang or a
 * sanitizer report fails that case alone and names the function and the
 * argument. A call that must refuse its NULL is checked against the rule:
 *   disp_status   DISP_ERR_INVALID_ARG, the message naming function and argument
 *   a pointer     NULL, with the same message
 *   a plain value / void   no crash
 * and in every case the observable state (registry, thread-local state,
 * refcounts, the stack) must be as it was. A parameter documented to take NULL
 * (tables below, and `Tensor?` arguments of the typed aten entries) must
 * just work without crashing.
 *
 *   test_null_args            runs every case
 *   test_null_args NAME       only the cases of function NAME
 *   test_null_args -v         also lists passing cases
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "null_args.h"

null_fixtures fx;
null_outs fx_out;
null_call_result null_result;

/* ---- parameters documented to take NULL ---------------------------------- */

typedef struct null_param {
  const char *function;
  const char *param;
  const char *why;
} null_param;

static const null_param documented_nullable[] = {
    {"disp_call_boxed_kernel", "user_data", "call.h: the kernel's own pointer, passed as is"},
    {"disp_cpu_fallback", "user_data", "cpu_fallback.h: the options as an integer; NULL means none"},
    {"disp_redispatch_lookup", "op", "call.h: a cell whose kernel refuses when run (DISP_REDISPATCH never sees NULL)"},
    {"disp_redispatch_lookup", "seq", "call.h: a cell whose kernel refuses when run"},
    {"disp_stack_push_tensor", "t", "value.h: NULL pushes None"},
    {"disp_stack_push_tensor_steal", "t", "value.h: NULL pushes None"},
    {"disp_stack_push_string", "v", "value.h: NULL pushes None"},
    {"disp_stack_push_generator", "g", "value.h: NULL pushes None"},
    {"disp_stack_push_storage", "st", "value.h: NULL pushes None"},
    {"disp_library_def", "reg", "library.h: the handle is optional"},
    {"disp_library_impl", "reg", "library.h: the handle is optional"},
    {"disp_library_impl_key", "reg", "library.h: the handle is optional"},
    {"disp_library_fallback", "reg", "library.h: the handle is optional"},
    {"disp_library_new", "file", "library.h: no FILE:LINE to show"},
    {"disp_schema_parse_ns", "default_ns", "schema.h: NULL behaves as disp_schema_parse"},
    {"disp_schema_parse_name", "default_ns", "schema.h: default_ns may be NULL"},
    {"disp_set_warning_handler", "h", "status.h: NULL restores the default handler"},
    {"disp_set_warning_handler", "user_data", "status.h: passed to the handler, never read"},
    {"disp_tensor_retain", "t", "rule (d): retain(NULL) is a no-op returning NULL"},
    {"disp_storage_retain", "st", "rule (d): retain(NULL) is a no-op returning NULL"},
    {"disp_autocast_cached_cast", "t", "autocast.h: a None argument gives *out = NULL"},
    {"disp_allocator_register", "a", "tensor.h: NULL restores the built-in allocator"},
    {"disp_device_hooks_register", "h", "backend.h: NULL removes the hooks"},
    {"disp_tensor_set_sizes_strides", "strides", "backend.h: NULL means contiguous"},
    {"disp_tensor_set_storage", "strides", "backend.h: NULL means contiguous"},
    {"disp_tensor_resize", "strides", "backend.h: NULL means contiguous"},
    {"disp_stub_register", "fn", "stub.h: NULL unregisters the stub"},
    {"disp_storage_new_with_data", "release", "tensor.h: release may be NULL (memory not owned)"},
    {"disp_storage_new_with_data", "ctx", "tensor.h: ctx is only passed to release"},
    {"disp_borrow", "deleter", "easy.h: deleter NULL: the memory is never freed"},
    {"disp_borrow", "ctx", "easy.h: ctx is only passed to deleter"},
    {"disp_scope_end", "s", "easy.h: ending NULL is no effect (DISP_OK), as ending an ended scope"},
    {"disp_tensor_new_opaque", "handle", "tensor.h: the handle is the backend's, never read"},
    {"disp_tensor_new_opaque", "release", "tensor.h: release may be NULL"},
    {"disp_tensor_new_with_storage", "strides", "tensor.h: NULL means contiguous"},
    {"disp_tensor_new_view", "strides", "tensor.h: NULL means contiguous"},
    {"disp_tensor_set_grad", "grad", "autograd.h: NULL clears the gradient"},
    {"disp_tensor_register_hook", "ctx", "autograd.h: the hook's own pointer, passed as is"},
    {"disp_tensor_register_hook", "destroy", "autograd.h: destroy may be NULL"},
    {"disp_tensor_register_hook", "id", "autograd.h: the handle is optional"},
    {"disp_node_next", "input_nr", "autograd.h: input_nr may be NULL"},
    {"disp_ctx_set_data", "data", "function.h: the caller's value, kept as is"},
    {"disp_ctx_set_data", "destroy", "function.h: destroy may be NULL"},
    {"disp_autograd_backward", "grad_tensors", "autograd.h: NULL means 1 for each one-element output"},
    {"disp_autograd_grad", "grad_outputs", "autograd.h: NULL means 1 for each one-element output"},
    {"disp_optim_state", "step", "optim.h: step may be NULL"},
    {"disp_gradcheck", "ctx", "gradcheck.h: passed to fn as is"},
    {"disp_gradcheck", "opts", "gradcheck.h: NULL means the defaults"},
    {"disp_gradgradcheck", "ctx", "gradcheck.h: passed to fn as is"},
    {"disp_gradgradcheck", "opts", "gradcheck.h: NULL means the defaults"},
  {"disp_safetensors_load_buffer", "label", "safetensors.h: NULL names the buffer \"<buffer>\""},
};

/* ---- fixtures ------------------------------------------------------------- */

void null_keep_value(const void *v, size_t size) {
  (void)v;
  (void)size;
}

void null_warning_handler(const char *message, void *user_data) {
  (void)message;
  (void)user_data;
}

void null_release_data(void *data, void *ctx) {
  (void)data;
  (void)ctx;
}

void null_release_handle(void *handle) { (void)handle; }

disp_status null_grad_hook(disp_tensor *grad, disp_tensor **replacement, void *ctx) {
  (void)grad, (void)replacement, (void)ctx;
  return DISP_OK;
}

disp_status null_stub_fn(const disp_stub_iter *it) {
  (void)it;
  return DISP_OK;
}

disp_status null_gradcheck_fn(disp_tensor *const *inputs, size_t n, disp_tensor **outputs, size_t *nout, void *ctx) {
  (void)inputs, (void)n, (void)outputs, (void)ctx;
  *nout = 0;
  return DISP_OK;
}

/* A new reference to fx.tensor, for the _steal functions (which own it). */
disp_tensor *null_new_tensor_ref(void) { return disp_tensor_retain(fx.tensor); }

disp_value *null_new_value(void) {
  static disp_value v;
  v.tag = DISP_VALUE_INT;
  v.u.i = 7;
  return &v;
}

static unsigned char user_memory[64];

static disp_status fixture_kernel(const disp_op *op, disp_keyset ks, disp_stack *stack, void *ud) {
  (void)op;
  (void)ks;
  (void)stack;
  (void)ud;
  return DISP_OK;
}

/* A custom function whose forward hands its ctx to the fixtures. */
static disp_status null_fn_forward(disp_function_ctx *ctx, disp_tensor *const *in, size_t n, disp_tensor **out,
                                   size_t nout) {
  (void)n, (void)nout;
  fx.fn_ctx = ctx;
  out[0] = disp_tensor_retain(in[0]);
  return DISP_OK;
}

static disp_status null_fn_backward(disp_function_ctx *ctx, disp_tensor *const *g, size_t nout, disp_tensor **gin,
                                    size_t n) {
  (void)ctx, (void)g, (void)nout, (void)gin, (void)n;
  return DISP_OK;
}

const disp_function_def null_function = {"NullFunctionBackward", null_fn_forward, null_fn_backward};

static int fail_setup(const char *what) {
  fprintf(stderr, "setup: %s failed: %s\n", what, disp_last_error());
  return 1;
}

static int make_objects(void) {
  if (disp_op_find("aten::add.Tensor", &fx.op) != DISP_OK) return fail_setup("disp_op_find");
  fx.sizes[0] = 2, fx.sizes[1] = 3, fx.strides[0] = 3, fx.strides[1] = 1;
  fx.device = disp_device_make(DISP_BACKEND_CPU, -1);
  if (disp_tensor_empty(fx.sizes, 2, DISP_DTYPE_FLOAT32, fx.device, &fx.tensor) != DISP_OK)
    return fail_setup("disp_tensor_empty");
  memset(disp_tensor_data_ptr(fx.tensor), 0, 6 * sizeof(float));
  fx.tensors[0] = fx.tensors[1] = fx.tensor;
  fx.gradcheck_options = disp_gradcheck_default_options();
  if (disp_storage_new(64, fx.device, &fx.storage) != DISP_OK) return fail_setup("disp_storage_new");
  if (disp_tensor_empty(fx.sizes, 2, DISP_DTYPE_FLOAT32, fx.device, &fx.leaf) != DISP_OK) return fail_setup("leaf");
  memset(disp_tensor_data_ptr(fx.leaf), 0, 6 * sizeof(float));
  if (disp_tensor_set_requires_grad(fx.leaf, 1) != DISP_OK ||
      disp_aten_mul_Tensor(fx.leaf, fx.leaf, &fx.computed) != DISP_OK || !(fx.node = disp_tensor_grad_fn(fx.computed)))
    return fail_setup("the autograd graph");
  if (disp_function_apply(&null_function, &fx.leaf, 1, &fx.fn_out, 1) != DISP_OK || !fx.fn_ctx)
    return fail_setup("the custom function");
  if (!(fx.stack = disp_stack_new()) || disp_stack_push_int(fx.stack, 1) != DISP_OK)
    return fail_setup("the stack");
  if (disp_library_new(DISP_LIBRARY_DEF, "nulltest", DISP_KEY_UNDEFINED, "null.c", 1, &fx.lib) != DISP_OK ||
      disp_library_def(fx.lib, "nullfn(Tensor self) -> Tensor", &fx.reg) != DISP_OK)
    return fail_setup("the nulltest library");
  fx.schema = disp_op_schema(fx.op);
  if (!fx.schema || !(fx.schema_owned = disp_schema_copy(fx.schema))) return fail_setup("the schema");
  fx.type = disp_schema_argument_type(fx.schema, 0);
  const disp_allocator *cpu = disp_allocator_get(DISP_BACKEND_CPU);
  if (!cpu || !fx.type) return fail_setup("the allocator and type");
  fx.allocator = *cpu;
  fx.sgd_options = disp_sgd_options_default(), fx.sgd_options.lr = 0.1;
  fx.adam_options = disp_adam_options_default();
  if (disp_optim_sgd_new(fx.tensors, 1, &fx.sgd_options, &fx.optimizer) != DISP_OK) return fail_setup("the optimizer");
  fx.generator = disp_device_generator(fx.device);
  if (!fx.generator || disp_generator_get_state(fx.generator, &fx.generator_state) != DISP_OK)
    return fail_setup("the CPU generator");
  if (disp_safetensors_new(&fx.safetensors) != DISP_OK) return fail_setup("disp_safetensors_new");
  fx.devnull = fopen("/dev/null", "w");
  return fx.devnull ? 0 : fail_setup("opening /dev/null");
}

/* The parent's fixtures go at the end, so a leak check of the whole run
 * sees only what the library itself kept. */
static void free_objects(void) {
  disp_optim_free(fx.optimizer);
  disp_safetensors_free(fx.safetensors);
  disp_stack_free(fx.stack);
  disp_tensor_release(fx.tensor);
  disp_tensor_release(fx.computed);
  disp_tensor_release(fx.fn_out);
  disp_tensor_release(fx.leaf);
  disp_storage_release(fx.storage);
  disp_schema_free(fx.schema_owned);
  disp_library_free(fx.lib);
  if (fx.devnull) fclose(fx.devnull);
}

static void make_values(void) {
  fx.value.tag = DISP_VALUE_INT;
  fx.value.u.i = 1;
  fx.scalar = disp_scalar_int(1);
  fx.keys[0] = DISP_KEY_CPU, fx.keys[1] = DISP_KEY_AUTOGRAD_CPU;
  fx.doubles[0] = fx.doubles[1] = 1.0;
  fx.bools[0] = fx.bools[1] = true;
  fx.user = user_memory;
  fx.keyset = disp_keyset_of(DISP_KEY_CPU);
  fx.tls = disp_tls_get();
  fx.kernel = disp_kernel_boxed(fixture_kernel, NULL, NULL);
  fx.dispatch = disp_op_dispatch(fx.op, disp_tensor_keyset(fx.tensor));
  fx.int_list = (disp_int_list){fx.sizes, 2};
  fx.double_list = (disp_double_list){fx.doubles, 2};
  fx.bool_list = (disp_bool_list){fx.bools, 2};
  fx.tensor_list = (disp_tensor_list){fx.tensors, 2};
  /* the optional values are None (zero) */
}

/* ---- the observable state, before and after a refused call --------------- */

typedef struct snapshot {
  disp_tls_state tls;
  int autocast_enabled, autocast_cache_enabled, trace;
  disp_dtype autocast_dtype;
  size_t autocast_cache, nops, stack_size, tensor_refs, storage_refs;
  uint64_t seed;
  const disp_allocator *cpu_allocator;
  char *op_state, *lib_op_state, *fallbacks;
} snapshot;

static void take_snapshot(snapshot *s) {
  const char **names = NULL;
  const disp_op *nullfn = NULL;
  memset(s, 0, sizeof *s);
  s->tls = disp_tls_get();
  s->autocast_enabled = disp_autocast_is_enabled(DISP_BACKEND_CPU);
  s->autocast_cache_enabled = disp_autocast_is_cache_enabled();
  (void)disp_autocast_get_dtype(DISP_BACKEND_CPU, &s->autocast_dtype);
  s->autocast_cache = disp_autocast_cache_size();
  s->trace = disp_trace_get();
  if (disp_op_list(&names, &s->nops) == DISP_OK) free(names);
  s->stack_size = disp_stack_size(fx.stack);
  s->tensor_refs = disp_tensor_refcount(fx.tensor);
  s->storage_refs = disp_storage_refcount(fx.storage);
  s->seed = disp_initial_seed();
  s->cpu_allocator = disp_allocator_get(DISP_BACKEND_CPU);
  s->op_state = disp_op_dump_state(fx.op);
  if (disp_op_find("nulltest::nullfn", &nullfn) == DISP_OK) s->lib_op_state = disp_op_dump_state(nullfn);
  s->fallbacks = disp_fallback_dump();
}

static void free_snapshot(snapshot *s) {
  free(s->op_state);
  free(s->lib_op_state);
  free(s->fallbacks);
}

static int same_text(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

/* The first difference between two snapshots, or NULL. */
static const char *snapshot_diff(const snapshot *a, const snapshot *b) {
  if (memcmp(&a->tls, &b->tls, sizeof a->tls)) return "the thread-local dispatch state changed";
  if (a->autocast_enabled != b->autocast_enabled || a->autocast_dtype != b->autocast_dtype ||
      a->autocast_cache_enabled != b->autocast_cache_enabled || a->autocast_cache != b->autocast_cache)
    return "the autocast state changed";
  if (a->trace != b->trace) return "the trace flag changed";
  if (a->nops != b->nops) return "the number of operators changed";
  if (a->stack_size != b->stack_size) return "the stack's size changed";
  if (a->tensor_refs != b->tensor_refs) return "the tensor's refcount changed";
  if (a->storage_refs != b->storage_refs) return "the storage's refcount changed";
  if (a->seed != b->seed) return "the random seed changed";
  if (a->cpu_allocator != b->cpu_allocator) return "the CPU allocator changed";
  if (!same_text(a->op_state, b->op_state)) return "aten::add.Tensor's registrations changed";
  if (!same_text(a->lib_op_state, b->lib_op_state)) return "nulltest::nullfn's registrations changed";
  if (!same_text(a->fallbacks, b->fallbacks)) return "the backend fallbacks changed";
  return NULL;
}

/* ---- hand-written cases: variadic functions and macros ------------------ */

static disp_tensor *hand_out;

void null_hand_disp_call_op(void);
void null_hand_disp_call_op(void) { null_result.status = disp_call(NULL, fx.tensor, fx.tensor, fx.scalar, &hand_out); }

void null_hand_disp_redispatch_op(void);
void null_hand_disp_redispatch_op(void) {
  null_result.status = disp_redispatch(NULL, fx.keyset, fx.tensor, fx.tensor, fx.scalar, &hand_out);
}

void null_hand_disp_call_kernel_op(void);
void null_hand_disp_call_kernel_op(void) {
  null_result.status = disp_call_kernel(NULL, fx.dispatch, fx.tensor, fx.tensor, fx.scalar, &hand_out);
}

void null_hand_disp_call_boxed_kernel_op(void);
void null_hand_disp_call_boxed_kernel_op(void) {
  null_result.status = disp_call_boxed_kernel(NULL, fx.kernel.boxed, NULL, fx.keyset, fx.tensor, fx.tensor,
                                              fx.scalar, &hand_out);
}

void null_hand_disp_call_boxed_kernel_fn(void);
void null_hand_disp_call_boxed_kernel_fn(void) {
  null_result.status = disp_call_boxed_kernel(fx.op, NULL, NULL, fx.keyset, fx.tensor, fx.tensor, fx.scalar, &hand_out);
}

void null_hand_disp_call_boxed_kernel_user_data(void);
void null_hand_disp_call_boxed_kernel_user_data(void) {
  null_result.status = disp_call_boxed_kernel(fx.op, fx.kernel.boxed, NULL, fx.keyset, fx.tensor, fx.tensor,
                                              fx.scalar, &hand_out);
}

void null_hand_disp_set_error_fmt(void);
void null_hand_disp_set_error_fmt(void) {
  /* A NULL format is refused, whatever status the caller wanted to report. */
  null_result.status = disp_set_error(DISP_ERR_KERNEL, NULL);
}

/* DISP_REDISPATCH with a NULL operator: disp_op_redispatch hands out a kernel
 * that refuses, and running it must say so rather than crash. (DISP_CALL
 * reads the operator's table inline and documents op != NULL instead.) */
static void hand_redispatch_macro_op(void) {
  disp_status st;
  const disp_op *op = NULL;
  DISP_REDISPATCH(st, op, fx.keyset, (disp_tensor *, disp_tensor *, disp_scalar, disp_tensor **), fx.tensor,
                  fx.tensor, fx.scalar, &hand_out);
  null_result.status = st;
}

/* disp_call's trailing out-pointer NULL: the arguments are C varargs, so
 * the callee cannot know there is one until it has counted the schema. */
static void hand_call_out(void) {
  null_result.status = disp_call(fx.op, fx.tensor, fx.tensor, fx.scalar, (disp_tensor **)NULL);
}

/* A NULL Tensor among disp_call's C arguments (Note [Checking C arguments]
 * in src/dispatcher/c_args_check.c): refused by the schema's argument name. */
static void hand_call_self(void) {
  null_result.status = disp_call(fx.op, (disp_tensor *)NULL, fx.tensor, fx.scalar, &hand_out);
}

static void hand_redispatch_other(void) {
  null_result.status = disp_redispatch(fx.op, fx.keyset, fx.tensor, (disp_tensor *)NULL, fx.scalar, &hand_out);
}

static const null_case hand_cases[] = {
    {"DISP_REDISPATCH", "op", "const disp_op*", NULL_RET_STATUS, 0, hand_redispatch_macro_op},
    {"disp_call", "out", "disp_tensor**", NULL_RET_STATUS, 0, hand_call_out},
    {"disp_call", "self", "disp_tensor*", NULL_RET_STATUS, 0, hand_call_self},
    {"disp_redispatch", "other", "disp_tensor*", NULL_RET_STATUS, 0, hand_redispatch_other},
};

/* ---- running one case ----------------------------------------------------- */

/* Whether table entry `e` names case c: exactly, or as a family (a
 * trailing '*' in the function, "*" for every parameter). */
static int entry_matches(const null_param *e, const null_case *c) {
  size_t n = strlen(e->function);
  int family = n > 0 && e->function[n - 1] == '*';
  int fn = family ? !strncmp(e->function, c->function, n - 1) : !strcmp(e->function, c->function);
  return fn && (!strcmp(e->param, "*") || !strcmp(e->param, c->param));
}

static const null_param *find_param(const null_param *list, size_t n, const null_case *c) {
  for (size_t i = 0; i < n; i++)
    if (entry_matches(&list[i], c)) return &list[i];
  return NULL;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int accepts_null(const null_case *c) {
  return c->schema_optional || find_param(documented_nullable, COUNT(documented_nullable), c) != NULL;
}

static int is_word_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

/* Whether `word` occurs in `text` as a whole word: "s" must not match any s. */
static int has_word(const char *text, const char *word) {
  size_t n = strlen(word);
  for (const char *p = strstr(text, word); p; p = strstr(p + 1, word))
    if ((p == text || !is_word_char(p[-1])) && !is_word_char(p[n])) return 1;
  return 0;
}

/* The rule for a refused NULL, by what the function returns. A hand case
 * for a macro (an upper-case name) need only name the argument. */
static int check_refusal(const null_case *c) {
  const char *msg = disp_last_error();
  int macro = c->function[0] >= 'A' && c->function[0] <= 'Z';
  int named = has_word(msg, c->param) && (macro || has_word(msg, c->function));
  if (c->ret == NULL_RET_STATUS && null_result.status != DISP_ERR_INVALID_ARG) {
    printf("returned %s, not DISP_ERR_INVALID_ARG (message: \"%s\")\n", disp_status_name(null_result.status), msg);
    return 1;
  }
  if (c->ret == NULL_RET_POINTER && null_result.ptr != NULL) {
    printf("returned a pointer, not NULL\n");
    return 1;
  }
  if ((c->ret == NULL_RET_STATUS || c->ret == NULL_RET_POINTER) && !named) {
    printf("the message does not name the function and '%s': \"%s\"\n", c->param, msg);
    return 1;
  }
  return 0;
}

/* In the child: the call and its checks. Returns the exit code. */
static int child_run(const void *arg) {
  const null_case *c = arg;
  snapshot before, after;
  int accept = accepts_null(c), rc = 0;
  if (!accept) take_snapshot(&before);
  disp_clear_error();
  null_result.status = (disp_status)-1;
  null_result.ptr = &null_result; /* not NULL: a pointer function must write NULL */
  c->call();
  if (accept) return 0;
  rc = check_refusal(c);
  take_snapshot(&after);
  const char *diff = snapshot_diff(&before, &after);
  if (!rc && diff) {
    printf("state not left as it was: %s\n", diff);
    rc = 1;
  }
  free_snapshot(&before);
  free_snapshot(&after);
  return rc;
}

typedef enum verdict { PASSED, FAILED } verdict;

/* Runs child(c) in a forked child; on failure *why holds its output. */
static verdict run_in_child(int (*child)(const void *), const void *c, char *why, size_t whysize) {
  FILE *log = tmpfile();
  why[0] = '\0';
  if (!log) {
    snprintf(why, whysize, "tmpfile: %s", strerror(errno));
    return FAILED;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, whysize, "fork: %s", strerror(errno));
    fclose(log);
    return FAILED;
  }
  if (pid == 0) {
    dup2(fileno(log), STDOUT_FILENO);
    dup2(fileno(log), STDERR_FILENO);
    alarm(60); /* a hang is a failure too */
    int rc = child(c);
    fflush(stdout);
    exit(rc); /* exit, not _exit: LeakSanitizer checks at exit */
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  size_t n = 0;
  int len;
  if (WIFSIGNALED(status))
    len = snprintf(why, whysize, "crashed with signal %d (%s)\n", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else if (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 1)
    len = snprintf(why, whysize, "exited with status %d (a sanitizer report?)\n", WEXITSTATUS(status));
  else
    len = 0;
  if (len < 0 || (size_t)len >= whysize) len = 0;
  rewind(log);
  n = fread(why + len, 1, whysize - (size_t)len - 1, log);
  why[(size_t)len + n] = '\0';
  fclose(log);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? PASSED : FAILED;
}

/* ---- main ------------------------------------------------------------------ */

typedef struct tally {
  int passed, failed;
} tally;

static void run_one(const null_case *c, int verbose, tally *t) {
  static char why[16384];
  verdict v = run_in_child(child_run, c, why, sizeof why);
  const char *how = accepts_null(c) ? "accepts NULL" : "refuses NULL";
  if (v == PASSED) {
    t->passed++;
    if (verbose) printf("ok    %s(%s = NULL) %s\n", c->function, c->param, how);
  } else {
    t->failed++;
    printf("FAIL  %s(%s = NULL) %s: %s", c->function, c->param, how, why);
    if (why[0] && why[strlen(why) - 1] != '\n') putchar('\n');
  }
}

/* Entries of the hand table must name real cases: a stale one would hide a
 * renamed parameter. */
static int check_tables(void) {
  int bad = 0;
  for (size_t i = 0; i < COUNT(documented_nullable); i++) {
    const null_param *e = &documented_nullable[i];
    int found = 0;
    for (size_t k = 0; k < null_num_cases && !found; k++) found = entry_matches(e, &null_cases[k]);
    for (size_t k = 0; k < COUNT(hand_cases) && !found; k++) found = entry_matches(e, &hand_cases[k]);
    if (!found) {
      printf("FAIL  documented_nullable lists %s(%s), which is not a pointer parameter of an exported function\n",
             e->function, e->param);
      bad = 1;
    }
  }
  return bad;
}

/* ---- out-of-range values ------------------------------------------------- */

disp_device null_bad_device_type(void) { return (disp_device){(disp_backend)100000, 0}; }
disp_device null_bad_device_index(void) { return (disp_device){DISP_BACKEND_CPU, 5}; }
disp_opt_device null_bad_opt_device_type(void) { return (disp_opt_device){100000, 0, true}; }
disp_opt_device null_bad_opt_device_index(void) { return (disp_opt_device){DISP_BACKEND_CPU, 5, true}; }

/* Parameters that take every value of their type, with the reason. */
static const null_param accepts_any_value[] = {
    {"", "", ""}, /* none yet */
};

/* An out-of-range value must not crash, hang or leak, whatever the function
 * returns; a status function refuses it (not DISP_OK, with a message) and
 * changes nothing; a pointer function that returns NULL says why. */
static int child_run_bad(const void *arg) {
  const null_bad_case *c = arg;
  null_case as_null = {c->function, c->param, "", c->ret, 0, c->call};
  int accept = find_param(accepts_any_value, COUNT(accepts_any_value), &as_null) != NULL;
  snapshot before, after;
  take_snapshot(&before);
  disp_clear_error();
  null_result.status = DISP_OK;
  null_result.ptr = &null_result;
  c->call();
  const char *msg = disp_last_error();
  int rc = 0;
  if (c->ret == NULL_RET_STATUS && !accept && null_result.status == DISP_OK) {
    printf("accepted: returned DISP_OK\n");
    rc = 1;
  } else if ((c->ret == NULL_RET_STATUS && null_result.status != DISP_OK) ||
             (c->ret == NULL_RET_POINTER && null_result.ptr == NULL)) {
    if (!msg[0]) {
      printf("refused without a message\n");
      rc = 1;
    }
    take_snapshot(&after);
    const char *diff = snapshot_diff(&before, &after);
    if (!rc && diff) {
      printf("state not left as it was: %s\n", diff);
      rc = 1;
    }
    free_snapshot(&after);
  }
  free_snapshot(&before);
  return rc;
}

static void run_bad(const null_bad_case *c, int verbose, tally *t) {
  static char why[16384];
  if (run_in_child(child_run_bad, c, why, sizeof why) == PASSED) {
    t->passed++;
    if (verbose) printf("ok    %s(%s = %s)\n", c->function, c->param, c->value);
    return;
  }
  t->failed++;
  printf("FAIL  %s(%s = %s): %s", c->function, c->param, c->value, why);
  if (why[0] && why[strlen(why) - 1] != '\n') putchar('\n');
}

int main(int argc, char **argv) {
  const char *only = NULL;
  int verbose = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-v")) verbose = 1;
    else only = argv[i];
  }
  if (make_objects()) {
    free_objects();
    return 1;
  }
  make_values();
  int bad = check_tables();
  tally t = {0};
  for (size_t i = 0; i < null_num_cases; i++)
    if (!only || !strcmp(only, null_cases[i].function)) run_one(&null_cases[i], verbose, &t);
  for (size_t i = 0; i < COUNT(hand_cases); i++)
    if (!only || strstr(hand_cases[i].function, only)) run_one(&hand_cases[i], verbose, &t);
  tally bad_values = {0};
  for (size_t i = 0; i < null_num_bad_cases; i++)
    if (!only || !strcmp(only, null_bad_cases[i].function)) run_bad(&null_bad_cases[i], verbose, &bad_values);
  printf("%zu exported functions: %zu without pointer parameters (nothing to pass NULL to), "
         "%zu with; %zu generated cases (one per pointer parameter) and %zu hand-written\n",
         null_num_functions, null_num_trivial, null_num_functions - null_num_trivial, null_num_cases,
         COUNT(hand_cases));
  printf("%zu out-of-range value cases (enums past either end, devices of no backend): %d passed, %d failed\n",
         null_num_bad_cases, bad_values.passed, bad_values.failed);
  printf("%d passed, %d failed\n", t.passed + bad_values.passed, t.failed + bad_values.failed + bad);
  free_objects();
  return t.failed || bad_values.failed || bad ? 1 : 0;
}
