// ops_torch - the libtorch side of bench_ops: the same cases through
// libtorch (at::add on 1-element float32 tensors, at::mm at 64 and 256).
// Built only when libtorch is installed; nothing else depends on it.
//
//   ops_torch                          one "NAME ns/call" line per case (median of 7 runs)
//   ops_torch --case NAME --iters N    run one case N times (bench_ops runs it under callgrind)
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// Runs case `name` `iters` times; false for an unknown case.
bool run(const char *name, long iters) {
  if (!strcmp(name, "add_1")) {
    static at::Tensor a = at::ones({1}), b = at::ones({1});
    for (long i = 0; i < iters; i++) at::Tensor c = at::add(a, b);
    return true;
  }
  int n = !strcmp(name, "mm_64") ? 64 : !strcmp(name, "mm_256") ? 256 : 0;
  if (!n) return false;
  at::Tensor x = at::rand({n, n}), y = at::rand({n, n});
  for (long i = 0; i < iters; i++) at::Tensor z = at::mm(x, y);
  return true;
}

long iters_of(const char *name) { return !strcmp(name, "add_1") ? 200000 : !strcmp(name, "mm_64") ? 2000 : 40; }

double median_ns(const char *name) {
  long iters = iters_of(name);
  double runs[7];
  run(name, iters / 10 + 1);
  for (double &r : runs) {
    auto t0 = std::chrono::steady_clock::now();
    run(name, iters);
    r = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / iters;
  }
  std::sort(runs, runs + 7);
  return runs[3];
}

}  // namespace

int main(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "--case")) return run(argv[2], std::atol(argv[4])) ? 0 : 1;
  if (argc == 2) {  // one case's median only: bench_ops alternates the two sides
    if (!iters_of(argv[1])) return 1;
    std::printf("%s %.1f\n", argv[1], median_ns(argv[1]));
    return 0;
  }
  for (const char *c : {"add_1", "mm_64", "mm_256"}) std::printf("%s %.1f\n", c, median_ns(c));
  return 0;
}
