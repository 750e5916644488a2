/*
 * device_check.h - the one device check of built-in kernels (Note [One
 * device check] in device_check.c).
 *
 * tools/gen_aten.c wraps each CPU, Meta, CompositeExplicitAutograd and
 * BackendSelect kernel of aten_ops.def in a generated function that runs
 * these checks on the kernel's arguments first, so no kernel checks
 * devices on its own. Internal to the built-in kernels.
 */
#ifndef DISP_DEVICE_CHECK_H
#define DISP_DEVICE_CHECK_H

#include "aten_internal.h"

/* DISP_K_CPU_SCALAR of aten_ops.def: one 0-dim CPU input may join tensors
 * of another device (TensorIterator's allow_cpu_scalars). */
#define DISP__DEV_CPU_SCALAR 1u
/* DISP_K_CPU_SCALARS: every 0-dim CPU input may (where.self moves them all
 * to the common device). */
#define DISP__DEV_CPU_SCALARS 2u

/* Same device, CPU's index -1 and 0 being one device. */
static inline int disp__device_same(disp_device a, disp_device b) {
  return a.type == b.type && (a.index == b.index || a.type == DISP_BACKEND_CPU);
}

/* The fast path: whether `t` (NULL: an absent `Tensor?`) is on another
 * device than `ref`. Two compares per tensor argument. */
static inline int disp__device_differs(const disp_tensor *ref, const disp_tensor *t) {
  return t &&
         (disp__t_device_type(t) != disp__t_device_type(ref) || disp__t_device_index(t) != disp__t_device_index(ref));
}

/*
 * disp__devices_check - PyTorch 1.13's device rule for one kernel call
 * (TensorIterator::compute_types): the common device is the first non-CPU
 * device among the operands, and every other operand must be on it, except
 * (with DISP__DEV_CPU_SCALAR) one 0-dim CPU input, or (DISP__DEV_CPU_SCALARS)
 * every one. The operands are, in
 * this order, the outputs ts[0..nout), the inputs ts[nout..n), then every
 * element of the lists ls[0..nl) as inputs; NULLs are skipped. Fails with
 * DISP_ERR_INVALID_ARG and 1.13's message ("Expected all tensors to be on
 * the same device, but found at least two devices, meta and cpu!"),
 * changing nothing. Thread-safe.
 */
disp_status disp__devices_check(const disp_tensor *const *ts, int n, int nout, const disp_tensor_list *ls, int nl,
                                unsigned flags);

/*
 * disp__device_arg_check - a Device argument of a built-in backend kernel,
 * checked as PyTorch's Device constructor does: DISP_ERR_INVALID_ARG with
 * disp_device_validate's message ("CPU device index must be -1 or zero, got
 * 5"). None passes. Thread-safe.
 */
disp_status disp__device_arg_check(disp_opt_device d);

/*
 * disp__enum_arg_check - a ScalarType, Layout or MemoryFormat argument
 * (`kind`, a disp_type_kind) of a built-in kernel, named `name`: one of the
 * enum's values, or -1 (None) where the schema makes it optional. Anything
 * else is DISP_ERR_INVALID_ARG ("argument 'dtype' must be a ScalarType (0
 * to 10) or None (-1), not 100000"), as PyTorch's argument parser refuses a
 * dtype that is not a torch.dtype. Thread-safe.
 */
disp_status disp__enum_arg_check(int kind, int32_t v, int optional, const char *name);

#endif
