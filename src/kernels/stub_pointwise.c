/*
 * stub_pointwise.c - the elementwise stub driver and the unary stub kernels
 * (disp/stub.h).
 *
 * The driver is disp__pointwise (tensor_iter.c) for a device: the same
 * broadcast, output layout and in-place/out= checks and resizing, with three
 * differences a device needs. Fresh outputs and temporaries come from the
 * dispatcher's empty_strided on the device (the backend's own allocation);
 * inputs of another dtype, and 0-dim CPU scalars, are converted onto the
 * device by the dispatcher's _to_copy rather than on the host; and the loop
 * is the backend's, called on 2-D blocks of device addresses.
 */
#include "device_check.h"
#include "disp/aten.h"
#include "op_rules.h"
#include "stub_internal.h"

/* Runs fn over out (which has the broadcast shape of ins) in dtype dt:
 * converts inputs onto out's device first, and writes through a temporary
 * when out has another dtype. */
static disp_status run_blocks(disp_stub id, disp_stub_fn fn, disp_tensor *out, disp_tensor *const *ins, int nin,
                              disp_dtype dt, disp_scalar alpha) {
  if (disp__t_numel(out) == 0) return DISP_OK;
  disp_device dev = disp__t_device(out);
  disp_tensor *ops[DISP_STUB_MAX_OPERANDS] = {NULL}, *tmp = NULL;
  disp_status st = DISP_OK;
  for (int k = 0; k < nin && st == DISP_OK; k++) st = disp__stub_on_device(ins[k], dt, dev, &ops[k + 1]);
  if (st == DISP_OK && disp__t_dtype(out) != dt)
    st = disp__stub_empty(disp__t_sizes(out), NULL, disp__t_ndim(out), dt, dev, &tmp);
  if (st == DISP_OK) {
    ops[0] = tmp ? tmp : out;
    int nd = disp__t_ndim(out);
    char *data[DISP_STUB_MAX_OPERANDS];
    int64_t strides[DISP_STUB_MAX_OPERANDS * DISP_TITER_MAX_DIMS];
    for (int k = 0; k <= nin; k++) {
      data[k] = disp_tensor_data_ptr(ops[k]);
      disp__titer_bcast_strides(ops[k], disp__t_sizes(out), nd, strides + k * nd);
    }
    disp_titer_plan p;
    disp_stub_iter it = {.stub = id, .device = dev, .dtype = dt, .noperands = nin + 1, .alpha = alpha};
    if (disp__titer_plan(&p, nin + 1, data, strides, disp__t_sizes(out), nd))
      st = disp__stub_walk(&p, 0, p.m > 1 ? 1 : -1, &it, fn);
  }
  if (st == DISP_OK && tmp) {
    disp_tensor *r = NULL;
    st = disp_aten_copy_(out, tmp, false, &r);
    disp_tensor_release(r);
  }
  disp_tensor_release(tmp);
  for (int k = 1; k <= nin; k++) disp_tensor_release(ops[k]);
  return st;
}

/* A fresh output of the broadcast shape of ins, laid out as the CPU lays it out. */
static disp_status fresh_output(const char *op, disp_tensor *const *ins, int nin, disp_dtype dt, disp_device dev,
                                disp_tensor **out) {
  int64_t shape[DISP_TITER_MAX_DIMS], strides[DISP_TITER_MAX_DIMS];
  int nd;
  disp_status st = disp__titer_out_geometry(op, ins, nin, shape, strides, &nd);
  return st != DISP_OK ? st : disp__stub_empty(shape, strides, nd, dt, dev, out);
}

disp_status disp__stub_pointwise(const char *op, disp_stub id, int mode, disp_tensor *dest, disp_tensor *const *ins,
                                 int nin, disp_dtype dt, disp_scalar alpha, disp_tensor **ret) {
  /* the device rule of the CPU kernels' generated wrappers: the written
   * tensor first, one 0-dim CPU scalar allowed among a binary op's inputs */
  disp_tensor *all[DISP_STUB_MAX_OPERANDS];
  int n = 0;
  if (mode == DISP_PW_OUT) all[n++] = dest;
  for (int k = 0; k < nin; k++) all[n++] = ins[k];
  disp_status st = disp__devices_check((const disp_tensor *const *)all, n, mode != DISP_PW_FRESH,
                                       NULL, 0, nin > 1 ? DISP__DEV_CPU_SCALAR : 0);
  if (st != DISP_OK) return st;
  disp_device dev = disp__titer_device(all, n);
  disp_stub_fn fn = disp__stub_lookup(id, dev.type);
  if (!fn) return disp__stub_missing(id, dev);
  disp_tensor *out = NULL;
  if (mode == DISP_PW_FRESH) {
    st = fresh_output(op, ins, nin, dt, dev, &out);
  } else {
    st = disp__titer_prepare_dest(op, mode, dest, ins, nin, dt);
    out = st == DISP_OK ? disp_tensor_retain(dest) : NULL;
  }
  if (st == DISP_OK) st = run_blocks(id, fn, out, ins, nin, dt, alpha);
  if (st != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  *ret = out;
  return DISP_OK;
}

/* ---- the unary kernels ---------------------------------------------------- */

static disp_status unary(const char *op, disp_stub id, int mode, disp_tensor *self, disp_dtype dt,
                         disp_tensor **out0) {
  disp_tensor *ins[1] = {self};
  return disp__stub_pointwise(op, id, mode, mode == DISP_PW_INPLACE ? self : NULL, ins, 1, dt, disp_scalar_int(1),
                              out0);
}

#define FLOAT_UNARY(name, ID)                                                                     \
  disp_status disp__stub_##name(disp_tensor *self, disp_tensor **out0) {                          \
    return unary(#name, DISP_STUB_##ID, DISP_PW_FRESH, self, disp__float_unary_dtype(self), out0); \
  }
FLOAT_UNARY(exp, EXP)
FLOAT_UNARY(log, LOG)
FLOAT_UNARY(tanh, TANH)
FLOAT_UNARY(sigmoid, SIGMOID)
FLOAT_UNARY(sqrt, SQRT)

/* abs keeps the dtype; which dtypes it supports is the loop's business
 * (the CPU's refuses bool, "\"abs_cpu\" not implemented for 'Bool'"). */
disp_status disp__stub_abs(disp_tensor *self, disp_tensor **out0) {
  return unary("abs", DISP_STUB_ABS, DISP_PW_FRESH, self, disp__t_dtype(self), out0);
}

disp_status disp__stub_neg(disp_tensor *self, disp_tensor **out0) {
  disp_status st = disp__neg_rules(self);
  return st != DISP_OK ? st : unary("neg", DISP_STUB_NEG, DISP_PW_FRESH, self, disp__t_dtype(self), out0);
}

disp_status disp__stub_relu(disp_tensor *self, disp_tensor **out0) {
  disp_status st = disp__relu_rules(self);
  return st != DISP_OK ? st : unary("relu", DISP_STUB_RELU, DISP_PW_FRESH, self, disp__t_dtype(self), out0);
}

disp_status disp__stub_relu_(disp_tensor *self, disp_tensor **out0) {
  disp_status st = disp__relu_rules(self);
  return st != DISP_OK ? st : unary("relu_", DISP_STUB_RELU, DISP_PW_INPLACE, self, disp__t_dtype(self), out0);
}
