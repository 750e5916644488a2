/*
 * contention.c - the library's kernels quiet and beside one busy process,
 * at 1 thread and at the default, beside libtorch (issue 18, item 5).
 *
 * On a 2-core machine a split of the work waits for the slower thread;
 * when the other core is taken by another process, a worker runs late, and
 * a runtime whose idle threads spin takes that core's time too. The method
 * and the cases are contention.h's (shared with the libtorch twin,
 * bench/contention_torch, run as a child when built). Columns: median ms
 * quiet/1 thread, quiet/default, busy/1, busy/default, then default/1
 * quiet and busy (below 1: the default is faster). `contention --no-twin`
 * skips libtorch (to compare threading runtimes quickly).
 */
#define _POSIX_C_SOURCE 200809L
#include "contention.h"
#include "harness.h"

#include <string.h>

#include <disp.h>


#ifdef DISP_BENCH_TORCH_EXE
static const char *const twin = DISP_BENCH_TORCH_EXE;
#else
static const char *const twin = NULL;
#endif

static disp_tensor *a64, *b64, *a, *b, *m1, *m2, *x, *w1, *b1, *w2, *b2;

static disp_tensor *filled(int64_t r, int64_t c) {
  int64_t sz[2] = {r, c};
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sz, 2, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK) {
    fprintf(stderr, "contention: %s\n", disp_last_error());
    exit(1);
  }
  float *p = disp_tensor_data_ptr(t);
  for (int64_t i = 0; i < r * c; i++) p[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
  return t;
}

static int run(int c) {
  disp_tensor *o = NULL, *h = NULL, *r = NULL;
  disp_status st = DISP_OK;
  switch (c) {
  case CT_ADD64K: st = disp_aten_add_Tensor(a64, b64, disp_scalar_int(1), &o); break;
  case CT_ADD1M: st = disp_aten_add_Tensor(a, b, disp_scalar_int(1), &o); break;
  case CT_SUM1M: st = disp_aten_sum(a, -1, &o); break;
  case CT_MM: st = disp_aten_mm(m1, m2, &o); break;
  default:
    st = disp_aten_linear(x, w1, b1, &h);
    if (st == DISP_OK) st = disp_aten_relu(h, &r);
    if (st == DISP_OK) st = disp_aten_linear(r, w2, b2, &o);
  }
  disp_tensor_release(o), disp_tensor_release(h), disp_tensor_release(r);
  if (st == DISP_OK) return 0;
  fprintf(stderr, "contention %s: %s\n", ct_names[c], disp_last_error());
  return -1;
}

static void set_threads(int n) { disp_set_num_threads(n); }

/* Runs the twin; fills theirs[][] and its default thread count. 0 or -1. */
static int run_twin(int threads, double theirs[CT_NCASES][CT_NCOLS], int *def) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' %d", twin, threads);
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  char line[256];
  int rows = 0;
  while (fgets(line, sizeof line, p)) {
    int c;
    double q1, qd, b1_, bd;
    if (sscanf(line, "default_threads %d", def) == 1) continue;
    if (sscanf(line, "row %d %lf %lf %lf %lf", &c, &q1, &qd, &b1_, &bd) == 5 && c >= 0 && c < CT_NCASES) {
      theirs[c][0] = q1, theirs[c][1] = qd, theirs[c][2] = b1_, theirs[c][3] = bd;
      rows++;
    }
  }
  return pclose(p) == 0 && rows == CT_NCASES ? 0 : -1;
}

/* The CPU, the cores, the capability. */
static void print_header(void) {
  char model[256];
  bench_cpu_model(model, sizeof model);
  printf("contention: quiet and beside one busy process, 1 thread and the default\n");
  printf("machine: %s, %ld cores online; libdispatch %s, CPU capability %s\n", model,
         sysconf(_SC_NPROCESSORS_ONLN), disp_version_string(), disp_cpu_capability());
}

static void print_row(const char *name, const char *side, const double *v) {
  printf("%-22s %-9s %9.3f %9.3f %9.3f %9.3f %9.2f %9.2f\n", name, side, v[0], v[1], v[2], v[3], v[1] / v[0],
         v[3] / v[2]);
}

int main(int argc, char **argv) {
  disp_init();
  a64 = filled(256, 256), b64 = filled(256, 256);
  a = filled(1000, 1000), b = filled(1000, 1000);
  m1 = filled(256, 256), m2 = filled(256, 256);
  x = filled(64, 784), w1 = filled(256, 784), b1 = filled(1, 256), w2 = filled(10, 256), b2 = filled(1, 10);
  int def = disp_get_num_threads(), tdef = -1;
  double ours[CT_NCASES][CT_NCOLS], theirs[CT_NCASES][CT_NCOLS];
  if (ct_measure(run, set_threads, def, ours)) return 1;
  int skip_twin = argc > 1 && !strcmp(argv[1], "--no-twin");
  int have_twin = twin && !skip_twin && run_twin(def, theirs, &tdef) == 0;
  print_header();
  printf("cells: ms per call, the median of %d rounds' means (%d calls each), rounds alternating 1 thread / "
         "default; busy = one child spinning on a core\n",
         CT_ROUNDS, CT_REPS);
  printf("default: ours %d threads", def);
  if (have_twin) printf("; libtorch at %d too (its own default here: %d)", def, tdef);
  else if (twin && skip_twin) printf("; libtorch skipped (--no-twin)");
  else if (twin) printf("; the libtorch twin failed");
  else printf("; libtorch twin not built (no libtorch-dev when configured)");
  printf("\n%-22s %-9s %9s %9s %9s %9s %9s %9s\n", "case", "side", "quiet/1", "quiet/def", "busy/1", "busy/def",
         "q def/1", "b def/1");
  for (int c = 0; c < CT_NCASES; c++) {
    print_row(ct_names[c], "ours", ours[c]);
    if (have_twin) print_row(ct_names[c], "libtorch", theirs[c]);
  }
  disp_tensor *all[] = {a64, b64, a, b, m1, m2, x, w1, b1, w2, b2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) disp_tensor_release(all[i]);
  disp_shutdown();
  return 0;
}
