/*
 * cpu_capability.h - which instruction set the hot kernels run with
 * (PyTorch's CPU_CAPABILITY / DispatchStub choice), picked once.
 */
#ifndef DISP_CPU_CAPABILITY_H
#define DISP_CPU_CAPABILITY_H

typedef enum disp__cpu_cap {
  DISP_CPU_DEFAULT, /* the target's baseline (SSE2 on x86-64) */
  DISP_CPU_AVX2,    /* AVX2 + FMA (+ F16C) */
  DISP_CPU_AVX512,  /* AVX-512 F, BW, VL, DQ */
  DISP_CPU_CAP_COUNT
} disp__cpu_cap;

/* The capability in use: the best the CPU supports, lowered by
 * DISP_CPU_CAPABILITY (or ATEN_CPU_CAPABILITY) = default|avx2|avx512; an
 * unknown name is ignored. Decided on first call; thread-safe. */
disp__cpu_cap disp__cpu_capability(void);

/* The best capability this CPU (and this build) can run. */
disp__cpu_cap disp__cpu_capability_supported(void);

/* "default", "avx2", "avx512". */
const char *disp__cpu_capability_name(disp__cpu_cap c);

#endif
