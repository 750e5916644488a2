/*
 * test_promotion.c - PyTorch's type promotion: promote_types over every
 * pair of dtypes (checked against c10's table), and result_type with
 * zero-dim tensors and Python scalars taking part only when of a higher
 * category, as at::result_type does.
 */
#include "disp/promotion.h"
#include "test.h"

static disp_tensor *make(disp_dtype dt, int ndim) {
  int64_t sizes[2] = {2, 3};
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, ndim, dt, disp_device_make(DISP_BACKEND_CPU, -1), &t) != DISP_OK) return NULL;
  return t;
}

/* c10's promoteTypes table for the ten dtypes, in this order. */
enum { u1, i1, i2, i4, i8, f2, f4, f8, b1, bf, N };
static const disp_dtype order[N] = {DISP_DTYPE_UINT8,   DISP_DTYPE_INT8,    DISP_DTYPE_INT16,  DISP_DTYPE_INT32,
                                    DISP_DTYPE_INT64,   DISP_DTYPE_FLOAT16, DISP_DTYPE_FLOAT32, DISP_DTYPE_FLOAT64,
                                    DISP_DTYPE_BOOL,    DISP_DTYPE_BFLOAT16};
static const int table[N][N] = {
    /*        u1  i1  i2  i4  i8  f2  f4  f8  b1  bf */
    /* u1 */ {u1, i2, i2, i4, i8, f2, f4, f8, u1, bf},
    /* i1 */ {i2, i1, i2, i4, i8, f2, f4, f8, i1, bf},
    /* i2 */ {i2, i2, i2, i4, i8, f2, f4, f8, i2, bf},
    /* i4 */ {i4, i4, i4, i4, i8, f2, f4, f8, i4, bf},
    /* i8 */ {i8, i8, i8, i8, i8, f2, f4, f8, i8, bf},
    /* f2 */ {f2, f2, f2, f2, f2, f2, f4, f8, f2, f4},
    /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f8, f4, f4},
    /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
    /* b1 */ {u1, i1, i2, i4, i8, f2, f4, f8, b1, bf},
    /* bf */ {bf, bf, bf, bf, bf, f4, f4, f8, bf, bf},
};

TEST(promote_types_matches_c10_table) {
  for (int a = 0; a < N; a++)
    for (int b = 0; b < N; b++) {
      disp_dtype r;
      ASSERT_OK(disp_promote_types(order[a], order[b], &r));
      if (r != order[table[a][b]])
        TEST_FAIL_("promote(%s, %s) = %s, want %s", disp_dtype_name(order[a]), disp_dtype_name(order[b]),
                   disp_dtype_name(r), disp_dtype_name(order[table[a][b]]));
    }
  disp_dtype r;
  ASSERT_STATUS(disp_promote_types(DISP_DTYPE_QUINT8, DISP_DTYPE_FLOAT32, &r), DISP_ERR_TYPE);
  ASSERT_CONTAINS(disp_last_error(), "QUInt8");
  return 0;
}

TEST(result_type_categories) {
  disp_tensor *f32 = make(DISP_DTYPE_FLOAT32, 2), *i32 = make(DISP_DTYPE_INT32, 2), *f16 = make(DISP_DTYPE_FLOAT16, 2);
  disp_tensor *z64 = make(DISP_DTYPE_FLOAT64, 0), *zi64 = make(DISP_DTYPE_INT64, 0), *b = make(DISP_DTYPE_BOOL, 2);
  disp_dtype r;
  /* a zero-dim tensor of the same category does not win */
  disp_tensor *t1[2] = {f32, z64};
  ASSERT_OK(disp_result_type(t1, 2, NULL, 0, &r));
  ASSERT_EQ_INT(r, DISP_DTYPE_FLOAT32);
  /* ... but one of a higher category does */
  disp_tensor *t2[2] = {i32, z64};
  ASSERT_OK(disp_result_type(t2, 2, NULL, 0, &r));
  ASSERT_EQ_INT(r, DISP_DTYPE_FLOAT64);
  disp_tensor *t3[2] = {i32, zi64};
  ASSERT_OK(disp_result_type(t3, 2, NULL, 0, &r));
  ASSERT_EQ_INT(r, DISP_DTYPE_INT32);
  /* zero-dim tensors alone promote among themselves */
  disp_tensor *t4[2] = {zi64, z64};
  ASSERT_OK(disp_result_type(t4, 2, NULL, 0, &r));
  ASSERT_EQ_INT(r, DISP_DTYPE_FLOAT64);
  /* Python scalars: float -> default float32, int -> int64, lowest priority */
  disp_scalar fs = disp_scalar_double(2.5), is = disp_scalar_int(3), bs = disp_scalar_bool(true);
  disp_tensor *t5[1] = {i32};
  ASSERT_OK(disp_result_type(t5, 1, &fs, 1, &r));
  ASSERT_EQ_INT(r, DISP_DTYPE_FLOAT32);
  ASSERT_OK(disp_result_type(t5, 1, &is, 1, &r));
  ASSERT_EQ_INT(r, DISP_DTYPE_INT32);
  disp_tensor *t6[1] = {f16};
  ASSERT_OK(disp_result_type(t6, 1, &fs, 1, &r));
  ASSERT_EQ_INT(r, DISP_DTYPE_FLOAT16);
  disp_tensor *t7[1] = {b};
  ASSERT_OK(disp_result_type(t7, 1, &is, 1, &r));
  ASSERT_EQ_INT(r, DISP_DTYPE_INT64);
  ASSERT_OK(disp_result_type(t7, 1, &bs, 1, &r));
  ASSERT_EQ_INT(r, DISP_DTYPE_BOOL);
  /* a zero-dim float64 beats a float scalar (same category, higher priority) */
  disp_tensor *t8[2] = {zi64, NULL};
  ASSERT_OK(disp_result_type(t8, 2, &fs, 1, &r));
  ASSERT_EQ_INT(r, DISP_DTYPE_FLOAT32);
  disp_tensor *t9[1] = {z64};
  ASSERT_OK(disp_result_type(t9, 1, &fs, 1, &r));
  ASSERT_EQ_INT(r, DISP_DTYPE_FLOAT64);
  ASSERT_STATUS(disp_result_type(NULL, 0, NULL, 0, &r), DISP_ERR_INVALID_ARG);
  disp_tensor_release(f32);
  disp_tensor_release(i32);
  disp_tensor_release(f16);
  disp_tensor_release(z64);
  disp_tensor_release(zi64);
  disp_tensor_release(b);
  return 0;
}

/* Through the operators: add.Scalar wraps its scalar (int tensor + 2.5 is
 * float32, not float64), add.Tensor with a real 0-dim float64 is float64. */
TEST(ops_promote_scalars_as_wrapped_numbers) {
  disp_tensor *i32 = make(DISP_DTYPE_INT32, 2), *z64 = make(DISP_DTYPE_FLOAT64, 0), *r = NULL;
  memset(disp_tensor_data_ptr(i32), 0, 6 * sizeof(int32_t));
  *(double *)disp_tensor_data_ptr(z64) = 0.1;
  ASSERT_OK(disp_aten_add_Scalar(i32, disp_scalar_double(0.1), disp_scalar_int(1), &r));
  ASSERT_EQ_INT(disp_tensor_dtype(r), DISP_DTYPE_FLOAT32);
  ASSERT_TRUE(((float *)disp_tensor_data_ptr(r))[0] == 0.1f);
  disp_tensor_release(r);
  ASSERT_OK(disp_aten_add_Tensor(i32, z64, disp_scalar_int(1), &r));
  ASSERT_EQ_INT(disp_tensor_dtype(r), DISP_DTYPE_FLOAT64);
  disp_tensor_release(r);
  /* a float64 tensor times a float scalar keeps the scalar's double value */
  disp_tensor *f64 = make(DISP_DTYPE_FLOAT64, 2);
  for (int i = 0; i < 6; i++) ((double *)disp_tensor_data_ptr(f64))[i] = 3.0;
  ASSERT_OK(disp_aten_mul_Scalar(f64, disp_scalar_double(0.1), &r));
  ASSERT_TRUE(((double *)disp_tensor_data_ptr(r))[5] == 3.0 * 0.1);
  disp_tensor_release(r);
  /* in-place: the result type must cast to self's dtype */
  ASSERT_STATUS(disp_aten_add__Tensor(i32, f64, disp_scalar_int(1), &r), DISP_ERR_TYPE);
  ASSERT_CONTAINS(disp_last_error(), "result type Double can't be cast to the desired output type Int");
  disp_tensor_release(f64);
  disp_tensor_release(i32);
  disp_tensor_release(z64);
  return 0;
}

TEST_LIST = {TEST_ENTRY(promote_types_matches_c10_table), TEST_ENTRY(result_type_categories),
             TEST_ENTRY(ops_promote_scalars_as_wrapped_numbers), TEST_END};
TEST_MAIN()
