/*
 * test_startup.c - the runtime module (src/runtime/): the order of start-up
 * and shut-down (Note [Start-up]) and the shutdown hooks (Note [Shutdown
 * hooks]): any number of them, each run once per shutdown, newest first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <disp.h>

#include "library_internal.h"
#include "test.h"

/* ---- shutdown hooks ------------------------------------------------------ */

enum { NHOOKS = 40 }; /* well past the 16 slots of the old fixed table */
static int ran[NHOOKS];   /* how often each hook ran */
static int order[NHOOKS]; /* hook indices in the order they ran */
static int nran;

static void record(int i) {
  ran[i]++;
  if (nran < NHOOKS) order[nran] = i;
  nran++;
}

#define HOOK(i) \
  static void hook_##i(void) { record(i); }
#define HOOKS10(d) HOOK(d##0) HOOK(d##1) HOOK(d##2) HOOK(d##3) HOOK(d##4) HOOK(d##5) HOOK(d##6) HOOK(d##7) HOOK(d##8) HOOK(d##9)
HOOK(0) HOOK(1) HOOK(2) HOOK(3) HOOK(4) HOOK(5) HOOK(6) HOOK(7) HOOK(8) HOOK(9)
HOOKS10(1) HOOKS10(2) HOOKS10(3)
#define NODE(i) {hook_##i, NULL, 0}
#define NODES10(d) NODE(d##0), NODE(d##1), NODE(d##2), NODE(d##3), NODE(d##4), NODE(d##5), NODE(d##6), NODE(d##7), NODE(d##8), NODE(d##9)
static disp_shutdown_hook nodes[NHOOKS] = {NODE(0), NODE(1), NODE(2), NODE(3), NODE(4), NODE(5), NODE(6), NODE(7),
                                           NODE(8), NODE(9), NODES10(1), NODES10(2), NODES10(3)};

static void reset_counts(void) {
  memset(ran, 0, sizeof ran);
  memset(order, 0, sizeof order);
  nran = 0;
}

TEST(more_than_16_hooks_all_run_newest_first) {
  reset_counts();
  for (int i = 0; i < NHOOKS; i++) disp__at_shutdown_hook(&nodes[i]);
  disp_shutdown();
  ASSERT_EQ_INT(nran, NHOOKS);
  for (int i = 0; i < NHOOKS; i++) {
    ASSERT_EQ_INT(ran[i], 1);
    ASSERT_EQ_INT(order[i], NHOOKS - 1 - i); /* newest first */
  }
  return 0;
}

TEST(a_hook_runs_once_per_shutdown_and_again_when_registered_again) {
  reset_counts();
  for (int i = 0; i < NHOOKS; i++) {
    disp__at_shutdown_hook(&nodes[i]);
    disp__at_shutdown_hook(&nodes[i]); /* waiting already: a no-op */
  }
  disp_shutdown();
  ASSERT_EQ_INT(nran, NHOOKS);
  disp_shutdown(); /* nobody registered since: nothing runs */
  ASSERT_EQ_INT(nran, NHOOKS);
  disp__at_shutdown_hook(&nodes[3]);
  disp__at_shutdown_hook(&nodes[20]);
  disp_shutdown();
  ASSERT_EQ_INT(nran, NHOOKS + 2);
  ASSERT_EQ_INT(ran[3], 2);
  ASSERT_EQ_INT(ran[20], 2);
  ASSERT_EQ_INT(ran[4], 1);
  return 0;
}

static void call_site_hook(void) { record(0); }
static void register_at_one_site(void) { disp__at_shutdown(call_site_hook); }

TEST(the_call_site_macro_keeps_one_node_per_site) {
  reset_counts();
  for (int i = 0; i < 100; i++) register_at_one_site();
  disp_shutdown();
  ASSERT_EQ_INT(nran, 1);
  register_at_one_site(); /* re-armed after the shutdown */
  disp_shutdown();
  ASSERT_EQ_INT(nran, 2);
  return 0;
}

/* A hook that registers itself again while it runs joins the next lifetime. */
static disp_shutdown_hook self_node;
static int reregister = 1;
static void self_registering(void) {
  record(1);
  if (reregister) disp__at_shutdown_hook(&self_node);
}

TEST(a_hook_registering_itself_while_running_runs_at_the_next_shutdown) {
  reset_counts();
  self_node.fn = self_registering;
  disp__at_shutdown_hook(&nodes[5]);
  disp__at_shutdown_hook(&self_node);
  disp__at_shutdown_hook(&nodes[6]);
  disp_shutdown();
  ASSERT_EQ_INT(nran, 3);
  ASSERT_EQ_INT(order[0], 6);
  ASSERT_EQ_INT(order[1], 1);
  ASSERT_EQ_INT(order[2], 5);
  disp_shutdown();
  ASSERT_EQ_INT(nran, 4);
  ASSERT_EQ_INT(ran[1], 2);
  reregister = 0;
  disp_shutdown();
  ASSERT_EQ_INT(ran[1], 3);
  disp_shutdown(); /* off the list now */
  ASSERT_EQ_INT(ran[1], 3);
  return 0;
}

TEST(null_hooks_are_no_ops) {
  reset_counts();
  disp__at_shutdown_hook(NULL);
  disp_shutdown_hook empty = {NULL, NULL, 0};
  disp__at_shutdown_hook(&empty);
  ASSERT_EQ_INT(empty.linked, 0);
  disp_shutdown();
  ASSERT_EQ_INT(nran, 0);
  return 0;
}

/* ---- start-up ------------------------------------------------------------ */

static int64_t user_kernel_calls;
static disp_status user_neg(const disp_op *op, disp_keyset ks, disp_stack *st, void *ud) {
  (void)op, (void)ks, (void)st, (void)ud;
  user_kernel_calls++;
  return disp_set_error(DISP_ERR_KERNEL, "the user's neg ran");
}

/* Queued before any drain, in the program: a user's kernel on a built-in
 * operator. The built-in libraries drain first, so it stacks above. */
DISP_LIBRARY_IMPL(aten, PRIVATEUSE1, m) {
  disp_library_impl(m, "neg", disp_kernel_boxed(user_neg, NULL, NULL), NULL);
}

TEST(the_runtime_offers_the_builtins_before_main) { /* (its constructor) */
  ASSERT_EQ_INT(disp__library_has_builtins(), 1);
  return 0;
}

/* The built-in libraries come in two parts (builtins_internal.h): the
 * kernels module's (aten_gen.c) and the autograd module's
 * (aten_autograd_gen.c), both drained. */
TEST(both_builtin_parts_are_drained_each_from_its_generated_file) {
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("aten::mul.Tensor", &op));
  char *state = disp_op_dump_state(op);
  ASSERT_TRUE(state != NULL);
  int ok = strstr(state, "CPU: registered at generated/aten_gen.c:") != NULL &&
           strstr(state, "Autograd[alias]: registered at generated/aten_autograd_gen.c:") != NULL &&
           strstr(state, "ADInplaceOrView") == NULL; /* mul.Tensor writes nothing */
  if (!ok) fprintf(stderr, "%s\n", state);
  free(state);
  ASSERT_TRUE(ok);
  return 0;
}

TEST(an_offer_for_a_part_out_of_range_or_null_is_a_no_op) {
  static disp_library_node bogus[1];
  disp__library_set_builtins(-1, bogus, 1);
  disp__library_set_builtins(DISP__BUILTIN_PARTS, bogus, 1);
  disp__library_set_builtins(0, NULL, 0);
  disp__library_set_builtins(0, bogus, 1); /* part 0 was offered already */
  disp_init();
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("aten::neg", &op));
  disp_shutdown();
  return 0;
}

static int builtins_then_user_blocks(void) {
  const disp_op *op = NULL;
  ASSERT_OK(disp_op_find("aten::neg", &op));
  char *state = disp_op_dump_state(op);
  ASSERT_TRUE(state != NULL);
  /* one kernel on PrivateUse1 (the user's), the built-in CPU one kept */
  ASSERT_CONTAINS(state, "PrivateUse1: registered at");
  ASSERT_CONTAINS(state, "test_startup.c");
  ASSERT_CONTAINS(state, "CPU: registered at");
  free(state);
  ASSERT_OK(disp_registry_check());
  return 0;
}

TEST(first_use_before_disp_init_drains_builtins_then_queued_blocks) {
  /* no disp_init(): the lookup is the first use */
  return builtins_then_user_blocks();
}

TEST(disp_init_then_shutdown_then_first_use_starts_over_alike) {
  disp_init();
  if (builtins_then_user_blocks()) return 1;
  disp_shutdown();
  if (builtins_then_user_blocks()) return 1; /* lazily again, same order */
  disp_shutdown();
  disp_init();
  return builtins_then_user_blocks();
}

TEST_LIST = {
    TEST_ENTRY(more_than_16_hooks_all_run_newest_first),
    TEST_ENTRY(a_hook_runs_once_per_shutdown_and_again_when_registered_again),
    TEST_ENTRY(the_call_site_macro_keeps_one_node_per_site),
    TEST_ENTRY(a_hook_registering_itself_while_running_runs_at_the_next_shutdown),
    TEST_ENTRY(null_hooks_are_no_ops),
    TEST_ENTRY(the_runtime_offers_the_builtins_before_main),
    TEST_ENTRY(both_builtin_parts_are_drained_each_from_its_generated_file),
    TEST_ENTRY(an_offer_for_a_part_out_of_range_or_null_is_a_no_op),
    TEST_ENTRY(first_use_before_disp_init_drains_builtins_then_queued_blocks),
    TEST_ENTRY(disp_init_then_shutdown_then_first_use_starts_over_alike),
    TEST_END,
};
TEST_MAIN_WITH(NULL, NULL)
