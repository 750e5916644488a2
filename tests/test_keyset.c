/*
 * test_keyset.c - dispatch keys and key sets against PyTorch's rules.
 */
#include <string.h>

#include <disp.h>

#include "test.h"

static disp_keyset ks_of(const char *const *names, int n) {
  disp_keyset s = disp_keyset_empty();
  for (int i = 0; i < n; i++) {
    disp_key k;
    if (disp_key_parse(names[i], &k) != DISP_OK) return disp_keyset_empty();
    s = disp_keyset_add(s, k);
  }
  return s;
}

static const char *fmt(disp_keyset s) {
  static char buf[1024];
  disp_keyset_format(s, buf, sizeof buf);
  return buf;
}

TEST(names_round_trip) {
  for (int k = 0; k < DISP_KEY_COUNT; k++) {
    if (k == DISP_KEY_END_OF_RUNTIME_KEYS) continue;
    disp_key back;
    ASSERT_OK(disp_key_parse(disp_key_name((disp_key)k), &back));
    ASSERT_EQ_INT(back, k);
  }
  ASSERT_EQ_STR(disp_key_name(DISP_KEY_AUTOGRAD_PRIVATEUSE1), "AutogradPrivateUse1");
  ASSERT_EQ_STR(disp_key_name(DISP_KEY_QUANTIZED_CPU), "QuantizedCPU");
  ASSERT_EQ_STR(disp_key_name(DISP_KEY_META), "Meta");
  ASSERT_EQ_STR(disp_key_name(DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL),
                "CompositeExplicitAutogradNonFunctional");
  /* PyTorch's BC alias DispatchKey::Autocast is AutocastCUDA, and like
   * PyTorch's parseDispatchKey the string "Autocast" names nothing. */
  ASSERT_EQ_STR(disp_key_name(DISP_KEY_AUTOCAST), "AutocastCUDA");
  disp_key k;
  ASSERT_STATUS(disp_key_parse("Autocast", &k), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_key_parse("autogradcpu", &k), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "autogradcpu");
  return 0;
}

TEST(cpu_tensor_set_prints_like_pytorch) {
  const char *names[] = {"AutocastCPU", "AutogradCPU", "CPU", "ADInplaceOrView"};
  ASSERT_EQ_STR(fmt(ks_of(names, 4)), "DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU, AutocastCPU)");
  ASSERT_EQ_STR(fmt(disp_keyset_empty()), "DispatchKeySet()");
  return 0;
}

TEST(autograd_cpu_union_privateuse1_goes_to_autograd_privateuse1) {
  const char *names[] = {"AutogradCPU", "PrivateUse1"};
  disp_keyset s = ks_of(names, 2);
  ASSERT_EQ_INT(disp_keyset_highest_key(s), DISP_KEY_AUTOGRAD_PRIVATEUSE1);
  ASSERT_EQ_INT(disp_keyset_table_index(s), disp_key_table_index(DISP_KEY_AUTOGRAD_PRIVATEUSE1));
  /* The factored representation: the set also holds CPU's and PrivateUse1's
   * Autograd keys, and both backends' Dense keys. */
  ASSERT_TRUE(disp_keyset_has(s, DISP_KEY_AUTOGRAD_CPU));
  ASSERT_TRUE(disp_keyset_has(s, DISP_KEY_PRIVATEUSE1));
  ASSERT_TRUE(disp_keyset_has(s, DISP_KEY_CPU));
  return 0;
}

TEST(priority_order_matches_pytorch) {
  /* Lowest first, as the conformance README lists them. */
  const disp_key order[] = {
      DISP_KEY_CPU, DISP_KEY_QUANTIZED_CPU, DISP_KEY_SPARSE_CPU, DISP_KEY_BACKEND_SELECT,
      DISP_KEY_AD_INPLACE_OR_VIEW, DISP_KEY_AUTOGRAD_OTHER, DISP_KEY_AUTOGRAD_CPU,
      DISP_KEY_AUTOCAST_CPU, DISP_KEY_AUTOCAST_CUDA, DISP_KEY_AUTOCAST_PRIVATEUSE1};
  disp_keyset s = disp_keyset_empty();
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
    s = disp_keyset_add(s, order[i]);
    ASSERT_EQ_INT(disp_keyset_highest_key(s), order[i]);
    ASSERT_EQ_INT(disp_keyset_table_index(s), disp_key_table_index(order[i]));
  }
  /* Backends: Meta < PrivateUse1 < PrivateUse3; CPU < CUDA. */
  ASSERT_TRUE(disp_key_table_index(DISP_KEY_META) < disp_key_table_index(DISP_KEY_PRIVATEUSE1));
  ASSERT_TRUE(disp_key_table_index(DISP_KEY_CPU) < disp_key_table_index(DISP_KEY_CUDA));
  return 0;
}

TEST(table_index_is_a_bijection) {
  ASSERT_EQ_INT(disp_key_table_index(DISP_KEY_UNDEFINED), 0);
  for (int i = 0; i < DISP_NUM_RUNTIME_ENTRIES; i++) {
    disp_key k = disp_key_for_table_index(i);
    ASSERT_EQ_INT(disp_key_table_index(k), i);
    if (i > 0) ASSERT_EQ_INT(disp_keyset_table_index(disp_keyset_of(k)), i);
  }
  ASSERT_EQ_INT(disp_key_table_index(DISP_KEY_AUTOGRAD), -1);
  ASSERT_EQ_INT(disp_key_table_index(DISP_KEY_DENSE), -1);
  ASSERT_EQ_INT(disp_keyset_table_index(disp_keyset_empty()), 0);
  return 0;
}

TEST(remove_keeps_backend_bits) {
  const char *names[] = {"CPU", "AutogradCPU"};
  disp_keyset s = disp_keyset_remove(ks_of(names, 2), DISP_KEY_CPU);
  ASSERT_EQ_STR(fmt(s), "DispatchKeySet(AutogradCPU)");
  s = disp_keyset_remove(s, DISP_KEY_AUTOGRAD_CPU);
  ASSERT_EQ_STR(fmt(s), "DispatchKeySet()");
  ASSERT_TRUE(s.repr != 0); /* the CPU backend bit stays */
  ASSERT_EQ_INT(disp_keyset_backend_index(s), DISP_BACKEND_CPU);
  return 0;
}

TEST(full_after) {
  const char *names[] = {"CPU", "ADInplaceOrView", "AutogradCPU", "AutocastCPU"};
  disp_keyset s = ks_of(names, 4);
  ASSERT_EQ_STR(fmt(disp_keyset_and(s, disp_keyset_full_after(DISP_KEY_AUTOGRAD_CPU))),
                "DispatchKeySet(CPU, ADInplaceOrView)");
  ASSERT_EQ_STR(fmt(disp_keyset_and(s, disp_keyset_full_after(DISP_KEY_AUTOGRAD_OTHER))),
                "DispatchKeySet(CPU, ADInplaceOrView)");
  ASSERT_EQ_STR(fmt(disp_keyset_and(s, disp_keyset_full_after(DISP_KEY_AD_INPLACE_OR_VIEW))),
                "DispatchKeySet(CPU)");
  ASSERT_EQ_STR(fmt(disp_keyset_and(s, disp_keyset_full_after(DISP_KEY_CPU))), "DispatchKeySet()");
  return 0;
}

TEST(alias_expansion) {
  disp_key k;
  ASSERT_TRUE(disp_key_is_included_in_alias(DISP_KEY_AUTOGRAD_META, DISP_KEY_AUTOGRAD));
  ASSERT_TRUE(disp_key_is_included_in_alias(DISP_KEY_AUTOGRAD_OTHER, DISP_KEY_AUTOGRAD));
  ASSERT_TRUE(!disp_key_is_included_in_alias(DISP_KEY_CPU, DISP_KEY_AUTOGRAD));
  ASSERT_TRUE(disp_key_is_included_in_alias(DISP_KEY_SPARSE_CUDA, DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD));
  ASSERT_TRUE(!disp_key_is_included_in_alias(DISP_KEY_SPARSE_CUDA,
                                             DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL));
  ASSERT_TRUE(disp_key_is_included_in_alias(DISP_KEY_QUANTIZED_META,
                                            DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL));
  /* PyTorch 1.13 leaves XLA and Lazy out of CEANF (they functionalize) but not out of CEA. */
  ASSERT_TRUE(!disp_key_is_included_in_alias(DISP_KEY_XLA, DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL));
  ASSERT_TRUE(!disp_key_is_included_in_alias(DISP_KEY_QUANTIZED_LAZY,
                                             DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL));
  ASSERT_TRUE(disp_key_is_included_in_alias(DISP_KEY_XLA, DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD));
  ASSERT_TRUE(disp_key_is_included_in_alias(DISP_KEY_CPU, DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL));
  ASSERT_TRUE(disp_key_is_included_in_alias(DISP_KEY_AUTOGRAD_CPU, DISP_KEY_COMPOSITE_IMPLICIT_AUTOGRAD));
  ASSERT_TRUE(!disp_key_is_included_in_alias(DISP_KEY_BACKEND_SELECT, DISP_KEY_COMPOSITE_IMPLICIT_AUTOGRAD));
  ASSERT_TRUE(!disp_key_is_included_in_alias(DISP_KEY_AUTOCAST_CPU, DISP_KEY_COMPOSITE_IMPLICIT_AUTOGRAD));
  ASSERT_OK(disp_key_parse("Autograd", &k));
  ASSERT_EQ_INT(disp_key_kind_of(k), DISP_KEY_KIND_ALIAS);
  ASSERT_TRUE(disp_keyset_is_empty(disp_keyset_of(k))); /* alias keys never sit in a set */
  return 0;
}

TEST(format_truncates_safely) {
  const char *names[] = {"CPU", "AutogradCPU"};
  char small[10];
  size_t need = disp_keyset_format(ks_of(names, 2), small, sizeof small);
  ASSERT_EQ_INT(need, strlen("DispatchKeySet(CPU, AutogradCPU)"));
  ASSERT_EQ_STR(small, "DispatchK");
  return 0;
}

/* Note [NULL arguments] (c): a NULL buffer is measured, not written, as
 * snprintf(NULL, 0) - whatever size comes with it. */
TEST(null_buffers_only_measure) {
  const char *names[] = {"CPU", "AutogradCPU"};
  disp_keyset s = ks_of(names, 2);
  ASSERT_EQ_INT(disp_keyset_format(s, NULL, 64), strlen("DispatchKeySet(CPU, AutogradCPU)"));
  ASSERT_EQ_INT(disp_keyset_to_keys(s, NULL, 8), 2);
  ASSERT_TRUE(disp_keyset_is_empty(disp_keyset_of_keys(NULL, 3)));
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(names_round_trip),
    TEST_ENTRY(cpu_tensor_set_prints_like_pytorch),
    TEST_ENTRY(autograd_cpu_union_privateuse1_goes_to_autograd_privateuse1),
    TEST_ENTRY(priority_order_matches_pytorch),
    TEST_ENTRY(table_index_is_a_bijection),
    TEST_ENTRY(remove_keeps_backend_bits),
    TEST_ENTRY(full_after),
    TEST_ENTRY(alias_expansion),
    TEST_ENTRY(format_truncates_safely),
    TEST_ENTRY(null_buffers_only_measure),
    TEST_END};

TEST_MAIN()
