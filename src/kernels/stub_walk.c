/*
 * stub_walk.c - what the stub drivers share: tensors made and converted on
 * the device through the dispatcher, and the walk that cuts an iteration
 * into the 2-D blocks a backend's loop takes (disp/stub.h).
 *
 * Nothing here reads device memory: the host computes addresses (a device
 * pointer plus byte offsets) and hands them to the loop.
 */
#include "disp/aten.h"
#include "stub_internal.h"

disp_status disp__stub_empty(const int64_t *shape, const int64_t *strides, int nd, disp_dtype dt, disp_device dev,
                             disp_tensor **out) {
  int64_t cs[DISP_TITER_MAX_DIMS];
  if (!strides) {
    disp__tensor_contiguous_strides(shape, nd, cs);
    strides = cs;
  }
  disp_opt_device od = {dev.type, dev.index, true};
  disp_opt_bool pin = {false, false};
  return disp_aten_empty_strided((disp_int_list){shape, (size_t)nd}, (disp_int_list){strides, (size_t)nd},
                                 (int32_t)dt, -1, od, pin, out);
}

disp_status disp__stub_on_device(disp_tensor *t, disp_dtype dt, disp_device dev, disp_tensor **out) {
  if (disp__t_dtype(t) == dt && disp_device_equal(disp__t_device(t), dev)) {
    *out = disp_tensor_retain(t);
    return DISP_OK;
  }
  disp_opt_device od = {dev.type, dev.index, true};
  disp_opt_bool pin = {false, false};
  return disp_aten__to_copy(t, (int32_t)dt, -1, od, pin, false, -1, out);
}

/* Sets it->size/stride[.][j] to plan dim d, or to a dim of size 1. */
static void block_dim(const disp_titer_plan *p, int d, int j, disp_stub_iter *it) {
  it->size[j] = d < 0 ? 1 : p->sh[d];
  for (int k = 0; k < p->nops; k++) it->stride[k][j] = d < 0 ? 0 : p->st[k][d];
}

disp_status disp__stub_walk(const disp_titer_plan *p, int b0, int b1, disp_stub_iter *it, disp_stub_fn fn) {
  block_dim(p, b0, 0, it);
  block_dim(p, b1, 1, it);
  int rest[DISP_TITER_MAX_DIMS], nrest = 0;
  int64_t idx[DISP_TITER_MAX_DIMS] = {0};
  for (int d = 0; d < p->m; d++)
    if (d != b0 && d != b1) rest[nrest++] = d;
  for (;;) {
    /* the block at idx: addresses, and whether an earlier block reduced into the same outputs */
    int acc = 0;
    for (int k = 0; k < p->nops; k++) {
      char *a = p->data[k];
      for (int r = 0; r < nrest; r++) a = a ? a + idx[r] * p->st[k][rest[r]] : a;
      it->data[k] = a;
    }
    for (int r = 0; r < nrest; r++) acc |= idx[r] > 0 && p->st[0][rest[r]] == 0;
    it->accumulate = acc;
    disp_status st = fn(it);
    if (st != DISP_OK) return st;
    int r = 0;
    while (r < nrest && ++idx[r] == p->sh[rest[r]]) idx[r++] = 0;
    if (r == nrest) return DISP_OK;
  }
}
