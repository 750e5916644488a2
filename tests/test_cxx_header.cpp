// test_cxx_header - a C++ program includes <disp.h> whole and calls the
// library: the public headers stay valid C++ (C11's _Thread_local, inline
// functions, enums and the generated aten.h) and link with C linkage.
// Built only where CMake finds a C++ compiler. Exit status 0 on success.
#include <disp.h>

#include <cstdio>

static int check(bool ok, const char *what) {
  if (!ok) std::fprintf(stderr, "test_cxx_header: %s: %s\n", what, disp_last_error());
  return ok ? 0 : 1;
}

int main() {
  const float a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
  disp_dims shape{1, {3}};
  disp_tensor *x = disp_from_data(a, DISP_DTYPE_FLOAT32, shape), *y = disp_from_data(b, DISP_DTYPE_FLOAT32, shape);
  disp_tensor *sum = nullptr;
  int fails = check(x && y, "disp_from_data");
  if (!fails) fails += check(disp_aten_add_Tensor(x, y, disp_scalar_double(2.0), &sum) == DISP_OK, "add");
  if (!fails) {
    const float *s = static_cast<const float *>(disp_tensor_data_ptr(sum));
    fails += check(s[0] == 21 && s[1] == 42 && s[2] == 63, "x + 2 y");
  }
  // a refused call reports through the same thread-local error as from C
  disp_tensor *bad = nullptr;
  fails += check(disp_aten_add_Tensor(x, nullptr, disp_scalar_double(1.0), &bad) != DISP_OK && !bad,
                 "add with a NULL tensor is refused");
  disp_tensor_release(sum), disp_tensor_release(x), disp_tensor_release(y);
  disp_shutdown();
  return fails;
}
