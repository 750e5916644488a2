// mlp_torch - the libtorch side of bench/mlp_forward: the same MLP forward
// (at::linear, at::relu, at::linear, at::log_softmax dim 1, float32) under
// c10::InferenceMode, so no autograd bookkeeping. Built only when libtorch
// is installed; nothing else depends on it. Command line: twin.h.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "twin.h"

namespace {

struct Size {
  int64_t in, hidden, out, batch;
};

const std::map<std::string, Size> kSizes = {
    {"mlp_16_32_4_b8", {16, 32, 4, 8}},
    {"mlp_64_128_10_b32", {64, 128, 10, 32}},
    {"mlp_784_256_10_b128", {784, 256, 10, 128}},
};

// Uniform in [-scale, scale), as mlp_forward's inputs (torch.nn.Linear's scale).
at::Tensor uniform(at::IntArrayRef shape, double scale) { return (at::rand(shape) * 2 - 1) * scale; }

bool run(const char *name, long iters) {
  static std::map<std::string, std::vector<at::Tensor>> params;
  auto size = kSizes.find(name);
  if (size == kSizes.end()) return false;
  c10::InferenceMode guard;
  std::vector<at::Tensor> &p = params[name];
  if (p.empty()) {
    const Size &s = size->second;
    double s1 = 1 / std::sqrt(double(s.in)), s2 = 1 / std::sqrt(double(s.hidden));
    p = {uniform({s.batch, s.in}, 1), uniform({s.hidden, s.in}, s1), uniform({s.hidden}, s1),
         uniform({s.out, s.hidden}, s2), uniform({s.out}, s2)};
  }
  for (long i = 0; i < iters; i++) {
    at::Tensor h = at::relu(at::linear(p[0], p[1], p[2]));
    at::Tensor y = at::log_softmax(at::linear(h, p[3], p[4]), 1);
  }
  return true;
}

}  // namespace

int main(int argc, char **argv) { return twin_main(argc, argv, run); }
