/*
 * returns_check.c - a kernel that reports success but leaves a Tensor
 * return unset (issue 18): every generated call site of a built-in operator
 * (typed entry, boxed adapter, autograd pass-through, ADInplaceOrView
 * kernel) turns that into an error naming the operator and the key whose
 * kernel ran, instead of handing NULL to a caller that was promised a
 * tensor. One NULL test per Tensor return on the hot path; this file is
 * the cold path.
 */
#include "disp/call.h"
#include "disp/dispatcher.h"
#include "error_internal.h"
#include "returns_check_internal.h"

disp_status disp__no_tensor_returned(const disp_op *op, disp_keyset ks, int tensor_keys, int ret) {
  /* tensor_keys: the call's own key sets, before the thread-local sets */
  disp_keyset ran = tensor_keys ? disp_op_dispatch(op, ks).ks : ks;
  disp_status st = disp__fail(DISP_ERR_KERNEL,
                              "%s: the kernel for %s returned DISP_OK without a tensor for return %d (its schema "
                              "returns a Tensor there; return an error status instead)",
                              disp_op_name(op), disp_key_name(disp_keyset_highest_key(ran)), ret);
  disp__error_mark_named();
  return st;
}
