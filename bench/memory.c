/*
 * memory.c - what registration changes cost in memory and time.
 *
 *   build/bench/memory [cycles] [ops]
 *
 * 1. impl add/remove cycles (default 100000) on one operator while two
 *    threads call it (typed and boxed): resident set and heap in use before
 *    and after, and the time per cycle. Retired tables and kernel entries
 *    are freed as the run goes (Note [Reclaiming retired tables]), so the
 *    figures after the run stay within a few percent of before.
 * 2. a registry of `ops` operators (default 100000): the heap each def and
 *    each live impl registration costs, then boxed-fallback add/remove
 *    cycles (a proxy pointer store: no table is touched) and fallthrough
 *    fallback add/remove cycles (the tables' masks change: every table is
 *    recomputed), each with its time and the heap after.
 * Prints figures, asserts nothing: run it by hand; CI only builds it.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <disp.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Resident set in KiB (/proc/self/statm counts pages). */
static long rss_kib(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Heap bytes in use, free lists excluded: steadier than the RSS. */
static long heap_bytes(void) { return (long)mallinfo2().uordblks; }

static const disp_op *g_op;
static atomic_int g_stop;
static atomic_long g_calls, g_errors;

static disp_status identity(disp_tensor *self, disp_tensor **out) {
  *out = disp_tensor_retain(self);
  return DISP_OK;
}

static disp_status boxed_identity(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)op, (void)ks, (void)s, (void)ud;
  return DISP_OK;
}

static void *caller(void *arg) {
  (void)arg;
  int64_t sizes[1] = {4};
  disp_tensor *t = NULL;
  disp_stack *s = disp_stack_new();
  if (disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK || !s) {
    atomic_fetch_add(&g_errors, 1);
    return NULL;
  }
  for (long i = 0; !atomic_load_explicit(&g_stop, memory_order_relaxed); i++) {
    disp_status st;
    if (i & 1) {
      disp_tensor *out = NULL;
      DISP_CALL(st, g_op, disp_tensor_keyset(t), (disp_tensor *, disp_tensor **), t, &out);
      disp_tensor_release(out);
    } else {
      disp_stack_push_tensor(s, t);
      st = disp_call_boxed(g_op, s);
      disp_stack_clear(s);
    }
    if (st != DISP_OK) atomic_fetch_add(&g_errors, 1);
    atomic_fetch_add_explicit(&g_calls, 1, memory_order_relaxed);
  }
  disp_stack_free(s);
  disp_tensor_release(t);
  return NULL;
}

static disp_library *lib_new(disp_library_kind kind, const char *ns, disp_key key) {
  disp_library *lib = NULL;
  if (disp_library_new(kind, ns, key, __FILE__, __LINE__, &lib) != DISP_OK) {
    fprintf(stderr, "%s\n", disp_last_error());
    exit(1);
  }
  return lib;
}

static void impl_cycles(long cycles) {
  disp_library *def = lib_new(DISP_LIBRARY_DEF, "memb", DISP_KEY_UNDEFINED);
  disp_library *base = lib_new(DISP_LIBRARY_IMPL, "memb", DISP_KEY_CPU);
  if (disp_library_def(def, "op(Tensor self) -> Tensor", NULL) != DISP_OK ||
      disp_library_impl(base, "op", disp_kernel_unboxed(DISP_FN(identity), 0), NULL) != DISP_OK ||
      disp_op_find("memb::op", &g_op) != DISP_OK) {
    fprintf(stderr, "%s\n", disp_last_error());
    exit(1);
  }
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, caller, NULL);
  /* Warm up: threads registered, allocator arenas grown. */
  for (long c = 0; c < 1000; c++) {
    disp_library *lib = lib_new(DISP_LIBRARY_IMPL, "memb", DISP_KEY_CPU);
    disp_library_impl(lib, "op", disp_kernel_boxed(boxed_identity, NULL, NULL), NULL);
    disp_library_free(lib);
  }
  malloc_trim(0);
  long rss0 = rss_kib(), heap0 = heap_bytes();
  double t0 = now_s();
  for (long c = 0; c < cycles; c++) {
    disp_library *lib = lib_new(DISP_LIBRARY_IMPL, "memb", DISP_KEY_CPU);
    disp_library_impl(lib, "op", disp_kernel_boxed(boxed_identity, NULL, NULL), NULL);
    disp_library_free(lib);
  }
  double dt = now_s() - t0;
  malloc_trim(0);
  long rss1 = rss_kib(), heap1 = heap_bytes();
  atomic_store(&g_stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  printf("impl add/remove, %ld cycles, 2 threads calling (%ld calls, %ld errors):\n", cycles,
         atomic_load(&g_calls), atomic_load(&g_errors));
  printf("  %.2f us/cycle\n", dt * 1e6 / (double)cycles);
  printf("  RSS  %8ld KiB before, %8ld KiB after (%+.1f%%)\n", rss0, rss1, 100.0 * (double)(rss1 - rss0) / (double)rss0);
  printf("  heap %8ld B   before, %8ld B   after (%+ld B)\n", heap0, heap1, heap1 - heap0);
  disp_library_free(base);
  disp_library_free(def);
}

static void fallback_cycles(const char *what, disp_kernel k, int cycles) {
  malloc_trim(0);
  long heap0 = heap_bytes();
  double t0 = now_s();
  for (int c = 0; c < cycles; c++) {
    disp_library *fb = lib_new(DISP_LIBRARY_IMPL, "_", DISP_KEY_PRIVATEUSE1);
    if (disp_library_fallback(fb, k, NULL) != DISP_OK) {
      fprintf(stderr, "%s\n", disp_last_error());
      exit(1);
    }
    disp_library_free(fb);
  }
  double dt = now_s() - t0;
  malloc_trim(0);
  printf("  %-22s %10.3f ms per add+remove, heap %+ld B after %d cycles\n", what, dt * 1e3 / cycles,
         heap_bytes() - heap0, cycles);
}

static void many_ops(long nops) {
  disp_library *def = lib_new(DISP_LIBRARY_DEF, "memo", DISP_KEY_UNDEFINED);
  disp_library *impl = lib_new(DISP_LIBRARY_IMPL, "memo", DISP_KEY_CPU);
  char schema[64];
  malloc_trim(0);
  long heap0 = heap_bytes(), rss0 = rss_kib();
  double t0 = now_s();
  for (long i = 0; i < nops; i++) {
    snprintf(schema, sizeof schema, "op%ld(Tensor self, Tensor other) -> Tensor", i);
    if (disp_library_def(def, schema, NULL) != DISP_OK) {
      fprintf(stderr, "%s\n", disp_last_error());
      exit(1);
    }
  }
  double t_def = now_s() - t0;
  long heap1 = heap_bytes();
  for (long i = 0; i < nops; i++) {
    snprintf(schema, sizeof schema, "op%ld", i);
    disp_library_impl(impl, schema, disp_kernel_unboxed(DISP_FN(identity), 0), NULL);
  }
  long heap2 = heap_bytes();
  printf("registry of %ld operators:\n", nops);
  printf("  def:  %6.0f B per operator (%.2f us each)\n", (double)(heap1 - heap0) / (double)nops,
         t_def * 1e6 / (double)nops);
  printf("  impl: %6.0f B per live registration (its entry and the operator's new table)\n",
         (double)(heap2 - heap1) / (double)nops);
  printf("  RSS %ld KiB -> %ld KiB\n", rss0, rss_kib());
  fallback_cycles("boxed fallback", disp_kernel_boxed(boxed_identity, NULL, NULL), 1000);
  fallback_cycles("fallthrough fallback", disp_kernel_fallthrough(), 10);
  disp_library_free(impl);
  disp_library_free(def);
}

static void quiet(const char *msg, void *ud) { (void)msg, (void)ud; }

int main(int argc, char **argv) {
  long cycles = argc > 1 ? atol(argv[1]) : 100000;
  long nops = argc > 2 ? atol(argv[2]) : 100000;
  disp_set_warning_handler(quiet, NULL); /* every impl overrides the base kernel */
  printf("libdispatch %s memory benchmark\n\n", disp_version_string());
  impl_cycles(cycles);
  printf("\n");
  many_ops(nops);
  return 0;
}
