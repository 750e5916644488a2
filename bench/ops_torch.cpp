// ops_torch - the libtorch side of bench_ops: the same cases through
// libtorch (at::add on 1-element float32 tensors, at::mm at 64 and 256),
// ns/call as the median of 7 runs. Built only when libtorch is installed.
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

template <class F>
static double median_ns(long iters, F f) {
  double runs[7];
  for (double &r : runs) {
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < iters; i++) f();
    r = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / iters;
  }
  std::sort(runs, runs + 7);
  return runs[3];
}

int main() {
  at::Tensor a = at::ones({1}), b = at::ones({1});
  double ns = median_ns(200000, [&] { at::Tensor c = at::add(a, b); });
  std::printf("libtorch add 1-element float32 %10.1f ns/call\n", ns);
  for (int n : {64, 256}) {
    at::Tensor x = at::rand({n, n}), y = at::rand({n, n});
    double t = median_ns(n == 64 ? 2000 : 40, [&] { at::Tensor z = at::mm(x, y); });
    std::printf("libtorch mm %3dx%-3d float32    %10.0f ns/call  %6.2f GFLOP/s\n", n, n, t, 2.0 * n * n * n / t);
  }
  return 0;
}
