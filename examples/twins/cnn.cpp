// cnn.cpp - libtorch C++ twin of examples/cnn.c: conv(3x3, padding 1) +
// ReLU + max-pool(2) twice (32, 64 channels), then 3136-128-10, on
// Fashion-MNIST, cross-entropy, Adam (lr 1e-3), batches of 64; prints the
// loss per epoch and the test accuracy.
//   twin_cnn [EPOCHS] [STEPS]   (STEPS: batches per epoch, 0 for all)
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>

#include "fmnist_torch.h"

// count:cnn_net
struct Cnn : torch::nn::Module {
  torch::nn::Conv2d c1{torch::nn::Conv2dOptions(1, 32, 3).padding(1)}, c2{torch::nn::Conv2dOptions(32, 64, 3).padding(1)};
  torch::nn::Linear fc1{3136, 128}, fc2{128, 10};
  Cnn() {
    register_module("c1", c1), register_module("c2", c2), register_module("fc1", fc1), register_module("fc2", fc2);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(c1(x)), 2);
    x = torch::max_pool2d(torch::relu(c2(x)), 2);
    return fc2(torch::relu(fc1(x.flatten(1))));
  }
};
// count:end

int main(int argc, char **argv) { return train_and_test<Cnn>(argc, argv, "cnn"); }
