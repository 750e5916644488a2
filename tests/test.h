/*
 * test.h - a tiny table-driven test runner in plain C.
 *
 *   TEST(parses_add) {
 *     ASSERT_OK(disp_schema_parse("...", &s));
 *     ...
 *     return 0;
 *   }
 *   TEST_LIST = {
 *       TEST_ENTRY(parses_add),
 *       TEST_END};
 *   TEST_MAIN()
 *
 * `prog` runs every case; `prog NAME` runs only NAME. A case returns 0 when
 * it passes; a failing assertion prints file:line and the values and
 * returns 1 from the case (memory the case owns may leak then: only passing
 * runs need to be leak-free). The exit status is 1 when any case failed.
 */
#ifndef DISP_TEST_H
#define DISP_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <disp.h>

typedef struct test_case {
  const char *name;
  int (*fn)(void);
} test_case;

#define TEST(name) static int test_##name(void)
#define TEST_ENTRY(name) {#name, test_##name}
#define TEST_END {NULL, NULL}
#define TEST_LIST static const test_case test_list_[]

#define TEST_FAIL_(...)                             \
  do {                                              \
    fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__);                   \
    fputc('\n', stderr);                            \
    return 1;                                       \
  } while (0)

#define ASSERT_TRUE(cond)                                   \
  do {                                                      \
    if (!(cond)) TEST_FAIL_("assertion failed: %s", #cond); \
  } while (0)

#define ASSERT_FALSE(cond) ASSERT_TRUE(!(cond))

#define ASSERT_EQ_INT(a, b)                                                    \
  do {                                                                         \
    long long a_ = (long long)(a), b_ = (long long)(b);                        \
    if (a_ != b_) TEST_FAIL_("%s == %s failed: %lld vs %lld", #a, #b, a_, b_); \
  } while (0)

/* Strings compare equal when both are NULL or both hold the same text. */
#define ASSERT_EQ_STR(a, b)                                                              \
  do {                                                                                   \
    const char *a_ = (a), *b_ = (b);                                                     \
    if (!((a_ == NULL && b_ == NULL) || (a_ && b_ && strcmp(a_, b_) == 0)))              \
      TEST_FAIL_("%s == %s failed:\n  got:      \"%s\"\n  expected: \"%s\"", #a, #b,     \
                 a_ ? a_ : "(null)", b_ ? b_ : "(null)");                                \
  } while (0)

#define ASSERT_CONTAINS(haystack, needle)                                                \
  do {                                                                                   \
    const char *h_ = (haystack), *n_ = (needle);                                         \
    if (!h_ || !strstr(h_, n_))                                                          \
      TEST_FAIL_("%s does not contain %s:\n  text:   \"%s\"\n  wanted: \"%s\"", #haystack, \
                 #needle, h_ ? h_ : "(null)", n_);                                       \
  } while (0)

#define ASSERT_STARTS_WITH(text, prefix)                                                 \
  do {                                                                                   \
    const char *t_ = (text), *p_ = (prefix);                                             \
    if (!t_ || strncmp(t_, p_, strlen(p_)) != 0)                                         \
      TEST_FAIL_("%s does not start with %s:\n  text:   \"%s\"\n  prefix: \"%s\"", #text, \
                 #prefix, t_ ? t_ : "(null)", p_);                                       \
  } while (0)

#define ASSERT_STATUS(expr, want)                                                    \
  do {                                                                               \
    disp_status s_ = (expr);                                                         \
    if (s_ != (want))                                                                \
      TEST_FAIL_("%s returned %s, expected %s (last error: %s)", #expr,              \
                 disp_status_name(s_), disp_status_name(want), disp_last_error());   \
  } while (0)

#define ASSERT_OK(expr) ASSERT_STATUS(expr, DISP_OK)

static inline int test_run_main_(const test_case *tests, int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  int failed = 0, ran = 0;
  for (const test_case *t = tests; t->name; t++) {
    if (only && strcmp(only, t->name) != 0) continue;
    ran++;
    if (t->fn() != 0) {
      failed++;
      fprintf(stderr, "FAIL %s\n", t->name);
    } else {
      printf("ok   %s\n", t->name);
    }
  }
  if (ran == 0) {
    fprintf(stderr, "no test named '%s'\n", only ? only : "");
    return 1;
  }
  /* Tear the dispatcher down so LeakSanitizer sees everything freed. */
  disp_shutdown();
  printf("%d passed, %d failed\n", ran - failed, failed);
  return failed ? 1 : 0;
}

#define TEST_MAIN()                                                   \
  int main(int argc, char **argv) { return test_run_main_(test_list_, argc, argv); }

#endif /* DISP_TEST_H */
