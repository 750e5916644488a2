/*
 * harness.h - what the C benchmarks that race a libtorch twin share
 * (bench_ops, mlp_forward): timing, the machine header, running the twin,
 * callgrind counts and the machine's copy bandwidth.
 *
 * A benchmark names its cases and gives one function that runs a case
 * `iters` times (bench_run_fn). Its own side is timed in-process; the twin
 * (a C++ program over libtorch, see twin.h) and callgrind runs are child
 * processes that take the same case names:
 *
 *   PROGRAM --threads N --count NAME:ITERS...   each case warm, then ITERS
 *                                               calls in a callgrind region
 *   TWIN    --threads N --time  NAME:ITERS...   prints "default_threads D"
 *                                               (libtorch's own default),
 *                                               "threads T", then "NAME ns"
 *                                               per case
 *   TWIN    --threads N --count NAME:ITERS...   as PROGRAM --count
 *
 * N is the thread count both sides use (ours disp_set_num_threads, the twin
 * at::set_num_threads); 0 keeps each side's default.
 *
 * Timing method (both sides): a warm-up of iters/10 + 1 calls, then 7 runs
 * of `iters` calls; a case's figure is the median run. The C benchmark
 * alternates rounds between its side and the twin and keeps each side's
 * best round, so a burst of load on this shared machine hurts one round,
 * not one side.
 *
 * Not thread-safe (benchmarks are single-threaded programs); errors print
 * to stderr and come back as -1.
 */
#ifndef DISP_BENCH_HARNESS_H
#define DISP_BENCH_HARNESS_H

#include <stddef.h>

/* Runs case `name` `iters` times on the current thread setting. Returns 0,
 * or -1 for an unknown case or a failed call (after printing why). */
typedef int (*bench_run_fn)(const char *name, long iters);

/* One case as the children see it: its name, calls per timed run, calls
 * counted under callgrind (0: not counted); label: how tables show it
 * (NULL: the name). */
typedef struct bench_spec {
  const char *name;
  long iters;
  long cg_iters;
  const char *label;
} bench_spec;

/* The label of `s` for tables. */
const char *bench_label(const bench_spec *s);

/* A monotonic clock in nanoseconds. */
double bench_now_ns(void);

/* The per-call median of 7 timed runs of `iters` calls (after the warm-up),
 * in ns; -1 when the case fails. */
double bench_median_ns(bench_run_fn run, const char *name, long iters);

/* The CPU's model name from /proc/cpuinfo ("unknown" without one), into model[size]. */
void bench_cpu_model(char *model, size_t size);

/* Prints `title`, then the CPU model (/proc/cpuinfo), the online cores,
 * disp_cpu_capability() and our default thread count, then what the twin
 * is (`twin_what`) or that it was not built (twin NULL), and the timing
 * method. */
void bench_print_header(const char *title, const char *twin, const char *twin_what);

/* Handles `--threads N --count NAME:ITERS...` (see above) with `run`.
 * Returns the exit status for main, or -1 when argv is not that command. */
int bench_child_main(int argc, char **argv, bench_run_fn run);

/* Times every case at `threads` (0: each side's default) in 5 rounds
 * alternating between our side (in-process, disp_set_num_threads; the
 * setting is restored after) and the twin (NULL: none). ours[i] and
 * theirs[i] get each side's best round in ns/call, -1 where a side has no
 * figure; twin_threads[0] the twin's thread count, [1] libtorch's own
 * default (-1 without a twin). Returns 0, or -1 when our side failed. */
int bench_race(bench_run_fn run, const char *twin, int threads, const bench_spec *specs, int n, double *ours,
               double *theirs, int twin_threads[2]);

/* Prints one table's rows for one thread setting; `threads` labels it
 * ("ours/libtorch" thread counts). */
typedef void (*bench_print_fn)(const char *threads, const double *ours, const double *theirs);

/* bench_race at 1 thread, then at our default thread count (the twin set
 * to the same count), calling print after each; then a note on the
 * settings, with libtorch's own default. Returns 0, or -1 when our side
 * failed. */
int bench_race_all(bench_run_fn run, const char *twin, const bench_spec *specs, int n, bench_print_fn print);

/* Runs `twin --threads threads --time` on specs[0..n) and stores ns/call
 * per case in ns[] (-1 where missing); twin_threads[0] gets the twin's
 * thread count, [1] libtorch's own default. threads == 1 also sets OPENBLAS_NUM_THREADS=1 for the twin (the
 * pthreads OpenBLAS that libtorch links keeps its own pool otherwise).
 * Returns 0, or -1 when the twin failed. */
int bench_twin_times(const char *twin, int threads, const bench_spec *specs, int n, double *ns,
                     int twin_threads[2]);

/* Instructions per call of each case with cg_iters > 0, counted by one
 * callgrind run of `exe --threads 1 --count ...` with every pool at one
 * thread (OMP_, OPENBLAS_ and DISP_NUM_THREADS=1): only the calls inside
 * the region count. ins[i] is -1 for cases not counted. Returns 0, or -1
 * when valgrind or the program failed. */
int bench_callgrind(const char *exe, const bench_spec *specs, int n, double *ins);

/* Prints the instruction table: per counted case, ours (this program,
 * under bench_callgrind) and the twin's (NULL: none), with the ratio;
 * `what` names a call ("call", "forward"). Prints a note without valgrind. */
void bench_print_counts(const char *twin, const bench_spec *specs, int n, const char *what);

/* ns for one memcpy of `bytes` between warm buffers: the median of 7 runs,
 * each the mean over enough copies to take about 2 ms; -1 without memory.
 * One thread: the copy bandwidth a single core sees. */
double bench_copy_ns(size_t bytes);

/* Prints one row of a ratio table: label, threads, ours and libtorch in us
 * (from ns; "-" where < 0), the ratio libtorch / ours, ">= goal x" and PASS
 * or MISS ("-" without both figures). The header is bench_ratio_header. */
void bench_print_ratio_row(const char *label, const char *threads, double ours_ns, double theirs_ns, double goal);

/* Prints the header row bench_print_ratio_row's rows go under; `what`
 * names the first column ("size", "case"). */
void bench_ratio_header(const char *what);

/* snprintf(buf, size, fmt, v), or "-" when v < 0. */
void bench_cell(char *buf, size_t size, const char *fmt, double v);

#endif /* DISP_BENCH_HARNESS_H */
