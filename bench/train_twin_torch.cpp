// train_twin_torch - the libtorch side of bench/train_twin: trains the MLP
// 784-256-128-10 (ReLU) from the initial parameters and per-step image
// indices bench/train_twin wrote (its write_plan describes the file), with
// at::linear/relu, at::cross_entropy_loss, Tensor::backward and
// torch::optim::Adam (lr 1e-3), and prints "STEP LOSS" per step.
// It reads Fashion-MNIST's training images itself with zlib, normalized as
// examples/train.c does: (byte / 255 - 0.2860) * (1 / 0.3530) in float.
//
//   train_twin_torch PLAN DATADIR
#include <ATen/ATen.h>
#include <torch/optim/adam.h>
#include <zlib.h>

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
  int64_t steps = 0, batch = 0;
  std::vector<at::Tensor> params;
  std::vector<int64_t> indices;
};

bool read_plan(const char *path, Plan &plan) {
  FILE *f = std::fopen(path, "rb");
  char magic[8];
  int64_t head[3];
  bool ok = f && std::fread(magic, 8, 1, f) == 1 && !std::memcmp(magic, "DTWIN1\0\0", 8) &&
            std::fread(head, sizeof head, 1, f) == 1;
  for (int64_t i = 0; ok && i < head[2]; i++) {
    int64_t nd = 0;
    ok = std::fread(&nd, sizeof nd, 1, f) == 1 && nd > 0 && nd <= 4;
    std::vector<int64_t> sizes(ok ? size_t(nd) : 0);
    ok = ok && std::fread(sizes.data(), sizeof(int64_t), sizes.size(), f) == sizes.size();
    if (!ok) break;
    at::Tensor t = at::empty(sizes, at::kFloat);
    ok = std::fread(t.data_ptr<float>(), sizeof(float), size_t(t.numel()), f) == size_t(t.numel());
    plan.params.push_back(t.requires_grad_());
  }
  if (ok) {
    plan.steps = head[0], plan.batch = head[1];
    plan.indices.resize(size_t(plan.steps * plan.batch));
    ok = std::fread(plan.indices.data(), sizeof(int64_t), plan.indices.size(), f) == plan.indices.size();
  }
  if (f) std::fclose(f);
  return ok;
}

// examples/mlp.c's model: linear -> relu -> linear -> relu -> linear.
at::Tensor forward(const std::vector<at::Tensor> &p, at::Tensor x) {
  for (size_t l = 0; l + 1 < p.size(); l += 2) {
    x = at::linear(x, p[l], p[l + 1]);
    if (l + 2 < p.size()) x = at::relu(x);
  }
  return x;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  Plan plan;
  std::vector<uint8_t> pixels, labels;
  uint32_t n_images = 0, n_labels = 0;
  std::string dir = argv[2];
  if (!read_plan(argv[1], plan) || !read_idx(dir + "/train-images-idx3-ubyte.gz", 4, pixels, &n_images) ||
      !read_idx(dir + "/train-labels-idx1-ubyte.gz", 2, labels, &n_labels) || n_images != n_labels) {
    std::fprintf(stderr, "train_twin_torch: cannot read the plan or the data set\n");
    return 1;
  }
  at::Tensor images = at::empty({int64_t(n_images), kPixels}, at::kFloat);
  float *px = images.data_ptr<float>(), inv = 1.0f / kStd;
  for (size_t i = 0; i < pixels.size(); i++) px[i] = (float(pixels[i]) / 255.0f - kMean) * inv;
  at::Tensor targets = at::from_blob(labels.data(), {int64_t(n_labels)}, at::kByte).to(at::kLong);
  torch::optim::Adam opt(plan.params, torch::optim::AdamOptions(1e-3));
  for (int64_t s = 0; s < plan.steps; s++) {
    at::Tensor idx = at::from_blob(plan.indices.data() + s * plan.batch, {plan.batch}, at::kLong);
    at::Tensor loss = at::cross_entropy_loss(forward(plan.params, images.index_select(0, idx)),
                                             targets.index_select(0, idx));
    opt.zero_grad();
    loss.backward();
    opt.step();
    std::printf("%lld %.17g\n", (long long)(s + 1), loss.item<double>());
  }
  return 0;
}
