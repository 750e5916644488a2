/*
 * conformance_main.h - the shared driver of the data-driven conformance
 * tests: `test [--tool DISP] [CASE.txt...]` runs the named cases, or every
 * .txt file of DISP_TEST_DATA_DIR/<subdir> in name order, and ends with the
 * "N passed, M failed" line.
 */
#ifndef DISP_CONFORMANCE_MAIN_H
#define DISP_CONFORMANCE_MAIN_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <disp.h>

#include "simulate.h"

#ifndef DISP_TEST_DATA_DIR
#define DISP_TEST_DATA_DIR "tests/data"
#endif

static int conformance_cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * conformance_read_case - reads a case file and splits it at its "---"
 * line: *script is the whole text ending before the line (free() it),
 * *expected the lines after it (inside the same buffer). Prints a FAIL line
 * and returns 0 when the file is unreadable or has no "---".
 */
static int conformance_read_case(const char *path, char **script, char **expected) {
  size_t len = 0;
  int col = 0;
  char *text = sim_read_file(path, &len);
  if (!text) {
    printf("FAIL %s: cannot read: %s\n", path, strerror(errno));
    return 0;
  }
  if (sim_nul_line(text, len, &col)) {
    printf("FAIL %s: line %d: contains a NUL byte\n", path, sim_nul_line(text, len, &col));
    free(text);
    return 0;
  }
  char *sep = strstr(text, "\n---\n");
  if (!sep) {
    printf("FAIL %s: no '---' line\n", path);
    free(text);
    return 0;
  }
  sep[1] = '\0';
  *script = text;
  *expected = sep + 5;
  return 1;
}

/* Runs run_case on each case; *tool receives the --tool argument, if any. */
static int conformance_main(int argc, char **argv, const char *subdir, int (*run_case)(const char *path),
                            const char **tool) {
  int passed = 0, failed = 0;
  if (argc > 2 && !strcmp(argv[1], "--tool")) {
    *tool = argv[2];
    argc -= 2;
    argv += 2;
  }
  if (argc > 1) {
    for (int i = 1; i < argc; i++) run_case(argv[i]) ? passed++ : failed++;
  } else {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", DISP_TEST_DATA_DIR, subdir);
    DIR *d = opendir(dir);
    if (!d) {
      printf("cannot open %s\n", dir);
      return 1;
    }
    char *names[1024];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 1024;)
      if (strstr(e->d_name, ".txt")) names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, conformance_cmp_names);
    for (int i = 0; i < n; i++) {
      char path[2048];
      snprintf(path, sizeof path, "%s/%s", dir, names[i]);
      run_case(path) ? passed++ : failed++;
      free(names[i]);
    }
  }
  disp_shutdown();
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

#endif
