/*
 * boxed_check_internal.h - checking a boxed call's values against the
 * schema (Note [Checking boxed values] in boxed_check.c).
 */
#ifndef DISP_BOXED_CHECK_INTERNAL_H
#define DISP_BOXED_CHECK_INTERNAL_H

#include <stddef.h>

#include "disp/dispatcher.h"
#include "signature_internal.h"

/* DISP_ERR_INVALID_ARG ("op expects N arguments on the stack, found M")
 * when the stack holds fewer values than the schema has arguments. */
disp_status disp__check_boxed_count(const disp_op *op, const disp_signature *sig, const disp_stack *stack);

/* Checks the sig->nargs values at `av` (a call's arguments, in order) and
 * sets *keys to the union of their tensors' key sets. DISP_ERR_TYPE naming
 * the operator, the argument, the schema type and what was there. Reads
 * only; the caller drops the arguments on failure. */
disp_status disp__check_boxed_args(const disp_op *op, const disp_signature *sig, const disp_value *av,
                                   disp_keyset *keys);

/* The same for the arguments whose bit is set in `which` only, without
 * the key sets. */
disp_status disp__check_boxed_some(const disp_op *op, const disp_signature *sig, const disp_value *av,
                                   uint64_t which);

/* Checks what a boxed kernel left above `base` (where its arguments
 * started): as many values as the schema has returns, each of its return's
 * type, a Tensor return defined (unless sig->undefined_rets_ok). ks is the
 * key set the kernel ran with (for the message). DISP_ERR_KERNEL
 * otherwise; reads only. */
disp_status disp__check_boxed_returns(const disp_op *op, const disp_signature *sig, disp_stack *stack,
                                      size_t base, disp_keyset ks);

#endif
