/*
 * parallel.c - the thread setting and disp__parallel_for over OpenMP.
 *
 * Note [One pool]: the library's threads are libgomp's team; OpenBLAS is
 * held at one thread (gemm.c splits a product across this team instead).
 * Two pools on the same cores each spin waiting for work after a call and
 * steal the cores from the other: libtorch with OpenMP 2 and OpenBLAS 2 on
 * 2 cores trains an MLP 2.7x slower than on one thread.
 *
 * Note [Fixed partitions]: disp__parallel_for hands out ranges whose
 * bounds depend on the thread count, so every caller whose floating result
 * could depend on where a range starts cuts its work into blocks chosen
 * from the problem (shape, layout, dtype) alone and lets each thread take
 * whole blocks; 1, 2 or 3 threads then do the same operations in the same
 * order (and make the same BLAS calls: Note [Threaded gemm]). Audited
 * (issue 18), every call site of disp__parallel_for / disp__gemm_blocks:
 *   gemm.c         fixed row/column blocks of C, never k (Note [Threaded gemm])
 *   linalg.c       bmm: one whole product per batch, each one BLAS call set
 *   reduce.c       sum/mean: block_len(len) from the row length; rows whole
 *   softmax.c      whole rows, or COL_BLOCK column blocks
 *   loss.c         nll_loss: NLL_BLOCK samples a block, block sums in order
 *                  (Note [Deterministic loss sums]); grad rows independent
 *   conv_prim.h    im2col/col2im by channel (copies, each x element gets its
 *                  taps in tap order); samples whole; weight grad in
 *                  wgrad_chunks(shape) chunks added in chunk order; bias
 *                  grad per channel, planes in sample order
 *   pool.c         whole planes (max and its scatter: no sums across planes)
 *   tensor_iter.c  pointwise runs in TITER_BLOCK-aligned blocks (Note
 *                  [Parallel pointwise]); reductions into operand 0 serial
 *   cpu/ kernels   kernels run on one thread's range; their vector/tail
 *                  split depends on the range, which the callers above fix
 * Pointwise work whose elements are independent needs no more than that.
 */
#include "parallel.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <disp/cpu.h>

#include "error_internal.h"

/* 0 until first read: the environment decides then. */
static atomic_int g_num_threads;

/* A positive count from environment variable `name`, or 0. */
static int env_threads(const char *name) {
  const char *s = getenv(name);
  if (!s || !*s) return 0;
  char *end;
  long v = strtol(s, &end, 10);
  return (*end == '\0' && v >= 1 && v <= 4096) ? (int)v : 0;
}

static int default_threads(void) {
  int n = env_threads("DISP_NUM_THREADS");
  if (!n) n = env_threads("OMP_NUM_THREADS");
#ifdef _OPENMP
  if (!n) n = omp_get_num_procs();
#else
  if (!n) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
#endif
  return n >= 1 ? n : 1;
}

int disp_get_num_threads(void) {
  int n = atomic_load_explicit(&g_num_threads, memory_order_relaxed);
  if (n) return n;
  int zero = 0;
  atomic_compare_exchange_strong(&g_num_threads, &zero, default_threads());
  return atomic_load(&g_num_threads);
}

disp_status disp_set_num_threads(int n) {
  if (n < 1)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_set_num_threads: Expected positive number of threads, got %d",
                      n);
  atomic_store(&g_num_threads, n);
  return DISP_OK;
}

int disp__in_parallel_region(void) {
#ifdef _OPENMP
  return omp_in_parallel();
#else
  return 0;
#endif
}

int disp__thread_index(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

void disp__parallel_for(int64_t begin, int64_t end, int64_t grain, disp__range_fn fn, void *ctx) {
  if (begin >= end) return;
  int64_t n = end - begin;
  int64_t threads = disp_get_num_threads();
  if (grain < 1) grain = 1;
  if (n <= grain || threads <= 1 || disp__in_parallel_region()) {
    fn(begin, end, ctx);
    return;
  }
#ifdef _OPENMP
  int64_t most = (n + grain - 1) / grain;
  if (threads > most) threads = most;
#pragma omp parallel num_threads((int)threads)
  {
    int64_t team = omp_get_num_threads(), tid = omp_get_thread_num();
    int64_t chunk = (n + team - 1) / team, lo = begin + tid * chunk;
    if (lo < end) fn(lo, lo + chunk < end ? lo + chunk : end, ctx);
  }
#else
  fn(begin, end, ctx);
#endif
}
