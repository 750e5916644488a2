/*
 * argcheck_internal.h - status.h's Note [NULL arguments] in one place, so
 * every refusal reads the same: "<function>: <argument> is NULL". In base,
 * next to the error helpers, because every module's public functions use it.
 *
 * The argument's name is the macro argument as written, so write the
 * parameter as the header spells it: tests/test_null_args.c checks that the
 * message names the header's parameter.
 */
#ifndef DISP_ARGCHECK_INTERNAL_H
#define DISP_ARGCHECK_INTERNAL_H

#include "error_internal.h"

/* Sets "<fn>: <arg> is NULL" and returns DISP_ERR_INVALID_ARG. */
static inline disp_status disp__null_arg(const char *fn, const char *arg) {
  return disp__fail(DISP_ERR_INVALID_ARG, "%s: %s is NULL", fn, arg);
}

/* Rule (a): a function returning disp_status refuses a NULL `arg`. Use it
 * before anything else happens, so a refused call changes nothing. */
#define DISP_REFUSE_NULL(arg)                                  \
  do {                                                         \
    if ((arg) == NULL) return disp__null_arg(__func__, #arg);  \
  } while (0)

/* Rule (a) for an array and its count: only an empty array may be NULL. */
#define DISP_REFUSE_NULL_ARRAY(arg, count)                                   \
  do {                                                                       \
    if ((count) > 0 && (arg) == NULL) return disp__null_arg(__func__, #arg); \
  } while (0)

/* The same where the C variable's name differs from the header's parameter. */
#define DISP_REFUSE_NULL_AS(arg, header_name)                       \
  do {                                                              \
    if ((arg) == NULL) return disp__null_arg(__func__, header_name); \
  } while (0)

/* Rule (b): a function returning a pointer returns NULL with the message. */
#define DISP_REFUSE_NULL_PTR(arg)          \
  do {                                     \
    if ((arg) == NULL) {                   \
      (void)disp__null_arg(__func__, #arg); \
      return NULL;                         \
    }                                      \
  } while (0)

#endif
