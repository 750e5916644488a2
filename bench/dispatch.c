/*
 * dispatch - what a call through the dispatcher costs.
 *
 * Cases (each calls a kernel that does nothing but return its input):
 *   floor            a direct call through a function pointer
 *   unboxed_1        DISP_CALL of a one-tensor operator, unboxed kernel
 *   unboxed_2        DISP_CALL of a two-tensor operator, unboxed kernel
 *   builtin_typed    disp_aten_relu (generated typed entry) of a built-in operator
 *   boxed_builtin    disp_call_boxed of a built-in operator's unboxed kernel
 *                    (generated adapter, no libffi)
 *   boxed_ffi        disp_call_boxed of a run-time operator's unboxed kernel (libffi)
 *   unboxed_boxed    DISP_CALL of an operator whose kernel is boxed (packing)
 *   closure          a call through disp_op_typed_entry (libffi closure)
 * Every operator has an Autograd fallthrough, as libtorch 1.13 gives its
 * operators by default, so both sides measure the same path.
 *
 * Prints ns/call (median of 7 runs) and, when valgrind is installed,
 * instructions/call from callgrind (the difference of two runs of different
 * lengths, so start-up cancels out), with ratios to the floor and to
 * libtorch 1.13 (measured side by side when bench/dispatch_torch was built,
 * else the reference figures of the calls issue).
 *
 *   dispatch                     the table
 *   dispatch --case NAME --iters N   run one case (used under callgrind)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <disp.h>

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

static long run_case(const char *name, long iters) {
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
  return bad;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median_ns(const char *name) {
  enum { RUNS = 7 };
  long iters = 200000;
  double t[RUNS];
  run_case(name, iters / 10); /* warm up */
  for (int r = 0; r < RUNS; r++) {
    double t0 = now_ns();
    if (run_case(name, iters)) return -1;
    t[r] = (now_ns() - t0) / (double)iters;
  }
  qsort(t, RUNS, sizeof *t, cmp_double);
  return t[RUNS / 2];
}

/* Instructions per call: two callgrind runs, 1000 and 21000 iterations. */
static double callgrind_ins(const char *self, const char *name) {
  if (!self) return -1;
  long counts[2];
  const long iters[2] = {1000, 21000};
  for (int k = 0; k < 2; k++) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "valgrind --tool=callgrind --callgrind-out-file=/dev/null '%s' --case %s --iters %ld 2>&1",
             self, name, iters[k]);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[512];
    counts[k] = -1;
    while (fgets(line, sizeof line, p)) {
      char *c = strstr(line, "Collected :");
      if (c) counts[k] = atol(c + strlen("Collected :"));
    }
    if (pclose(p) != 0 || counts[k] < 0) return -1;
  }
  return (double)(counts[1] - counts[0]) / (double)(iters[1] - iters[0]);
}

/* libtorch 1.13 on this kind of machine (the calls issue), ns and
 * instructions; replaced by a side-by-side run when dispatch_torch was built. */
typedef struct ref { const char *name; double ns, ins; } ref;
static ref torch_ref[] = {
    {"floor", 23, 21}, {"floor_2", 23, 21}, {"unboxed_1", 41, 217}, {"unboxed_2", 43, 226},
    {"boxed_builtin", 77, 412}, {"boxed_ffi", 77, 412}};
enum { NREFS = sizeof torch_ref / sizeof *torch_ref };

static const ref *torch_of(const char *name) {
  for (size_t i = 0; i < NREFS; i++)
    if (!strcmp(torch_ref[i].name, name)) return &torch_ref[i];
  return NULL;
}

#ifdef DISP_BENCH_TORCH_EXE
/* Measures libtorch's side: its ns/call table, then callgrind per case. */
static int measure_torch(int have_valgrind) {
  FILE *p = popen("'" DISP_BENCH_TORCH_EXE "'", "r");
  if (!p) return 0;
  char name[64];
  double ns;
  while (fscanf(p, "%63s %lf", name, &ns) == 2)
    for (size_t i = 0; i < NREFS; i++)
      if (!strcmp(torch_ref[i].name, name) || (!strcmp(name, "boxed_builtin") && !strcmp(torch_ref[i].name, "boxed_ffi")) ||
          (!strcmp(name, "floor") && !strcmp(torch_ref[i].name, "floor_2")))
        torch_ref[i].ns = ns;
  if (pclose(p) != 0) return 0;
  for (size_t i = 0; have_valgrind && i < NREFS; i++) {
    const char *c = !strcmp(torch_ref[i].name, "boxed_ffi") ? "boxed_builtin"
                    : !strcmp(torch_ref[i].name, "floor_2") ? "floor" : torch_ref[i].name;
    double ins = callgrind_ins(DISP_BENCH_TORCH_EXE, c);
    if (ins >= 0) torch_ref[i].ins = ins;
  }
  return 1;
}
#endif

int main(int argc, char **argv) {
  if (setup()) return 1;
  if (argc == 5 && !strcmp(argv[1], "--case")) return run_case(argv[2], atol(argv[4])) ? 1 : 0;
  static const char *const cases[] = {"floor", "floor_2", "unboxed_1", "unboxed_2", "builtin_typed",
                                      "boxed_builtin", "boxed_ffi", "unboxed_boxed", "closure"};
  int have_valgrind = system("valgrind --version >/dev/null 2>&1") == 0;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) have_valgrind = 0;
  else self[n] = '\0';
  printf("libdispatch %s dispatch benchmark (kernels do nothing; Autograd fallthrough on every op)\n",
         disp_version_string());
#ifdef DISP_BENCH_TORCH_EXE
  if (measure_torch(have_valgrind))
    printf("libtorch measured side by side (bench/dispatch_torch, same cases, same machine)\n\n");
  else
#endif
    printf("libtorch not built: ratios use the libtorch 1.13 reference figures of the calls issue\n\n");
  printf("%-15s %9s %10s %12s %12s %12s\n", "case", "ns/call", "ins/call", "ins-floor", "ns/libtorch", "ins/libtorch");
  double floor_ins = -1, floor2_ins = -1;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    double ns = median_ns(cases[i]);
    double ins = have_valgrind ? callgrind_ins(self, cases[i]) : -1;
    if (i == 0) floor_ins = ins;
    if (i == 1) floor2_ins = ins;
    const ref *r = torch_of(cases[i]);
    char c_ins[32] = "-", c_over[32] = "-", c_rns[32] = "-", c_rins[32] = "-";
    if (ins >= 0) snprintf(c_ins, sizeof c_ins, "%.1f", ins);
    /* Two-tensor calls are measured against the two-argument floor. */
    double base = !strcmp(cases[i], "unboxed_2") ? floor2_ins : floor_ins;
    if (ins >= 0 && base >= 0) snprintf(c_over, sizeof c_over, "%+.1f", ins - base);
    if (r) snprintf(c_rns, sizeof c_rns, "%.2f", ns / r->ns);
    if (r && ins >= 0) snprintf(c_rins, sizeof c_rins, "%.2f", ins / r->ins);
    printf("%-15s %9.1f %10s %12s %12s %12s\n", cases[i], ns, c_ins, c_over, c_rns, c_rins);
  }
  printf("\nins-floor: instructions above a direct call through a function pointer (floor_2 for unboxed_2);\n"
         "ratios are ours/libtorch for the same case (boxed_ffi is compared with libtorch's boxed call).\n");
  if (!have_valgrind) printf("(valgrind not found: no instruction counts)\n");
  disp_tensor_release(g_pu);
  disp_tensor_release(g_a);
  disp_tensor_release(g_b);
  return 0;
}
