// ops_torch - the libtorch side of bench_ops: the same cases (names,
// shapes, float32) through at::add, at::relu, at::softmax, at::sum,
// at::conv2d and at::mm under c10::InferenceMode. Built only when libtorch
// is installed; nothing else depends on it. Command line: twin.h.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <map>
#include <string>
#include <vector>

#include "twin.h"

namespace {

using Shapes = std::vector<std::vector<int64_t>>;
using Call = at::Tensor (*)(const std::vector<at::Tensor> &);

struct Case {
  Shapes shapes;  // operands, in [-0.5, 0.5)
  Call call;
};

at::Tensor add(const std::vector<at::Tensor> &t) { return at::add(t[0], t[1]); }
at::Tensor mm(const std::vector<at::Tensor> &t) { return at::mm(t[0], t[1]); }
// conv2d: stride 1, padding 1, dilation 1, groups 1, as bench_ops.
at::Tensor conv(const std::vector<at::Tensor> &t) { return at::conv2d(t[0], t[1], t[2], 1, 1, 1, 1); }

const std::map<std::string, Case> &cases() {
  static const std::map<std::string, Case> all = {
      {"add_1", {{{1}, {1}}, add}},
      {"add_1k", {{{1000}, {1000}}, add}},
      {"add_100k", {{{100000}, {100000}}, add}},
      {"add_1M", {{{1000000}, {1000000}}, add}},
      {"add_10M", {{{10000000}, {10000000}}, add}},
      {"relu_1M", {{{1000000}}, [](const std::vector<at::Tensor> &t) { return at::relu(t[0]); }}},
      {"softmax_1M", {{{1000, 1000}}, [](const std::vector<at::Tensor> &t) { return at::softmax(t[0], -1); }}},
      {"sum_1M", {{{1000000}}, [](const std::vector<at::Tensor> &t) { return at::sum(t[0]); }}},
      {"conv2d_1_32", {{{64, 1, 28, 28}, {32, 1, 3, 3}, {32}}, conv}},
      {"conv2d_32_64", {{{64, 32, 28, 28}, {64, 32, 3, 3}, {64}}, conv}},
      {"mm_64", {{{64, 64}, {64, 64}}, mm}},
      {"mm_256", {{{256, 256}, {256, 256}}, mm}},
  };
  return all;
}

bool run(const char *name, long iters) {
  static std::string current;
  static std::vector<at::Tensor> operands;  // one case's at a time (add_10M's are 80 MB)
  auto c = cases().find(name);
  if (c == cases().end()) return false;
  c10::InferenceMode guard;
  if (current != name) {
    operands.clear();
    for (const auto &s : c->second.shapes) operands.push_back(at::rand(s) - 0.5);
    current = name;
  }
  for (long i = 0; i < iters; i++) at::Tensor out = c->second.call(operands);
  return true;
}

}  // namespace

int main(int argc, char **argv) { return twin_main(argc, argv, run); }
