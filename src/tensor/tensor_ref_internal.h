/*
 * tensor_ref_internal.h - the whole of the tensor module the dispatcher may
 * see (Note [Module arrows]): a tensor's key set and the reference counts of
 * tensors and storages, which stacks and boxed values own, and parsing a
 * device string for schema defaults. Nothing here exposes sizes, dtypes or
 * memory.
 *
 * Note [Module arrows]
 * kernels and autograd use dispatcher and tensor; tensor uses base and the
 * key vocabulary of the dispatcher (disp/keyset.h) and its grad-mode state
 * (disp/guard.h); dispatcher uses base and, of the tensor module, only this
 * header. base (errors, string buffers) uses nothing.
 */
#ifndef DISP_TENSOR_REF_INTERNAL_H
#define DISP_TENSOR_REF_INTERNAL_H

#include <stdatomic.h>

#include "disp/keyset.h"
#include "disp/value.h"

/* The public functions the dispatcher calls, declared again so that it
 * needs no tensor header; tensor.c sees both declarations, so a mismatch
 * with disp/tensor.h does not compile. */
DISP_API disp_tensor *disp_tensor_retain(disp_tensor *t);
DISP_API void disp_tensor_release(disp_tensor *t);
DISP_API disp_keyset disp_tensor_keyset(const disp_tensor *t);
DISP_API disp_storage *disp_storage_retain(disp_storage *st);
DISP_API void disp_storage_release(disp_storage *st);

/* disp_device_parse for a schema's Device default (`Device d="cpu"`), as
 * the two numbers a boxed Device value holds. Same errors. */
disp_status disp__device_parse_ids(const char *str, int32_t *type, int32_t *index);

/* The head of every tensor object (tensor_internal.h checks the layout):
 * the key set first, as disp_tensor_keys() relies on, then the count. */
typedef struct disp__tensor_head {
  disp_keyset keyset;
  atomic_size_t refs;
} disp__tensor_head;

/* Frees a tensor whose last reference was just dropped (tensor.c). */
void disp__tensor_free_last(disp_tensor *t);

/* A tensor's key set, read in place. Non-NULL t only. */
static inline disp_keyset disp__tensor_head_keys(const disp_tensor *t) {
  return ((const disp__tensor_head *)(const void *)t)->keyset;
}

/* Non-NULL t only. */
static inline void disp__tensor_retain_fast(disp_tensor *t) {
  atomic_fetch_add_explicit(&((disp__tensor_head *)(void *)t)->refs, 1, memory_order_relaxed);
}

/* Non-NULL t only. */
static inline void disp__tensor_release_fast(disp_tensor *t) {
  if (atomic_fetch_sub_explicit(&((disp__tensor_head *)(void *)t)->refs, 1, memory_order_release) == 1)
    disp__tensor_free_last(t);
}

#endif
