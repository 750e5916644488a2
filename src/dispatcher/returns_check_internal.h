/*
 * returns_check_internal.h - the error for a kernel that returned DISP_OK
 * without a tensor where its schema promises one (returns_check.c); called
 * by the generated code of the built-in operators (tools/gen_aten.c).
 */
#ifndef DISP_RETURNS_CHECK_INTERNAL_H
#define DISP_RETURNS_CHECK_INTERNAL_H

#include "disp/keyset.h"
#include "disp/status.h"

#include "disp/dispatcher.h"

/* Fails with DISP_ERR_KERNEL: "<op>: the kernel for <key> returned DISP_OK
 * without a tensor for return <ret> ...". ks is the key set the kernel ran
 * with, or (tensor_keys 1) the call's tensor key sets, from which the key is
 * computed as the dispatcher does. */
disp_status disp__no_tensor_returned(const disp_op *op, disp_keyset ks, int tensor_keys, int ret);

#endif
