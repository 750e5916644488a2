// train_twin_torch - the libtorch side of bench/train_twin: trains the MLP
// 784-256-128-10 (ReLU) or the CNN of examples/cnn.c from the initial
// parameters and image order bench/train_twin wrote (its write_plan
// describes the file), with at::linear/relu/conv2d/max_pool2d,
// at::cross_entropy_loss, Tensor::backward and torch::optim::Adam (lr 1e-3),
// and prints "STEP LOSS" per step and the time of its steps.
// It reads Fashion-MNIST's training images itself with zlib, normalized as
// examples/train.c does: (byte / 255 - 0.2860) * (1 / 0.3530) in float.
//
//   train_twin_torch PLAN DATADIR THREADS   (THREADS 0: libtorch's default)
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/optim/adam.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int64_t kPixels = 28 * 28;
constexpr float kMean = 0.2860f, kStd = 0.3530f;  // examples/fmnist.h's FMNIST_MEAN/FMNIST_STD

// Reads a gzipped IDX file: `header` big-endian uint32s, then the bytes.
bool read_idx(const std::string &path, int header, std::vector<uint8_t> &bytes, uint32_t *count) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return false;
  unsigned char h[16];
  bool ok = gzread(f, h, unsigned(4 * header)) == 4 * header;
  *count = ok ? uint32_t(h[4]) << 24 | uint32_t(h[5]) << 16 | uint32_t(h[6]) << 8 | h[7] : 0;
  size_t n = size_t(*count) * (header == 4 ? kPixels : 1);
  bytes.resize(n);
  ok = ok && gzread(f, bytes.data(), unsigned(n)) == int(n);
  gzclose(f);
  return ok;
}

struct Plan {
  bool cnn = false;
  int64_t steps = 0, batch = 0;
  std::vector<at::Tensor> params;
  std::vector<int64_t> indices;  // the epoch's image order
};

bool read_param(FILE *f, Plan &plan) {
  int64_t nd = 0;
  if (std::fread(&nd, sizeof nd, 1, f) != 1 || nd <= 0 || nd > 4) return false;
  std::vector<int64_t> sizes(static_cast<size_t>(nd));
  if (std::fread(sizes.data(), sizeof(int64_t), sizes.size(), f) != sizes.size()) return false;
  at::Tensor t = at::empty(sizes, at::kFloat);
  if (std::fread(t.data_ptr<float>(), sizeof(float), size_t(t.numel()), f) != size_t(t.numel())) return false;
  plan.params.push_back(t.requires_grad_());
  return true;
}

// bench/train_twin.c's write_plan describes the file.
bool read_plan(const char *path, Plan &plan) {
  FILE *f = std::fopen(path, "rb");
  char magic[8];
  int64_t head[5];
  bool ok = f && std::fread(magic, 8, 1, f) == 1 && !std::memcmp(magic, "DTWIN2\0\0", 8) &&
            std::fread(head, sizeof head, 1, f) == 1 && head[1] > 0 && head[2] > 0 && head[4] >= 0 &&
            head[1] <= (head[4] + head[2] - 1) / head[2];
  for (int64_t i = 0; ok && i < head[3]; i++) ok = read_param(f, plan);
  if (ok) {
    plan.cnn = head[0] == 1, plan.steps = head[1], plan.batch = head[2];
    plan.indices.resize(size_t(head[4]));
    ok = std::fread(plan.indices.data(), sizeof(int64_t), plan.indices.size(), f) == plan.indices.size();
  }
  if (f) std::fclose(f);
  return ok && plan.params.size() == (plan.cnn ? 8u : 6u);
}

// linear -> relu -> ... -> linear over the parameters p[first..].
at::Tensor mlp(const std::vector<at::Tensor> &p, size_t first, at::Tensor x) {
  for (size_t l = first; l + 1 < p.size(); l += 2) {
    x = at::linear(x, p[l], p[l + 1]);
    if (l + 2 < p.size()) x = at::relu(x);
  }
  return x;
}

// examples/models.c's networks: the MLP, or the CNN (two conv3x3-relu-pool2 blocks, then linear-relu-linear).
at::Tensor forward(const Plan &plan, at::Tensor x) {
  if (!plan.cnn) return mlp(plan.params, 0, x);
  const auto &p = plan.params;
  for (size_t c = 0; c < 4; c += 2)
    x = at::max_pool2d(at::relu(at::conv2d(x, p[c], p[c + 1], 1, 1)), {2, 2}, {2, 2});
  return mlp(p, 4, x.flatten(1));
}

}  // namespace

// train_twin_torch PLAN DATADIR THREADS: "STEP LOSS" per step, then "TIME SECONDS IMAGES" for the
// steps (batch assembly included, as train_twin times its own).
int main(int argc, char **argv) {
  if (argc != 4) return 2;
  Plan plan;
  std::vector<uint8_t> pixels, labels;
  uint32_t n_images = 0, n_labels = 0;
  std::string dir = argv[2];
  if (!read_plan(argv[1], plan) || !read_idx(dir + "/train-images-idx3-ubyte.gz", 4, pixels, &n_images) ||
      !read_idx(dir + "/train-labels-idx1-ubyte.gz", 2, labels, &n_labels) || n_images != n_labels ||
      plan.indices.size() != n_images) {
    std::fprintf(stderr, "train_twin_torch: cannot read the plan or the data set\n");
    return 1;
  }
  if (int n = std::atoi(argv[3])) at::set_num_threads(n);
  at::Tensor images = at::empty({int64_t(n_images), kPixels}, at::kFloat);
  float *px = images.data_ptr<float>(), inv = 1.0f / kStd;
  for (size_t i = 0; i < pixels.size(); i++) px[i] = (float(pixels[i]) / 255.0f - kMean) * inv;
  if (plan.cnn) images = images.view({int64_t(n_images), 1, 28, 28});
  at::Tensor targets = at::from_blob(labels.data(), {int64_t(n_labels)}, at::kByte).to(at::kLong);
  torch::optim::Adam opt(plan.params, torch::optim::AdamOptions(1e-3));
  int64_t seen = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < plan.steps; s++) {
    int64_t first = s * plan.batch, n = std::min(plan.batch, int64_t(plan.indices.size()) - first);
    at::Tensor idx = at::from_blob(plan.indices.data() + first, {n}, at::kLong);
    at::Tensor loss = at::cross_entropy_loss(forward(plan, images.index_select(0, idx)), targets.index_select(0, idx));
    opt.zero_grad();
    loss.backward();
    opt.step();
    seen += n;
    std::printf("%lld %.17g\n", (long long)(s + 1), loss.item<double>());
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("TIME %.6f %lld\n", secs, (long long)seen);
  return 0;
}
