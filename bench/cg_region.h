/*
 * cg_region.h - marks the measured loop of a benchmark case for callgrind,
 * in the C benchmarks and their C++ libtorch twins alike.
 *
 * Instruction counts are taken only inside the loop: the program runs
 * under `valgrind --tool=callgrind --instr-atstart=no`, so start-up (for
 * libtorch, loading and registering thousands of operators) and the warm-up
 * calls are never counted. CG_REGION_BEGIN zeroes the counters and turns
 * instrumentation on; CG_REGION_END(name) turns it off and dumps the counts
 * since BEGIN into the next numbered dump file (OUT.1, OUT.2, ...), which
 * harness.c's bench_callgrind reads in order. Outside valgrind, and where
 * <valgrind/callgrind.h> is not installed, both do nothing.
 */
#ifndef DISP_BENCH_CG_REGION_H
#define DISP_BENCH_CG_REGION_H

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define CG_REGION_BEGIN()                \
  do {                                   \
    CALLGRIND_ZERO_STATS;                \
    CALLGRIND_START_INSTRUMENTATION;     \
  } while (0)
#define CG_REGION_END(name)              \
  do {                                   \
    CALLGRIND_STOP_INSTRUMENTATION;      \
    CALLGRIND_DUMP_STATS_AT(name);       \
  } while (0)
#endif
#endif

#ifndef CG_REGION_BEGIN
#define CG_REGION_BEGIN() ((void)0)
#define CG_REGION_END(name) ((void)(name))
#endif

#endif /* DISP_BENCH_CG_REGION_H */
