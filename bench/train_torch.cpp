// train_torch - the libtorch side of bench/train_step: the same training
// step (forward with at::linear/relu/conv2d/max_pool2d, at::cross_entropy_loss,
// Tensor::backward, torch::optim::Adam lr 1e-3 step, zero_grad) on the same
// shapes, float32. Built only when libtorch is installed. Command line:
// twin.h's, plus
//
//   train_torch --ops NAME...   one warm step per case with a RecordFunction
//                               observer: "NAME top calls" per case (operator
//                               calls through the dispatcher; top = not nested
//                               in another operator call)
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/optim/adam.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "twin.h"

namespace {

struct Case {
  bool cnn;
  int64_t in, hidden, out, batch;
};

const std::map<std::string, Case> kCases = {
    {"step_16_32_4_b8", {false, 16, 32, 4, 8}},
    {"step_64_128_10_b32", {false, 64, 128, 10, 32}},
    {"step_784_256_10_b128", {false, 784, 256, 10, 128}},
    {"step_cnn_b64", {true, 0, 0, 10, 64}},
};

struct State {
  std::vector<at::Tensor> params;
  at::Tensor x, y;
  std::unique_ptr<torch::optim::Adam> opt;
};

// A weight and bias with torch.nn's bound 1/sqrt(fan_in), requiring grad.
void add_layer(State &s, std::vector<int64_t> wsizes, int64_t fan_in) {
  double bound = 1 / std::sqrt(double(fan_in));
  s.params.push_back(((at::rand(wsizes) * 2 - 1) * bound).requires_grad_());
  s.params.push_back(((at::rand({wsizes[0]}) * 2 - 1) * bound).requires_grad_());
}

State make_state(const Case &c) {
  State s;
  if (c.cnn) {
    add_layer(s, {32, 1, 3, 3}, 9);
    add_layer(s, {64, 32, 3, 3}, 32 * 9);
    add_layer(s, {128, 64 * 7 * 7}, 64 * 7 * 7);
    add_layer(s, {10, 128}, 128);
    s.x = at::rand({c.batch, 1, 28, 28}) * 2 - 1;
  } else {
    add_layer(s, {c.hidden, c.in}, c.in);
    add_layer(s, {c.out, c.hidden}, c.hidden);
    s.x = at::rand({c.batch, c.in}) * 2 - 1;
  }
  s.y = at::randint(c.out, {c.batch}, at::kLong);
  s.opt = std::make_unique<torch::optim::Adam>(s.params, torch::optim::AdamOptions(1e-3));
  return s;
}

at::Tensor mlp_head(const at::Tensor &x, const at::Tensor *p) {
  return at::linear(at::relu(at::linear(x, p[0], p[1])), p[2], p[3]);
}

at::Tensor conv_block(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b) {
  return at::max_pool2d(at::relu(at::conv2d(x, w, b, 1, 1)), 2);
}

at::Tensor forward(const Case &c, State &s) {
  if (!c.cnn) return mlp_head(s.x, s.params.data());
  at::Tensor h = conv_block(conv_block(s.x, s.params[0], s.params[1]), s.params[2], s.params[3]);
  return mlp_head(h.flatten(1), s.params.data() + 4);
}

// forward, cross-entropy, backward, Adam step, zero_grad (1.13: zeroed, not None).
void train_step(const Case &c, State &s) {
  at::Tensor loss = at::cross_entropy_loss(forward(c, s), s.y);
  loss.backward();
  s.opt->step();
  s.opt->zero_grad();
}

std::map<std::string, State> states;

bool run(const char *name, long iters) {
  auto c = kCases.find(name);
  if (c == kCases.end()) return false;
  State &s = states[name];
  if (!s.opt) s = make_state(c->second);
  for (long i = 0; i < iters; i++) train_step(c->second, s);
  return true;
}

// ---- --ops: operator calls per step --------------------------------------------

thread_local int depth = 0;
long top_calls = 0, all_calls = 0;

struct Ctx : at::ObserverContext {};  // non-null, so the end callback surely runs

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction &) {
  all_calls++;
  top_calls += depth == 0;
  depth++;
  return std::make_unique<Ctx>();
}

void on_exit(const at::RecordFunction &, at::ObserverContext *) { depth--; }

int count_ops(int argc, char **argv) {
  at::set_num_threads(1);
  for (int i = 2; i < argc; i++) {
    if (!run(argv[i], 2)) continue;
    top_calls = all_calls = 0;
    auto handle = at::addGlobalCallback(
        at::RecordFunctionCallback(on_enter, on_exit).scopes({at::RecordScope::FUNCTION}));
    run(argv[i], 1);
    at::removeCallback(handle);
    std::printf("%s %ld %ld\n", argv[i], top_calls, all_calls);
  }
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc >= 2 && !std::strcmp(argv[1], "--ops")) return count_ops(argc, argv);
  return twin_main(argc, argv, run);
}
