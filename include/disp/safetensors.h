/*
 * disp/safetensors.h - checkpoints in the safetensors format
 * (huggingface/safetensors): a named set of tensors plus string metadata,
 * saved to and loaded from files that PyTorch users exchange.
 *
 *   disp_safetensors *set = NULL;
 *   disp_safetensors_new(&set);
 *   disp_safetensors_add(set, "w", w);                 // retains w
 *   disp_safetensors_set_metadata(set, "step", "1000");
 *   disp_safetensors_save(set, "ckpt.safetensors");
 *   disp_safetensors_free(set);
 *
 *   disp_safetensors_load("ckpt.safetensors", &set);
 *   disp_tensor *w2 = disp_safetensors_get(set, "w");  // borrowed
 *
 * Note [What the reader accepts]
 * A file is 8 bytes of little-endian header length N, N bytes of header
 * (UTF-8 JSON), then the data buffer. The reader accepts exactly the files
 * the reference implementation (the Rust crate `safetensors`,
 * SafeTensors::deserialize) accepts, except where listed below, and fails
 * every other with DISP_ERR_IO and a message naming the file, the tensor
 * when there is one, and the cause:
 *   - the file has at least 8 bytes; N <= 100,000,000; 8 + N <= file size;
 *   - the N header bytes are valid UTF-8 (padding included) and one JSON
 *     value with only whitespace around it (leading whitespace is accepted:
 *     the reference's "must start with '{'" check is commented out);
 *   - that value is an object. Its key "__metadata__" is null or an object
 *     whose values are all strings; every other key is a tensor name whose
 *     value is an object with "dtype" (a string), "shape" (an array of
 *     non-negative integers) and "data_offsets" (an array of exactly two
 *     non-negative integers). Other fields are ignored, as serde ignores
 *     them; the array form [dtype, shape, data_offsets] serde also takes
 *     for a struct is accepted;
 *   - dtype is one of the reference's names; F64 F32 F16 BF16 I64 I32 I16
 *     I8 U8 BOOL load, the others (U16 U32 U64 F8_E5M2 F8_E4M3) are named
 *     in an error as having no libdispatch dtype;
 *   - with the tensors sorted by data_offsets, each begins where the one
 *     before ends (the first at 0: no gap, no overlap; the JSON order does
 *     not matter), end >= begin, the shape's product (left to right) times
 *     the element size does not overflow 64 bits and equals end - begin;
 *   - the last end equals the data buffer's length (nothing missing, no
 *     trailing bytes).
 * Deliberate differences (each is also an error): a duplicate tensor name
 * (serde keeps the last one silently; here the file is ambiguous), a name
 * or string with "\u0000" (not a C string), an integer above INT64_MAX
 * (jansson's limit; no such shape or offset fits a file anyway), more than
 * DISP_TENSOR_MAX_DIMS dimensions, and a shape whose size or strides do
 * not fit int64_t (e.g. [0, 2^32, 2^32]: no bytes, but PyTorch could not
 * make that tensor either): "libdispatch cannot make this tensor".
 *
 * Loading maps the file (mmap, private: writing to a loaded tensor never
 * changes the file) and each tensor whose data is aligned for its dtype
 * borrows the mapping without a copy; the others (and zero-size tensors)
 * are copied into their own storage. The mapping goes when the last
 * tensor using it and the set are released. Another process truncating
 * the file while it is mapped is not guarded against (SIGBUS), as with
 * any mmap. Data are little-endian, as the format says; big-endian hosts
 * are not supported.
 *
 * Saving writes what the reference writer writes: tensors sorted by
 * element size (largest first), then name; the header compact JSON padded
 * with spaces to a multiple of 8 bytes, so every tensor's data is aligned
 * for its dtype. Tensors must be CPU tensors with storage (a tensor on
 * another device is refused, not copied: the caller chooses when to pay
 * for the transfer); non-contiguous tensors are written contiguously.
 */
#ifndef DISP_SAFETENSORS_H
#define DISP_SAFETENSORS_H

#include <stddef.h>

#include "export.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A named set of tensors with string metadata. Opaque. Not thread-safe:
 * one thread changes a set at a time; concurrent readers are fine. */
typedef struct disp_safetensors disp_safetensors;

/* The reference reader's limit on the header length, in bytes. */
#define DISP_SAFETENSORS_MAX_HEADER 100000000u

/*
 * disp_safetensors_new - an empty set, to fill and save. *out owns it;
 * free it with disp_safetensors_free. Errors: DISP_ERR_INVALID_ARG (NULL
 * out), DISP_ERR_NO_MEMORY. Thread-safe.
 */
DISP_API disp_status disp_safetensors_new(disp_safetensors **out);

/*
 * disp_safetensors_free - release the set, its references to its tensors
 * and its metadata (NULL ok). Tensors the caller retained stay valid (a
 * loaded tensor keeps the file's mapping alive). Not thread-safe.
 */
DISP_API void disp_safetensors_free(disp_safetensors *set);

/*
 * disp_safetensors_add - add tensor `t` under `name` (copied); the set
 * takes its own reference to t (its data are read at save time).
 * Errors, set unchanged: DISP_ERR_INVALID_ARG (NULL argument, empty
 * name, the reserved name "__metadata__"), DISP_ERR_DUPLICATE (the name
 * is taken), DISP_ERR_NO_MEMORY. Not thread-safe.
 */
DISP_API disp_status disp_safetensors_add(disp_safetensors *set, const char *name,
                                          disp_tensor *t);

/*
 * disp_safetensors_set_metadata - set __metadata__[key] = value (both
 * copied; an existing key gets the new value). Errors, set unchanged:
 * DISP_ERR_INVALID_ARG (NULL argument), DISP_ERR_NO_MEMORY. Not
 * thread-safe.
 */
DISP_API disp_status disp_safetensors_set_metadata(disp_safetensors *set, const char *key,
                                                   const char *value);

/*
 * Reading a set. disp_safetensors_count: the number of tensors (0 for
 * NULL). disp_safetensors_name / disp_safetensors_tensor: the i-th
 * (0 <= i < count; a loaded set is in file order, a built one in the order
 * added), borrowed, valid while the set lives (retain the tensor to keep
 * it longer); NULL with a message for i out of range. disp_safetensors_get: the tensor
 * named `name` (borrowed), NULL when absent. A NULL set or name: NULL and
 * the message "<function>: set is NULL" (Note [NULL arguments]); count of
 * NULL is 0. Thread-safe while nobody changes the set.
 */
DISP_API size_t disp_safetensors_count(const disp_safetensors *set);
DISP_API const char *disp_safetensors_name(const disp_safetensors *set, size_t i);
DISP_API disp_tensor *disp_safetensors_tensor(const disp_safetensors *set, size_t i);
DISP_API disp_tensor *disp_safetensors_get(const disp_safetensors *set, const char *name);

/*
 * The metadata: count (0 for NULL), the i-th key and value (borrowed
 * strings, valid while the set lives and the key is not set again; NULL
 * with a message out of range), and the value of `key` (NULL when absent; NULL arguments
 * as above). A loaded set keeps the file's order. Thread-safe while nobody
 * changes the set.
 */
DISP_API size_t disp_safetensors_metadata_count(const disp_safetensors *set);
DISP_API const char *disp_safetensors_metadata_key(const disp_safetensors *set, size_t i);
DISP_API const char *disp_safetensors_metadata_value(const disp_safetensors *set, size_t i);
DISP_API const char *disp_safetensors_metadata_get(const disp_safetensors *set,
                                                   const char *key);

/*
 * disp_safetensors_save - write the set to `path`: first to a temporary
 * file beside it, renamed over `path` once complete, so a failed save
 * leaves an existing checkpoint whole. Errors (no file left behind):
 * DISP_ERR_INVALID_ARG (NULL argument; a tensor not on the CPU, without
 * storage, or of a dtype safetensors has no name for (quint8) - the
 * message names it), DISP_ERR_IO (cannot create, write or rename: the
 * message has the path and the system's reason), DISP_ERR_NO_MEMORY.
 * Thread-safe while nobody changes the set or writes its tensors.
 */
DISP_API disp_status disp_safetensors_save(const disp_safetensors *set, const char *path);

/*
 * disp_safetensors_serialize - the bytes disp_safetensors_save writes, in
 * memory: *out (malloc'ed, the caller free()s it) and *len. Errors as
 * disp_safetensors_save (nothing allocated is left). Thread-safe as
 * disp_safetensors_save.
 */
DISP_API disp_status disp_safetensors_serialize(const disp_safetensors *set, void **out,
                                                size_t *len);

/*
 * disp_safetensors_load - read the file at `path` (Note [What the reader
 * accepts]). *out owns a new set of CPU tensors (not requiring grad), in
 * file order, and its metadata. Errors (*out untouched):
 * DISP_ERR_INVALID_ARG (NULL argument), DISP_ERR_IO (cannot open, stat or
 * map the file; malformed content: "disp_safetensors_load: PATH: tensor
 * 'w': CAUSE"), DISP_ERR_NO_MEMORY. Thread-safe.
 */
DISP_API disp_status disp_safetensors_load(const char *path, disp_safetensors **out);

/*
 * disp_safetensors_load_buffer - the same from `len` bytes at `data`
 * (copied: the set never points into the caller's memory). `label` names
 * the buffer in messages (NULL: "<buffer>"). Errors as
 * disp_safetensors_load; data may be NULL only when len is 0 (which is a
 * malformed file, DISP_ERR_IO). Thread-safe.
 */
DISP_API disp_status disp_safetensors_load_buffer(const void *data, size_t len,
                                                  const char *label, disp_safetensors **out);

/*
 * disp_safetensors_dtype_name - the safetensors name of a dtype ("F32",
 * "BF16", "BOOL"...); NULL with a message (DISP_ERR_INVALID_ARG) for one
 * the format cannot hold (quint8) or outside the enum. Static string.
 * Thread-safe.
 */
DISP_API const char *disp_safetensors_dtype_name(disp_dtype dt);

#ifdef __cplusplus
}
#endif

#endif /* DISP_SAFETENSORS_H */
