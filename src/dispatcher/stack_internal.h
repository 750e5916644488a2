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

#endif
