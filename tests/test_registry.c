/*
 * test_registry.c - defs, impls, fallbacks, their errors and their removal.
 *
 * Every error case checks the message (PyTorch's wording) and that the
 * registry is unchanged afterwards, by comparing dumps taken before and after.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <disp.h>

#include "test.h"

static disp_status noop_kernel(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)op, (void)ks, (void)s, (void)ud;
  return DISP_OK;
}

static disp_kernel boxed(const char *debug) {
  disp_kernel k = disp_kernel_boxed(noop_kernel, NULL, NULL);
  k.debug = debug;
  return k;
}

static char *state_of(const char *name) {
  const disp_op *op = NULL;
  if (disp_op_find(name, &op) != DISP_OK) return strdup("(no such op)");
  char *a = disp_op_dump_state(op), *b = disp_op_dump_table(op);
  size_t n = strlen(a) + strlen(b) + 2;
  char *s = malloc(n);
  snprintf(s, n, "%s\n%s", a, b);
  free(a);
  free(b);
  return s;
}

static char *table_of(const char *name) {
  const disp_op *op = NULL;
  if (disp_op_find(name, &op) != DISP_OK) return strdup("(no such op)");
  return disp_op_dump_table(op);
}

/* Captured warnings. */
static char g_warning[4096];
static int g_warnings;
static void capture_warning(const char *msg, void *ud) {
  (void)ud;
  g_warnings++;
  snprintf(g_warning, sizeof g_warning, "%s", msg);
}

TEST(def_and_lookup) {
  disp_library *lib = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "t1", DISP_KEY_UNDEFINED, "file.c", 7, &lib));
  ASSERT_OK(disp_library_def(lib, "myadd(Tensor self, Tensor other) -> Tensor", NULL));
  ASSERT_OK(disp_library_def(lib, "t1::myadd.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", NULL));
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("t1::myadd", &op));
  ASSERT_EQ_STR(disp_op_name(op), "t1::myadd");
  ASSERT_OK(disp_op_find("t1::myadd.out", &op));
  char *text = disp_schema_to_string(disp_op_schema(op));
  ASSERT_EQ_STR(text, "t1::myadd.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  free(text);
  char *state = disp_op_dump_state(op);
  ASSERT_EQ_STR(state,
                "name: t1::myadd.out\n"
                "schema: t1::myadd.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)\n"
                "debug: registered at file.c:7\n"
                "alias analysis kind: FROM_SCHEMA\n");
  free(state);
  ASSERT_STATUS(disp_op_find("t1::nope", &op), DISP_ERR_OP_NOT_FOUND);
  ASSERT_EQ_STR(disp_last_error(), "Could not find schema for t1::nope");
  disp_library_free(lib);
  ASSERT_STATUS(disp_op_find("t1::myadd", &op), DISP_ERR_OP_NOT_FOUND);
  return 0;
}

TEST(second_def_is_an_error_and_changes_nothing) {
  disp_library *lib = NULL, *frag = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "t2", DISP_KEY_UNDEFINED, "a.c", 1, &lib));
  ASSERT_OK(disp_library_new(DISP_LIBRARY_FRAGMENT, "t2", DISP_KEY_UNDEFINED, "b.c", 2, &frag));
  ASSERT_OK(disp_library_def(lib, "op(Tensor self) -> Tensor", NULL));
  char *before = state_of("t2::op");
  ASSERT_STATUS(disp_library_def(frag, "op(Tensor self, int x) -> Tensor", NULL), DISP_ERR_DUPLICATE);
  ASSERT_EQ_STR(disp_last_error(),
                "Tried to register an operator (t2::op(Tensor self, int x) -> Tensor) with the same "
                "name and overload name multiple times. Each overload's schema should only be "
                "registered with a single call to def(). Duplicate registration: registered at "
                "b.c:2. Original registration: registered at a.c:1");
  char *after = state_of("t2::op");
  ASSERT_EQ_STR(after, before);
  free(before);
  free(after);
  disp_library_free(frag);
  disp_library_free(lib);
  return 0;
}

TEST(second_library_for_a_namespace) {
  disp_library *lib = NULL, *again = NULL, *frag = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "t3", DISP_KEY_UNDEFINED, "a.c", 10, &lib));
  ASSERT_OK(disp_library_def(lib, "op(Tensor self) -> Tensor", NULL));
  char *before = state_of("t3::op");
  ASSERT_STATUS(disp_library_new(DISP_LIBRARY_DEF, "t3", DISP_KEY_UNDEFINED, "b.c", 20, &again),
                DISP_ERR_DUPLICATE);
  ASSERT_TRUE(again == NULL);
  ASSERT_STARTS_WITH(disp_last_error(),
                     "Only a single TORCH_LIBRARY can be used to register the namespace t3; please "
                     "put all of your definitions in a single TORCH_LIBRARY block.");
  ASSERT_CONTAINS(disp_last_error(),
                  "Previous registration of TORCH_LIBRARY was registered at a.c:10; latest "
                  "registration was registered at b.c:20");
  char *after = state_of("t3::op");
  ASSERT_EQ_STR(after, before);
  /* Fragments are fine, and so is a new DEF once the first is gone. */
  ASSERT_OK(disp_library_new(DISP_LIBRARY_FRAGMENT, "t3", DISP_KEY_UNDEFINED, "c.c", 30, &frag));
  disp_library_free(frag);
  disp_library_free(lib);
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "t3", DISP_KEY_UNDEFINED, "b.c", 20, &again));
  disp_library_free(again);
  free(before);
  free(after);
  return 0;
}

TEST(second_user_fallback_on_a_key) {
  disp_library *a = NULL, *b = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "_", DISP_KEY_PRIVATEUSE1, "fb1.c", 3, &a));
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "_", DISP_KEY_PRIVATEUSE1, "fb2.c", 4, &b));
  ASSERT_OK(disp_library_fallback(a, disp_kernel_boxed(noop_kernel, NULL, NULL), NULL));
  char *before = disp_fallback_dump();
  ASSERT_STATUS(disp_library_fallback(b, disp_kernel_fallthrough(), NULL), DISP_ERR_DUPLICATE);
  ASSERT_EQ_STR(disp_last_error(),
                "Tried to register multiple backend fallbacks for the same dispatch key "
                "PrivateUse1; previous registration registered at fb1.c:3, new registration "
                "registered at fb2.c:4");
  char *after = disp_fallback_dump();
  ASSERT_EQ_STR(after, before);
  ASSERT_CONTAINS(after, "PrivateUse1: registered at fb1.c:3 [backend fallback]\n");
  free(before);
  free(after);
  disp_library_free(b);
  disp_library_free(a);
  char *gone = disp_fallback_dump();
  ASSERT_TRUE(strstr(gone, "\nPrivateUse1:") == NULL);
  free(gone);
  return 0;
}

TEST(user_fallback_replaces_builtin_until_removed) {
  char *before = disp_fallback_dump();
  ASSERT_CONTAINS(before, "AutogradCPU: registered by libdispatch (built-in autograd fallback) [backend fallback]");
  disp_library *lib = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "_", DISP_KEY_AUTOGRAD_CPU, "mine.c", 5, &lib));
  ASSERT_OK(disp_library_fallback(lib, boxed("my autograd fallback"), NULL));
  char *during = disp_fallback_dump();
  ASSERT_CONTAINS(during, "AutogradCPU: my autograd fallback [backend fallback]");
  disp_library_free(lib);
  char *after = disp_fallback_dump();
  ASSERT_EQ_STR(after, before);
  free(before);
  free(during);
  free(after);
  return 0;
}

TEST(impl_schema_disagrees_with_def) {
  disp_library *lib = NULL, *impl = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "t4", DISP_KEY_UNDEFINED, "d.c", 1, &lib));
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "t4", DISP_KEY_CPU, "i.c", 2, &impl));
  ASSERT_OK(disp_library_def(lib, "op(Tensor self, Tensor other) -> Tensor", NULL));
  char *before = state_of("t4::op");
  disp_kernel k = boxed(NULL);
  k.schema = "t4::op(Tensor self) -> Tensor";
  ASSERT_STATUS(disp_library_impl(impl, "op", k, NULL), DISP_ERR_MISMATCH);
  ASSERT_STARTS_WITH(disp_last_error(),
                     "Inferred operator schema for a C++ kernel function doesn't match the "
                     "expected function schema.\n  operator: t4::op\n");
  ASSERT_CONTAINS(disp_last_error(), "reason: The number of arguments is different. 2 vs 1.");
  k.schema = "t4::op(Tensor self, int other) -> Tensor";
  ASSERT_STATUS(disp_library_impl(impl, "op", k, NULL), DISP_ERR_MISMATCH);
  ASSERT_CONTAINS(disp_last_error(), "reason: Type mismatch in argument 2: Tensor vs int");
  char *after = state_of("t4::op");
  ASSERT_EQ_STR(after, before);
  /* A matching schema (names and defaults don't matter) is accepted. */
  k.schema = "t4::op(Tensor a, Tensor b) -> Tensor";
  ASSERT_OK(disp_library_impl(impl, "op", k, NULL));
  free(before);
  free(after);
  disp_library_free(impl);
  disp_library_free(lib);
  return 0;
}

TEST(def_after_mismatching_impl_fails_and_changes_nothing) {
  disp_library *lib = NULL, *impl = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "t5", DISP_KEY_CPU, "i.c", 2, &impl));
  disp_kernel k = boxed(NULL);
  k.schema = "t5::op(Tensor self) -> Tensor";
  ASSERT_OK(disp_library_impl(impl, "op", k, NULL));
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "t5", DISP_KEY_UNDEFINED, "d.c", 1, &lib));
  ASSERT_STATUS(disp_library_def(lib, "op(Tensor self) -> (Tensor, Tensor)", NULL), DISP_ERR_MISMATCH);
  ASSERT_CONTAINS(disp_last_error(), "The number of returns is different. 2 vs 1");
  const disp_op *op = NULL;
  ASSERT_STATUS(disp_op_find("t5::op", &op), DISP_ERR_OP_NOT_FOUND);
  ASSERT_OK(disp_library_def(lib, "op(Tensor self) -> Tensor", NULL));
  ASSERT_OK(disp_op_find("t5::op", &op));
  disp_library_free(lib);
  disp_library_free(impl);
  return 0;
}

TEST(malformed_schema_is_located_and_registers_nothing) {
  disp_library *lib = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "t6", DISP_KEY_UNDEFINED, "d.c", 1, &lib));
  ASSERT_STATUS(disp_library_def(lib, "op(Tensor self -> Tensor", NULL), DISP_ERR_SCHEMA);
  ASSERT_STARTS_WITH(disp_last_error(), "1:");
  ASSERT_CONTAINS(disp_last_error(), "error: expected");
  const char **names = NULL;
  size_t n = 0;
  ASSERT_OK(disp_op_list(&names, &n));
  for (size_t i = 0; i < n; i++) ASSERT_TRUE(strncmp(names[i], "t6::", 4) != 0);
  free(names);
  disp_library_free(lib);
  return 0;
}

/* A namespace must be an identifier, as PyTorch's `ns::op` reads it; a bad
 * one is refused when the library is opened, naming it and the rule. */
TEST(invalid_namespaces_are_refused) {
  static const char *const bad[] = {"", "a b", "x::y", "1abc", "a-b", "ns\n", "\xc3\xa9t\xc3\xa9", "a.b"};
  static const disp_library_kind kinds[] = {DISP_LIBRARY_DEF, DISP_LIBRARY_FRAGMENT, DISP_LIBRARY_IMPL};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
      disp_library *lib = NULL;
      ASSERT_STATUS(disp_library_new(kinds[k], bad[i], DISP_KEY_CPU, "n.c", 1, &lib), DISP_ERR_INVALID_ARG);
      ASSERT_TRUE(lib == NULL);
      char quoted[64];
      snprintf(quoted, sizeof quoted, "invalid namespace \"%s\"", bad[i]);
      ASSERT_CONTAINS(disp_last_error(), quoted);
      ASSERT_CONTAINS(disp_last_error(), "a namespace must be a valid identifier");
    }
    disp_library *lib = NULL;
    ASSERT_STATUS(disp_library_new(kinds[k], NULL, DISP_KEY_CPU, "n.c", 1, &lib), DISP_ERR_INVALID_ARG);
    ASSERT_TRUE(lib == NULL);
    ASSERT_CONTAINS(disp_last_error(), "disp_library_new: ns is NULL");
  }
  /* Nothing was claimed: the namespaces that are fine still open. */
  static const char *const good[] = {"_ok", "a1", "A_b_9", "x"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    disp_library *lib = NULL;
    ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, good[i], DISP_KEY_UNDEFINED, "n.c", 2, &lib));
    disp_library_free(lib);
  }
  disp_library *any = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "_", DISP_KEY_CPU, "n.c", 3, &any));
  disp_library_free(any);
  ASSERT_OK(disp_registry_check());
  return 0;
}

TEST(impl_namespace_and_key_errors) {
  disp_library *impl = NULL, *dense = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "t7", DISP_KEY_CPU, "i.c", 2, &impl));
  ASSERT_STATUS(disp_library_impl(impl, "other::op", boxed(NULL), NULL), DISP_ERR_SCHEMA);
  ASSERT_CONTAINS(disp_last_error(), "other");
  ASSERT_CONTAINS(disp_last_error(), "t7");
  ASSERT_STATUS(disp_library_impl(impl, "op", (disp_kernel){0}, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "t7::op");
  ASSERT_CONTAINS(disp_last_error(), "CPU");
  ASSERT_STATUS(disp_library_new(DISP_LIBRARY_IMPL, "t7", DISP_KEY_DENSE, "i.c", 3, &dense),
                DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "Dense");
  ASSERT_STATUS(disp_library_impl_key(impl, "op", DISP_KEY_QUANTIZED, boxed(NULL), NULL), DISP_ERR_INVALID_ARG);
  /* Nothing was created by the failures. */
  ASSERT_OK(disp_registry_check());
  disp_library_free(impl);
  return 0;
}

TEST(fallback_errors) {
  disp_library *lib = NULL, *def = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "_", DISP_KEY_PRIVATEUSE2, "f.c", 1, &lib));
  char *before = disp_fallback_dump();
  ASSERT_STATUS(disp_library_fallback(lib, disp_kernel_unboxed(DISP_FN(noop_kernel), 0), NULL),
                DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "PrivateUse2");
  ASSERT_CONTAINS(disp_last_error(), "must be boxed");
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "t8", DISP_KEY_UNDEFINED, "d.c", 1, &def));
  ASSERT_STATUS(disp_library_fallback(def, boxed(NULL), NULL), DISP_ERR_INVALID_ARG);
  char *after = disp_fallback_dump();
  ASSERT_EQ_STR(after, before);
  free(before);
  free(after);
  disp_library_free(def);
  disp_library_free(lib);
  return 0;
}

TEST(kernel_stack_newest_wins_and_removal_restores) {
  disp_library *lib = NULL, *i1 = NULL, *i2 = NULL;
  disp_registration *r1 = NULL, *r2 = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "t9", DISP_KEY_UNDEFINED, "d.c", 1, &lib));
  ASSERT_OK(disp_library_def(lib, "op(Tensor self) -> Tensor", NULL));
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "t9", DISP_KEY_CPU, "one.c", 11, &i1));
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "t9", DISP_KEY_CPU, "two.c", 22, &i2));
  ASSERT_OK(disp_library_impl(i1, "op", boxed(NULL), &r1));
  g_warnings = 0;
  disp_set_warning_handler(capture_warning, NULL);
  ASSERT_OK(disp_library_impl(i2, "op", boxed(NULL), &r2));
  disp_set_warning_handler(NULL, NULL);
  ASSERT_EQ_INT(g_warnings, 1);
  ASSERT_EQ_STR(g_warning,
                "Overriding a previously registered kernel for the same operator and the same "
                "dispatch key\n  operator: t9::op(Tensor self) -> Tensor\n    registered at d.c:1\n"
                "  dispatch key: CPU\n  previous kernel: registered at one.c:11\n"
                "       new kernel: registered at two.c:22");
  char *t = table_of("t9::op");
  ASSERT_CONTAINS(t, "CPU: registered at two.c:22 [kernel]\n");
  free(t);
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("t9::op", &op));
  char *state = disp_op_dump_state(op);
  ASSERT_CONTAINS(state, "CPU: registered at two.c:22 :: (none) [ boxed ]\n"
                         "CPU (inactive): registered at one.c:11 :: (none) [ boxed ]\n");
  free(state);
  disp_registration_remove(r2);
  disp_registration_remove(r2); /* twice is a no-op */
  t = table_of("t9::op");
  ASSERT_CONTAINS(t, "CPU: registered at one.c:11 [kernel]\n");
  free(t);
  disp_registration_remove(r1);
  t = table_of("t9::op");
  ASSERT_TRUE(strstr(t, "\nCPU:") == NULL && strncmp(t, "CPU:", 4) != 0);
  free(t);
  ASSERT_TRUE(disp_op_has_kernel(op, DISP_KEY_CPU) == 0);
  disp_library_free(i2);
  disp_library_free(i1);
  disp_library_free(lib);
  return 0;
}

TEST(impl_before_def_and_dangling_impls) {
  disp_library *impl = NULL, *lib = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "t10", DISP_KEY_CPU, "early.c", 9, &impl));
  ASSERT_OK(disp_library_impl(impl, "op", boxed(NULL), NULL));
  ASSERT_STATUS(disp_registry_check(), DISP_ERR_OP_NOT_FOUND);
  ASSERT_CONTAINS(disp_last_error(), "t10::op has kernels registered but no def()");
  ASSERT_CONTAINS(disp_last_error(), "[CPU: registered at early.c:9]");
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "t10", DISP_KEY_UNDEFINED, "late.c", 1, &lib));
  ASSERT_OK(disp_library_def(lib, "op(Tensor self) -> Tensor", NULL));
  ASSERT_OK(disp_registry_check());
  char *t = table_of("t10::op");
  ASSERT_CONTAINS(t, "CPU: registered at early.c:9 [kernel]\n");
  free(t);
  disp_library_free(lib);
  disp_library_free(impl);
  ASSERT_OK(disp_registry_check());
  return 0;
}

TEST(alias_precedence_spot_checks) {
  disp_library *lib = NULL, *cia = NULL, *cpu = NULL, *q = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "t11", DISP_KEY_UNDEFINED, "d.c", 1, &lib));
  ASSERT_OK(disp_library_def(lib, "op(Tensor self) -> Tensor", NULL));
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "t11", DISP_KEY_COMPOSITE_IMPLICIT_AUTOGRAD, "cia.c", 1, &cia));
  ASSERT_OK(disp_library_impl(cia, "op", boxed(NULL), NULL));
  char *t = table_of("t11::op");
  ASSERT_CONTAINS(t, "Undefined: registered at cia.c:1 [math kernel]\n");
  ASSERT_CONTAINS(t, "AutogradCPU: registered at cia.c:1 [math kernel]\n");
  ASSERT_CONTAINS(t, "AutogradOther: registered at cia.c:1 [math kernel]\n");
  free(t);
  /* A CPU kernel: AutogradCPU no longer takes the math kernel. */
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "t11", DISP_KEY_CPU, "cpu.c", 2, &cpu));
  ASSERT_OK(disp_library_impl(cpu, "op", boxed(NULL), NULL));
  t = table_of("t11::op");
  ASSERT_CONTAINS(t, "AutogradCPU: registered by libdispatch (built-in autograd fallback) [backend fallback]\n");
  ASSERT_CONTAINS(t, "AutogradCUDA: registered at cia.c:1 [math kernel]\n");
  free(t);
  /* A QuantizedCPU kernel makes AutogradOther ambiguous. */
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "t11", DISP_KEY_QUANTIZED_CPU, "q.c", 3, &q));
  ASSERT_OK(disp_library_impl(q, "op", boxed(NULL), NULL));
  t = table_of("t11::op");
  ASSERT_CONTAINS(t, "AutogradOther: ambiguous_autogradother [ambiguous autogradother]\n");
  free(t);
  disp_library_free(q);
  disp_library_free(cpu);
  disp_library_free(cia);
  disp_library_free(lib);
  return 0;
}

/* Static registration: the IMPL block comes first in the file, the def after. */
static int g_destroyed;
static void count_destroy(void *p) { (void)p, g_destroyed++; }

DISP_LIBRARY_IMPL(statictest, CPU, m) {
  disp_kernel k = disp_kernel_boxed(noop_kernel, NULL, count_destroy);
  disp_library_impl(m, "twice", k, NULL);
}
DISP_LIBRARY(statictest, m) {
  disp_library_def(m, "twice(Tensor self) -> Tensor", NULL);
}

TEST(static_blocks_run_defs_first) {
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("statictest::twice", &op));
  char *t = disp_op_dump_table(op);
  ASSERT_CONTAINS(t, "CPU: registered at ");
  ASSERT_CONTAINS(t, "test_registry.c:");
  free(t);
  ASSERT_OK(disp_registry_check());
  /* Shutdown destroys the kernel's user data and a new init runs the blocks again. */
  g_destroyed = 0;
  disp_shutdown();
  ASSERT_EQ_INT(g_destroyed, 1);
  ASSERT_OK(disp_op_find("statictest::twice", &op));
  return 0;
}

TEST(fallthrough_alias_impl_fills_slots_as_fallthrough) {
  disp_library *lib = NULL, *ag = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_DEF, "t12", DISP_KEY_UNDEFINED, "d.c", 1, &lib));
  ASSERT_OK(disp_library_def(lib, "op(Tensor self) -> Tensor", NULL));
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "t12", DISP_KEY_AUTOGRAD, "ag.c", 4, &ag));
  ASSERT_OK(disp_library_impl(ag, "op", disp_kernel_fallthrough(), NULL));
  char *t = table_of("t12::op");
  ASSERT_CONTAINS(t, "AutogradPrivateUse1: fallthrough registered at ag.c:4 [autograd kernel]\n");
  ASSERT_CONTAINS(t, "AutogradOther: fallthrough registered at ag.c:4 [autograd kernel]\n");
  free(t);
  disp_library_free(ag);
  disp_library_free(lib);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(def_and_lookup),
    TEST_ENTRY(second_def_is_an_error_and_changes_nothing),
    TEST_ENTRY(second_library_for_a_namespace),
    TEST_ENTRY(second_user_fallback_on_a_key),
    TEST_ENTRY(user_fallback_replaces_builtin_until_removed),
    TEST_ENTRY(impl_schema_disagrees_with_def),
    TEST_ENTRY(def_after_mismatching_impl_fails_and_changes_nothing),
    TEST_ENTRY(malformed_schema_is_located_and_registers_nothing),
    TEST_ENTRY(impl_namespace_and_key_errors),
    TEST_ENTRY(invalid_namespaces_are_refused),
    TEST_ENTRY(fallback_errors),
    TEST_ENTRY(kernel_stack_newest_wins_and_removal_restores),
    TEST_ENTRY(impl_before_def_and_dangling_impls),
    TEST_ENTRY(alias_precedence_spot_checks),
    TEST_ENTRY(static_blocks_run_defs_first),
    TEST_ENTRY(fallthrough_alias_impl_fills_slots_as_fallthrough),
    TEST_END};

TEST_MAIN()
