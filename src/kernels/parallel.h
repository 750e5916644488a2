/*
 * parallel.h - intra-op parallelism of the CPU kernels (PyTorch's
 * at::parallel_for), on the library's own thread pool, and the thread
 * setting behind disp_set_num_threads.
 *
 * Only parallel.c knows threads: a kernel hands a range and a function
 * here. Built with DISP_THREADS=OFF every range runs on the calling thread
 * and the setting is only remembered. OpenMP (DISP_OPENMP) only serves to
 * recognise a user's OpenMP team calling in (its ranges run inline).
 */
#ifndef DISP_PARALLEL_H
#define DISP_PARALLEL_H

#include <stdint.h>

/* PyTorch's at::internal::GRAIN_SIZE: pointwise work below this many
 * elements is not worth waking a second thread for. */
#define DISP_GRAIN_SIZE 32768

/* Blocks per thread a range is cut into at most: a late or preempted
 * thread holds back at most one small block (Note [The caller claims
 * blocks]). */
#define DISP_BLOCKS_PER_THREAD 4

/* Work on [begin, end) of the range, called on one thread. */
typedef void (*disp__range_fn)(int64_t begin, int64_t end, void *ctx);

/*
 * disp__parallel_for - runs fn over [begin, end) split into at most
 * DISP_BLOCKS_PER_THREAD * disp_get_num_threads() contiguous blocks of at
 * least `grain` indices each (equal but the last), on up to
 * disp_get_num_threads() threads, the calling thread among them; any thread
 * may run any block and one thread may run several (Note [The caller claims
 * blocks]), so fn's result must not depend on where a range starts or who
 * runs it (Note [Fixed partitions]). Inline, as one call, when the range is
 * at most `grain`, when one thread is set, when already inside a parallel
 * region (no nesting), or when another thread is using the pool. Returns
 * once every block is done. fn must not fail; a kernel records errors in
 * ctx. Thread-safe.
 */
void disp__parallel_for(int64_t begin, int64_t end, int64_t grain, disp__range_fn fn, void *ctx);

/* Whether the calling thread runs inside a parallel region (a range of
 * disp__parallel_for, or a user's OpenMP region when built with OpenMP). */
int disp__in_parallel_region(void);

/* The index of the calling thread in the current region (0 outside one
 * and for the calling thread), below the region's thread count: for
 * per-thread scratch buffers. Two threads running ranges of the same
 * region at once never share an index. */
int disp__thread_index(void);

#endif
