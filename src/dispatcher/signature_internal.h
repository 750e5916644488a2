/*
 * signature_internal.h - the C calling convention of an operator.
 *
 * Note [Boxed and unboxed]
 * From the schema, each argument gets one C type (the table in
 * include/disp/value.h) and each return one out-pointer. The signature says
 * which arguments carry dispatch keys, how to move a value between the stack
 * and C (boxing.c), and how libffi sees the function (ffi_bridge.c). It is
 * computed once, when the operator is defined, and never changes after.
 */
#ifndef DISP_SIGNATURE_INTERNAL_H
#define DISP_SIGNATURE_INTERNAL_H

#include <ffi.h>
#include <stdarg.h>
#include <stdint.h>

#include "disp/dispatcher.h"
#include "disp/value.h"

typedef enum disp_ctype {
  DISP_CT_UNSUPPORTED = 0, /* Dict, Future, custom classes, ...: boxed only */
  DISP_CT_TENSOR,          /* Tensor: disp_tensor * */
  DISP_CT_OPT_TENSOR,      /* Tensor?: disp_tensor *, NULL = None */
  DISP_CT_TENSOR_LIST,     /* Tensor[] / Tensor?[]: disp_tensor_list */
  DISP_CT_INT,             /* int, SymInt: int64_t */
  DISP_CT_OPT_INT,         /* disp_opt_int */
  DISP_CT_INT_LIST,        /* disp_int_list */
  DISP_CT_OPT_INT_LIST,    /* disp_opt_int_list */
  DISP_CT_DOUBLE,          /* double */
  DISP_CT_OPT_DOUBLE,      /* disp_opt_double */
  DISP_CT_DOUBLE_LIST,     /* disp_double_list */
  DISP_CT_BOOL,            /* bool */
  DISP_CT_OPT_BOOL,        /* disp_opt_bool */
  DISP_CT_BOOL_LIST,       /* disp_bool_list */
  DISP_CT_STR,             /* const char *, NULL = None */
  DISP_CT_SCALAR,          /* disp_scalar, NONE = None */
  DISP_CT_ENUM,            /* ScalarType / Layout / MemoryFormat: int32_t, -1 = None */
  DISP_CT_DEVICE,          /* disp_opt_device */
  DISP_CT_GENERATOR,       /* void *, NULL = None */
  DISP_CT_STORAGE,         /* disp_storage * */
  DISP_CT_TENSOR_VEC       /* returns only: disp_tensor_vec */
} disp_ctype;

/* One C value of any ctype; the storage a call marshals through. */
typedef union disp_cvalue {
  disp_tensor *tensor;
  disp_tensor_list tensors;
  int64_t i;
  disp_opt_int opt_i;
  disp_int_list ints;
  disp_opt_int_list opt_ints;
  double d;
  disp_opt_double opt_d;
  disp_double_list doubles;
  bool b;
  disp_opt_bool opt_b;
  disp_bool_list bools;
  const char *str;
  disp_scalar scalar;
  int32_t e;
  disp_opt_device device;
  void *ptr;
  disp_storage *storage;
  disp_tensor_vec vec;
} disp_cvalue;

enum { DISP_MAX_ARGS = 64, DISP_MAX_RETS = 16 };

/* Note [Calling from a register plan] (ffi_bridge.c): where each
 * eightbyte of a call's arguments goes when they all fit in registers. */
enum { DISP_PLAN_GPRS = 6, DISP_PLAN_SSES = 8, DISP_PLAN_WORDS = DISP_PLAN_GPRS + DISP_PLAN_SSES };
typedef enum disp_plan_source { DISP_PLAN_KEYSET, DISP_PLAN_ARGS, DISP_PLAN_OUTS } disp_plan_source;
typedef struct disp_plan_word {
  uint8_t source;  /* a disp_plan_source: the key set, args[] or outs[] */
  uint8_t reg;     /* 0..5: a general register, 6..13: an SSE one */
  uint8_t sext32;  /* an int32_t: sign-extended, as libffi does */
  uint16_t offset; /* byte offset of the eightbyte in its source */
} disp_plan_word;
typedef struct disp_reg_plan {
  uint8_t ok;     /* every argument is in registers: the plan applies */
  uint8_t sse;    /* some argument uses an SSE register */
  uint8_t nwords; /* entries of `word` */
  disp_plan_word word[DISP_PLAN_WORDS];
} disp_reg_plan;

typedef struct disp_signature {
  int nargs, nrets;
  disp_ctype args[DISP_MAX_ARGS];
  disp_ctype rets[DISP_MAX_RETS];
  uint64_t key_args;  /* bit i: argument i carries dispatch keys */
  /* What the C type alone does not say, for checking boxed values
   * (boxed_check.c): bit i of `nullable_args` when argument i's schema type
   * is optional (`str?`, `Scalar?`, ... accept None; `str` does not), of
   * `optional_elems` when its elements may be None (`Tensor?[]`). */
  uint64_t nullable_args, optional_elems;
  uint64_t nullable_rets;
  /* 1 when a Tensor return may be undefined (None / NULL): only for an
   * operator with an output_mask argument, whose unwanted returns 1.13
   * leaves undefined (convolution_backward). Elsewhere a kernel that
   * returns DISP_OK without the tensor has failed (boxed_check.c). */
  int undefined_rets_ok;
  /* Bit i when a C argument that passed the C check (c_args_check.c) may
   * still box to a value the boxed check refuses: a Scalar of kind NONE, an
   * enum of -1, a Device without a value or a NULL Generator where the
   * schema allows no None. Packing C arguments for a boxed kernel checks
   * only these (Note [Checking boxed values]). */
  uint64_t box_unsure;
  int varargs, varrets; /* `...` in the schema: the stack's length is the kernel's business */
  int supported;      /* every type has a C mapping */
  int all_tensors;    /* supported, and every argument and return a Tensor (call.c's fast cases) */
  /* libffi: the unboxed signature without and with the leading key set. */
  ffi_cif cif[2];
  ffi_type *atypes[2][1 + DISP_MAX_ARGS + DISP_MAX_RETS];
  /* The same two, as registers (Note [Calling from a register plan]). */
  disp_reg_plan plan[2];
} disp_signature;

struct disp_schema;
/* Builds the signature of `schema`; the signature is marked unsupported when
 * a type has no C mapping. Fails (DISP_ERR_SCHEMA) for a schema with more
 * than DISP_MAX_ARGS arguments or DISP_MAX_RETS returns: every call path
 * keeps them in fixed arrays, and cutting the schema short would make boxed
 * calls take the wrong number of values. New object. */
disp_status disp__signature_new(const struct disp_schema *schema, disp_signature **out);
void disp__signature_free(disp_signature *sig);

const char *disp__ctype_name(disp_ctype t);

/* Nonzero when two signatures have the same C calling convention (the same
 * C types of arguments and returns), so a function built for one can be
 * called as the other. */
int disp__signature_same_c(const disp_signature *a, const disp_signature *b);

/* ---- moving values (boxing.c) ------------------------------------------ */

/* Read one argument of type t from a va_list into *out (no ownership). */
void disp__cvalue_from_va(disp_ctype t, va_list *ap, disp_cvalue *out);
/* Push a C argument onto the stack as a boxed value (copies / retains). */
disp_status disp__cvalue_box(disp_ctype t, const disp_cvalue *v, disp_stack *s);
/* View a boxed argument as a C value (borrows from the stack value).
 * DISP_ERR_TYPE when the value has the wrong tag. */
disp_status disp__cvalue_unbox(disp_ctype t, const disp_value *v, disp_cvalue *out);
/* Push a kernel's returned C value (takes its ownership). */
disp_status disp__cvalue_box_return(disp_ctype t, disp_cvalue *v, disp_stack *s);
/* Move a returned boxed value into a caller's out-pointer (takes ownership
 * of the value's contents). DISP_ERR_TYPE on the wrong tag. */
disp_status disp__value_to_out(disp_ctype t, disp_value *v, void *out_ptr);
/* Release what a returned C value owns (after a failure). */
void disp__cvalue_release_return(disp_ctype t, disp_cvalue *v);
/* The key set of one argument (0 for arguments without keys). */
disp_keyset disp__cvalue_keys(disp_ctype t, const disp_cvalue *v);
disp_keyset disp__value_keys(const disp_value *v);
/* After a generated adapter's call: pushes the returns (st == DISP_OK) or
 * releases them (on error), and returns st. */
disp_status disp__push_returns(disp_stack *stack, disp_status st, disp_cvalue *rets,
                               const disp_ctype *types, int n);

/* ---- libffi (ffi_bridge.c) --------------------------------------------- */

/* Prepare sig->cif (called once, at def time, under the registry lock). */
disp_status disp__ffi_prepare(disp_signature *sig, const char *op_name);
/* Call an unboxed kernel with C arguments; outs[i] is where return i goes
 * (the kernel's out-pointer parameters). */
disp_status disp__ffi_call_unboxed(const disp_signature *sig, disp_fn fn, int with_keyset,
                                   disp_keyset ks, disp_cvalue *args, void **outs);

#endif
