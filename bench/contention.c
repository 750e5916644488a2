/*
 * contention.c - the library's kernels quiet and beside one busy process,
 * at 1 thread and at the default (issue 18, item 5).
 *
 * On a 2-core machine a split of pointwise work waits for the slower
 * thread; when the other core is taken by another process, that thread
 * runs late, and a runtime whose idle threads spin takes its core too.
 * Each case prints the median of many repetitions (ms) in four columns:
 * quiet/1 thread, quiet/default, contended/1, contended/default.
 * The busy process is a child spinning on one core, bounded in time
 * (alarm) and killed at the end.
 * (The libtorch twin is not written yet: its column is missing.)
 */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <disp.h>

enum { REPS = 201 };

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static disp_tensor *filled(int64_t r, int64_t c) {
  int64_t sz[2] = {r, c};
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sz, 2, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK) exit(1);
  float *p = disp_tensor_data_ptr(t);
  for (int64_t i = 0; i < r * c; i++) p[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
  return t;
}

enum { C_ADD, C_SUM, C_MM, C_MLP, NCASES };
static const char *const names[NCASES] = {"add 1M f32", "sum 1M f32", "mm 256x256", "mlp fwd 64x784-256-10"};
static disp_tensor *a, *b, *m1, *m2, *x, *w1, *b1, *w2, *b2;

static disp_status run(int c) {
  disp_tensor *o = NULL, *h = NULL, *r = NULL;
  disp_status st = DISP_OK;
  switch (c) {
  case C_ADD: st = disp_aten_add_Tensor(a, b, disp_scalar_int(1), &o); break;
  case C_SUM: st = disp_aten_sum(a, -1, &o); break;
  case C_MM: st = disp_aten_mm(m1, m2, &o); break;
  default:
    st = disp_aten_linear(x, w1, b1, &h);
    if (st == DISP_OK) st = disp_aten_relu(h, &r);
    if (st == DISP_OK) st = disp_aten_linear(r, w2, b2, &o);
  }
  disp_tensor_release(o), disp_tensor_release(h), disp_tensor_release(r);
  return st;
}

static double median_ms(int c) {
  static double t[REPS];
  for (int i = 0; i < 10; i++) run(c);
  for (int i = 0; i < REPS; i++) {
    double t0 = now_ms();
    if (run(c) != DISP_OK) {
      fprintf(stderr, "contention %s: %s\n", names[c], disp_last_error());
      exit(1);
    }
    t[i] = now_ms() - t0;
  }
  qsort(t, REPS, sizeof t[0], cmp_d);
  return t[REPS / 2];
}

/* A child spinning on a core for at most 120 s. */
static pid_t start_busy(void) {
  pid_t p = fork();
  if (p == 0) {
    alarm(120);
    volatile uint64_t k = 0;
    for (;;) k++;
  }
  usleep(50000);
  return p;
}

int main(void) {
  disp_init();
  a = filled(1000, 1000), b = filled(1000, 1000);
  m1 = filled(256, 256), m2 = filled(256, 256);
  x = filled(64, 784), w1 = filled(256, 784), b1 = filled(1, 256), w2 = filled(10, 256), b2 = filled(1, 10);
  int def = disp_get_num_threads();
  double r[NCASES][4];
  for (int busy = 0; busy < 2; busy++) {
    pid_t child = busy ? start_busy() : 0;
    for (int c = 0; c < NCASES; c++)
      for (int k = 0; k < 2; k++) {
        disp_set_num_threads(k ? def : 1);
        r[c][busy * 2 + k] = median_ms(c);
      }
    if (child > 0) kill(child, SIGKILL), waitpid(child, NULL, 0);
  }
  disp_set_num_threads(def);
  printf("contention: median of %d, ms; default = %d threads; busy = one child spinning on a core\n", REPS, def);
  printf("%-24s %10s %10s %10s %10s\n", "case", "quiet/1", "quiet/def", "busy/1", "busy/def");
  for (int c = 0; c < NCASES; c++)
    printf("%-24s %10.3f %10.3f %10.3f %10.3f\n", names[c], r[c][0], r[c][1], r[c][2], r[c][3]);
  disp_tensor *all[] = {a, b, m1, m2, x, w1, b1, w2, b2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) disp_tensor_release(all[i]);
  disp_shutdown();
  return 0;
}
