/*
 * test_runner_isolation - the test runner's own check (issue 18, item 6),
 * run through tests/check_isolation.sh: a case that crashes and one that
 * hangs fail alone, by name, and the cases after them still run; a case
 * sees no state an earlier case left.
 */
#include <signal.h>
#include <unistd.h>

#include "test.h"

static int g_left_behind;

TEST(passes_first) {
  g_left_behind = 1; /* in this case's process only */
  return 0;
}

TEST(crashes) {
  raise(SIGSEGV);
  return 0;
}

TEST(hangs) {
  for (;;) pause();
  return 0;
}

TEST(sees_no_state_of_earlier_cases) {
  ASSERT_EQ_INT(g_left_behind, 0);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(passes_first),
    TEST_ENTRY(crashes),
    TEST_ENTRY(hangs),
    TEST_ENTRY(sees_no_state_of_earlier_cases),
    TEST_END};
TEST_MAIN()
