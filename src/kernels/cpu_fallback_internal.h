/*
 * cpu_fallback_internal.h - what the CPU fallback (cpu_fallback.c) shares
 * with its warn-once set (cpu_fallback_warn.c). Internal to the kernels.
 */
#ifndef DISP_CPU_FALLBACK_INTERNAL_H
#define DISP_CPU_FALLBACK_INTERNAL_H

#include <disp.h>

/*
 * disp__fb_warn_once - warns, the first time in the process for `op`'s
 * name, that it falls back from `backend` to the CPU, in the words of
 * 1.13's MPS fallback. The warning handler runs with no lock held. Out of
 * memory only means a later call warns again. Thread-safe.
 */
void disp__fb_warn_once(const disp_op *op, disp_backend backend);

#endif
