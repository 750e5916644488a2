/*
 * stubs.c - seed 003's scenario two: openreg gives abs and tanh only their
 * inner loops (disp/stub.h); the library's kernels do the shapes, dtypes,
 * broadcasting and out=, and call these on 2-D blocks of device memory.
 */
#include "openreg.h"

#include <math.h>

#include <disp/stub.h>

/* Element (i, j) of operand k (disp_stub_iter's layout). */
#define AT(it, k, i, j) ((char *)(it)->data[k] + (i) * (it)->stride[k][0] + (j) * (it)->stride[k][1])

static disp_status unary_f(const disp_stub_iter *it, const char *name) {
  if (it->dtype != DISP_DTYPE_FLOAT32 && it->dtype != DISP_DTYPE_FLOAT64)
    return disp_set_error(DISP_ERR_INVALID_ARG, "\"%s_openreg\" not implemented for '%s'", name,
                          disp_dtype_torch_name(it->dtype));
  or_enter();
  for (int64_t j = 0; j < it->size[1]; j++)
    for (int64_t i = 0; i < it->size[0]; i++) {
      double x = it->dtype == DISP_DTYPE_FLOAT32 ? *(float *)AT(it, 1, i, j) : *(double *)AT(it, 1, i, j);
      double y = it->stub == DISP_STUB_TANH ? tanh(x) : fabs(x);
      if (it->dtype == DISP_DTYPE_FLOAT32) *(float *)AT(it, 0, i, j) = (float)y;
      else *(double *)AT(it, 0, i, j) = y;
    }
  or_leave();
  return DISP_OK;
}

static disp_status or_tanh_loop(const disp_stub_iter *it) { return unary_f(it, "tanh"); }
static disp_status or_abs_loop(const disp_stub_iter *it) { return unary_f(it, "abs"); }

disp_status or_register_stubs(void) {
  disp_status st = disp_stub_register(DISP_STUB_TANH, DISP_BACKEND_PRIVATEUSE1, or_tanh_loop);
  if (st == DISP_OK) st = disp_stub_register(DISP_STUB_ABS, DISP_BACKEND_PRIVATEUSE1, or_abs_loop);
  return st;
}
