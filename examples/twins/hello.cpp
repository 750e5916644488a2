// hello.cpp - libtorch C++ twin of examples/hello.c: two 2x3 tensors from
// data, add, relu, print, with the error check (scripts/count_lines.sh).
#include <torch/torch.h>
#include <iostream>
int main() {
  try {
    float x[] = {1, -2, 3, -4, 5, -6}, y[] = {6, 5, 4, 3, 2, 1};
    std::cout << torch::relu(torch::from_blob(x, {2, 3}) + torch::from_blob(y, {2, 3})) << "\n";
  } catch (const std::exception &e) {
    std::cerr << "hello: " << e.what() << "\n";
    return 1;
  }
}
