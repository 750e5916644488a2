/*
 * util.c - moving between the openreg device's memory and CPU tensors,
 * for kernels that run inside or_enter (Note [Emulated device memory]).
 */
#include "openreg.h"

disp_status or_wrap_cpu(void *data, size_t nbytes, int64_t offset, const int64_t *sizes, const int64_t *strides,
                        int ndim, disp_dtype dt, disp_tensor **out) {
  disp_storage *st = NULL;
  /* the CPU storage borrows the device block: released with nothing to free */
  disp_status s = disp_storage_new_with_data(data, nbytes, disp_device_make(DISP_BACKEND_CPU, -1), NULL, NULL, &st);
  if (s == DISP_OK) s = disp_tensor_new_with_storage(st, offset, sizes, strides, ndim, dt, disp_keyset_empty(), out);
  disp_storage_release(st);
  return s;
}

disp_status or_view_as_cpu(disp_tensor *t, disp_tensor **out) {
  if (disp_tensor_device(t).type != DISP_BACKEND_PRIVATEUSE1) {
    *out = disp_tensor_retain(t);
    return DISP_OK;
  }
  disp_storage *dev = disp_tensor_storage(t);
  return or_wrap_cpu(disp_storage_data(dev), disp_storage_nbytes(dev), disp_tensor_storage_offset(t),
                     disp_tensor_sizes(t), disp_tensor_strides(t), disp_tensor_ndim(t), disp_tensor_dtype(t), out);
}

/* Whether c's elements tile its extent exactly (no gaps, no overlap): then
 * the device copy keeps c's strides, as PyTorch's kernels give results the
 * layout of their inputs. */
static int dense(disp_tensor *c) {
  int64_t expect = 1;
  int nd = disp_tensor_ndim(c), used[DISP_TENSOR_MAX_DIMS] = {0};
  for (int k = 0; k < nd; k++) {
    int best = -1;
    for (int d = 0; d < nd; d++)
      if (!used[d] && disp_tensor_sizes(c)[d] != 1 && (best < 0 || disp_tensor_strides(c)[d] < disp_tensor_strides(c)[best]))
        best = d;
    if (best < 0) break;
    if (disp_tensor_strides(c)[best] != expect) return 0;
    used[best] = 1, expect *= disp_tensor_sizes(c)[best];
  }
  return 1;
}

disp_status or_to_device(disp_tensor *c, disp_device dev, disp_tensor **out) {
  disp_tensor *t = NULL, *view = NULL, *r = NULL;
  disp_status s = dense(c) ? disp_tensor_empty_strided(disp_tensor_sizes(c), disp_tensor_strides(c), disp_tensor_ndim(c),
                                                       disp_tensor_dtype(c), dev, &t)
                           : disp_tensor_empty(disp_tensor_sizes(c), disp_tensor_ndim(c), disp_tensor_dtype(c), dev, &t);
  if (s == DISP_OK) s = or_view_as_cpu(t, &view);
  if (s == DISP_OK) s = disp_aten_copy_(view, c, false, &r);
  disp_tensor_release(r), disp_tensor_release(view);
  if (s != DISP_OK) {
    disp_tensor_release(t);
    return s;
  }
  *out = t;
  return DISP_OK;
}

disp_device or_device_of(disp_tensor *const *ts, int n) {
  for (int i = 0; i < n; i++)
    if (ts[i] && disp_tensor_device(ts[i]).type == DISP_BACKEND_PRIVATEUSE1) return disp_tensor_device(ts[i]);
  return disp_device_make(DISP_BACKEND_PRIVATEUSE1, 0);
}

disp_status or_begin(or_call *c, disp_tensor *const *inputs, int n) {
  *c = (or_call){.n = n, .device = or_device_of(inputs, n)};
  or_enter();
  c->saved = disp_tls_below_autograd_push();
  for (int i = 0; i < n && c->st == DISP_OK; i++)
    if (inputs[i]) c->st = or_view_as_cpu(inputs[i], &c->in[i]);
  return c->st;
}

static void finish(or_call *c) {
  for (int i = 0; i < c->n; i++) disp_tensor_release(c->in[i]);
  disp_tensor_release(c->result);
  disp_tls_restore(c->saved);
  or_leave();
}

disp_status or_end(or_call *c, disp_tensor **out) {
  if (c->st == DISP_OK) c->st = or_to_device(c->result, c->device, out);
  disp_status st = c->st;
  finish(c);
  return st;
}

disp_status or_end_none(or_call *c) {
  disp_status st = c->st;
  finish(c);
  return st;
}

disp_status or_end_inplace(or_call *c, disp_tensor *self, disp_tensor **out) {
  disp_status st = c->st;
  if (st == DISP_OK) *out = disp_tensor_retain(self);
  finish(c);
  return st;
}
