// mlp.cpp - libtorch C++ twin of examples/mlp.c: the MLP 784-256-128-10
// (ReLU) on Fashion-MNIST, cross-entropy, Adam (lr 1e-3), batches of 64,
// shuffled each epoch; prints the loss per epoch and the test accuracy.
//   twin_mlp [EPOCHS] [STEPS]   (STEPS: batches per epoch, 0 for all)
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>

#include "fmnist_torch.h"

// count:mlp_net
struct Mlp : torch::nn::Module {
  torch::nn::Linear fc1{784, 256}, fc2{256, 128}, fc3{128, 10};
  Mlp() { register_module("fc1", fc1), register_module("fc2", fc2), register_module("fc3", fc3); }
  torch::Tensor forward(torch::Tensor x) {
    return fc3(torch::relu(fc2(torch::relu(fc1(x.flatten(1))))));
  }
};
// count:end

int main(int argc, char **argv) { return train_and_test<Mlp>(argc, argv, "mlp"); }
