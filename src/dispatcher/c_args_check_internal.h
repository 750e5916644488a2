/*
 * c_args_check_internal.h - checking a call's C arguments for NULL pointers
 * (Note [Checking C arguments] in c_args_check.c).
 */
#ifndef DISP_C_ARGS_CHECK_INTERNAL_H
#define DISP_C_ARGS_CHECK_INTERNAL_H

#include "disp/dispatcher.h"
#include "signature_internal.h"

/*
 * Checks argument i of `op`, already read into *v, for a call made through
 * the public function `fn` ("disp_call"). DISP_ERR_INVALID_ARG when a
 * pointer the schema does not let be None is NULL:
 *   "disp_call: self is NULL (argument 1 of aten::mm, type Tensor)"
 *   "disp_call: size.data is NULL with len 2 (argument 2 of aten::view, type SymInt[])"
 *   "disp_call: tensors.data[0] is NULL (argument 1 of aten::cat, type Tensor[]: ...)"
 * Reads only. Thread-safe.
 */
disp_status disp__check_c_arg(const char *fn, const disp_op *op, const disp_signature *sig, int i,
                              const disp_cvalue *v);

/* The same, with the common case (a non-NULL Tensor) decided inline. */
static inline disp_status disp__check_c_arg_fast(const char *fn, const disp_op *op, const disp_signature *sig, int i,
                                                 const disp_cvalue *v) {
  if (sig->args[i] == DISP_CT_TENSOR && v->tensor) return DISP_OK;
  return disp__check_c_arg(fn, op, sig, i, v);
}

#endif
