// twin.h - the command line every libtorch twin of a C benchmark shares
// (ops_torch, mlp_torch); harness.h describes the protocol:
//
//   TWIN --threads N --time NAME:ITERS...    "default_threads D" (libtorch's own
//                                            default), "threads T", then "NAME ns" per case
//   TWIN --threads N --count NAME:ITERS...   each case warm, then ITERS calls in a
//                                            callgrind region (cg_region.h)
//
// Cases `run` does not know are skipped silently. N > 0 calls
// at::set_num_threads(N); 0 keeps libtorch's default. The timing method is harness.c's: a warm-up of iters/10 + 1 calls, then the median of
// 7 runs. Header-only, for C++ twins only; included once per program.
#ifndef DISP_BENCH_TWIN_H
#define DISP_BENCH_TWIN_H

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cg_region.h"

// Runs case `name` `iters` times; false for an unknown case.
using twin_run_fn = bool (*)(const char *name, long iters);

inline double twin_median_ns(twin_run_fn run, const char *name, long iters) {
  double runs[7];
  if (!run(name, iters / 10 + 1)) return -1;
  for (double &r : runs) {
    auto t0 = std::chrono::steady_clock::now();
    run(name, iters);
    r = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / iters;
  }
  std::sort(runs, runs + 7);
  return runs[3];
}

inline int twin_main(int argc, char **argv, twin_run_fn run) {
  if (argc < 4 || strcmp(argv[1], "--threads")) return 2;
  bool count = !strcmp(argv[3], "--count");
  if (!count && strcmp(argv[3], "--time")) return 2;
  if (!count) std::printf("default_threads %d\n", at::get_num_threads());
  if (int n = std::atoi(argv[2])) at::set_num_threads(n);
  if (!count) std::printf("threads %d\n", at::get_num_threads());
  for (int i = 4; i < argc; i++) {
    std::string spec = argv[i];
    size_t colon = spec.rfind(':');
    if (colon == std::string::npos) return 2;
    std::string name = spec.substr(0, colon);
    long iters = std::atol(spec.c_str() + colon + 1);
    if (iters <= 0) return 2;
    if (!run(name.c_str(), 2)) continue;  // a case without a libtorch side (or unknown): no line
    if (count) {
      CG_REGION_BEGIN();
      run(name.c_str(), iters);
      CG_REGION_END(name.c_str());
    } else {
      std::printf("%s %.1f\n", name.c_str(), twin_median_ns(run, name.c_str(), iters));
      std::fflush(stdout);
    }
  }
  return 0;
}

#endif  // DISP_BENCH_TWIN_H
