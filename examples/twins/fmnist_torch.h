// fmnist_torch.h - Fashion-MNIST for the libtorch twins, as examples/fmnist.c
// reads it for ours: gzipped IDX files, images normalized with
// (byte / 255 - 0.2860) / 0.3530, and the training loop both twins share.
// Only the count: regions are counted (as train.c's in ours).
#pragma once
#include <torch/torch.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

inline torch::Tensor fmnist_read(const std::string &dir, const std::string &name, bool images) {
  gzFile f = gzopen((dir + "/" + name).c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + dir + "/" + name);
  unsigned char h[16];
  int header = images ? 16 : 8;
  if (gzread(f, h, unsigned(header)) != header) throw std::runtime_error("short " + name);
  int64_t n = int64_t(h[4]) << 24 | int64_t(h[5]) << 16 | int64_t(h[6]) << 8 | h[7];
  auto bytes = torch::empty({images ? n * 784 : n}, torch::kUInt8);
  if (gzread(f, bytes.data_ptr(), unsigned(bytes.numel())) != int(bytes.numel())) throw std::runtime_error("short " + name);
  gzclose(f);
  if (!images) return bytes.to(torch::kLong);
  return (bytes.to(torch::kFloat).div(255.0f).sub(0.2860f)).div(0.3530f).view({n, 1, 28, 28});
}

struct Fmnist {
  torch::Tensor train_x, train_y, test_x, test_y;
  explicit Fmnist(const std::string &dir = "/usr/share/datasets/fashion-mnist")
      : train_x(fmnist_read(dir, "train-images-idx3-ubyte.gz", true)),
        train_y(fmnist_read(dir, "train-labels-idx1-ubyte.gz", false)),
        test_x(fmnist_read(dir, "t10k-images-idx3-ubyte.gz", true)),
        test_y(fmnist_read(dir, "t10k-labels-idx1-ubyte.gz", false)) {}
};

// Trains net on Fashion-MNIST as examples/train.c does (Adam, lr 1e-3,
// batches of 64, shuffled each epoch), printing the loss per epoch and the
// test accuracy: the training step and the accuracy are the regions
// scripts/count_lines.sh counts.  name: for messages.
template <class Net>
int train_and_test(int argc, char **argv, const char *name) {
  try {
    int epochs = argc > 1 ? std::atoi(argv[1]) : 12, steps = argc > 2 ? std::atoi(argv[2]) : 0;
    torch::manual_seed(0);
    Fmnist data;
    auto net = std::make_shared<Net>();
    torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-3));
    for (int e = 1; e <= epochs; e++) {
      auto perm = torch::randperm(data.train_x.size(0));
      double sum = 0;
      int64_t nb = (data.train_x.size(0) + 63) / 64, b = 0;
      for (; b < nb && (!steps || b < steps); b++) {
        // count:step
        auto idx = perm.slice(0, b * 64, (b + 1) * 64);
        auto loss = torch::cross_entropy_loss(net->forward(data.train_x.index_select(0, idx)),
                                              data.train_y.index_select(0, idx));
        opt.zero_grad();
        loss.backward();
        opt.step();
        sum += loss.item().toDouble();
        // count:end
      }
      std::printf("epoch %d/%d: loss %.4f\n", e, epochs, sum / double(b));
    }
    // count:accuracy
    torch::NoGradGuard no_grad;
    auto correct = net->forward(data.test_x).argmax(1).eq(data.test_y).sum().item().toDouble();
    // count:end
    std::printf("test accuracy: %.4f\n", correct / double(data.test_x.size(0)));
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}
