/*
 * test_devices.c - issue 8 case 4: built-in kernels under mixed devices, and
 * case 5's typed entries under NULL arguments.
 *
 * Every CPU, Meta and CompositeExplicitAutograd kernel runs only when its
 * tensors share one device (Note [One device check] in
 * src/kernels/device_check.c), with PyTorch 1.13's TensorIterator rule and
 * message; a refused call changes neither its arguments nor their
 * reference counts.
 */
#include <stdint.h>
#include <string.h>

#include <disp.h>

#include "disp/aten.h"
#include "test.h"

#define MIXED "Expected all tensors to be on the same device, but found at least two devices, meta and cpu!"

static disp_tensor *make(disp_backend b, int ndim, int64_t rows, int64_t cols) {
  int64_t sizes[2] = {rows, cols};
  disp_tensor *t = NULL;
  disp_tensor_empty(sizes, ndim, DISP_DTYPE_FLOAT32, disp_device_make(b, -1), &t);
  if (t && b == DISP_BACKEND_CPU)
    for (int64_t i = 0; i < disp_tensor_numel(t); i++) ((float *)disp_tensor_data_ptr(t))[i] = (float)i + 0.5f;
  return t;
}
static disp_tensor *cpu(int64_t rows, int64_t cols) { return make(DISP_BACKEND_CPU, 2, rows, cols); }
static disp_tensor *meta(int64_t rows, int64_t cols) { return make(DISP_BACKEND_META, 2, rows, cols); }
static disp_tensor *cpu_scalar(void) { return make(DISP_BACKEND_CPU, 0, 0, 0); }
static disp_tensor *meta_scalar(void) { return make(DISP_BACKEND_META, 0, 0, 0); }

static void release_all(disp_tensor **ts, int n) {
  for (int i = 0; i < n; i++) disp_tensor_release(ts[i]);
}

/* What a refused call must leave as it was: a tensor's geometry, data and
 * reference count. */
typedef struct snap {
  int ndim;
  int64_t sizes[2];
  float data[16];
  size_t refs;
} snap;

static snap take(const disp_tensor *t) {
  snap s;
  memset(&s, 0, sizeof s);
  s.ndim = disp_tensor_ndim(t);
  for (int i = 0; i < s.ndim && i < 2; i++) s.sizes[i] = disp_tensor_sizes(t)[i];
  if (disp_tensor_device(t).type == DISP_BACKEND_CPU && disp_tensor_numel(t) <= 16)
    memcpy(s.data, disp_tensor_data_ptr(t), (size_t)disp_tensor_numel(t) * sizeof(float));
  s.refs = disp_tensor_refcount(t);
  return s;
}

static int same(snap a, snap b) { return !memcmp(&a, &b, sizeof a); }

/* ---- case 4: mixed devices ---------------------------------------------- */

TEST(add_out_meta_inputs_cpu_out_refused) {
  disp_tensor *a = meta(2, 3), *b = meta(2, 3), *out = cpu(2, 3), *r = NULL;
  snap before = take(out);
  ASSERT_STATUS(disp_aten_add_out(a, b, disp_scalar_int(1), out, &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::add.out: " MIXED);
  ASSERT_TRUE(r == NULL);
  ASSERT_TRUE(same(before, take(out)));
  release_all((disp_tensor *[]){a, b, out}, 3);
  return 0;
}

TEST(add_out_cpu_inputs_meta_out_refused) {
  disp_tensor *a = cpu(2, 3), *b = cpu(2, 3), *out = meta(4, 1), *r = NULL;
  snap before = take(out), ba = take(a);
  ASSERT_STATUS(disp_aten_add_out(a, b, disp_scalar_int(1), out, &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::add.out: " MIXED);
  ASSERT_TRUE(r == NULL);
  ASSERT_TRUE(same(before, take(out)));
  ASSERT_TRUE(same(ba, take(a)));
  release_all((disp_tensor *[]){a, b, out}, 3);
  return 0;
}

TEST(mm_cpu_meta_refused) {
  disp_tensor *a = cpu(2, 3), *b = meta(3, 4), *r = NULL;
  snap ba = take(a);
  ASSERT_STATUS(disp_aten_mm(a, b, &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::mm: " MIXED);
  ASSERT_TRUE(r == NULL);
  ASSERT_TRUE(same(ba, take(a)));
  /* the other order, and the boxed path, answer the same */
  ASSERT_STATUS(disp_aten_mm(b, a, &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::mm: " MIXED);
  const disp_op *op = NULL;
  disp_stack *st = disp_stack_new();
  ASSERT_TRUE(st != NULL);
  ASSERT_OK(disp_op_find("aten::mm", &op));
  ASSERT_OK(disp_stack_push_tensor(st, a));
  ASSERT_OK(disp_stack_push_tensor(st, b));
  ASSERT_STATUS(disp_call_boxed(op, st), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::mm: " MIXED);
  ASSERT_EQ_INT(disp_stack_size(st), 0);
  ASSERT_TRUE(same(ba, take(a)));
  disp_stack_free(st);
  release_all((disp_tensor *[]){a, b}, 2);
  return 0;
}

TEST(add_cpu_meta_refused) {
  disp_tensor *a = cpu(2, 3), *b = meta(2, 3), *r = NULL;
  ASSERT_STATUS(disp_aten_add_Tensor(a, b, disp_scalar_int(1), &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::add.Tensor: " MIXED);
  ASSERT_TRUE(r == NULL);
  ASSERT_STATUS(disp_aten_mul_Tensor(b, a, &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::mul.Tensor: " MIXED);
  release_all((disp_tensor *[]){a, b}, 2);
  return 0;
}

/* CompositeExplicitAutograd kernels compute too: checked the same way. */
TEST(conv2d_cpu_meta_refused) {
  int64_t xs[4] = {1, 1, 4, 4}, ws[4] = {1, 1, 2, 2}, one[2] = {1, 1}, zero[2] = {0, 0};
  disp_tensor *x = NULL, *w = NULL, *r = NULL;
  ASSERT_OK(disp_tensor_empty(xs, 4, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_CPU, -1), &x));
  ASSERT_OK(disp_tensor_empty(ws, 4, DISP_DTYPE_FLOAT32, disp_device_make(DISP_BACKEND_META, -1), &w));
  disp_int_list o = {one, 2}, z = {zero, 2};
  ASSERT_STATUS(disp_aten_conv2d(x, w, NULL, o, z, o, 1, &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::convolution: " MIXED);
  ASSERT_STATUS(disp_aten_conv2d(w, x, NULL, o, z, o, 1, &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::convolution: " MIXED);
  ASSERT_TRUE(r == NULL);
  release_all((disp_tensor *[]){x, w}, 2);
  return 0;
}

TEST(cat_mixed_list_refused) {
  disp_tensor *a = cpu(2, 3), *b = meta(2, 3), *r = NULL;
  disp_tensor *items[] = {a, b};
  ASSERT_STATUS(disp_aten_cat((disp_tensor_list){items, 2}, 0, &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::cat: " MIXED);
  ASSERT_TRUE(r == NULL);
  release_all(items, 2);
  return 0;
}

/* TensorIterator's exception, as 1.13 has it: one 0-dim CPU input may join
 * tensors of another device in pointwise ops; not a second one, not an
 * output, not in ops without allow_cpu_scalars (mm). */
TEST(cpu_scalar_joins_meta_in_pointwise_ops) {
  disp_tensor *s = cpu_scalar(), *s2 = cpu_scalar(), *m = meta(2, 3), *ms = meta_scalar(), *r = NULL;
  ASSERT_OK(disp_aten_add_Tensor(s, m, disp_scalar_int(1), &r));
  ASSERT_EQ_INT(disp_tensor_device(r).type, DISP_BACKEND_META);
  ASSERT_EQ_INT(disp_tensor_ndim(r), 2);
  disp_tensor_release(r);
  r = NULL;
  ASSERT_OK(disp_aten_mul_Tensor(m, s, &r));
  ASSERT_EQ_INT(disp_tensor_device(r).type, DISP_BACKEND_META);
  disp_tensor_release(r);
  r = NULL;
  ASSERT_STATUS(disp_aten_add_out(s, s2, disp_scalar_int(1), m, &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::add.out: Trying to pass too many CPU scalars to non-CPU kernel!");
  ASSERT_STATUS(disp_aten_add__Tensor(s, ms, disp_scalar_int(1), &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::add_.Tensor: " MIXED);
  ASSERT_STATUS(disp_aten_mm(s, m, &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::mm: " MIXED);
  ASSERT_TRUE(r == NULL);
  /* where.self takes every 0-dim CPU input, as its 1.13 kernel moves them */
  disp_tensor *cond = NULL;
  ASSERT_OK(disp_aten_eq_Scalar(s, disp_scalar_int(0), &cond));
  ASSERT_OK(disp_aten_where_self(cond, s2, m, &r));
  ASSERT_EQ_INT(disp_tensor_device(r).type, DISP_BACKEND_META);
  disp_tensor_release(r);
  r = NULL;
  disp_tensor *c2 = cpu(2, 3);
  ASSERT_STATUS(disp_aten_where_self(cond, c2, m, &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::where.self: " MIXED);
  release_all((disp_tensor *[]){s, s2, m, ms, cond, c2}, 6);
  return 0;
}

/* Copies between devices are what they are for: no check. */
TEST(copies_between_devices_still_work) {
  disp_tensor *a = cpu(2, 3), *m = meta(2, 3), *r = NULL;
  disp_opt_device to_meta = {DISP_BACKEND_META, -1, true};
  ASSERT_OK(disp_aten__to_copy(a, -1, -1, to_meta, (disp_opt_bool){false, false}, false, -1, &r));
  ASSERT_EQ_INT(disp_tensor_device(r).type, DISP_BACKEND_META);
  disp_tensor_release(r);
  r = NULL;
  ASSERT_OK(disp_aten_copy_(m, a, false, &r));
  disp_tensor_release(r);
  release_all((disp_tensor *[]){a, m}, 2);
  return 0;
}

TEST(cpu_device_index_refused) {
  int64_t sizes[] = {2, 3};
  disp_tensor *r = NULL;
  disp_opt_device cpu5 = {DISP_BACKEND_CPU, 5, true};
  ASSERT_STATUS(disp_aten_ones((disp_int_list){sizes, 2}, -1, -1, cpu5, (disp_opt_bool){false, false}, &r),
                DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::ones: CPU device index must be -1 or zero, got 5");
  ASSERT_TRUE(r == NULL);
  ASSERT_STATUS(disp_aten_empty_memory_format((disp_int_list){sizes, 2}, -1, -1, cpu5, (disp_opt_bool){false, false},
                                              -1, &r),
                DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "aten::empty.memory_format: CPU device index must be -1 or zero, got 5");
  /* -1 and 0 are the CPU */
  disp_opt_device cpu0 = {DISP_BACKEND_CPU, 0, true};
  ASSERT_OK(disp_aten_ones((disp_int_list){sizes, 2}, -1, -1, cpu0, (disp_opt_bool){false, false}, &r));
  ASSERT_EQ_INT(disp_tensor_device(r).type, DISP_BACKEND_CPU);
  disp_tensor_release(r);
  return 0;
}

/* ---- case 5: NULL arguments of the typed entries ------------------------- */

TEST(typed_entry_refuses_null_tensor) {
  disp_tensor *r = NULL;
  ASSERT_STATUS(disp_aten_relu(NULL, &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_aten_relu: self is NULL");
  ASSERT_TRUE(r == NULL);
  disp_tensor *a = cpu(2, 2);
  snap ba = take(a);
  ASSERT_STATUS(disp_aten_mm(a, NULL, &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_aten_mm: mat2 is NULL");
  ASSERT_TRUE(same(ba, take(a)));
  disp_tensor_release(a);
  return 0;
}

TEST(typed_entry_refuses_null_out_pointer) {
  disp_tensor *a = cpu(2, 2), *b = cpu(2, 2);
  snap ba = take(a);
  ASSERT_STATUS(disp_aten_relu(a, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_aten_relu: out0 is NULL");
  disp_tensor *values = NULL;
  ASSERT_STATUS(disp_aten_max_dim(a, 0, false, &values, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_aten_max_dim: out1 is NULL");
  ASSERT_TRUE(values == NULL);
  ASSERT_STATUS(disp_aten_add_out(a, a, disp_scalar_int(1), NULL, &values), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_aten_add_out: out_ is NULL");
  ASSERT_TRUE(same(ba, take(a)));
  release_all((disp_tensor *[]){a, b}, 2);
  return 0;
}

TEST(typed_entry_refuses_null_list_element) {
  disp_tensor *a = cpu(2, 2), *r = NULL;
  disp_tensor *items[] = {a, NULL};
  snap ba = take(a);
  ASSERT_STATUS(disp_aten_cat((disp_tensor_list){items, 2}, 0, &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_aten_cat: tensors[1] is NULL");
  ASSERT_STATUS(disp_aten_cat((disp_tensor_list){NULL, 2}, 0, &r), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_STR(disp_last_error(), "disp_aten_cat: tensors is NULL");
  ASSERT_TRUE(r == NULL);
  ASSERT_TRUE(same(ba, take(a)));
  disp_tensor_release(a);
  return 0;
}

/* Tensor? keeps NULL as None. */
TEST(typed_entry_takes_null_optional_as_none) {
  disp_tensor *x = cpu(2, 3), *w = cpu(4, 3), *r = NULL;
  ASSERT_OK(disp_aten_linear(x, w, NULL, &r));
  ASSERT_EQ_INT(disp_tensor_sizes(r)[1], 4);
  disp_tensor_release(r);
  release_all((disp_tensor *[]){x, w}, 2);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(add_out_meta_inputs_cpu_out_refused),
    TEST_ENTRY(add_out_cpu_inputs_meta_out_refused),
    TEST_ENTRY(mm_cpu_meta_refused),
    TEST_ENTRY(add_cpu_meta_refused),
    TEST_ENTRY(conv2d_cpu_meta_refused),
    TEST_ENTRY(cat_mixed_list_refused),
    TEST_ENTRY(cpu_scalar_joins_meta_in_pointwise_ops),
    TEST_ENTRY(copies_between_devices_still_work),
    TEST_ENTRY(cpu_device_index_refused),
    TEST_ENTRY(typed_entry_refuses_null_tensor),
    TEST_ENTRY(typed_entry_refuses_null_out_pointer),
    TEST_ENTRY(typed_entry_refuses_null_list_element),
    TEST_ENTRY(typed_entry_takes_null_optional_as_none),
    TEST_END};
TEST_MAIN()
