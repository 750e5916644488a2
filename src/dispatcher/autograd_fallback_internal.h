/*
 * autograd_fallback_internal.h - the seam of the built-in autograd fallback
 * (autograd_fallback.c) that the autograd module fills.
 */
#ifndef DISP_AUTOGRAD_FALLBACK_INTERNAL_H
#define DISP_AUTOGRAD_FALLBACK_INTERNAL_H

#include "disp/dispatcher.h"

/*
 * disp__autograd_fallback_set_handler - what the built-in autograd fallback
 * runs (autograd_fallback.c); NULL restores the "nothing" behaviour. The
 * autograd module installs its handler while the built-in libraries
 * register. Thread-safe.
 */
void disp__autograd_fallback_set_handler(disp_boxed_fn fn);

#endif
