/*
 * stack_internal.h - the stack's layout, for the library's boxed call path.
 */
#ifndef DISP_STACK_INTERNAL_H
#define DISP_STACK_INTERNAL_H

#include <stddef.h>

#include "disp/value.h"

struct disp_stack {
  disp_value *v;
  size_t len, cap;
};

/* The first of the top `n` values (the arguments of a boxed call). */
static inline disp_value *disp__stack_top(disp_stack *s, size_t n) { return s->v + s->len - n; }

/* Push a tensor reference without a function call when there is room (a
 * call's returns usually fit where its arguments were). Takes ownership. */
disp_status disp_stack_push_tensor_steal(disp_stack *s, disp_tensor *t);
static inline disp_status disp__stack_push_tensor_fast(disp_stack *s, disp_tensor *t) {
  if (t && s->len < s->cap) {
    disp_value *v = &s->v[s->len++];
    v->tag = DISP_VALUE_TENSOR;
    v->u.tensor = t;
    return DISP_OK;
  }
  return disp_stack_push_tensor_steal(s, t);
}

/* Note [Reused stacks]
 * A call with C arguments into a boxed kernel (DISP_CALL, disp_call, a typed
 * entry) needs a stack for as long as the kernel runs. Allocating one per
 * call cost more than the rest of the call (calloc, realloc, free), so each
 * thread keeps a few stacks: disp__stack_borrow hands out the next free one,
 * disp__stack_give_back empties it and makes it free again. Borrowing is
 * LIFO, as calls nest: a boxed kernel that makes such a call itself gets
 * the next stack, never its own; deeper than the cache, stacks come from
 * the heap. Values are always cleared on give-back, so a kept stack holds no
 * tensor reference, only its array; a thread's stacks are freed when it
 * exits (a pthread key destructor). */

/* A cleared stack for the calling thread's use until it gives it back; NULL
 * when out of memory. Thread-safe (per-thread). */
disp_stack *disp__stack_borrow(void);
/* Clears `s` (releasing its values) and hands it back: the last one
 * borrowed goes back to the thread's cache, any other is freed. */
void disp__stack_give_back(disp_stack *s);

#endif
