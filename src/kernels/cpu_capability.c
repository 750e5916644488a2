/*
 * cpu_capability.c - the CPU capability choice (cpu_capability.h).
 */
#include "cpu_capability.h"
#include "cpu/kernels.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <disp/cpu.h>

static const char *const k_names[DISP_CPU_CAP_COUNT] = {"default", "avx2", "avx512"};

const char *disp__cpu_capability_name(disp__cpu_cap c) {
  return (unsigned)c < DISP_CPU_CAP_COUNT ? k_names[c] : "default";
}

disp__cpu_cap disp__cpu_capability_supported(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return DISP_CPU_AVX512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return DISP_CPU_AVX2;
#endif
  return DISP_CPU_DEFAULT;
}

/* The capability the environment asks for, or DISP_CPU_CAP_COUNT. */
static disp__cpu_cap requested(void) {
  const char *s = getenv("DISP_CPU_CAPABILITY");
  if (!s || !*s) s = getenv("ATEN_CPU_CAPABILITY");
  if (!s) return DISP_CPU_CAP_COUNT;
  for (int c = 0; c < DISP_CPU_CAP_COUNT; c++)
    if (!strcmp(s, k_names[c])) return (disp__cpu_cap)c;
  return DISP_CPU_CAP_COUNT;
}

/* -1 until decided; the race of two first callers decides the same value. */
static atomic_int g_cap = -1;

disp__cpu_cap disp__cpu_capability(void) {
  int c = atomic_load_explicit(&g_cap, memory_order_relaxed);
  if (c >= 0) return (disp__cpu_cap)c;
  disp__cpu_cap best = disp__cpu_capability_supported(), want = requested();
  c = want < best ? want : best;
  atomic_store(&g_cap, c);
  return (disp__cpu_cap)c;
}

const char *disp_cpu_capability(void) { return disp__cpu_capability_name(disp__cpu_capability()); }

/* The per-capability tables, each from its own compilation of
 * src/kernels/cpu/ (CMakeLists.txt: the x86-64 build has three). */
extern const disp__cpu_kernel_table disp__cpu_kernels_default;
#ifdef DISP_CPU_X86_KERNELS
extern const disp__cpu_kernel_table disp__cpu_kernels_avx2;
extern const disp__cpu_kernel_table disp__cpu_kernels_avx512;
#endif

const disp__cpu_kernel_table *disp__cpu_kernels_for(disp__cpu_cap c) {
  switch (c) {
    case DISP_CPU_DEFAULT: return &disp__cpu_kernels_default;
#ifdef DISP_CPU_X86_KERNELS
    case DISP_CPU_AVX2: return &disp__cpu_kernels_avx2;
    case DISP_CPU_AVX512: return &disp__cpu_kernels_avx512;
#endif
    default: return NULL;
  }
}

/* NULL until decided; two first callers store the same table. */
static _Atomic(const disp__cpu_kernel_table *) g_kernels;

const disp__cpu_kernel_table *disp__cpu_kernels(void) {
  const disp__cpu_kernel_table *k = atomic_load_explicit(&g_kernels, memory_order_acquire);
  if (k) return k;
  /* the capability in use, or the best lower one this build has */
  for (int c = (int)disp__cpu_capability(); c >= 0 && !k; c--) k = disp__cpu_kernels_for((disp__cpu_cap)c);
  atomic_store_explicit(&g_kernels, k, memory_order_release);
  return k;
}
