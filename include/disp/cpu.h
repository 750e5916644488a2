/*
 * disp/cpu.h - how the CPU kernels run: intra-op threads and the SIMD
 * capability in use.
 *
 * Threads. The built-in CPU kernels split large work (elementwise ops,
 * reductions, softmax, convolution, pooling, losses, copies, matrix
 * multiply) across the library's own pool of threads, as PyTorch's
 * at::parallel_for does over OpenMP; the calling thread takes blocks too,
 * and idle workers sleep after a few microseconds, so a worker whose core
 * another process holds never delays a call (at 2 threads beside a busy
 * process a call is no slower than at 1). Work below a grain (32768 elements for pointwise work) runs on the
 * calling thread. The setting is process-wide. Its default is, in order:
 * DISP_NUM_THREADS, OMP_NUM_THREADS, then one thread per available core.
 * OpenBLAS is kept at one thread of its own: a matrix multiply is split
 * across the library's threads instead, so the two pools never compete for
 * the cores. A kernel called from inside a parallel region (a user's own
 * OpenMP loop, or a second thread calling while the pool is busy) runs on
 * that thread alone: regions never nest.
 * Results do not depend on the thread count: work whose floating-point
 * result depends on where it is cut (matrix products, reductions, loss
 * sums) is cut into blocks chosen from the problem alone, and threads take
 * whole blocks, so 1, 2 or 3 threads make the same calls into OpenBLAS and
 * give the same bits, whatever kernel family OpenBLAS picks for the CPU.
 *
 * Capability. The hot float kernels are compiled once per instruction set
 * (as PyTorch's CPU_CAPABILITY): "default" (the baseline of the target, SSE2
 * on x86-64), "avx2" (AVX2 + FMA), "avx512" (AVX-512 F/BW/VL/DQ). The best
 * one the CPU supports is chosen at first use; DISP_CPU_CAPABILITY (or
 * ATEN_CPU_CAPABILITY) in the environment lowers it, never raises it past
 * what the CPU can run. Builds for other architectures have "default" only.
 */
#ifndef DISP_CPU_H
#define DISP_CPU_H

#include "export.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * disp_set_num_threads - the number of threads CPU kernels may use from
 * now on (at::set_num_threads). Errors: DISP_ERR_INVALID_ARG when n < 1
 * ("Expected positive number of threads"). Thread-safe; calls running
 * meanwhile finish with the old setting.
 */
DISP_API disp_status disp_set_num_threads(int n);

/*
 * disp_get_num_threads - the current setting (at::get_num_threads): the
 * last disp_set_num_threads, or the default described above. Thread-safe.
 */
DISP_API int disp_get_num_threads(void);

/*
 * disp_cpu_capability - the name of the kernel set in use: "default",
 * "avx2" or "avx512". A static string; never NULL. Thread-safe.
 */
DISP_API const char *disp_cpu_capability(void);

/*
 * disp_cpu_blas - the matrix-multiply engine behind float32/float64
 * products: "OpenBLAS (Zen)" with OpenBLAS, naming the kernel family it
 * runs (chosen from the CPU, or by OPENBLAS_CORETYPE), "CBLAS" for another
 * CBLAS library, "portable" for the library's own kernel. A static string;
 * never NULL. Thread-safe.
 */
DISP_API const char *disp_cpu_blas(void);

#ifdef __cplusplus
}
#endif

#endif /* DISP_CPU_H */
