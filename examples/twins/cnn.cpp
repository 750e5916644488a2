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

int main(int argc, char **argv) {
  try {
    int epochs = argc > 1 ? std::atoi(argv[1]) : 3, steps = argc > 2 ? std::atoi(argv[2]) : 0;
    torch::manual_seed(0);
    Fmnist data;
    auto net = std::make_shared<Cnn>();
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
        sum += loss.item<double>();
        // count:end
      }
      std::printf("epoch %d/%d: loss %.4f\n", e, epochs, sum / double(b));
    }
    // count:accuracy
    torch::NoGradGuard no_grad;
    auto correct = net->forward(data.test_x).argmax(1).eq(data.test_y).sum().item<double>();
    // count:end
    std::printf("test accuracy: %.4f\n", correct / double(data.test_x.size(0)));
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cnn: %s\n", e.what());
    return 1;
  }
}
