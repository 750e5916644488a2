/*
 * fuzz_boxed_ops.h - the fuzz:: operators fuzz_boxed.c calls next to the
 * built-in ones (fuzz_boxed_ops.c).
 */
#ifndef FUZZ_BOXED_OPS_H
#define FUZZ_BOXED_OPS_H

#include <disp.h>

/* Defines every fuzz:: operator and registers its kernels, once per
 * process; the registrations live until exit. Errors: the first failing
 * registration's status and message. Not thread-safe. */
disp_status fuzz_ops_define(void);

#endif
