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
 * `prog` runs every case; `prog NAME` runs only NAME; `prog --list` prints
 * the names. A case returns 0 when it passes; a failing assertion prints
 * file:line and the values and returns 1 from the case (memory the case
 * owns may leak then: only passing runs need to be leak-free). The exit
 * status is 1 when any case failed.
 *
 * Isolation: every case runs in a process of its own (fork), with a time
 * limit (DISP_TEST_TIMEOUT seconds, default 300), so a case that crashes or
 * hangs fails alone, with its name and the signal, and the others still run;
 * no state passes from one case to the next, and LeakSanitizer checks each
 * case's process when it exits. TEST_MAIN_WITH(setup, teardown) names
 * fixtures run in each case's process around the case (not cases
 * themselves). DISP_TEST_NO_FORK=1 runs the cases in this process, in
 * order, for a debugger.
 */
#ifndef DISP_TEST_H
#define DISP_TEST_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <disp.h>

typedef struct test_case {
  const char *name;
  int (*fn)(void);
} test_case;

/* What each case's process and the runner call last, so that LeakSanitizer
 * sees everything freed; a test linking only part of the library
 * (test_dispatcher_alone) defines its own before including this header. */
#ifndef TEST_SHUTDOWN
#define TEST_SHUTDOWN disp_shutdown
#endif

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

typedef int (*test_fixture_fn)(void);

/* The case with its fixtures, in the calling process; 0 when it passed. */
static inline int test_run_case_(const test_case *t, test_fixture_fn setup, test_fixture_fn teardown) {
  if (setup && setup() != 0) {
    fprintf(stderr, "%s: the setup fixture failed\n", t->name);
    return 1;
  }
  int rc = t->fn();
  if (teardown && teardown() != 0) rc = 1;
  return rc;
}

static inline unsigned test_timeout_(void) {
  const char *s = getenv("DISP_TEST_TIMEOUT");
  long v = s ? strtol(s, NULL, 10) : 0;
  return v > 0 ? (unsigned)v : 300u;
}

/* The case in a child process with a time limit; 0 when it passed. A
 * crash or a time-out is that case's failure, named with its signal. */
static inline int test_run_forked_(const test_case *t, test_fixture_fn setup, test_fixture_fn teardown) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return test_run_case_(t, setup, teardown); /* no process to spare: run here */
  if (pid == 0) {
    alarm(test_timeout_()); /* SIGALRM's default action ends the child */
    int rc = test_run_case_(t, setup, teardown);
    TEST_SHUTDOWN(); /* everything freed before LeakSanitizer looks */
    fflush(stdout);
    exit(rc ? 1 : 0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 1;
  if (WIFEXITED(status)) return WEXITSTATUS(status) != 0;
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  if (sig == SIGALRM)
    fprintf(stderr, "%s: timed out after %u s (DISP_TEST_TIMEOUT)\n", t->name, test_timeout_());
  else
    fprintf(stderr, "%s: killed by signal %d (%s)\n", t->name, sig, strsignal(sig));
  return 1;
}

static inline int test_run_main_(const test_case *tests, test_fixture_fn setup, test_fixture_fn teardown,
                                 int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  if (only && !strcmp(only, "--list")) {
    for (const test_case *t = tests; t->name; t++) puts(t->name);
    return 0;
  }
  const char *nf = getenv("DISP_TEST_NO_FORK");
  int fork_cases = !(nf && nf[0] == '1');
  int failed = 0, ran = 0;
  for (const test_case *t = tests; t->name; t++) {
    if (only && strcmp(only, t->name) != 0) continue;
    ran++;
    int rc = fork_cases ? test_run_forked_(t, setup, teardown) : test_run_case_(t, setup, teardown);
    if (rc != 0) {
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
  TEST_SHUTDOWN();
  printf("%d passed, %d failed\n", ran - failed, failed);
  return failed ? 1 : 0;
}

#define TEST_MAIN_WITH(setup, teardown) \
  int main(int argc, char **argv) { return test_run_main_(test_list_, setup, teardown, argc, argv); }
#define TEST_MAIN() TEST_MAIN_WITH(NULL, NULL)

#endif /* DISP_TEST_H */
