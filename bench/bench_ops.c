/*
 * bench_ops - what built-in operators cost through the dispatcher, beside
 * libtorch:
 *   add_1          disp_aten_add_Tensor on 1-element float32 tensors (dispatch-bound)
 *   mm_64, mm_256  disp_aten_mm on float32 squares, through CBLAS when the
 *                  build has it (libtorch links the same Debian OpenBLAS)
 *   *_portable     the same with the portable C kernel (no libtorch twin)
 *
 * ns/call is the median of 7 runs. Machines here are noisy, so the two
 * sides are measured alternately, five rounds, and each keeps its best
 * median: a burst of load then hurts one round, not one side. Instruction
 * counts come from callgrind (two runs of different lengths, differenced),
 * which noise does not move.
 *
 * libtorch's side is bench/ops_torch, built when bench/CMakeLists.txt found
 * libtorch; without it the reference figures for libtorch 1.13 on
 * this kind of machine stand in (add 1.4-1.8 us and 5300-5950 instructions,
 * mm 256 12 ms with the reference BLAS).
 *
 *   bench_ops                          the table
 *   bench_ops --case NAME --iters N    run one case (used under callgrind)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <disp.h>

#include "gemm.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static disp_tensor *filled(int64_t r, int64_t c) {
  int64_t sz[2] = {r, c};
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sz, 2, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK) {
    fprintf(stderr, "bench_ops: %s\n", disp_last_error());
    exit(1);
  }
  float *p = disp_tensor_data_ptr(t);
  for (int64_t i = 0; i < r * c; i++) p[i] = (float)((i * 7) % 13) / 8.0f;
  return t;
}

typedef struct bench_case {
  const char *name;
  int n;          /* 1 for add, the matrix side for mm */
  int portable;   /* mm through the portable kernel */
  long iters;     /* calls per timed run */
  long cg_iters;  /* calls in the shorter callgrind run (0: no count) */
  double ref_ns;  /* libtorch 1.13 reference when not measured (0: none) */
  double ref_ins;
  const char *target;
} bench_case;

static const bench_case cases[] = {
    {"add_1", 1, 0, 200000, 1000, 1400, 5300, ">= 5x"},
    {"mm_64", 64, 0, 2000, 0, 0, 0, ">= 1x"},
    {"mm_256", 256, 0, 40, 0, 12e6, 0, ">= 1x"},
    {"mm_64_portable", 64, 1, 200, 0, 0, 0, "-"},
    {"mm_256_portable", 256, 1, 4, 0, 12e6, 0, "-"},
};
enum { NCASES = sizeof cases / sizeof *cases };

static const bench_case *case_named(const char *name) {
  for (int i = 0; i < NCASES; i++)
    if (!strcmp(cases[i].name, name)) return &cases[i];
  return NULL;
}

/* Runs `c` `iters` times; exits with the library's message on an error. */
static disp_tensor *x, *y; /* the operands of the last case run, `side` square */
static int side;

static void run_case(const bench_case *c, long iters) {
  disp_tensor *out = NULL;
  disp_status st = DISP_OK;
  if (side != c->n) {
    disp_tensor_release(x), disp_tensor_release(y);
    x = filled(c->n, c->n), y = filled(c->n, c->n), side = c->n;
  }
  disp__gemm_force_portable(c->portable);
  for (long i = 0; i < iters && st == DISP_OK; i++) {
    st = c->n == 1 ? disp_aten_add_Tensor(x, y, disp_scalar_int(1), &out) : disp_aten_mm(x, y, &out);
    if (st == DISP_OK) disp_tensor_release(out);
  }
  if (st != DISP_OK) {
    fprintf(stderr, "bench_ops %s: %s\n", c->name, disp_last_error());
    exit(1);
  }
}

static double median_ns(const bench_case *c) {
  double runs[7];
  run_case(c, c->iters / 10 + 1); /* warm caches and the allocator */
  for (int r = 0; r < 7; r++) {
    double t0 = now_ns();
    run_case(c, c->iters);
    runs[r] = (now_ns() - t0) / (double)c->iters;
  }
  qsort(runs, 7, sizeof *runs, cmp_double);
  return runs[3];
}

/* Runs `cmd` and returns the last number on a line starting with `key`, or -1. */
static double read_number(const char *cmd, const char *key) {
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  char line[512];
  double v = -1;
  while (fgets(line, sizeof line, p)) {
    char *at = strstr(line, key);
    if (at) v = atof(at + strlen(key));
  }
  return pclose(p) == 0 ? v : -1;
}

/* Instructions per call of `exe --case NAME`: two callgrind runs, differenced. */
static double callgrind_ins(const char *exe, const bench_case *c) {
  double counts[2];
  for (int k = 0; k < 2; k++) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "valgrind --tool=callgrind --callgrind-out-file=/dev/null '%s' --case %s --iters %ld 2>&1", exe,
             c->name, c->cg_iters * (k ? 21 : 1));
    counts[k] = read_number(cmd, "Collected :");
    if (counts[k] < 0) return -1;
  }
  return (counts[1] - counts[0]) / (double)(c->cg_iters * 20);
}

#ifdef DISP_BENCH_TORCH_EXE
static double torch_ns(const bench_case *c) {
  if (c->portable) return -1;
  char cmd[4096], key[64];
  snprintf(cmd, sizeof cmd, "'%s' %s", DISP_BENCH_TORCH_EXE, c->name);
  snprintf(key, sizeof key, "%s ", c->name);
  return read_number(cmd, key);
}
#endif

static void cell(char *buf, size_t n, const char *fmt, double v) {
  if (v < 0) snprintf(buf, n, "-");
  else snprintf(buf, n, fmt, v);
}

int main(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "--case")) {
    const bench_case *c = case_named(argv[2]);
    if (!c) return 1;
    run_case(c, atol(argv[4]));
    disp_tensor_release(x), disp_tensor_release(y);
    disp_shutdown();
    return 0;
  }
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  int have_valgrind = len > 0 && system("valgrind --version >/dev/null 2>&1") == 0;
  if (len > 0) self[len] = '\0';
  int have_blas = disp__gemm_have_blas();

  double ours[NCASES], torch[NCASES];
  int measured_torch = 0;
  for (int i = 0; i < NCASES; i++) ours[i] = torch[i] = -1;
  for (int round = 0; round < 5; round++) {
    for (int i = 0; i < NCASES; i++) {
      if (!cases[i].portable && !have_blas && cases[i].n > 1) continue; /* no CBLAS row without CBLAS */
      double t = median_ns(&cases[i]);
      if (ours[i] < 0 || t < ours[i]) ours[i] = t;
#ifdef DISP_BENCH_TORCH_EXE
      t = torch_ns(&cases[i]);
      if (t >= 0 && (torch[i] < 0 || t < torch[i])) torch[i] = t, measured_torch = 1;
#endif
    }
  }
  disp__gemm_force_portable(0);

  printf("libdispatch %s operator benchmark: best of 5 alternating rounds, each the median of 7 runs\n",
         disp_version_string());
  printf(measured_torch ? "libtorch measured side by side (bench/ops_torch, same cases, same BLAS)\n\n"
                        : "libtorch not built: compared with the libtorch 1.13 reference figures of the issue\n\n");
  printf("%-16s %12s %12s %8s %10s %10s %8s  %s\n", "case", "ns/call", "libtorch ns", "speedup", "ins/call",
         "libtorch", "ins x", "target");
  for (int i = 0; i < NCASES; i++) {
    const bench_case *c = &cases[i];
    if (ours[i] < 0) continue;
    double tns = torch[i] >= 0 ? torch[i] : (c->ref_ns > 0 ? c->ref_ns : -1);
    double ins = -1, tins = c->ref_ins > 0 ? c->ref_ins : -1;
    if (have_valgrind && c->cg_iters) {
      ins = callgrind_ins(self, c);
#ifdef DISP_BENCH_TORCH_EXE
      double t = callgrind_ins(DISP_BENCH_TORCH_EXE, c);
      if (t >= 0) tins = t;
#endif
    }
    char a[32], b[32], s[32], d[32], e[32], f[32];
    cell(a, sizeof a, "%.1f", ours[i]);
    cell(b, sizeof b, torch[i] >= 0 ? "%.1f" : "%.0f ref", tns);
    cell(s, sizeof s, "%.2fx", tns >= 0 ? tns / ours[i] : -1);
    cell(d, sizeof d, "%.0f", ins);
    cell(e, sizeof e, torch[i] >= 0 || tins < 0 ? "%.0f" : "%.0f ref", tins);
    cell(f, sizeof f, "%.2fx", ins > 0 && tins > 0 ? tins / ins : -1);
    printf("%-16s %12s %12s %8s %10s %10s %8s  %s\n", c->name, a, b, s, d, e, f, c->target);
  }
  printf("\nspeedup = libtorch ns / ours; ins x = libtorch instructions / ours (callgrind).\n");
  if (!have_blas) printf("(built without CBLAS: only the portable GEMM rows)\n");
  if (!have_valgrind) printf("(valgrind not found: no instruction counts)\n");
  disp_tensor_release(x), disp_tensor_release(y);
  disp_shutdown();
  return 0;
}
