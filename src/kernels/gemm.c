/*
 * gemm.c - matrix multiply: CBLAS when the build has it, and a portable
 * cache-blocked kernel (see gemm.h for the contract).
 *
 * The portable kernel packs a KC x NC panel of B and an MC x KC block of A
 * into contiguous buffers (so any input strides cost one pass), then runs a
 * 4-row micro-kernel whose inner loop over the panel's columns is a plain
 * a*b+c over contiguous memory that compilers vectorize. C is scaled by beta
 * once up front and then accumulated into block by block.
 */
#include "alloc_internal.h"
#include "gemm.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DISP_HAVE_CBLAS
#include <cblas.h>
#include <pthread.h>
#endif

#include "aten_internal.h"
#include "cpu/kernels.h"
#include "disp/cpu.h"
#include "elementwise_copy.h"
#include "parallel.h"

static atomic_int g_force_portable;

int disp__gemm_force_portable(int on) { return atomic_exchange(&g_force_portable, on ? 1 : 0); }

#ifdef DISP_HAVE_OPENBLAS_THREADS
char *openblas_get_corename(void); /* OpenBLAS's own API, not CBLAS's */
static char g_blas_name[64];
static void name_blas(void) {
  const char *core = openblas_get_corename();
  snprintf(g_blas_name, sizeof g_blas_name, "OpenBLAS (%s)", core ? core : "unknown");
}
#endif

const char *disp_cpu_blas(void) {
#if defined(DISP_HAVE_OPENBLAS_THREADS)
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, name_blas);
  return g_blas_name;
#elif defined(DISP_HAVE_CBLAS)
  return "CBLAS";
#else
  return "portable";
#endif
}

int disp__gemm_have_blas(void) {
#ifdef DISP_HAVE_CBLAS
  return 1;
#else
  return 0;
#endif
}

/* Block sizes: a B panel is KC*NC elements (256 KiB of doubles), an A block
 * MC*KC; both stay in L2 while the micro-kernel streams over them. */
enum { GEMM_MC = 64, GEMM_KC = 128, GEMM_NC = 256 };

static disp_status oom(void) {
  disp_set_error(DISP_ERR_NO_MEMORY, "gemm: out of memory");
  return DISP_ERR_NO_MEMORY;
}

/* One portable kernel per accumulation type T: float, double, uint64_t (the
 * integer types: wrapping arithmetic, which is what the narrower types give
 * after truncation). */
#define DEFINE_PORTABLE(NAME, T)                                                                   \
  static disp_status NAME(int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t ars,      \
                          int64_t acs, const T *b, int64_t brs, int64_t bcs, T beta, T *c,         \
                          int64_t crs, int64_t ccs) {                                              \
    for (int64_t i = 0; i < m; i++)                                                                \
      for (int64_t j = 0; j < n; j++) {                                                            \
        T *cp = c + i * crs + j * ccs;                                                             \
        *cp = beta == (T)0 ? (T)0 : beta == (T)1 ? *cp : (T)(beta * *cp);                          \
      }                                                                                            \
    if (k == 0 || m == 0 || n == 0 || alpha == (T)0) return DISP_OK;                               \
    T *bp = disp__malloc(sizeof(T) * GEMM_KC * GEMM_NC);                                                 \
    T *ap = disp__malloc(sizeof(T) * GEMM_MC * GEMM_KC);                                                 \
    if (!bp || !ap) {                                                                              \
      disp__free(bp), disp__free(ap);                                                                          \
      return oom();                                                                                \
    }                                                                                              \
    T acc[4][GEMM_NC];                                                                             \
    for (int64_t jc = 0; jc < n; jc += GEMM_NC) {                                                  \
      int64_t nc = n - jc < GEMM_NC ? n - jc : GEMM_NC;                                            \
      for (int64_t pc = 0; pc < k; pc += GEMM_KC) {                                                \
        int64_t kc = k - pc < GEMM_KC ? k - pc : GEMM_KC;                                          \
        for (int64_t p = 0; p < kc; p++)                                                           \
          for (int64_t j = 0; j < nc; j++) bp[p * nc + j] = b[(pc + p) * brs + (jc + j) * bcs];    \
        for (int64_t ic = 0; ic < m; ic += GEMM_MC) {                                              \
          int64_t mc = m - ic < GEMM_MC ? m - ic : GEMM_MC;                                        \
          for (int64_t i = 0; i < mc; i++)                                                         \
            for (int64_t p = 0; p < kc; p++) ap[i * kc + p] = a[(ic + i) * ars + (pc + p) * acs];  \
          for (int64_t i = 0; i < mc; i += 4) {                                                    \
            int rows = mc - i < 4 ? (int)(mc - i) : 4;                                             \
            for (int r = 0; r < 4; r++) memset(acc[r], 0, sizeof(T) * (size_t)nc);                 \
            for (int64_t p = 0; p < kc; p++) {                                                     \
              const T *brow = bp + p * nc;                                                         \
              T a0 = ap[i * kc + p];                                                               \
              T a1 = rows > 1 ? ap[(i + 1) * kc + p] : (T)0;                                       \
              T a2 = rows > 2 ? ap[(i + 2) * kc + p] : (T)0;                                       \
              T a3 = rows > 3 ? ap[(i + 3) * kc + p] : (T)0;                                       \
              for (int64_t j = 0; j < nc; j++) {                                                   \
                T bv = brow[j];                                                                    \
                acc[0][j] += a0 * bv;                                                              \
                acc[1][j] += a1 * bv;                                                              \
                acc[2][j] += a2 * bv;                                                              \
                acc[3][j] += a3 * bv;                                                              \
              }                                                                                    \
            }                                                                                      \
            for (int r = 0; r < rows; r++) {                                                       \
              T *crow = c + (ic + i + r) * crs + jc * ccs;                                         \
              for (int64_t j = 0; j < nc; j++) crow[j * ccs] += alpha * acc[r][j];                 \
            }                                                                                      \
          }                                                                                        \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
    disp__free(bp);                                                                                      \
    disp__free(ap);                                                                                      \
    return DISP_OK;                                                                                \
  }

DEFINE_PORTABLE(portable_f32, float)
DEFINE_PORTABLE(portable_f64, double)
DEFINE_PORTABLE(portable_u64, uint64_t)

#ifdef DISP_HAVE_CBLAS
#ifdef DISP_HAVE_OPENBLAS_THREADS
void openblas_set_num_threads(int num_threads); /* OpenBLAS's own API, not CBLAS's */

static void set_blas_threads(void) { openblas_set_num_threads(1); }
#endif

/* Note [One pool] (parallel.c): OpenBLAS runs on the calling thread only;
 * the library's threads split large products instead. Done once, at the
 * first product (other CBLAS builds have no pool of their own to hold). */
static void blas_one_thread(void) {
#ifdef DISP_HAVE_OPENBLAS_THREADS
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, set_blas_threads);
#endif
}

/* How a rows x cols operand with strides (rs, cs) looks to row-major BLAS:
 * 1 and *tr and *ld set when it is row-major (NoTrans) or column-major (Trans)
 * with a usable leading dimension; 0 when it must be packed. Strides of
 * dimensions of size 1 do not matter. */
static int blas_desc(int64_t rows, int64_t cols, int64_t rs, int64_t cs, CBLAS_TRANSPOSE *tr,
                     int *ld) {
  int64_t mr = rows > 1 ? rows : 1, mc = cols > 1 ? cols : 1;
  if ((cols <= 1 || cs == 1) && (rows <= 1 || rs >= mc)) {
    int64_t l = rows <= 1 ? mc : rs;
    if (l > INT_MAX) return 0;
    *tr = CblasNoTrans, *ld = (int)l;
    return 1;
  }
  if ((rows <= 1 || rs == 1) && (cols <= 1 || cs >= mr)) {
    int64_t l = cols <= 1 ? mr : cs;
    if (l > INT_MAX) return 0;
    *tr = CblasTrans, *ld = (int)l;
    return 1;
  }
  return 0;
}

/* A contiguous row-major copy of a strided operand. */
#define DEFINE_PACK(NAME, T)                                                              \
  static T *NAME(int64_t rows, int64_t cols, const T *x, int64_t rs, int64_t cs) {        \
    T *p = disp__malloc(sizeof(T) * (size_t)(rows * cols > 0 ? rows * cols : 1));               \
    if (!p) return NULL;                                                                  \
    for (int64_t i = 0; i < rows; i++)                                                    \
      for (int64_t j = 0; j < cols; j++) p[i * cols + j] = x[i * rs + j * cs];            \
    return p;                                                                             \
  }
DEFINE_PACK(pack_f32, float)
DEFINE_PACK(pack_f64, double)

/* Note [Zeroing C ourselves]: for beta == 0, OpenBLAS 0.3.21 zeroes C in
 * a separate pass (sgemm_beta) that is several times slower than memset
 * (288x196x64: 98 us with beta 0, 83.4 us as memset then beta 1), then
 * adds the product onto it exactly as with beta 1. So C is zeroed here and
 * BLAS adds onto it: the same operations on the same zeros, the same bits. */
static void zero_rows(void *c, int64_t m, int64_t n, int64_t ld, size_t elem) {
  if (ld == n) {
    memset(c, 0, elem * (size_t)(m * n));
    return;
  }
  for (int64_t i = 0; i < m; i++) memset((char *)c + elem * (size_t)(i * ld), 0, elem * (size_t)n);
}

/* Note [One row]: a product of one row (a sampled token's linear) is a
 * matrix-vector product; OpenBLAS 0.3.21's gemm has no shortcut for it and
 * packs the whole of B every call (half of a KV-cache step), so it goes
 * to gemv: y = op(B)^T x, x the row of A (its stride) and y C's row. The
 * choice depends on the shape only, so results do not depend on threads. */

/* BLAS for T: transposes the problem when C is column-major, packs A/B
 * whose layout BLAS cannot take, and computes into a row-major scratch C
 * when C itself is neither row- nor column-major. */
/* (A column-major C is computed as C^T = B^T A^T, all row-major.) */
#define DEFINE_BLAS(NAME, T, GEMM, GEMV, PACK, PORTABLE)                                                \
  static disp_status NAME(int64_t m, int64_t n, int64_t k, T alpha, const T *a, int64_t ars,     \
                          int64_t acs, const T *b, int64_t brs, int64_t bcs, T beta, T *c,        \
                          int64_t crs, int64_t ccs) {                                             \
    CBLAS_TRANSPOSE ta, tb, tc;                                                                   \
    int lda, ldb, ldc;                                                                            \
    if (m == 0 || n == 0) return DISP_OK;                                                         \
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX)                                                \
      return PORTABLE(m, n, k, alpha, a, ars, acs, b, brs, bcs, beta, c, crs, ccs);               \
    if (!blas_desc(m, n, crs, ccs, &tc, &ldc))                                                    \
      goto scratch;                                                                               \
    if (tc == CblasTrans)                                      \
      return NAME(n, m, k, alpha, b, bcs, brs, a, acs, ars, beta, c, ccs, crs);                   \
    {                                                                                             \
      T *pa = NULL, *pb = NULL;                                                                   \
      if (!blas_desc(m, k, ars, acs, &ta, &lda)) {                                                \
        if (!(pa = PACK(m, k, a, ars, acs))) return oom();                                        \
        a = pa, ta = CblasNoTrans, lda = k > 1 ? (int)k : 1;                                      \
      }                                                                                           \
      if (!blas_desc(k, n, brs, bcs, &tb, &ldb)) {                                                \
        if (!(pb = PACK(k, n, b, brs, bcs))) {                                                    \
          disp__free(pa);                                                                               \
          return oom();                                                                           \
        }                                                                                         \
        b = pb, tb = CblasNoTrans, ldb = n > 1 ? (int)n : 1;                                      \
      }                                                                                           \
      if (beta == (T)0) { /* Note [Zeroing C ourselves] */                                      \
        zero_rows(c, m, n, ldc, sizeof(T));                                                       \
        beta = (T)1;                                                                              \
      }                                                                                           \
      if (m == 1) /* Note [One row] */                                                            \
        GEMV(CblasRowMajor, tb == CblasNoTrans ? CblasTrans : CblasNoTrans,                       \
             tb == CblasNoTrans ? (int)k : (int)n, tb == CblasNoTrans ? (int)n : (int)k, alpha, b, ldb, \
             a, ta == CblasNoTrans ? 1 : lda, beta, c, 1);                                        \
      else                                                                                        \
        GEMM(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, alpha, a, lda, b, ldb, beta, c, ldc); \
      disp__free(pa);                                                                                   \
      disp__free(pb);                                                                                   \
      return DISP_OK;                                                                             \
    }                                                                                             \
  scratch: {                                                                                      \
    T *s = beta == (T)0 ? disp__malloc(sizeof(T) * (size_t)(m * n)) : PACK(m, n, c, crs, ccs);          \
    if (!s) return oom();                                                                         \
    disp_status st = NAME(m, n, k, alpha, a, ars, acs, b, brs, bcs, beta, s, n, 1);               \
    if (st == DISP_OK)                                                                            \
      for (int64_t i = 0; i < m; i++)                                                             \
        for (int64_t j = 0; j < n; j++) c[i * crs + j * ccs] = s[i * n + j];                      \
    disp__free(s);                                                                                      \
    return st;                                                                                    \
  }                                                                                               \
  }
DEFINE_BLAS(blas_f32, float, cblas_sgemm, cblas_sgemv, pack_f32, portable_f32)
DEFINE_BLAS(blas_f64, double, cblas_dgemm, cblas_dgemv, pack_f64, portable_f64)
#endif

/* One call of BLAS (or the portable kernel) on the calling thread. */
static disp_status serial_f32(int64_t m, int64_t n, int64_t k, float alpha, disp__mat a, disp__mat b,
                              float beta, disp__mat c) {
#ifdef DISP_HAVE_CBLAS
  if (!atomic_load_explicit(&g_force_portable, memory_order_relaxed)) {
    blas_one_thread();
    return blas_f32(m, n, k, alpha, a.data, a.rs, a.cs, b.data, b.rs, b.cs, beta, c.data, c.rs, c.cs);
  }
#endif
  return portable_f32(m, n, k, alpha, a.data, a.rs, a.cs, b.data, b.rs, b.cs, beta, c.data, c.rs,
                      c.cs);
}

static disp_status serial_f64(int64_t m, int64_t n, int64_t k, double alpha, disp__mat a, disp__mat b,
                              double beta, disp__mat c) {
#ifdef DISP_HAVE_CBLAS
  if (!atomic_load_explicit(&g_force_portable, memory_order_relaxed)) {
    blas_one_thread();
    return blas_f64(m, n, k, alpha, a.data, a.rs, a.cs, b.data, b.rs, b.cs, beta, c.data, c.rs, c.cs);
  }
#endif
  return portable_f64(m, n, k, alpha, a.data, a.rs, a.cs, b.data, b.rs, b.cs, beta, c.data, c.rs,
                      c.cs);
}

/* Note [Threaded gemm]: a large product is cut into a FIXED partition of
 * blocks of C's rows, or of its columns when it has more columns than rows,
 * chosen from the product's shape alone; each block is one single-threaded
 * call of the serial kernel on its slices of A (B) and C, and the library's threads (Note [One pool]
 * in parallel.c) take whole blocks. 1, 2 or 3 threads, or a call made from
 * inside a parallel region, therefore make the same BLAS calls with the
 * same arguments, and the product has the same bits whatever kernel family
 * OpenBLAS picks for the CPU. An earlier scheme cut one block per thread and
 * relied on a probed micro-kernel width to make the cut invisible: on
 * SkylakeX (OpenBLAS 0.3.21) a block of a few rows reaches another kernel
 * (the small-matrix path) than the whole product does, and the bits moved
 * with the thread count. Never cut: k (sums would reassociate).
 *
 * The partition: 2 blocks once the product has 2 * GEMM_MIN_WORK
 * multiply-adds (about 10 us of sgemm, the pointwise grain's order) and at
 * least 2 * GEMM_BLOCK_ALIGN rows; 4 once every block still holds
 * GEMM_WIDE_WORK (about 300 us), so that the extra packing of the other
 * operand that each call repeats costs a few percent when one thread runs
 * all blocks (128x256x784 sgemm at one thread, Zen 3: one call 620-700 us,
 * two calls 640-760 us, four calls ~790 us: the VM's noise is of the
 * same order). Cutting the longer of C's sides repacks the smaller
 * operand: the MLP's 784-256-10 b128 forward at one thread costs 7.36M
 * instructions cut in columns, 7.56M in rows, 7.22M in one call (+2%). Block starts are multiples of GEMM_BLOCK_ALIGN (whole
 * micro-kernel groups of every x86 sgemm/dgemm kernel) nearest to an even
 * share, so the MLP's 128x256 layer goes 128/128 columns. More than 4 blocks would help only
 * machines with more than 4 cores, and would cost every one-thread run. */
enum { GEMM_MIN_WORK = 262144, GEMM_WIDE_WORK = 16 * 1024 * 1024, GEMM_BLOCK_ALIGN = 16, GEMM_MAX_PARTS = 4 };

typedef struct gemm_plan {
  int cols;                    /* split C's columns (n > m), else its rows */
  int64_t len, unit, parts;    /* rows (columns) of C; block starts are multiples of unit */
} gemm_plan;

/* 0 when the product stays one call. Depends on the shape only: never on
 * the thread setting, the layouts or the calling context. The longer of
 * C's two dimensions is cut, so each call repeats the packing of the
 * smaller operand (x in x @ W^T when the batch is the shorter side). */
static int gemm_split_plan(int64_t m, int64_t n, int64_t k, gemm_plan *p) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  p->cols = n > m;
  p->len = p->cols ? n : m;
  p->unit = GEMM_BLOCK_ALIGN;
  double work = (double)m * (double)n * (double)k; /* multiply-adds */
  int64_t units = p->len / p->unit;
  if (units < 2 || work < 2.0 * GEMM_MIN_WORK) return 0;
  p->parts = units >= GEMM_MAX_PARTS && work >= (double)GEMM_MAX_PARTS * GEMM_WIDE_WORK ? GEMM_MAX_PARTS : 2;
  return 1;
}

/* The first row (column) of block i; block parts ends at len. */
static int64_t gemm_block_start(const gemm_plan *p, int64_t i) {
  if (i >= p->parts) return p->len;
  int64_t step = p->parts * p->unit; /* nearest multiple of unit to len * i / parts */
  int64_t r = (2 * p->len * i + step) / (2 * step) * p->unit;
  return r < p->len ? r : p->len;
}

#define DEFINE_SPLIT(NAME, T, SERIAL)                                                             \
  typedef struct NAME##_job {                                                                     \
    int64_t m, n, k;                                                                              \
    T alpha, beta;                                                                                \
    disp__mat a, b, c;                                                                            \
    gemm_plan plan;                                                                               \
    atomic_int status;                                                                            \
  } NAME##_job;                                                                                   \
  static void NAME##_block(int64_t lo, int64_t hi, void *arg) {                                   \
    NAME##_job *j = arg;                                                                          \
    for (int64_t i = lo; i < hi; i++) {                                                           \
      int64_t r0 = gemm_block_start(&j->plan, i), r1 = gemm_block_start(&j->plan, i + 1);         \
      disp__mat a = j->a, b = j->b, c = j->c;                                                     \
      int64_t m = j->m, n = j->n;                                                                 \
      if (r0 >= r1) continue;                                                                     \
      if (j->plan.cols) {                                                                         \
        b.data = (T *)b.data + r0 * b.cs, c.data = (T *)c.data + r0 * c.cs, n = r1 - r0;          \
      } else {                                                                                    \
        a.data = (T *)a.data + r0 * a.rs, c.data = (T *)c.data + r0 * c.rs, m = r1 - r0;          \
      }                                                                                           \
      disp_status st = SERIAL(m, n, j->k, j->alpha, a, b, j->beta, c);                            \
      if (st != DISP_OK) atomic_store(&j->status, (int)st);                                       \
    }                                                                                             \
  }                                                                                               \
  static disp_status NAME(int64_t m, int64_t n, int64_t k, T alpha, disp__mat a, disp__mat b,     \
                          T beta, disp__mat c) {                                                  \
    NAME##_job j = {m, n, k, alpha, beta, a, b, c, {0, 0, 0, 0}, 0};                              \
    if (!gemm_split_plan(m, n, k, &j.plan)) return SERIAL(m, n, k, alpha, a, b, beta, c);      \
    /* one block per thread at most: inline at one thread or inside a region */                   \
    disp__parallel_for(0, j.plan.parts, 1, NAME##_block, &j);                                     \
    /* a block's only failure is memory; the message set on this thread */                       \
    return atomic_load(&j.status) == DISP_OK ? DISP_OK : oom();                                   \
  }
DEFINE_SPLIT(split_f32, float, serial_f32)
DEFINE_SPLIT(split_f64, double, serial_f64)

int disp__gemm_blocks(disp_dtype dt, int64_t m, int64_t n, int64_t k, int64_t *starts, int max) {
  gemm_plan p;
  if (dt != DISP_DTYPE_FLOAT32 && dt != DISP_DTYPE_FLOAT64) return 0;
  if (!gemm_split_plan(m, n, k, &p)) {
    if (max > 0) starts[0] = 0;
    return 1;
  }
  for (int64_t i = 0; i < p.parts && i < max; i++) starts[i] = gemm_block_start(&p, i);
  return (int)p.parts;
}

/* Note [Small products]: OpenBLAS spends ~2.5k instructions on linear's
 * 8x4x32 product and ~4k on 8x32x16 (it packs both operands, runs its
 * level-3 driver and takes its buffer lock), more than the products
 * themselves. A product in linear's layout (A's rows and B's columns
 * contiguous, C row-major) with at most GEMM_SMALL_OUT elements of C and
 * GEMM_SMALL_WORK multiply-adds goes to the kernel table's gemm_nt_f32
 * (cpu/gemm_small.c) instead, where the capability has one. Measured on
 * OpenBLAS 0.3.21 (Zen 3, avx2): within the bounds it takes 1.3x (64x4x16)
 * to 9.5x (1x128x128) fewer instructions, 1.5x for 16x16x16, and 1.5-2x
 * less time (8x32x16: 204 vs 312 ns, 8x4x32: 104 vs 216); past them BLAS
 * catches up,
 * first where C is large and k short (32x32x16: 0.93x the time), since each
 * element of C costs a reduction of its own there. The choice depends on
 * the whole product's shape and layout only (never on a block of a split
 * product: serial_f32 never takes it, and such products
 * are far below a split), so results do not depend on the thread count; a
 * forced portable kernel wins. addmm hands such a product its bias where it
 * lies (disp__gemm_small_from): broadcasting the bias into C first cost
 * ~1k instructions a linear, a third more than the 8x32x16 product. */
enum { GEMM_SMALL_OUT = 256, GEMM_SMALL_WORK = 16384 };

static int gemm_small_nt(int64_t m, int64_t n, int64_t k, disp__mat a, disp__mat b, disp__mat c) {
  if (m <= 0 || n <= 0 || k <= 0 || m > GEMM_SMALL_OUT || n > GEMM_SMALL_OUT || m * n > GEMM_SMALL_OUT ||
      k > GEMM_SMALL_WORK || m * n * k > GEMM_SMALL_WORK)
    return 0;
  /* strides of size-1 dims are never used; C's rows must not overlap */
  return (k == 1 || (a.cs == 1 && b.rs == 1)) && (n == 1 || c.cs == 1) && (m == 1 || c.rs >= n) &&
         !atomic_load_explicit(&g_force_portable, memory_order_relaxed) && disp__cpu_kernels()->gemm_nt_f32;
}

disp_status disp__gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, disp__mat a, disp__mat b,
                           float beta, disp__mat c) {
  if (gemm_small_nt(m, n, k, a, b, c)) {
    disp__cpu_kernels()->gemm_nt_f32(m, n, k, alpha, a.data, a.rs, b.data, b.cs, beta, c.data, c.rs, c.data,
                                     c.rs);
    return DISP_OK;
  }
  return split_f32(m, n, k, alpha, a, b, beta, c);
}

disp_status disp__gemm_f64(int64_t m, int64_t n, int64_t k, double alpha, disp__mat a,
                           disp__mat b, double beta, disp__mat c) {
  return split_f64(m, n, k, alpha, a, b, beta, c);
}

/* ---- other dtypes: convert to the accumulation type, multiply, store ---- */

/* 1.13's addmm converts alpha and beta with Scalar::to<opmath_t>() (float for
 * the 16-bit floats, the type itself otherwise), which refuses a value the
 * type cannot hold: nan or 1e300 for an integer product, 1e300 for float. */
static disp_status scalar_to_opmath(disp_scalar s, disp_dtype dt, char buf[8]) {
  if (dt == DISP_DTYPE_FLOAT16 || dt == DISP_DTYPE_BFLOAT16) dt = DISP_DTYPE_FLOAT32;
  /* an integer or a bool fits any floating type, and only the integer
   * products read the converted element: linear's alpha and beta of 1 need
   * no conversion (the check itself cost ~100 instructions each) */
  if ((dt == DISP_DTYPE_FLOAT32 || dt == DISP_DTYPE_FLOAT64) &&
      (s.kind == DISP_SCALAR_INT || s.kind == DISP_SCALAR_BOOL))
    return DISP_OK;
  return disp__ew_scalar_to_elem(s, dt, buf);
}

/* ---- bfloat16 ----------------------------------------------------------
 * Note [bfloat16 gemm]: small bfloat16 products run one of PyTorch 1.13's
 * four scalar gemm loops (BlasKernel.cpp), picked by addmm_impl_cpu_ from the
 * operands' strides; the loops differ in rounding. gemm_transa_ sums float
 * products in float (four interleaved partial sums) and rounds once; the
 * others (notrans, transb, transab) accumulate in bfloat16 itself, rounding
 * each product and each partial sum. Products of more than 16*16*16
 * multiply-adds go to mkldnn, which accumulates in float. */

static int64_t max1(int64_t v) { return v > 1 ? v : 1; }

/* Whether addmm_impl_cpu_ would call gemm with (Transpose, NoTranspose) for
 * c = a @ b (sizes m x k, k x n; strides in elements). */
static int pytorch_gemm_is_transa(int64_t m, int64_t n, int64_t k, disp__mat a, disp__mat b, disp__mat c) {
  int tc = !(c.rs == 1 && (n == 1 || c.cs >= max1(m)));
  int64_t gm = tc ? n : m, gn = tc ? m : n;
  int64_t s1[2] = {tc ? b.rs : a.rs, tc ? b.cs : a.cs}, s2[2] = {tc ? a.rs : b.rs, tc ? a.cs : b.cs};
  int i0 = tc ? 1 : 0, i1 = tc ? 0 : 1;
  int ta = s1[i0] == 1 && s1[i1] >= max1(gm) ? 0 : s1[i1] == 1 && s1[i0] >= max1(k) ? 1 : !tc;
  int tb = s2[i0] == 1 && s2[i1] >= max1(k) ? 0 : s2[i1] == 1 && s2[i0] >= max1(gn) ? 1 : !tc;
  return ta && !tb;
}

static float bf16_round(float x) { return disp__bf16_to_f32(disp__f32_to_bf16(x)); }

static void gemm_bf16(int64_t m, int64_t n, int64_t k, float alpha, disp__mat a, disp__mat b, float beta,
                      disp__mat c) {
#define AT(mat, i, j) disp__bf16_to_f32(*((const uint16_t *)(mat).data + (i) * (mat).rs + (j) * (mat).cs))
#define CP(i, j) ((uint16_t *)c.data + (i) * c.rs + (j) * c.cs)
  int float_acc = m * n * k > 16 * 16 * 16 || pytorch_gemm_is_transa(m, n, k, a, b, c);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float cv = beta == 0.0f ? 0.0f : disp__bf16_to_f32(*CP(i, j));
      if (float_acc) {
        float part[4] = {0, 0, 0, 0};
        int64_t l = 0;
        for (; l + 4 <= k; l += 4)
          for (int q = 0; q < 4; q++) part[q] += AT(a, i, l + q) * AT(b, l + q, j);
        for (; l < k; l++) part[0] += AT(a, i, l) * AT(b, l, j);
        float dot = part[0] + part[1] + part[2] + part[3];
        *CP(i, j) = disp__f32_to_bf16(beta == 0.0f ? alpha * dot : beta * cv + alpha * dot);
        continue;
      }
      /* the loops scale gemm's second operand by alpha: self's element when
       * addmm_impl_cpu_ swapped the operands for a row-major result */
      int swapped = !(c.rs == 1 && (n == 1 || c.cs >= max1(m)));
      float acc = bf16_round(cv * beta);
      for (int64_t l = 0; l < k; l++) {
        float x = AT(a, i, l), y = AT(b, l, j);
        float val = bf16_round((swapped ? x : y) * alpha);
        acc = bf16_round(acc + bf16_round((swapped ? y : x) * val));
      }
      *CP(i, j) = disp__f32_to_bf16(acc);
    }
#undef AT
#undef CP
}

int disp__gemm_small_from(disp_dtype dt, int64_t m, int64_t n, int64_t k, disp_scalar alpha, disp__mat a,
                          disp__mat b, disp_scalar beta, disp__mat s, disp__mat c) {
  char unused[8];
  if (dt != DISP_DTYPE_FLOAT32 || !gemm_small_nt(m, n, k, a, b, c) || (n > 1 && s.cs != 1) ||
      scalar_to_opmath(alpha, dt, unused) != DISP_OK || scalar_to_opmath(beta, dt, unused) != DISP_OK)
    return 0;
  disp__cpu_kernels()->gemm_nt_f32(m, n, k, (float)disp_scalar_to_double(alpha), a.data, a.rs, b.data, b.cs,
                                   (float)disp_scalar_to_double(beta), s.data, s.rs, c.data, c.rs);
  return 1;
}

disp_status disp__gemm(disp_dtype dt, int64_t m, int64_t n, int64_t k, disp_scalar alpha,
                       disp__mat a, disp__mat b, disp_scalar beta, disp__mat c) {
  char alpha_elem[8], beta_elem[8];
  if (dt != DISP_DTYPE_BOOL) {
    disp_status st = scalar_to_opmath(alpha, dt, alpha_elem);
    if (st == DISP_OK) st = scalar_to_opmath(beta, dt, beta_elem);
    if (st != DISP_OK) return st;
  }
  if (dt == DISP_DTYPE_BFLOAT16) {
    gemm_bf16(m, n, k, (float)disp_scalar_to_double(alpha), a, b, (float)disp_scalar_to_double(beta), c);
    return DISP_OK;
  }
  if (dt == DISP_DTYPE_FLOAT32)
    return disp__gemm_f32(m, n, k, (float)disp_scalar_to_double(alpha), a, b,
                          (float)disp_scalar_to_double(beta), c);
  if (dt == DISP_DTYPE_FLOAT64)
    return disp__gemm_f64(m, n, k, disp_scalar_to_double(alpha), a, b, disp_scalar_to_double(beta),
                          c);
  if (m == 0 || n == 0) return DISP_OK;
  size_t isz = disp_dtype_itemsize(dt);
  int fl = disp_dtype_is_floating(dt);
  size_t esz = fl ? sizeof(float) : sizeof(uint64_t);
  size_t na = (size_t)(m * k), nb = (size_t)(k * n), nc = (size_t)(m * n);
  char *buf = disp__malloc(esz * (na + nb + nc) + 1);
  if (!buf) return oom();
  char *pa = buf, *pb = buf + esz * na, *pc = pb + esz * nb;
  const char *ad = a.data, *bd = b.data;
  char *cd = c.data;
  int beta_zero = disp_scalar_to_double(beta) == 0.0;
#define ELEM(base, mat, i, j) ((base) + ((i) * (mat).rs + (j) * (mat).cs) * (int64_t)isz)
  disp_status st;
  if (fl) {
    float *fa = (float *)pa, *fb = (float *)pb, *fc = (float *)pc;
    for (int64_t i = 0; i < m; i++)
      for (int64_t p = 0; p < k; p++) fa[i * k + p] = (float)disp__load_f64(ELEM(ad, a, i, p), dt);
    for (int64_t p = 0; p < k; p++)
      for (int64_t j = 0; j < n; j++) fb[p * n + j] = (float)disp__load_f64(ELEM(bd, b, p, j), dt);
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++)
        fc[i * n + j] = beta_zero ? 0.0f : (float)disp__load_f64(ELEM(cd, c, i, j), dt);
    st = portable_f32(m, n, k, (float)disp_scalar_to_double(alpha), fa, k, 1, fb, n, 1,
                      (float)disp_scalar_to_double(beta), fc, n, 1);
    if (st == DISP_OK)
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) disp__store_f64(ELEM(cd, c, i, j), dt, fc[i * n + j]);
  } else if (dt == DISP_DTYPE_BOOL) {
    /* Boolean semiring: or over and; alpha/beta act as truth values. */
    int al = disp_scalar_to_double(alpha) != 0.0, be = !beta_zero;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        int v = be && *ELEM(cd, c, i, j);
        for (int64_t p = 0; p < k && !v; p++) v = al && *ELEM(ad, a, i, p) && *ELEM(bd, b, p, j);
        *ELEM(cd, c, i, j) = (char)v;
      }
    st = DISP_OK;
  } else {
    uint64_t *ua = (uint64_t *)pa, *ub = (uint64_t *)pb, *uc = (uint64_t *)pc;
    for (int64_t i = 0; i < m; i++)
      for (int64_t p = 0; p < k; p++) ua[i * k + p] = (uint64_t)disp__load_int64(ELEM(ad, a, i, p), dt);
    for (int64_t p = 0; p < k; p++)
      for (int64_t j = 0; j < n; j++) ub[p * n + j] = (uint64_t)disp__load_int64(ELEM(bd, b, p, j), dt);
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++)
        uc[i * n + j] = beta_zero ? 0 : (uint64_t)disp__load_int64(ELEM(cd, c, i, j), dt);
    uint64_t ualpha = (uint64_t)disp__load_int64(alpha_elem, dt);
    uint64_t ubeta = (uint64_t)disp__load_int64(beta_elem, dt);
    st = portable_u64(m, n, k, ualpha, ua, k, 1, ub, n, 1, ubeta, uc, n, 1);
    if (st == DISP_OK)
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) disp__store_int64(ELEM(cd, c, i, j), dt, (int64_t)uc[i * n + j]);
  }
#undef ELEM
  disp__free(buf);
  return st;
}
