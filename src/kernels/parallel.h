/*
 * parallel.h - intra-op parallelism of the CPU kernels (PyTorch's
 * at::parallel_for over OpenMP), and the thread setting behind
 * disp_set_num_threads.
 *
 * Only parallel.c knows OpenMP: a kernel hands a range and a function here.
 * Built without OpenMP (DISP_OPENMP=OFF, or a compiler without it) every
 * range runs on the calling thread and the setting is only remembered.
 */
#ifndef DISP_PARALLEL_H
#define DISP_PARALLEL_H

#include <stdint.h>

/* PyTorch's at::internal::GRAIN_SIZE: pointwise work below this many
 * elements is not worth waking a second thread for. */
#define DISP_GRAIN_SIZE 32768

/* Work on [begin, end) of the range, called on one thread. */
typedef void (*disp__range_fn)(int64_t begin, int64_t end, void *ctx);

/*
 * disp__parallel_for - runs fn over [begin, end) split into at most
 * disp_get_num_threads() contiguous chunks of at least `grain` indices each
 * (at::parallel_for's rule: chunk = ceil(n / threads)); inline on the
 * calling thread when the range is at most `grain`, when one thread is set,
 * or when already inside a parallel region (no nesting). Returns once every
 * chunk is done. fn must not fail; a kernel records errors in ctx.
 */
void disp__parallel_for(int64_t begin, int64_t end, int64_t grain, disp__range_fn fn, void *ctx);

/* Whether the calling thread runs inside a parallel region (its own or a
 * user's OpenMP region). */
int disp__in_parallel_region(void);

/* The index of the calling thread in the current region (0 outside one),
 * below disp_get_num_threads(): for per-thread scratch buffers. */
int disp__thread_index(void);

#endif
