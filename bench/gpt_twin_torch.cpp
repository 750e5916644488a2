// gpt_twin_torch - the libtorch twin of examples/gpt: nanoGPT's model and
// training loop in libtorch 1.13, from the same initial weights (a
// checkpoint the C example writes at step 0: gpt --stop 0 --save FILE),
// over the same batches (examples/gpt/corpus.h's reader and generator) with
// the same schedule, so its per-step losses can be set beside ours.
//
//   gpt_twin_torch --init FILE [--steps N] [--stop N] [--threads N]
//                  [--loss-every N] [--eval-every N] [--eval-iters N] [--export FILE]
//                  [--export-pt FILE] [--sample N] [--temperature T] [--top-k K]
//
// Prints "step S loss L" (%.9g) every --loss-every steps, the evaluations
// as gpt does, "trained to step S in T s", "val loss: X" and, with
// --export, writes the trained parameters under nanoGPT's names as
// safetensors (libdispatch's writer), which `gpt --steps 0 --resume FILE`
// evaluates in C. --sample N then generates N characters as nanoGPT's
// generate does (no KV cache: each token runs the window cropped to the
// last 64 tokens; logits / T, top-k, softmax, multinomial) and prints them
// with "sampled N tokens in X s (Y tokens/s)", as gpt --sample does.
// --export-pt writes the trained weights as PyTorch does, with
// torch::pickle_save (a file torch.load reads): a Dict<string, Tensor> laid
// out as nanoGPT's state_dict (the parameters, lm_head.weight tied to wte,
// each layer's attn.bias mask buffer), which examples/gpt/from_pytorch.py
// converts for the C example.
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <disp.h>
#include <disp/safetensors.h>

extern "C" {
#include "corpus.h"  // example code without C++ guards
}

namespace {

struct Flags {
  long steps = 2000, stop = 0, threads = 0, loss_every = 0, eval_every = 250, eval_iters = 20;
  long sample = 0, top_k = 200;
  double temperature = 0.8;
  unsigned long long seed = 1337;
  const char *init = nullptr, *exp = nullptr, *exp_pt = nullptr, *data = nullptr;
};

struct Gpt {
  int64_t V, T = 64, L = 4, H = 4, C = 128;
  std::vector<std::string> names;
  std::vector<torch::Tensor> params;
  torch::Tensor mask;
  torch::Tensor &p(const std::string &n) {
    for (size_t i = 0; i < names.size(); i++)
      if (names[i] == n) return params[i];
    throw std::runtime_error("no parameter " + n);
  }
};

torch::Tensor from_disp(disp_tensor *t) {
  std::vector<int64_t> sizes(disp_tensor_sizes(t), disp_tensor_sizes(t) + disp_tensor_ndim(t));
  auto dt = disp_tensor_dtype(t) == DISP_DTYPE_INT64 ? torch::kLong : torch::kFloat;
  return torch::from_blob(disp_tensor_data_ptr(t), sizes, dt).clone();
}

// Parameters in model.h's order, from the C example's step-0 checkpoint.
void load(Gpt &m, const char *path) {
  disp_safetensors *set = nullptr;
  if (disp_safetensors_load(path, &set) != DISP_OK) throw std::runtime_error(disp_last_error());
  auto add = [&](const std::string &n) {
    disp_tensor *t = disp_safetensors_get(set, n.c_str());
    if (!t) throw std::runtime_error(path + std::string(": no ") + n);
    m.names.push_back(n);
    m.params.push_back(from_disp(t).set_requires_grad(true));
  };
  add("transformer.wte.weight");
  add("transformer.wpe.weight");
  for (int64_t l = 0; l < m.L; l++)
    for (const char *part : {"ln_1.weight", "attn.c_attn.weight", "attn.c_proj.weight", "ln_2.weight",
                             "mlp.c_fc.weight", "mlp.c_proj.weight"})
      add("transformer.h." + std::to_string(l) + "." + part);
  add("transformer.ln_f.weight");
  disp_safetensors_free(set);
  m.mask = torch::ones({m.T, m.T}, torch::kBool).triu(1);  // true above the diagonal
}

// The logits [B, T, V]; last_only: [B, 1, V] for the last position, as
// nanoGPT's forward without targets (its lm_head on x[:, [-1], :]).
torch::Tensor forward(Gpt &m, const torch::Tensor &idx, bool last_only = false) {
  int64_t B = idx.size(0), T = idx.size(1), C = m.C, hs = C / m.H;
  auto x = torch::embedding(m.params[0], idx) + torch::embedding(m.params[1], torch::arange(T, torch::kLong));
  auto heads = [&](const torch::Tensor &t) { return t.view({B, T, m.H, hs}).transpose(1, 2); };
  for (int64_t l = 0; l < m.L; l++) {
    auto *p = &m.params[2 + 6 * l];
    auto h = torch::layer_norm(x, {C}, p[0], {}, 1e-5);
    auto qkv = torch::linear(h, p[1]);
    auto parts = qkv.split(C, 2);
    auto q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
    auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(hs)));
    att = torch::softmax(att.masked_fill(m.mask.narrow(0, 0, T).narrow(1, 0, T), -INFINITY), -1);
    auto y = torch::matmul(att, v).transpose(1, 2).reshape({B, T, C});
    x = x + torch::linear(y, p[2]);
    x = x + torch::linear(torch::gelu(torch::linear(torch::layer_norm(x, {C}, p[3], {}, 1e-5), p[4])), p[5]);
  }
  x = torch::layer_norm(x, {C}, m.params.back(), {}, 1e-5);
  return torch::linear(last_only ? x.narrow(1, T - 1, 1) : x, m.params[0]);
}

// nanoGPT's generate (model.py) from a newline, f.sample tokens: prints
// them and the rate.
void sample(Gpt &m, const corpus &c, const Flags &f) {
  torch::NoGradGuard no_grad;
  auto idx = torch::full({1, 1}, int64_t(corpus_encode(&c, '\n')), torch::kLong);
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < f.sample; i++) {
    auto cond = idx.size(1) <= m.T ? idx : idx.narrow(1, idx.size(1) - m.T, m.T);
    auto logits = forward(m, cond, true).select(1, -1) / f.temperature;
    if (f.top_k > 0) {
      auto v = std::get<0>(torch::topk(logits, std::min<int64_t>(f.top_k, logits.size(-1))));
      logits = logits.masked_fill(logits < v.narrow(1, v.size(1) - 1, 1), -INFINITY);
    }
    auto next = torch::multinomial(torch::softmax(logits, -1), 1);
    idx = torch::cat({idx, next}, 1);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto ids = idx.contiguous();
  std::string text(size_t(f.sample), ' ');
  corpus_decode(&c, ids.data_ptr<int64_t>() + 1, size_t(f.sample), &text[0]);
  std::printf("%s\nsampled %ld tokens in %.3f s (%.1f tokens/s)\n", text.c_str(), f.sample, secs,
              double(f.sample) / secs);
}

torch::Tensor loss_of(Gpt &m, const corpus &c, int val, uint64_t *state) {
  disp_tensor *x = nullptr, *y = nullptr;
  if (corpus_batch(&c, val, 12, m.T, state, &x, &y) != DISP_OK) throw std::runtime_error(disp_last_error());
  auto tx = from_disp(x), ty = from_disp(y);
  disp_tensor_release(x), disp_tensor_release(y);
  return torch::cross_entropy_loss(forward(m, tx).view({-1, m.V}), ty.view(-1));
}

double estimate(Gpt &m, const corpus &c, int val, long iters, uint64_t seed) {
  torch::NoGradGuard no_grad;
  double sum = 0;
  uint64_t state = seed;
  for (long i = 0; i < iters; i++) sum += loss_of(m, c, val, &state).item<float>();
  return sum / double(iters);
}

double lr_at(long it, long steps) {  // examples/gpt/gpt.c's lr_at
  const double lr = 1e-3, min_lr = 1e-4;
  const long warmup = 100;
  if (it < warmup) return lr * double(it) / double(warmup);
  if (it > steps) return min_lr;
  double ratio = double(it - warmup) / double(steps - warmup);
  return min_lr + 0.5 * (1.0 + std::cos(M_PI * ratio)) * (lr - min_lr);
}

void export_params(Gpt &m, const char *path) {
  disp_safetensors *set = nullptr;
  if (disp_safetensors_new(&set) != DISP_OK) throw std::runtime_error(disp_last_error());
  for (size_t i = 0; i < m.params.size(); i++) {
    auto t = m.params[i].detach().contiguous();
    disp_dims shape{t.dim(), {0}};
    for (int64_t d = 0; d < t.dim(); d++) shape.v[d] = t.size(d);
    disp_tensor *dt = disp_from_data(t.data_ptr<float>(), DISP_DTYPE_FLOAT32, shape);
    if (!dt || disp_safetensors_add(set, m.names[i].c_str(), dt) != DISP_OK) throw std::runtime_error(disp_last_error());
    disp_tensor_release(dt);
  }
  if (disp_safetensors_save(set, path) != DISP_OK) throw std::runtime_error(disp_last_error());
  disp_safetensors_free(set);
}

// The parameters as nanoGPT's state_dict would hold them, pickled.
void export_pt(Gpt &m, const char *path) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (size_t i = 0; i < m.params.size(); i++) dict.insert(m.names[i], m.params[i].detach().clone());
  dict.insert("lm_head.weight", m.params[0].detach().clone());
  auto mask = torch::ones({m.T, m.T}).tril().view({1, 1, m.T, m.T});  // nanoGPT's buffer: 1 where attending
  for (int64_t l = 0; l < m.L; l++) dict.insert("transformer.h." + std::to_string(l) + ".attn.bias", mask);
  std::vector<char> bytes = torch::pickle_save(dict);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out.good()) throw std::runtime_error(std::string("cannot write ") + path);
}

int parse(int argc, char **argv, Flags &f) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    const char *v = argv[i + 1];
    if (a == "--init") f.init = v;
    else if (a == "--export") f.exp = v;
    else if (a == "--export-pt") f.exp_pt = v;
    else if (a == "--data") f.data = v;
    else if (a == "--steps") f.steps = std::atol(v);
    else if (a == "--stop") f.stop = std::atol(v);
    else if (a == "--threads") f.threads = std::atol(v);
    else if (a == "--loss-every") f.loss_every = std::atol(v);
    else if (a == "--eval-every") f.eval_every = std::atol(v);
    else if (a == "--eval-iters") f.eval_iters = std::atol(v);
    else if (a == "--sample") f.sample = std::atol(v);
    else if (a == "--top-k") f.top_k = std::atol(v);
    else if (a == "--temperature") f.temperature = std::atof(v);
    else return 1;
  }
  return f.init == nullptr || argc % 2 == 0 || f.sample < 0 || !(f.temperature > 0);
}

}  // namespace

int main(int argc, char **argv) {
  Flags f;
  if (parse(argc, argv, f)) {
    std::fprintf(stderr, "usage: gpt_twin_torch --init FILE [--steps N] [--stop N] [--threads N] [--loss-every N] "
                         "[--eval-every N] [--eval-iters N] [--export FILE] [--export-pt FILE] [--data DIR] "
                         "[--sample N] [--temperature T] [--top-k K]\n");
    return 1;
  }
  try {
    if (f.threads) at::set_num_threads(int(f.threads));
    corpus c;
    if (corpus_load(f.data, &c) != DISP_OK) throw std::runtime_error(disp_last_error());
    Gpt m;
    m.V = c.vocab;
    load(m, f.init);
    std::vector<torch::Tensor> decay, rest;
    for (auto &p : m.params) (p.dim() >= 2 ? decay : rest).push_back(p);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(
                                   torch::optim::AdamWOptions(1e-3).betas({0.9, 0.99}).weight_decay(0.1)));
    groups.emplace_back(rest, std::make_unique<torch::optim::AdamWOptions>(
                                  torch::optim::AdamWOptions(1e-3).betas({0.9, 0.99}).weight_decay(0.0)));
    torch::optim::AdamW opt(groups, torch::optim::AdamWOptions(1e-3));
    long end = f.stop && f.stop < f.steps ? f.stop : f.steps;
    uint64_t batch_rng = f.seed;
    auto t0 = std::chrono::steady_clock::now();
    auto secs = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    for (long it = 0; it <= end; it++) {
      if (f.eval_every && (it % f.eval_every == 0 || it == f.steps))
        std::printf("step %ld: train loss %.4f, val loss %.4f (%.1f s)\n", it,
                    estimate(m, c, 0, f.eval_iters, f.seed + 1), estimate(m, c, 1, f.eval_iters, f.seed + 2), secs());
      if (it == end) break;
      for (auto &g : opt.param_groups())
        static_cast<torch::optim::AdamWOptions &>(g.options()).lr(lr_at(it, f.steps));
      auto loss = loss_of(m, c, 0, &batch_rng);
      opt.zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(m.params, 1.0);
      opt.step();
      if (f.loss_every && (it + 1) % f.loss_every == 0) std::printf("step %ld loss %.9g\n", it + 1, loss.item<float>());
    }
    std::printf("trained to step %ld in %.1f s\n", end, secs());
    if (end == f.steps) {
      double val = estimate(m, c, 1, f.eval_iters, f.seed + 2);
      std::printf("val loss: %.4f\n", val);
      if (f.loss_every) std::printf("val loss exact: %.9g\n", val);  // as gpt prints it, for gpt_twin.sh
    }
    if (f.exp) export_params(m, f.exp);
    if (f.exp_pt) export_pt(m, f.exp_pt);
    if (f.sample) torch::manual_seed(f.seed), sample(m, c, f);
    corpus_free(&c);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "gpt_twin_torch: %s\n", e.what());
    return 1;
  }
  return 0;
}
