/*
 * disp/tensor_util.h - printing and comparing tensors (for people and tests).
 */
#ifndef DISP_TENSOR_UTIL_H
#define DISP_TENSOR_UTIL_H

#include <stdio.h>

#include "export.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * disp_tensor_format - the tensor as PyTorch's repr writes it, into a new
 * malloc'd string (*out; the caller frees it with free()):
 *   tensor([[1., 2.],
 *           [3., 4.]])
 * Same number formatting (integer-valued floats as "1.", 4 decimals, or
 * scientific notation when the magnitudes call for it), line wrapping at 80
 * columns, "..." summaries beyond 1000 elements, and the suffixes PyTorch
 * adds: device for non-cpu tensors, dtype unless float32/int64/bool,
 * size= for empty tensors, and "tensor(..., device='meta', size=(2, 3))"
 * for tensors without data. The values of a tensor on a device other than
 * the CPU are copied to the host with its device's d2h copy hook first
 * (disp/backend.h): the library never reads device memory itself.
 * Errors: DISP_ERR_INVALID_ARG (NULL t or out: "disp_tensor_format: t is
 * NULL"; opaque tensor; "disp_tensor_format: cannot read privateuseone:0
 * memory on the host: no device-to-host copy hook registered for device
 * type privateuseone"; a failing hook), DISP_ERR_NO_MEMORY. Thread-safe
 * for a tensor nobody writes.
 */
DISP_API disp_status disp_tensor_format(const disp_tensor *t, char **out);

/*
 * disp_tensor_print - disp_tensor_format followed by a newline, to f.
 * Errors: those of disp_tensor_format; DISP_ERR_INVALID_ARG for a NULL f
 * ("disp_tensor_print: f is NULL") or t.
 */
DISP_API disp_status disp_tensor_print(FILE *f, const disp_tensor *t);

/*
 * disp_tensor_allclose - *out = 1 when a and b have the same sizes and
 * every pair of elements satisfies |a - b| <= atol + rtol * |b| (PyTorch's
 * allclose; an infinity matches only the same infinity, nan matches nan
 * only when equal_nan). Elements are compared as doubles (integers
 * exactly), so the dtypes may differ, and so may the devices: a tensor
 * not on the CPU is copied to the host through its device's d2h hook.
 * Sizes that differ give *out = 0. Errors: DISP_ERR_INVALID_ARG (a NULL a,
 * b or out: "disp_tensor_allclose: a is NULL"; tensors without data,
 * negative tolerances; a device without a d2h hook, as disp_tensor_format).
 */
DISP_API disp_status disp_tensor_allclose(const disp_tensor *a, const disp_tensor *b, double rtol, double atol,
                                          int equal_nan, int *out);

#ifdef __cplusplus
}
#endif

#endif /* DISP_TENSOR_UTIL_H */
