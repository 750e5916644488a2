/*
 * stub_internal.h - the stub kernels (disp/stub.h): the loop table read on
 * every call (stub_registry.c), the shared driver of the elementwise ones
 * (stub_pointwise.c) and the block walker both drivers use (stub_walk.c).
 */
#ifndef DISP_STUB_INTERNAL_H
#define DISP_STUB_INTERNAL_H

#include "aten_internal.h"
#include "aten_kernels.h"
#include "disp/stub.h"
#include "tensor_iter.h"

/* The loop of stub `id` for device type `type`, or NULL; lock-free. */
disp_stub_fn disp__stub_lookup(disp_stub id, disp_backend type);

/* "DispatchStub: missing PrivateUse1 kernel for abs_stub": the loop went
 * away between dispatch and call. */
disp_status disp__stub_missing(disp_stub id, disp_device dev);

/* A fresh tensor on dev through the dispatcher (the backend's empty_strided,
 * so its allocator and bookkeeping are used). New reference. */
disp_status disp__stub_empty(const int64_t *shape, const int64_t *strides, int nd, disp_dtype dt, disp_device dev,
                             disp_tensor **out);

/* t itself (a new reference) when it is on dev with dtype dt, else a copy
 * converted there by the dispatcher (_to_copy). */
disp_status disp__stub_on_device(disp_tensor *t, disp_dtype dt, disp_device dev, disp_tensor **out);

/*
 * disp__stub_walk - calls fn on the 2-D blocks of a plan (disp__titer_plan):
 * block dims b0 (along a row) and b1 (rows), either -1 for a dimension of
 * size 1; every other dim is iterated here, on addresses only. `it` holds
 * the fields that do not change (stub, device, dtype, noperands, alpha).
 * accumulate is set for blocks after the first into the same outputs
 * (operand 0 stride 0 on an iterated dim). Stops at the first error.
 */
disp_status disp__stub_walk(const disp_titer_plan *p, int b0, int b1, disp_stub_iter *it, disp_stub_fn fn);

/* The elementwise driver: disp__pointwise's geometry and modes (fresh,
 * DISP_PW_INPLACE, DISP_PW_OUT) with the backend's loop for stub `id`
 * computing in dtype dt; alpha goes to the loop. *ret is a new reference. */
disp_status disp__stub_pointwise(const char *op, disp_stub id, int mode, disp_tensor *dest, disp_tensor *const *ins,
                                 int nin, disp_dtype dt, disp_scalar alpha, disp_tensor **ret);

/* The kernels disp__stub_ID of the manifest's rows with .stub, of the
 * operators' exact C types, are declared in the generated aten_kernels.h
 * (stub_pointwise.c, stub_binary.c, stub_reduce.c define them). */

/* An operator the stub kernels serve (generated from the manifest's .stub
 * column, aten_gen.c): the stubs any of which makes the backend get its
 * kernel. */
typedef struct disp__stub_op {
  const char *name;
  disp_fn kernel;
  unsigned stubs; /* 1u << disp_stub */
} disp__stub_op;

extern const disp__stub_op disp__stub_ops[];

#endif
