// dispatch_torch - the libtorch side of bench/dispatch: the same cases
// through libtorch 1.13's dispatcher. Built only when libtorch is installed;
// nothing else in libdispatch depends on it.
//
//   dispatch_torch --threads N --time NAME:ITERS...    ns/call per case (twin.h)
//   dispatch_torch --threads N --count NAME:ITERS...   the calls in callgrind regions (twin.h)
//
// Our floor_2 and boxed_ffi have no libtorch path of their own: they are
// compared with libtorch's floor and boxed call.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstdio>
#include <cstring>

#include "twin.h"

namespace {

__attribute__((noinline)) at::Tensor noop1(const at::Tensor &self) { return self; }
__attribute__((noinline)) at::Tensor noop2(const at::Tensor &self, const at::Tensor &) { return self; }

TORCH_LIBRARY(bench, m) {
  m.def("noop1(Tensor self) -> Tensor");
  m.def("noop2(Tensor self, Tensor other) -> Tensor");
}
TORCH_LIBRARY_IMPL(bench, CPU, m) {
  m.impl("noop1", noop1);
  m.impl("noop2", noop2);
}
// libtorch 1.13 puts a fallthrough on AutogradCPU already; say it anyway.
TORCH_LIBRARY_IMPL(bench, Autograd, m) {
  m.impl("noop1", torch::CppFunction::makeFallthrough());
  m.impl("noop2", torch::CppFunction::makeFallthrough());
}

using Fn1 = at::Tensor (*)(const at::Tensor &);
Fn1 volatile g_floor = noop1;
volatile long g_sink;

// Runs case `name` `iters` times; false for an unknown case.
bool run(const char *name, long iters) {
  // Made once, so a counted run holds only the calls.
  static at::Tensor a = at::ones({1}), b = at::ones({1});
  static auto op1 = c10::Dispatcher::singleton().findSchemaOrThrow("bench::noop1", "").typed<at::Tensor(const at::Tensor &)>();
  static auto op2 = c10::Dispatcher::singleton()
                        .findSchemaOrThrow("bench::noop2", "")
                        .typed<at::Tensor(const at::Tensor &, const at::Tensor &)>();
  static auto boxed = c10::Dispatcher::singleton().findSchemaOrThrow("bench::noop1", "");
  if (!strcmp(name, "floor") || !strcmp(name, "floor_2")) {
    Fn1 f = g_floor;
    for (long i = 0; i < iters; i++) g_sink += f(a).dim();
  } else if (!strcmp(name, "unboxed_1")) {
    for (long i = 0; i < iters; i++) g_sink += op1.call(a).dim();
  } else if (!strcmp(name, "unboxed_2")) {
    for (long i = 0; i < iters; i++) g_sink += op2.call(a, b).dim();
  } else if (!strcmp(name, "boxed_builtin") || !strcmp(name, "boxed_ffi")) {
    torch::jit::Stack stack;
    for (long i = 0; i < iters; i++) {
      stack.emplace_back(a);
      boxed.callBoxed(&stack);
      stack.clear();
    }
  } else {
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char **argv) { return twin_main(argc, argv, run); }
