// fmnist_torch.h - Fashion-MNIST for the libtorch twins, as examples/fmnist.c
// reads it for ours: gzipped IDX files, images normalized with
// (byte / 255 - 0.2860) / 0.3530. Not counted (neither is fmnist.c).
#pragma once
#include <torch/torch.h>
#include <zlib.h>

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
