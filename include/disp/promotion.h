/*
 * disp/promotion.h - PyTorch's type promotion (c10::promoteTypes and
 * at::result_type).
 */
#ifndef DISP_PROMOTION_H
#define DISP_PROMOTION_H

#include "export.h"
#include "tensor.h"
#include "value.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * disp_promote_types - the smallest dtype both a and b convert to without
 * losing their category (c10::promoteTypes): bool < integers < floating;
 * uint8 with int8 gives int16, float16 with bfloat16 gives float32.
 * DISP_ERR_TYPE for quantized dtypes ("Promotion for QUInt8 types is not
 * supported..."), DISP_ERR_INVALID_ARG for a dtype outside the enum or a
 * NULL out ("disp_promote_types: out is NULL"); *out untouched then.
 * Thread-safe.
 */
DISP_API disp_status disp_promote_types(disp_dtype a, disp_dtype b, disp_dtype *out);

/*
 * disp_result_type - at::result_type over tensors and Python scalars.
 * Tensors with dimensions decide first; zero-dim tensors and then scalars
 * participate only when they are of a higher category (bool < integer <
 * floating). A float scalar counts as the default dtype float32, an int one
 * as int64, a bool one as bool. NULL tensors and DISP_SCALAR_NONE scalars
 * are skipped. Each array may be NULL only when its count is 0.
 * DISP_ERR_INVALID_ARG when nothing is given, for a NULL array with a
 * count ("disp_result_type: tensors is NULL") and for a NULL out.
 * Thread-safe.
 */
DISP_API disp_status disp_result_type(disp_tensor *const *tensors, size_t ntensors,
                                      const disp_scalar *scalars, size_t nscalars,
                                      disp_dtype *out);

#ifdef __cplusplus
}
#endif

#endif
