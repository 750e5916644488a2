/*
 * custom_op.c - seed 002 ("Extending PyTorch with custom operators using
 * the dispatcher") in C, end to end.
 *
 * <DESC> Defines myops::myadd once; registers a CPU kernel, an Autograd
 * kernel written as a custom function (the seed's MyAddFunction), and an
 * AutocastCPU kernel; calls it through a typed entry point and boxed, with
 * the dispatch trace on; backpropagates through it and checks its gradient
 * with gradcheck. </DESC>
 */
#include <stdio.h>
#include <stdlib.h>

#include <disp.h>

/* 1. The schema: one DISP_LIBRARY block per namespace. */
DISP_LIBRARY(myops, m) {
  disp_library_def(m, "myadd(Tensor self, Tensor other) -> Tensor", NULL);
}

/* 2. A CPU kernel: a plain C function with the signature the schema implies
 *    (disp/value.h): tensors in, the result through an out-pointer. It adds
 *    contiguous float32/float64 tensors of one shape itself and hands other
 *    dtypes (the autocast kernel's bfloat16) to aten::add. */
#define ADD_LOOP(T)                                                   \
  do {                                                                \
    const T *a = disp_tensor_data_ptr(self), *b = disp_tensor_data_ptr(other); \
    T *r = disp_tensor_data_ptr(*out);                                \
    for (int64_t i = 0; i < n; i++) r[i] = a[i] + b[i];               \
  } while (0)

static disp_status myadd_cpu(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  disp_dtype dt = disp_tensor_dtype(self);
  int64_t n = disp_tensor_numel(self);
  if ((dt != DISP_DTYPE_FLOAT32 && dt != DISP_DTYPE_FLOAT64) || disp_tensor_dtype(other) != dt)
    return disp_aten_add_Tensor(self, other, disp_scalar_int(1), out);
  if (disp_tensor_numel(other) != n || !disp_tensor_is_contiguous(self) || !disp_tensor_is_contiguous(other))
    return disp_set_error(DISP_ERR_INVALID_ARG, "myadd_cpu: expected two contiguous tensors of one size");
  disp_status st = disp_tensor_empty(disp_tensor_sizes(self), disp_tensor_ndim(self), dt, disp_tensor_device(self), out);
  if (st != DISP_OK) return st;
  if (dt == DISP_DTYPE_FLOAT32) ADD_LOOP(float);
  else ADD_LOOP(double);
  return DISP_OK;
}

DISP_LIBRARY_IMPL(myops, CPU, m) {
  disp_library_impl(m, "myadd", disp_kernel_unboxed(DISP_FN(myadd_cpu), 0), NULL);
}

/* 3. The dispatching function, as the seed's myadd(): find the operator
 *    once, then call through its typed entry point. */
typedef disp_status (*myadd_fn)(disp_tensor *self, disp_tensor *other, disp_tensor **out);

static const disp_op *myadd_op(void) {
  static const disp_op *op;
  if (!op && disp_op_find("myops::myadd", &op) != DISP_OK) return NULL;
  return op;
}

static disp_status myadd(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  static myadd_fn fn;
  if (!fn) {
    disp_fn entry;
    const disp_op *op = myadd_op();
    disp_status st = op ? disp_op_typed_entry(op, &entry) : DISP_ERR_OP_NOT_FOUND;
    if (st != DISP_OK) return st;
    fn = (myadd_fn)entry;
  }
  return fn(self, other, out);
}

/* 4. Autograd: the seed's MyAddFunction. forward disables autograd below
 *    this key (the seed's AutoDispatchBelowADInplaceOrView) and calls the
 *    operator again; backward passes the gradient to both inputs. */
static disp_status myadd_forward(disp_function_ctx *ctx, disp_tensor *const *in, size_t n, disp_tensor **out,
                                 size_t nout) {
  (void)ctx, (void)n, (void)nout;
  disp_tls_state below = disp_tls_below_adinplaceorview_push();
  disp_status st = myadd(in[0], in[1], &out[0]);
  disp_tls_restore(below);
  return st;
}

static disp_status myadd_backward(disp_function_ctx *ctx, disp_tensor *const *grad_out, size_t nout,
                                  disp_tensor **grad_in, size_t n) {
  (void)nout, (void)n;
  if (disp_ctx_needs_input_grad(ctx, 0)) grad_in[0] = disp_tensor_retain(grad_out[0]);
  if (disp_ctx_needs_input_grad(ctx, 1)) grad_in[1] = disp_tensor_retain(grad_out[0]);
  return DISP_OK;
}

static const disp_function_def MyAddFunction = {"MyAddFunctionBackward", myadd_forward, myadd_backward};

static disp_status myadd_autograd(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  return disp_function_apply(&MyAddFunction, (disp_tensor *[]){self, other}, 2, out, 1);
}

DISP_LIBRARY_IMPL(myops, AUTOGRAD, m) {
  disp_library_impl(m, "myadd", disp_kernel_unboxed(DISP_FN(myadd_autograd), 0), NULL);
}

/* 5. Autocast: exclude the key, cast to the autocast dtype, call again. */
static disp_status myadd_autocast(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  disp_tls_state saved = disp_autocast_exclude_push(DISP_BACKEND_CPU);
  disp_dtype to = DISP_DTYPE_BFLOAT16;
  disp_tensor *a = NULL, *b = NULL;
  disp_status st = disp_autocast_get_dtype(DISP_BACKEND_CPU, &to);
  if (st == DISP_OK) st = disp_autocast_cached_cast(to, self, DISP_BACKEND_CPU, &a);
  if (st == DISP_OK) st = disp_autocast_cached_cast(to, other, DISP_BACKEND_CPU, &b);
  if (st == DISP_OK) st = myadd(a, b, out);
  disp_tensor_release(a), disp_tensor_release(b);
  disp_tls_restore(saved);
  return st;
}

DISP_LIBRARY_IMPL(myops, AUTOCAST_CPU, m) {
  disp_library_impl(m, "myadd", disp_kernel_unboxed(DISP_FN(myadd_autocast), 0), NULL);
}

/* ---- the program ---------------------------------------------------------- */

static disp_tensor *filled(double start, disp_dtype dt) {
  int64_t sizes[1] = {4};
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, 1, dt, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK) return NULL;
  for (int i = 0; i < 4; i++) {
    if (dt == DISP_DTYPE_FLOAT64) ((double *)disp_tensor_data_ptr(t))[i] = start + 0.5 * i;
    else ((float *)disp_tensor_data_ptr(t))[i] = (float)start + (float)i;
  }
  return t;
}

static void print_floats(const char *label, disp_tensor *t) {
  const float *p = disp_tensor_data_ptr(t);
  printf("%s [%g, %g, %g, %g]\n", label, p[0], p[1], p[2], p[3]);
}

static int fail(const char *what) {
  fprintf(stderr, "%s failed: %s\n", what, disp_last_error());
  return 1;
}

/* Typed and boxed calls, with the dispatch trace on. */
static int calls(disp_tensor *a, disp_tensor *b) {
  disp_tensor *c = NULL, *d = NULL;
  fprintf(stderr, "-- typed call\n");
  if (myadd(a, b, &c) != DISP_OK) return fail("myadd");
  print_floats("myadd(a, b)       =", c);
  fprintf(stderr, "-- boxed call\n");
  disp_stack *stack = disp_stack_new();
  if (!stack || disp_stack_push_tensor(stack, a) != DISP_OK || disp_stack_push_tensor(stack, c) != DISP_OK ||
      disp_call_boxed(myadd_op(), stack) != DISP_OK || disp_stack_pop_tensor(stack, &d) != DISP_OK)
    return fail("boxed call");
  print_floats("boxed myadd(a, c) =", d);
  const float *r = disp_tensor_data_ptr(d);
  int ok = r[0] == 12 && r[3] == 21; /* a + (a + b) */
  disp_tensor_release(d), disp_tensor_release(c);
  disp_stack_free(stack);
  return ok ? 0 : 1;
}

/* Backward through MyAddFunction, and autocast. */
static int autograd_and_autocast(disp_tensor *a, disp_tensor *b) {
  disp_tensor *y = NULL, *s = NULL, *h = NULL;
  if (disp_tensor_set_requires_grad(a, 1) != DISP_OK || myadd(a, b, &y) != DISP_OK ||
      disp_aten_sum(y, -1, &s) != DISP_OK || disp_autograd_backward(&s, 1, NULL, 0, 0) != DISP_OK)
    return fail("backward");
  printf("grad_fn of myadd(a, b): %s\n", disp_node_name(disp_tensor_grad_fn(y)));
  print_floats("a.grad            =", disp_tensor_grad(a));
  disp_autocast_guard g;
  if (disp_autocast_enter(DISP_BACKEND_CPU, DISP_DTYPE_BFLOAT16, 1, 1, &g) != DISP_OK) return fail("autocast");
  disp_status st = myadd(a, b, &h);
  disp_autocast_exit(&g);
  if (st != DISP_OK) return fail("myadd under autocast");
  printf("under autocast myadd gives %s\n", disp_dtype_name(disp_tensor_dtype(h)));
  int ok = disp_tensor_dtype(h) == DISP_DTYPE_BFLOAT16 && ((const float *)disp_tensor_data_ptr(disp_tensor_grad(a)))[2] == 1;
  disp_tensor_release(h), disp_tensor_release(s), disp_tensor_release(y);
  return ok ? 0 : 1;
}

/* gradcheck: float64 central differences against MyAddFunction's backward. */
static disp_status myadd_checked(disp_tensor *const *in, size_t n, disp_tensor **out, size_t *nout, void *ctx) {
  (void)n, (void)ctx;
  *nout = 1;
  return myadd(in[0], in[1], &out[0]);
}

static int check_gradient(void) {
  disp_tensor *x = filled(0.25, DISP_DTYPE_FLOAT64), *y = filled(-1.0, DISP_DTYPE_FLOAT64);
  if (!x || !y || disp_tensor_set_requires_grad(x, 1) != DISP_OK || disp_tensor_set_requires_grad(y, 1) != DISP_OK)
    return fail("gradcheck inputs");
  disp_gradcheck_options o = disp_gradcheck_default_options();
  disp_status st = disp_gradcheck(myadd_checked, NULL, (disp_tensor *[]){x, y}, 2, &o);
  printf("gradcheck(myadd): %s\n", st == DISP_OK ? "passed" : disp_last_error());
  disp_tensor_release(x), disp_tensor_release(y);
  return st == DISP_OK ? 0 : 1;
}

int main(void) {
  /* Read when the dispatcher starts: print every dispatch to stderr. */
  setenv("DISP_SHOW_DISPATCH_TRACE", "1", 0);
  disp_tensor *a = filled(1, DISP_DTYPE_FLOAT32), *b = filled(10, DISP_DTYPE_FLOAT32);
  if (!a || !b) return 1;
  int rc = calls(a, b);
  disp_trace_set(0);
  if (!rc) rc = autograd_and_autocast(a, b);
  if (!rc) rc = check_gradient();
  /* A wrong call is an error with a message, never a crash. */
  int64_t sizes[1] = {4};
  disp_tensor *meta = NULL, *e = NULL;
  disp_tensor_empty(sizes, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_META, -1), &meta);
  if (myadd(meta, meta, &e) != DISP_OK) printf("on Meta: %.80s...\n", disp_last_error());
  disp_tensor_release(meta), disp_tensor_release(e), disp_tensor_release(b), disp_tensor_release(a);
  disp_shutdown();
  return rc;
}
