/*
 * backend_select.c - the BackendSelect kernels of the factory operators.
 *
 * A factory has no tensor argument to dispatch on, so its call reaches
 * BackendSelect (in the thread-local included set); the kernel here turns
 * the `device` argument (None means CPU), the layout and the dtype into a
 * backend key and redispatches below BackendSelect with it, as PyTorch's
 * generated RegisterBackendSelect.cpp does with computeDispatchKey.
 */
#include <stdatomic.h>

#include "aten_internal.h"
#include "aten_kernels.h"

enum {
  OP_EMPTY, OP_EMPTY_STRIDED, OP_ZEROS, OP_ONES, OP_FULL, OP_ARANGE, OP_ARANGE_START, OP_ARANGE_START_STEP,
  OP_RAND, OP_RANDN, OP_SCALAR_TENSOR, OP_TO_COPY, OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
    "aten::empty.memory_format", "aten::empty_strided", "aten::zeros", "aten::ones", "aten::full",
    "aten::arange", "aten::arange.start", "aten::arange.start_step", "aten::rand", "aten::randn",
    "aten::scalar_tensor", "aten::_to_copy"};

static _Atomic(const disp_op *) handles[OP_COUNT];
static atomic_int forget_registered;

static void forget_handles(void) {
  for (int i = 0; i < OP_COUNT; i++) atomic_store(&handles[i], NULL);
  atomic_store(&forget_registered, 0);
}

static const disp_op *op_handle(int id) {
  const disp_op *op = atomic_load_explicit(&handles[id], memory_order_acquire);
  if (op) return op;
  if (disp_op_find(op_names[id], &op) != DISP_OK) return NULL;
  if (!atomic_exchange(&forget_registered, 1)) disp__at_shutdown(forget_handles);
  atomic_store_explicit(&handles[id], op, memory_order_release);
  return op;
}

/* The key set to redispatch with: the backend key the arguments select,
 * joined with what the call had below BackendSelect (tensor arguments). */
static disp_keyset select_keys(disp_keyset ks, disp_opt_device device, int32_t layout, int32_t dtype) {
  disp_backend b = device.has_value ? (disp_backend)device.type : DISP_BACKEND_CPU;
  disp_key f = DISP_KEY_DENSE;
  if (layout == DISP_LAYOUT_SPARSE_COO) f = DISP_KEY_SPARSE;
  else if (dtype == DISP_DTYPE_QUINT8) f = DISP_KEY_QUANTIZED;
  disp_keyset below = disp_keyset_below(ks);
  return disp_keyset_or(below, disp_keyset_of(disp_key_for_backend(f, b)));
}

static disp_status no_op(int id) {
  return disp_set_error(DISP_ERR_OP_NOT_FOUND, "BackendSelect: operator %s is not registered", op_names[id]);
}

#define REDISPATCH(ID, DEVICE, LAYOUT, DTYPE, PARAMS, ...)                   \
  do {                                                                       \
    const disp_op *op_ = op_handle(ID);                                      \
    if (!op_) return no_op(ID);                                              \
    disp_keyset k_ = select_keys(ks, DEVICE, LAYOUT, DTYPE);                 \
    disp_status st_;                                                         \
    DISP_REDISPATCH(st_, op_, k_, PARAMS, __VA_ARGS__);                      \
    return st_;                                                              \
  } while (0)

#define FACTORY_PARAMS int32_t, int32_t, disp_opt_device, disp_opt_bool

disp_status disp__bsel_empty_memory_format(disp_keyset ks, disp_int_list size, int32_t dtype, int32_t layout,
                                           disp_opt_device device, disp_opt_bool pin_memory, int32_t memory_format,
                                           disp_tensor **out0) {
  REDISPATCH(OP_EMPTY, device, layout, dtype, (disp_int_list, FACTORY_PARAMS, int32_t, disp_tensor **), size, dtype,
             layout, device, pin_memory, memory_format, out0);
}

disp_status disp__bsel_empty_strided(disp_keyset ks, disp_int_list size, disp_int_list stride, int32_t dtype,
                                     int32_t layout, disp_opt_device device, disp_opt_bool pin_memory,
                                     disp_tensor **out0) {
  REDISPATCH(OP_EMPTY_STRIDED, device, layout, dtype, (disp_int_list, disp_int_list, FACTORY_PARAMS, disp_tensor **),
             size, stride, dtype, layout, device, pin_memory, out0);
}

disp_status disp__bsel_zeros(disp_keyset ks, disp_int_list size, int32_t dtype, int32_t layout, disp_opt_device device,
                             disp_opt_bool pin_memory, disp_tensor **out0) {
  REDISPATCH(OP_ZEROS, device, layout, dtype, (disp_int_list, FACTORY_PARAMS, disp_tensor **), size, dtype, layout,
             device, pin_memory, out0);
}

disp_status disp__bsel_ones(disp_keyset ks, disp_int_list size, int32_t dtype, int32_t layout, disp_opt_device device,
                            disp_opt_bool pin_memory, disp_tensor **out0) {
  REDISPATCH(OP_ONES, device, layout, dtype, (disp_int_list, FACTORY_PARAMS, disp_tensor **), size, dtype, layout,
             device, pin_memory, out0);
}

disp_status disp__bsel_full(disp_keyset ks, disp_int_list size, disp_scalar fill_value, int32_t dtype, int32_t layout,
                            disp_opt_device device, disp_opt_bool pin_memory, disp_tensor **out0) {
  REDISPATCH(OP_FULL, device, layout, dtype, (disp_int_list, disp_scalar, FACTORY_PARAMS, disp_tensor **), size,
             fill_value, dtype, layout, device, pin_memory, out0);
}

disp_status disp__bsel_arange(disp_keyset ks, disp_scalar end, int32_t dtype, int32_t layout, disp_opt_device device,
                              disp_opt_bool pin_memory, disp_tensor **out0) {
  REDISPATCH(OP_ARANGE, device, layout, dtype, (disp_scalar, FACTORY_PARAMS, disp_tensor **), end, dtype, layout,
             device, pin_memory, out0);
}

disp_status disp__bsel_arange_start(disp_keyset ks, disp_scalar start, disp_scalar end, int32_t dtype, int32_t layout,
                                    disp_opt_device device, disp_opt_bool pin_memory, disp_tensor **out0) {
  REDISPATCH(OP_ARANGE_START, device, layout, dtype, (disp_scalar, disp_scalar, FACTORY_PARAMS, disp_tensor **),
             start, end, dtype, layout, device, pin_memory, out0);
}

disp_status disp__bsel_arange_start_step(disp_keyset ks, disp_scalar start, disp_scalar end, disp_scalar step,
                                         int32_t dtype, int32_t layout, disp_opt_device device,
                                         disp_opt_bool pin_memory, disp_tensor **out0) {
  REDISPATCH(OP_ARANGE_START_STEP, device, layout, dtype,
             (disp_scalar, disp_scalar, disp_scalar, FACTORY_PARAMS, disp_tensor **), start, end, step, dtype, layout,
             device, pin_memory, out0);
}

disp_status disp__bsel_rand(disp_keyset ks, disp_int_list size, int32_t dtype, int32_t layout, disp_opt_device device,
                            disp_opt_bool pin_memory, disp_tensor **out0) {
  REDISPATCH(OP_RAND, device, layout, dtype, (disp_int_list, FACTORY_PARAMS, disp_tensor **), size, dtype, layout,
             device, pin_memory, out0);
}

disp_status disp__bsel_randn(disp_keyset ks, disp_int_list size, int32_t dtype, int32_t layout, disp_opt_device device,
                             disp_opt_bool pin_memory, disp_tensor **out0) {
  REDISPATCH(OP_RANDN, device, layout, dtype, (disp_int_list, FACTORY_PARAMS, disp_tensor **), size, dtype, layout,
             device, pin_memory, out0);
}

disp_status disp__bsel_scalar_tensor(disp_keyset ks, disp_scalar s, int32_t dtype, int32_t layout,
                                     disp_opt_device device, disp_opt_bool pin_memory, disp_tensor **out0) {
  REDISPATCH(OP_SCALAR_TENSOR, device, layout, dtype, (disp_scalar, FACTORY_PARAMS, disp_tensor **), s, dtype, layout,
             device, pin_memory, out0);
}

disp_status disp__bsel__to_copy(disp_keyset ks, disp_tensor *self, int32_t dtype, int32_t layout,
                                disp_opt_device device, disp_opt_bool pin_memory, bool non_blocking,
                                int32_t memory_format, disp_tensor **out0) {
  REDISPATCH(OP_TO_COPY, device, layout, dtype, (disp_tensor *, FACTORY_PARAMS, bool, int32_t, disp_tensor **), self,
             dtype, layout, device, pin_memory, non_blocking, memory_format, out0);
}
