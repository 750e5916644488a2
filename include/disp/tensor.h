/*
 * disp/tensor.h - the tensor core: dtypes, devices, allocators, storage and
 * the tensor object, as far as dispatch needs them.
 *
 * Note [Tensor core ownership]
 * Storages and tensors are refcounted. Every constructor returns a new
 * reference (count 1) through an out-parameter; getters borrow; retain
 * returns its argument; release accepts NULL and frees at zero. A tensor
 * holds one reference to its storage and one to its version counter, so a
 * view keeps the memory alive after its base is released.
 *
 * Note [Tensor core thread safety]
 * Refcounts are atomic (acquire/release), so references may be retained and
 * released from any thread. The allocator table and the PrivateUse1 name are
 * published atomically and may be read from any thread. A tensor's metadata
 * (sizes, key set, requires_grad) and its data are NOT synchronized: a thread
 * that changes them must not race with readers - that is the caller's job,
 * as in PyTorch. The version counter is atomic.
 *
 * Note [Tensor core NULL arguments]
 * status.h's Note [NULL arguments], as it applies here: a constructor or
 * other function returning disp_status refuses a NULL with
 * DISP_ERR_INVALID_ARG, "<function>: <argument> is NULL", and changes
 * nothing; an array (sizes, strides, caller memory) may be NULL only when
 * its count is 0. A getter returning a pointer returns NULL for a NULL
 * object and sets that message. A getter returning a plain value documents
 * that its object must not be NULL and answers a NULL with "none": 0, the
 * empty key set, DISP_DTYPE_COUNT, DISP_LAYOUT_COUNT or the device
 * {DISP_NUM_BACKENDS, -1} - values every function here refuses - rather
 * than a plausible float32 or cpu. retain(NULL) returns NULL, release(NULL)
 * and set_keyset(NULL, ...) do nothing. The inline disp_tensor_keys does
 * not check (it is the typed call's fast path).
 *
 * Body of the opaque types: src/tensor/tensor_internal.h.
 */
#ifndef DISP_TENSOR_H
#define DISP_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "keyset.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== dtypes ============================================================ */

/*
 * The element types: enum suffix, PyTorch's dtype name (torch.float32),
 * the ScalarType name PyTorch prints ("Float"), PyTorch's short alias
 * (torch.float; "" when none), element size in bytes, and kind (FLOAT, INT,
 * BOOL, QUANT). One list drives the enum and every table.
 */
#define DISP_FORALL_DTYPES(X)                                                \
  X(FLOAT32, "float32", "Float", "float", 4, FLOAT)                          \
  X(FLOAT64, "float64", "Double", "double", 8, FLOAT)                        \
  X(FLOAT16, "float16", "Half", "half", 2, FLOAT)                            \
  X(BFLOAT16, "bfloat16", "BFloat16", "", 2, FLOAT)                          \
  X(INT64, "int64", "Long", "long", 8, INT)                                  \
  X(INT32, "int32", "Int", "int", 4, INT)                                    \
  X(INT16, "int16", "Short", "short", 2, INT)                                \
  X(INT8, "int8", "Char", "", 1, INT)                                        \
  X(UINT8, "uint8", "Byte", "", 1, INT)                                      \
  X(BOOL, "bool", "Bool", "", 1, BOOL)                                       \
  X(QUINT8, "quint8", "QUInt8", "", 1, QUANT)

typedef enum disp_dtype {
#define X(E, name, torch, alias, size, kind) DISP_DTYPE_##E,
  DISP_FORALL_DTYPES(X)
#undef X
  DISP_DTYPE_COUNT
} disp_dtype;

/*
 * disp_dtype_name - PyTorch's dtype name without "torch.": "float32".
 * Static string; "UNKNOWN_DTYPE" outside the enum. Thread-safe.
 */
DISP_API const char *disp_dtype_name(disp_dtype dt);

/*
 * disp_dtype_torch_name - the ScalarType name PyTorch prints in messages
 * ("Float", "Long", "QUInt8"). Static string; "UNKNOWN_DTYPE" outside the
 * enum. Thread-safe.
 */
DISP_API const char *disp_dtype_torch_name(disp_dtype dt);

/* disp_dtype_itemsize - bytes per element; 0 outside the enum. Thread-safe. */
DISP_API size_t disp_dtype_itemsize(disp_dtype dt);

/* disp_dtype_is_floating - float32/64/16 and bfloat16. Thread-safe. */
DISP_API int disp_dtype_is_floating(disp_dtype dt);

/*
 * disp_dtype_is_integral - the integer dtypes, and bool when include_bool
 * is nonzero (PyTorch's isIntegralType(t, includeBool)). Quantized dtypes
 * are not integral. Thread-safe.
 */
DISP_API int disp_dtype_is_integral(disp_dtype dt, int include_bool);

/* disp_dtype_is_quantized - quint8. Thread-safe. */
DISP_API int disp_dtype_is_quantized(disp_dtype dt);

/*
 * disp_dtype_parse - the dtype named `name`: PyTorch's name ("float32"),
 * optionally prefixed "torch.", its alias ("float", "long", "half"), or its
 * ScalarType name ("Float"). Errors: DISP_ERR_INVALID_ARG naming the input
 * and listing the valid names, or a NULL name or out ("disp_dtype_parse:
 * out is NULL"); *out is untouched. Thread-safe.
 */
DISP_API disp_status disp_dtype_parse(const char *name, disp_dtype *out);

/* ==== layouts =========================================================== */

/* Memory layouts; a sparse layout selects the Sparse<backend> key. */
typedef enum disp_layout {
  DISP_LAYOUT_STRIDED,
  DISP_LAYOUT_SPARSE_COO,
  DISP_LAYOUT_COUNT
} disp_layout;

/*
 * disp_layout_name - "strided", "sparse_coo" (PyTorch's torch.<name>).
 * Static string; "UNKNOWN_LAYOUT" outside the enum. Thread-safe.
 */
DISP_API const char *disp_layout_name(disp_layout l);

/*
 * Memory formats, numbered as PyTorch's MemoryFormat (the C value of a
 * `MemoryFormat` schema argument, disp/value.h).
 */
typedef enum disp_memory_format {
  DISP_MEMORY_FORMAT_CONTIGUOUS = 0,
  DISP_MEMORY_FORMAT_PRESERVE = 1,
  DISP_MEMORY_FORMAT_CHANNELS_LAST = 2,
  DISP_MEMORY_FORMAT_CHANNELS_LAST_3D = 3
} disp_memory_format;

/* ==== devices =========================================================== */

/*
 * A device: a device type (the backend component of keyset.h) and an index,
 * -1 meaning "unspecified" (PyTorch's "cuda" as opposed to "cuda:0").
 * A small value passed by value.
 */
typedef struct disp_device {
  disp_backend type;
  int16_t index;
} disp_device;

/* disp_device_make - {type, index}. Thread-safe. */
static inline disp_device disp_device_make(disp_backend type, int index) {
  disp_device d;
  d.type = type;
  d.index = (int16_t)index;
  return d;
}

/* disp_device_equal - same type and index. Thread-safe. */
static inline int disp_device_equal(disp_device a, disp_device b) {
  return a.type == b.type && a.index == b.index;
}

/*
 * disp_device_type_name - PyTorch's lower-case device type name: "cpu",
 * "cuda", ..., "meta", "privateuseone" ("privateusetwo", "privateusethree"
 * for the backends PyTorch has no device type for) - or the name given to
 * PrivateUse1..3 by disp_device_rename_privateuse1 / _backend. Static string
 * valid for the life of the process; "unknown" outside the enum. Thread-safe.
 */
DISP_API const char *disp_device_type_name(disp_backend type);

/*
 * disp_device_rename_privateuse1 - give PrivateUse1 a device name ("npu"),
 * as torch.utils.rename_privateuse1_backend does: afterwards "npu:0" parses
 * to PrivateUse1 and PrivateUse1 devices print as "npu:0" ("privateuseone"
 * still parses). The name is set once per process: renaming again to the
 * same name succeeds, to a different one fails (PyTorch forbids it too,
 * because tensors and kernels may already use the old name).
 * The name must be 1..31 characters of [a-z_] (what a device string may
 * hold), start with a letter and not be another device type's name.
 * Errors: DISP_ERR_INVALID_ARG (bad or NULL name), DISP_ERR_DUPLICATE
 * (already renamed to something else). Thread-safe.
 */
DISP_API disp_status disp_device_rename_privateuse1(const char *name);

/*
 * disp_device_rename_backend - the same for PrivateUse1, PrivateUse2 or
 * PrivateUse3, so a second and a third backend plugin loaded at the same
 * time each have a device name ("secondreg:0" parses to PrivateUse2). A name
 * another renamed backend holds is refused like an in-tree one. A rename
 * made while a plugin loads belongs to it: unloading the plugin frees the
 * name. Errors as disp_device_rename_privateuse1's, plus DISP_ERR_INVALID_ARG
 * for another device type. Thread-safe.
 */
DISP_API disp_status disp_device_rename_backend(disp_backend type, const char *name);

/*
 * disp_device_validate - checks an index: -1 or non-negative, and -1 or 0
 * for CPU (PyTorch's Device::validate). Errors: DISP_ERR_INVALID_ARG.
 * Thread-safe.
 */
DISP_API disp_status disp_device_validate(disp_device dev);

/*
 * disp_device_format - writes "cpu", "cuda:1" or "npu:0" into buf (always
 * NUL-terminated when size > 0). Returns the length the full text needs,
 * like snprintf; a NULL buf is measured, not written, whatever size says.
 * Thread-safe.
 */
DISP_API size_t disp_device_format(disp_device dev, char *buf, size_t size);

/*
 * disp_device_parse - parses "cpu", "cuda:1", "npu:0" (after renaming) into
 * *out. Errors (DISP_ERR_INVALID_ARG, *out untouched), worded as PyTorch's:
 * "Device string must not be empty", "Invalid device string: 'cuda:x'",
 * "Expected one of cpu, cuda, ... device type at start of device string: foo",
 * "CPU device index must be -1 or zero, got 1"; a NULL str or out:
 * "disp_device_parse: str is NULL". Thread-safe.
 */
DISP_API disp_status disp_device_parse(const char *str, disp_device *out);

/* ==== allocators ======================================================== */

/*
 * A device allocator. allocate returns memory for nbytes bytes on `device`
 * (or NULL on failure; NULL for nbytes == 0 is fine); deallocate frees what
 * allocate returned, with the same nbytes and device. copy (may be NULL)
 * copies nbytes between two blocks of this allocator on `device`, on the
 * device (PyTorch's Allocator::copy_data): disp_storage_resize carries a
 * storage's bytes over with it, and without it refuses to resize a storage
 * holding data. `ctx` is passed to all three and is not owned: it must
 * outlive every storage allocated with it. All may be called from any
 * thread.
 */
typedef struct disp_allocator {
  void *(*allocate)(size_t nbytes, disp_device device, void *ctx);
  void (*deallocate)(void *ptr, size_t nbytes, disp_device device, void *ctx);
  void *ctx;
  void (*copy)(void *dst, const void *src, size_t nbytes, disp_device device, void *ctx);
} disp_allocator;

/*
 * disp_allocator_register - install the allocator of one device type
 * (copied). Re-registering replaces the previous allocator for new
 * storages; each storage remembers the allocator that made it and frees
 * through it, so the old one must keep working until its storages are gone.
 * Passing a == NULL restores the built-in state: the 64-byte aligned host
 * allocator for CPU, the no-memory allocator for Meta, none for the rest.
 * Errors: DISP_ERR_INVALID_ARG (bad type, NULL function pointers),
 * DISP_ERR_NO_MEMORY. Thread-safe.
 */
DISP_API disp_status disp_allocator_register(disp_backend type, const disp_allocator *a);

/*
 * disp_allocator_get - the allocator of a device type, or NULL when none is
 * registered (or, with a message, when `type` is no disp_backend). Borrowed; the pointed-to struct is never modified and stays
 * valid for the life of the process, even after re-registration.
 * Thread-safe.
 */
DISP_API const disp_allocator *disp_allocator_get(disp_backend type);

/* ==== storage =========================================================== */

/* A refcounted block of device memory shared by tensors. Opaque. */
typedef struct disp_storage disp_storage;

/*
 * disp_storage_new - allocate nbytes on `dev` with the device type's
 * registered allocator. New reference; resizable. Meta storage has no
 * memory (data NULL) but remembers nbytes. Errors: DISP_ERR_INVALID_ARG
 * (bad device, no allocator registered for the device type, NULL out,
 * nbytes above INT64_MAX), DISP_ERR_NO_MEMORY (nothing leaked).
 * Thread-safe.
 */
DISP_API disp_status disp_storage_new(size_t nbytes, disp_device dev, disp_storage **out);

/*
 * disp_storage_new_with_data - wrap caller memory (PyTorch's from_blob).
 * On success the storage owns `data`: release(data, ctx) is called exactly
 * once when the last reference goes (release may be NULL: memory not
 * owned). On failure nothing is taken and release is not called. New
 * reference; not resizable. `data` may be NULL only when nbytes is 0, or
 * on Meta, whose storages hold no memory (kernels never read it); ctx is
 * only passed to release. Errors: DISP_ERR_INVALID_ARG (bad device;
 * "disp_storage_new_with_data: data is NULL" for NULL data with nbytes > 0;
 * NULL out; nbytes above INT64_MAX), DISP_ERR_NO_MEMORY. Thread-safe.
 */
DISP_API disp_status disp_storage_new_with_data(void *data, size_t nbytes, disp_device dev,
                                                void (*release)(void *data, void *ctx),
                                                void *ctx, disp_storage **out);

/* disp_storage_retain - add a reference; returns st (NULL for NULL). Thread-safe. */
DISP_API disp_storage *disp_storage_retain(disp_storage *st);

/*
 * disp_storage_release - drop a reference (NULL ok); frees the memory at
 * zero. Thread-safe.
 */
DISP_API void disp_storage_release(disp_storage *st);

/*
 * Storage accessors: the data pointer (borrowed; NULL for meta storage and
 * zero bytes), the size in bytes, the device, and whether it may be resized
 * (storages from an allocator are, wrapped memory is not). `st` must not
 * be NULL: a NULL storage reads as none (data NULL with the message
 * "disp_storage_data: st is NULL", 0 bytes, device {DISP_NUM_BACKENDS, -1},
 * not resizable). Safe from any thread while nobody resizes the storage;
 * not synchronized with a resize.
 */
DISP_API void *disp_storage_data(const disp_storage *st);
DISP_API size_t disp_storage_nbytes(const disp_storage *st);
DISP_API disp_device disp_storage_device(const disp_storage *st);
DISP_API int disp_storage_resizable(const disp_storage *st);
/* disp_storage_refcount - the current count, for tests (0 for NULL). Thread-safe. */
DISP_API size_t disp_storage_refcount(const disp_storage *st);

/* ==== tensors =========================================================== */

/* A refcounted tensor (PyTorch's TensorImpl). Opaque. */
typedef struct disp_tensor disp_tensor;

/* The most dimensions a tensor may have (PyTorch's practical limit). */
#define DISP_TENSOR_MAX_DIMS 64

/*
 * disp_tensor_default_keyset - the key set PyTorch gives a new tensor:
 * the backend's runtime key (Dense -> CPU, quint8 -> QuantizedCPU, sparse
 * layout -> SparseCPU); unless `inference`, ADInplaceOrView and
 * Autograd<backend>; AutocastCPU / AutocastCUDA / AutocastPrivateUse1 for
 * CPU / CUDA / PrivateUse1 tensors (inference or not). Empty for an invalid
 * device type. Thread-safe.
 */
DISP_API disp_keyset disp_tensor_default_keyset(disp_device dev, disp_dtype dt,
                                                disp_layout layout, int inference);

/*
 * disp_tensor_empty - an uninitialized contiguous tensor (strides computed
 * as PyTorch's: the last dimension 1, sizes of 0 counted as 1). 0-dim
 * (ndim == 0, sizes may be NULL) holds one element. New reference. Created
 * in inference mode it is an inference tensor (no autograd keys, no
 * version counter).
 * Errors: DISP_ERR_INVALID_ARG (ndim outside 0..DISP_TENSOR_MAX_DIMS,
 * negative size, bad dtype or device, no allocator registered for the
 * device type, size overflow; NULL sizes with ndim > 0: "disp_tensor_empty:
 * sizes is NULL"; NULL out), DISP_ERR_NO_MEMORY (nothing leaked).
 * Thread-safe.
 */
DISP_API disp_status disp_tensor_empty(const int64_t *sizes, int ndim, disp_dtype dt,
                                       disp_device dev, disp_tensor **out);

/*
 * disp_tensor_empty_strided - like disp_tensor_empty with given strides
 * (elements); the storage is just big enough for the largest offset
 * (PyTorch's computeStorageNbytes). Errors as disp_tensor_empty, plus
 * DISP_ERR_INVALID_ARG for negative strides and for NULL strides with
 * ndim > 0. Thread-safe.
 */
DISP_API disp_status disp_tensor_empty_strided(const int64_t *sizes, const int64_t *strides,
                                               int ndim, disp_dtype dt, disp_device dev,
                                               disp_tensor **out);

/*
 * disp_tensor_new_with_storage - a strided tensor on `st` (borrowed; the
 * tensor takes its own reference) at `offset` elements, with `strides`
 * (NULL: contiguous). The device is the storage's. `keys` empty means the
 * default key set. The tensor gets a fresh version counter (none when made
 * in inference mode: it is then an inference tensor). New reference.
 * Errors: DISP_ERR_INVALID_ARG (NULL st, NULL sizes with ndim > 0, NULL
 * out, bad shape, negative offset, out of the storage's bounds),
 * DISP_ERR_NO_MEMORY. Thread-safe.
 */
DISP_API disp_status disp_tensor_new_with_storage(disp_storage *st, int64_t offset,
                                                  const int64_t *sizes, const int64_t *strides,
                                                  int ndim, disp_dtype dt, disp_keyset keys,
                                                  disp_tensor **out);

/*
 * disp_tensor_new_opaque - a tensor without host storage (PyTorch's
 * OpaqueTensorImpl): a backend handle plus sizes, no strides, data_ptr
 * NULL. On success the tensor owns `handle`: release(handle) is called
 * exactly once when it is freed (release may be NULL). On failure nothing
 * is taken. `layout` picks the key (DISP_LAYOUT_SPARSE_COO -> Sparse<B>).
 * New reference. Errors: DISP_ERR_INVALID_ARG (bad shape, dtype, device;
 * NULL sizes with ndim > 0, NULL out), DISP_ERR_NO_MEMORY. Thread-safe.
 */
DISP_API disp_status disp_tensor_new_opaque(const int64_t *sizes, int ndim, disp_dtype dt,
                                            disp_layout layout, disp_device dev, void *handle,
                                            void (*release)(void *handle), disp_tensor **out);

/*
 * disp_tensor_new_view - a view of `base` (borrowed): the same storage,
 * version counter, key set, dtype, device and inference flag, with new
 * sizes, strides (NULL: contiguous) and storage offset (elements). New
 * reference; it keeps the storage alive after base is released.
 * Errors: DISP_ERR_INVALID_ARG (NULL or opaque base, NULL sizes with
 * ndim > 0, NULL out, bad shape, out of the storage's bounds),
 * DISP_ERR_NO_MEMORY. Thread-safe.
 */
DISP_API disp_status disp_tensor_new_view(disp_tensor *base, const int64_t *sizes,
                                          const int64_t *strides, int ndim, int64_t offset,
                                          disp_tensor **out);

/* disp_tensor_retain - add a reference; returns t (NULL for NULL). Thread-safe. */
DISP_API disp_tensor *disp_tensor_retain(disp_tensor *t);

/*
 * disp_tensor_release - drop a reference (NULL ok). At zero: the autograd
 * meta is destroyed, the opaque handle released, the storage and version
 * counter references dropped. Thread-safe.
 */
DISP_API void disp_tensor_release(disp_tensor *t);

/* disp_tensor_refcount - the current count, for tests (0 for NULL). Thread-safe. */
DISP_API size_t disp_tensor_refcount(const disp_tensor *t);

/*
 * Getters. The tensor is borrowed; pointers returned are borrowed and valid
 * while the tensor lives and its shape is not changed. None allocates.
 * `t` must not be NULL: a getter of a pointer then returns NULL and sets
 * "<getter>: t is NULL", a getter of a value returns "none" (Note [Tensor
 * core NULL arguments]: 0, the empty key set, DISP_DTYPE_COUNT,
 * DISP_LAYOUT_COUNT, device {DISP_NUM_BACKENDS, -1}). Thread-safe among
 * readers; not synchronized with a thread that changes the tensor
 * (set_keyset, set_requires_grad, a later resize_).
 */
DISP_API int disp_tensor_ndim(const disp_tensor *t);
/* The sizes array (ndim entries; not NULL, even for 0-dim). */
DISP_API const int64_t *disp_tensor_sizes(const disp_tensor *t);
/* The strides array (elements), or NULL for tensors without strides (opaque). */
DISP_API const int64_t *disp_tensor_strides(const disp_tensor *t);
/*
 * disp_tensor_size / disp_tensor_stride - one dimension, negative dims
 * counting from the end. Errors: DISP_ERR_INVALID_ARG ("Dimension out of
 * range (expected to be in range of [-2, 1], but got 2)"; for stride also
 * "opaque tensors do not have strides"; a NULL t or out:
 * "disp_tensor_size: out is NULL").
 */
DISP_API disp_status disp_tensor_size(const disp_tensor *t, int64_t dim, int64_t *out);
DISP_API disp_status disp_tensor_stride(const disp_tensor *t, int64_t dim, int64_t *out);
/* In elements. 0 for opaque tensors. */
DISP_API int64_t disp_tensor_storage_offset(const disp_tensor *t);
DISP_API disp_dtype disp_tensor_dtype(const disp_tensor *t);
DISP_API disp_layout disp_tensor_layout(const disp_tensor *t);
DISP_API disp_device disp_tensor_device(const disp_tensor *t);
DISP_API disp_keyset disp_tensor_keyset(const disp_tensor *t);

/*
 * disp_tensor_keys - the same, inline, for the typed-call fast path: a
 * tensor's key set is the first member of the object, a guarantee of the
 * ABI. `t` must not be NULL. Thread-safe (while no one changes the keys).
 */
static inline disp_keyset disp_tensor_keys(const disp_tensor *t) { return *(const disp_keyset *)(const void *)t; }
/* Product of the sizes (1 for 0-dim). */
DISP_API int64_t disp_tensor_numel(const disp_tensor *t);
/* Bytes per element. */
DISP_API size_t disp_tensor_itemsize(const disp_tensor *t);
/*
 * disp_tensor_data_ptr - the first element: storage data + offset *
 * itemsize. NULL for meta and opaque tensors and when the storage has no
 * memory (zero bytes). Borrowed.
 */
DISP_API void *disp_tensor_data_ptr(const disp_tensor *t);
/* The storage, or NULL for opaque tensors. Borrowed. */
DISP_API disp_storage *disp_tensor_storage(const disp_tensor *t);
/* The backend handle of an opaque tensor, else NULL. Borrowed. */
DISP_API void *disp_tensor_opaque_handle(const disp_tensor *t);
/* PyTorch's is_contiguous(); 0 for tensors without strides (opaque). */
DISP_API int disp_tensor_is_contiguous(const disp_tensor *t);
/* Whether the tensor was created in inference mode (or views one that was). */
DISP_API int disp_tensor_is_inference(const disp_tensor *t);

/*
 * disp_tensor_version - the version counter shared with its views (bumped
 * by in-place updates). 0 for inference tensors, which have none.
 * Thread-safe (atomic).
 */
DISP_API uint64_t disp_tensor_version(const disp_tensor *t);

/*
 * disp_tensor_bump_version - record an in-place update: increments the
 * counter shared with the tensor's views. For an inference tensor it is a
 * no-op inside inference mode and an error outside (PyTorch: "Inplace
 * update to inference tensor outside InferenceMode is not allowed...").
 * Errors: DISP_ERR_INVALID_ARG (also for a NULL t). Thread-safe (atomic).
 */
DISP_API disp_status disp_tensor_bump_version(disp_tensor *t);

/*
 * disp_tensor_set_keyset - replace the key set (for backends that need
 * special keys). NULL t: nothing happens. Not thread-safe: no other
 * thread may use t meanwhile.
 */
DISP_API void disp_tensor_set_keyset(disp_tensor *t, disp_keyset keys);

/* disp_tensor_requires_grad - the requires_grad flag. */
DISP_API int disp_tensor_requires_grad(const disp_tensor *t);

/*
 * disp_tensor_set_requires_grad - set the flag. Errors (DISP_ERR_INVALID_ARG,
 * flag unchanged): "only Tensors of floating point dtype can require
 * gradients"; "Setting requires_grad=True on inference tensor outside
 * InferenceMode is not allowed."; "disp_tensor_set_requires_grad: t is
 * NULL". Not thread-safe for the same tensor.
 */
DISP_API disp_status disp_tensor_set_requires_grad(disp_tensor *t, int requires_grad);

#ifdef __cplusplus
}
#endif

#endif /* DISP_TENSOR_H */
