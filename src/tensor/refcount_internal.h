/*
 * refcount_internal.h - a tensor's reference count, inline, for the boxed
 * call path of the library itself (the stack and generated adapters). The
 * only part of the tensor object other modules may touch besides its key set.
 */
#ifndef DISP_REFCOUNT_INTERNAL_H
#define DISP_REFCOUNT_INTERNAL_H

#include <stdatomic.h>

#include "disp/tensor.h"

/* The reference count's place in the object (tensor_internal.h checks it). */
typedef struct disp__tensor_head {
  disp_keyset keyset;
  atomic_size_t refs;
} disp__tensor_head;

/* Frees a tensor whose last reference was just dropped (tensor.c). */
void disp__tensor_free_last(disp_tensor *t);

static inline void disp__tensor_retain_fast(disp_tensor *t) {
  atomic_fetch_add_explicit(&((disp__tensor_head *)(void *)t)->refs, 1, memory_order_relaxed);
}

/* Non-NULL t only. */
static inline void disp__tensor_release_fast(disp_tensor *t) {
  if (atomic_fetch_sub_explicit(&((disp__tensor_head *)(void *)t)->refs, 1, memory_order_release) == 1)
    disp__tensor_free_last(t);
}

#endif
