/*
 * tensor_internal.h - the bodies of disp_storage and disp_tensor, and the
 * helpers other modules (views, kernels, autograd) build on.
 *
 * Other modules read the fields only through the inline accessors below
 * (Note [Tensor accessors]) and change them only through the disp__ helpers,
 * which keep the cached values (numel, contiguity) in step.
 */
#ifndef DISP_TENSOR_INTERNAL_H
#define DISP_TENSOR_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
 * Note [Tensor accessors]
 * Outside src/tensor, code reads a tensor (and a storage) through these
 * accessors, never through the struct's fields, so that the representation
 * (where sizes live, how the offset or the dtype is stored, whether numel is
 * cached) can change in this one file. .ci/check_tensor_fields.sh fails the
 * build's checks when a file outside src/tensor reads a field directly.
 *
 * Each is a static inline function over a const tensor that returns exactly
 * the field (or the element of sizes/strides), so it compiles to the same
 * load as the field read. None checks its arguments: t is non-NULL and d is
 * in [0, ndim) - validate first, as the field reads did. The pointers they
 * return are borrowed and live while t does and its shape does not change.
 *
 *   disp__t_ndim(t)             number of dims (0 for a scalar)
 *   disp__t_size(t, d)          size of dim d;   disp__t_sizes(t)   all ndim
 *   disp__t_stride(t, d)        stride of dim d; disp__t_strides(t) all ndim
 *                               (elements; only meaningful when has_strides)
 *   disp__t_numel(t)            product of the sizes (cached)
 *   disp__t_offset(t)           storage offset, in elements
 *   disp__t_dtype(t), disp__t_layout(t), disp__t_device(t)
 *   disp__t_device_type(t), disp__t_device_index(t)   its two parts
 *   disp__t_is_contiguous(t)    row-major contiguous (cached)
 *   disp__t_has_strides(t)      0 for opaque tensors (no strides, no storage)
 *   disp__t_storage(t)          borrowed storage; NULL for opaque tensors
 *   disp__t_data(t)             address of the first element: storage data +
 *                               offset * itemsize; NULL when the storage has
 *                               no bytes. t must have a storage (strides).
 *   disp__t_requires_grad(t), disp__t_is_inference(t)
 *   disp__tensor_autograd_meta(t)  the autograd slot (autograd owns its type)
 *   disp__storage_data(st), disp__storage_nbytes(st)
 * The key set is disp__tensor_head_keys (tensor_ref_internal.h).
 */
static inline int disp__t_ndim(const disp_tensor *t) { return t->ndim; }
static inline int64_t disp__t_size(const disp_tensor *t, int64_t d) { return t->sizes[d]; }
static inline const int64_t *disp__t_sizes(const disp_tensor *t) { return t->sizes; }
static inline int64_t disp__t_stride(const disp_tensor *t, int64_t d) { return t->strides[d]; }
static inline const int64_t *disp__t_strides(const disp_tensor *t) { return t->strides; }
static inline int64_t disp__t_numel(const disp_tensor *t) { return t->numel; }
static inline int64_t disp__t_offset(const disp_tensor *t) { return t->storage_offset; }
static inline disp_dtype disp__t_dtype(const disp_tensor *t) { return t->dtype; }
static inline disp_layout disp__t_layout(const disp_tensor *t) { return t->layout; }
/* Copied as bytes: returning t->device builds the value field by field (the
 * padding is not copied), two loads, a shift and an or where the field read
 * passed one 8-byte load. */
static inline disp_device disp__t_device(const disp_tensor *t) {
  disp_device d;
  memcpy(&d, &t->device, sizeof d);
  return d;
}
static inline disp_backend disp__t_device_type(const disp_tensor *t) { return t->device.type; }
static inline int16_t disp__t_device_index(const disp_tensor *t) { return t->device.index; }
static inline int disp__t_is_contiguous(const disp_tensor *t) { return t->is_contiguous; }
static inline int disp__t_has_strides(const disp_tensor *t) { return t->has_strides; }
static inline int disp__t_requires_grad(const disp_tensor *t) { return t->requires_grad; }
static inline int disp__t_is_inference(const disp_tensor *t) { return t->is_inference; }
static inline disp_storage *disp__t_storage(const disp_tensor *t) { return t->storage; }
static inline void *disp__storage_data(const disp_storage *st) { return st->data; }
static inline size_t disp__storage_nbytes(const disp_storage *st) { return st->nbytes; }

static inline void *disp__t_data(const disp_tensor *t) {
  char *base = (char *)t->storage->data; /* NULL for zero bytes: no arithmetic on it */
  return base ? base + t->storage_offset * (int64_t)disp_dtype_itemsize(t->dtype) : NULL;
}

static inline void *disp__tensor_autograd_meta(const disp_tensor *t) { return t->autograd_meta; }

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

/* Autograd slot (read with disp__tensor_autograd_meta): the previous meta,
 * if any, is destroyed by set. */
void disp__tensor_set_autograd_meta(disp_tensor *t, void *meta, void (*destroy)(void *meta));

/* For autograd's history: a computed tensor requires grad and is no leaf,
 * which disp_tensor_set_requires_grad's leaf checks read. No checks. */
void disp__tensor_set_grad_state(disp_tensor *t, int requires_grad, int has_grad_fn);

#endif /* DISP_TENSOR_INTERNAL_H */

_Static_assert(offsetof(struct disp_tensor, refs) == offsetof(disp__tensor_head, refs),
               "tensor_ref_internal.h reads the count at this offset");
