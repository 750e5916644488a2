/*
 * test_conformance_calls.c - every case of tests/data/calls/ through the
 * real call path (disp simulate --calls's engine), compared as the
 * conformance README says: the scenario/kernel/fallback/result lines in
 * order, exactly, except that a "result error" line matches when the
 * library's message starts with the expected text.
 *
 * Data: PyTorch 1.13.1's recorded call traces with libdispatch's documented
 * differences applied (shared/conformance/calls).
 * Usage: test_conformance_calls [--tool DISP] [CASE.txt...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <disp.h>

#include "conformance_main.h"
#include "simulate.h"


int disp_tool_simulate_calls(const sim_script *s, FILE *out);

static const char *g_tool;

static int keep(const char *l) {
  return !strncmp(l, "scenario ", 9) || !strncmp(l, "  kernel ", 9) || !strncmp(l, "  fallback ", 11) ||
         !strncmp(l, "  result ", 9);
}

/* Splits text into the kept lines (modifies text). */
static int lines_of(char *text, char **out, int cap) {
  int n = 0;
  for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"))
    if (keep(l) && n < cap) out[n++] = l;
  return n;
}

static char *run_engine(const char *script) {
  sim_script *s = NULL;
  if (sim_run(script, &s) != DISP_OK) return NULL;
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  int rc = mem ? disp_tool_simulate_calls(s, mem) : 1;
  if (mem) fclose(mem);
  sim_free(s);
  if (rc) {
    free(buf);
    return NULL;
  }
  return buf;
}

static char *run_tool(const char *path) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' simulate --calls '%s'", g_tool, path);
  FILE *p = popen(cmd, "r");
  if (!p) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  size_t n;
  while (buf && (n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if (len + 1 >= cap) {
      char *q = realloc(buf, cap *= 2);
      if (!q) {
        free(buf);
        buf = NULL;
      }
      buf = q;
    }
  }
  if (buf) buf[len] = '\0';
  if (pclose(p) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

static int run_case(const char *path) {
  char *text, *expected_text;
  if (!conformance_read_case(path, &text, &expected_text)) return 0;
  char *got_text = g_tool ? run_tool(path) : run_engine(text);
  if (!got_text) {
    printf("FAIL %s: simulate failed: %s\n", path, disp_last_error());
    free(text);
    return 0;
  }
  char *want[512], *got[512];
  int nw = lines_of(expected_text, want, 512), ng = lines_of(got_text, got, 512);
  int ok = nw == ng;
  if (!ok) printf("FAIL %s: %d lines, expected %d\n", path, ng, nw);
  for (int i = 0; ok && i < nw; i++) {
    const char *e = want[i], *g = got[i];
    const char *err = "  result error ";
    size_t el = strlen(err);
    int same = !strncmp(e, err, el) ? !strncmp(g, err, el) && !strncmp(g + el, e + el, strlen(e + el))
                                   : !strcmp(e, g);
    if (!same) {
      printf("FAIL %s line %d:\n  got:      %.200s\n  expected: %.200s\n", path, i + 1, g, e);
      ok = 0;
    }
  }
  free(got_text);
  free(text);
  return ok;
}

int main(int argc, char **argv) { return conformance_main(argc, argv, "calls", run_case, &g_tool); }
