/*
 * disp/backend.h - what a backend provides and what it gets.
 *
 * Guide (placeholder; the final walkthrough is written with issue 11's
 * plugin loader): a backend on PrivateUse1 (or 2, 3)
 *   1. registers an allocator (tensor.h's disp_allocator, with its device
 *      side copy function) and device hooks (disp_device_hooks below);
 *   2. registers kernels on its dispatch key (library.h), writing the
 *      metadata kernels (resize_, set_, _copy_from_and_resize) with the
 *      setters below;
 *   3. reads its random generator with disp_device_generator.
 * The library never dereferences the backend's memory on the host: printing,
 * comparing and item() copy through the hooks.
 *
 * Note [Device hooks]
 * One table of hooks per device type, as PyTorch's DeviceGuardImplInterface
 * registered per DeviceType. CPU and Meta have built-in hooks that cannot be
 * replaced (one device, host memory / no memory); every other type has none
 * until a backend registers them. Registering copies the struct; it replaces
 * the previous hooks, NULL restores the built-in state (none). A published
 * table is immutable and never freed while the process lives, so a reader
 * holding an old one stays safe. Hooks are called with no library lock held.
 */
#ifndef DISP_BACKEND_H
#define DISP_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "keyset.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ==== device hooks ====================================================== */

/*
 * The hooks of one device type. device_count, get_device and set_device
 * are required; the rest may be NULL (no synchronize: nothing to wait for;
 * no copy hook: that direction fails with an error naming the device).
 * A hook returning a status other than DISP_OK may set the message with
 * disp_set_error; when it does not, the library words one. `ctx` is passed
 * to every hook, not owned; it must outlive the registration.
 *   device_count  - devices of this type (PyTorch's deviceCount; >= 0).
 *   get_device    - the calling thread's current device index (>= 0).
 *   set_device    - make `index` current on the calling thread.
 *   synchronize   - wait for all work queued on device `index`.
 *   copy_h2d      - host `src` to device memory `dst` on `dst_dev`.
 *   copy_d2h      - device memory `src` on `src_dev` to host `dst`.
 *   copy_d2d      - between two devices of this type (or within one).
 * Copies move nbytes plain bytes; pointers are what the allocator returned
 * plus byte offsets.
 */
typedef struct disp_device_hooks {
  int (*device_count)(void *ctx);
  int (*get_device)(void *ctx);
  disp_status (*set_device)(int index, void *ctx);
  disp_status (*synchronize)(int index, void *ctx);
  disp_status (*copy_h2d)(void *dst, disp_device dst_dev, const void *src, size_t nbytes, void *ctx);
  disp_status (*copy_d2h)(void *dst, const void *src, disp_device src_dev, size_t nbytes, void *ctx);
  disp_status (*copy_d2d)(void *dst, disp_device dst_dev, const void *src, disp_device src_dev,
                          size_t nbytes, void *ctx);
  void *ctx;
} disp_device_hooks;

/*
 * disp_device_hooks_register - install (copied) the hooks of device type
 * `type` (Note [Device hooks]); h == NULL removes them. Errors
 * (DISP_ERR_INVALID_ARG, nothing changed): a type that is no disp_backend;
 * CPU or Meta ("the cpu device hooks are built in"); a missing required
 * hook. DISP_ERR_NO_MEMORY. Thread-safe.
 */
DISP_API disp_status disp_device_hooks_register(disp_backend type, const disp_device_hooks *h);

/*
 * disp_device_hooks_get - the hooks of `type`: borrowed, valid for the life
 * of the process; NULL when none are registered (CPU and Meta answer NULL
 * too: their hooks are built in), or with a message for a type that is no
 * disp_backend. Thread-safe.
 */
DISP_API const disp_device_hooks *disp_device_hooks_get(disp_backend type);

/*
 * disp_device_count - how many devices of `type` exist: 1 for CPU and Meta,
 * the device_count hook otherwise, 0 without hooks (as torch.cuda's
 * device_count on a machine without CUDA) or for an invalid type.
 * Thread-safe.
 */
DISP_API int disp_device_count(disp_backend type);

/*
 * disp_device_current - the calling thread's current device of `type`
 * into *out ({CPU, 0} for CPU, {Meta, 0} for Meta). Errors
 * (DISP_ERR_INVALID_ARG): invalid type, no hooks registered, a hook
 * failure; NULL out. Thread-safe (the backend's state is per thread).
 */
DISP_API disp_status disp_device_current(disp_backend type, disp_device *out);

/*
 * disp_device_set_current - make `dev` the calling thread's current device
 * of its type (index -1: nothing to do). Errors (DISP_ERR_INVALID_ARG): bad
 * device, no hooks, index not below the device count ("Device index
 * out of range: privateuseone:3 (2 devices)"), a hook failure. Thread-safe.
 */
DISP_API disp_status disp_device_set_current(disp_device dev);

/*
 * disp_device_exchange - set `dev` as current and write the previous
 * current device of that type to *prev (PyTorch's exchangeDevice; the set
 * is skipped when they are the same). Errors as disp_device_set_current,
 * and a NULL prev; *prev untouched on error. Thread-safe.
 */
DISP_API disp_status disp_device_exchange(disp_device dev, disp_device *prev);

/*
 * A scoped device guard (c10::DeviceGuard) for C: begin makes `dev` current
 * and remembers the previous device; end restores it. Pair them on every
 * path. A guard on CPU, Meta or index -1 changes nothing (and needs no
 * hooks). The struct is the caller's (usually on the stack); its fields are
 * read-only for the caller.
 */
typedef struct disp_device_guard {
  disp_device original; /* restored by end */
  disp_device current;  /* set by begin */
  int active;           /* begin succeeded and end has not run */
} disp_device_guard;

/*
 * disp_device_guard_begin - see above. Errors as disp_device_exchange, and
 * a NULL g; on error the guard is inactive (end does nothing) and the
 * current device unchanged. Thread-safe for distinct guards.
 */
DISP_API disp_status disp_device_guard_begin(disp_device_guard *g, disp_device dev);

/*
 * disp_device_guard_end - restore the device current before begin; a no-op
 * for an inactive guard. Errors: a failing set_device hook (the guard is
 * inactive afterwards either way); DISP_ERR_INVALID_ARG for a NULL g.
 */
DISP_API disp_status disp_device_guard_end(disp_device_guard *g);

/*
 * disp_device_synchronize - wait for the work queued on `dev` (index -1:
 * the current device); CPU, Meta and hooks without synchronize return at
 * once. Errors: bad device, no hooks registered, a hook failure.
 * Thread-safe.
 */
DISP_API disp_status disp_device_synchronize(disp_device dev);

/*
 * disp_device_copy - copy nbytes from `src` on `src_dev` to `dst` on
 * `dst_dev`: memcpy between host devices (CPU), the h2d, d2h or d2d hook of
 * the non-host side otherwise. Meta memory does not exist: copying to or
 * from it is an error unless nbytes is 0. Errors (DISP_ERR_INVALID_ARG):
 * bad devices, NULL dst or src with nbytes > 0, two different non-CPU
 * device types, a missing hook ("no device-to-host copy hook registered for
 * device type privateuseone"), a hook failure. Thread-safe.
 */
DISP_API disp_status disp_device_copy(void *dst, disp_device dst_dev, const void *src, disp_device src_dev,
                                      size_t nbytes);

/* ==== random generators ================================================= */

/*
 * A random generator of one device (PyTorch's per-device default
 * generators): a counter-based stream, draw i = f(seed, i). disp_manual_seed
 * (random.h) seeds every device's generator, as torch.manual_seed does.
 * Opaque; owned by the library for the life of the process.
 */
typedef struct disp_generator disp_generator;

/* A generator's whole state (get_state / set_state round-trips it). */
typedef struct disp_generator_state {
  uint64_t seed;
  uint64_t offset; /* draws taken since the seed was set */
} disp_generator_state;

/* The most devices per device type with a generator or memory statistics. */
#define DISP_MAX_DEVICES_PER_TYPE 64

/*
 * disp_device_generator - the generator of `dev` (borrowed; process
 * lifetime). Index -1 means the current device (CPU and Meta: 0). The
 * built-in random operators draw from the generator of the device they
 * create on. Errors (NULL with the message): bad device, index -1 without
 * hooks, index >= DISP_MAX_DEVICES_PER_TYPE. Thread-safe.
 */
DISP_API disp_generator *disp_device_generator(disp_device dev);

/*
 * disp_generator_manual_seed - restart g's stream from `seed`.
 * Errors: DISP_ERR_INVALID_ARG for a NULL g. Thread-safe.
 */
DISP_API disp_status disp_generator_manual_seed(disp_generator *g, uint64_t seed);

/* disp_generator_initial_seed - the seed last set; 0 for a NULL g. Thread-safe. */
DISP_API uint64_t disp_generator_initial_seed(const disp_generator *g);

/*
 * disp_generator_get_state / disp_generator_set_state - read or restore
 * the state; after set_state the generator draws what it drew after the
 * matching get_state. Errors: DISP_ERR_INVALID_ARG for NULL arguments.
 * Thread-safe (a state read while another thread draws is one of the two).
 */
DISP_API disp_status disp_generator_get_state(const disp_generator *g, disp_generator_state *out);
DISP_API disp_status disp_generator_set_state(disp_generator *g, const disp_generator_state *state);

/*
 * disp_generator_reserve - take n draws for a kernel: writes the seed and
 * the index of the first draw to *out (its draws are out->offset ..
 * out->offset + n - 1 of out->seed's stream) and advances the generator,
 * so concurrent kernels never share a draw. Errors: DISP_ERR_INVALID_ARG
 * for NULL arguments. Thread-safe.
 */
DISP_API disp_status disp_generator_reserve(disp_generator *g, uint64_t n, disp_generator_state *out);

/*
 * disp_generator_draw - draw i of seed's stream: 64 random bits (the
 * function the built-in generator uses, so a backend kernel can match the
 * CPU's values). Thread-safe.
 */
DISP_API uint64_t disp_generator_draw(uint64_t seed, uint64_t i);

/* ==== metadata kernels ================================================== */

/*
 * What a backend's resize_, set_ and _copy_from_and_resize kernels need.
 * They change geometry only: the key set, the version counter (ADInplaceOrView
 * bumps it) and the autograd slot stay; every view sharing the storage keeps
 * seeing the storage's (new) memory. None is thread-safe for the tensor or
 * storage it changes (PyTorch's TensorImpl setters are not either).
 */

/*
 * disp_storage_resize - make st hold nbytes (PyTorch's resize_bytes): new
 * memory from the allocator that made st, the common prefix copied with
 * that allocator's copy function (on the device; the host never reads it),
 * the old block freed. Tensors viewing st - all of them - see the new
 * memory. Errors (DISP_ERR_INVALID_ARG, st unchanged): NULL st; st wraps
 * caller memory ("Trying to resize storage that is not resizable"); data
 * to keep but the allocator has no copy function; DISP_ERR_NO_MEMORY.
 */
DISP_API disp_status disp_storage_resize(disp_storage *st, size_t nbytes);

/*
 * disp_tensor_set_sizes_strides - give t new sizes, strides (NULL:
 * contiguous) and storage offset (elements), all within its storage
 * (PyTorch's set_sizes_and_strides plus set_storage_offset). Errors
 * (DISP_ERR_INVALID_ARG, t unchanged): NULL t, NULL sizes with ndim > 0,
 * a tensor without storage, bad shape, negative offset, out of the
 * storage's bounds ("setStorage: sizes [4], strides [1], storage offset 0,
 * and itemsize 4 requiring a storage size of 16 are out of bounds for
 * storage of size 8"); DISP_ERR_NO_MEMORY.
 */
DISP_API disp_status disp_tensor_set_sizes_strides(disp_tensor *t, const int64_t *sizes, const int64_t *strides,
                                                   int ndim, int64_t storage_offset);

/*
 * disp_tensor_set_storage - make t view `st` (borrowed; t takes a
 * reference and drops its old storage) at storage_offset with sizes and
 * strides (NULL: contiguous): the body of every set_ overload. Errors
 * (DISP_ERR_INVALID_ARG, t unchanged): NULL t or st, NULL sizes with
 * ndim > 0, a tensor without storage, st on another device type ("Attempted
 * to set the storage of a tensor on device "privateuseone:0" to a storage
 * on different device "cpu".  This is no longer allowed; the devices must
 * match."), bad geometry or out of st's bounds; DISP_ERR_NO_MEMORY.
 */
DISP_API disp_status disp_tensor_set_storage(disp_tensor *t, disp_storage *st, int64_t storage_offset,
                                             const int64_t *sizes, const int64_t *strides, int ndim);

/*
 * disp_tensor_resize - resize_'s body: give t `sizes` with `strides` (NULL:
 * contiguous) at its storage offset, first growing its storage through
 * disp_storage_resize when it is too small (it never shrinks, as PyTorch's
 * resize_). Errors: those of disp_storage_resize and
 * disp_tensor_set_sizes_strides, t unchanged.
 */
DISP_API disp_status disp_tensor_resize(disp_tensor *t, const int64_t *sizes, const int64_t *strides, int ndim);

/* ==== memory statistics ================================================= */

/*
 * What one device's allocator has handed out to storages (torch.cuda's
 * memory_allocated, max_memory_allocated and the allocation counts of
 * memory_stats), counted by the library at every storage allocation, resize
 * and free, for every device type but Meta (no memory). Memory a storage
 * wraps (disp_storage_new_with_data) is not counted: no allocator made it.
 */
typedef struct disp_memory_stats {
  int64_t allocated_bytes; /* held now */
  int64_t peak_bytes;      /* most held at once since the last reset */
  int64_t num_allocs;      /* allocations ever made (resizes included) */
  int64_t num_frees;       /* of which freed */
  int64_t live_blocks;     /* num_allocs - num_frees */
} disp_memory_stats;

/*
 * disp_memory_stats_get - the statistics of `dev` (index -1: the current
 * device; CPU and Meta: 0). Errors (DISP_ERR_INVALID_ARG, *out untouched):
 * bad device, index -1 without hooks, index >= DISP_MAX_DEVICES_PER_TYPE,
 * NULL out. Thread-safe (atomic counters; the fields are read one by one).
 */
DISP_API disp_status disp_memory_stats_get(disp_device dev, disp_memory_stats *out);

/*
 * disp_memory_reset_peak - set dev's peak to what it holds now
 * (torch.cuda.reset_peak_memory_stats). Errors as disp_memory_stats_get.
 * Thread-safe.
 */
DISP_API disp_status disp_memory_reset_peak(disp_device dev);

#ifdef __cplusplus
}
#endif

#endif /* DISP_BACKEND_H */
