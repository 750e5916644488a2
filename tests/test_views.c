/*
 * test_views.c - views, creation, copies and BackendSelect through the
 * dispatcher: what the reference vectors cannot show (version counters
 * shared by views, the same tensor object handed back, factories reaching
 * the Meta backend through BackendSelect, storage growth of resize_,
 * strided copies with every dtype pair agreeing with a scalar path).
 */
#include <math.h>

#include "disp/tensor_util.h"
#include "test.h"

static const disp_opt_device no_device = {0, 0, false};
static const disp_opt_bool no_pin = {false, false};

static disp_int_list ints(const int64_t *v, size_t n) {
  disp_int_list l = {v, n};
  return l;
}

/* arange(n) as float32 reshaped to sizes. */
static int arange_f32(int64_t n, const int64_t *sizes, size_t nd, disp_tensor **out) {
  disp_tensor *a;
  if (disp_aten_arange(disp_scalar_int(n), DISP_DTYPE_FLOAT32, -1, no_device, no_pin, &a) != DISP_OK) return 1;
  disp_status st = disp_aten_view(a, ints(sizes, nd), out);
  disp_tensor_release(a);
  return st != DISP_OK;
}

static float at2(const disp_tensor *t, int64_t i, int64_t j) {
  const int64_t *s = disp_tensor_strides(t);
  return ((const float *)disp_tensor_data_ptr(t))[i * s[0] + j * s[1]];
}

TEST(views_share_storage_and_version) {
  int64_t sz[2] = {2, 3};
  disp_tensor *x, *v, *r = NULL;
  ASSERT_TRUE(arange_f32(6, sz, 2, &x) == 0);
  ASSERT_OK(disp_aten_transpose_int(x, 0, 1, &v));
  ASSERT_TRUE(disp_tensor_storage(v) == disp_tensor_storage(x));
  ASSERT_EQ_INT(disp_tensor_strides(v)[0], 1);
  ASSERT_EQ_INT(disp_tensor_strides(v)[1], 3);
  ASSERT_OK(disp_tensor_bump_version(v));
  ASSERT_EQ_INT(disp_tensor_version(x), disp_tensor_version(v));
  /* writing through the view shows in the base */
  ASSERT_OK(disp_aten_fill__Scalar(v, disp_scalar_double(7.5), &r));
  ASSERT_TRUE(r == v);
  disp_tensor_release(r);
  ASSERT_TRUE(at2(x, 1, 2) == 7.5f);
  /* the view keeps the storage alive */
  disp_tensor_release(x);
  ASSERT_TRUE(at2(v, 2, 1) == 7.5f);
  disp_tensor_release(v);
  return 0;
}

TEST(reshape_views_or_copies) {
  int64_t sz[2] = {2, 3}, flat = 6, back[2] = {3, 2};
  disp_tensor *x, *r, *t, *c;
  ASSERT_TRUE(arange_f32(6, sz, 2, &x) == 0);
  ASSERT_OK(disp_aten_reshape(x, ints(&flat, 1), &r));
  ASSERT_TRUE(disp_tensor_storage(r) == disp_tensor_storage(x));
  disp_tensor_release(r);
  ASSERT_OK(disp_aten_t(x, &t));
  ASSERT_OK(disp_aten_reshape(t, ints(&flat, 1), &r)); /* not viewable: a copy */
  ASSERT_TRUE(disp_tensor_storage(r) != disp_tensor_storage(x));
  ASSERT_EQ_INT(((float *)disp_tensor_data_ptr(r))[1], 3);
  disp_tensor_release(r);
  ASSERT_STATUS(disp_aten_view(t, ints(&flat, 1), &r), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "view size is not compatible");
  ASSERT_CONTAINS(disp_last_error(), "aten::view");
  /* contiguous: self when already contiguous, else a copy */
  ASSERT_OK(disp_aten_contiguous(x, 0, &c));
  ASSERT_TRUE(c == x);
  disp_tensor_release(c);
  ASSERT_OK(disp_aten_contiguous(t, 0, &c));
  ASSERT_TRUE(c != t && disp_tensor_is_contiguous(c));
  ASSERT_TRUE(at2(c, 2, 1) == 5.0f);
  disp_tensor_release(c);
  /* to.dtype: self when nothing changes, a copy with copy=True */
  ASSERT_OK(disp_aten_to_dtype(x, DISP_DTYPE_FLOAT32, false, false, -1, &c));
  ASSERT_TRUE(c == x);
  disp_tensor_release(c);
  ASSERT_OK(disp_aten_to_dtype(x, DISP_DTYPE_FLOAT32, false, true, -1, &c));
  ASSERT_TRUE(c != x && disp_tensor_storage(c) != disp_tensor_storage(x));
  disp_tensor_release(c);
  ASSERT_OK(disp_aten_reshape(x, ints(back, 2), &r));
  disp_tensor_release(r);
  disp_tensor_release(t);
  disp_tensor_release(x);
  return 0;
}

TEST(factories_reach_meta_through_backend_select) {
  int64_t sz[2] = {2, 3};
  disp_opt_device meta = {DISP_BACKEND_META, -1, true};
  disp_tensor *t;
  ASSERT_OK(disp_aten_zeros(ints(sz, 2), -1, -1, meta, no_pin, &t));
  ASSERT_EQ_INT(disp_tensor_device(t).type, DISP_BACKEND_META);
  ASSERT_EQ_INT(disp_tensor_dtype(t), DISP_DTYPE_FLOAT32);
  ASSERT_TRUE(disp_tensor_data_ptr(t) == NULL);
  disp_tensor_release(t);
  ASSERT_OK(disp_aten_full(ints(sz, 2), disp_scalar_int(3), -1, -1, meta, no_pin, &t));
  ASSERT_EQ_INT(disp_tensor_dtype(t), DISP_DTYPE_INT64);
  ASSERT_EQ_INT(disp_tensor_device(t).type, DISP_BACKEND_META);
  disp_tensor_release(t);
  ASSERT_OK(disp_aten_arange_start_step(disp_scalar_int(0), disp_scalar_double(1.0), disp_scalar_double(0.25), -1, -1,
                                        meta, no_pin, &t));
  ASSERT_EQ_INT(disp_tensor_sizes(t)[0], 4);
  disp_tensor_release(t);
  /* device None means the CPU */
  ASSERT_OK(disp_aten_ones(ints(sz, 2), DISP_DTYPE_INT32, -1, no_device, no_pin, &t));
  ASSERT_EQ_INT(disp_tensor_device(t).type, DISP_BACKEND_CPU);
  ASSERT_EQ_INT(((int32_t *)disp_tensor_data_ptr(t))[5], 1);
  disp_tensor *m;
  ASSERT_OK(disp_aten__to_copy(t, -1, -1, meta, no_pin, false, -1, &m));
  ASSERT_EQ_INT(disp_tensor_device(m).type, DISP_BACKEND_META);
  ASSERT_EQ_INT(disp_tensor_dtype(m), DISP_DTYPE_INT32);
  disp_tensor_release(m);
  disp_tensor_release(t);
  int64_t neg[2] = {2, -1};
  ASSERT_STATUS(disp_aten_empty_memory_format(ints(neg, 2), -1, -1, meta, no_pin, -1, &t), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "negative dimension -1");
  return 0;
}

TEST(copy_broadcasts_converts_and_refuses_overlap) {
  int64_t sz[2] = {2, 3}, three = 3;
  disp_tensor *dst, *src, *r, *e;
  ASSERT_OK(disp_aten_zeros(ints(sz, 2), DISP_DTYPE_INT64, -1, no_device, no_pin, &dst));
  ASSERT_OK(disp_aten_arange(disp_scalar_double(2.75), DISP_DTYPE_FLOAT64, -1, no_device, no_pin, &src));
  ASSERT_EQ_INT(disp_tensor_sizes(src)[0], 3);
  ASSERT_OK(disp_aten_copy_(dst, src, false, &r));
  disp_tensor_release(r);
  const int64_t *d = disp_tensor_data_ptr(dst);
  ASSERT_TRUE(d[0] == 0 && d[1] == 1 && d[2] == 2 && d[3] == 0 && d[5] == 2);
  int64_t bad[1] = {4};
  disp_tensor *src4;
  ASSERT_OK(disp_aten_ones(ints(bad, 1), -1, -1, no_device, no_pin, &src4));
  ASSERT_STATUS(disp_aten_copy_(dst, src4, false, &r), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "must match the size of tensor b (4)");
  /* an expanded destination is refused by copy_, not by fill_ */
  ASSERT_OK(disp_aten_expand(src, ints(sz, 2), false, &e));
  ASSERT_STATUS(disp_aten_copy_(e, dst, false, &r), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "more than one element");
  ASSERT_OK(disp_aten_fill__Scalar(e, disp_scalar_int(4), &r));
  disp_tensor_release(r);
  ASSERT_TRUE(((double *)disp_tensor_data_ptr(src))[2] == 4.0);
  (void)three;
  disp_tensor_release(e);
  disp_tensor_release(src4);
  disp_tensor_release(src);
  disp_tensor_release(dst);
  return 0;
}

TEST(copy_every_dtype_pair) {
  static const disp_dtype dts[] = {DISP_DTYPE_FLOAT32, DISP_DTYPE_FLOAT64, DISP_DTYPE_FLOAT16, DISP_DTYPE_BFLOAT16,
                                   DISP_DTYPE_INT64,   DISP_DTYPE_INT32,   DISP_DTYPE_INT16,   DISP_DTYPE_INT8,
                                   DISP_DTYPE_UINT8,   DISP_DTYPE_BOOL};
  int64_t sz[2] = {3, 4};
  for (size_t i = 0; i < 10; i++) {
    for (size_t j = 0; j < 10; j++) {
      disp_tensor *a, *at, *b, *back;
      ASSERT_OK(disp_aten_arange(disp_scalar_int(12), dts[i] == DISP_DTYPE_BOOL ? DISP_DTYPE_INT64 : dts[i], -1,
                                 no_device, no_pin, &a));
      if (dts[i] == DISP_DTYPE_BOOL) {
        disp_tensor *tmp;
        ASSERT_OK(disp_aten_to_dtype(a, DISP_DTYPE_BOOL, false, false, -1, &tmp));
        disp_tensor_release(a);
        a = tmp;
      }
      disp_tensor *v;
      ASSERT_OK(disp_aten_view(a, ints(sz, 2), &v));
      ASSERT_OK(disp_aten_t(v, &at)); /* a strided source */
      ASSERT_OK(disp_aten__to_copy(at, dts[j], -1, no_device, no_pin, false, -1, &b));
      ASSERT_EQ_INT(disp_tensor_dtype(b), dts[j]);
      ASSERT_EQ_INT(disp_tensor_strides(b)[0], 1); /* preserve_format keeps the transposed layout */
      ASSERT_OK(disp_aten__to_copy(b, DISP_DTYPE_FLOAT64, -1, no_device, no_pin, false, 0, &back));
      const double *p = disp_tensor_data_ptr(back);
      for (int r = 0; r < 4; r++)
        for (int c = 0; c < 3; c++) {
          double want = c * 4 + r;
          if (dts[i] == DISP_DTYPE_BOOL || dts[j] == DISP_DTYPE_BOOL) want = want != 0;
          ASSERT_TRUE(p[r * 3 + c] == want);
        }
      disp_tensor_release(back);
      disp_tensor_release(b);
      disp_tensor_release(at);
      disp_tensor_release(v);
      disp_tensor_release(a);
    }
  }
  return 0;
}

TEST(resize_and_set) {
  int64_t two = 2, big[2] = {4, 5};
  disp_tensor *x, *r, *y;
  ASSERT_OK(disp_aten_ones(ints(&two, 1), -1, -1, no_device, no_pin, &x));
  ASSERT_OK(disp_aten_resize_(x, ints(big, 2), -1, &r));
  ASSERT_TRUE(r == x);
  disp_tensor_release(r);
  ASSERT_TRUE(disp_storage_nbytes(disp_tensor_storage(x)) >= 20 * 4);
  ASSERT_TRUE(((float *)disp_tensor_data_ptr(x))[1] == 1.0f); /* old elements kept */
  ASSERT_EQ_INT(disp_tensor_strides(x)[0], 5);
  ASSERT_OK(disp_aten_zeros(ints(&two, 1), -1, -1, no_device, no_pin, &y));
  ASSERT_OK(disp_aten_set__source_Tensor(y, x, &r));
  disp_tensor_release(r);
  ASSERT_TRUE(disp_tensor_storage(y) == disp_tensor_storage(x));
  ASSERT_EQ_INT(disp_tensor_ndim(y), 2);
  int64_t off_sz[2] = {2, 2}, off_st[2] = {1, 2};
  ASSERT_OK(disp_aten_set__source_Storage_storage_offset(y, disp_tensor_storage(x), 3, ints(off_sz, 2),
                                                         ints(off_st, 2), &r));
  disp_tensor_release(r);
  ASSERT_EQ_INT(disp_tensor_storage_offset(y), 3);
  int64_t huge[2] = {100, 100};
  ASSERT_STATUS(disp_aten_set__source_Storage_storage_offset(y, disp_tensor_storage(x), 0, ints(huge, 2),
                                                             ints(off_st, 2), &r),
                DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "out of bounds for storage");
  disp_tensor_release(y);
  disp_tensor_release(x);
  return 0;
}

TEST(cat_stack_item) {
  int64_t sz[2] = {2, 3};
  disp_tensor *a, *b, *c, *s;
  ASSERT_TRUE(arange_f32(6, sz, 2, &a) == 0);
  ASSERT_OK(disp_aten_ones(ints(sz, 2), DISP_DTYPE_INT64, -1, no_device, no_pin, &b));
  disp_tensor *l[2] = {a, b};
  disp_tensor_list tl = {l, 2};
  ASSERT_OK(disp_aten_cat(tl, -1, &c));
  ASSERT_EQ_INT(disp_tensor_dtype(c), DISP_DTYPE_FLOAT32);
  ASSERT_EQ_INT(disp_tensor_sizes(c)[1], 6);
  ASSERT_TRUE(at2(c, 1, 2) == 5.0f && at2(c, 1, 3) == 1.0f);
  ASSERT_OK(disp_aten_stack(tl, 1, &s));
  ASSERT_EQ_INT(disp_tensor_ndim(s), 3);
  ASSERT_EQ_INT(disp_tensor_sizes(s)[1], 2);
  disp_scalar v;
  disp_tensor *one;
  ASSERT_OK(disp_aten_select_int(a, 1, 2, &one));
  disp_tensor *one2;
  ASSERT_OK(disp_aten_select_int(one, 0, -1, &one2));
  ASSERT_OK(disp_aten_item(one2, &v));
  ASSERT_EQ_INT(v.kind, DISP_SCALAR_DOUBLE);
  ASSERT_TRUE(v.v.d == 5.0);
  ASSERT_STATUS(disp_aten_item(a, &v), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "a Tensor with 6 elements cannot be converted to Scalar");
  disp_tensor_release(one2);
  disp_tensor_release(one);
  disp_tensor_release(s);
  disp_tensor_release(c);
  disp_tensor_release(b);
  disp_tensor_release(a);
  return 0;
}

TEST_LIST = {TEST_ENTRY(views_share_storage_and_version),
             TEST_ENTRY(reshape_views_or_copies),
             TEST_ENTRY(factories_reach_meta_through_backend_select),
             TEST_ENTRY(copy_broadcasts_converts_and_refuses_overlap),
             TEST_ENTRY(copy_every_dtype_pair),
             TEST_ENTRY(resize_and_set),
             TEST_ENTRY(cat_stack_item),
             TEST_END};
TEST_MAIN()
