/*
 * custom_op.c - seed 002 ("Extending PyTorch with custom operators using
 * the dispatcher") in C.
 *
 * <DESC> Defines myops::myadd once, registers a CPU kernel and an Autograd
 * fallthrough, then calls it through a typed entry point (a C function
 * pointer with the operator's own signature, like PyTorch's
 * op.typed<decltype(myadd)>()) and boxed, with the dispatch trace on. </DESC>
 */
#include <stdio.h>
#include <stdlib.h>

#include <disp.h>

/* 1. The schema: one DISP_LIBRARY block per namespace. */
DISP_LIBRARY(myops, m) {
  disp_library_def(m, "myadd(Tensor self, Tensor other) -> Tensor", NULL);
}

/* 2. A CPU kernel: a plain C function with the signature the schema implies
 *    (disp/value.h): tensors in, the result through an out-pointer. */
static disp_status myadd_cpu(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  int64_t n = disp_tensor_numel(self);
  if (disp_tensor_numel(other) != n || disp_tensor_dtype(self) != DISP_DTYPE_FLOAT32 ||
      disp_tensor_dtype(other) != DISP_DTYPE_FLOAT32 || !disp_tensor_is_contiguous(self) ||
      !disp_tensor_is_contiguous(other))
    return disp_set_error(DISP_ERR_INVALID_ARG, "myadd_cpu: expected two contiguous float32 tensors of one size");
  disp_status st = disp_tensor_empty(disp_tensor_sizes(self), disp_tensor_ndim(self), DISP_DTYPE_FLOAT32,
                                     disp_tensor_device(self), out);
  if (st != DISP_OK) return st;
  const float *a = disp_tensor_data_ptr(self), *b = disp_tensor_data_ptr(other);
  float *r = disp_tensor_data_ptr(*out);
  for (int64_t i = 0; i < n; i++) r[i] = a[i] + b[i];
  return DISP_OK;
}

DISP_LIBRARY_IMPL(myops, CPU, m) {
  disp_library_impl(m, "myadd", disp_kernel_unboxed(DISP_FN(myadd_cpu), 0), NULL);
}

/* 3. No autograd formula yet: say so with a fallthrough (autograd support
 *    for myadd arrives with the autograd layer). */
DISP_LIBRARY_IMPL(myops, AUTOGRAD, m) {
  disp_library_impl(m, "myadd", disp_kernel_fallthrough(), NULL);
}

/* 4. A dispatching function, as the seed's myadd(): find the operator once,
 *    then call through its typed entry point. */
typedef disp_status (*myadd_fn)(disp_tensor *self, disp_tensor *other, disp_tensor **out);

static disp_status myadd(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  static myadd_fn fn;
  if (!fn) {
    const disp_op *op;
    disp_fn entry;
    disp_status st = disp_op_find("myops::myadd", &op);
    if (st == DISP_OK) st = disp_op_typed_entry(op, &entry);
    if (st != DISP_OK) return st;
    fn = (myadd_fn)entry;
  }
  return fn(self, other, out);
}

static disp_tensor *filled(float start) {
  int64_t sizes[1] = {4};
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK)
    return NULL;
  float *p = disp_tensor_data_ptr(t);
  for (int i = 0; i < 4; i++) p[i] = start + (float)i;
  return t;
}

static void print_floats(const char *label, disp_tensor *t) {
  const float *p = disp_tensor_data_ptr(t);
  printf("%s [%g, %g, %g, %g]\n", label, p[0], p[1], p[2], p[3]);
}

int main(void) {
  /* Read when the dispatcher starts: print every dispatch to stderr. */
  setenv("DISP_SHOW_DISPATCH_TRACE", "1", 0);
  disp_tensor *a = filled(1), *b = filled(10), *c = NULL;
  if (!a || !b) return 1;

  fprintf(stderr, "-- typed call\n");
  if (myadd(a, b, &c) != DISP_OK) {
    fprintf(stderr, "myadd failed: %s\n", disp_last_error());
    return 1;
  }
  print_floats("myadd(a, b)       =", c);

  fprintf(stderr, "-- boxed call\n");
  const disp_op *op;
  disp_stack *stack = disp_stack_new();
  disp_tensor *d = NULL;
  if (disp_op_find("myops::myadd", &op) != DISP_OK || !stack || disp_stack_push_tensor(stack, a) != DISP_OK ||
      disp_stack_push_tensor(stack, c) != DISP_OK || disp_call_boxed(op, stack) != DISP_OK ||
      disp_stack_pop_tensor(stack, &d) != DISP_OK) {
    fprintf(stderr, "boxed call failed: %s\n", disp_last_error());
    return 1;
  }
  print_floats("boxed myadd(a, c) =", d);

  /* A wrong call is an error with a message, never a crash. */
  int64_t sizes[1] = {4};
  disp_tensor *meta = NULL;
  disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_META, -1), &meta);
  disp_tensor *e = NULL;
  if (myadd(meta, meta, &e) != DISP_OK) printf("on Meta: %.80s...\n", disp_last_error());

  const float *r = disp_tensor_data_ptr(d);
  int ok = r[0] == 12 && r[3] == 21; /* a + (a + b) */
  disp_tensor_release(meta);
  disp_tensor_release(d);
  disp_tensor_release(c);
  disp_tensor_release(b);
  disp_tensor_release(a);
  disp_stack_free(stack);
  disp_shutdown();
  return ok ? 0 : 1;
}
