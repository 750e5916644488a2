/*
 * contention.h - the measurement bench/contention and its libtorch twin
 * (bench/contention_torch.cpp) share, so both sides are timed alike.
 * Header-only, valid C11 and C++17; included once per program.
 *
 * Cases (by index, both sides run the same operations on the same shapes):
 *   add 64k f32   two blocks of the 32k grain: a short op, the wake-up cost
 *   add 1M f32    the case
 *   sum 1M f32    a reduction
 *   mm 256x256    one GEMM
 *   mlp fwd       linear 784->256, relu, linear 256->10 on a batch of 64
 *
 * Method: quiet first, then with one busy process beside us (a child
 * spinning on a core, alarm-bounded to 120 s, killed at the end). In each
 * state, CT_ROUNDS rounds; a round runs every case at 1 thread and at the
 * default, CT_REPS calls back to back after CT_WARM untimed ones (a
 * runtime's idle threads reach their steady state: spinning or asleep), so
 * a burst of outside load on this shared machine lands on both settings
 * alike. A round's figure is its mean per call: under contention the cost
 * is a few calls that wait a scheduler slice (ms) for a descheduled
 * thread, which a median of single calls would hide. A cell is the median
 * of its CT_ROUNDS round figures, in ms per call.
 */
#ifndef DISP_BENCH_CONTENTION_H
#define DISP_BENCH_CONTENTION_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { CT_ADD64K, CT_ADD1M, CT_SUM1M, CT_MM, CT_MLP, CT_NCASES };
enum { CT_ROUNDS = 9, CT_REPS = 60, CT_WARM = 10 };
/* Columns of a row: quiet/1, quiet/default, busy/1, busy/default. */
enum { CT_QUIET1, CT_QUIETD, CT_BUSY1, CT_BUSYD, CT_NCOLS };

static const char *const ct_names[CT_NCASES] = {"add 64k f32", "add 1M f32", "sum 1M f32", "mm 256x256",
                                                "mlp fwd 64x784-256-10"};

/* Runs case c once; 0, or -1 on failure (after printing why). */
typedef int (*ct_run_fn)(int c);
/* Sets the side's thread count. */
typedef void (*ct_threads_fn)(int n);

static double ct_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int ct_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A child spinning on a core for at most 120 s; -1 when fork fails. */
static pid_t ct_start_busy(void) {
  pid_t p = fork();
  if (p == 0) {
    alarm(120);
    volatile uint64_t k = 0;
    for (;;) k = k + 1;
  }
  usleep(50000);
  return p;
}

/* Fills r[case][column] (ms per call) at 1 thread and `def` threads; 0, or
 * -1 when a call failed or the busy child could not be started. */
static int ct_measure(ct_run_fn run, ct_threads_fn set_threads, int def, double r[CT_NCASES][CT_NCOLS]) {
  static double t[CT_NCASES][2][CT_ROUNDS];
  for (int busy = 0; busy < 2; busy++) {
    pid_t child = busy ? ct_start_busy() : 0;
    if (child < 0) return -1;
    for (int round = 0; round < CT_ROUNDS; round++)
      for (int c = 0; c < CT_NCASES; c++)
        for (int k = 0; k < 2; k++) {
          set_threads(k ? def : 1);
          for (int i = 0; i < CT_WARM; i++)
            if (run(c)) return -1;
          double t0 = ct_now_ms();
          for (int i = 0; i < CT_REPS; i++)
            if (run(c)) return -1;
          t[c][k][round] = (ct_now_ms() - t0) / CT_REPS;
        }
    if (child > 0) kill(child, SIGKILL), waitpid(child, NULL, 0);
    for (int c = 0; c < CT_NCASES; c++)
      for (int k = 0; k < 2; k++) {
        qsort(t[c][k], CT_ROUNDS, sizeof(double), ct_cmp);
        r[c][busy * 2 + k] = t[c][k][CT_ROUNDS / 2];
      }
  }
  set_threads(def);
  return 0;
}

#endif /* DISP_BENCH_CONTENTION_H */
