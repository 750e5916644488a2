/*
 * dispatch - what a call through the dispatcher costs.
 *
 * Cases (each calls a kernel that does nothing but return its input):
 *   floor            a direct call through a function pointer
 *   unboxed_1        DISP_CALL of a one-tensor operator, unboxed kernel
 *   unboxed_2        DISP_CALL of a two-tensor operator, unboxed kernel
 *   builtin_typed    disp_aten_relu (generated typed entry) of a built-in operator
 *   concise          disp_relu (disp/easy.h, generated over the typed entry),
 *                    no scope open: its result released as builtin_typed's
 *   concise_scope    disp_relu in a scope ended every 64 calls, which
 *                    releases the results
 *   boxed_builtin    disp_call_boxed of a built-in operator's unboxed kernel
 *                    (generated adapter, no libffi)
 *   boxed_ffi        disp_call_boxed of a run-time operator's unboxed kernel (libffi)
 *   unboxed_boxed    DISP_CALL of an operator whose kernel is boxed (packing)
 *   closure          a call through disp_op_typed_entry (libffi closure)
 * Every operator has an Autograd fallthrough, as libtorch 1.13 gives its
 * operators by default, so both sides measure the same path.
 *
 * Prints, per case, ns/call (harness.h's bench_median_ns: the median of 7
 * runs, best of 5 rounds alternating with the twin, 1 thread) and, when
 * valgrind is installed, instructions/call from one callgrind run per side
 * (harness.h's bench_callgrind: only the measured loop is counted), the
 * instructions above the floor, and ratios to libtorch 1.13 (measured side
 * by side when bench/dispatch_torch was built, else the reference figures of
 * the calls issue).
 *
 *   dispatch                                    the table (under a minute;
 *                                               libtorch's callgrind start-up
 *                                               is most of it)
 *   dispatch --threads N --count NAME:ITERS...  cases under callgrind (harness.h)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <disp.h>

#include "harness.h"

static const disp_op *g_op1, *g_op2, *g_op_boxed, *g_relu;
static disp_tensor *g_a, *g_b, *g_pu;
static disp_fn g_closure;

/* The no-op kernels return their input as a new reference, as the calling
 * convention asks (PyTorch's return a Tensor by value: a refcount bump too);
 * every case, the floor included, releases it. noinline keeps the floor an
 * actual call. */
__attribute__((noinline)) static disp_status noop1(disp_tensor *self, disp_tensor **out) {
  *out = disp_tensor_retain(self);
  return DISP_OK;
}
__attribute__((noinline)) static disp_status noop2(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  (void)other;
  *out = disp_tensor_retain(self);
  return DISP_OK;
}
static disp_status noop_boxed(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)op, (void)ks, (void)s, (void)ud;
  return DISP_OK;
}

static int g_sink_handle;
static void no_release(void *h) { (void)h; }

static int setup(void) {
  disp_library *def, *cpu, *ag, *pu, *agaten;
  if (disp_library_new(DISP_LIBRARY_DEF, "bench", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &def) ||
      disp_library_def(def, "noop1(Tensor self) -> Tensor", NULL) ||
      disp_library_def(def, "noop2(Tensor self, Tensor other) -> Tensor", NULL) ||
      disp_library_def(def, "noop_boxed(Tensor self) -> Tensor", NULL) ||
      disp_library_new(DISP_LIBRARY_IMPL, "bench", DISP_KEY_CPU, __FILE__, __LINE__, &cpu) ||
      disp_library_impl(cpu, "noop1", disp_kernel_unboxed(DISP_FN(noop1), 0), NULL) ||
      disp_library_impl(cpu, "noop2", disp_kernel_unboxed(DISP_FN(noop2), 0), NULL) ||
      disp_library_impl(cpu, "noop_boxed", disp_kernel_boxed(noop_boxed, NULL, NULL), NULL) ||
      disp_library_new(DISP_LIBRARY_IMPL, "bench", DISP_KEY_AUTOGRAD, __FILE__, __LINE__, &ag) ||
      disp_library_impl(ag, "noop1", disp_kernel_fallthrough(), NULL) ||
      disp_library_impl(ag, "noop2", disp_kernel_fallthrough(), NULL) ||
      disp_library_impl(ag, "noop_boxed", disp_kernel_fallthrough(), NULL) ||
      /* A backend's unboxed kernel for a built-in operator. */
      disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &pu) ||
      disp_library_impl(pu, "relu", disp_kernel_unboxed(DISP_FN(noop1), 0), NULL) ||
      disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_AUTOGRAD, __FILE__, __LINE__, &agaten) ||
      disp_library_impl(agaten, "relu", disp_kernel_fallthrough(), NULL) ||
      disp_op_find("bench::noop1", &g_op1) || disp_op_find("bench::noop2", &g_op2) ||
      disp_op_find("bench::noop_boxed", &g_op_boxed) || disp_op_find("aten::relu", &g_relu) ||
      disp_op_typed_entry(g_op1, &g_closure)) {
    fprintf(stderr, "setup: %s\n", disp_last_error());
    return 1;
  }
  int64_t sizes[1] = {1};
  disp_device cpu_dev = disp_device_make(DISP_BACKEND_CPU, -1);
  if (disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, cpu_dev, &g_a) ||
      disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, cpu_dev, &g_b) ||
      disp_tensor_new_opaque(sizes, 1, DISP_DTYPE_FLOAT32, DISP_LAYOUT_STRIDED,
                             disp_device_make(DISP_BACKEND_PRIVATEUSE1, 0), &g_sink_handle, no_release, &g_pu)) {
    fprintf(stderr, "setup: %s\n", disp_last_error());
    return 1;
  }
  return 0;
}

typedef disp_status (*fn1)(disp_tensor *, disp_tensor **);
typedef disp_status (*fn2)(disp_tensor *, disp_tensor *, disp_tensor **);
static fn1 volatile g_floor_fn = noop1;
static fn2 volatile g_floor2_fn = noop2;
static volatile long g_sink;

static int run_case(const char *name, long iters) {
  disp_tensor *out = NULL;
  disp_status st = DISP_OK;
  long bad = 0;
  disp_stack *stack = disp_stack_new();
  if (!strcmp(name, "floor")) {
    fn1 f = g_floor_fn;
    for (long i = 0; i < iters; i++) {
      bad += f(g_a, &out);
      disp_tensor_release(out);
    }
  } else if (!strcmp(name, "floor_2")) {
    fn2 f = g_floor2_fn;
    for (long i = 0; i < iters; i++) {
      bad += f(g_a, g_b, &out);
      disp_tensor_release(out);
    }
  } else if (!strcmp(name, "unboxed_1")) {
    for (long i = 0; i < iters; i++) {
      DISP_CALL(st, g_op1, disp_tensor_keys(g_a), (disp_tensor *, disp_tensor **), g_a, &out);
      bad += st;
      disp_tensor_release(out);
    }
  } else if (!strcmp(name, "unboxed_2")) {
    for (long i = 0; i < iters; i++) {
      DISP_CALL(st, g_op2, disp_keyset_or(disp_tensor_keys(g_a), disp_tensor_keys(g_b)),
                (disp_tensor *, disp_tensor *, disp_tensor **), g_a, g_b, &out);
      bad += st;
      disp_tensor_release(out);
    }
  } else if (!strcmp(name, "builtin_typed")) {
    for (long i = 0; i < iters; i++) {
      bad += disp_aten_relu(g_pu, &out);
      disp_tensor_release(out);
    }
  } else if (!strcmp(name, "concise")) {
    for (long i = 0; i < iters; i++) {
      out = disp_relu(g_pu);
      bad += out == NULL;
      disp_tensor_release(out);
    }
  } else if (!strcmp(name, "concise_scope")) {
    for (long i = 0; i < iters; i += 64) {
      disp_scope s = disp_scope_begin();
      for (long j = i; j < i + 64 && j < iters; j++) bad += disp_relu(g_pu) == NULL;
      disp_scope_end(&s);
    }
    out = NULL;
  } else if (!strcmp(name, "boxed_builtin")) {
    for (long i = 0; i < iters; i++) {
      disp_stack_push_tensor(stack, g_pu);
      bad += disp_call_boxed(g_relu, stack);
      disp_stack_clear(stack);
    }
  } else if (!strcmp(name, "boxed_ffi")) {
    for (long i = 0; i < iters; i++) {
      disp_stack_push_tensor(stack, g_a);
      bad += disp_call_boxed(g_op1, stack);
      disp_stack_clear(stack);
    }
  } else if (!strcmp(name, "unboxed_boxed")) {
    for (long i = 0; i < iters; i++) {
      DISP_CALL(st, g_op_boxed, disp_tensor_keys(g_a), (disp_tensor *, disp_tensor **), g_a, &out);
      bad += st;
      disp_tensor_release(out);
    }
  } else if (!strcmp(name, "closure")) {
    fn1 f = (fn1)g_closure;
    for (long i = 0; i < iters; i++) {
      bad += f(g_a, &out);
      disp_tensor_release(out);
    }
  } else {
    fprintf(stderr, "unknown case %s\n", name);
    bad = 1;
  }
  if (bad) fprintf(stderr, "%s: %s\n", name, disp_last_error());
  g_sink = (long)(intptr_t)out;
  disp_stack_free(stack);
  return bad ? -1 : 0;
}

/* The cases, in table order; 200000 calls a timed run (about 10 ms at
 * 50 ns), 20000 counted under callgrind (the region's fixed cost, the
 * loop's set-up, is then well under 0.1 instruction a call). */
enum { NCASES = 11, FLOOR = 0, FLOOR_2 = 1, UNBOXED_2 = 3, TYPED = 4, CONCISE = 9, CONCISE_SCOPE = 10 };
static const bench_spec specs[NCASES] = {
    {"floor", 200000, 20000, NULL},         {"floor_2", 200000, 20000, NULL},
    {"unboxed_1", 200000, 20000, NULL},     {"unboxed_2", 200000, 20000, NULL},
    {"builtin_typed", 200000, 20000, NULL}, {"boxed_builtin", 200000, 20000, NULL},
    {"boxed_ffi", 200000, 20000, NULL},     {"unboxed_boxed", 200000, 20000, NULL},
    {"closure", 200000, 20000, NULL},       {"concise", 200000, 20000, NULL},
    {"concise_scope", 200000, 20000, NULL},
};

/* libtorch 1.13 on this kind of machine (the calls issue), ns and
 * instructions per case, -1 where it has no such path; replaced by the
 * twin's figures when bench/dispatch_torch was built. */
static const double torch_ref_ns[NCASES] = {23, 23, 41, 43, -1, 77, 77, -1, -1, -1, -1};
static const double torch_ref_ins[NCASES] = {21, 21, 217, 226, -1, 412, 412, -1, -1, -1, -1};

#ifdef DISP_BENCH_TORCH_EXE
static const char *const twin = DISP_BENCH_TORCH_EXE;
#else
static const char *const twin = NULL;
#endif

/* Instructions per call of every case on both sides (-1 without valgrind;
 * theirs keeps the reference figures without a twin). */
static void count_all(double *ours, double *theirs) {
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  for (int i = 0; i < NCASES; i++) ours[i] = -1, theirs[i] = torch_ref_ins[i];
  if (len <= 0 || system("valgrind --version >/dev/null 2>&1") != 0) return;
  self[len] = '\0';
  bench_callgrind(self, specs, NCASES, ours);
  if (twin && bench_callgrind(twin, specs, NCASES, theirs))
    for (int i = 0; i < NCASES; i++) theirs[i] = torch_ref_ins[i];
}

/* One row: ns, instructions, instructions above the floor (floor_2 for
 * the two-tensor call), and the ratios ours/libtorch. */
static void print_row(int i, double ns, double tns, double ins, double tins, double floor_ins) {
  char c_ins[32], c_over[32] = "-", c_rns[32], c_rins[32];
  bench_cell(c_ins, sizeof c_ins, "%.1f", ins);
  if (ins >= 0 && floor_ins >= 0) snprintf(c_over, sizeof c_over, "%+.1f", ins - floor_ins);
  bench_cell(c_rns, sizeof c_rns, "%.2f", ns >= 0 && tns > 0 ? ns / tns : -1);
  bench_cell(c_rins, sizeof c_rins, "%.2f", ins >= 0 && tins > 0 ? ins / tins : -1);
  printf("%-15s %9.1f %10s %12s %12s %12s\n", specs[i].name, ns, c_ins, c_over, c_rns, c_rins);
}

int main(int argc, char **argv) {
  if (setup()) return 1;
  int child = bench_child_main(argc, argv, run_case);
  if (child >= 0) return child;
  bench_print_header("libdispatch dispatch benchmark (kernels do nothing; Autograd fallthrough on every op)", twin,
                     "bench/dispatch_torch, the same no-op operators through c10::Dispatcher");
  if (!twin) printf("ratios use the libtorch 1.13 reference figures of the calls issue\n");
  printf("\n");
  double ns[NCASES], tns[NCASES], ins[NCASES], tins[NCASES];
  int twin_threads[2];
  if (bench_race(run_case, twin, 1, specs, NCASES, ns, tns, twin_threads)) return 1;
  for (int i = 0; i < NCASES; i++)
    if (!twin || tns[i] < 0) tns[i] = torch_ref_ns[i];
  count_all(ins, tins);
  printf("%-15s %9s %10s %12s %12s %12s\n", "case", "ns/call", "ins/call", "ins-floor", "ns/libtorch", "ins/libtorch");
  for (int i = 0; i < NCASES; i++)
    print_row(i, ns[i], tns[i], ins[i], tins[i], ins[i == UNBOXED_2 ? FLOOR_2 : FLOOR]);
  printf("\nins-floor: instructions above a direct call through a function pointer (floor_2 for unboxed_2);\n"
         "ratios are ours/libtorch for the same case (boxed_ffi is compared with libtorch's boxed call).\n"
         "Times and counts at 1 thread (every pool at 1 under callgrind).\n");
  if (ins[FLOOR] < 0) printf("(valgrind not found: no instruction counts)\n");
  else
    printf("\nconcise call: %+.1f instructions a call over the typed call (disp_relu vs disp_aten_relu; budget +10),\n"
           "%+.1f in a scope (the release moved to the scope's end).\n",
           ins[CONCISE] - ins[TYPED], ins[CONCISE_SCOPE] - ins[TYPED]);
  disp_tensor_release(g_pu);
  disp_tensor_release(g_a);
  disp_tensor_release(g_b);
  return 0;
}
