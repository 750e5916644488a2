/*
 * masked_fill.c - aten::masked_fill.Scalar: self where mask is unset, the
 * value where it is set, over the broadcast shape of mask and self.
 *
 * 1.13 registers only a CompositeExplicitAutograd kernel (expand both,
 * clone self contiguous, masked_fill_ it), so this one is written with
 * dispatched operators and serves every backend, Meta included: where.self
 * over (mask, value as a 0-dim tensor of self's dtype, self), then
 * contiguous, which is the layout 1.13's clone gives.
 *
 * The value is converted to self's dtype as 1.13's Scalar::to<T>() does,
 * refusing what overflows ("value cannot be converted to type uint8_t
 * without overflow"). Masks: bool, or uint8 (deprecated in 1.13, which
 * warns). Deliberate difference (README): 1.13.1's CPU kernel takes a mask
 * of any other dtype and reads the first byte of each element as the
 * flag, a reinterpretation of memory rather than a rule; it is refused
 * here with the message later PyTorch releases give.
 */
#include "aten_internal.h"
#include "aten_kernels.h"
#include "disp/aten.h"
#include "elementwise_copy.h"
#include "tensor_iter.h"

/* 1.13 refuses a uint8 mask holding anything but 0 and 1. Read through
 * dispatched amax and item, so any device's mask is checked; a Meta mask
 * has no values (check-ops counts this error among the value-dependent). */
static disp_status check_byte_mask(disp_tensor *mask) {
  if (disp__t_dtype(mask) != DISP_DTYPE_UINT8 || disp__t_numel(mask) == 0 ||
      disp__t_device_type(mask) == DISP_BACKEND_META)
    return DISP_OK;
  disp_tensor *mx = NULL;
  disp_int_list all = {NULL, 0};
  disp_scalar v;
  disp_status st = disp_aten_amax(mask, all, false, &mx);
  if (st != DISP_OK) return st;
  st = disp_aten_item(mx, &v);
  disp_tensor_release(mx);
  if (st != DISP_OK) return st;
  if (disp_scalar_to_double(v) > 1)
    return disp_set_error(DISP_ERR_INVALID_ARG, "Mask tensor can take 0 and 1 values only");
  return DISP_OK;
}

disp_status disp__cea_masked_fill_Scalar(disp_tensor *self, disp_tensor *mask, disp_scalar value, disp_tensor **out0) {
  int64_t shape[DISP_TENSOR_MAX_DIMS];
  int ndim = 0;
  disp_tensor *ins[2] = {mask, self};
  disp_status st = disp__titer_broadcast("masked_fill", ins, 2, shape, &ndim);
  if (st != DISP_OK) return st;
  disp_dtype mdt = disp__t_dtype(mask), dt = disp__t_dtype(self);
  if (mdt != DISP_DTYPE_BOOL && mdt != DISP_DTYPE_UINT8)
    return disp_set_error(DISP_ERR_TYPE, "masked_fill_ only supports boolean masks, but got mask with dtype %s",
                          disp_dtype_torch_name(mdt));
  unsigned char elem[16];
  if ((st = disp__ew_scalar_to_elem(value, dt, elem)) != DISP_OK) return st;
  if ((st = check_byte_mask(mask)) != DISP_OK) return st;
  disp_device dev = disp__t_device(self);
  disp_opt_device odev = {(int32_t)dev.type, dev.index, true};
  disp_opt_bool no_pin = {0};
  disp_tensor *fill = NULL, *picked = NULL;
  if ((st = disp_aten_scalar_tensor(value, (int32_t)dt, -1, odev, no_pin, &fill)) != DISP_OK) return st;
  st = disp_aten_where_self(mask, fill, self, &picked);
  disp_tensor_release(fill);
  if (st != DISP_OK) return st;
  st = disp_aten_contiguous(picked, DISP_MEMORY_FORMAT_CONTIGUOUS, out0);
  disp_tensor_release(picked);
  return st;
}
