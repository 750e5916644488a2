/* harness.c - see harness.h. */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <disp.h>

#include "cg_region.h"

enum { RUNS = 7, CMD_MAX = 8192 };

double bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bench_median_ns(bench_run_fn run, const char *name, long iters) {
  double runs[RUNS];
  if (run(name, iters / 10 + 1)) return -1;
  for (int r = 0; r < RUNS; r++) {
    double t0 = bench_now_ns();
    if (run(name, iters)) return -1;
    runs[r] = (bench_now_ns() - t0) / (double)iters;
  }
  qsort(runs, RUNS, sizeof *runs, cmp_double);
  return runs[RUNS / 2];
}

void bench_cpu_model(char *model, size_t size) {
  char line[512];
  snprintf(model, size, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  while (f && fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (strncmp(line, "model name", 10) || !colon) continue;
    snprintf(model, size, "%s", colon + 2);
    model[strcspn(model, "\n")] = '\0';
    break;
  }
  if (f) fclose(f);
}

void bench_print_header(const char *title, const char *twin, const char *twin_what) {
  char model[256];
  bench_cpu_model(model, sizeof model);
  printf("%s\n", title);
  printf("machine: %s, %ld cores online; libdispatch %s, CPU capability %s, default threads %d\n", model,
         sysconf(_SC_NPROCESSORS_ONLN), disp_version_string(), disp_cpu_capability(), disp_get_num_threads());
  if (twin) printf("libtorch: %s, same OpenBLAS\n", twin_what);
  else printf("libtorch not built (no libtorch-dev when configured, or DISP_BENCH_LIBTORCH off): our side only\n");
  printf("times: best of 5 rounds alternating between the sides, each the median of 7 runs\n");
}

/* Splits "NAME:ITERS" into name (in buf) and iters; 0 or -1. */
static int parse_spec(const char *arg, char *buf, size_t size, long *iters) {
  const char *colon = strrchr(arg, ':');
  if (!colon || (size_t)(colon - arg) >= size) return -1;
  memcpy(buf, arg, (size_t)(colon - arg));
  buf[colon - arg] = '\0';
  *iters = atol(colon + 1);
  return *iters > 0 ? 0 : -1;
}

int bench_child_main(int argc, char **argv, bench_run_fn run) {
  if (argc < 4 || strcmp(argv[1], "--threads") || strcmp(argv[3], "--count")) return -1;
  int threads = atoi(argv[2]);
  if (threads > 0 && disp_set_num_threads(threads) != DISP_OK) return 2;
  for (int i = 4; i < argc; i++) {
    char name[128];
    long iters;
    if (parse_spec(argv[i], name, sizeof name, &iters) || run(name, 2)) return 1;
    CG_REGION_BEGIN();
    int st = run(name, iters);
    CG_REGION_END(name);
    if (st) return 1;
  }
  return 0;
}

/* Appends " NAME:ITERS" for each spec (cg: the callgrind count, skipping 0). */
static void append_specs(char *cmd, size_t size, const bench_spec *specs, int n, int cg) {
  for (int i = 0; i < n; i++) {
    long iters = cg ? specs[i].cg_iters : specs[i].iters;
    size_t len = strlen(cmd);
    if (iters > 0) snprintf(cmd + len, size - len, " %s:%ld", specs[i].name, iters);
  }
}

static int spec_index(const bench_spec *specs, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(specs[i].name, name)) return i;
  return -1;
}

int bench_twin_times(const char *twin, int threads, const bench_spec *specs, int n, double *ns,
                     int twin_threads[2]) {
  char cmd[CMD_MAX];
  snprintf(cmd, sizeof cmd, "%s'%s' --threads %d --time", threads == 1 ? "OPENBLAS_NUM_THREADS=1 " : "", twin,
           threads);
  append_specs(cmd, sizeof cmd, specs, n, 0);
  for (int i = 0; i < n; i++) ns[i] = -1;
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  char name[128];
  double v;
  while (fscanf(p, "%127s %lf", name, &v) == 2) {
    int i = spec_index(specs, n, name);
    if (i >= 0) ns[i] = v;
    else if (!strcmp(name, "threads")) twin_threads[0] = (int)v;
    else if (!strcmp(name, "default_threads")) twin_threads[1] = (int)v;
  }
  return pclose(p) == 0 ? 0 : -1;
}

enum { DUMP_LINE = 512 };

/* Reads one callgrind dump: the client request's name and the totals. */
static int read_dump(const char *path, char name[DUMP_LINE], double *total) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  static const char trigger[] = "desc: Trigger: Client Request: ";
  char line[DUMP_LINE];
  int found = 0;
  name[0] = '\0';
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    if (!strncmp(line, trigger, sizeof trigger - 1)) strcpy(name, line + sizeof trigger - 1);
    else if (!strncmp(line, "totals: ", 8)) *total = atof(line + 8), found = 1;
  }
  fclose(f);
  return found ? 0 : -1;
}

int bench_callgrind(const char *exe, const bench_spec *specs, int n, double *ins) {
  char dir[] = "/tmp/disp-bench-XXXXXX", cmd[CMD_MAX], path[128];
  for (int i = 0; i < n; i++) ins[i] = -1;
  if (!mkdtemp(dir)) return -1;
  snprintf(cmd, sizeof cmd,
           "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 DISP_NUM_THREADS=1 valgrind --tool=callgrind "
           "--instr-atstart=no --callgrind-out-file=%s/cg '%s' --threads 1 --count",
           dir, exe);
  append_specs(cmd, sizeof cmd, specs, n, 1);
  strncat(cmd, " >/dev/null 2>&1", sizeof cmd - strlen(cmd) - 1);
  int st = system(cmd);
  /* One dump per counted case, numbered from 1; then the final dump. */
  for (int k = 1; k <= n; k++) {
    char name[DUMP_LINE];
    double total;
    snprintf(path, sizeof path, "%s/cg.%d", dir, k);
    if (!read_dump(path, name, &total)) {
      int i = spec_index(specs, n, name);
      if (i >= 0 && specs[i].cg_iters > 0) ins[i] = total / (double)specs[i].cg_iters;
    }
    remove(path);
  }
  snprintf(path, sizeof path, "%s/cg", dir);
  remove(path);
  rmdir(dir);
  return st == 0 ? 0 : -1;
}

const char *bench_label(const bench_spec *s) { return s->label ? s->label : s->name; }

void bench_print_counts(const char *twin, const bench_spec *specs, int n, const char *what) {
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  double *ins = malloc(sizeof *ins * (size_t)(n > 0 ? n : 1)), *tins = malloc(sizeof *tins * (size_t)(n > 0 ? n : 1));
  if (len <= 0 || !ins || !tins || system("valgrind --version >/dev/null 2>&1") != 0) {
    printf("(valgrind not found: no instruction counts)\n");
    free(ins), free(tins);
    return;
  }
  self[len] = '\0';
  bench_callgrind(self, specs, n, ins);
  if (!twin || bench_callgrind(twin, specs, n, tins))
    for (int i = 0; i < n; i++) tins[i] = -1;
  printf("instructions per %s (callgrind, only the measured loop; 1 thread, OPENBLAS_NUM_THREADS=1)\n", what);
  printf("%-16s %14s %14s %8s\n", "case", "ours", "libtorch", "ratio");
  for (int i = 0; i < n; i++) {
    char a[32], b[32], r[32];
    if (ins[i] < 0) continue;
    bench_cell(a, sizeof a, "%.0f", ins[i]);
    bench_cell(b, sizeof b, "%.0f", tins[i]);
    bench_cell(r, sizeof r, "%.2fx", tins[i] > 0 ? tins[i] / ins[i] : -1);
    printf("%-16s %14s %14s %8s\n", bench_label(&specs[i]), a, b, r);
  }
  printf("\nratio = libtorch instructions / ours. Counted at one thread: under callgrind threads take turns,\n"
         "and an idle pool's spin-waits would be counted as work.\n");
  free(ins), free(tins);
}

double bench_copy_ns(size_t bytes) {
  char *src = malloc(bytes), *dst = malloc(bytes);
  if (!src || !dst) {
    free(src), free(dst);
    return -1;
  }
  memset(src, 1, bytes), memset(dst, 2, bytes);
  double t0 = bench_now_ns();
  long reps = 0;
  while (bench_now_ns() - t0 < 1e6) memcpy(dst, src, bytes), reps++; /* warm, and sizes the runs */
  reps = reps * 2 + 1;
  double runs[RUNS];
  for (int r = 0; r < RUNS; r++) {
    t0 = bench_now_ns();
    for (long i = 0; i < reps; i++) {
      memcpy(dst, src, bytes);
      __asm__ volatile("" : : "r"(dst) : "memory"); /* keep every copy */
    }
    runs[r] = (bench_now_ns() - t0) / (double)reps;
  }
  free(src), free(dst);
  qsort(runs, RUNS, sizeof *runs, cmp_double);
  return runs[RUNS / 2];
}

void bench_cell(char *buf, size_t size, const char *fmt, double v) {
  if (v < 0) snprintf(buf, size, "-");
  else snprintf(buf, size, fmt, v);
}

void bench_ratio_header(const char *what) {
  printf("%-16s %-9s %10s %12s %8s %8s  %s\n", what, "threads", "ours us", "libtorch us", "ratio", "target", "result");
}

void bench_print_ratio_row(const char *label, const char *threads, double ours_ns, double theirs_ns, double goal) {
  char a[32], b[32], r[32], g[32];
  double ratio = theirs_ns > 0 && ours_ns > 0 ? theirs_ns / ours_ns : -1;
  bench_cell(a, sizeof a, "%.2f", ours_ns < 0 ? -1 : ours_ns / 1e3);
  bench_cell(b, sizeof b, "%.2f", theirs_ns < 0 ? -1 : theirs_ns / 1e3);
  bench_cell(r, sizeof r, "%.2fx", ratio);
  snprintf(g, sizeof g, ">= %gx", goal);
  printf("%-16s %-9s %10s %12s %8s %8s  %s\n", label, threads, a, b, r, g,
         ratio < 0 ? "-" : ratio >= goal ? "PASS" : "MISS");
}

/* Keeps the smaller of best[i] and v[i], ignoring -1 on either side. */
static void keep_best(double *best, const double *v, int n) {
  for (int i = 0; i < n; i++)
    if (v[i] >= 0 && (best[i] < 0 || v[i] < best[i])) best[i] = v[i];
}

int bench_race(bench_run_fn run, const char *twin, int threads, const bench_spec *specs, int n, double *ours,
               double *theirs, int twin_threads[2]) {
  int saved = disp_get_num_threads(), st = 0;
  double *round = malloc(sizeof *round * (size_t)(n > 0 ? n : 1));
  if (!round || (threads > 0 && disp_set_num_threads(threads) != DISP_OK)) st = -1;
  for (int i = 0; i < n; i++) ours[i] = theirs[i] = -1;
  twin_threads[0] = twin_threads[1] = -1;
  for (int r = 0; r < 5 && st == 0; r++) {
    for (int i = 0; i < n && st == 0; i++)
      if ((round[i] = bench_median_ns(run, specs[i].name, specs[i].iters)) < 0) st = -1;
    keep_best(ours, round, n);
    if (twin && bench_twin_times(twin, threads, specs, n, round, twin_threads) == 0) keep_best(theirs, round, n);
  }
  disp_set_num_threads(saved);
  free(round);
  return st;
}

int bench_race_all(bench_run_fn run, const char *twin, const bench_spec *specs, int n, bench_print_fn print) {
  double *ours = malloc(sizeof *ours * (size_t)(n > 0 ? n : 1)), *theirs = malloc(sizeof *theirs * (size_t)(n > 0 ? n : 1));
  int settings[2] = {1, disp_get_num_threads()}, twin_threads[2] = {-1, -1}, st = ours && theirs ? 0 : -1;
  for (int t = 0; t < (settings[1] > 1 ? 2 : 1) && st == 0; t++) {
    char label[32];
    st = bench_race(run, twin, settings[t], specs, n, ours, theirs, twin_threads);
    if (twin_threads[0] > 0) snprintf(label, sizeof label, "%d/%d", settings[t], twin_threads[0]);
    else snprintf(label, sizeof label, "%d", settings[t]);
    if (st == 0) print(label, ours, theirs);
  }
  free(ours), free(theirs);
  printf("\nthreads: ours/libtorch, set by disp_set_num_threads and at::set_num_threads: 1, then our default\n"
         "(one per core). At 1, libtorch also gets OPENBLAS_NUM_THREADS=1; otherwise its OpenBLAS keeps its own\n"
         "pool, as libtorch runs by default.");
  if (twin_threads[1] > 0)
    printf(" libtorch's own default here is %d thread%s (at::get_num_threads();\n"
           "1.13 takes half of hardware_concurrency on x86-64).", twin_threads[1], twin_threads[1] == 1 ? "" : "s");
  printf("\n");
  return st;
}
