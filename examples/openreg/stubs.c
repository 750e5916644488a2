/*
 * stubs.c - seed 003's scenario two: openreg gives abs and tanh only their
 * inner loops (disp/stub.h); the library's kernels do the shapes, dtypes,
 * broadcasting and out=, and call these on 2-D blocks of device memory.
 * The emulated device computes a block with the CPU operator on views of
 * it (every dtype the CPU has), inside or_enter as its other kernels.
 */
#include "openreg.h"

#include <disp/stub.h>

/* Operand k of the block as a CPU tensor [size[1], size[0]] over device
 * memory (strides in elements; the library gives bytes). */
static disp_status block_as_cpu(const disp_stub_iter *it, int k, disp_tensor **out) {
  int64_t item = (int64_t)disp_dtype_itemsize(it->dtype), sizes[2] = {it->size[1], it->size[0]};
  int64_t strides[2] = {it->stride[k][1] / item, it->stride[k][0] / item};
  int64_t span = item;
  for (int d = 0; d < 2; d++) span += sizes[d] > 0 ? (sizes[d] - 1) * strides[d] * item : 0;
  return or_wrap_cpu(it->data[k], (size_t)span, 0, sizes, strides, 2, it->dtype, out);
}

static disp_status unary_loop(const disp_stub_iter *it) {
  if (it->size[0] == 0 || it->size[1] == 0) return DISP_OK;
  disp_tensor *out = NULL, *in = NULL, *r = NULL, *w = NULL;
  or_enter();
  disp_tls_state below = disp_tls_below_autograd_push();
  disp_status st = block_as_cpu(it, 0, &out);
  if (st == DISP_OK) st = block_as_cpu(it, 1, &in);
  if (st == DISP_OK) st = it->stub == DISP_STUB_TANH ? disp_aten_tanh(in, &r) : disp_aten_abs(in, &r);
  if (st == DISP_OK) st = disp_aten_copy_(out, r, false, &w);
  disp_tensor_release(w), disp_tensor_release(r), disp_tensor_release(in), disp_tensor_release(out);
  disp_tls_restore(below);
  or_leave();
  return st;
}

disp_status or_register_stubs(void) {
  disp_status st = disp_stub_register(DISP_STUB_TANH, DISP_BACKEND_PRIVATEUSE1, unary_loop);
  if (st == DISP_OK) st = disp_stub_register(DISP_STUB_ABS, DISP_BACKEND_PRIVATEUSE1, unary_loop);
  return st;
}
