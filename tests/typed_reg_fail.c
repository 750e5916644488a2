/*
 * typed_reg_fail.c - compiled, never run, by tests/typed_reg_fail.cmake once
 * per case (-DCASE=N), as C and as C++: case 0 registers kernels of the right
 * types and must compile cleanly; every other case hands DISP_IMPL_ATEN (or
 * DISP_IMPL_ATEN_KEY, DISP_ATEN_KERNEL) a kernel whose C signature differs
 * from the operator's (case 6: names no operator) and must fail to
 * compile with a message naming the operator and the expected type. A plain
 * assignment of those pointers would only warn (GCC 12), and DISP_FN's cast
 * not even that.
 */
/* Only the header itself: it must be enough, and disp.h as a whole is not
 * C++ (call.h's _Thread_local). */
#include <disp/aten_impl.h>

#if CASE == 0 /* the right types: plain, key set first, a function pointer */
static disp_status good_add(disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out) {
  (void)self, (void)other, (void)alpha, (void)out;
  return DISP_OK;
}
static disp_status good_mm_ks(disp_keyset ks, disp_tensor *self, disp_tensor *mat2, disp_tensor **out) {
  (void)ks, (void)self, (void)mat2, (void)out;
  return DISP_OK;
}
disp_status use(disp_library *m);
disp_status use(disp_library *m) {
  disp_aten_add_Tensor_kernel *fp = good_add;
  disp_status st = DISP_IMPL_ATEN(m, add_Tensor, good_add);
  if (st == DISP_OK) st = DISP_IMPL_ATEN_KEY(m, DISP_KEY_PRIVATEUSE1, mm, good_mm_ks);
  if (st == DISP_OK) st = disp_library_impl(m, DISP_ATEN_NAME_add_Tensor, DISP_ATEN_KERNEL(add_Tensor, fp), NULL);
  return st;
}
#elif CASE == 1 /* alpha as an int64_t instead of a Scalar */
static disp_status bad_add(disp_tensor *self, disp_tensor *other, int64_t alpha, disp_tensor **out) {
  (void)self, (void)other, (void)alpha, (void)out;
  return DISP_OK;
}
disp_status use(disp_library *m);
disp_status use(disp_library *m) { return DISP_IMPL_ATEN(m, add_Tensor, bad_add); }
#elif CASE == 2 /* another operator's kernel: mm's for add.Tensor */
static disp_status mm_kernel(disp_tensor *self, disp_tensor *mat2, disp_tensor **out) {
  (void)self, (void)mat2, (void)out;
  return DISP_OK;
}
disp_status use(disp_library *m);
disp_status use(disp_library *m) { return DISP_IMPL_ATEN(m, add_Tensor, mm_kernel); }
#elif CASE == 3 /* const disp_tensor *: compatible in spirit, not in C */
static disp_status const_mm(const disp_tensor *self, const disp_tensor *mat2, disp_tensor **out) {
  (void)self, (void)mat2, (void)out;
  return DISP_OK;
}
disp_status use(disp_library *m);
disp_status use(disp_library *m) { return DISP_IMPL_ATEN_KEY(m, DISP_KEY_PRIVATEUSE1, mm, const_mm); }
#elif CASE == 4 /* the key set in the wrong place */
static disp_status late_ks(disp_tensor *self, disp_tensor *mat2, disp_keyset ks, disp_tensor **out) {
  (void)self, (void)mat2, (void)ks, (void)out;
  return DISP_OK;
}
disp_status use(disp_library *m);
disp_status use(disp_library *m) { return DISP_IMPL_ATEN(m, mm, late_ks); }
#elif CASE == 5 /* the result returned instead of written through an out-pointer */
static disp_tensor *returns_result(disp_tensor *self, disp_tensor *mat2) {
  (void)mat2;
  return self;
}
disp_kernel use(void);
disp_kernel use(void) { return DISP_ATEN_KERNEL(mm, returns_result); }
#elif CASE == 6 /* no such operator */
static disp_status some_kernel(disp_tensor *self, disp_tensor **out) {
  (void)self, (void)out;
  return DISP_OK;
}
disp_status use(disp_library *m);
disp_status use(disp_library *m) { return DISP_IMPL_ATEN(m, no_such_op, some_kernel); }
#endif
