/*
 * stub_reduce.c - sum.dim_IntList through a backend's sum stub (disp/stub.h).
 *
 * The CPU kernel's rules (result dtype, dims, keepdim) and geometry: the
 * output, fresh and contiguous on the device, is viewed over the input's
 * shape with stride 0 along the reduced dims; the planner puts those dims
 * first and merges what it can. A block then reduces along its rows (the
 * first reduced dim) into one output per row (the first kept dim); further
 * reduced dims are more blocks that accumulate, further kept dims more
 * blocks beside.
 */
#include "device_check.h"
#include "op_rules.h"
#include "stub_internal.h"

/* The first plan dim whose output stride is (reduced != 0) or is not 0, or -1. */
static int first_dim(const disp_titer_plan *p, int reduced) {
  for (int d = 0; d < p->m; d++)
    if ((p->st[0][d] == 0) == (reduced != 0)) return d;
  return -1;
}

static disp_status run_sum(disp_stub_fn fn, disp_tensor *out, disp_tensor *in, uint64_t mask) {
  disp_stub_iter it = {.stub = DISP_STUB_SUM,
                       .device = disp__t_device(out),
                       .dtype = disp__t_dtype(out),
                       .noperands = 2,
                       .alpha = disp_scalar_int(1)};
  int64_t isz = (int64_t)disp_dtype_itemsize(disp__t_dtype(out));
  if (disp__t_numel(in) == 0) { /* nothing to add: one block of empty rows sets every output to 0 */
    it.size[0] = 0;
    it.size[1] = disp__t_numel(out);
    it.data[0] = disp_tensor_data_ptr(out);
    it.data[1] = disp_tensor_data_ptr(in);
    it.stride[0][1] = isz;
    return fn(&it);
  }
  int n = disp__t_ndim(in);
  int64_t strides[2 * DISP_TITER_MAX_DIMS];
  disp__reduce_acc_strides(in, mask, (size_t)isz, strides);
  for (int i = 0; i < n; i++) strides[n + i] = disp__t_stride(in, i) * isz;
  char *data[2] = {disp_tensor_data_ptr(out), disp_tensor_data_ptr(in)};
  disp_titer_plan p;
  if (!disp__titer_plan(&p, 2, data, strides, disp__t_sizes(in), n)) return DISP_OK;
  return disp__stub_walk(&p, first_dim(&p, 1), first_dim(&p, 0), &it, fn);
}

disp_status disp__stub_sum_dim_IntList(disp_tensor *self, disp_opt_int_list dim, bool keepdim, int32_t dtype,
                                       disp_tensor **out0) {
  if (disp__enum_arg_check(DISP_TYPE_SCALAR_TYPE, dtype, 1, "dtype") != DISP_OK) return DISP_ERR_INVALID_ARG;
  disp_device dev = disp__t_device(self);
  disp_stub_fn fn = disp__stub_lookup(DISP_STUB_SUM, dev.type);
  if (!fn) return disp__stub_missing(DISP_STUB_SUM, dev);
  disp_dtype out_dt = disp__sum_dtype(self, dtype, 0);
  uint64_t mask;
  int64_t shape[DISP_TITER_MAX_DIMS];
  int nd;
  const int64_t *dims = dim.has_value ? dim.value.data : NULL;
  size_t ndims = dim.has_value ? dim.value.len : 0;
  disp_status st = disp__reduce_shape("sum", self, dims, ndims, keepdim, &mask, shape, &nd);
  disp_tensor *out = NULL, *in = NULL;
  if (st == DISP_OK) st = disp__stub_empty(shape, NULL, nd, out_dt, dev, &out);
  /* every element in the result dtype first, as the CPU's sum(x, dtype=...) */
  if (st == DISP_OK && disp__t_numel(out) > 0) st = disp__stub_on_device(self, out_dt, dev, &in);
  if (st == DISP_OK && in) st = run_sum(fn, out, in, mask);
  disp_tensor_release(in);
  if (st != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  *out0 = out;
  return DISP_OK;
}
