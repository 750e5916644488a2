/*
 * test_call.c - calling operators: both conventions both ways, redispatch,
 * guards, the trace, errors, and reference counts.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <disp.h>

#include "test.h"

/* ---- kernels ------------------------------------------------------------ */

static int g_cpu_calls, g_autograd_calls, g_boxed_calls;
static disp_keyset g_seen_ks;

/* myadd(Tensor self, Tensor other) -> Tensor, unboxed: returns self. */
static disp_status add_cpu(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  (void)other;
  g_cpu_calls++;
  *out = disp_tensor_retain(self);
  return DISP_OK;
}

/* The same with the key set first. */
static disp_status add_cpu_ks(disp_keyset ks, disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  g_seen_ks = ks;
  return add_cpu(self, other, out);
}

/* A boxed version: leaves `self` as the return. */
static disp_status add_boxed(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)op, (void)ud;
  g_boxed_calls++;
  g_seen_ks = ks;
  disp_stack_drop(s, 1); /* other */
  return DISP_OK;
}

/* An autograd kernel: counts, then redispatches below itself (unboxed). */
static const disp_op *g_add_op;
static disp_status add_autograd(disp_keyset ks, disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  g_autograd_calls++;
  disp_status st;
  DISP_REDISPATCH(st, g_add_op, disp_keyset_below(ks), (disp_tensor *, disp_tensor *, disp_tensor **),
                  self, other, out);
  return st;
}

static disp_status failing_kernel(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  (void)self, (void)other, (void)out;
  return disp_set_error(DISP_ERR_KERNEL, "the device is on fire");
}

/* ---- helpers ------------------------------------------------------------ */

static disp_library *g_def;

static const disp_op *define(const char *schema, const char *name) {
  if (!g_def && disp_library_new(DISP_LIBRARY_DEF, "tc", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &g_def) != DISP_OK)
    return NULL;
  if (disp_library_def(g_def, schema, NULL) != DISP_OK) return NULL;
  const disp_op *op = NULL;
  disp_op_find(name, &op);
  return op;
}

static disp_library *impl(disp_key key, const char *name, disp_kernel k) {
  disp_library *lib = NULL;
  if (disp_library_new(DISP_LIBRARY_IMPL, "tc", key, __FILE__, __LINE__, &lib) != DISP_OK) return NULL;
  if (disp_library_impl(lib, name, k, NULL) != DISP_OK) {
    disp_library_free(lib);
    return NULL;
  }
  return lib;
}

static disp_tensor *cpu_tensor(void) {
  int64_t sizes[1] = {3};
  disp_tensor *t = NULL;
  disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t);
  return t;
}

typedef disp_status (*add_fn)(disp_tensor *, disp_tensor *, disp_tensor **);

/* Calls myadd four ways and checks each returns `a` with balanced refcounts. */
static int call_four_ways(const disp_op *op, disp_tensor *a, disp_tensor *b) {
  disp_tensor *out = NULL;
  disp_status st;
  DISP_CALL(st, op, disp_keyset_or(disp_tensor_keyset(a), disp_tensor_keyset(b)),
            (disp_tensor *, disp_tensor *, disp_tensor **), a, b, &out);
  if (st != DISP_OK || out != a) return 1;
  disp_tensor_release(out);
  out = NULL;
  if (disp_call(op, a, b, &out) != DISP_OK || out != a) return 2;
  disp_tensor_release(out);
  disp_stack *s = disp_stack_new();
  disp_stack_push_tensor(s, a);
  disp_stack_push_tensor(s, b);
  if (disp_call_boxed(op, s) != DISP_OK || disp_stack_size(s) != 1 ||
      disp_stack_at(s, 0)->tag != DISP_VALUE_TENSOR || disp_stack_at(s, 0)->u.tensor != a)
    return 3;
  disp_stack_free(s);
  disp_fn fn = NULL;
  if (disp_op_typed_entry(op, &fn) != DISP_OK) return 4;
  out = NULL;
  if (((add_fn)fn)(a, b, &out) != DISP_OK || out != a) return 5;
  disp_tensor_release(out);
  if (disp_tensor_refcount(a) != 1 || disp_tensor_refcount(b) != 1) return 6;
  return 0;
}

/* ---- tests -------------------------------------------------------------- */

TEST(unboxed_kernel_all_four_ways) {
  const disp_op *op = define("add1(Tensor self, Tensor other) -> Tensor", "tc::add1");
  ASSERT_TRUE(op != NULL);
  disp_library *l = impl(DISP_KEY_CPU, "add1", disp_kernel_unboxed(DISP_FN(add_cpu), 0));
  ASSERT_TRUE(l != NULL);
  disp_tensor *a = cpu_tensor(), *b = cpu_tensor();
  g_cpu_calls = 0;
  ASSERT_EQ_INT(call_four_ways(op, a, b), 0);
  ASSERT_EQ_INT(g_cpu_calls, 4);
  disp_tensor_release(a);
  disp_tensor_release(b);
  disp_library_free(l);
  return 0;
}

TEST(boxed_kernel_all_four_ways) {
  const disp_op *op = define("add2(Tensor self, Tensor other) -> Tensor", "tc::add2");
  disp_library *l = impl(DISP_KEY_CPU, "add2", disp_kernel_boxed(add_boxed, NULL, NULL));
  ASSERT_TRUE(op && l);
  disp_tensor *a = cpu_tensor(), *b = cpu_tensor();
  g_boxed_calls = 0;
  ASSERT_EQ_INT(call_four_ways(op, a, b), 0);
  ASSERT_EQ_INT(g_boxed_calls, 4);
  /* The boxed kernel saw the set after the built-in fallthroughs and the
   * autograd fallback: just CPU. */
  char buf[256];
  disp_keyset_format(g_seen_ks, buf, sizeof buf);
  ASSERT_EQ_STR(buf, "DispatchKeySet(CPU)");
  disp_tensor_release(a);
  disp_tensor_release(b);
  disp_library_free(l);
  return 0;
}

TEST(kernel_with_keyset_and_redispatch) {
  const disp_op *op = define("add3(Tensor self, Tensor other) -> Tensor", "tc::add3");
  g_add_op = op;
  disp_library *cpu = impl(DISP_KEY_CPU, "add3", disp_kernel_unboxed(DISP_FN(add_cpu_ks), DISP_KERNEL_WITH_KEYSET));
  disp_library *ag = impl(DISP_KEY_AUTOGRAD, "add3", disp_kernel_unboxed(DISP_FN(add_autograd), DISP_KERNEL_WITH_KEYSET));
  ASSERT_TRUE(op && cpu && ag);
  disp_tensor *a = cpu_tensor(), *b = cpu_tensor();
  g_cpu_calls = g_autograd_calls = 0;
  ASSERT_EQ_INT(call_four_ways(op, a, b), 0);
  ASSERT_EQ_INT(g_autograd_calls, 4);
  ASSERT_EQ_INT(g_cpu_calls, 4);
  char buf[256];
  disp_keyset_format(g_seen_ks, buf, sizeof buf);
  ASSERT_EQ_STR(buf, "DispatchKeySet(CPU)");
  /* Below autograd, the Autograd kernel is skipped. */
  disp_tls_state saved = disp_tls_below_autograd_push();
  disp_tensor *out = NULL;
  ASSERT_OK(disp_call(op, a, b, &out));
  disp_tls_restore(saved);
  ASSERT_EQ_INT(g_autograd_calls, 4);
  ASSERT_EQ_INT(g_cpu_calls, 5);
  disp_tensor_release(out);
  /* So it is in inference mode, and with the key excluded by hand. */
  saved = disp_tls_inference_mode_push(1);
  ASSERT_OK(disp_call(op, a, b, &out));
  disp_tls_restore(saved);
  disp_tensor_release(out);
  saved = disp_tls_exclude_push(disp_keyset_of(DISP_KEY_AUTOGRAD_CPU));
  ASSERT_OK(disp_call(op, a, b, &out));
  disp_tls_restore(saved);
  disp_tensor_release(out);
  ASSERT_EQ_INT(g_autograd_calls, 4);
  ASSERT_TRUE(disp_grad_mode_enabled());
  disp_tensor_release(a);
  disp_tensor_release(b);
  disp_library_free(ag);
  disp_library_free(cpu);
  return 0;
}

TEST(include_guard_adds_a_key) {
  const disp_op *op = define("add4(Tensor self, Tensor other) -> Tensor", "tc::add4");
  disp_library *cpu = impl(DISP_KEY_CPU, "add4", disp_kernel_unboxed(DISP_FN(add_cpu), 0));
  disp_library *pu = impl(DISP_KEY_PRIVATEUSE1, "add4", disp_kernel_boxed(add_boxed, NULL, NULL));
  ASSERT_TRUE(op && cpu && pu);
  disp_tensor *a = cpu_tensor(), *b = cpu_tensor(), *out = NULL;
  /* A CPU tensor plus an included PrivateUse1 key dispatches to PrivateUse1,
   * the higher backend. */
  g_boxed_calls = 0;
  disp_tls_state saved = disp_tls_include_push(disp_keyset_of(DISP_KEY_PRIVATEUSE1));
  ASSERT_OK(disp_call(op, a, b, &out));
  disp_tls_restore(saved);
  ASSERT_EQ_INT(g_boxed_calls, 1);
  disp_tensor_release(out);
  /* Restored: back to CPU. */
  ASSERT_OK(disp_call(op, a, b, &out));
  ASSERT_EQ_INT(g_boxed_calls, 1);
  disp_tensor_release(out);
  ASSERT_TRUE(disp_keyset_equal(disp_tls_included(),
                                disp_keyset_or(disp_keyset_of(DISP_KEY_BACKEND_SELECT),
                                               disp_keyset_of(DISP_KEY_AD_INPLACE_OR_VIEW))));
  disp_tensor_release(a);
  disp_tensor_release(b);
  disp_library_free(pu);
  disp_library_free(cpu);
  return 0;
}

TEST(missing_kernel_message) {
  const disp_op *op = define("add5(Tensor self, Tensor other) -> Tensor", "tc::add5");
  disp_library *cpu = impl(DISP_KEY_CPU, "add5", disp_kernel_unboxed(DISP_FN(add_cpu), 0));
  ASSERT_TRUE(op && cpu);
  int64_t sizes[1] = {2};
  disp_tensor *m = NULL, *out = NULL;
  ASSERT_OK(disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_META, -1), &m));
  ASSERT_STATUS(disp_call(op, m, m, &out), DISP_ERR_NO_KERNEL);
  ASSERT_STARTS_WITH(disp_last_error(), "Could not run 'tc::add5' with arguments from the 'Meta' backend.");
  ASSERT_CONTAINS(disp_last_error(), "'tc::add5' is only available for these backends: [CPU, BackendSelect,");
  ASSERT_TRUE(out == NULL);
  disp_stack *s = disp_stack_new();
  disp_stack_push_tensor(s, m);
  disp_stack_push_tensor(s, m);
  ASSERT_STATUS(disp_call_boxed(op, s), DISP_ERR_NO_KERNEL);
  ASSERT_EQ_INT(disp_stack_size(s), 0);
  disp_stack_free(s);
  ASSERT_EQ_INT(disp_tensor_refcount(m), 1);
  disp_tensor_release(m);
  disp_library_free(cpu);
  return 0;
}

TEST(no_tensor_arguments_message) {
  const disp_op *op = define("make(int n) -> Tensor", "tc::make");
  ASSERT_TRUE(op != NULL);
  disp_tensor *out = NULL;
  ASSERT_STATUS(disp_call(op, (int64_t)3, &out), DISP_ERR_NO_KERNEL);
  ASSERT_STARTS_WITH(disp_last_error(),
                     "There were no tensor arguments to this function (e.g., you passed an empty list "
                     "of Tensors), but no fallback function is registered for schema tc::make.");
  return 0;
}

TEST(kernel_error_gets_op_name_and_nothing_leaks) {
  const disp_op *op = define("add6(Tensor self, Tensor other) -> Tensor", "tc::add6");
  disp_library *cpu = impl(DISP_KEY_CPU, "add6", disp_kernel_unboxed(DISP_FN(failing_kernel), 0));
  ASSERT_TRUE(op && cpu);
  disp_tensor *a = cpu_tensor(), *out = NULL;
  disp_status st;
  DISP_CALL(st, op, disp_tensor_keyset(a), (disp_tensor *, disp_tensor *, disp_tensor **), a, a, &out);
  ASSERT_EQ_INT(st, DISP_ERR_KERNEL);
  ASSERT_EQ_STR(disp_last_error(), "tc::add6: the device is on fire");
  disp_stack *s = disp_stack_new();
  disp_stack_push_tensor(s, a);
  disp_stack_push_tensor(s, a);
  ASSERT_STATUS(disp_call_boxed(op, s), DISP_ERR_KERNEL);
  ASSERT_EQ_STR(disp_last_error(), "tc::add6: the device is on fire");
  ASSERT_EQ_INT(disp_stack_size(s), 0);
  disp_stack_free(s);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  disp_tensor_release(a);
  disp_library_free(cpu);
  return 0;
}

/* Many argument types, through libffi both ways. */
typedef struct seen_args {
  int64_t n;
  double f;
  bool b;
  int64_t list[4];
  size_t list_len;
  disp_scalar s;
  char name[32];
  int name_none;
  int32_t dtype;
} seen_args;
static seen_args g_seen;

static disp_status many_unboxed(disp_tensor *self, int64_t n, double f, bool b, disp_int_list l,
                                disp_scalar s, const char *name, int32_t dtype, disp_tensor **out,
                                int64_t *count) {
  g_seen.n = n;
  g_seen.f = f;
  g_seen.b = b;
  g_seen.list_len = l.len;
  for (size_t i = 0; i < l.len && i < 4; i++) g_seen.list[i] = l.data[i];
  g_seen.s = s;
  g_seen.name_none = name == NULL;
  snprintf(g_seen.name, sizeof g_seen.name, "%s", name ? name : "");
  g_seen.dtype = dtype;
  *out = disp_tensor_retain(self);
  *count = n + 1;
  return DISP_OK;
}

typedef disp_status (*many_fn)(disp_tensor *, int64_t, double, bool, disp_int_list, disp_scalar,
                               const char *, int32_t, disp_tensor **, int64_t *);

TEST(many_types_through_libffi) {
  const disp_op *op = define(
      "many(Tensor self, int n, float f, bool b, int[] l, Scalar s, str? name=None, ScalarType? dtype=None) -> (Tensor, int)",
      "tc::many");
  disp_library *cpu = impl(DISP_KEY_CPU, "many", disp_kernel_unboxed(DISP_FN(many_unboxed), 0));
  ASSERT_TRUE(op && cpu);
  disp_tensor *a = cpu_tensor();
  /* Boxed call of the unboxed kernel, defaults filled from the schema. */
  disp_stack *s = disp_stack_new();
  int64_t l[3] = {4, 5, 6};
  disp_stack_push_tensor(s, a);
  disp_stack_push_int(s, 41);
  disp_stack_push_double(s, 2.5);
  disp_stack_push_bool(s, true);
  disp_stack_push_int_list(s, l, 3);
  disp_stack_push_scalar(s, disp_scalar_double(-1.5));
  ASSERT_OK(disp_stack_fill_defaults(op, s, 6));
  ASSERT_EQ_INT(disp_stack_size(s), 8);
  ASSERT_OK(disp_call_boxed(op, s));
  ASSERT_EQ_INT(disp_stack_size(s), 2);
  ASSERT_TRUE(disp_stack_at(s, 0)->u.tensor == a);
  ASSERT_EQ_INT(disp_stack_at(s, 1)->u.i, 42);
  ASSERT_EQ_INT(g_seen.n, 41);
  ASSERT_TRUE(g_seen.f == 2.5 && g_seen.b);
  ASSERT_EQ_INT(g_seen.list_len, 3);
  ASSERT_EQ_INT(g_seen.list[2], 6);
  ASSERT_TRUE(g_seen.s.kind == DISP_SCALAR_DOUBLE && g_seen.s.v.d == -1.5);
  ASSERT_TRUE(g_seen.name_none);
  ASSERT_EQ_INT(g_seen.dtype, -1);
  disp_stack_clear(s);
  /* Through the typed entry point (libffi closure) with every argument. */
  disp_fn fn = NULL;
  ASSERT_OK(disp_op_typed_entry(op, &fn));
  disp_tensor *out = NULL;
  int64_t count = 0;
  disp_int_list il = {l, 2};
  ASSERT_OK(((many_fn)fn)(a, 7, 0.25, false, il, disp_scalar_int(9), "hi", DISP_DTYPE_FLOAT64, &out, &count));
  ASSERT_TRUE(out == a);
  ASSERT_EQ_INT(count, 8);
  ASSERT_EQ_STR(g_seen.name, "hi");
  ASSERT_EQ_INT(g_seen.dtype, DISP_DTYPE_FLOAT64);
  ASSERT_TRUE(g_seen.s.kind == DISP_SCALAR_INT && g_seen.s.v.i == 9);
  disp_tensor_release(out);
  /* Wrong types on the stack: a clear error, the stack emptied, nothing leaked. */
  disp_stack_push_tensor(s, a);
  disp_stack_push_double(s, 1.0); /* n must be an int */
  disp_stack_push_double(s, 2.5);
  disp_stack_push_bool(s, true);
  disp_stack_push_int_list(s, l, 3);
  disp_stack_push_scalar(s, disp_scalar_int(1));
  disp_stack_push_none(s);
  disp_stack_push_none(s);
  ASSERT_STATUS(disp_call_boxed(op, s), DISP_ERR_TYPE);
  ASSERT_CONTAINS(disp_last_error(), "tc::many");
  ASSERT_EQ_STR(disp_last_error(), "tc::many: argument 'n' (position 2) must be int, not float");
  ASSERT_EQ_INT(disp_stack_size(s), 0);
  /* Too few arguments. */
  disp_stack_push_tensor(s, a);
  ASSERT_STATUS(disp_call_boxed(op, s), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "expects 8 arguments");
  ASSERT_EQ_INT(disp_stack_size(s), 0); /* the failed call emptied it */
  ASSERT_STATUS(disp_stack_fill_defaults(op, s, 1), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_stack_fill_defaults: given is 1, but the stack holds 0 values");
  disp_stack_push_tensor(s, a);
  ASSERT_STATUS(disp_stack_fill_defaults(op, s, 1), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_INT(disp_stack_size(s), 1); /* defaults pushed before the missing one are dropped again */
  ASSERT_CONTAINS(disp_last_error(), "missing value for argument 'n'");
  disp_stack_free(s);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  disp_tensor_release(a);
  disp_library_free(cpu);
  return 0;
}

/* Reads what the trace printed to stderr while `fn` ran. */
static char *capture_stderr(void (*fn)(void)) {
  fflush(stderr);
  FILE *tmp = tmpfile();
  int saved = dup(2);
  dup2(fileno(tmp), 2);
  fn();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  long n = ftell(tmp);
  rewind(tmp);
  char *buf = calloc(1, (size_t)n + 1);
  if (fread(buf, 1, (size_t)n, tmp) != (size_t)n) buf[0] = '\0';
  fclose(tmp);
  return buf;
}

static const disp_op *g_trace_op;
static void traced_calls(void) {
  disp_tensor *a = cpu_tensor(), *out = NULL;
  disp_trace_set(1);
  disp_call(g_trace_op, a, a, &out);
  disp_tensor_release(out);
  disp_stack *s = disp_stack_new();
  disp_stack_push_tensor(s, a);
  disp_stack_push_tensor(s, a);
  disp_call_boxed(g_trace_op, s);
  disp_trace_set(0);
  disp_stack_free(s);
  disp_tensor_release(a);
}

TEST(trace_matches_pytorch_format) {
  const disp_op *op = define("add7(Tensor self, Tensor other) -> Tensor", "tc::add7");
  g_add_op = op;
  g_trace_op = op;
  disp_library *cpu = impl(DISP_KEY_CPU, "add7", disp_kernel_unboxed(DISP_FN(add_cpu), 0));
  disp_library *ag = impl(DISP_KEY_AUTOGRAD_CPU, "add7", disp_kernel_unboxed(DISP_FN(add_autograd), DISP_KERNEL_WITH_KEYSET));
  ASSERT_TRUE(op && cpu && ag);
  char *text = capture_stderr(traced_calls);
  ASSERT_EQ_STR(text,
                "[call] op=[tc::add7], key=[AutogradCPU]\n"
                " [redispatch] op=[tc::add7], key=[CPU]\n"
                "[callBoxed] op=[tc::add7], key=[AutogradCPU]\n"
                " [redispatch] op=[tc::add7], key=[CPU]\n");
  free(text);
  disp_library_free(ag);
  disp_library_free(cpu);
  return 0;
}

TEST(autograd_fallback_redispatches_boxed_below_autograd) {
  /* No autograd kernel: the built-in fallback runs at AutogradCPU and
   * passes on the set below autograd. */
  const disp_op *op = define("add8(Tensor self, Tensor other) -> Tensor", "tc::add8");
  g_trace_op = op;
  disp_library *cpu = impl(DISP_KEY_CPU, "add8", disp_kernel_unboxed(DISP_FN(add_cpu), 0));
  ASSERT_TRUE(op && cpu);
  char *text = capture_stderr(traced_calls);
  ASSERT_EQ_STR(text,
                "[call] op=[tc::add8], key=[AutogradCPU]\n"
                " [redispatchBoxed] op=[tc::add8], key=[CPU]\n"
                "[callBoxed] op=[tc::add8], key=[AutogradCPU]\n"
                " [redispatchBoxed] op=[tc::add8], key=[CPU]\n");
  free(text);
  disp_library_free(cpu);
  return 0;
}

TEST(unsupported_types_are_boxed_only) {
  const disp_op *op = define("dicty(Tensor self, Dict(str, Tensor) d) -> Tensor", "tc::dicty");
  ASSERT_TRUE(op != NULL);
  disp_fn fn = NULL;
  ASSERT_STATUS(disp_op_typed_entry(op, &fn), DISP_ERR_TYPE);
  ASSERT_CONTAINS(disp_last_error(), "tc::dicty");
  return 0;
}

/* Note [Calling from a register plan]: signatures whose arguments all fit
 * in registers skip ffi_call. Each of these three fits, and together they
 * cover every C type the plan places (SSE and mixed eightbytes, a
 * sign-extended enum, two-register structs, the leading key set); each is
 * called boxed (the plan) and through a typed entry (closure, then the plan). */
static struct {
  double f, g;
  bool g_has;
  disp_scalar s;
  int32_t dtype;
  bool b;
  disp_opt_device d;
  disp_opt_bool c;
  disp_opt_int n;
  disp_keyset ks;
} g_plan;

static disp_status plan_sse(disp_tensor *self, double f, disp_opt_double g, disp_scalar s, disp_tensor **out) {
  g_plan.f = f, g_plan.g = g.value, g_plan.g_has = g.has_value, g_plan.s = s;
  *out = disp_tensor_retain(self);
  return DISP_OK;
}
static disp_status plan_enum(disp_tensor *self, int32_t dtype, bool b, disp_opt_device d, disp_tensor **out) {
  g_plan.dtype = dtype, g_plan.b = b, g_plan.d = d;
  *out = disp_tensor_retain(self);
  return DISP_OK;
}
static disp_status plan_ks(disp_keyset ks, disp_tensor *self, disp_opt_bool c, disp_opt_int n, disp_tensor **out) {
  g_plan.ks = ks, g_plan.c = c, g_plan.n = n;
  *out = disp_tensor_retain(self);
  return DISP_OK;
}

typedef disp_status (*plan_sse_fn)(disp_tensor *, double, disp_opt_double, disp_scalar, disp_tensor **);
typedef disp_status (*plan_enum_fn)(disp_tensor *, int32_t, bool, disp_opt_device, disp_tensor **);
typedef disp_status (*plan_ks_fn)(disp_tensor *, disp_opt_bool, disp_opt_int, disp_tensor **);

/* Runs the boxed call on `s` (arguments pushed) and checks it returned `a`. */
static int boxed_returns(const disp_op *op, disp_stack *s, disp_tensor *a) {
  if (disp_call_boxed(op, s) != DISP_OK || disp_stack_size(s) != 1 || disp_stack_at(s, 0)->u.tensor != a) return 0;
  disp_stack_clear(s);
  return 1;
}

TEST(register_plan_passes_every_type) {
  const disp_op *o1 = define("plan_sse(Tensor self, float f, float? g, Scalar s) -> Tensor", "tc::plan_sse");
  const disp_op *o2 = define("plan_enum(Tensor self, ScalarType? dtype, bool b, Device? d) -> Tensor", "tc::plan_enum");
  const disp_op *o3 = define("plan_ks(Tensor self, bool? c, int? n) -> Tensor", "tc::plan_ks");
  disp_library *l1 = impl(DISP_KEY_CPU, "plan_sse", disp_kernel_unboxed(DISP_FN(plan_sse), 0));
  disp_library *l2 = impl(DISP_KEY_CPU, "plan_enum", disp_kernel_unboxed(DISP_FN(plan_enum), 0));
  disp_library *l3 = impl(DISP_KEY_CPU, "plan_ks", disp_kernel_unboxed(DISP_FN(plan_ks), DISP_KERNEL_WITH_KEYSET));
  ASSERT_TRUE(o1 && o2 && o3 && l1 && l2 && l3);
  disp_tensor *a = cpu_tensor(), *out = NULL;
  disp_stack *s = disp_stack_new();
  disp_fn f1, f2, f3;
  ASSERT_OK(disp_op_typed_entry(o1, &f1));
  ASSERT_OK(disp_op_typed_entry(o2, &f2));
  ASSERT_OK(disp_op_typed_entry(o3, &f3));
  /* Doubles in SSE registers, a float? split between SSE and integer, a Scalar in two. */
  disp_stack_push_tensor(s, a), disp_stack_push_double(s, 1.25), disp_stack_push_double(s, -3.5);
  disp_stack_push_scalar(s, disp_scalar_double(0.75));
  ASSERT_TRUE(boxed_returns(o1, s, a));
  ASSERT_TRUE(g_plan.f == 1.25 && g_plan.g == -3.5 && g_plan.g_has);
  ASSERT_TRUE(g_plan.s.kind == DISP_SCALAR_DOUBLE && g_plan.s.v.d == 0.75);
  disp_opt_double none_d = {0, false};
  ASSERT_OK(((plan_sse_fn)f1)(a, -2.0, none_d, disp_scalar_int(-7), &out));
  ASSERT_TRUE(out == a && g_plan.f == -2.0 && !g_plan.g_has && g_plan.s.kind == DISP_SCALAR_INT && g_plan.s.v.i == -7);
  disp_tensor_release(out);
  /* An enum of -1 (None) sign-extended, a bool, a Device? in two registers. */
  disp_stack_push_tensor(s, a), disp_stack_push_none(s), disp_stack_push_bool(s, true);
  disp_stack_push_device(s, DISP_BACKEND_CPU, 3);
  ASSERT_TRUE(boxed_returns(o2, s, a));
  ASSERT_TRUE(g_plan.dtype == -1 && g_plan.b && g_plan.d.has_value && g_plan.d.type == DISP_BACKEND_CPU &&
              g_plan.d.index == 3);
  disp_opt_device no_dev = {0, 0, false};
  ASSERT_OK(((plan_enum_fn)f2)(a, DISP_DTYPE_FLOAT64, false, no_dev, &out));
  ASSERT_TRUE(out == a && g_plan.dtype == DISP_DTYPE_FLOAT64 && !g_plan.b && !g_plan.d.has_value);
  disp_tensor_release(out);
  /* The key set first, then a bool? and an int?. */
  disp_stack_push_tensor(s, a), disp_stack_push_bool(s, true), disp_stack_push_int(s, -5);
  ASSERT_TRUE(boxed_returns(o3, s, a));
  ASSERT_TRUE(disp_keyset_has(g_plan.ks, DISP_KEY_CPU) && g_plan.c.has_value && g_plan.c.value &&
              g_plan.n.has_value && g_plan.n.value == -5);
  disp_opt_bool no_b = {false, false};
  disp_opt_int n9 = {9, true};
  ASSERT_OK(((plan_ks_fn)f3)(a, no_b, n9, &out));
  ASSERT_TRUE(out == a && !g_plan.c.has_value && g_plan.n.value == 9 && disp_keyset_has(g_plan.ks, DISP_KEY_CPU));
  disp_tensor_release(out);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  disp_stack_free(s);
  disp_tensor_release(a);
  disp_library_free(l1), disp_library_free(l2), disp_library_free(l3);
  return 0;
}

/* Note [Reused stacks]: a boxed kernel that makes a typed call into a boxed
 * kernel itself, deeper than the per-thread cache, gets a stack of its own
 * at every level and every value comes back. */
static const disp_op *g_nest_op;
static int g_nest_max;
static disp_status nest_boxed(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)op, (void)ks, (void)ud;
  int64_t depth = disp_stack_at(s, disp_stack_size(s) - 1)->u.i;
  if (depth > g_nest_max) g_nest_max = (int)depth;
  if (depth >= 7) {
    disp_stack_drop(s, 1);
    return DISP_OK;
  }
  disp_tensor *self = disp_stack_at(s, disp_stack_size(s) - 2)->u.tensor, *out = NULL;
  disp_status st;
  DISP_CALL(st, g_nest_op, disp_tensor_keyset(self), (disp_tensor *, int64_t, disp_tensor **), self, depth + 1, &out);
  if (st != DISP_OK) return st;
  /* The inner call left our values alone: ours are still self and depth. */
  if (disp_stack_size(s) != 2 || disp_stack_at(s, 1)->u.i != depth)
    return disp_set_error(DISP_ERR_KERNEL, "stack shared");
  disp_stack_drop(s, 2);
  return disp_stack_push_tensor_steal(s, out);
}

TEST(nested_boxed_calls_get_their_own_stacks) {
  g_nest_op = define("nest(Tensor self, int depth) -> Tensor", "tc::nest");
  disp_library *cpu = impl(DISP_KEY_CPU, "nest", disp_kernel_boxed(nest_boxed, NULL, NULL));
  ASSERT_TRUE(g_nest_op && cpu);
  disp_tensor *a = cpu_tensor(), *out = NULL;
  disp_status st;
  for (int round = 0; round < 3; round++) {
    DISP_CALL(st, g_nest_op, disp_tensor_keyset(a), (disp_tensor *, int64_t, disp_tensor **), a, (int64_t)0, &out);
    ASSERT_OK(st);
    ASSERT_TRUE(out == a);
    disp_tensor_release(out);
  }
  ASSERT_EQ_INT(g_nest_max, 7);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1); /* no stack kept a reference */
  disp_tensor_release(a);
  disp_library_free(cpu);
  return 0;
}

/* Note [Direct kernels]: the dispatcher owns DISP__KERNEL_INDIRECT. A
 * program that sets it on an unboxed kernel still gets its kernel called,
 * and a kernel with both functions is called unboxed by typed calls. */
TEST(direct_kernel_flag_is_the_dispatchers) {
  const disp_op *op = define("direct(Tensor self, Tensor other) -> Tensor", "tc::direct");
  disp_kernel k = disp_kernel_unboxed(DISP_FN(add_cpu), DISP__KERNEL_INDIRECT);
  disp_library *l = impl(DISP_KEY_CPU, "direct", k);
  ASSERT_TRUE(op && l);
  disp_tensor *a = cpu_tensor(), *b = cpu_tensor();
  g_cpu_calls = 0;
  ASSERT_EQ_INT(call_four_ways(op, a, b), 0);
  ASSERT_EQ_INT(g_cpu_calls, 4);
  disp_library_free(l);
  k.boxed = add_boxed; /* both: typed calls take the unboxed one (no boxed autograd fallback in between) */
  disp_library *ag = impl(DISP_KEY_AUTOGRAD, "direct", disp_kernel_fallthrough());
  ASSERT_TRUE(ag && (l = impl(DISP_KEY_CPU, "direct", k)) != NULL);
  g_cpu_calls = g_boxed_calls = 0;
  disp_tensor *out = NULL;
  disp_status st;
  DISP_CALL(st, op, disp_tensor_keyset(a), (disp_tensor *, disp_tensor *, disp_tensor **), a, b, &out);
  ASSERT_OK(st);
  ASSERT_TRUE(out == a);
  disp_tensor_release(out);
  ASSERT_EQ_INT(g_cpu_calls, 1);
  ASSERT_EQ_INT(g_boxed_calls, 0);
  disp_tensor_release(a);
  disp_tensor_release(b);
  disp_library_free(l);
  disp_library_free(ag);
  return 0;
}

static disp_status relu_boxed(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)op, (void)ks, (void)s, (void)ud;
  g_boxed_calls++;
  if (g_boxed_calls == 2) return disp_set_error(DISP_ERR_KERNEL, "boxed relu refused");
  return DISP_OK; /* leaves self as the return */
}

static disp_status relu_unboxed(disp_tensor *self, disp_tensor **out) {
  g_cpu_calls++;
  *out = disp_tensor_retain(self);
  return DISP_OK;
}

static disp_tensor *pu_tensor(void) {
  int64_t sizes[1] = {2};
  static int handle;
  disp_tensor *t = NULL;
  disp_tensor_new_opaque(sizes, 1, DISP_DTYPE_FLOAT32, DISP_LAYOUT_STRIDED,
                         disp_device_make(DISP_BACKEND_PRIVATEUSE1, 0), &handle, NULL, &t);
  return t;
}

/* Note [The boxed fast case]: a built-in operator whose kernel is boxed
 * leaves the fast case for the general path, errors named after the
 * operator and nothing left on the stack. */
TEST(boxed_call_of_a_builtin_with_a_boxed_kernel) {
  const disp_op *relu = NULL;
  ASSERT_OK(disp_op_find("aten::relu", &relu));
  disp_library *lib = NULL, *ag = NULL; /* no autograd kernel in between */
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_AUTOGRAD, __FILE__, __LINE__, &ag));
  ASSERT_OK(disp_library_impl(ag, "relu", disp_kernel_fallthrough(), NULL));
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &lib));
  ASSERT_OK(disp_library_impl(lib, "relu", disp_kernel_boxed(relu_boxed, NULL, NULL), NULL));
  disp_tensor *a = pu_tensor();
  ASSERT_TRUE(a != NULL);
  disp_stack *s = disp_stack_new();
  g_boxed_calls = 0;
  ASSERT_OK(disp_stack_push_tensor(s, a));
  ASSERT_OK(disp_call_boxed(relu, s));
  ASSERT_EQ_INT((int)disp_stack_size(s), 1);
  ASSERT_TRUE(disp_stack_at(s, 0)->u.tensor == a);
  disp_stack_clear(s);
  ASSERT_OK(disp_stack_push_tensor(s, a));
  ASSERT_STATUS(disp_call_boxed(relu, s), DISP_ERR_KERNEL);
  ASSERT_STARTS_WITH(disp_last_error(), "aten::relu: boxed relu refused");
  ASSERT_EQ_INT((int)disp_stack_size(s), 0);
  ASSERT_EQ_INT(g_boxed_calls, 2);
  disp_library_free(lib);
  /* The same operator with an unboxed kernel: the adapter. */
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &lib));
  ASSERT_OK(DISP_IMPL_ATEN(lib, relu, relu_unboxed));
  g_cpu_calls = 0;
  ASSERT_OK(disp_stack_push_tensor(s, a));
  ASSERT_OK(disp_call_boxed(relu, s));
  ASSERT_EQ_INT(g_cpu_calls, 1);
  ASSERT_TRUE(disp_stack_at(s, 0)->u.tensor == a);
  disp_stack_free(s);
  ASSERT_EQ_INT((int)disp_tensor_refcount(a), 1);
  disp_tensor_release(a);
  disp_library_free(lib);
  disp_library_free(ag);
  return 0;
}

/* A thread whose first lookup is a boxed call (the fast case registers it
 * as a reader out of line, then calls again). */
static void *first_call_boxed(void *arg) {
  const disp_op *op = arg;
  disp_tensor *a = cpu_tensor(), *b = cpu_tensor();
  disp_stack *s = disp_stack_new();
  disp_stack_push_tensor(s, a);
  disp_stack_push_tensor(s, b);
  intptr_t bad = disp_call_boxed(op, s) != DISP_OK || disp_stack_size(s) != 1 || disp_stack_at(s, 0)->u.tensor != a;
  disp_stack_free(s);
  disp_tensor_release(a);
  disp_tensor_release(b);
  return (void *)bad;
}

TEST(first_lookup_of_a_thread_is_a_boxed_call) {
  const disp_op *op = define("firstcall(Tensor self, Tensor other) -> Tensor", "tc::firstcall");
  disp_library *l = impl(DISP_KEY_CPU, "firstcall", disp_kernel_unboxed(DISP_FN(add_cpu), 0));
  ASSERT_TRUE(op && l);
  for (int i = 0; i < 2; i++) { /* the second starts where the first thread's counter was */
    pthread_t th;
    void *bad = (void *)1;
    ASSERT_EQ_INT(pthread_create(&th, NULL, first_call_boxed, (void *)op), 0);
    ASSERT_EQ_INT(pthread_join(th, &bad), 0);
    ASSERT_TRUE(bad == NULL);
  }
  disp_library_free(l);
  return 0;
}

/* disp_stack_clear: Tensors whose last reference the stack holds, shared
 * Tensors, a Tensor value holding NULL and owning values, in any order. */
TEST(stack_clear_releases_every_kind_of_value) {
  disp_tensor *shared = cpu_tensor();
  disp_stack *s = disp_stack_new();
  for (int round = 0; round < 2; round++) {
    disp_value null_tensor = {.tag = DISP_VALUE_TENSOR};
    ASSERT_OK(disp_stack_push_tensor_steal(s, cpu_tensor())); /* last reference */
    ASSERT_OK(disp_stack_push_string(s, "x"));
    ASSERT_OK(disp_stack_push_tensor(s, shared));
    ASSERT_OK(disp_stack_push_value_steal(s, &null_tensor));
    ASSERT_OK(disp_stack_push_int(s, 3));
    ASSERT_OK(disp_stack_push_tensor_steal(s, cpu_tensor()));
    ASSERT_OK(disp_stack_push_tensor(s, shared));
    ASSERT_EQ_INT((int)disp_tensor_refcount(shared), 3);
    disp_stack_clear(s);
    ASSERT_EQ_INT((int)disp_stack_size(s), 0);
    ASSERT_EQ_INT((int)disp_tensor_refcount(shared), 1);
  }
  disp_stack_clear(NULL);
  disp_stack_free(s);
  disp_tensor_release(shared);
  return 0;
}

/* Fixture, run in each case's process after the case. */
static int cleanup_library(void) {
  disp_library_free(g_def);
  g_def = NULL;
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(unboxed_kernel_all_four_ways),
    TEST_ENTRY(boxed_kernel_all_four_ways),
    TEST_ENTRY(kernel_with_keyset_and_redispatch),
    TEST_ENTRY(include_guard_adds_a_key),
    TEST_ENTRY(missing_kernel_message),
    TEST_ENTRY(no_tensor_arguments_message),
    TEST_ENTRY(kernel_error_gets_op_name_and_nothing_leaks),
    TEST_ENTRY(many_types_through_libffi),
    TEST_ENTRY(trace_matches_pytorch_format),
    TEST_ENTRY(autograd_fallback_redispatches_boxed_below_autograd),
    TEST_ENTRY(unsupported_types_are_boxed_only),
    TEST_ENTRY(register_plan_passes_every_type),
    TEST_ENTRY(nested_boxed_calls_get_their_own_stacks),
    TEST_ENTRY(direct_kernel_flag_is_the_dispatchers),
    TEST_ENTRY(boxed_call_of_a_builtin_with_a_boxed_kernel),
    TEST_ENTRY(first_lookup_of_a_thread_is_a_boxed_call),
    TEST_ENTRY(stack_clear_releases_every_kind_of_value),
    TEST_END};

TEST_MAIN_WITH(NULL, cleanup_library)
