/*
 * bench_ops - what built-in operators cost through the dispatcher, beside
 * libtorch, float32 on the CPU:
 *   add_1                  disp_aten_add_Tensor on 1-element tensors (dispatch-bound)
 *   add_1k ... add_10M     add of two contiguous vectors of 1e3, 1e5, 1e6, 1e7 elements
 *   relu_1M, sum_1M        a 1e6-element vector (sum: to one element)
 *   softmax_1M             softmax over the last dim of [1000, 1000]
 *   conv2d_1_32            conv2d, batch 64, 28x28, 3x3, 1 -> 32 channels, stride 1,
 *   conv2d_32_64             padding 1 (28x28 out), with bias; and 32 -> 64
 *   mm_64, mm_256          disp_aten_mm on squares, through CBLAS when the build
 *                          has it (libtorch links the same Debian OpenBLAS)
 *   *_portable             mm with the portable C kernel (no libtorch twin)
 *
 * Every case runs at 1 thread and at the default threads, both sides the
 * same setting, timed as harness.h says (alternating rounds, best of 5,
 * each the median of 7 runs). Pointwise cases also print ns per element
 * beside a single-thread memcpy of the same bytes (one float32 per element;
 * add moves three per element, relu two), so the distance to the memory
 * limit shows. Then instructions per call from callgrind for the cheaper
 * cases, only the measured loop, every pool at one thread.
 *
 * libtorch's side is bench/ops_torch, built when bench/CMakeLists.txt found
 * libtorch; without it only our side is printed.
 *
 *   bench_ops                                  the tables (about three minutes)
 *   bench_ops --threads N --count NAME:ITERS   cases under callgrind (harness.h)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <disp.h>

#include "gemm.h"
#include "harness.h"

typedef enum op_kind { OP_ADD, OP_MM, OP_RELU, OP_SOFTMAX, OP_SUM, OP_CONV } op_kind;

typedef struct ops_case {
  op_kind op;
  int portable;        /* mm through the portable kernel */
  int rank[3];         /* operands: input, other/weight, bias (rank 0: none) */
  int64_t shape[3][4];
  double goal;         /* libtorch time / ours at least this; 0: no libtorch side */
} ops_case;

#define VEC(n) {1, 1, 0}, {{n}, {n}}
#define SQUARE(n) {2, 2, 0}, {{n, n}, {n, n}}
static const ops_case cases[] = {
    {OP_ADD, 0, VEC(1), 5},
    {OP_ADD, 0, VEC(1000), 1},
    {OP_ADD, 0, VEC(100000), 1},
    {OP_ADD, 0, VEC(1000000), 1},
    {OP_ADD, 0, VEC(10000000), 1},
    {OP_RELU, 0, {1, 0, 0}, {{1000000}}, 1},
    {OP_SOFTMAX, 0, {2, 0, 0}, {{1000, 1000}}, 1},
    {OP_SUM, 0, {1, 0, 0}, {{1000000}}, 1},
    {OP_CONV, 0, {4, 4, 1}, {{64, 1, 28, 28}, {32, 1, 3, 3}, {32}}, 1},
    {OP_CONV, 0, {4, 4, 1}, {{64, 32, 28, 28}, {64, 32, 3, 3}, {64}}, 1},
    {OP_MM, 0, SQUARE(64), 1},
    {OP_MM, 0, SQUARE(256), 1},
    {OP_MM, 1, SQUARE(64), 0},
    {OP_MM, 1, SQUARE(256), 0},
};
enum { NCASES = sizeof cases / sizeof *cases };
/* Names the twin shares; iterations for a few ms a timed run; callgrind calls. */
#define SPEC(name, iters, cg_iters) {name, iters, cg_iters, NULL}
static const bench_spec specs[NCASES] = {
    SPEC("add_1", 20000, 1000),     SPEC("add_1k", 5000, 100),    SPEC("add_100k", 200, 10),
    SPEC("add_1M", 20, 2),          SPEC("add_10M", 1, 0),        SPEC("relu_1M", 20, 2),
    SPEC("softmax_1M", 3, 1),       SPEC("sum_1M", 20, 2),        SPEC("conv2d_1_32", 1, 1),
    SPEC("conv2d_32_64", 1, 0),     SPEC("mm_64", 1000, 20),      SPEC("mm_256", 20, 1),
    SPEC("mm_64_portable", 100, 0), SPEC("mm_256_portable", 1, 0),
};

/* The operands of the case run last (one case's at a time: add_10M's are 80 MB). */
static int current = -1;
static disp_tensor *operand[3];

/* A new float32 CPU tensor of `shape`, values in [-0.75, 0.75]. */
static disp_tensor *filled(const int64_t *shape, int rank) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(shape, rank, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) !=
      DISP_OK)
    return NULL;
  float *p = disp_tensor_data_ptr(t);
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= shape[d];
  for (int64_t i = 0; i < n; i++) p[i] = (float)((i * 7) % 13 - 6) / 8.0f;
  return t;
}

static int select_case(int k) {
  if (current == k) return 0;
  for (int j = 0; j < 3; j++) disp_tensor_release(operand[j]), operand[j] = NULL;
  current = k;
  for (int j = 0; j < 3; j++)
    if (cases[k].rank[j] && !(operand[j] = filled(cases[k].shape[j], cases[k].rank[j]))) return -1;
  return 0;
}

static disp_status call(const ops_case *c, disp_tensor **out) {
  static const int64_t one[2] = {1, 1};
  disp_int_list ones = {one, 2};
  disp_tensor *x = operand[0], *y = operand[1];
  switch (c->op) {
  case OP_ADD: return disp_aten_add_Tensor(x, y, disp_scalar_int(1), out);
  case OP_MM: return disp_aten_mm(x, y, out);
  case OP_RELU: return disp_aten_relu(x, out);
  case OP_SOFTMAX: return disp_aten_softmax_int(x, -1, -1, out);
  case OP_SUM: return disp_aten_sum(x, -1, out);
  case OP_CONV: return disp_aten_conv2d(x, y, operand[2], ones, ones, ones, 1, out);
  }
  return DISP_ERR_INVALID_ARG;
}

static int run(const char *name, long iters) {
  int k = 0;
  while (k < NCASES && strcmp(specs[k].name, name)) k++;
  if (k == NCASES || select_case(k)) return -1;
  disp__gemm_force_portable(cases[k].portable);
  disp_status st = DISP_OK;
  for (long i = 0; i < iters && st == DISP_OK; i++) {
    disp_tensor *out = NULL;
    st = call(&cases[k], &out);
    disp_tensor_release(out);
  }
  disp__gemm_force_portable(0);
  if (st == DISP_OK) return 0;
  fprintf(stderr, "bench_ops %s: %s\n", name, disp_last_error());
  return -1;
}

/* Elements for ns/element: the input's, for pointwise cases; 0 otherwise. */
static double elements(const ops_case *c) {
  if (c->op == OP_MM || c->op == OP_CONV) return 0;
  double n = 1;
  for (int d = 0; d < c->rank[0]; d++) n *= (double)c->shape[0][d];
  return n;
}

#ifdef DISP_BENCH_TORCH_EXE
static const char *const twin = DISP_BENCH_TORCH_EXE;
#else
static const char *const twin = NULL;
#endif

/* ns for one memcpy of each pointwise case's input bytes (-1: not pointwise). */
static double copy_ns[NCASES];

/* One row per case at one thread setting. */
static void print_times(const char *threads, const double *ours, const double *theirs) {
  for (int k = 0; k < NCASES; k++) {
    const ops_case *c = &cases[k];
    double n = elements(c), ratio = theirs[k] > 0 && ours[k] > 0 ? theirs[k] / ours[k] : -1;
    char a[32], b[32], r[32], goal[32], e[32], te[32], ce[32], gb[32];
    bench_cell(a, sizeof a, "%.1f", ours[k]);
    bench_cell(b, sizeof b, "%.1f", theirs[k]);
    bench_cell(r, sizeof r, "%.2fx", ratio);
    bench_cell(goal, sizeof goal, ">= %gx", c->goal > 0 ? c->goal : -1);
    bench_cell(e, sizeof e, "%.3f", n > 0 ? ours[k] / n : -1);
    bench_cell(te, sizeof te, "%.3f", n > 0 && theirs[k] > 0 ? theirs[k] / n : -1);
    bench_cell(ce, sizeof ce, "%.3f", n > 0 && copy_ns[k] > 0 ? copy_ns[k] / n : -1);
    bench_cell(gb, sizeof gb, "%.1f", n > 0 && copy_ns[k] > 0 ? 4 * n / copy_ns[k] : -1);
    printf("%-16s %-7s %12s %12s %7s %7s %-6s %8s %8s %8s %7s\n", specs[k].name, threads, a, b, r, goal,
           ratio < 0 || c->goal <= 0 ? "-" : ratio >= c->goal ? "PASS" : "MISS", e, te, ce, gb);
  }
}

int main(int argc, char **argv) {
  int child = bench_child_main(argc, argv, run);
  if (child >= 0) return child;
  bench_print_header("libdispatch operator benchmark (float32, CPU) beside libtorch", twin,
                     "bench/ops_torch, the same cases under c10::InferenceMode");
  printf("%s\n", disp__gemm_have_blas() ? "" : "(built without CBLAS: mm_64/mm_256 are the portable kernel too)\n");
  for (int k = 0; k < NCASES; k++) {
    double n = elements(&cases[k]);
    copy_ns[k] = n > 0 ? bench_copy_ns(4 * (size_t)n) : -1;
  }
  printf("%-16s %-7s %12s %12s %7s %7s %-6s %8s %8s %8s %7s\n", "case", "threads", "ns/call", "libtorch ns", "ratio",
         "target", "result", "ns/el", "lt ns/el", "copy/el", "copy GB/s");
  if (bench_race_all(run, twin, specs, NCASES, print_times)) return 1;

  printf("ratio = libtorch ns / ours; targets from issue 9. ns/el: ns per input element (lt: libtorch);\n"
         "copy/el and copy GB/s: one thread's memcpy of one float32 per element (add reads two and writes\n"
         "one; relu and softmax read one and write one; sum reads one).\n"
         "conv2d: padding 1, stride 1, bias, 28x28 out. *_portable have no libtorch side.\n\n");
  bench_print_counts(twin, specs, NCASES, "call");
  for (int j = 0; j < 3; j++) disp_tensor_release(operand[j]);
  disp_shutdown();
  return 0;
}
