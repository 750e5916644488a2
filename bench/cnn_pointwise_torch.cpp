// cnn_pointwise_torch - the libtorch side of cnn_pointwise: the same cases
// (names, shapes, float32, operands made the same way) through at::relu,
// at::threshold_backward, at::max_pool2d_with_indices and its backward
// under c10::InferenceMode. Built only when libtorch is installed; nothing
// else depends on it. Command line: twin.h.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <string>

#include "twin.h"

namespace {

struct Operands {
  at::Tensor x, y, gy, idx, gpooled;
};

// x uniform in [-1, 1), y = relu(x), gradients for y and the pooled output,
// the forward's indices.
Operands make(int64_t c, int64_t hw) {
  Operands o;
  o.x = at::rand({64, c, hw, hw}) * 2 - 1;
  o.y = at::relu(o.x);
  o.gy = at::rand({64, c, hw, hw}) * 2 - 1;
  o.gpooled = at::rand({64, c, hw / 2, hw / 2}) * 2 - 1;
  o.idx = std::get<1>(at::max_pool2d_with_indices(o.y, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false));
  return o;
}

bool run(const char *name, long iters) {
  static std::string current;
  static Operands o;
  std::string n = name;
  size_t us = n.find('_');
  if (us == std::string::npos) return false;
  std::string op = n.substr(0, us), shape = n.substr(us + 1);
  if (shape != "32x28" && shape != "64x14") return false;
  if (op != "relu" && op != "thrb" && op != "pool" && op != "poolb") return false;
  c10::InferenceMode guard;
  if (current != shape) {
    o = shape == "32x28" ? make(32, 28) : make(64, 14);
    current = shape;
  }
  for (long i = 0; i < iters; i++) {
    if (op == "relu") at::relu(o.x);
    else if (op == "thrb") at::threshold_backward(o.gy, o.y, 0);
    else if (op == "pool") at::max_pool2d_with_indices(o.y, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false);
    else at::max_pool2d_with_indices_backward(o.gpooled, o.y, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, o.idx);
  }
  return true;
}

}  // namespace

int main(int argc, char **argv) { return twin_main(argc, argv, run); }
