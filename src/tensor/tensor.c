/*
 * tensor.c - the tensor object: shape bookkeeping, default key sets,
 * constructors and the refcount. Getters live in tensor_access.c.
 *
 * Every constructor follows one pattern: validate everything first, then
 * make the struct with all owned pointers NULL, fill it in, and on any
 * failure hand it to tensor_free, which releases exactly what was set. A
 * caller's opaque handle is stored only after the last fallible step, so a
 * failed constructor never takes it.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "disp/guard.h"
#include "argcheck_internal.h"
#include "strbuf_internal.h"
#include "checked_math_internal.h"
#include "objcache.h"
#include "tensor_internal.h"

/* ---- shapes ------------------------------------------------------------ */

void disp__format_int_list(disp_strbuf *b, const int64_t *v, int n) {
  disp__strbuf_appendc(b, '[');
  for (int i = 0; i < n; i++) disp__strbuf_appendf(b, "%s%lld", i ? ", " : "", (long long)v[i]);
  disp__strbuf_appendc(b, ']');
}

/* Fail with "<prefix><list><suffix>" - the messages that print a shape. */
static disp_status fail_with_list(const char *prefix, const int64_t *v, int n, const char *suffix) {
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__strbuf_append(&b, prefix);
  disp__format_int_list(&b, v, n);
  disp__strbuf_append(&b, suffix);
  disp_status s = disp__fail(DISP_ERR_INVALID_ARG, "%s", disp__strbuf_cstr(&b));
  disp__strbuf_free(&b);
  return s;
}

static disp_status fail_overflow(const int64_t *sizes, const int64_t *strides, int ndim) {
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__strbuf_append(&b, "Storage size calculation overflowed with sizes=");
  disp__format_int_list(&b, sizes, ndim);
  if (strides) {
    disp__strbuf_append(&b, " and strides=");
    disp__format_int_list(&b, strides, ndim);
  }
  disp_status s = disp__fail(DISP_ERR_INVALID_ARG, "%s", disp__strbuf_cstr(&b));
  disp__strbuf_free(&b);
  return s;
}

void disp__tensor_contiguous_strides(const int64_t *sizes, int ndim, int64_t *out) {
  /* A size-0 dimension counts as 1, so strides stay meaningful (PyTorch's
   * empty(2, 0, 3) has strides (3, 3, 1)). Sizes were checked to have a
   * product that fits int64, and max(size, 1) cannot make it overflow. */
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    out[d] = s;
    s *= sizes[d] > 1 ? sizes[d] : 1;
  }
}

disp_status disp__tensor_check_shape(const char *op, const int64_t *sizes, const int64_t *strides,
                                     int ndim, int64_t *numel) {
  if (ndim < 0)
    return disp__fail(DISP_ERR_INVALID_ARG, "%s: the number of dimensions must be between 0 and %d, got %d",
                      op, DISP_TENSOR_MAX_DIMS, ndim);
  int checked_ndim;
  disp_status st = disp__check_ndim(op, (size_t)ndim, &checked_ndim);
  if (st != DISP_OK) return st;
  if (ndim > 0 && !sizes) return disp__fail(DISP_ERR_INVALID_ARG, "%s: sizes is NULL", op);
  for (int d = 0; d < ndim; d++) {
    if (sizes[d] < 0) {
      char prefix[96];
      snprintf(prefix, sizeof prefix, "Trying to create tensor with negative dimension %lld: ",
               (long long)sizes[d]);
      return fail_with_list(prefix, sizes, ndim, "");
    }
  }
  if (strides) {
    for (int d = 0; d < ndim; d++) {
      if (strides[d] < 0) {
        char prefix[96];
        snprintf(prefix, sizeof prefix, "%s: negative strides are not supported, got strides: ", op);
        return fail_with_list(prefix, strides, ndim, "");
      }
    }
  }
  /* The count must fit int64 even when a later size is 0: PyTorch checks
   * the full product too, and the storage size of a resize would overflow.
   * A contiguous allocation fails as 1.13's computeStorageNbytesContiguous
   * does; with strides given the storage size was already checked, and the
   * count fails as 1.13's TensorImpl::safe_compute_numel does. */
  int64_t n = 1;
  int zero = 0;
  for (int d = 0; d < ndim; d++) {
    if (sizes[d] == 0) {
      zero = 1;
      continue;
    }
    if (disp__mul_i64(n, sizes[d], &n)) {
      if (strides) return disp__fail(DISP_ERR_INVALID_ARG, "numel: integer multiplication overflow");
      return fail_overflow(sizes, NULL, ndim);
    }
  }
  if (numel) *numel = zero ? 0 : n;
  return DISP_OK;
}

disp_status disp__tensor_storage_nbytes(const int64_t *sizes, const int64_t *strides, int ndim,
                                        int64_t offset, size_t itemsize, size_t *out) {
  /* PyTorch's computeStorageNbytes: a tensor with no elements needs no
   * bytes, whatever its offset; otherwise 1 + sum((size - 1) * stride)
   * elements from the offset on. */
  for (int d = 0; d < ndim; d++) {
    if (sizes[d] == 0) {
      *out = 0;
      return DISP_OK;
    }
  }
  /* Sizes, strides and the offset are non-negative (checked), so every
   * term is exact in int64 or the total does not fit. */
  int64_t elems = 1, term, bytes;
  for (int d = 0; d < ndim; d++) {
    if (disp__mul_i64(sizes[d] - 1, strides[d], &term) || disp__add_i64(elems, term, &elems))
      return fail_overflow(sizes, strides, ndim);
  }
  if (disp__add_i64(elems, offset, &elems) || itemsize > (size_t)INT64_MAX ||
      disp__mul_i64(elems, (int64_t)itemsize, &bytes) || (uint64_t)bytes > (uint64_t)SIZE_MAX)
    return fail_overflow(sizes, strides, ndim);
  *out = (size_t)bytes;
  return DISP_OK;
}

static int compute_contiguous(const int64_t *sizes, const int64_t *strides, int ndim,
                              int64_t numel) {
  if (numel == 0) return 1;
  int64_t expected = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    if (sizes[d] == 1) continue; /* any stride is fine for a size-1 dim */
    if (strides[d] != expected) return 0;
    /* past INT64_MAX no stride can match: the tensor is not contiguous */
    if (disp__mul_i64(expected, sizes[d], &expected)) return 0;
  }
  return 1;
}

disp_status disp__tensor_set_sizes_strides(disp_tensor *t, const int64_t *sizes,
                                           const int64_t *strides, int ndim) {
  if (!t->has_strides) strides = NULL;
  int64_t numel;
  disp_status s = disp__tensor_check_shape("set_sizes_and_strides", sizes, strides, ndim, &numel);
  if (s != DISP_OK) return s;
  /* Copy through locals so the arguments may alias t's own arrays. */
  int64_t new_sizes[DISP_TENSOR_MAX_DIMS], new_strides[DISP_TENSOR_MAX_DIMS];
  if (ndim > 0) memcpy(new_sizes, sizes, (size_t)ndim * sizeof *sizes);
  if (strides && ndim > 0)
    memcpy(new_strides, strides, (size_t)ndim * sizeof *strides);
  else
    disp__tensor_contiguous_strides(sizes, ndim, new_strides); /* read before any write to t */

  int64_t *heap = NULL;
  if (ndim > DISP__TENSOR_INLINE_DIMS) {
    heap = disp__malloc(2 * (size_t)ndim * sizeof *heap);
    if (!heap) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory storing a tensor's sizes");
  }
  disp__free(t->heap_dims);
  t->heap_dims = heap;
  t->sizes = heap ? heap : t->inline_sizes;
  t->strides = heap ? heap + ndim : t->inline_strides;
  if (ndim > 0) {
    memcpy(t->sizes, new_sizes, (size_t)ndim * sizeof *new_sizes);
    memcpy(t->strides, new_strides, (size_t)ndim * sizeof *new_strides);
  }
  t->ndim = ndim;
  t->numel = numel;
  t->is_contiguous = t->has_strides && compute_contiguous(t->sizes, t->strides, ndim, numel);
  return DISP_OK;
}

/* ---- key sets ---------------------------------------------------------- */

static disp_keyset default_keyset_slow(disp_backend b, int sparse, int quantized, int inference) {
  disp_keyset ks = disp_keyset_empty();
  disp_key functionality = sparse ? DISP_KEY_SPARSE : quantized ? DISP_KEY_QUANTIZED : DISP_KEY_DENSE;
  ks = disp_keyset_add(ks, disp_key_for_backend(functionality, b));
  /* Inference tensors never see autograd (PyTorch removes
   * autograd_dispatch_keyset_with_ADInplaceOrView from them). */
  if (!inference) {
    ks = disp_keyset_add(ks, DISP_KEY_AD_INPLACE_OR_VIEW);
    ks = disp_keyset_add(ks, disp_key_for_backend(DISP_KEY_AUTOGRAD_FUNCTIONALITY, b));
  }
  /* Autocast keys stay on inference tensors; the TLS excluded set keeps
   * them inactive until autocast is enabled. */
  if (b == DISP_BACKEND_CPU)
    ks = disp_keyset_add(ks, DISP_KEY_AUTOCAST_CPU);
  else if (b == DISP_BACKEND_CUDA)
    ks = disp_keyset_add(ks, DISP_KEY_AUTOCAST_CUDA);
  else if (b == DISP_BACKEND_PRIVATEUSE1)
    ks = disp_keyset_add(ks, DISP_KEY_AUTOCAST_PRIVATEUSE1);
  return ks;
}

/* Every tensor made asks for its key set: a table of all 8 combinations per
 * backend, filled once (a benign race: every writer stores the same bits). */
static _Atomic uint64_t default_keysets[DISP_NUM_BACKENDS][8];

disp_keyset disp_tensor_default_keyset(disp_device dev, disp_dtype dt, disp_layout layout,
                                       int inference) {
  disp_keyset ks = disp_keyset_empty();
  if (!disp__device_type_valid(dev.type)) return ks;
  int sparse = layout == DISP_LAYOUT_SPARSE_COO, quantized = !sparse && disp_dtype_is_quantized(dt);
  int combo = sparse | quantized << 1 | (inference != 0) << 2;
  ks.repr = atomic_load_explicit(&default_keysets[dev.type][combo], memory_order_relaxed);
  if (!ks.repr) {
    ks = default_keyset_slow(dev.type, sparse, quantized, inference);
    atomic_store_explicit(&default_keysets[dev.type][combo], ks.repr, memory_order_relaxed);
  }
  return ks;
}

/* ---- life cycle -------------------------------------------------------- */

static disp_tensor *tensor_alloc(void) {
  /* malloc and a copy of a zero object, not calloc (which GCC would also make
   * of malloc + memset): calloc skips glibc's per-thread cache, and a small
   * tensor is made and freed by every op. */
  static const disp_tensor zero;
  disp_tensor *t = disp__cache_get(DISP__CACHE_TENSOR, sizeof *t);
  if (t) *t = zero;
  if (!t) return NULL;
  atomic_init(&t->refs, 1);
  t->sizes = t->inline_sizes;
  t->strides = t->inline_strides;
  t->has_strides = 1;
  return t;
}

/* Releases whatever t holds; safe on a partly built tensor. */
static void tensor_free(disp_tensor *t) {
  /* Autograd first: its meta may still look at the tensor's storage. */
  if (t->autograd_meta && t->autograd_meta_destroy) t->autograd_meta_destroy(t->autograd_meta);
  if (t->opaque_release) t->opaque_release(t->opaque_handle);
  disp_storage_release(t->storage);
  disp__version_counter_release(t->version);
  disp__free(t->heap_dims);
  disp__cache_put(DISP__CACHE_TENSOR, t);
}

static disp_status check_dtype(const char *op, disp_dtype dt) {
  if (!disp__dtype_valid(dt))
    return disp__fail(DISP_ERR_INVALID_ARG, "%s: invalid dtype %d", op, (int)dt);
  return DISP_OK;
}

/*
 * Build a strided tensor on `st` (borrowed). `vc` is the counter to share
 * (borrowed; NULL makes a fresh one unless the tensor is an inference
 * tensor). Shape, dtype and bounds are already checked.
 */
/* `numel` >= 0: the caller already checked sizes and strides (empty_impl,
 * checked_strides); when they fit inline they are copied without a second
 * check. */
static disp_status make_strided(disp_storage *st, int64_t offset, const int64_t *sizes,
                                const int64_t *strides, int ndim, int64_t numel, disp_dtype dt,
                                disp_keyset keys, disp_version_counter *vc, int inference,
                                disp_tensor **out) {
  disp_tensor *t = tensor_alloc();
  if (!t) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory creating a tensor");
  if (numel >= 0 && strides && ndim <= DISP__TENSOR_INLINE_DIMS) {
    for (int d = 0; d < ndim; d++) {
      t->inline_sizes[d] = sizes[d];
      t->inline_strides[d] = strides[d];
    }
    t->ndim = ndim;
    t->numel = numel;
    t->is_contiguous = (unsigned char)compute_contiguous(t->sizes, t->strides, ndim, numel);
  } else {
    disp_status s = disp__tensor_set_sizes_strides(t, sizes, strides, ndim);
    if (s != DISP_OK) {
      tensor_free(t);
      return s;
    }
  }
  if (vc) {
    t->version = disp__version_counter_retain(vc);
  } else if (!inference) {
    t->version = disp__version_counter_new();
    if (!t->version) {
      tensor_free(t);
      return disp__fail(DISP_ERR_NO_MEMORY, "out of memory creating a tensor");
    }
  }
  t->storage = disp_storage_retain(st);
  t->storage_offset = offset;
  t->dtype = dt;
  t->layout = DISP_LAYOUT_STRIDED;
  t->device = st->device;
  t->is_inference = (unsigned char)(inference != 0);
  t->keyset = disp_keyset_is_empty(keys)
                  ? disp_tensor_default_keyset(st->device, dt, DISP_LAYOUT_STRIDED, inference)
                  : keys;
  *out = t;
  return DISP_OK;
}

/* PyTorch's checkInBoundsForStorage (strides given). */
static disp_status check_bounds(const disp_storage *st, int64_t offset, const int64_t *sizes,
                                const int64_t *strides, int ndim, disp_dtype dt) {
  if (offset < 0)
    return disp__fail(DISP_ERR_INVALID_ARG, "Tensor: invalid storage offset %lld", (long long)offset);
  size_t need;
  size_t itemsize = disp_dtype_itemsize(dt);
  disp_status s = disp__tensor_storage_nbytes(sizes, strides, ndim, offset, itemsize, &need);
  if (s != DISP_OK) return s;
  if (need == 0 || need <= st->nbytes) return DISP_OK;
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__strbuf_append(&b, "setStorage: sizes ");
  disp__format_int_list(&b, sizes, ndim);
  disp__strbuf_append(&b, ", strides ");
  disp__format_int_list(&b, strides, ndim);
  disp__strbuf_appendf(&b,
                       ", storage offset %lld, and itemsize %zu requiring a storage size of %zu "
                       "are out of bounds for storage of size %zu",
                       (long long)offset, itemsize, need, st->nbytes);
  s = disp__fail(DISP_ERR_INVALID_ARG, "%s", disp__strbuf_cstr(&b));
  disp__strbuf_free(&b);
  return s;
}

/* A fresh contiguous tensor's strides, element count and bytes in one pass
 * over its sizes (what check_shape, contiguous_strides and storage_nbytes
 * compute for it). 0 when anything is out of the ordinary - ndim out of
 * range, a negative size, a count past int64 - for the full checks to find
 * and word. */
static int contiguous_geometry(const int64_t *sizes, int ndim, size_t itemsize, int64_t *strides,
                               int64_t *numel, size_t *nbytes) {
  if (ndim < 0 || ndim > DISP_TENSOR_MAX_DIMS) return 0;
  int64_t n = 1, bytes;
  int zero = 0;
  for (int d = ndim - 1; d >= 0; d--) {
    if (sizes[d] < 0) return 0;
    strides[d] = n; /* a size-0 dim counts as 1, as in contiguous_strides */
    if (sizes[d] == 0) zero = 1;
    else if (disp__mul_i64(n, sizes[d], &n)) return 0;
  }
  if (disp__mul_i64(n, (int64_t)itemsize, &bytes)) return 0;
  *numel = zero ? 0 : n;
  *nbytes = zero ? 0 : (size_t)bytes;
  return 1;
}

static disp_status empty_impl(const char *op, const int64_t *sizes, const int64_t *strides,
                              int ndim, disp_dtype dt, disp_device dev, disp_tensor **out) {
  disp_status s = check_dtype(op, dt);
  if (s == DISP_OK) s = disp_device_validate(dev);
  if (s != DISP_OK) return s;
  int64_t numel = 0, contiguous[DISP_TENSOR_MAX_DIMS];
  size_t nbytes, itemsize = disp_dtype_itemsize(dt);
  if (strides || !contiguous_geometry(sizes, ndim, itemsize, contiguous, &numel, &nbytes)) {
    if ((s = disp__tensor_check_shape(op, sizes, strides, ndim, &numel)) != DISP_OK) return s;
    if (!strides) disp__tensor_contiguous_strides(sizes, ndim, contiguous);
    s = disp__tensor_storage_nbytes(sizes, strides ? strides : contiguous, ndim, 0, itemsize, &nbytes);
    if (s != DISP_OK) return s;
  }
  if (!strides) strides = contiguous;
  disp_storage *st;
  s = disp_storage_new(nbytes, dev, &st);
  if (s != DISP_OK) return s;
  s = make_strided(st, 0, sizes, strides, ndim, numel, dt, disp_keyset_empty(), NULL,
                   disp_inference_mode_enabled(), out);
  disp_storage_release(st); /* the tensor holds its own reference */
  return s;
}

disp_status disp_tensor_empty(const int64_t *sizes, int ndim, disp_dtype dt, disp_device dev,
                              disp_tensor **out) {
  DISP_REFUSE_NULL_ARRAY(sizes, ndim);
  DISP_REFUSE_NULL(out);
  return empty_impl("empty", sizes, NULL, ndim, dt, dev, out);
}

disp_status disp_tensor_empty_strided(const int64_t *sizes, const int64_t *strides, int ndim,
                                      disp_dtype dt, disp_device dev, disp_tensor **out) {
  DISP_REFUSE_NULL_ARRAY(sizes, ndim);
  DISP_REFUSE_NULL_ARRAY(strides, ndim);
  DISP_REFUSE_NULL(out);
  return empty_impl("empty_strided", sizes, strides, ndim, dt, dev, out);
}

/* A view's shape checked, its element count in *numel and its strides in
 * *strides: the caller's, or when NULL the contiguous ones, written to
 * `contiguous`. The tensor is then built without a second check. */
static disp_status checked_strides(const char *op, const int64_t *sizes, const int64_t **strides, int ndim,
                                   int64_t *contiguous, int64_t *numel) {
  disp_status s = disp__tensor_check_shape(op, sizes, *strides, ndim, numel);
  if (s == DISP_OK && !*strides) {
    disp__tensor_contiguous_strides(sizes, ndim, contiguous);
    *strides = contiguous;
  }
  return s;
}

disp_status disp_tensor_new_with_storage(disp_storage *st, int64_t offset, const int64_t *sizes,
                                         const int64_t *strides, int ndim, disp_dtype dt,
                                         disp_keyset keys, disp_tensor **out) {
  const char *op = "new_with_storage";
  DISP_REFUSE_NULL(st);
  DISP_REFUSE_NULL_ARRAY(sizes, ndim);
  DISP_REFUSE_NULL(out);
  int64_t numel, contiguous[DISP_TENSOR_MAX_DIMS];
  disp_status s = check_dtype(op, dt);
  if (s == DISP_OK) s = checked_strides(op, sizes, &strides, ndim, contiguous, &numel);
  if (s == DISP_OK) s = check_bounds(st, offset, sizes, strides, ndim, dt);
  if (s != DISP_OK) return s;
  return make_strided(st, offset, sizes, strides, ndim, numel, dt, keys, NULL,
                      disp_inference_mode_enabled(), out);
}

disp_status disp_tensor_new_view(disp_tensor *base, const int64_t *sizes, const int64_t *strides,
                                 int ndim, int64_t offset, disp_tensor **out) {
  const char *op = "new_view";
  DISP_REFUSE_NULL(base);
  DISP_REFUSE_NULL_ARRAY(sizes, ndim);
  DISP_REFUSE_NULL(out);
  if (!base->storage)
    return disp__fail(DISP_ERR_INVALID_ARG, "%s: cannot view a tensor without storage (opaque tensor)", op);
  int64_t numel, contiguous[DISP_TENSOR_MAX_DIMS];
  disp_status s = checked_strides(op, sizes, &strides, ndim, contiguous, &numel);
  if (s == DISP_OK) s = check_bounds(base->storage, offset, sizes, strides, ndim, base->dtype);
  if (s != DISP_OK) return s;
  disp_tensor *t;
  s = make_strided(base->storage, offset, sizes, strides, ndim, numel, base->dtype, base->keyset,
                   base->version, base->is_inference, &t);
  if (s != DISP_OK) return s;
  t->layout = base->layout;
  *out = t;
  return DISP_OK;
}

disp_status disp_tensor_new_opaque(const int64_t *sizes, int ndim, disp_dtype dt,
                                   disp_layout layout, disp_device dev, void *handle,
                                   void (*release)(void *handle), disp_tensor **out) {
  const char *op = "new_opaque";
  DISP_REFUSE_NULL_ARRAY(sizes, ndim);
  DISP_REFUSE_NULL(out);
  disp_status s = check_dtype(op, dt);
  if (s == DISP_OK && ((int)layout < 0 || layout >= DISP_LAYOUT_COUNT))
    s = disp__fail(DISP_ERR_INVALID_ARG, "%s: invalid layout %d", op, (int)layout);
  if (s == DISP_OK) s = disp_device_validate(dev);
  if (s != DISP_OK) return s;
  disp_tensor *t = tensor_alloc();
  if (!t) return disp__fail(DISP_ERR_NO_MEMORY, "out of memory creating a tensor");
  t->has_strides = 0;
  s = disp__tensor_set_sizes_strides(t, sizes, NULL, ndim);
  if (s != DISP_OK) {
    tensor_free(t);
    return s;
  }
  int inference = disp_inference_mode_enabled();
  if (!inference && !(t->version = disp__version_counter_new())) {
    tensor_free(t);
    return disp__fail(DISP_ERR_NO_MEMORY, "out of memory creating a tensor");
  }
  t->dtype = dt;
  t->layout = layout;
  t->device = dev;
  t->is_inference = (unsigned char)(inference != 0);
  t->keyset = disp_tensor_default_keyset(dev, dt, layout, inference);
  t->opaque_handle = handle;
  t->opaque_release = release;
  *out = t;
  return DISP_OK;
}

disp_tensor *disp_tensor_retain(disp_tensor *t) {
  if (!t) return NULL;
  atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
  return t;
}

void disp_tensor_release(disp_tensor *t) {
  if (!t) return;
  size_t prev = atomic_fetch_sub_explicit(&t->refs, 1, memory_order_release);
  DISP_ASSERT(prev > 0);
  if (prev != 1) return;
  /* Pairs with the release decrements of the other owners. */
  atomic_thread_fence(memory_order_acquire);
  tensor_free(t);
}

void disp__tensor_free_last(disp_tensor *t) {
  atomic_thread_fence(memory_order_acquire);
  tensor_free(t);
}

size_t disp_tensor_refcount(const disp_tensor *t) {
  return t ? atomic_load_explicit(&t->refs, memory_order_relaxed) : 0;
}

/* ---- autograd slot ----------------------------------------------------- */

void disp__tensor_set_autograd_meta(disp_tensor *t, void *meta, void (*destroy)(void *meta)) {
  if (t->autograd_meta && t->autograd_meta != meta && t->autograd_meta_destroy)
    t->autograd_meta_destroy(t->autograd_meta);
  t->autograd_meta = meta;
  t->autograd_meta_destroy = destroy;
}
