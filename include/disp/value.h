/*
 * disp/value.h - boxed values, the stack, and the C types of unboxed kernels.
 *
 * Two calling conventions share one kernel slot (Note [Boxed and unboxed]):
 *
 *   boxed:    disp_status fn(const disp_op *op, disp_keyset ks, disp_stack *stack, void *user_data)
 *             arguments are popped from the stack, returns pushed onto it;
 *   unboxed:  disp_status fn([disp_keyset ks,] ARG..., RET *out...)
 *             a plain C function whose parameter types follow from the schema
 *             by the table below; every return is written through a trailing
 *             out-pointer, and the status says whether the kernel succeeded.
 *
 * Schema type -> C parameter type of an unboxed kernel:
 *
 *   | schema                 | C parameter                     | None is          |
 *   |------------------------|---------------------------------|------------------|
 *   | Tensor                 | disp_tensor *  (borrowed)       | -                |
 *   | Tensor?                | disp_tensor *  (borrowed)       | NULL             |
 *   | Tensor[] / Tensor?[]   | disp_tensor_list (borrowed)     | elements NULL    |
 *   | int, SymInt            | int64_t                         | -                |
 *   | int?, SymInt?          | disp_opt_int                    | .has_value = 0   |
 *   | int[], int[N], SymInt[]| disp_int_list (borrowed)        | -                |
 *   | int[]?, int[N]?        | disp_opt_int_list               | .has_value = 0   |
 *   | float                  | double                          | -                |
 *   | float?                 | disp_opt_double                 | .has_value = 0   |
 *   | float[]                | disp_double_list                | -                |
 *   | bool                   | bool                            | -                |
 *   | bool?                  | disp_opt_bool                   | .has_value = 0   |
 *   | bool[N]                | disp_bool_list                  | -                |
 *   | str / str?             | const char *                    | NULL             |
 *   | Scalar / Scalar?       | disp_scalar                     | DISP_SCALAR_NONE |
 *   | ScalarType / ?         | int32_t  (a disp_dtype)         | -1               |
 *   | Layout / ?             | int32_t  (a disp_layout)        | -1               |
 *   | MemoryFormat / ?       | int32_t  (a disp_memory_format) | -1               |
 *   | Device / ?             | disp_opt_device                 | .has_value = 0   |
 *   | Generator / ?          | void *   (a generator handle)   | NULL             |
 *   | Storage                | disp_storage * (borrowed)       | -                |
 *
 * Returns, as trailing out-pointers (the kernel stores; the caller owns):
 *   Tensor / Tensor(a!) -> disp_tensor ** (a new reference; never NULL
 *   after DISP_OK, except where an output_mask argument leaves an unwanted
 *   return undefined, as convolution_backward's: a kernel that returns
 *   DISP_OK without the tensor fails the call with DISP_ERR_KERNEL naming
 *   the operator and key; Tensor? may be NULL: None), int -> int64_t *,
 *   float -> double *, bool -> bool *,
 *   Scalar -> disp_scalar *, Tensor[] -> disp_tensor_vec * (a new array of
 *   new references; free with disp_tensor_vec_free).
 *
 * A stack owns what it holds: a tensor value holds a reference, lists and
 * strings own copies. Stacks are not thread-safe; use one per call.
 *
 * NULL arguments follow status.h's Note [NULL arguments]: a NULL stack is
 * refused by every push and pop, reads as empty (size 0, at/peek NULL with
 * the message), and disp_stack_free/clear/drop and disp_value_clear take NULL
 * as a no-op.
 */
#ifndef DISP_VALUE_H
#define DISP_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct disp_tensor disp_tensor;
typedef struct disp_storage disp_storage;

/* ---- the C types of the mapping --------------------------------------- */

typedef struct disp_tensor_list { disp_tensor *const *data; size_t len; } disp_tensor_list;
typedef struct disp_int_list { const int64_t *data; size_t len; } disp_int_list;
typedef struct disp_double_list { const double *data; size_t len; } disp_double_list;
typedef struct disp_bool_list { const bool *data; size_t len; } disp_bool_list;
typedef struct disp_opt_int { int64_t value; bool has_value; } disp_opt_int;
typedef struct disp_opt_double { double value; bool has_value; } disp_opt_double;
typedef struct disp_opt_bool { bool value; bool has_value; } disp_opt_bool;
typedef struct disp_opt_int_list { disp_int_list value; bool has_value; } disp_opt_int_list;
typedef struct disp_opt_device { int32_t type; int32_t index; bool has_value; } disp_opt_device;

/* An owned list of tensors (Tensor[] returns). */
typedef struct disp_tensor_vec { disp_tensor **data; size_t len; } disp_tensor_vec;

/* disp_tensor_vec_free - releases every tensor of `v` and its array, and
 * empties it (a returned Tensor[] is the caller's to free). NULL ok. */
DISP_API void disp_tensor_vec_free(disp_tensor_vec *v);

/* A Scalar: the Python number passed (int, float or bool), as PyTorch keeps it. */
typedef enum disp_scalar_kind {
  DISP_SCALAR_NONE = 0,
  DISP_SCALAR_INT,
  DISP_SCALAR_DOUBLE,
  DISP_SCALAR_BOOL
} disp_scalar_kind;
typedef struct disp_scalar {
  disp_scalar_kind kind;
  union { int64_t i; double d; bool b; } v;
} disp_scalar;

static inline disp_scalar disp_scalar_int(int64_t i) {
  disp_scalar s; s.kind = DISP_SCALAR_INT; s.v.i = i; return s;
}
static inline disp_scalar disp_scalar_double(double d) {
  disp_scalar s; s.kind = DISP_SCALAR_DOUBLE; s.v.d = d; return s;
}
static inline disp_scalar disp_scalar_bool(bool b) {
  disp_scalar s; s.kind = DISP_SCALAR_BOOL; s.v.b = b; return s;
}
/* disp_scalar_to_double - the value as a double (None gives 0). */
static inline double disp_scalar_to_double(disp_scalar s) {
  return s.kind == DISP_SCALAR_DOUBLE ? s.v.d : s.kind == DISP_SCALAR_INT ? (double)s.v.i
       : s.kind == DISP_SCALAR_BOOL ? (double)s.v.b : 0.0;
}

/* ---- boxed values ------------------------------------------------------ */

/* What a boxed value holds (PyTorch's IValue tags, as far as ops need them). */
typedef enum disp_value_tag {
  DISP_VALUE_NONE = 0,
  DISP_VALUE_TENSOR,        /* .u.tensor: one reference, never NULL */
  DISP_VALUE_INT,           /* .u.i (also SymInt, ScalarType, Layout, MemoryFormat) */
  DISP_VALUE_DOUBLE,        /* .u.d */
  DISP_VALUE_BOOL,          /* .u.b */
  DISP_VALUE_STRING,        /* .u.str: owned copy */
  DISP_VALUE_INT_LIST,      /* .u.ints: owned array */
  DISP_VALUE_DOUBLE_LIST,   /* .u.doubles: owned array */
  DISP_VALUE_BOOL_LIST,     /* .u.bools: owned array */
  DISP_VALUE_TENSOR_LIST,   /* .u.tensors: owned array of references (NULL = None element) */
  DISP_VALUE_DEVICE,        /* .u.device */
  DISP_VALUE_GENERATOR,     /* .u.ptr: borrowed handle */
  DISP_VALUE_STORAGE        /* .u.storage: one reference */
} disp_value_tag;

typedef struct disp_value {
  disp_value_tag tag;
  union {
    disp_tensor *tensor;
    int64_t i;
    double d;
    bool b;
    char *str;
    struct { int64_t *data; size_t len; } ints;
    struct { double *data; size_t len; } doubles;
    struct { bool *data; size_t len; } bools;
    struct { disp_tensor **data; size_t len; } tensors;
    struct { int32_t type; int32_t index; } device;
    void *ptr;
    disp_storage *storage;
  } u;
} disp_value;

/* The name of a tag ("Tensor", "int", "int[]", ...), for messages. Static. */
DISP_API const char *disp_value_tag_name(disp_value_tag tag);

/* ---- the stack --------------------------------------------------------- */

typedef struct disp_stack disp_stack;

/* disp_stack_new - an empty stack. New object; NULL when out of memory (the
 * thread's disp_last_error() says so). Thread-safe (each call its own stack). */
DISP_API disp_stack *disp_stack_new(void);

/* disp_stack_free - releases every value and the stack. NULL ok. */
DISP_API void disp_stack_free(disp_stack *s);

/* disp_stack_size - number of values; `s` must not be NULL (0 when it is). */
DISP_API size_t disp_stack_size(const disp_stack *s);

/* disp_stack_clear - releases every value; the stack stays usable. */
DISP_API void disp_stack_clear(disp_stack *s);

/*
 * disp_stack_at - the value `i` places from the bottom (0 = first pushed);
 * borrowed, valid until the stack changes. NULL when out of range, with a
 * message ("disp_stack_at: index 5 is out of range for a stack of 2 values").
 */
DISP_API disp_value *disp_stack_at(disp_stack *s, size_t i);

/* disp_stack_peek - the value `i` places below the top (0 = top). Borrowed;
 * NULL with a message when out of range, as disp_stack_at. */
DISP_API disp_value *disp_stack_peek(disp_stack *s, size_t i);

/*
 * Pushing. Each copies what it is given (tensors: a new reference is taken),
 * except the _steal variants which take ownership of one reference. All
 * return DISP_ERR_NO_MEMORY on OOM and DISP_ERR_INVALID_ARG for a NULL stack
 * (a _steal variant then releases what it was given, so the caller never
 * leaks). A list pointer may be NULL only when its count is 0.
 */
DISP_API disp_status disp_stack_push_none(disp_stack *s);
DISP_API disp_status disp_stack_push_tensor(disp_stack *s, disp_tensor *t);       /* NULL pushes None */
DISP_API disp_status disp_stack_push_tensor_steal(disp_stack *s, disp_tensor *t); /* NULL pushes None */
DISP_API disp_status disp_stack_push_int(disp_stack *s, int64_t v);
DISP_API disp_status disp_stack_push_double(disp_stack *s, double v);
DISP_API disp_status disp_stack_push_bool(disp_stack *s, bool v);
DISP_API disp_status disp_stack_push_scalar(disp_stack *s, disp_scalar v);        /* NONE pushes None */
DISP_API disp_status disp_stack_push_string(disp_stack *s, const char *v);        /* NULL pushes None */
DISP_API disp_status disp_stack_push_int_list(disp_stack *s, const int64_t *v, size_t n);
DISP_API disp_status disp_stack_push_double_list(disp_stack *s, const double *v, size_t n);
DISP_API disp_status disp_stack_push_bool_list(disp_stack *s, const bool *v, size_t n);
DISP_API disp_status disp_stack_push_tensor_list(disp_stack *s, disp_tensor *const *v, size_t n);
/* A Device value: `type` a disp_backend, `index` -1 (none) up to INT16_MAX;
 * anything else is DISP_ERR_INVALID_ARG. */
DISP_API disp_status disp_stack_push_device(disp_stack *s, int32_t type, int32_t index);
DISP_API disp_status disp_stack_push_generator(disp_stack *s, void *g);           /* NULL pushes None */
DISP_API disp_status disp_stack_push_storage(disp_stack *s, disp_storage *st);    /* NULL pushes None */
/* disp_stack_push_value - pushes a deep copy of `v`. */
DISP_API disp_status disp_stack_push_value(disp_stack *s, const disp_value *v);
/* disp_stack_push_value_steal - moves `v` onto the stack (v becomes None). */
DISP_API disp_status disp_stack_push_value_steal(disp_stack *s, disp_value *v);

/*
 * disp_stack_pop - moves the top value into *out (the caller owns it and
 * must disp_value_clear it). Error DISP_ERR_INVALID_ARG on an empty stack.
 */
DISP_API disp_status disp_stack_pop(disp_stack *s, disp_value *out);

/* disp_stack_drop - releases the top `n` values. */
DISP_API void disp_stack_drop(disp_stack *s, size_t n);

/*
 * disp_stack_pop_tensor - pops a Tensor (or None -> NULL) and hands its
 * reference to the caller. DISP_ERR_TYPE when the top is something else
 * (the stack is then unchanged).
 */
DISP_API disp_status disp_stack_pop_tensor(disp_stack *s, disp_tensor **out);

/* disp_value_clear - releases what `v` holds and makes it None. */
DISP_API void disp_value_clear(disp_value *v);

#ifdef __cplusplus
}
#endif

#endif /* DISP_VALUE_H */
