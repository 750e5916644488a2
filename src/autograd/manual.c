/*
 * manual.c - the Autograd kernels 1.13 writes by hand (VariableTypeManual.cpp)
 * for operators that replace a tensor's geometry or storage in place:
 * resize_ refuses a tensor that requires grad, set_ a leaf that requires
 * grad (as every in-place op does under grad mode); otherwise each calls
 * the generated pass-through it wraps.
 */
#include <string.h>

#include "autograd_internal.h"
#include "disp/aten.h"
#include "error_internal.h"
#include "record_internal.h"

static disp_aten_resize__kernel_ks *g_resize;
static disp_aten_set__source_Tensor_kernel_ks *g_set_tensor;
static disp_aten_set__source_Storage_kernel_ks *g_set_storage;
static disp_aten_set__source_Storage_storage_offset_kernel_ks *g_set_storage_offset;

static disp_status refuse_leaf(const disp_tensor *self) {
  if (self && disp_grad_mode_enabled() && disp_tensor_is_leaf(self) && disp_tensor_requires_grad(self))
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "a leaf Variable that requires grad is being used in an in-place operation.");
  return DISP_OK;
}

static disp_status resize_(disp_keyset ks, disp_tensor *self, disp_int_list size, int32_t memory_format,
                           disp_tensor **out0) {
  if (self && disp_tensor_requires_grad(self))
    return disp__fail(DISP_ERR_INVALID_ARG, "cannot resize variables that require grad");
  return g_resize(ks, self, size, memory_format, out0);
}

static disp_status set_tensor(disp_keyset ks, disp_tensor *self, disp_tensor *source, disp_tensor **out0) {
  disp_status st = refuse_leaf(self);
  return st == DISP_OK ? g_set_tensor(ks, self, source, out0) : st;
}

static disp_status set_storage(disp_keyset ks, disp_tensor *self, disp_storage *source, disp_tensor **out0) {
  disp_status st = refuse_leaf(self);
  return st == DISP_OK ? g_set_storage(ks, self, source, out0) : st;
}

static disp_status set_storage_offset(disp_keyset ks, disp_tensor *self, disp_storage *source,
                                      int64_t storage_offset, disp_int_list size, disp_int_list stride,
                                      disp_tensor **out0) {
  disp_status st = refuse_leaf(self);
  return st == DISP_OK ? g_set_storage_offset(ks, self, source, storage_offset, size, stride, out0) : st;
}

disp_fn disp__ag_manual_kernel(const char *op, disp_fn passthrough) {
  if (!strcmp(op, "aten::resize_")) {
    g_resize = (disp_aten_resize__kernel_ks *)(void (*)(void))passthrough;
    return DISP_FN(resize_);
  }
  if (!strcmp(op, "aten::set_.source_Tensor")) {
    g_set_tensor = (disp_aten_set__source_Tensor_kernel_ks *)(void (*)(void))passthrough;
    return DISP_FN(set_tensor);
  }
  if (!strcmp(op, "aten::set_.source_Storage")) {
    g_set_storage = (disp_aten_set__source_Storage_kernel_ks *)(void (*)(void))passthrough;
    return DISP_FN(set_storage);
  }
  if (!strcmp(op, "aten::set_.source_Storage_storage_offset")) {
    g_set_storage_offset = (disp_aten_set__source_Storage_storage_offset_kernel_ks *)(void (*)(void))passthrough;
    return DISP_FN(set_storage_offset);
  }
  return passthrough;
}
