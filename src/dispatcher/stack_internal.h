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

#endif
