// optim_ref - the reference numbers of tests/test_optim.c, computed with
// libtorch 1.13's torch::optim (C++ frontend). Not built by CMake; build and
// run it by hand where Debian's libtorch-dev is installed:
//
//   g++ -std=c++17 -O1 tools/optim_ref.cpp -o /tmp/optim_ref \
//       -I/usr/include/torch/csrc/api/include -ltorch_cpu -lc10 && /tmp/optim_ref
//
// It prints one C initializer per optimizer configuration, ready to paste
// into the test. Every configuration runs the same problem: parameters
// p0 [2,3], p1 [4], p2 [3] (never given a gradient: must stay as it is) and
// p3 [21] (long enough for ATen's vectorized loop as well as its tail), six
// steps with gradients that change every step (grad_value), all of them
// exact binary fractions so both sides start from identical bits.
//
// The C++ frontend's update rules are checked here against Python 1.13's
// _single_tensor_sgd / _single_tensor_adam / _single_tensor_adamw, rewritten
// with the same ATen calls in the same order (python_*_step below): the
// program prints the largest difference between the two, which must be 0.
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <vector>

namespace {

enum Kind { SGD, ADAM, ADAMW };

struct Config {
  const char *name;
  Kind kind;
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
  double beta1, beta2, eps;
  bool amsgrad;
  bool f64;
};

// The configurations of the test, in its order.
const Config kConfigs[] = {
    {"sgd_plain", SGD, 0.1, 0, 0, 0, false, 0, 0, 0, false, false},
    {"sgd_momentum", SGD, 0.05, 0.9, 0, 0, false, 0, 0, 0, false, false},
    {"sgd_dampening_wd", SGD, 0.05, 0.9, 0.1, 0.01, false, 0, 0, 0, false, false},
    {"sgd_nesterov_wd", SGD, 0.03, 0.8, 0, 0.001, true, 0, 0, 0, false, false},
    {"sgd_momentum_f64", SGD, 0.05, 0.9, 0.25, 0.02, false, 0, 0, 0, false, true},
    {"adam_default", ADAM, 1e-3, 0, 0, 0, false, 0.9, 0.999, 1e-8, false, false},
    {"adam_lr_wd", ADAM, 0.01, 0, 0, 0.1, false, 0.9, 0.999, 1e-8, false, false},
    {"adam_amsgrad", ADAM, 0.02, 0, 0, 0, false, 0.8, 0.99, 1e-6, true, false},
    {"adam_amsgrad_f64", ADAM, 0.02, 0, 0, 0.05, false, 0.8, 0.99, 1e-6, true, true},
    {"adamw_default", ADAMW, 1e-3, 0, 0, 1e-2, false, 0.9, 0.999, 1e-8, false, false},
    {"adamw_amsgrad", ADAMW, 0.01, 0, 0, 0.1, false, 0.85, 0.995, 1e-7, true, false},
    {"adamw_no_wd", ADAMW, 0.01, 0, 0, 0, false, 0.9, 0.999, 1e-8, false, false},
};

const int kSteps = 6;
const int64_t kNumel[4] = {6, 4, 3, 21};

// The same two formulas live in tests/test_optim.c; all values are exact in float.
double init_value(int k, int64_t i) { return (double)(i % 7 - 3) / 8.0 + (double)k / 4.0; }
double grad_value(int k, int64_t i, int t) {
  return (double)((i * 5 + k * 3 + t * 7) % 13 - 6) / 16.0 + (double)((t * (i + 1)) % 5) / 64.0;
}

torch::Tensor filled(int k, int t, bool f64) {
  torch::Tensor x = torch::empty({kNumel[k]}, f64 ? torch::kFloat64 : torch::kFloat32);
  for (int64_t i = 0; i < kNumel[k]; ++i)
    x[i] = t == 0 ? init_value(k, i) : grad_value(k, i, t);
  return k == 0 ? x.reshape({2, 3}) : x;
}

std::vector<torch::Tensor> make_params(bool f64) {
  std::vector<torch::Tensor> ps;
  for (int k = 0; k < 4; ++k) ps.push_back(filled(k, 0, f64).requires_grad_(true));
  return ps;
}

void set_grads(std::vector<torch::Tensor> &ps, int t, bool f64) {
  for (int k = 0; k < 4; ++k)
    if (k != 2) ps[k].mutable_grad() = filled(k, t, f64);
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const Config &c,
                                                        const std::vector<torch::Tensor> &ps) {
  switch (c.kind) {
  case SGD:
    return std::make_unique<torch::optim::SGD>(
        ps, torch::optim::SGDOptions(c.lr).momentum(c.momentum).dampening(c.dampening)
                .weight_decay(c.weight_decay).nesterov(c.nesterov));
  case ADAM:
    return std::make_unique<torch::optim::Adam>(
        ps, torch::optim::AdamOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps)
                .weight_decay(c.weight_decay).amsgrad(c.amsgrad));
  case ADAMW:
    return std::make_unique<torch::optim::AdamW>(
        ps, torch::optim::AdamWOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps)
                .weight_decay(c.weight_decay).amsgrad(c.amsgrad));
  }
  return nullptr;
}

// Per-parameter state of the Python-rules rewrite.
struct PyState {
  torch::Tensor buf, exp_avg, exp_avg_sq, max_exp_avg_sq;
  double step = 0;
};

// Python 1.13 _single_tensor_sgd, one parameter (maximize off).
void python_sgd_step(const Config &c, torch::Tensor p, torch::Tensor d_p, PyState &s) {
  if (c.weight_decay != 0) d_p = d_p.add(p, c.weight_decay);
  if (c.momentum != 0) {
    if (!s.buf.defined()) {
      s.buf = torch::clone(d_p).detach();
    } else {
      s.buf.mul_(c.momentum).add_(d_p, 1 - c.dampening);
    }
    d_p = c.nesterov ? d_p.add(s.buf, c.momentum) : s.buf;
  }
  p.add_(d_p, -c.lr);
}

// Python 1.13 _single_tensor_adam / _single_tensor_adamw (not capturable, not differentiable).
void python_adam_step(const Config &c, torch::Tensor p, torch::Tensor grad, PyState &s) {
  if (!s.exp_avg.defined()) {
    s.exp_avg = torch::zeros_like(p, torch::MemoryFormat::Preserve);
    s.exp_avg_sq = torch::zeros_like(p, torch::MemoryFormat::Preserve);
    if (c.amsgrad) s.max_exp_avg_sq = torch::zeros_like(p, torch::MemoryFormat::Preserve);
  }
  s.step += 1;
  if (c.kind == ADAMW) {
    p.mul_(1 - c.lr * c.weight_decay);
  } else if (c.weight_decay != 0) {
    grad = grad.add(p, c.weight_decay);
  }
  s.exp_avg.mul_(c.beta1).add_(grad, 1 - c.beta1);
  s.exp_avg_sq.mul_(c.beta2).addcmul_(grad, grad.conj(), 1 - c.beta2);
  double bias_correction1 = 1 - std::pow(c.beta1, s.step);
  double bias_correction2 = 1 - std::pow(c.beta2, s.step);
  double step_size = c.lr / bias_correction1;
  double bias_correction2_sqrt = std::sqrt(bias_correction2);
  torch::Tensor denom;
  if (c.amsgrad) {
    torch::maximum_out(s.max_exp_avg_sq, s.max_exp_avg_sq, s.exp_avg_sq);
    denom = (s.max_exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(c.eps);
  } else {
    denom = (s.exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(c.eps);
  }
  p.addcdiv_(s.exp_avg, denom, -step_size);
}

void print_values(const torch::Tensor &x, bool f64) {
  torch::Tensor flat = x.detach().reshape({-1}).to(torch::kFloat64);
  for (int64_t i = 0; i < flat.numel(); ++i)
    std::printf(f64 ? "%.17g," : "%.9g,", flat[i].item<double>());
}

void run(const Config &c) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> ps = make_params(c.f64);
  std::vector<torch::Tensor> qs = make_params(c.f64);
  std::vector<PyState> states(4);
  auto opt = make_optimizer(c, ps);
  double python_diff = 0;
  std::printf("  /* %s */ {", c.name);
  for (int t = 1; t <= kSteps; ++t) {
    set_grads(ps, t, c.f64);
    opt->step();
    for (int k = 0; k < 4; ++k) {
      if (k == 2) continue;
      torch::Tensor g = filled(k, t, c.f64);
      if (c.kind == SGD) python_sgd_step(c, qs[k], g, states[k]);
      else python_adam_step(c, qs[k], g, states[k]);
      python_diff = std::max(python_diff, (ps[k] - qs[k]).abs().max().item<double>());
    }
    std::printf("\n    ");
    print_values(ps[0], c.f64);
    print_values(ps[1], c.f64);
  }
  std::printf("\n    ");
  print_values(ps[3], c.f64);
  bool p2_kept = torch::equal(ps[2], filled(2, 0, c.f64));
  std::printf("},\n  /* %s: Python-rules difference %g, p2 unchanged: %s */\n", c.name, python_diff,
              p2_kept ? "yes" : "NO");
}

} // namespace

int main() {
  std::printf("/* libtorch %s, torch::optim, %d steps */\n", TORCH_VERSION, kSteps);
  for (const Config &c : kConfigs) run(c);
  return 0;
}
