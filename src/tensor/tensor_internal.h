/*
 * tensor_internal.h - the bodies of disp_storage and disp_tensor, and the
 * helpers other modules (views, kernels, autograd) build on.
 *
 * Other modules read the fields directly; they change them only through the
 * disp__ helpers below, which keep the cached values (numel, contiguity) in
 * step.
 */
#ifndef DISP_TENSOR_INTERNAL_H
#define DISP_TENSOR_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "disp/tensor.h"
#include "strbuf_internal.h"

/* ---- allocators -------------------------------------------------------- */

/*
 * disp__allocator_lookup - the allocator of `type` copied into *out, or
 * DISP_ERR_INVALID_ARG "no allocator registered for device type
 * PrivateUse1 (privateuseone)". Thread-safe.
 */
disp_status disp__allocator_lookup(disp_backend type, disp_allocator *out);

/* ---- devices ----------------------------------------------------------- */

/* disp__device_type_valid - type is a disp_backend value. */
static inline int disp__device_type_valid(disp_backend type) {
  return (int)type >= 0 && (int)type < DISP_NUM_BACKENDS;
}

/* The device of a NULL tensor or storage (Note [NULL arguments]): a type
 * outside the enum, which disp_device_validate refuses, rather than cpu. */
static inline disp_device disp__no_device(void) { return disp_device_make(DISP_NUM_BACKENDS, -1); }

/* disp__dtype_valid - dt is a disp_dtype value. */
static inline int disp__dtype_valid(disp_dtype dt) {
  return (int)dt >= 0 && (int)dt < DISP_DTYPE_COUNT;
}

/* ---- storage ----------------------------------------------------------- */

struct disp_storage {
  atomic_size_t refs;
  void *data;
  size_t nbytes;
  disp_device device;
  unsigned char resizable;
  /* Who frees `data`: the allocator that made it (own_allocator), or the
   * caller's release callback (storage_new_with_data). A copy, so that
   * re-registering an allocator never strands older storages. */
  unsigned char own_allocator;
  disp_allocator allocator;
  void (*release)(void *data, void *ctx);
  void *release_ctx;
};

/*
 * disp__storage_resize - grow or shrink a resizable storage to nbytes
 * (PyTorch's resize_bytes): disp_storage_resize (disp/backend.h) without
 * its NULL check. Not thread-safe: no other thread may use the storage.
 */
disp_status disp__storage_resize(disp_storage *st, size_t nbytes);

/* ---- version counter --------------------------------------------------- */

/* Shared by a tensor and its views (PyTorch's VersionCounter). */
typedef struct disp_version_counter {
  atomic_uint_least32_t refs;
  atomic_uint_least64_t version;
} disp_version_counter;

/* New counter at version 0 with one reference; NULL on OOM. */
disp_version_counter *disp__version_counter_new(void);
disp_version_counter *disp__version_counter_retain(disp_version_counter *vc);
void disp__version_counter_release(disp_version_counter *vc); /* NULL ok */

/* ---- tensor ------------------------------------------------------------ */

#include "tensor_ref_internal.h"

/* Dims stored inside the tensor; more go to one heap block (sizes|strides). */
#define DISP__TENSOR_INLINE_DIMS 6

struct disp_tensor {
  /* First, by contract: disp_tensor_keys() in disp/tensor.h reads the key
   * set inline (Note [The hot path]), tensor_ref_internal.h the count. */
  disp_keyset keyset;
  atomic_size_t refs;
  disp_storage *storage;   /* owned reference; NULL for opaque tensors */
  int64_t storage_offset;  /* elements */
  int ndim;
  int64_t *sizes;          /* -> inline_sizes or heap_dims */
  int64_t *strides;        /* -> inline_strides or heap_dims + ndim */
  int64_t *heap_dims;      /* NULL while ndim <= DISP__TENSOR_INLINE_DIMS */
  int64_t numel;           /* cached product of sizes */
  disp_dtype dtype;
  disp_layout layout;
  disp_device device;
  disp_version_counter *version; /* owned reference; NULL for inference tensors */

  /* Autograd slot: filled by the autograd module, destroyed with the tensor. */
  void *autograd_meta;
  void (*autograd_meta_destroy)(void *meta);

  /* Backend handle of an opaque tensor (PyTorch's OpaqueTensorImpl). */
  void *opaque_handle;
  void (*opaque_release)(void *handle);

  unsigned char requires_grad;
  unsigned char has_grad_fn;  /* set by autograd: not a leaf */
  unsigned char is_inference;
  unsigned char is_contiguous; /* cached */
  unsigned char has_strides;   /* 0 for opaque tensors */

  int64_t inline_sizes[DISP__TENSOR_INLINE_DIMS];
  int64_t inline_strides[DISP__TENSOR_INLINE_DIMS];
};

/*
 * disp__tensor_set_sizes_strides - replace the shape (strides NULL:
 * contiguous; ignored for tensors without strides) and recompute numel and
 * contiguity. Validates as the constructors do (ndim range, negative sizes
 * and strides, numel overflow) but not storage bounds - callers that change
 * a strided tensor check those with disp__tensor_check_storage_bounds. On
 * error the tensor is unchanged. Not thread-safe for t.
 */
disp_status disp__tensor_set_sizes_strides(disp_tensor *t, const int64_t *sizes,
                                           const int64_t *strides, int ndim);

/*
 * disp__tensor_check_shape - validates ndim, sizes (non-negative), strides
 * (non-negative, may be NULL) and that the element count fits int64;
 * writes it to *numel (may be NULL). `op` starts the message.
 */
disp_status disp__tensor_check_shape(const char *op, const int64_t *sizes, const int64_t *strides,
                                     int ndim, int64_t *numel);

/*
 * disp__tensor_storage_nbytes - bytes a strided tensor needs from its
 * storage's start (PyTorch's computeStorageNbytes); DISP_ERR_INVALID_ARG
 * on overflow. Shape must already be checked.
 */
disp_status disp__tensor_storage_nbytes(const int64_t *sizes, const int64_t *strides, int ndim,
                                        int64_t offset, size_t itemsize, size_t *out);

/* disp__tensor_contiguous_strides - PyTorch's contiguous strides into out. */
void disp__tensor_contiguous_strides(const int64_t *sizes, int ndim, int64_t *out);

/* disp__format_int_list - appends "[2, 3]" (PyTorch's IntArrayRef print). */
void disp__format_int_list(disp_strbuf *b, const int64_t *v, int n);

/* Autograd slot: the previous meta, if any, is destroyed by set. */
void *disp__tensor_autograd_meta(const disp_tensor *t);
void disp__tensor_set_autograd_meta(disp_tensor *t, void *meta, void (*destroy)(void *meta));

/* For autograd's history: a computed tensor requires grad and is no leaf,
 * which disp_tensor_set_requires_grad's leaf checks read. No checks. */
void disp__tensor_set_grad_state(disp_tensor *t, int requires_grad, int has_grad_fn);

#endif /* DISP_TENSOR_INTERNAL_H */

_Static_assert(offsetof(struct disp_tensor, refs) == offsetof(disp__tensor_head, refs),
               "tensor_ref_internal.h reads the count at this offset");
