/*
 * devtest_cmd.c - `disp test`: the device-generic suites (devtest.h) on
 * every available device, then, for each plugin's device, every reference
 * case through check-ops. What a backend author outside this repository
 * runs on their plugin: `disp test --plugin path/to/backend.so`.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_ops.h"
#include "devtest.h"
#include "tool_plugin.h"

#define MAX_DEVICES 8

static const char *const test_usage =
    "usage: disp test [--plugin X.so]... [--device DEVICE]... [--cases DIR] [--no-cases] [--verbose]\n\n"
    "Runs the device-generic tests (suites ops, autograd, optim: each computes on the device\n"
    "and on the CPU and compares, for float32 and float64) on every device: cpu, meta (shapes only) and the device of\n"
    "every loaded plugin - or only the --device ones. Then, for each plugin device, every\n"
    "reference case of DIR (default: $DISP_OPS_CASES, else the installed cases) through\n"
    "`disp check-ops --device`, one summary line per operator file. Prints a PASS/FAIL/SKIP\n"
    "table of test x device, the failures' messages, each device's memory statistics\n"
    "(disp_memory_stats_get) and 'N passed, M failed[, K skipped]'.\n"
    "Exit 1 on any failure.\n";

typedef struct run {
  disp_device devs[MAX_DEVICES];
  int ndev;
  const char *cases;
  int no_cases, verbose;
  long passed, failed, skipped;
} run;

/* The devices plugins (or anything) made usable: a registered allocator on
 * a type other than CPU and Meta; device 0 of each. */
static void add_plugin_devices(run *r) {
  for (int b = 0; b < DISP_NUM_BACKENDS && r->ndev < MAX_DEVICES; b++)
    if (b != DISP_BACKEND_CPU && b != DISP_BACKEND_META && disp_allocator_get((disp_backend)b))
      r->devs[r->ndev++] = disp_device_make((disp_backend)b, 0);
}

static int is_plugin_device(disp_device d) { return d.type != DISP_BACKEND_CPU && d.type != DISP_BACKEND_META; }

/* The dtypes a test is instantiated for (DT_F32_ONLY: one). */
static const disp_dtype test_dtypes[] = {DISP_DTYPE_FLOAT32, DISP_DTYPE_FLOAT64};

static int instances(const dt_test *t) { return t->needs & DT_F32_ONLY ? 1 : 2; }

/* Per device and dtype, as PyTorch's precisionOverride: a plugin's device
 * may compute differently (its own kernels), so it gets a looser bound. */
static void tolerance(dt_ctx *c) {
  int f64 = c->dtype == DISP_DTYPE_FLOAT64, plugin = is_plugin_device(c->dev);
  c->rtol = f64 ? (plugin ? 1e-9 : 1e-12) : (plugin ? 1e-4 : 1e-5);
  c->atol = f64 ? (plugin ? 1e-11 : 1e-14) : (plugin ? 1e-5 : 1e-6);
}

static int run_one(run *r, const dt_test *t, disp_dtype dtype, disp_device dev, char *cell, size_t len) {
  dt_ctx *c = calloc(1, sizeof *c);
  if (!c) return snprintf(cell, len, "FAIL"), 1;
  c->dev = dev;
  c->dtype = dtype;
  c->shapes_only = dev.type == DISP_BACKEND_META;
  tolerance(c);
  int rc = c->shapes_only && (t->needs & DT_VALUES) ? DT_SKIP : t->fn(c);
  for (size_t i = c->nowned; i-- > 0;) disp_tensor_release(c->owned[i]);
  char name[64];
  disp_device_format(dev, name, sizeof name);
  if (rc == DT_SKIP) {
    snprintf(cell, len, "SKIP"), r->skipped++;
  } else if (c->failed) {
    snprintf(cell, len, "FAIL"), r->failed++;
    printf("FAIL %s/%s %s on %s: %s\n", t->suite, t->name, disp_dtype_name(dtype), name, c->msg);
  } else {
    snprintf(cell, len, "PASS"), r->passed++;
  }
  free(c);
  return 0;
}

static void run_suite(run *r, const dt_test *tests, size_t n, char (*table)[MAX_DEVICES][8], size_t *row) {
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < instances(&tests[i]); k++, (*row)++)
      for (int d = 0; d < r->ndev; d++) run_one(r, &tests[i], test_dtypes[k], r->devs[d], table[*row][d], 8);
}

static size_t count_rows(const dt_test *tests, size_t n) {
  size_t rows = 0;
  for (size_t i = 0; i < n; i++) rows += (size_t)instances(&tests[i]);
  return rows;
}

static void print_table(const run *r, char (*table)[MAX_DEVICES][8]) {
  const dt_test *suites[3] = {dt_ops_tests, dt_autograd_tests, dt_optim_tests};
  size_t counts[3] = {dt_ops_count, dt_autograd_count, dt_optim_count}, row = 0;
  printf("\n%-54s", "test");
  for (int d = 0; d < r->ndev; d++) {
    char name[32];
    disp_device_format(r->devs[d], name, sizeof name);
    printf(" %-10s", name);
  }
  printf("\n");
  for (int s = 0; s < 3; s++)
    for (size_t i = 0; i < counts[s]; i++)
      for (int k = 0; k < instances(&suites[s][i]); k++, row++) {
        char label[80];
        snprintf(label, sizeof label, "%s/%s %s", suites[s][i].suite, suites[s][i].name,
                 disp_dtype_name(test_dtypes[k]));
        printf("%-54s", label);
        for (int d = 0; d < r->ndev; d++) printf(" %-10s", table[row][d]);
        printf("\n");
      }
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The reference case files of dir (*.txt but README), sorted; NULL if none. */
static char **case_files(const char *dir, int *n) {
  DIR *d = opendir(dir);
  char **files = NULL;
  *n = 0;
  if (!d) return NULL;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".txt")) continue;
    char **grown = realloc(files, (size_t)(*n + 1) * sizeof *files);
    char *path = malloc(strlen(dir) + len + 2);
    if (!grown || !path) { free(path); if (grown) files = grown; break; }
    files = grown;
    sprintf(path, "%s/%s", dir, e->d_name);
    files[(*n)++] = path;
  }
  closedir(d);
  if (*n) qsort(files, (size_t)*n, sizeof *files, cmp_str);
  return files;
}

static const char *default_cases(void) {
  const char *env = getenv("DISP_OPS_CASES");
  if (env && *env) return env;
  DIR *d = opendir(DISP_OPS_CASES_INSTALLED);
  if (d) return closedir(d), DISP_OPS_CASES_INSTALLED;
  return DISP_OPS_CASES_SOURCE;
}

/* Every reference case on dev, as check-ops --device NAME --per-op
 * --failures-only; the counts join the run's. */
static void run_cases(run *r, disp_device dev) {
  int n = 0;
  char **files = case_files(r->cases, &n);
  if (!files) {
    printf("FAIL reference cases: no case files in %s (--cases DIR)\n", r->cases);
    r->failed++;
    return;
  }
  char name[64];
  disp_device_format(dev, name, sizeof name);
  printf("\n== reference cases on %s (%d operator files in %s): one line per file\n", name, n, r->cases);
  chk_opts o = {.device = dev, .per_op = 1, .failures_only = 1, .verbose = r->verbose};
  chk_totals t = {0};
  chk_run_files(&o, files, n, &t);
  printf("reference cases on %s: %ld passed, %ld failed, %ld skipped\n", name, t.passed, t.failed, t.skipped);
  r->passed += t.passed, r->failed += t.failed, r->skipped += t.skipped;
  for (int i = 0; i < n; i++) free(files[i]);
  free(files);
}

/* What each tested device's allocator handed out (disp_memory_stats_get):
 * a device whose tests released everything holds 0 bytes afterwards. */
static void print_memory(const run *r) {
  printf("\n%-12s %14s %14s %12s %12s\n", "memory", "allocated now", "peak", "allocations", "live blocks");
  for (int d = 0; d < r->ndev; d++) {
    disp_memory_stats m;
    char name[32];
    disp_device_format(r->devs[d], name, sizeof name);
    if (r->devs[d].type == DISP_BACKEND_META || disp_memory_stats_get(r->devs[d], &m) != DISP_OK) continue;
    printf("%-12s %14lld %14lld %12lld %12lld\n", name, (long long)m.allocated_bytes, (long long)m.peak_bytes,
           (long long)m.num_allocs, (long long)m.live_blocks);
  }
}

int disp_tool_test(int argc, char **argv) {
  run r = {.cases = NULL};
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { fputs(test_usage, stdout); return 0; }
    if (!strcmp(argv[i], "--device") && i + 1 < argc) {
      if (r.ndev == MAX_DEVICES) {
        fprintf(stderr, "disp test: too many --device options: at most %d devices in one run ('%s' is one more)\n",
                MAX_DEVICES, argv[i + 1]);
        return 2;
      }
      if (disp_tool_parse_device("test", argv[++i], &r.devs[r.ndev++])) return 2;
    } else if (!strcmp(argv[i], "--cases") && i + 1 < argc) r.cases = argv[++i];
    else if (!strcmp(argv[i], "--no-cases")) r.no_cases = 1;
    else if (!strcmp(argv[i], "--verbose")) r.verbose = 1;
    else { fprintf(stderr, "disp test: unexpected '%s'\n\n%s", argv[i], test_usage); return 2; }
  }
  if (!r.ndev) {
    r.devs[r.ndev++] = disp_device_make(DISP_BACKEND_CPU, -1);
    r.devs[r.ndev++] = disp_device_make(DISP_BACKEND_META, -1);
    add_plugin_devices(&r);
  }
  if (!r.cases) r.cases = default_cases();
  size_t rows = count_rows(dt_ops_tests, dt_ops_count) + count_rows(dt_autograd_tests, dt_autograd_count) +
                count_rows(dt_optim_tests, dt_optim_count),
         row = 0;
  char (*table)[MAX_DEVICES][8] = calloc(rows, sizeof *table);
  if (!table) return fprintf(stderr, "disp test: out of memory\n"), 1;
  run_suite(&r, dt_ops_tests, dt_ops_count, table, &row);
  run_suite(&r, dt_autograd_tests, dt_autograd_count, table, &row);
  run_suite(&r, dt_optim_tests, dt_optim_count, table, &row);
  print_table(&r, table);
  free(table);
  print_memory(&r);
  printf("device-generic tests: %ld passed, %ld failed, %ld skipped\n", r.passed, r.failed, r.skipped);
  for (int d = 0; d < r.ndev && !r.no_cases; d++)
    if (is_plugin_device(r.devs[d])) run_cases(&r, r.devs[d]);
  printf("%ld passed, %ld failed", r.passed, r.failed);
  if (r.skipped) printf(", %ld skipped", r.skipped);
  printf("\n");
  return r.failed ? 1 : 0;
}
