/*
 * test_typed_registration - kernels for built-in operators registered through
 * disp/aten_impl.h's checked forms (DISP_IMPL_ATEN, DISP_IMPL_ATEN_KEY,
 * DISP_ATEN_KERNEL) run on PrivateUse1, with and without the key set; and
 * the run-time path: a kernel whose declared schema disagrees with the def
 * is refused, the registry unchanged. That a wrong C signature does not
 * compile is tests/typed_reg_fail.c's part.
 */
#include <disp/aten_impl.h>

#include "test.h"

/* ---- a PrivateUse1 device in host memory -------------------------------- */

static const disp_device pu1 = {DISP_BACKEND_PRIVATEUSE1, 0};

/* A float32 PrivateUse1 vector holding v[0..n). */
static disp_tensor *pu1_vec(const float *v, int64_t n) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, pu1, &t) != DISP_OK) return NULL;
  memcpy(disp_tensor_data_ptr(t), v, (size_t)n * sizeof *v);
  return t;
}

static int g_add_calls, g_mul_calls, g_mm_calls;
static disp_keyset g_mul_ks;

/* self + alpha * other, elementwise on equal-sized float32 vectors. */
static disp_aten_add_Tensor_kernel pu1_add;
static disp_status pu1_add(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out) {
  g_add_calls++;
  int64_t n = disp_tensor_numel(self);
  disp_tensor *r = NULL;
  disp_status st = disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, pu1, &r);
  if (st != DISP_OK) return st;
  const float *a = disp_tensor_data_ptr(self), *b = disp_tensor_data_ptr(other);
  float *c = disp_tensor_data_ptr(r), k = (float)disp_scalar_to_double(alpha);
  for (int64_t i = 0; i < n; i++) c[i] = a[i] + k * b[i];
  *out = r;
  return DISP_OK;
}

/* The key-set form: records the set it was called with. */
static disp_aten_mul_Tensor_kernel_ks pu1_mul;
static disp_status pu1_mul(disp_keyset ks, disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  g_mul_calls++;
  g_mul_ks = ks;
  int64_t n = disp_tensor_numel(self);
  disp_tensor *r = NULL;
  disp_status st = disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, pu1, &r);
  if (st != DISP_OK) return st;
  const float *a = disp_tensor_data_ptr(self), *b = disp_tensor_data_ptr(other);
  float *c = disp_tensor_data_ptr(r);
  for (int64_t i = 0; i < n; i++) c[i] = a[i] * b[i];
  *out = r;
  return DISP_OK;
}

/* Not a matrix product: a marker result ([n] filled with 7) is enough to
 * tell this kernel ran. */
static disp_aten_mm_kernel pu1_mm;
static disp_status pu1_mm(disp_tensor *self, disp_tensor *mat2, disp_tensor **out) {
  (void)mat2;
  g_mm_calls++;
  float seven[3] = {7, 7, 7};
  *out = pu1_vec(seven, disp_tensor_numel(self) < 3 ? disp_tensor_numel(self) : 3);
  return *out ? DISP_OK : DISP_ERR_NO_MEMORY;
}

/* PrivateUse1 memory is the CPU allocator's: kernels read it directly. */
static int pu1_memory(void) {
  return disp_allocator_register(DISP_BACKEND_PRIVATEUSE1, disp_allocator_get(DISP_BACKEND_CPU)) == DISP_OK;
}

/* An IMPL library of aten on PrivateUse1 (and its memory); NULL on failure. */
static disp_library *pu1_aten_library(void) {
  disp_library *lib = NULL;
  if (!pu1_memory() ||
      disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &lib) != DISP_OK)
    return NULL;
  return lib;
}

static int floats_equal(const disp_tensor *t, const float *want, int64_t n) {
  if (!t || disp_tensor_numel(t) != n) return 0;
  const float *x = disp_tensor_data_ptr(t);
  for (int64_t i = 0; i < n; i++)
    if (x[i] != want[i]) return 0;
  return 1;
}

/* ---- compile-time checked registration ---------------------------------- */

TEST(impl_aten_runs_on_privateuse1) {
  disp_library *lib = pu1_aten_library();
  ASSERT_TRUE(lib != NULL);
  ASSERT_OK(DISP_IMPL_ATEN(lib, add_Tensor, pu1_add));
  const float av[3] = {1, 2, 3}, bv[3] = {10, 20, 30}, want[3] = {21, 42, 63};
  disp_tensor *a = pu1_vec(av, 3), *b = pu1_vec(bv, 3), *r = NULL;
  ASSERT_TRUE(a && b);
  g_add_calls = 0;
  ASSERT_OK(disp_aten_add_Tensor(a, b, disp_scalar_int(2), &r));
  ASSERT_EQ_INT(g_add_calls, 1);
  ASSERT_TRUE(floats_equal(r, want, 3));
  ASSERT_EQ_INT(disp_tensor_device(r).type, DISP_BACKEND_PRIVATEUSE1);
  disp_tensor_release(r);
  r = NULL;
  /* Boxed callers reach it through the operator's adapter, with the same C type. */
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find(DISP_ATEN_NAME_add_Tensor, &op));
  disp_stack *s = disp_stack_new();
  ASSERT_TRUE(s != NULL);
  ASSERT_OK(disp_stack_push_tensor(s, a));
  ASSERT_OK(disp_stack_push_tensor(s, b));
  ASSERT_OK(disp_stack_push_scalar(s, disp_scalar_int(2)));
  ASSERT_OK(disp_call_boxed(op, s));
  ASSERT_EQ_INT(g_add_calls, 2);
  ASSERT_OK(disp_stack_pop_tensor(s, &r));
  ASSERT_TRUE(floats_equal(r, want, 3));
  disp_tensor_release(r);
  r = NULL;
  disp_stack_free(s);
  /* Gone with its library: add's composite kernel takes PrivateUse1 again,
   * and finds no empty_strided there. */
  disp_library_free(lib);
  ASSERT_EQ_INT(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1), 0);
  ASSERT_STATUS(disp_aten_add_Tensor(a, b, disp_scalar_int(2), &r), DISP_ERR_NO_KERNEL);
  ASSERT_CONTAINS(disp_last_error(), "with arguments from the 'PrivateUse1' backend");
  ASSERT_EQ_INT(g_add_calls, 2);
  ASSERT_TRUE(r == NULL);
  disp_tensor_release(a);
  disp_tensor_release(b);
  return 0;
}

TEST(impl_aten_takes_the_key_set_form) {
  disp_library *lib = pu1_aten_library();
  ASSERT_TRUE(lib != NULL);
  ASSERT_OK(DISP_IMPL_ATEN(lib, mul_Tensor, pu1_mul));
  const float av[2] = {3, -1}, bv[2] = {4, 5}, want[2] = {12, -5};
  disp_tensor *a = pu1_vec(av, 2), *b = pu1_vec(bv, 2), *r = NULL;
  ASSERT_TRUE(a && b);
  g_mul_calls = 0;
  g_mul_ks.repr = 0;
  ASSERT_OK(disp_aten_mul_Tensor(a, b, &r));
  ASSERT_EQ_INT(g_mul_calls, 1);
  ASSERT_TRUE(floats_equal(r, want, 2));
  /* Registered with DISP_KERNEL_WITH_KEYSET: the set arrives first. */
  ASSERT_TRUE(disp_keyset_has(g_mul_ks, DISP_KEY_PRIVATEUSE1));
  disp_tensor_release(r);
  disp_tensor_release(a);
  disp_tensor_release(b);
  disp_library_free(lib);
  return 0;
}

TEST(impl_aten_key_on_an_explicit_key) {
  ASSERT_TRUE(pu1_memory());
  /* A fragment of aten has no key of its own: the explicit form names one. */
  disp_library *frag = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_FRAGMENT, "aten", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &frag));
  ASSERT_OK(DISP_IMPL_ATEN_KEY(frag, DISP_KEY_PRIVATEUSE1, mm, pu1_mm));
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find(DISP_ATEN_NAME_mm, &op));
  ASSERT_EQ_INT(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1), 1);
  ASSERT_EQ_INT(disp_op_has_kernel(op, DISP_KEY_COMPOSITE_IMPLICIT_AUTOGRAD), 0);
  const float v[2] = {1, 2}, want[2] = {7, 7};
  disp_tensor *a = pu1_vec(v, 2), *r = NULL;
  ASSERT_TRUE(a != NULL);
  g_mm_calls = 0;
  ASSERT_OK(disp_aten_mm(a, a, &r));
  ASSERT_EQ_INT(g_mm_calls, 1);
  ASSERT_TRUE(floats_equal(r, want, 2));
  disp_tensor_release(r);
  disp_tensor_release(a);
  disp_library_free(frag);
  ASSERT_EQ_INT(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1), 0);
  return 0;
}

TEST(aten_kernel_is_the_checked_kernel_value) {
  disp_kernel k = DISP_ATEN_KERNEL(add_Tensor, pu1_add);
  ASSERT_TRUE(k.unboxed == DISP_FN(pu1_add));
  ASSERT_TRUE(k.boxed == NULL);
  ASSERT_EQ_INT(k.flags, 0);
  ASSERT_EQ_STR(k.schema, DISP_ATEN_SCHEMA_add_Tensor);
  ASSERT_EQ_STR(k.schema, "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  k = DISP_ATEN_KERNEL(mul_Tensor, pu1_mul);
  ASSERT_EQ_INT(k.flags, DISP_KERNEL_WITH_KEYSET);
  /* A function pointer of the kernel type is checked the same way. */
  disp_aten_mm_kernel *fp = pu1_mm;
  k = DISP_ATEN_KERNEL(mm, fp);
  ASSERT_TRUE(k.unboxed == DISP_FN(pu1_mm));
  ASSERT_EQ_INT(k.flags, 0);
  /* The handle form: the registration can be removed on its own. */
  disp_library *lib = NULL;
  disp_registration *reg = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &lib));
  ASSERT_OK(disp_library_impl(lib, DISP_ATEN_NAME_mm, k, &reg));
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("aten::mm", &op));
  ASSERT_EQ_INT(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1), 1);
  disp_registration_remove(reg);
  ASSERT_EQ_INT(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1), 0);
  disp_library_free(lib);
  return 0;
}

/* The form a backend's source uses: a static block (drained at init). */
DISP_LIBRARY_IMPL(aten, PRIVATEUSE2, m) {
  DISP_IMPL_ATEN(m, mm, pu1_mm);
  DISP_IMPL_ATEN(m, mul_Tensor, pu1_mul);
}

TEST(impl_aten_in_a_static_block) {
  const disp_op *mm = NULL, *mul = NULL;
  ASSERT_OK(disp_op_find("aten::mm", &mm));
  ASSERT_OK(disp_op_find("aten::mul.Tensor", &mul));
  ASSERT_EQ_INT(disp_op_has_kernel(mm, DISP_KEY_PRIVATEUSE2), 1);
  ASSERT_EQ_INT(disp_op_has_kernel(mul, DISP_KEY_PRIVATEUSE2), 1);
  ASSERT_OK(disp_registry_check());
  return 0;
}

TEST(impl_aten_in_another_namespace_is_refused) {
  disp_library *lib = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "typedreg_ns", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &lib));
  ASSERT_STATUS(DISP_IMPL_ATEN(lib, add_Tensor, pu1_add), DISP_ERR_SCHEMA);
  ASSERT_STARTS_WITH(disp_last_error(), "Explicitly provided namespace (aten) in operator name does not match "
                                        "namespace of enclosing TORCH_LIBRARY_IMPL block (typedreg_ns).");
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("aten::add.Tensor", &op));
  ASSERT_EQ_INT(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1), 0);
  disp_library_free(lib);
  return 0;
}

/* ---- the run-time path --------------------------------------------------- */

/* A kernel registered type-erased with a `schema` that disagrees with the
 * def is refused, naming the operator, both schemas and the first
 * difference; nothing is registered. */
TEST(declared_schema_that_disagrees_is_refused) {
  disp_library *lib = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_PRIVATEUSE1, "plugin.c", 3, &lib));
  disp_kernel k = disp_kernel_unboxed(DISP_FN(pu1_add), 0);
  k.schema = "aten::add.Tensor(Tensor self, int other, *, Scalar alpha=1) -> Tensor";
  ASSERT_STATUS(disp_library_impl(lib, "add.Tensor", k, NULL), DISP_ERR_MISMATCH);
  ASSERT_STARTS_WITH(disp_last_error(),
                     "Inferred operator schema for a C++ kernel function doesn't match the expected function schema.\n"
                     "  operator: aten::add.Tensor\n");
  ASSERT_CONTAINS(disp_last_error(), "reason: Type mismatch in argument 2: Tensor vs int");
  /* What a plugin built against a header whose add.Tensor had one argument
   * more would carry: DISP_ATEN_KERNEL's schema, another version's. */
  k = DISP_ATEN_KERNEL(add_Tensor, pu1_add);
  k.schema = "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1, Scalar beta=1) -> Tensor";
  ASSERT_STATUS(disp_library_impl(lib, "add.Tensor", k, NULL), DISP_ERR_MISMATCH);
  ASSERT_CONTAINS(disp_last_error(), "reason: The number of arguments is different. 3 vs 4.");
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("aten::add.Tensor", &op));
  ASSERT_EQ_INT(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1), 0);
  /* The checked form's own schema agrees. */
  ASSERT_OK(disp_library_impl(lib, "add.Tensor", DISP_ATEN_KERNEL(add_Tensor, pu1_add), NULL));
  ASSERT_EQ_INT(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1), 1);
  disp_library_free(lib);
  return 0;
}

static disp_status boxed_noop(const disp_op *op, disp_keyset ks, disp_stack *stack, void *user_data) {
  (void)op, (void)ks, (void)stack, (void)user_data;
  return DISP_OK;
}

/* PyTorch's comparison takes ScalarType for `int`; an unboxed kernel would
 * take it as int64_t where the operator passes int32_t: refused, after the
 * def too. A boxed kernel never sees C types: the same schema is fine. */
TEST(declared_schema_with_other_c_types_is_refused) {
  static const char *const as_int =
      "aten::_softmax_backward_data(Tensor grad_output, Tensor output, int dim, int input_dtype) -> Tensor";
  disp_library *lib = pu1_aten_library();
  ASSERT_TRUE(lib != NULL);
  disp_kernel k = disp_kernel_unboxed(DISP_FN(pu1_add), 0);
  k.schema = as_int;
  ASSERT_STATUS(disp_library_impl(lib, "_softmax_backward_data", k, NULL), DISP_ERR_MISMATCH);
  ASSERT_CONTAINS(disp_last_error(), "  operator: aten::_softmax_backward_data\n");
  ASSERT_CONTAINS(disp_last_error(), "reason: Type mismatch in argument 4: ScalarType vs int, whose C types "
                                     "differ for an unboxed kernel (int32_t vs int64_t)");
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("aten::_softmax_backward_data", &op));
  ASSERT_EQ_INT(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1), 0);
  k = disp_kernel_boxed(boxed_noop, NULL, NULL);
  k.schema = as_int;
  ASSERT_OK(disp_library_impl(lib, "_softmax_backward_data", k, NULL));
  disp_library_free(lib);
  /* An operator defined after its kernel: the def is refused instead. */
  disp_library *impl = NULL, *def = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "typedreg_late", DISP_KEY_CPU, __FILE__, __LINE__, &impl));
  k = disp_kernel_unboxed(DISP_FN(pu1_add), 0);
  k.schema = "typedreg_late::f(Tensor self, int dtype) -> Tensor";
  ASSERT_OK(disp_library_impl(impl, "f", k, NULL));
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "typedreg_late", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &def));
  ASSERT_STATUS(disp_library_def(def, "f(Tensor self, ScalarType dtype) -> Tensor", NULL), DISP_ERR_MISMATCH);
  ASSERT_CONTAINS(disp_last_error(), "reason: Type mismatch in argument 2: ScalarType vs int, whose C types");
  ASSERT_OK(disp_library_def(def, "f(Tensor self, int dtype) -> Tensor", NULL));
  disp_library_free(def);
  disp_library_free(impl);
  return 0;
}

/* Without a schema the library cannot know the C type of a type-erased
 * kernel: it registers (the checked forms above are the way to be sure). */
TEST(type_erased_kernel_without_schema_is_taken_on_trust) {
  disp_library *lib = pu1_aten_library();
  ASSERT_TRUE(lib != NULL);
  ASSERT_OK(disp_library_impl(lib, "mm", disp_kernel_unboxed(DISP_FN(pu1_add), 0), NULL));
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("aten::mm", &op));
  ASSERT_EQ_INT(disp_op_has_kernel(op, DISP_KEY_PRIVATEUSE1), 1);
  disp_library_free(lib); /* never called: that would be undefined behaviour */
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(impl_aten_runs_on_privateuse1),
    TEST_ENTRY(impl_aten_takes_the_key_set_form),
    TEST_ENTRY(impl_aten_key_on_an_explicit_key),
    TEST_ENTRY(aten_kernel_is_the_checked_kernel_value),
    TEST_ENTRY(impl_aten_in_a_static_block),
    TEST_ENTRY(impl_aten_in_another_namespace_is_refused),
    TEST_ENTRY(declared_schema_that_disagrees_is_refused),
    TEST_ENTRY(declared_schema_with_other_c_types_is_refused),
    TEST_ENTRY(type_erased_kernel_without_schema_is_taken_on_trust),
    TEST_END};
TEST_MAIN()
