// contention_torch - the libtorch side of bench/contention: the same cases
// and method (contention.h), quiet and beside its own busy child, at 1
// thread and at N threads (`contention_torch N`: our default, so both
// sides split alike; libtorch's own default is 1 on this machine). Prints
// "default_threads D" (libtorch's own), then "row CASE q1 qd b1 bd" (ms)
// per case. Built only when libtorch is installed; bench/contention runs it.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include "contention.h"

namespace {

std::vector<at::Tensor> t;

at::Tensor filled(int64_t r, int64_t c) {
  at::Tensor x = at::empty({r, c}, at::kFloat);
  float *p = x.data_ptr<float>();
  for (int64_t i = 0; i < r * c; i++) p[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
  return x;
}

int run(int c) {
  c10::InferenceMode guard;
  switch (c) {
  case CT_ADD64K: at::add(t[0], t[1]); break;
  case CT_ADD1M: at::add(t[2], t[3]); break;
  case CT_SUM1M: at::sum(t[2]); break;
  case CT_MM: at::mm(t[4], t[5]); break;
  default: at::linear(at::relu(at::linear(t[6], t[7], t[8])), t[9], t[10]);
  }
  return 0;
}

void set_threads(int n) { at::set_num_threads(n); }

}  // namespace

int main(int argc, char **argv) {
  t = {filled(256, 256), filled(256, 256), filled(1000, 1000), filled(1000, 1000), filled(256, 256),
       filled(256, 256), filled(64, 784), filled(256, 784), filled(1, 256).view({256}), filled(10, 256),
       filled(1, 10).view({10})};
  int own = at::get_num_threads(), def = argc > 1 ? std::atoi(argv[1]) : own;
  if (def < 1) return 2;
  double r[CT_NCASES][CT_NCOLS];
  if (ct_measure(run, set_threads, def, r)) return 1;
  std::printf("default_threads %d\n", own);
  for (int c = 0; c < CT_NCASES; c++) std::printf("row %d %.4f %.4f %.4f %.4f\n", c, r[c][0], r[c][1], r[c][2], r[c][3]);
  return 0;
}
