/*
 * test_boxed_checks.c - boxed calls under bad input: values of the wrong
 * type, too few values, kernels that leave the wrong returns, typed entry
 * points that outlive their schema, long defaults, and whose message a
 * failed call shows. Every failure must leave the stack empty and every
 * reference count as it was.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <disp.h>

#include "test.h"

/* ---- helpers ------------------------------------------------------------ */

static void quiet(const char *msg, void *ud) { (void)msg, (void)ud; }

static disp_tensor *tensor(int64_t rows, int64_t cols) {
  int64_t sizes[2] = {rows, cols};
  disp_tensor *t = NULL;
  disp_tensor_empty(sizes, 2, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t);
  return t;
}

/* A tensor of `dt` on backend `b` holding `nbytes` of `data` (none: NULL). */
static disp_tensor *tensor_of(const int64_t *sizes, int nd, disp_dtype dt, disp_backend b, const void *data,
                              size_t nbytes) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, nd, dt, disp_device_make(b, -1), &t) != DISP_OK) return NULL;
  if (data) memcpy(disp_tensor_data_ptr(t), data, nbytes);
  return t;
}

static const disp_op *find(const char *name) {
  const disp_op *op = NULL;
  return disp_op_find(name, &op) == DISP_OK ? op : NULL;
}

static disp_library *def_lib(const char *ns, const char *schema) {
  disp_library *lib = NULL;
  if (disp_library_new(DISP_LIBRARY_DEF, ns, DISP_KEY_UNDEFINED, __FILE__, __LINE__, &lib) != DISP_OK) return NULL;
  if (disp_library_def(lib, schema, NULL) != DISP_OK) {
    disp_library_free(lib);
    return NULL;
  }
  return lib;
}

static disp_library *impl_lib(const char *ns, disp_key key, const char *name, disp_kernel k) {
  disp_library *lib = NULL;
  if (disp_library_new(DISP_LIBRARY_IMPL, ns, key, __FILE__, __LINE__, &lib) != DISP_OK) return NULL;
  if (disp_library_impl(lib, name, k, NULL) != DISP_OK) {
    disp_library_free(lib);
    return NULL;
  }
  return lib;
}

/* A boxed call that must fail with `status` and exactly `message`, leaving
 * the stack empty. */
#define ASSERT_BOXED_FAILS(op, stack, status, message)    \
  do {                                                    \
    ASSERT_STATUS(disp_call_boxed((op), (stack)), status); \
    ASSERT_EQ_STR(disp_last_error(), message);            \
    ASSERT_EQ_INT(disp_stack_size(stack), 0);             \
  } while (0)

/* ---- 1. argument values against the schema ------------------------------ */

TEST(builtin_tensor_slot_rejects_none_int_and_lists) {
  const disp_op *mm = find("aten::mm"), *relu = find("aten::relu");
  ASSERT_TRUE(mm && relu);
  disp_tensor *a = tensor(2, 2);
  disp_stack *s = disp_stack_new();

  disp_stack_push_tensor(s, a);
  disp_stack_push_none(s);
  ASSERT_BOXED_FAILS(mm, s, DISP_ERR_TYPE, "aten::mm: argument 'mat2' (position 2) must be Tensor, not None");

  disp_stack_push_int(s, 3);
  disp_stack_push_tensor(s, a);
  ASSERT_BOXED_FAILS(mm, s, DISP_ERR_TYPE, "aten::mm: argument 'self' (position 1) must be Tensor, not int");

  disp_tensor *both[2] = {a, a};
  disp_stack_push_tensor_list(s, both, 2);
  ASSERT_BOXED_FAILS(relu, s, DISP_ERR_TYPE, "aten::relu: argument 'self' (position 1) must be Tensor, not Tensor[]");

  /* The same through a redispatch. */
  disp_stack_push_none(s);
  ASSERT_STATUS(disp_redispatch_boxed(relu, disp_tensor_keyset(a), s), DISP_ERR_TYPE);
  ASSERT_EQ_STR(disp_last_error(), "aten::relu: argument 'self' (position 1) must be Tensor, not None");
  ASSERT_EQ_INT(disp_stack_size(s), 0);

  /* A redispatch whose top key is a fallthrough (a CPU tensor's key set
   * holds AutocastCPU, a fallthrough for relu) has nothing to run. */
  disp_stack_push_tensor(s, a);
  ASSERT_STATUS(disp_redispatch_boxed(relu, disp_tensor_keyset(a), s), DISP_ERR_INVALID_ARG);
  ASSERT_STARTS_WITH(disp_last_error(), "aten::relu: redispatched with a key set whose highest key, AutocastCPU, is a fallthrough");
  ASSERT_EQ_INT(disp_stack_size(s), 0);

  /* Nothing was released twice or kept: a good call still works. */
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  disp_stack_push_tensor(s, a);
  disp_stack_push_tensor(s, a);
  ASSERT_OK(disp_call_boxed(mm, s));
  ASSERT_EQ_INT(disp_stack_size(s), 1);
  disp_stack_free(s);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  disp_tensor_release(a);
  return 0;
}

TEST(too_few_values_empty_the_stack) {
  const disp_op *mm = find("aten::mm");
  disp_tensor *a = tensor(2, 2);
  disp_stack *s = disp_stack_new();
  disp_stack_push_tensor(s, a);
  ASSERT_BOXED_FAILS(mm, s, DISP_ERR_INVALID_ARG, "aten::mm expects 2 arguments on the stack, found 1");
  ASSERT_BOXED_FAILS(mm, s, DISP_ERR_INVALID_ARG, "aten::mm expects 2 arguments on the stack, found 0");
  disp_stack_free(s);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  disp_tensor_release(a);
  return 0;
}

TEST(optionals_lists_and_scalars_follow_the_schema) {
  const disp_op *linear = find("aten::linear"), *cat = find("aten::cat"), *add = find("aten::add.Tensor");
  ASSERT_TRUE(linear && cat && add);
  disp_tensor *a = tensor(2, 3), *w = tensor(4, 3);
  disp_stack *s = disp_stack_new();

  /* Tensor? holding None is fine. */
  disp_stack_push_tensor(s, a);
  disp_stack_push_tensor(s, w);
  disp_stack_push_none(s);
  ASSERT_OK(disp_call_boxed(linear, s));
  ASSERT_EQ_INT(disp_stack_size(s), 1);
  disp_stack_clear(s);

  /* Tensor[] elements are never None (Tensor?[] ones may be). */
  disp_tensor *with_null[2] = {a, NULL};
  disp_stack_push_tensor_list(s, with_null, 2);
  disp_stack_push_int(s, 0);
  ASSERT_BOXED_FAILS(cat, s, DISP_ERR_TYPE,
                     "aten::cat: argument 'tensors' (position 1) must be Tensor[], but its element 2 is None");
  int64_t ints[2] = {1, 2};
  disp_stack_push_int_list(s, ints, 2);
  disp_stack_push_int(s, 0);
  ASSERT_BOXED_FAILS(cat, s, DISP_ERR_TYPE, "aten::cat: argument 'tensors' (position 1) must be Tensor[], not int[]");
  disp_tensor *two[2] = {a, a};
  disp_stack_push_tensor_list(s, two, 2);
  disp_stack_push_double(s, 0.0); /* dim is an int: a float is not one */
  ASSERT_BOXED_FAILS(cat, s, DISP_ERR_TYPE, "aten::cat: argument 'dim' (position 2) must be int, not float");

  /* A Scalar is an int, a float or a bool; not a string, not None. */
  disp_stack_push_tensor(s, a);
  disp_stack_push_tensor(s, a);
  disp_stack_push_string(s, "2");
  ASSERT_BOXED_FAILS(add, s, DISP_ERR_TYPE, "aten::add.Tensor: argument 'alpha' (position 3) must be Scalar, not str");
  disp_stack_push_tensor(s, a);
  disp_stack_push_tensor(s, a);
  disp_stack_push_none(s);
  ASSERT_BOXED_FAILS(add, s, DISP_ERR_TYPE, "aten::add.Tensor: argument 'alpha' (position 3) must be Scalar, not None");
  disp_stack_push_tensor(s, a);
  disp_stack_push_tensor(s, a);
  disp_stack_push_int(s, 2);
  ASSERT_OK(disp_call_boxed(add, s));
  disp_stack_free(s);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  ASSERT_EQ_INT(disp_tensor_refcount(w), 1);
  disp_tensor_release(a);
  disp_tensor_release(w);
  return 0;
}

static int g_kernel_runs;

static disp_status count_boxed(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)op, (void)ks, (void)ud;
  g_kernel_runs++;
  const disp_value *first = disp_stack_peek(s, 2); /* returns its tensor argument */
  disp_tensor *a = first->tag == DISP_VALUE_TENSOR ? disp_tensor_retain(first->u.tensor) : NULL;
  disp_stack_drop(s, 3);
  disp_status st = disp_stack_push_tensor(s, a);
  disp_tensor_release(a);
  return st;
}

static disp_status count_unboxed(disp_tensor *a, int32_t dtype, double f, disp_tensor **out) {
  (void)dtype, (void)f;
  g_kernel_runs++;
  *out = disp_tensor_retain(a);
  return DISP_OK;
}

/* Boxed kernels and libffi see only checked stacks; C callers too. */
TEST(user_kernels_never_see_bad_values) {
  disp_library *def = def_lib("bc1", "f(Tensor a, ScalarType t, float f) -> Tensor");
  disp_library *boxed = impl_lib("bc1", DISP_KEY_CPU, "f", disp_kernel_boxed(count_boxed, NULL, NULL));
  const disp_op *op = find("bc1::f");
  ASSERT_TRUE(def && boxed && op);
  disp_tensor *a = tensor(1, 1);
  disp_stack *s = disp_stack_new();
  g_kernel_runs = 0;

  disp_stack_push_tensor(s, a);
  disp_stack_push_int(s, INT64_C(1) << 40);
  disp_stack_push_int(s, 1); /* an int where a float is expected: accepted, as unboxing does */
  ASSERT_BOXED_FAILS(op, s, DISP_ERR_TYPE,
                     "bc1::f: argument 't' (position 2) must be ScalarType, not the int 1099511627776 (out of range)");
  disp_stack_push_tensor(s, a);
  disp_stack_push_int(s, DISP_DTYPE_FLOAT32);
  disp_stack_push_int(s, 1);
  ASSERT_OK(disp_call_boxed(op, s));
  ASSERT_EQ_INT(g_kernel_runs, 1);
  disp_stack_clear(s);

  /* A NULL tensor from C is refused before packing, by Note [NULL arguments]. */
  disp_tensor *out = NULL;
  ASSERT_STATUS(disp_call(op, (disp_tensor *)NULL, (int32_t)DISP_DTYPE_FLOAT32, 1.0, &out), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_call: a is NULL (argument 1 of bc1::f, type Tensor)");
  ASSERT_EQ_INT(g_kernel_runs, 1);

  /* The unboxed kernel through libffi. */
  disp_library_free(boxed);
  disp_library *unboxed = impl_lib("bc1", DISP_KEY_CPU, "f", disp_kernel_unboxed(DISP_FN(count_unboxed), 0));
  ASSERT_TRUE(unboxed != NULL);
  disp_stack_push_tensor(s, a);
  disp_stack_push_none(s);
  disp_stack_push_double(s, 1.0);
  ASSERT_BOXED_FAILS(op, s, DISP_ERR_TYPE, "bc1::f: argument 't' (position 2) must be ScalarType, not None");
  ASSERT_EQ_INT(g_kernel_runs, 1);
  disp_stack_free(s);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  disp_tensor_release(a);
  disp_library_free(unboxed);
  disp_library_free(def);
  return 0;
}

/* ---- 13. what a boxed kernel leaves on the stack ------------------------ */

static int g_leave; /* what bad_returns leaves: 0 one tensor, 1 three values, 2 a string */

static disp_status bad_returns(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)op, (void)ks, (void)ud;
  disp_tensor *self = NULL;
  disp_status st = disp_stack_pop_tensor(s, &self);
  if (st != DISP_OK) return st;
  if (g_leave == 2) {
    disp_tensor_release(self);
    return disp_stack_push_string(s, "not a tensor");
  }
  if (g_leave == 1) {
    disp_stack_push_tensor(s, self);
    disp_stack_push_int(s, 7);
  }
  return disp_stack_push_tensor_steal(s, self);
}

TEST(boxed_kernel_returns_are_checked_on_every_path) {
  disp_library *def = def_lib("bc2", "g(Tensor a) -> Tensor");
  disp_library *cpu = impl_lib("bc2", DISP_KEY_CPU, "g", disp_kernel_boxed(bad_returns, NULL, NULL));
  const disp_op *op = find("bc2::g");
  ASSERT_TRUE(def && cpu && op);
  disp_tensor *a = tensor(1, 1), *out = NULL;
  disp_stack *s = disp_stack_new();
  const char *three = "bc2::g: the kernel left 3 values on the stack, but the schema declares 1 return";
  const char *str = "bc2::g: the kernel's return 1 must be Tensor, not str";
  for (g_leave = 1; g_leave <= 2; g_leave++) {
    const char *want = g_leave == 1 ? three : str;
    disp_stack_push_tensor(s, a);
    ASSERT_BOXED_FAILS(op, s, DISP_ERR_KERNEL, want);
    disp_stack_push_tensor(s, a);
    ASSERT_STATUS(disp_redispatch_boxed(op, disp_keyset_of(DISP_KEY_CPU), s), DISP_ERR_KERNEL);
    ASSERT_EQ_STR(disp_last_error(), want);
    ASSERT_EQ_INT(disp_stack_size(s), 0);
    /* The unboxed path reports the same kernel the same way. */
    ASSERT_STATUS(disp_call(op, a, &out), DISP_ERR_KERNEL);
    ASSERT_EQ_STR(disp_last_error(), want);
    ASSERT_TRUE(out == NULL);
    ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  }
  g_leave = 0;
  disp_stack_push_tensor(s, a);
  ASSERT_OK(disp_call_boxed(op, s));
  ASSERT_EQ_INT(disp_stack_size(s), 1);
  disp_stack_free(s);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  disp_tensor_release(a);
  disp_library_free(cpu);
  disp_library_free(def);
  return 0;
}

/* ---- 2. typed entry points after a redefinition ------------------------- */

static disp_status one_arg(disp_tensor *a, disp_tensor **out) {
  *out = disp_tensor_retain(a);
  return DISP_OK;
}

static disp_status three_args(disp_tensor *a, disp_tensor *b, int64_t n, disp_tensor **out0, disp_tensor **out1) {
  (void)n;
  *out0 = disp_tensor_retain(a);
  *out1 = disp_tensor_retain(b);
  return DISP_OK;
}

typedef disp_status (*one_fn)(disp_tensor *, disp_tensor **);
typedef disp_status (*three_fn)(disp_tensor *, disp_tensor *, int64_t, disp_tensor **, disp_tensor **);

TEST(typed_entry_is_tied_to_its_signature) {
  disp_library *def = def_lib("bc3", "h(Tensor a) -> Tensor");
  disp_library *cpu = impl_lib("bc3", DISP_KEY_CPU, "h", disp_kernel_unboxed(DISP_FN(one_arg), 0));
  const disp_op *op = find("bc3::h");
  ASSERT_TRUE(def && cpu && op);
  disp_fn old_fn = NULL, new_fn = NULL;
  ASSERT_OK(disp_op_typed_entry(op, &old_fn));
  disp_tensor *a = tensor(1, 1), *out = NULL, *out1 = NULL;

  /* Removed: the old entry fails cleanly. */
  disp_library_free(cpu);
  disp_library_free(def);
  ASSERT_STATUS(((one_fn)old_fn)(a, &out), DISP_ERR_OP_NOT_FOUND);
  ASSERT_EQ_STR(disp_last_error(), "bc3::h is no longer defined");

  /* Redefined with another signature: the old entry refuses without
   * writing anything; a new entry has the new signature. */
  def = def_lib("bc3", "h(Tensor a, Tensor b, int n) -> (Tensor, Tensor)");
  cpu = impl_lib("bc3", DISP_KEY_CPU, "h", disp_kernel_unboxed(DISP_FN(three_args), 0));
  ASSERT_TRUE(def && cpu && find("bc3::h") == op);
  ASSERT_STATUS(((one_fn)old_fn)(a, &out), DISP_ERR_MISMATCH);
  ASSERT_EQ_STR(disp_last_error(),
                "bc3::h: this typed entry point was made for the schema bc3::h(Tensor a) -> Tensor, but the "
                "operator has been redefined as bc3::h(Tensor a, Tensor b, int n) -> (Tensor, Tensor) since: get "
                "a new one from disp_op_typed_entry");
  ASSERT_TRUE(out == NULL);
  ASSERT_OK(disp_op_typed_entry(op, &new_fn));
  ASSERT_TRUE(new_fn != old_fn);
  ASSERT_OK(((three_fn)new_fn)(a, a, 5, &out, &out1));
  ASSERT_TRUE(out == a && out1 == a);
  disp_tensor_release(out);
  disp_tensor_release(out1);
  out = NULL;

  /* Redefined with the same C signature again: the first entry works. */
  disp_library_free(cpu);
  disp_library_free(def);
  def = def_lib("bc3", "h(Tensor x) -> Tensor");
  cpu = impl_lib("bc3", DISP_KEY_CPU, "h", disp_kernel_unboxed(DISP_FN(one_arg), 0));
  ASSERT_TRUE(def && cpu);
  ASSERT_OK(((one_fn)old_fn)(a, &out));
  ASSERT_TRUE(out == a);
  disp_tensor_release(out);
  ASSERT_STATUS(((three_fn)new_fn)(a, a, 5, &out, &out1), DISP_ERR_MISMATCH);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  disp_tensor_release(a);
  disp_library_free(cpu);
  disp_library_free(def);
  return 0;
}

/* ---- 9. defaults of any length ------------------------------------------ */

TEST(long_defaults_are_pushed_whole) {
  char schema[2048];
  int n = snprintf(schema, sizeof schema, "longdef(int[] x=[");
  for (int i = 0; i < 100; i++) n += snprintf(schema + n, sizeof schema - (size_t)n, "%s%d", i ? ", " : "", i);
  n += snprintf(schema + n, sizeof schema - (size_t)n, "], float[] y=[");
  for (int i = 0; i < 70; i++) n += snprintf(schema + n, sizeof schema - (size_t)n, "%s%d.5", i ? ", " : "", i);
  snprintf(schema + n, sizeof schema - (size_t)n, "], int[80] z=3, bool[3] w=[True, False, True]) -> ()");
  disp_library *def = def_lib("bc4", schema);
  const disp_op *op = find("bc4::longdef");
  ASSERT_TRUE(def && op);
  disp_stack *s = disp_stack_new();
  ASSERT_OK(disp_stack_fill_defaults(op, s, 0));
  ASSERT_EQ_INT(disp_stack_size(s), 4);
  disp_value *x = disp_stack_at(s, 0), *y = disp_stack_at(s, 1), *z = disp_stack_at(s, 2), *w = disp_stack_at(s, 3);
  ASSERT_TRUE(x->tag == DISP_VALUE_INT_LIST && y->tag == DISP_VALUE_DOUBLE_LIST && z->tag == DISP_VALUE_INT_LIST);
  ASSERT_EQ_INT(x->u.ints.len, 100);
  for (int i = 0; i < 100; i++) ASSERT_EQ_INT(x->u.ints.data[i], i);
  ASSERT_EQ_INT(y->u.doubles.len, 70);
  ASSERT_TRUE(y->u.doubles.data[69] == 69.5);
  ASSERT_EQ_INT(z->u.ints.len, 80);
  ASSERT_EQ_INT(z->u.ints.data[79], 3);
  ASSERT_TRUE(w->tag == DISP_VALUE_BOOL_LIST && w->u.bools.len == 3 && w->u.bools.data[2] && !w->u.bools.data[1]);
  disp_stack_free(s);
  disp_library_free(def);
  return 0;
}

TEST(missing_default_leaves_the_stack_as_given) {
  disp_library *def = def_lib("bc5", "k(int a, int b=2, int c) -> ()");
  const disp_op *op = find("bc5::k");
  ASSERT_TRUE(def && op);
  disp_stack *s = disp_stack_new();
  disp_stack_push_int(s, 1);
  ASSERT_STATUS(disp_stack_fill_defaults(op, s, 1), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "missing value for argument 'c'");
  ASSERT_EQ_INT(disp_stack_size(s), 1);
  disp_stack_free(s);
  disp_library_free(def);
  return 0;
}

TEST(schemas_beyond_the_limits_are_refused_not_cut) {
  char schema[4096];
  int n = snprintf(schema, sizeof schema, "wide(");
  for (int i = 0; i < 65; i++) n += snprintf(schema + n, sizeof schema - (size_t)n, "%sint a%d", i ? ", " : "", i);
  snprintf(schema + n, sizeof schema - (size_t)n, ") -> ()");
  disp_library *lib = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "bc6", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &lib));
  ASSERT_STATUS(disp_library_def(lib, schema, NULL), DISP_ERR_SCHEMA);
  ASSERT_CONTAINS(disp_last_error(), "bc6::wide has 65 arguments and 0 returns; libdispatch supports at most 64 and 16");
  const disp_op *op = NULL;
  ASSERT_TRUE(disp_op_find("bc6::wide", &op) != DISP_OK);
  disp_library_free(lib);
  return 0;
}

/* ---- 10. whose message a failed call shows ------------------------------ */

static const disp_op *g_b_op, *g_c_op;
static int g_b_sets_message;

static disp_status fails_with(disp_tensor *a, disp_tensor **out) {
  (void)a, (void)out;
  return disp_set_error(DISP_ERR_KERNEL, "boom");
}

static disp_status fails_silently(disp_tensor *a, disp_tensor **out) {
  (void)a, (void)out;
  return DISP_ERR_KERNEL;
}

/* c fails; b calls c (typed) and passes the failure on, or explains it. */
static disp_status calls_c(disp_tensor *a, disp_tensor **out) {
  disp_status st;
  DISP_CALL(st, g_c_op, disp_tensor_keyset(a), (disp_tensor *, disp_tensor **), a, out);
  if (st != DISP_OK && g_b_sets_message) return disp_set_error(st, "b gave up");
  return st;
}

/* a calls b with C arguments. */
static disp_status calls_b(disp_tensor *a, disp_tensor **out) { return disp_call(g_b_op, a, out); }

TEST(messages_are_about_the_failed_call_and_named_once) {
  disp_library *def = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "ke", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  ASSERT_OK(disp_library_def(def, "a(Tensor x) -> Tensor", NULL));
  ASSERT_OK(disp_library_def(def, "b(Tensor x) -> Tensor", NULL));
  ASSERT_OK(disp_library_def(def, "c(Tensor x) -> Tensor", NULL));
  ASSERT_OK(disp_library_def(def, "silent(Tensor x) -> Tensor", NULL));
  disp_library *cpu = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "ke", DISP_KEY_CPU, __FILE__, __LINE__, &cpu));
  ASSERT_OK(disp_library_impl(cpu, "a", disp_kernel_unboxed(DISP_FN(calls_b), 0), NULL));
  ASSERT_OK(disp_library_impl(cpu, "b", disp_kernel_unboxed(DISP_FN(calls_c), 0), NULL));
  ASSERT_OK(disp_library_impl(cpu, "c", disp_kernel_unboxed(DISP_FN(fails_with), 0), NULL));
  ASSERT_OK(disp_library_impl(cpu, "silent", disp_kernel_unboxed(DISP_FN(fails_silently), 0), NULL));
  const disp_op *a_op = find("ke::a"), *silent = find("ke::silent");
  g_b_op = find("ke::b");
  g_c_op = find("ke::c");
  disp_tensor *t = tensor(1, 1), *out = NULL;
  disp_stack *s = disp_stack_new();

  /* Through three levels the message names the operator that failed, once. */
  disp_stack_push_tensor(s, t);
  ASSERT_BOXED_FAILS(a_op, s, DISP_ERR_KERNEL, "ke::c: boom");
  ASSERT_STATUS(disp_call(a_op, t, &out), DISP_ERR_KERNEL);
  ASSERT_EQ_STR(disp_last_error(), "ke::c: boom");
  g_b_sets_message = 1;
  ASSERT_STATUS(disp_call(a_op, t, &out), DISP_ERR_KERNEL);
  ASSERT_EQ_STR(disp_last_error(), "ke::b: b gave up");
  g_b_sets_message = 0;

  /* A kernel without a message does not show the last failure's, on any path. */
  const char *silent_msg = "ke::silent: the kernel returned DISP_ERR_KERNEL without setting an error message";
  disp_stack_push_tensor(s, t);
  ASSERT_BOXED_FAILS(silent, s, DISP_ERR_KERNEL, silent_msg);
  ASSERT_STATUS(disp_call(a_op, t, &out), DISP_ERR_KERNEL); /* "ke::c: boom" again, not read */
  ASSERT_STATUS(disp_call(silent, t, &out), DISP_ERR_KERNEL);
  ASSERT_EQ_STR(disp_last_error(), silent_msg);
  disp_fn fn = NULL;
  ASSERT_OK(disp_op_typed_entry(silent, &fn));
  ASSERT_STATUS(disp_call(a_op, t, &out), DISP_ERR_KERNEL);
  ASSERT_STATUS(((one_fn)fn)(t, &out), DISP_ERR_KERNEL);
  ASSERT_EQ_STR(disp_last_error(), silent_msg);
  /* The typed fast path reads nothing before the kernel: it knows the
   * message it finds was read already, so it is not this call's. */
  disp_status st;
  DISP_CALL(st, silent, disp_tensor_keyset(t), (disp_tensor *, disp_tensor **), t, &out);
  ASSERT_STATUS(st, DISP_ERR_KERNEL);
  ASSERT_EQ_STR(disp_last_error(), "ke::silent: the kernel failed without setting an error message");
  ASSERT_TRUE(out == NULL);
  disp_stack_free(s);
  ASSERT_EQ_INT(disp_tensor_refcount(t), 1);
  disp_tensor_release(t);
  disp_library_free(cpu);
  disp_library_free(def);
  return 0;
}

/* A built-in operator's generated adapter knows the same. */
TEST(builtin_adapter_names_a_silent_kernel) {
  disp_library *cpu = impl_lib("aten", DISP_KEY_CPU, "relu", disp_kernel_unboxed(DISP_FN(fails_silently), 0));
  const disp_op *relu = find("aten::relu");
  ASSERT_TRUE(cpu && relu);
  disp_tensor *t = tensor(1, 1);
  disp_stack *s = disp_stack_new();
  disp_set_error(DISP_ERR_KERNEL, "an old failure");
  disp_stack_push_tensor(s, t);
  ASSERT_BOXED_FAILS(relu, s, DISP_ERR_KERNEL,
                     "aten::relu: the kernel returned DISP_ERR_KERNEL without setting an error message");
  disp_stack_free(s);
  disp_library_free(cpu);
  ASSERT_EQ_INT(disp_tensor_refcount(t), 1);
  disp_tensor_release(t);
  return 0;
}

/* ---- found by fuzz_boxed ------------------------------------------------ */

/* A float Scalar that no int64 holds (inf, NaN) reaches the kernels'
 * integer constants and stores: converted the way PyTorch's x86 build does
 * (INT64_MIN), never undefinedly (UBSan float-cast-overflow). */
TEST(float_scalars_beyond_int64_are_converted_defined) {
  const disp_op *clamp_min = find("aten::clamp_min");
  ASSERT_TRUE(clamp_min);
  int64_t two = 2;
  disp_tensor *ints = tensor_of(&two, 1, DISP_DTYPE_INT64, DISP_BACKEND_CPU, (int64_t[]){1, -2}, 16);
  ASSERT_TRUE(ints);
  disp_stack *s = disp_stack_new();
  disp_stack_push_tensor(s, ints);
  disp_stack_push_double(s, -INFINITY);
  ASSERT_OK(disp_call_boxed(clamp_min, s));
  ASSERT_EQ_INT(disp_stack_size(s), 1);
  disp_tensor *r = disp_stack_at(s, 0)->u.tensor;
  ASSERT_EQ_INT(disp_tensor_dtype(r), DISP_DTYPE_FLOAT32); /* int tensor, float scalar: float */
  const float *rv = disp_tensor_data_ptr(r);
  ASSERT_TRUE(rv[0] == 1.0f && rv[1] == -2.0f);
  disp_stack_clear(s);

  /* The same on Meta (the fuzzer's case, there with a half tensor). */
  disp_tensor *meta = tensor_of(NULL, 0, DISP_DTYPE_FLOAT32, DISP_BACKEND_META, NULL, 0);
  ASSERT_TRUE(meta);
  disp_stack_push_tensor(s, meta);
  disp_stack_push_double(s, NAN);
  ASSERT_OK(disp_call_boxed(clamp_min, s));
  ASSERT_EQ_INT(disp_tensor_dtype(disp_stack_at(s, 0)->u.tensor), DISP_DTYPE_FLOAT32);
  disp_stack_clear(s);

  /* A float tensor holding NaN and inf, copied to int64. */
  const disp_op *to = find("aten::to.dtype");
  ASSERT_TRUE(to);
  disp_tensor *f = tensor_of(&two, 1, DISP_DTYPE_FLOAT64, DISP_BACKEND_CPU, (double[]){NAN, INFINITY}, 16);
  ASSERT_TRUE(f);
  disp_stack_push_tensor(s, f);
  disp_stack_push_int(s, DISP_DTYPE_INT64);
  ASSERT_OK(disp_stack_fill_defaults(to, s, 2));
  ASSERT_OK(disp_call_boxed(to, s));
  const int64_t *tv = disp_tensor_data_ptr(disp_stack_at(s, 0)->u.tensor);
  ASSERT_EQ_INT(tv[0], INT64_MIN);
  ASSERT_EQ_INT(tv[1], INT64_MIN);
  disp_stack_free(s);
  disp_tensor_release(f);
  disp_tensor_release(meta);
  disp_tensor_release(ints);
  return 0;
}

/* An integral matrix product or convolution whose sum leaves the dtype's
 * range wraps as PyTorch's x86 build does (255 * 255 + 255 * 255 = 130050
 * is 2 in uint8), never converted undefinedly (UBSan float-cast-overflow). */
TEST(integral_gemm_sums_wrap) {
  const disp_op *mm = find("aten::mm"), *conv2d = find("aten::conv2d");
  ASSERT_TRUE(mm && conv2d);
  int64_t row[2] = {1, 2}, col[2] = {2, 1}, img[4] = {1, 1, 1, 2};
  const uint8_t max[2] = {255, 255};
  disp_tensor *a = tensor_of(row, 2, DISP_DTYPE_UINT8, DISP_BACKEND_CPU, max, 2);
  disp_tensor *b = tensor_of(col, 2, DISP_DTYPE_UINT8, DISP_BACKEND_CPU, max, 2);
  disp_tensor *x = tensor_of(img, 4, DISP_DTYPE_UINT8, DISP_BACKEND_CPU, max, 2);
  ASSERT_TRUE(a && b && x);
  disp_stack *s = disp_stack_new();
  disp_stack_push_tensor(s, a);
  disp_stack_push_tensor(s, b);
  ASSERT_OK(disp_call_boxed(mm, s));
  ASSERT_EQ_INT(*(const uint8_t *)disp_tensor_data_ptr(disp_stack_at(s, 0)->u.tensor), 2);
  disp_stack_clear(s);
  /* The fuzzer's case: conv2d(x, x) of uint8 tensors. */
  disp_stack_push_tensor(s, x);
  disp_stack_push_tensor(s, x);
  ASSERT_OK(disp_stack_fill_defaults(conv2d, s, 2));
  ASSERT_OK(disp_call_boxed(conv2d, s));
  ASSERT_EQ_INT(*(const uint8_t *)disp_tensor_data_ptr(disp_stack_at(s, 0)->u.tensor), 2);
  disp_stack_free(s);
  disp_tensor_release(x);
  disp_tensor_release(b);
  disp_tensor_release(a);
  return 0;
}

/* A value whose tag promises a payload that is NULL (a program can write
 * one through disp_stack_at or disp_stack_push_value_steal): refused by the
 * call, and released by the stack without a crash. */
TEST(values_holding_null_are_refused_and_released) {
  const disp_op *mm = find("aten::mm"), *cat = find("aten::cat");
  ASSERT_TRUE(mm && cat);
  disp_tensor *a = tensor(2, 2);
  disp_stack *s = disp_stack_new();
  disp_value v;
  memset(&v, 0, sizeof v);
  v.tag = DISP_VALUE_TENSOR;
  disp_stack_push_tensor(s, a);
  ASSERT_OK(disp_stack_push_value_steal(s, &v));
  ASSERT_BOXED_FAILS(mm, s, DISP_ERR_TYPE,
                     "aten::mm: argument 'mat2' (position 2) must be Tensor, not a Tensor value holding NULL");

  memset(&v, 0, sizeof v);
  v.tag = DISP_VALUE_TENSOR_LIST;
  v.u.tensors.len = 2;
  ASSERT_OK(disp_stack_push_value_steal(s, &v));
  disp_stack_push_int(s, 0);
  ASSERT_BOXED_FAILS(cat, s, DISP_ERR_TYPE,
                     "aten::cat: argument 'tensors' (position 1) must be Tensor[], not a Tensor[] value holding NULL");

  /* Cleared and freed with the stack, too. */
  memset(&v, 0, sizeof v);
  v.tag = DISP_VALUE_TENSOR;
  ASSERT_OK(disp_stack_push_value_steal(s, &v));
  v.tag = DISP_VALUE_TENSOR_LIST;
  v.u.tensors.len = 3;
  ASSERT_OK(disp_stack_push_value_steal(s, &v));
  disp_stack_clear(s);
  v.tag = DISP_VALUE_TENSOR;
  v.u.tensor = NULL;
  ASSERT_OK(disp_stack_push_value_steal(s, &v));
  disp_stack_free(s);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  disp_tensor_release(a);
  return 0;
}

/* Fixture, run in each case's process before the case. */
static int setup_quiet_warnings(void) {
  disp_set_warning_handler(quiet, NULL);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(builtin_tensor_slot_rejects_none_int_and_lists),
    TEST_ENTRY(too_few_values_empty_the_stack),
    TEST_ENTRY(optionals_lists_and_scalars_follow_the_schema),
    TEST_ENTRY(user_kernels_never_see_bad_values),
    TEST_ENTRY(boxed_kernel_returns_are_checked_on_every_path),
    TEST_ENTRY(typed_entry_is_tied_to_its_signature),
    TEST_ENTRY(long_defaults_are_pushed_whole),
    TEST_ENTRY(missing_default_leaves_the_stack_as_given),
    TEST_ENTRY(schemas_beyond_the_limits_are_refused_not_cut),
    TEST_ENTRY(messages_are_about_the_failed_call_and_named_once),
    TEST_ENTRY(builtin_adapter_names_a_silent_kernel),
    TEST_ENTRY(float_scalars_beyond_int64_are_converted_defined),
    TEST_ENTRY(values_holding_null_are_refused_and_released),
    TEST_ENTRY(integral_gemm_sums_wrap),
    TEST_END};

TEST_MAIN_WITH(setup_quiet_warnings, NULL)
