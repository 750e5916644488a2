/*
 * gradcheck_internal.h - what gradcheck.c, gradcheck_message.c and
 * gradgradcheck.c share.
 */
#ifndef DISP_GRADCHECK_INTERNAL_H
#define DISP_GRADCHECK_INTERNAL_H

#include <stdint.h>

#include "disp/gradcheck.h"

/*
 * disp__gc_call - calls fn with room for DISP_GRADCHECK_MAX_OUTPUTS
 * outputs. On DISP_OK outs[0..*nout) are new references, none NULL; on
 * error nothing is left in outs and *nout is 0.
 */
disp_status disp__gc_call(disp_gradcheck_fn fn, void *ctx, disp_tensor *const *inputs, size_t n,
                          disp_tensor **outs, size_t *nout);

/* disp__gc_release - releases t[0..n) and sets them NULL. */
void disp__gc_release(disp_tensor **t, size_t n);

/*
 * disp__gc_mismatch - sets PyTorch's "Jacobian mismatch for output O with
 * respect to input I,\nnumerical:...\nanalytical:...\n" (the matrices
 * rows x cols, row-major, shortened to their corners) and returns
 * DISP_ERR_MISMATCH.
 */
disp_status disp__gc_mismatch(size_t output, size_t input, const double *numerical, const double *analytical,
                              int64_t rows, int64_t cols);

#endif
