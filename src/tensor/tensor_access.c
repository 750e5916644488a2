/*
 * tensor_access.c - tensor getters and the small setters: version counter,
 * key set, requires_grad.
 */
#include "disp/guard.h"
#include "argcheck_internal.h"
#include "tensor_internal.h"

/*
 * Note [NULL arguments] (status.h): a getter of a plain value answers a
 * NULL tensor with "no such thing" - 0, the empty key set, or a dtype,
 * layout or device outside its enum, which every function of the library
 * refuses - rather than a plausible value such as float32 or cpu. A getter
 * of a pointer returns NULL and says why. The check is one predictable
 * branch; the inline disp_tensor_keys of the typed fast path has none.
 */
int disp_tensor_ndim(const disp_tensor *t) { return t ? t->ndim : 0; }
int64_t disp_tensor_storage_offset(const disp_tensor *t) { return t ? t->storage_offset : 0; }
disp_dtype disp_tensor_dtype(const disp_tensor *t) { return t ? t->dtype : DISP_DTYPE_COUNT; }
disp_layout disp_tensor_layout(const disp_tensor *t) { return t ? t->layout : DISP_LAYOUT_COUNT; }
disp_device disp_tensor_device(const disp_tensor *t) { return t ? t->device : disp__no_device(); }
disp_keyset disp_tensor_keyset(const disp_tensor *t) { return t ? t->keyset : disp_keyset_empty(); }
int64_t disp_tensor_numel(const disp_tensor *t) { return t ? t->numel : 0; }
size_t disp_tensor_itemsize(const disp_tensor *t) { return t ? disp_dtype_itemsize(t->dtype) : 0; }
int disp_tensor_is_contiguous(const disp_tensor *t) { return t && t->is_contiguous; }
int disp_tensor_is_inference(const disp_tensor *t) { return t && t->is_inference; }
int disp_tensor_requires_grad(const disp_tensor *t) { return t && t->requires_grad; }

const int64_t *disp_tensor_sizes(const disp_tensor *t) {
  DISP_REFUSE_NULL_PTR(t);
  return t->sizes;
}

const int64_t *disp_tensor_strides(const disp_tensor *t) {
  DISP_REFUSE_NULL_PTR(t);
  return t->has_strides ? t->strides : NULL;
}

disp_storage *disp_tensor_storage(const disp_tensor *t) {
  DISP_REFUSE_NULL_PTR(t);
  return t->storage;
}

void *disp_tensor_opaque_handle(const disp_tensor *t) {
  DISP_REFUSE_NULL_PTR(t);
  return t->opaque_handle;
}

void *disp_tensor_data_ptr(const disp_tensor *t) {
  DISP_REFUSE_NULL_PTR(t);
  if (!t->storage || !t->storage->data) return NULL;
  return (char *)t->storage->data + (size_t)t->storage_offset * disp_dtype_itemsize(t->dtype);
}

/* PyTorch's maybe_wrap_dim for sizes()/strides(): no scalar wrapping. */
static disp_status wrap_dim(const disp_tensor *t, int64_t dim, int *out) {
  int64_t n = t->ndim;
  if (n == 0)
    return disp__fail(DISP_ERR_INVALID_ARG, "dimension specified as %lld but tensor has no dimensions",
                      (long long)dim);
  if (dim < -n || dim >= n)
    return disp__fail(DISP_ERR_INVALID_ARG,
                      "Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
                      (long long)-n, (long long)(n - 1), (long long)dim);
  *out = (int)(dim < 0 ? dim + n : dim);
  return DISP_OK;
}

disp_status disp_tensor_size(const disp_tensor *t, int64_t dim, int64_t *out) {
  DISP_REFUSE_NULL(t);
  DISP_REFUSE_NULL(out);
  int d = 0;
  disp_status s = wrap_dim(t, dim, &d);
  if (s != DISP_OK) return s;
  *out = t->sizes[d];
  return DISP_OK;
}

disp_status disp_tensor_stride(const disp_tensor *t, int64_t dim, int64_t *out) {
  DISP_REFUSE_NULL(t);
  DISP_REFUSE_NULL(out);
  if (!t->has_strides) return disp__fail(DISP_ERR_INVALID_ARG, "opaque tensors do not have strides");
  int d = 0;
  disp_status s = wrap_dim(t, dim, &d);
  if (s != DISP_OK) return s;
  *out = t->strides[d];
  return DISP_OK;
}

uint64_t disp_tensor_version(const disp_tensor *t) {
  return t && t->version ? atomic_load_explicit(&t->version->version, memory_order_relaxed) : 0;
}

disp_status disp_tensor_bump_version(disp_tensor *t) {
  DISP_REFUSE_NULL(t);
  if (t->version) {
    atomic_fetch_add_explicit(&t->version->version, 1, memory_order_relaxed);
    return DISP_OK;
  }
  /* Inference tensors have no counter: inside inference mode nothing can
   * observe one, outside an in-place update would go unnoticed by autograd. */
  if (disp_inference_mode_enabled()) return DISP_OK;
  return disp__fail(DISP_ERR_INVALID_ARG,
                    "Inplace update to inference tensor outside InferenceMode is not allowed."
                    "You can make a clone to get a normal tensor before doing inplace update."
                    "See https://github.com/pytorch/rfcs/pull/17 for more details.");
}

void disp_tensor_set_keyset(disp_tensor *t, disp_keyset keys) {
  if (t) t->keyset = keys;
}

disp_status disp_tensor_set_requires_grad(disp_tensor *t, int requires_grad) {
  DISP_REFUSE_NULL(t);
  if (t->has_grad_fn)
    return disp__fail(DISP_ERR_INVALID_ARG, "you can only change requires_grad flags of leaf variables.%s",
                      requires_grad ? ""
                                    : " If you want to use a computed variable in a subgraph that doesn't "
                                      "require differentiation use var_no_grad = var.detach().");
  if (requires_grad) {
    if (!disp_dtype_is_floating(t->dtype))
      return disp__fail(DISP_ERR_INVALID_ARG,
                        "only Tensors of floating point dtype can require gradients");
    if (t->is_inference && !disp_inference_mode_enabled())
      return disp__fail(DISP_ERR_INVALID_ARG,
                        "Setting requires_grad=True on inference tensor outside InferenceMode is "
                        "not allowed.");
  }
  t->requires_grad = (unsigned char)(requires_grad != 0);
  return DISP_OK;
}

void disp__tensor_set_grad_state(disp_tensor *t, int requires_grad, int has_grad_fn) {
  t->requires_grad = (unsigned char)(requires_grad != 0);
  t->has_grad_fn = (unsigned char)(has_grad_fn != 0);
}
