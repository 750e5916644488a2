/*
 * test_conformance_dispatch.c - every case of tests/data/dispatch/ through
 * the simulate engine, compared as the conformance README says: the lines of
 * the listed runtime keys, as a set, with the debug text of the library's
 * built-in fallbacks replaced by "<builtin>".
 *
 * Data: PyTorch 1.13.1's computed tables (shared/conformance/dispatch).
 * Usage: test_conformance_dispatch [CASE.txt...] (default: the whole folder)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <disp.h>

#include "conformance_main.h"
#include "simulate.h"


enum { MAX_LINES = 256 };

typedef struct line_set {
  char *line[MAX_LINES];
  int n;
} line_set;

static int listed_key(const char *key) {
  static const char *const prefixes[] = {"", "Quantized", "Sparse", "Autograd"};
  static const char *const backends[] = {"CPU", "CUDA", "Meta", "PrivateUse1", "PrivateUse2", "PrivateUse3"};
  static const char *const singles[] = {"Undefined", "BackendSelect", "ADInplaceOrView", "AutogradOther",
                                        "AutocastCPU", "AutocastCUDA", "AutocastPrivateUse1"};
  for (size_t i = 0; i < sizeof singles / sizeof *singles; i++)
    if (!strcmp(key, singles[i])) return 1;
  for (size_t p = 0; p < 4; p++) {
    size_t pl = strlen(prefixes[p]);
    if (strncmp(key, prefixes[p], pl)) continue;
    for (size_t b = 0; b < 6; b++)
      if (!strcmp(key + pl, backends[b])) return 1;
  }
  return 0;
}

static void add_line(line_set *s, const char *text) {
  if (s->n < MAX_LINES) s->line[s->n++] = strdup(text);
}

static int has_line(const line_set *s, const char *text) {
  for (int i = 0; i < s->n; i++)
    if (s->line[i] && !strcmp(s->line[i], text)) return 1;
  return 0;
}

static void free_set(line_set *s) {
  for (int i = 0; i < s->n; i++) free(s->line[i]);
  s->n = 0;
}

/* Our dump line -> the comparable form (or nothing for unlisted keys). */
static void add_normalized(line_set *s, const char *line) {
  const char *colon = strstr(line, ": ");
  if (!colon) return;
  char key[64];
  size_t kl = (size_t)(colon - line);
  if (kl >= sizeof key) return;
  memcpy(key, line, kl);
  key[kl] = '\0';
  if (!listed_key(key)) return;
  const char *rest = colon + 2;
  char buf[512];
  if (strstr(rest, "registered by libdispatch")) {
    snprintf(buf, sizeof buf, "%s: %s<builtin> [backend fallback]", key,
             !strncmp(rest, "fallthrough ", 12) ? "fallthrough " : "");
  } else {
    snprintf(buf, sizeof buf, "%s", line);
  }
  add_line(s, buf);
}

/* With --tool, the table comes from `disp simulate FILE` instead of the
 * engine linked into this test, so the command-line path is checked too. */
static const char *g_tool;

static int collect_from_tool(const char *path, line_set *got) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' simulate '%s'", g_tool, path);
  FILE *p = popen(cmd, "r");
  if (!p) return 0;
  char line[1024];
  while (fgets(line, sizeof line, p)) {
    line[strcspn(line, "\n")] = '\0';
    if (strncmp(line, "== ", 3)) add_normalized(got, line);
  }
  return pclose(p) == 0;
}

static int run_case(const char *path) {
  char *text, *expected;
  if (!conformance_read_case(path, &text, &expected)) return 0;
  line_set want = {0}, got = {0};
  for (char *l = strtok(expected, "\n"); l; l = strtok(NULL, "\n"))
    if (*l) add_line(&want, l);
  sim_script *s = NULL;
  int ok = 1;
  if (g_tool) {
    if (!collect_from_tool(path, &got)) {
      printf("FAIL %s: %s simulate failed\n", path, g_tool);
      ok = 0;
    }
  } else if (sim_run(text, &s) != DISP_OK) {
    printf("FAIL %s: %s\n", path, disp_last_error());
    ok = 0;
  } else {
    for (int i = 0; i < sim_num_ops(s); i++) {
      char *table = disp_op_dump_table(sim_op(s, i));
      for (char *l = strtok(table, "\n"); l; l = strtok(NULL, "\n")) add_normalized(&got, l);
      free(table);
    }
  }
  if (ok) {
    for (int i = 0; i < want.n; i++)
      if (!has_line(&got, want.line[i])) {
        if (ok) printf("FAIL %s:", path);
        printf("\n  missing: %s", want.line[i]);
        ok = 0;
      }
    for (int i = 0; i < got.n; i++)
      if (!has_line(&want, got.line[i])) {
        if (ok) printf("FAIL %s:", path);
        printf("\n  extra:   %s", got.line[i]);
        ok = 0;
      }
    if (!ok) printf("\n");
  }
  sim_free(s);
  free_set(&want);
  free_set(&got);
  free(text);
  return ok;
}

int main(int argc, char **argv) { return conformance_main(argc, argv, "dispatch", run_case, &g_tool); }
