/*
 * op_rules.h - the argument and dtype rules of pointwise and reduction ops
 * that do not depend on the device: the CPU and Meta kernels apply them, and
 * so do the stub kernels (stub_pointwise.c, stub_reduce.c), which must refuse
 * and promote exactly as the CPU does before a backend's loop runs.
 */
#ifndef DISP_OP_RULES_H
#define DISP_OP_RULES_H

#include "aten_internal.h"

/* add/sub (sub != 0): the bool-subtraction and alpha checks, and the
 * common dtype of self and other (binary.c). */
disp_status disp__add_rules(int sub, disp_tensor *self, disp_tensor *other, disp_scalar alpha,
                            disp_dtype *common);

/* -a for an alpha: sub is add with the negated alpha (int negation wraps). */
disp_scalar disp__scalar_negated(disp_scalar a);

/* True division's dtype: the common one, integral and bool as float32. */
disp_dtype disp__div_dtype(disp_tensor *self, disp_tensor *other);

/* neg and relu refuse bool tensors with 1.13's messages (unary.c). */
disp_status disp__neg_rules(const disp_tensor *self);
disp_status disp__relu_rules(const disp_tensor *self);

/* The compute dtype of exp, log, tanh, sigmoid, sqrt: self's when floating,
 * float32 otherwise. */
disp_dtype disp__float_unary_dtype(const disp_tensor *self);

/* sum's (and mean's, is_mean) result dtype: dtype= when given (>= 0), int64
 * for an integral or bool sum, else self's (reduce.c). */
disp_dtype disp__sum_dtype(const disp_tensor *self, int32_t dtype, int is_mean);

#endif
