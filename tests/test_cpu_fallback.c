/*
 * test_cpu_fallback.c - the CPU fallback (disp/cpu_fallback.h) on a fake
 * PrivateUse1 device.
 *
 * The device's memory is host memory from malloc, and it has native kernels
 * only for what moving data needs (empty.memory_format, empty_strided,
 * as_strided, _copy_from, _copy_from_and_resize); everything else runs
 * through the fallback, and each result is compared with the same operator
 * run on the CPU.
 */
#include <stdint.h>

#include "test.h"

/* ---- the fake device -------------------------------------------------------- */

static void *dev_alloc(size_t n, disp_device d, void *ctx) {
  (void)d, (void)ctx;
  return n ? malloc(n) : NULL;
}
static void dev_free(void *p, size_t n, disp_device d, void *ctx) {
  (void)n, (void)d, (void)ctx;
  free(p);
}

static int g_copies;     /* _copy_from calls so far */
static int g_fail_copy;  /* the _copy_from call (1-based) that fails; 0: none */

static disp_device dev_of(disp_opt_device d) {
  return disp_device_make((disp_backend)d.type, d.has_value && d.index >= 0 ? d.index : 0);
}

static disp_status dev_empty(disp_int_list size, int32_t dtype, int32_t layout, disp_opt_device device,
                             disp_opt_bool pin, int32_t mf, disp_tensor **out) {
  (void)layout, (void)pin, (void)mf;
  return disp_tensor_empty(size.data, (int)size.len, dtype < 0 ? DISP_DTYPE_FLOAT32 : (disp_dtype)dtype,
                           dev_of(device), out);
}

static disp_status dev_empty_strided(disp_int_list size, disp_int_list stride, int32_t dtype, int32_t layout,
                                     disp_opt_device device, disp_opt_bool pin, disp_tensor **out) {
  (void)layout, (void)pin;
  return disp_tensor_empty_strided(size.data, stride.data, (int)size.len,
                                   dtype < 0 ? DISP_DTYPE_FLOAT32 : (disp_dtype)dtype, dev_of(device), out);
}

static disp_status dev_as_strided(disp_tensor *self, disp_int_list size, disp_int_list stride, disp_opt_int offset,
                                  disp_tensor **out) {
  return disp_tensor_new_view(self, size.data, stride.data, (int)size.len,
                              offset.has_value ? offset.value : disp_tensor_storage_offset(self), out);
}

/* Element i of t, as a byte address (any strides). */
static char *elem(const disp_tensor *t, int64_t i) {
  int64_t off = 0;
  for (int d = disp_tensor_ndim(t) - 1; d >= 0; d--) {
    int64_t n = disp_tensor_sizes(t)[d];
    off += (i % n) * disp_tensor_strides(t)[d];
    i /= n;
  }
  return (char *)disp_tensor_data_ptr(t) + off * (int64_t)disp_tensor_itemsize(t);
}

/* The device's half of copy_: both sides are host memory here. */
static disp_status dev_copy_from(disp_tensor *self, disp_tensor *dst, bool non_blocking, disp_tensor **out) {
  (void)non_blocking;
  if (++g_copies == g_fail_copy) return disp_set_error(DISP_ERR_KERNEL, "fake device: copy %d failed", g_copies);
  int64_t n = disp_tensor_numel(dst);
  if (disp_tensor_dtype(self) != disp_tensor_dtype(dst) || disp_tensor_numel(self) != n)
    return disp_set_error(DISP_ERR_INVALID_ARG, "fake device: copies only between equal dtypes and sizes");
  for (int64_t i = 0; i < n; i++) memcpy(elem(dst, i), elem(self, i), disp_tensor_itemsize(dst));
  *out = disp_tensor_retain(dst);
  return DISP_OK;
}

/* Resizes through the CPU kernel of resize_ (the device's memory is host
 * memory), then copies. */
static disp_status dev_copy_from_and_resize(disp_tensor *self, disp_tensor *dst, disp_tensor **out) {
  const disp_op *resize;
  disp_tensor *r = NULL;
  disp_int_list size = {disp_tensor_sizes(self), (size_t)disp_tensor_ndim(self)};
  disp_status st = disp_op_find("aten::resize_", &resize);
  if (st == DISP_OK) st = disp_redispatch(resize, disp_keyset_of(DISP_KEY_CPU), dst, size, (int32_t)-1, &r);
  disp_tensor_release(r);
  return st == DISP_OK ? dev_copy_from(self, dst, false, out) : st;
}

typedef struct fake_dev {
  disp_library *kernels, *fallback;
} fake_dev;

static disp_status impl(disp_library *lib, const char *name, disp_fn fn) {
  return disp_library_impl(lib, name, disp_kernel_unboxed(fn, 0), NULL);
}

static void fake_dev_down(disp_backend b, fake_dev *d);

/* What is up per backend, so a case that failed half way (and returned
 * early) does not make the next one fail too. */
static fake_dev g_live[DISP_NUM_BACKENDS];

/* The device on `b` (PrivateUse1 or a second one), with the fallback
 * registered for every operator with `flags` (no fallback when < 0). */
static disp_status fake_dev_up(disp_backend b, int flags, fake_dev *d) {
  disp_allocator a = {dev_alloc, dev_free, NULL, NULL};
  disp_key key = disp_key_for_backend(DISP_KEY_DENSE, b);
  fake_dev_down(b, &g_live[b]);
  d->kernels = d->fallback = NULL;
  g_copies = g_fail_copy = 0;
  disp_status st = disp_allocator_register(b, &a);
  if (st == DISP_OK) st = disp_library_new(DISP_LIBRARY_IMPL, "aten", key, __FILE__, __LINE__, &d->kernels);
  if (st == DISP_OK) st = impl(d->kernels, "empty.memory_format", DISP_FN(dev_empty));
  if (st == DISP_OK) st = impl(d->kernels, "empty_strided", DISP_FN(dev_empty_strided));
  if (st == DISP_OK) st = impl(d->kernels, "as_strided", DISP_FN(dev_as_strided));
  if (st == DISP_OK && b == DISP_BACKEND_PRIVATEUSE1) st = impl(d->kernels, "_copy_from", DISP_FN(dev_copy_from));
  if (st == DISP_OK) st = impl(d->kernels, "_copy_from_and_resize", DISP_FN(dev_copy_from_and_resize));
  if (st == DISP_OK && flags >= 0) st = disp_library_new(DISP_LIBRARY_IMPL, "_", key, __FILE__, __LINE__, &d->fallback);
  if (st == DISP_OK && flags >= 0) st = disp_library_fallback(d->fallback, disp_cpu_fallback_kernel((unsigned)flags), NULL);
  g_live[b] = *d;
  return st;
}

static void fake_dev_down(disp_backend b, fake_dev *d) {
  disp_library_free(d->fallback);
  disp_library_free(d->kernels);
  d->fallback = d->kernels = NULL;
  g_live[b] = *d;
  disp_allocator_register(b, NULL);
}

/* ---- tensors ------------------------------------------------------------- */

#define PU1 DISP_BACKEND_PRIVATEUSE1

/* A float32 tensor on `dev` holding vals (its memory is host memory). */
static disp_tensor *make(disp_device dev, const int64_t *sizes, int ndim, const float *vals) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, ndim, DISP_DTYPE_FLOAT32, dev, &t) != DISP_OK) return NULL;
  memcpy(disp_tensor_data_ptr(t), vals, (size_t)disp_tensor_numel(t) * sizeof(float));
  return t;
}

static disp_tensor *on_dev(int index, const int64_t *sizes, int ndim, const float *vals) {
  return make(disp_device_make(PU1, index), sizes, ndim, vals);
}

static disp_tensor *on_cpu(const int64_t *sizes, int ndim, const float *vals) {
  return make(disp_device_make(DISP_BACKEND_CPU, -1), sizes, ndim, vals);
}

/* Whether `got` lies on `want_dev` and holds what the CPU computed. */
static int same_as_cpu(disp_tensor *got, disp_device want_dev, disp_tensor *cpu) {
  if (!got || !cpu || !disp_device_equal(disp_tensor_device(got), want_dev)) return 0;
  disp_opt_device c = {DISP_BACKEND_CPU, -1, true};
  disp_tensor *g = NULL;
  int close = 0;
  if (disp_aten_to_device(got, c, (int32_t)disp_tensor_dtype(got), false, false, -1, &g) == DISP_OK &&
      disp_tensor_allclose(g, cpu, 1e-6, 1e-6, 0, &close) != DISP_OK)
    close = 0;
  disp_tensor_release(g);
  return close;
}

static void release_n(disp_tensor *const *ts, size_t n) {
  for (size_t i = 0; i < n; i++) disp_tensor_release(ts[i]);
}
#define RELEASE_ALL(...) \
  release_n((disp_tensor *[]){__VA_ARGS__}, sizeof((disp_tensor *[]){__VA_ARGS__}) / sizeof(disp_tensor *))

/* ---- warnings ------------------------------------------------------------- */

static char g_warnings[8192];

static void collect(const char *msg, void *ud) {
  (void)ud;
  size_t n = strlen(g_warnings);
  snprintf(g_warnings + n, sizeof g_warnings - n, "%s\n", msg);
}

static int count(const char *text, const char *needle) {
  int k = 0;
  for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle)) k++;
  return k;
}

static const float A[4] = {1, -2, 3, -4}, B[4] = {0.5f, 2, -1, 4};
static const int64_t N4[1] = {4};

/* ---- cases ------------------------------------------------------------------ */

/* add.Tensor's CompositeExplicitAutogradNonFunctional kernel makes an empty
 * device tensor and calls add.out, which falls back: the CPU result is
 * copied into the caller's out tensor, and the op returns that tensor. */
TEST(add_runs_on_cpu_and_returns_on_the_device) {
  fake_dev d;
  ASSERT_OK(fake_dev_up(PU1, 0, &d));
  disp_tensor *a = on_dev(0, N4, 1, A), *b = on_dev(0, N4, 1, B), *ca = on_cpu(N4, 1, A), *cb = on_cpu(N4, 1, B);
  disp_tensor *r = NULL, *cr = NULL;
  ASSERT_OK(disp_aten_add_Tensor(a, b, disp_scalar_double(2.0), &r));
  ASSERT_OK(disp_aten_add_Tensor(ca, cb, disp_scalar_double(2.0), &cr));
  ASSERT_TRUE(same_as_cpu(r, disp_device_make(PU1, 0), cr));
  ASSERT_TRUE(g_copies >= 3); /* a and b there, the result back */
  RELEASE_ALL(a, b, ca, cb, r, cr);
  fake_dev_down(PU1, &d);
  return 0;
}

/* In place: the CPU result is copied back into the device tensor, which is
 * what the op returns (the caller's own object). */
TEST(inplace_mul_writes_the_device_tensor) {
  fake_dev d;
  ASSERT_OK(fake_dev_up(PU1, 0, &d));
  disp_tensor *a = on_dev(0, N4, 1, A), *b = on_dev(0, N4, 1, B), *ca = on_cpu(N4, 1, A), *cb = on_cpu(N4, 1, B);
  disp_tensor *r = NULL, *cr = NULL;
  ASSERT_OK(disp_aten_mul__Tensor(a, b, &r));
  ASSERT_OK(disp_aten_mul__Tensor(ca, cb, &cr));
  ASSERT_TRUE(r == a);
  ASSERT_TRUE(same_as_cpu(a, disp_device_make(PU1, 0), ca));
  ASSERT_EQ_INT(disp_tensor_refcount(a), 2); /* the caller's and r */
  RELEASE_ALL(a, b, ca, cb, r, cr);
  fake_dev_down(PU1, &d);
  return 0;
}

/* out=: the out argument gets the result and is returned; an out tensor of
 * the wrong size is resized as 1.13 does (_copy_from_and_resize). */
TEST(out_argument_is_written_and_returned) {
  fake_dev d;
  ASSERT_OK(fake_dev_up(PU1, 0, &d));
  disp_tensor *a = on_dev(0, N4, 1, A), *b = on_dev(0, N4, 1, B), *ca = on_cpu(N4, 1, A), *cb = on_cpu(N4, 1, B);
  disp_tensor *o = on_dev(0, N4, 1, B), *r = NULL, *cr = NULL, *empty = NULL, *r2 = NULL;
  ASSERT_OK(disp_aten_add_Tensor(ca, cb, disp_scalar_int(1), &cr));
  ASSERT_OK(disp_aten_add_out(a, b, disp_scalar_int(1), o, &r));
  ASSERT_TRUE(r == o);
  ASSERT_TRUE(same_as_cpu(o, disp_device_make(PU1, 0), cr));
  int64_t zero = 0;
  ASSERT_OK(disp_tensor_empty(&zero, 1, DISP_DTYPE_FLOAT32, disp_device_make(PU1, 0), &empty));
  ASSERT_OK(disp_aten_add_out(a, b, disp_scalar_int(1), empty, &r2));
  ASSERT_TRUE(r2 == empty);
  ASSERT_EQ_INT(disp_tensor_numel(empty), 4);
  ASSERT_TRUE(same_as_cpu(empty, disp_device_make(PU1, 0), cr));
  RELEASE_ALL(a, b, ca, cb, o, r, cr, empty, r2);
  fake_dev_down(PU1, &d);
  return 0;
}

/* The per-operator route: the fallback as cat's own PrivateUse1 kernel
 * (ahead of its CompositeExplicitAutogradNonFunctional kernel), with a
 * Tensor[] argument, in a device without a global fallback. */
TEST(per_operator_route_runs_cat_with_a_tensor_list) {
  fake_dev d;
  ASSERT_OK(fake_dev_up(PU1, -1, &d));
  disp_library *lib = NULL;
  disp_registration *reg = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &lib));
  ASSERT_OK(disp_library_impl(lib, "cat", disp_cpu_fallback_kernel(0), &reg));
  disp_tensor *a = on_dev(0, N4, 1, A), *b = on_dev(0, N4, 1, B), *ca = on_cpu(N4, 1, A), *cb = on_cpu(N4, 1, B);
  disp_tensor *r = NULL, *cr = NULL, *m = NULL;
  disp_tensor *l[2] = {a, b}, *cl[2] = {ca, cb};
  g_copies = 0;
  ASSERT_OK(disp_aten_cat((disp_tensor_list){l, 2}, 0, &r));
  ASSERT_OK(disp_aten_cat((disp_tensor_list){cl, 2}, 0, &cr));
  ASSERT_EQ_INT(g_copies, 3); /* a, b to the CPU; the result back */
  ASSERT_TRUE(same_as_cpu(r, disp_device_make(PU1, 0), cr));
  /* only cat was routed: mul finds no kernel */
  ASSERT_STATUS(disp_aten_mul_Tensor(a, b, &m), DISP_ERR_NO_KERNEL);
  ASSERT_CONTAINS(disp_last_error(), "Could not run 'aten::mul.Tensor' with arguments from the 'PrivateUse1' backend");
  RELEASE_ALL(a, b, ca, cb, r, cr);
  disp_library_free(lib);
  fake_dev_down(PU1, &d);
  return 0;
}

/* Tensor? arguments (None stays None) and a tuple of returns. */
TEST(optional_tensor_and_tuple_returns) {
  fake_dev d;
  ASSERT_OK(fake_dev_up(PU1, 0, &d));
  static const float x[6] = {0.1f, 0.7f, -0.3f, 1.5f, 0.2f, -0.9f}, w[3] = {1, 2, 0.5f};
  const int64_t s23[2] = {2, 3}, s3[1] = {3}, s2[1] = {2};
  disp_tensor *dx = on_dev(0, s23, 2, x), *cx = on_cpu(s23, 2, x), *dw = on_dev(0, s3, 1, w), *cw = on_cpu(s3, 1, w);
  disp_tensor *tgt_cpu = NULL, *tgt = NULL;
  ASSERT_OK(disp_tensor_empty(s2, 1, DISP_DTYPE_INT64, disp_device_make(DISP_BACKEND_CPU, -1), &tgt_cpu));
  ((int64_t *)disp_tensor_data_ptr(tgt_cpu))[0] = 2;
  ((int64_t *)disp_tensor_data_ptr(tgt_cpu))[1] = 0;
  ASSERT_OK(disp_tensor_empty(s2, 1, DISP_DTYPE_INT64, disp_device_make(PU1, 0), &tgt));
  memcpy(disp_tensor_data_ptr(tgt), disp_tensor_data_ptr(tgt_cpu), 2 * sizeof(int64_t));
  for (int with_weight = 0; with_weight < 2; with_weight++) {
    disp_tensor *o[2] = {NULL}, *co[2] = {NULL};
    ASSERT_OK(disp_aten_nll_loss_forward(dx, tgt, with_weight ? dw : NULL, 1, -100, &o[0], &o[1]));
    ASSERT_OK(disp_aten_nll_loss_forward(cx, tgt_cpu, with_weight ? cw : NULL, 1, -100, &co[0], &co[1]));
    ASSERT_TRUE(same_as_cpu(o[0], disp_device_make(PU1, 0), co[0]));
    ASSERT_TRUE(same_as_cpu(o[1], disp_device_make(PU1, 0), co[1]));
    for (int i = 0; i < 2; i++) disp_tensor_release(o[i]), disp_tensor_release(co[i]);
  }
  disp_tensor *v = NULL, *ix = NULL, *cv = NULL, *cix = NULL;
  ASSERT_OK(disp_aten_max_dim(dx, 1, false, &v, &ix));
  ASSERT_OK(disp_aten_max_dim(cx, 1, false, &cv, &cix));
  ASSERT_TRUE(same_as_cpu(v, disp_device_make(PU1, 0), cv));
  ASSERT_TRUE(same_as_cpu(ix, disp_device_make(PU1, 0), cix));
  ASSERT_EQ_INT(disp_tensor_dtype(ix), DISP_DTYPE_INT64);
  RELEASE_ALL(dx, cx, dw, cw, tgt_cpu, tgt, v, ix, cv, cix);
  fake_dev_down(PU1, &d);
  return 0;
}

/* linear (CompositeImplicitAutograd) decomposes on the device: t() is a
 * native view, so addmm / mm fall back with a transposed (strided) device
 * tensor, with and without the bias. */
TEST(linear_with_and_without_bias) {
  fake_dev d;
  ASSERT_OK(fake_dev_up(PU1, 0, &d));
  static const float x[6] = {1, 2, 3, -1, 0.5f, 2}, w[6] = {0.5f, -1, 2, 1, 1, -0.5f}, bias[2] = {0.25f, -3};
  const int64_t s23[2] = {2, 3}, s2[1] = {2};
  disp_tensor *dx = on_dev(0, s23, 2, x), *dw = on_dev(0, s23, 2, w), *db = on_dev(0, s2, 1, bias);
  disp_tensor *cx = on_cpu(s23, 2, x), *cw = on_cpu(s23, 2, w), *cb = on_cpu(s2, 1, bias);
  for (int with_bias = 0; with_bias < 2; with_bias++) {
    disp_tensor *r = NULL, *cr = NULL;
    ASSERT_OK(disp_aten_linear(dx, dw, with_bias ? db : NULL, &r));
    ASSERT_OK(disp_aten_linear(cx, cw, with_bias ? cb : NULL, &cr));
    ASSERT_TRUE(same_as_cpu(r, disp_device_make(PU1, 0), cr));
    RELEASE_ALL(r, cr);
  }
  RELEASE_ALL(dx, dw, db, cx, cw, cb);
  fake_dev_down(PU1, &d);
  return 0;
}

/* ---- operators of the test's own --------------------------------------------- */

static disp_opt_device g_seen_device; /* what the CPU kernel of iota got */

static disp_status iota_cpu(int64_t n, disp_opt_device device, disp_tensor **out) {
  g_seen_device = device;
  disp_status st = disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), out);
  for (int64_t i = 0; st == DISP_OK && i < n; i++) ((float *)disp_tensor_data_ptr(*out))[i] = (float)i;
  return st;
}

/* A factory's BackendSelect kernel: the key comes from the Device argument. */
static disp_status iota_backend_select(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)ks, (void)ud;
  const disp_value *dv = disp_stack_peek(s, 0);
  disp_backend b = dv->tag == DISP_VALUE_DEVICE ? (disp_backend)dv->u.device.type : DISP_BACKEND_CPU;
  return disp_redispatch_boxed(op, disp_keyset_of(disp_key_for_backend(DISP_KEY_DENSE, b)), s);
}

static disp_status bad_alias_cpu(disp_tensor *self, disp_tensor **out) {
  *out = disp_tensor_retain(self);
  return DISP_OK;
}

/* self + every element of xs that is not None. */
static disp_status add_opt_cpu(disp_tensor *self, disp_tensor_list xs, disp_tensor **out) {
  disp_status st = disp_aten_clone(self, -1, out);
  for (size_t i = 0; st == DISP_OK && i < xs.len; i++) {
    disp_tensor *r = NULL;
    if (xs.data[i]) st = disp_aten_add__Tensor(*out, xs.data[i], disp_scalar_int(1), &r);
    disp_tensor_release(r);
  }
  return st;
}

static disp_status fill_all_cpu(disp_tensor_list xs, double v) {
  disp_status st = DISP_OK;
  for (size_t i = 0; st == DISP_OK && i < xs.len; i++) {
    disp_tensor *r = NULL;
    st = disp_aten_fill__Scalar(xs.data[i], disp_scalar_double(v), &r);
    disp_tensor_release(r);
  }
  return st;
}

typedef struct test_ops {
  disp_library *def, *cpu, *bsel;
} test_ops;

static disp_status test_ops_up(test_ops *o) {
  o->def = o->cpu = o->bsel = NULL;
  disp_status st = disp_library_new(DISP_LIBRARY_DEF, "fbtest", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &o->def);
  if (st == DISP_OK) st = disp_library_def(o->def, "iota(int n, *, Device? device=None) -> Tensor", NULL);
  if (st == DISP_OK) st = disp_library_def(o->def, "bad(Tensor(a!) self) -> Tensor(b!)", NULL);
  if (st == DISP_OK) st = disp_library_def(o->def, "add_opt(Tensor self, Tensor?[] xs) -> Tensor", NULL);
  if (st == DISP_OK) st = disp_library_def(o->def, "fill_all_(Tensor(a!)[] xs, float v) -> ()", NULL);
  if (st == DISP_OK) st = disp_library_def(o->def, "nowhere(Tensor self) -> Tensor", NULL);
  if (st == DISP_OK) st = disp_library_new(DISP_LIBRARY_IMPL, "fbtest", DISP_KEY_CPU, __FILE__, __LINE__, &o->cpu);
  if (st == DISP_OK) st = impl(o->cpu, "iota", DISP_FN(iota_cpu));
  if (st == DISP_OK) st = impl(o->cpu, "bad", DISP_FN(bad_alias_cpu));
  if (st == DISP_OK) st = impl(o->cpu, "add_opt", DISP_FN(add_opt_cpu));
  if (st == DISP_OK) st = impl(o->cpu, "fill_all_", DISP_FN(fill_all_cpu));
  if (st == DISP_OK)
    st = disp_library_new(DISP_LIBRARY_IMPL, "fbtest", DISP_KEY_BACKEND_SELECT, __FILE__, __LINE__, &o->bsel);
  if (st == DISP_OK) st = disp_library_impl(o->bsel, "iota", disp_kernel_boxed(iota_backend_select, NULL, NULL), NULL);
  return st;
}

static void test_ops_down(test_ops *o) {
  disp_library_free(o->bsel);
  disp_library_free(o->cpu);
  disp_library_free(o->def);
  o->bsel = o->cpu = o->def = NULL;
}

static test_ops g_ops; /* as g_live: what a failed case left up */

/* The fake device with the fallback, the test's operators, and `name`. */
static disp_status ops_up(fake_dev *d, const char *name, const disp_op **op) {
  test_ops_down(&g_ops);
  disp_status st = fake_dev_up(PU1, 0, d);
  if (st == DISP_OK) st = test_ops_up(&g_ops);
  return st == DISP_OK ? disp_op_find(name, op) : st;
}

static void ops_down(fake_dev *d) {
  test_ops_down(&g_ops);
  fake_dev_down(PU1, d);
}

/* A factory: the CPU kernel is given device cpu, the result goes to the
 * device the call named (index 1 here). */
TEST(factory_device_argument_is_rewritten) {
  fake_dev d;
  const disp_op *iota;
  ASSERT_OK(ops_up(&d, "fbtest::iota", &iota));
  disp_opt_device on1 = {PU1, 1, true};
  disp_tensor *r = NULL, *cr = NULL;
  ASSERT_OK(disp_call(iota, (int64_t)3, on1, &r));
  ASSERT_TRUE(g_seen_device.has_value);
  ASSERT_EQ_INT(g_seen_device.type, DISP_BACKEND_CPU);
  ASSERT_EQ_INT(g_seen_device.index, -1);
  ASSERT_OK(iota_cpu(3, on1, &cr));
  ASSERT_TRUE(same_as_cpu(r, disp_device_make(PU1, 1), cr));
  disp_tensor_release(r);
  disp_tensor_release(cr);
  ops_down(&d);
  return 0;
}

/* Calls the test's operator `name` on a device tensor: it must fail with
 * `want` and a message holding `msg`, and leave nothing behind. */
static int refused(const char *name, disp_status want, const char *msg) {
  fake_dev d;
  const disp_op *op;
  ASSERT_OK(ops_up(&d, name, &op));
  disp_tensor *a = on_dev(0, N4, 1, A), *r = NULL;
  ASSERT_STATUS(disp_call(op, a, &r), want);
  ASSERT_CONTAINS(disp_last_error(), msg);
  ASSERT_TRUE(r == NULL);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  disp_tensor_release(a);
  ops_down(&d);
  return 0;
}

/* 1.13's check of mutable aliases: a written return must alias a written
 * argument. */
TEST(mismatched_mutable_alias_is_refused) {
  return refused("fbtest::bad", DISP_ERR_KERNEL,
                 "The operator fbtest::bad appears to have invalid alias information. Found a return tensor argument "
                 "with a mismatched mutable alias: Tensor(b!)");
}

/* Tensor?[] arguments: None elements stay None, the others move. */
TEST(optional_tensor_list_argument) {
  fake_dev d;
  const disp_op *op;
  ASSERT_OK(ops_up(&d, "fbtest::add_opt", &op));
  disp_tensor *a = on_dev(0, N4, 1, A), *b = on_dev(0, N4, 1, B), *ca = on_cpu(N4, 1, A), *cb = on_cpu(N4, 1, B);
  disp_tensor *xs[3] = {b, NULL, a}, *cxs[3] = {cb, NULL, ca}, *r = NULL, *cr = NULL;
  ASSERT_OK(disp_call(op, a, (disp_tensor_list){xs, 3}, &r));
  ASSERT_OK(add_opt_cpu(ca, (disp_tensor_list){cxs, 3}, &cr));
  ASSERT_TRUE(same_as_cpu(r, disp_device_make(PU1, 0), cr));
  RELEASE_ALL(a, b, ca, cb, r, cr);
  ops_down(&d);
  return 0;
}

/* A written Tensor(a!)[]: each element gets its CPU result back. */
TEST(written_tensor_list_is_copied_back) {
  fake_dev d;
  const disp_op *op;
  ASSERT_OK(ops_up(&d, "fbtest::fill_all_", &op));
  disp_tensor *a = on_dev(0, N4, 1, A), *b = on_dev(0, N4, 1, B), *want = NULL;
  disp_tensor *xs[2] = {a, b};
  ASSERT_OK(disp_call(op, (disp_tensor_list){xs, 2}, 2.5));
  static const float fives[4] = {2.5f, 2.5f, 2.5f, 2.5f};
  want = on_cpu(N4, 1, fives);
  ASSERT_TRUE(same_as_cpu(a, disp_device_make(PU1, 0), want));
  ASSERT_TRUE(same_as_cpu(b, disp_device_make(PU1, 0), want));
  disp_tensor_release(a);
  disp_tensor_release(b);
  disp_tensor_release(want);
  ops_down(&d);
  return 0;
}

/* An operator the CPU has no kernel for either: the dispatcher's error for
 * the CPU key, named after the operator; nothing leaks. */
TEST(operator_without_a_cpu_kernel) {
  return refused("fbtest::nowhere", DISP_ERR_NO_KERNEL,
                 "Could not run 'fbtest::nowhere' with arguments from the 'CPU' backend");
}

/* A view operator without a device kernel: 1.13 warns (every call) and
 * returns a copy on the device; with DISP_CPU_FALLBACK_ERROR_ON_VIEWS it is
 * refused before anything moves. */
TEST(view_operator_warns_and_copies_or_is_refused) {
  fake_dev d;
  ASSERT_OK(fake_dev_up(PU1, 0, &d));
  g_warnings[0] = 0;
  disp_warning_handler prev = disp_set_warning_handler(collect, NULL);
  disp_tensor *a = on_dev(0, N4, 1, A), *ca = on_cpu(N4, 1, A), *v1 = NULL, *v2 = NULL, *cv = NULL, *v3 = NULL;
  const int64_t s22[2] = {2, 2};
  disp_int_list shape = {s22, 2};
  disp_status st1 = disp_aten_view(a, shape, &v1);
  disp_status st2 = disp_aten_view(a, shape, &v2);
  disp_set_warning_handler(prev, NULL);
  ASSERT_OK(st1);
  ASSERT_OK(st2);
  ASSERT_OK(disp_aten_view(ca, shape, &cv));
  ASSERT_EQ_INT(count(g_warnings, "The operator aten::view appears to be a view operator, but it has no implementation "
                                  "for the backend \"privateuseone:0\". View operators don't support falling back to "
                                  "run on the CPU, since the tensor's storage cannot be shared across devices."),
                2);
  ASSERT_TRUE(same_as_cpu(v1, disp_device_make(PU1, 0), cv));
  ASSERT_TRUE(disp_tensor_storage(v1) != disp_tensor_storage(a)); /* a copy, as 1.13 */

  disp_library *lib = NULL;
  ASSERT_OK(disp_library_new(DISP_LIBRARY_IMPL, "aten", DISP_KEY_PRIVATEUSE1, __FILE__, __LINE__, &lib));
  ASSERT_OK(disp_library_impl(lib, "view", disp_cpu_fallback_kernel(DISP_CPU_FALLBACK_ERROR_ON_VIEWS), NULL));
  g_copies = 0;
  ASSERT_STATUS(disp_aten_view(a, shape, &v3), DISP_ERR_NO_KERNEL);
  ASSERT_CONTAINS(disp_last_error(), "The operator aten::view appears to be a view operator, but it has no "
                                     "implementation for the backend \"privateuseone:0\".");
  ASSERT_EQ_INT(g_copies, 0);
  ASSERT_TRUE(v3 == NULL);
  disp_library_free(lib);
  RELEASE_ALL(a, ca, v1, v2, cv);
  fake_dev_down(PU1, &d);
  return 0;
}

/* Autograd records relu on the device; the forward and the backward
 * (threshold_backward, the seed's fill_, sum) fall back; the gradient lands
 * on the device and matches the CPU's. */
TEST(relu_with_autograd_falls_back_forward_and_backward) {
  fake_dev d;
  ASSERT_OK(fake_dev_up(PU1, 0, &d));
  disp_tensor *x = on_dev(0, N4, 1, A), *cx = on_cpu(N4, 1, A), *y = NULL, *s = NULL, *cy = NULL, *cs = NULL;
  ASSERT_OK(disp_tensor_set_requires_grad(x, 1));
  ASSERT_OK(disp_tensor_set_requires_grad(cx, 1));
  ASSERT_OK(disp_aten_relu(x, &y));
  ASSERT_OK(disp_aten_sum(y, -1, &s));
  ASSERT_TRUE(disp_tensor_grad_fn(y) != NULL);
  ASSERT_EQ_STR(disp_node_name(disp_tensor_grad_fn(y)), "ReluBackward0");
  ASSERT_OK(disp_autograd_backward(&s, 1, NULL, 0, 0));
  ASSERT_OK(disp_aten_relu(cx, &cy));
  ASSERT_OK(disp_aten_sum(cy, -1, &cs));
  ASSERT_OK(disp_autograd_backward(&cs, 1, NULL, 0, 0));
  ASSERT_TRUE(same_as_cpu(y, disp_device_make(PU1, 0), cy));
  ASSERT_TRUE(same_as_cpu(disp_tensor_grad(x), disp_device_make(PU1, 0), disp_tensor_grad(cx)));
  RELEASE_ALL(x, cx, y, s, cy, cs);
  fake_dev_down(PU1, &d);
  return 0;
}

/* DISP_CPU_FALLBACK_WARN: the first fallback of each operator is named,
 * in the words of 1.13's MPS fallback, and only the first. */
TEST(warns_once_per_operator) {
  fake_dev d;
  ASSERT_OK(fake_dev_up(PU1, DISP_CPU_FALLBACK_WARN, &d));
  g_warnings[0] = 0;
  disp_warning_handler prev = disp_set_warning_handler(collect, NULL);
  disp_tensor *a = on_dev(0, N4, 1, A), *r[3] = {NULL};
  disp_status st[3] = {disp_aten_neg(a, &r[0]), disp_aten_neg(a, &r[1]), disp_aten_exp(a, &r[2])};
  disp_set_warning_handler(prev, NULL);
  for (int i = 0; i < 3; i++) ASSERT_OK(st[i]);
  ASSERT_EQ_INT(count(g_warnings, "The operator 'aten::neg' is not currently supported on the PrivateUse1 backend and "
                                  "will fall back to run on the CPU. This may have performance implications."),
                1);
  ASSERT_EQ_INT(count(g_warnings, "The operator 'aten::exp' is not currently supported on the PrivateUse1 backend"), 1);
  ASSERT_EQ_INT(count(g_warnings, "is not currently supported"), 2);
  for (int i = 0; i < 3; i++) disp_tensor_release(r[i]);
  disp_tensor_release(a);
  fake_dev_down(PU1, &d);
  return 0;
}

/* Two devices of the backend: no one device to return to, the error a
 * native kernel gives. A CPU tensor joins any device; the results go where
 * the first tensor argument is (1.13's compute_target_device), even the CPU. */
TEST(devices_of_the_arguments) {
  fake_dev d;
  ASSERT_OK(fake_dev_up(PU1, 0, &d));
  disp_tensor *a0 = on_dev(0, N4, 1, A), *b1 = on_dev(1, N4, 1, B), *ca = on_cpu(N4, 1, A), *cb = on_cpu(N4, 1, B);
  disp_tensor *r = NULL, *r2 = NULL, *r3 = NULL, *cr = NULL;
  ASSERT_STATUS(disp_aten_mul_Tensor(a0, b1, &r), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "Expected all tensors to be on the same device, but found at least two devices, "
                                     "privateuseone:0 and privateuseone:1!");
  ASSERT_TRUE(r == NULL);
  ASSERT_OK(disp_aten_mul_Tensor(ca, cb, &cr));
  ASSERT_OK(disp_aten_mul_Tensor(b1, ca, &r2));
  ASSERT_TRUE(same_as_cpu(r2, disp_device_make(PU1, 1), cr));
  ASSERT_OK(disp_aten_mul_Tensor(ca, b1, &r3));
  ASSERT_TRUE(same_as_cpu(r3, disp_device_make(DISP_BACKEND_CPU, -1), cr));
  RELEASE_ALL(a0, b1, ca, cb, r2, r3, cr);
  fake_dev_down(PU1, &d);
  return 0;
}

/* A stack [7, a, b]: the arguments of a binary operator above a value
 * that is not the call's. NULL when anything failed. */
static disp_stack *stack_7ab(disp_tensor *a, disp_tensor *b) {
  disp_stack *s = disp_stack_new();
  if (s && a && b && disp_stack_push_int(s, 7) == DISP_OK && disp_stack_push_tensor(s, a) == DISP_OK &&
      disp_stack_push_tensor(s, b) == DISP_OK)
    return s;
  disp_stack_free(s);
  return NULL;
}

/* Calls the fallback directly on [a, b] for `name` with a failing copy
 * `fail_at`; the stack must come back exactly as given. */
static int stack_kept(const char *name, int fail_at, disp_status want) {
  const disp_op *op;
  ASSERT_OK(disp_op_find(name, &op));
  disp_tensor *a = on_dev(0, N4, 1, A), *b = on_dev(0, N4, 1, B);
  disp_stack *s = stack_7ab(a, b);
  ASSERT_TRUE(s != NULL);
  float before[4];
  memcpy(before, disp_tensor_data_ptr(a), sizeof before);
  g_copies = 0;
  g_fail_copy = fail_at;
  disp_keyset ks = disp_keyset_or(disp_tensor_keyset(a), disp_tensor_keyset(b));
  ASSERT_STATUS(disp_cpu_fallback(op, disp_keyset_minus(ks, disp_keyset_autograd_keys()), s, NULL), want);
  g_fail_copy = 0;
  ASSERT_EQ_INT(disp_stack_size(s), 3);
  ASSERT_EQ_INT(disp_stack_at(s, 0)->u.i, 7);
  ASSERT_TRUE(disp_stack_at(s, 1)->u.tensor == a);
  ASSERT_TRUE(disp_stack_at(s, 2)->u.tensor == b);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 2);
  ASSERT_EQ_INT(disp_tensor_refcount(b), 2);
  if (fail_at == 3 && strcmp(name, "aten::mul_.Tensor") == 0) /* the copy back failed: a as it was */
    ASSERT_TRUE(memcmp(before, disp_tensor_data_ptr(a), sizeof before) == 0);
  disp_stack_free(s);
  disp_tensor_release(a);
  disp_tensor_release(b);
  return 0;
}

/* Errors half way leave the caller's stack as it was, with nothing leaked
 * (ASan): moving the second argument, moving the result back, copying an
 * in-place result back. */
TEST(errors_leave_the_stack_as_given) {
  fake_dev d;
  ASSERT_OK(fake_dev_up(PU1, 0, &d));
  if (stack_kept("aten::mul.Tensor", 1, DISP_ERR_KERNEL)) return 1;
  ASSERT_CONTAINS(disp_last_error(), "fake device: copy 1 failed");
  if (stack_kept("aten::mul.Tensor", 2, DISP_ERR_KERNEL)) return 1;
  if (stack_kept("aten::mul.Tensor", 3, DISP_ERR_KERNEL)) return 1;
  if (stack_kept("aten::mul_.Tensor", 3, DISP_ERR_KERNEL)) return 1;
  fake_dev_down(PU1, &d);
  return 0;
}

/* Success: the arguments are replaced by the returns, the values below stay. */
TEST(success_replaces_the_arguments) {
  fake_dev d;
  ASSERT_OK(fake_dev_up(PU1, 0, &d));
  const disp_op *op;
  ASSERT_OK(disp_op_find("aten::mul.Tensor", &op));
  disp_tensor *a = on_dev(0, N4, 1, A), *b = on_dev(0, N4, 1, B), *ca = on_cpu(N4, 1, A), *cb = on_cpu(N4, 1, B);
  disp_tensor *cr = NULL;
  disp_stack *s = stack_7ab(a, b);
  ASSERT_TRUE(s != NULL);
  ASSERT_OK(disp_cpu_fallback(op, disp_keyset_of(DISP_KEY_PRIVATEUSE1), s, NULL));
  ASSERT_OK(disp_aten_mul_Tensor(ca, cb, &cr));
  ASSERT_EQ_INT(disp_stack_size(s), 2);
  ASSERT_EQ_INT(disp_stack_at(s, 0)->u.i, 7);
  ASSERT_EQ_INT(disp_stack_at(s, 1)->tag, DISP_VALUE_TENSOR);
  ASSERT_TRUE(same_as_cpu(disp_stack_at(s, 1)->u.tensor, disp_device_make(PU1, 0), cr));
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  disp_stack_free(s);
  RELEASE_ALL(a, b, ca, cb, cr);
  fake_dev_down(PU1, &d);
  return 0;
}

/* What the kernel refuses before touching anything. */
TEST(bad_calls_are_refused) {
  fake_dev d;
  ASSERT_OK(fake_dev_up(PU1, 0, &d));
  const disp_op *op;
  ASSERT_OK(disp_op_find("aten::mul.Tensor", &op));
  disp_tensor *a = on_dev(0, N4, 1, A);
  disp_stack *s = disp_stack_new();
  ASSERT_OK(disp_stack_push_tensor(s, a));
  disp_keyset pu1 = disp_keyset_of(DISP_KEY_PRIVATEUSE1);
  ASSERT_STATUS(disp_cpu_fallback(NULL, pu1, s, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_cpu_fallback: op is NULL");
  ASSERT_STATUS(disp_cpu_fallback(op, pu1, NULL, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_cpu_fallback: stack is NULL");
  ASSERT_STATUS(disp_cpu_fallback(op, pu1, s, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_cpu_fallback: aten::mul.Tensor expects 2 arguments on the stack, found 1");
  ASSERT_OK(disp_stack_push_tensor(s, a));
  ASSERT_STATUS(disp_cpu_fallback(op, pu1, s, (void *)(uintptr_t)0x10), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_cpu_fallback: unknown option bits 0x10 for aten::mul.Tensor on PrivateUse1");
  ASSERT_STATUS(disp_cpu_fallback(op, disp_keyset_of(DISP_KEY_CPU), s, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "aten::mul.Tensor reached the CPU fallback on the CPU key: it would run itself again");
  ASSERT_EQ_INT(disp_stack_size(s), 2);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 3);
  disp_stack_free(s);
  disp_tensor_release(a);
  fake_dev_down(PU1, &d);
  return 0;
}

/* A backend without _copy_from: moving a tensor would reach the fallback
 * again, forever; it is refused with the operators the backend lacks. */
TEST(fallback_reached_while_moving_is_refused) {
  fake_dev d;
  ASSERT_OK(fake_dev_up(DISP_BACKEND_PRIVATEUSE2, 0, &d));
  disp_tensor *a = make(disp_device_make(DISP_BACKEND_PRIVATEUSE2, 0), N4, 1, A), *r = NULL;
  ASSERT_TRUE(a != NULL);
  ASSERT_STATUS(disp_aten_neg(a, &r), DISP_ERR_NO_KERNEL);
  ASSERT_CONTAINS(disp_last_error(), "The CPU fallback was reached for aten::_copy_from on PrivateUse2 while it was "
                                     "moving tensors between PrivateUse2 and the CPU");
  ASSERT_TRUE(r == NULL);
  ASSERT_EQ_INT(disp_tensor_refcount(a), 1);
  disp_tensor_release(a);
  fake_dev_down(DISP_BACKEND_PRIVATEUSE2, &d);
  return 0;
}

/* The fallback shows in the tables as what it is: a boxed backend fallback. */
TEST(registration_shows_in_the_dumps) {
  fake_dev d;
  ASSERT_OK(fake_dev_up(PU1, 0, &d));
  char *dump = disp_fallback_dump();
  ASSERT_CONTAINS(dump, "PrivateUse1: registered at tests/test_cpu_fallback.c:");
  free(dump);
  fake_dev_down(PU1, &d);
  dump = disp_fallback_dump();
  ASSERT_TRUE(dump && !strstr(dump, "PrivateUse1: registered at tests/test_cpu_fallback.c:"));
  free(dump);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(add_runs_on_cpu_and_returns_on_the_device),
    TEST_ENTRY(inplace_mul_writes_the_device_tensor),
    TEST_ENTRY(out_argument_is_written_and_returned),
    TEST_ENTRY(per_operator_route_runs_cat_with_a_tensor_list),
    TEST_ENTRY(optional_tensor_and_tuple_returns),
    TEST_ENTRY(linear_with_and_without_bias),
    TEST_ENTRY(factory_device_argument_is_rewritten),
    TEST_ENTRY(mismatched_mutable_alias_is_refused),
    TEST_ENTRY(optional_tensor_list_argument),
    TEST_ENTRY(written_tensor_list_is_copied_back),
    TEST_ENTRY(operator_without_a_cpu_kernel),
    TEST_ENTRY(view_operator_warns_and_copies_or_is_refused),
    TEST_ENTRY(relu_with_autograd_falls_back_forward_and_backward),
    TEST_ENTRY(warns_once_per_operator),
    TEST_ENTRY(devices_of_the_arguments),
    TEST_ENTRY(errors_leave_the_stack_as_given),
    TEST_ENTRY(success_replaces_the_arguments),
    TEST_ENTRY(bad_calls_are_refused),
    TEST_ENTRY(fallback_reached_while_moving_is_refused),
    TEST_ENTRY(registration_shows_in_the_dumps),
    TEST_END};

TEST_MAIN()
