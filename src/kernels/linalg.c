/*
 * linalg.c - mm, addmm, bmm (CPU and Meta), matmul and linear (composites
 * over the dispatched mm/bmm/addmm and view ops, as PyTorch 1.13 writes them).
 *
 * CPU and Meta share one geometry/validation function per op, so the Meta
 * kernels reject exactly what the CPU ones reject and agree on shapes. The
 * products themselves go through gemm.h.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "aten_internal.h"
#include "aten_kernels.h"
#include "tensor/dtype_cast.h"
#include "gemm.h"
#include "parallel.h"
#include "tensor_iter.h"

#define FAIL(...) disp_set_error(DISP_ERR_INVALID_ARG, __VA_ARGS__)

static const char *tname(disp_dtype dt) { return disp_dtype_torch_name(dt); }

/* A matrix view of dims (d0, d1) of t, batch element b along dim 0 for 3-D. */
static disp__mat mat_of(disp_tensor *t, int d0, int d1, int64_t b) {
  disp__mat m = {disp_tensor_data_ptr(t), disp__t_stride(t, d0), disp__t_stride(t, d1)};
  if (disp__t_ndim(t) == 3 && m.data)
    m.data = (char *)m.data + b * disp__t_stride(t, 0) * (int64_t)disp_dtype_itemsize(disp__t_dtype(t));
  return m;
}

/* addmm's self (at most 2-D, expandable to the result: addmm_geometry) as
 * the result-shaped matrix it broadcasts to: a missing or size-1 dim
 * repeats (stride 0). */
static disp__mat broadcast_mat(disp_tensor *self) {
  disp__mat m = {disp_tensor_data_ptr(self), 0, 0};
  int nd = disp__t_ndim(self);
  if (nd == 2 && disp__t_size(self, 0) != 1) m.rs = disp__t_stride(self, 0);
  if (nd >= 1 && disp__t_size(self, nd - 1) != 1) m.cs = disp__t_stride(self, nd - 1);
  return m;
}

/* PyTorch's "expected scalar type X but found Y" (data_ptr<T> of an operand
 * whose dtype differs from the result's). */
static disp_status check_same_dtype(const char *op, disp_dtype want, const disp_tensor *t) {
  if (disp__t_dtype(t) != want)
    return FAIL("%s: expected scalar type %s but found %s", op, tname(want), tname(disp__t_dtype(t)));
  return DISP_OK;
}

/* The dtypes PyTorch 1.13's CPU addmm_impl_cpu_ dispatches over. */
static disp_status check_gemm_dtype(const char *op, const char *kname, disp_dtype dt, int allow_half) {
  if ((dt == DISP_DTYPE_FLOAT16 && !allow_half) || dt == DISP_DTYPE_BOOL || dt == DISP_DTYPE_QUINT8)
    return FAIL("%s: \"%s\" not implemented for '%s'", op, kname, tname(dt));
  return DISP_OK;
}

static disp_status shapes_mismatch(const char *op, const disp_tensor *a, const disp_tensor *b) {
  return FAIL("%s: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)", op,
              (long long)disp__t_size(a, 0), (long long)disp__t_size(a, 1), (long long)disp__t_size(b, 0),
              (long long)disp__t_size(b, 1));
}

static disp_status new_like_device(const int64_t *sizes, int ndim, disp_dtype dt,
                                   const disp_tensor *like, disp_tensor **out) {
  return disp_tensor_empty(sizes, ndim, dt, disp__t_device(like), out);
}

/* ---- mm ------------------------------------------------------------------ */

static disp_status mm_geometry(disp_tensor *self, disp_tensor *mat2, int64_t *sizes) {
  if (disp__t_ndim(self) != 2) return FAIL("mm: self must be a matrix");
  if (disp__t_ndim(mat2) != 2) return FAIL("mm: mat2 must be a matrix");
  if (disp__t_size(self, 1) != disp__t_size(mat2, 0)) return shapes_mismatch("mm", self, mat2);
  sizes[0] = disp__t_size(self, 0);
  sizes[1] = disp__t_size(mat2, 1);
  return DISP_OK;
}

/* 1.13 takes the result's dtype from one operand and returns before its
 * dtype dispatch when there is nothing to multiply: an empty result, or
 * k == 0 (a zero-filled result). Only then do the element types matter. */
static int gemm_trivial(int64_t numel, int64_t k) { return numel == 0 || k == 0; }

/* Zero-fills a fresh CPU result (all-zero bits are 0 in every dtype). */
static void zero_fill(disp_tensor *t) {
  char *p = disp_tensor_data_ptr(t);
  if (p && disp__t_numel(t)) memset(p, 0, (size_t)disp__t_numel(t) * disp_dtype_itemsize(disp__t_dtype(t)));
}

disp_status disp__meta_mm(disp_tensor *self, disp_tensor *mat2, disp_tensor **out0) {
  int64_t sz[2];
  disp_status st = mm_geometry(self, mat2, sz);
  if (st == DISP_OK && !gemm_trivial(sz[0] * sz[1], disp__t_size(self, 1)))
    st = check_same_dtype("mm", disp__t_dtype(self), mat2);
  if (st != DISP_OK) return st;
  return new_like_device(sz, 2, disp__t_dtype(self), self, out0);
}

disp_status disp__cpu_mm(disp_tensor *self, disp_tensor *mat2, disp_tensor **out0) {
  int64_t sz[2];
  disp_status st = mm_geometry(self, mat2, sz);
  int trivial = st == DISP_OK && gemm_trivial(sz[0] * sz[1], disp__t_size(self, 1));
  if (st == DISP_OK && !trivial) st = check_gemm_dtype("mm", "addmm_impl_cpu_", disp__t_dtype(self), 0);
  if (st == DISP_OK && !trivial) st = check_same_dtype("mm", disp__t_dtype(self), mat2);
  if (st != DISP_OK) return st;
  disp_tensor *out;
  if ((st = new_like_device(sz, 2, disp__t_dtype(self), self, &out)) != DISP_OK) return st;
  if (trivial) {
    zero_fill(out);
    *out0 = out;
    return DISP_OK;
  }
  st = disp__gemm(disp__t_dtype(self), sz[0], sz[1], disp__t_size(self, 1), disp_scalar_int(1),
                  mat_of(self, 0, 1, 0), mat_of(mat2, 0, 1, 0), disp_scalar_int(0),
                  mat_of(out, 0, 1, 0));
  if (st != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  *out0 = out;
  return DISP_OK;
}

/* ---- addmm ------------------------------------------------------------------ */

/* PyTorch's expand_size check of `self` against (m, n). */
static disp_status check_expand(const char *op, const disp_tensor *self, const int64_t *target) {
  if (disp__t_ndim(self) > 2)
    return FAIL("%s: expand: the number of sizes provided (2) must be greater or equal to the number "
                "of dimensions in the tensor (%d)", op, disp__t_ndim(self));
  for (int i = 0; i < disp__t_ndim(self); i++) {
    int d = 2 - disp__t_ndim(self) + i;
    int64_t s = disp__t_size(self, i);
    if (s != 1 && s != target[d]) {
      char ts[128];
      int n = snprintf(ts, sizeof ts, "[");
      for (int j = 0; j < disp__t_ndim(self); j++)
        n += snprintf(ts + n, sizeof ts - (size_t)n, "%s%lld", j ? ", " : "", (long long)disp__t_size(self, j));
      snprintf(ts + n, sizeof ts - (size_t)n, "]");
      return FAIL("%s: The expanded size of the tensor (%lld) must match the existing size (%lld) at "
                  "non-singleton dimension %d.  Target sizes: [%lld, %lld].  Tensor sizes: %s", op,
                  (long long)target[d], (long long)s, d, (long long)target[0], (long long)target[1], ts);
    }
  }
  return DISP_OK;
}

/* 1.13's addmm meta function checks the dtypes first, then the shapes. */
static disp_status addmm_geometry(disp_tensor *self, disp_tensor *mat1, disp_tensor *mat2,
                                  int64_t *sizes) {
  if (disp__t_dtype(self) != disp__t_dtype(mat2)) return FAIL("addmm: self and mat2 must have the same dtype");
  if (disp__t_dtype(mat1) != disp__t_dtype(mat2)) return FAIL("addmm: mat1 and mat2 must have the same dtype");
  if (disp__t_ndim(mat1) != 2) return FAIL("addmm: mat1 must be a matrix, got %d-D tensor", disp__t_ndim(mat1));
  if (disp__t_ndim(mat2) != 2) return FAIL("addmm: mat2 must be a matrix, got %d-D tensor", disp__t_ndim(mat2));
  if (disp__t_size(mat1, 1) != disp__t_size(mat2, 0)) return shapes_mismatch("addmm", mat1, mat2);
  sizes[0] = disp__t_size(mat1, 0);
  sizes[1] = disp__t_size(mat2, 1);
  return check_expand("addmm", self, sizes);
}

/* out *= beta through the dispatched in-place mul_, so its promotion
 * rules and errors apply (a float beta on an integer out is an error) -
 * addmm's k == 0 path in 1.13, on CPU and Meta alike. */
static disp_status scale_by_beta(disp_tensor *out, disp_scalar beta) {
  disp_tensor *w = NULL, *same = NULL;
  disp_status st = disp__wrap_scalar(beta, disp__t_device(out), &w);
  if (st == DISP_OK) st = disp_aten_mul__Tensor(out, w, &same);
  disp_tensor_release(same);
  disp__unwrap_scalar(w);
  return st;
}

disp_status disp__meta_addmm(disp_tensor *self, disp_tensor *mat1, disp_tensor *mat2,
                             disp_scalar beta, disp_scalar alpha, disp_tensor **out0) {
  (void)alpha;
  int64_t sz[2];
  disp_status st = addmm_geometry(self, mat1, mat2, sz);
  if (st != DISP_OK) return st;
  disp_tensor *out;
  if ((st = new_like_device(sz, 2, disp__t_dtype(self), self, &out)) != DISP_OK) return st;
  /* k == 0 scales by beta with mul_, whose dtype check Meta shares */
  if (disp__t_size(mat1, 1) == 0 && disp__t_numel(out) > 0 && disp_scalar_to_double(beta) != 0.0) {
    if ((st = scale_by_beta(out, beta)) != DISP_OK) {
      disp_tensor_release(out);
      return st;
    }
  }
  *out0 = out;
  return DISP_OK;
}

disp_status disp__cpu_addmm(disp_tensor *self, disp_tensor *mat1, disp_tensor *mat2,
                            disp_scalar beta, disp_scalar alpha, disp_tensor **out0) {
  int64_t sz[2];
  disp_status st = addmm_geometry(self, mat1, mat2, sz);
  if (st != DISP_OK) return st;
  int trivial = gemm_trivial(sz[0] * sz[1], disp__t_size(mat1, 1));
  if (!trivial && (st = check_gemm_dtype("addmm", "addmm_impl_cpu_", disp__t_dtype(self), 0)) != DISP_OK) return st;
  disp_tensor *out;
  if ((st = new_like_device(sz, 2, disp__t_dtype(self), self, &out)) != DISP_OK) return st;
  int beta_zero = disp_scalar_to_double(beta) == 0.0;
  if (trivial) {
    /* k == 0: beta * self, scaled by an in-place mul_ (whose promotion
     * rules apply: a float beta on an integer self is an error). */
    if (beta_zero || disp__t_numel(out) == 0) {
      zero_fill(out);
    } else {
      disp__titer_copy(out, self); /* self broadcast to (m, n) */
      if ((st = scale_by_beta(out, beta)) != DISP_OK) {
        disp_tensor_release(out);
        return st;
      }
    }
    *out0 = out;
    return DISP_OK;
  }
  disp__mat a = mat_of(mat1, 0, 1, 0), b = mat_of(mat2, 0, 1, 0), c = mat_of(out, 0, 1, 0);
  if (!beta_zero && disp__gemm_small_from(disp__t_dtype(self), sz[0], sz[1], disp__t_size(mat1, 1), alpha, a, b, beta,
                                          broadcast_mat(self), c)) {
    *out0 = out; /* a small product read self where it lies (the bias: no copy) */
    return DISP_OK;
  }
  /* out = self broadcast to (m, n) by the one broadcast copy (a memcpy
   * per row for a bias vector); the gemm then scales it by beta. */
  if (!beta_zero) disp__titer_copy(out, self);
  st = disp__gemm(disp__t_dtype(self), sz[0], sz[1], disp__t_size(mat1, 1), alpha, a, b,
                  beta_zero ? disp_scalar_int(0) : beta, c);
  if (st != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  *out0 = out;
  return DISP_OK;
}

/* ---- bmm ------------------------------------------------------------------ */

static disp_status bmm_geometry(disp_tensor *self, disp_tensor *mat2, int64_t *sizes) {
  if (disp__t_ndim(self) != 3) return FAIL("bmm: batch1 must be a 3D tensor");
  if (disp__t_ndim(mat2) != 3) return FAIL("bmm: batch2 must be a 3D tensor");
  int64_t b = disp__t_size(self, 0), k = disp__t_size(self, 2);
  if (disp__t_size(mat2, 0) != b || disp__t_size(mat2, 1) != k)
    return FAIL("bmm: Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] but "
                "got: [%lld, %lld].", (long long)b, (long long)k, (long long)disp__t_size(mat2, 0),
                (long long)disp__t_size(mat2, 1));
  sizes[0] = b;
  sizes[1] = disp__t_size(self, 1);
  sizes[2] = disp__t_size(mat2, 2);
  return DISP_OK;
}

/* 1.13's bmm: products of fewer than 400 multiply-adds per matrix run its
 * own loop, in the element type itself; larger ones an addmm per batch. */
static int bmm_small(const disp_tensor *self, const int64_t *sz) { return disp__t_size(self, 2) * sz[1] * sz[2] < 400; }

/* The errors of a non-trivial bmm, as 1.13's CPU kernel raises them (the
 * result has batch2's dtype; the small loop dispatches on batch1's). */
static disp_status bmm_check_dtypes(disp_tensor *self, disp_tensor *mat2, const int64_t *sz) {
  if (bmm_small(self, sz)) {
    disp_dtype dt = disp__t_dtype(self);
    if (dt == DISP_DTYPE_FLOAT16 || dt == DISP_DTYPE_BOOL || dt == DISP_DTYPE_QUINT8)
      return FAIL("bmm: \"bmm\" not implemented for '%s'", tname(dt));
    return check_same_dtype("bmm", disp__t_dtype(self), mat2);
  }
  if (disp__t_dtype(self) != disp__t_dtype(mat2)) return FAIL("bmm: mat1 and mat2 must have the same dtype");
  return check_gemm_dtype("bmm", "addmm_impl_cpu_", disp__t_dtype(self), 0);
}

disp_status disp__meta_bmm(disp_tensor *self, disp_tensor *mat2, disp_tensor **out0) {
  int64_t sz[3];
  disp_status st = bmm_geometry(self, mat2, sz);
  if (st == DISP_OK && !gemm_trivial(sz[0] * sz[1] * sz[2], disp__t_size(self, 2)))
    st = bmm_check_dtypes(self, mat2, sz);
  if (st != DISP_OK) return st;
  return new_like_device(sz, 3, disp__t_dtype(mat2), self, out0);
}

/* One element of the small loop: the sum of products, each product and
 * each partial sum rounded to the element type as its C++ arithmetic does
 * (float16/bfloat16 through float, integers wrapping). */
static void bmm_small_elem(disp_dtype dt, const char *a, int64_t as, const char *b, int64_t bs, int64_t k,
                           char *out) {
  size_t isz = disp_dtype_itemsize(dt);
  if (!disp_dtype_is_floating(dt)) {
    int64_t acc = 0;
    for (int64_t i = 0; i < k; i++) {
      acc += disp__load_int64(a + i * as * (int64_t)isz, dt) * disp__load_int64(b + i * bs * (int64_t)isz, dt);
      disp__store_int64(out, dt, acc); /* the accumulator is the element itself */
      acc = disp__load_int64(out, dt);
    }
    disp__store_int64(out, dt, acc);
    return;
  }
  double acc = 0;
  for (int64_t i = 0; i < k; i++) {
    double x = disp__load_double(a + i * as * (int64_t)isz, dt), y = disp__load_double(b + i * bs * (int64_t)isz, dt);
    double p = dt == DISP_DTYPE_FLOAT64 ? x * y : (double)((float)x * (float)y);
    if (dt != DISP_DTYPE_FLOAT64) { /* round the product, then the sum, to the element type */
      disp__store_double(out, dt, p);
      p = disp__load_double(out, dt);
      acc = (double)((float)acc + (float)p);
    } else {
      acc += p;
    }
    disp__store_double(out, dt, acc);
    acc = disp__load_double(out, dt);
  }
  disp__store_double(out, dt, acc);
}

/* Batches [lo, hi) of a bmm through disp__gemm, out = self @ mat2. */
typedef struct bmm_job {
  disp_tensor *self, *mat2, *out;
  atomic_int status;
} bmm_job;

enum { BMM_MIN_WORK = 65536 }; /* multiply-adds worth a thread */

static disp_status bmm_gemms(bmm_job *j, int64_t lo, int64_t hi) {
  disp_status st = DISP_OK;
  const int64_t *sz = disp__t_sizes(j->out);
  for (int64_t b = lo; b < hi && st == DISP_OK; b++)
    st = disp__gemm(disp__t_dtype(j->self), sz[1], sz[2], disp__t_size(j->self, 2), disp_scalar_int(1),
                    mat_of(j->self, 1, 2, b), mat_of(j->mat2, 1, 2, b), disp_scalar_int(0),
                    mat_of(j->out, 1, 2, b));
  return st;
}

static void bmm_batches(int64_t lo, int64_t hi, void *arg) {
  bmm_job *j = arg;
  disp_status st = bmm_gemms(j, lo, hi);
  if (st != DISP_OK) atomic_store(&j->status, (int)st);
}

disp_status disp__cpu_bmm(disp_tensor *self, disp_tensor *mat2, disp_tensor **out0) {
  int64_t sz[3];
  disp_status st = bmm_geometry(self, mat2, sz);
  if (st != DISP_OK) return st;
  int trivial = gemm_trivial(sz[0] * sz[1] * sz[2], disp__t_size(self, 2));
  if (!trivial && (st = bmm_check_dtypes(self, mat2, sz)) != DISP_OK) return st;
  disp_tensor *out;
  if ((st = new_like_device(sz, 3, disp__t_dtype(mat2), self, &out)) != DISP_OK) return st;
  if (trivial) {
    zero_fill(out);
    *out0 = out;
    return DISP_OK;
  }
  if (bmm_small(self, sz)) {
    size_t isz = disp_dtype_itemsize(disp__t_dtype(self));
    const char *a = disp_tensor_data_ptr(self), *b = disp_tensor_data_ptr(mat2);
    char *o = disp_tensor_data_ptr(out);
    for (int64_t n = 0; n < sz[0]; n++)
      for (int64_t i = 0; i < sz[1]; i++)
        for (int64_t j = 0; j < sz[2]; j++)
          bmm_small_elem(
              disp__t_dtype(self), a + (n * disp__t_stride(self, 0) + i * disp__t_stride(self, 1)) * (int64_t)isz,
              disp__t_stride(self, 2), b + (n * disp__t_stride(mat2, 0) + j * disp__t_stride(mat2, 2)) * (int64_t)isz,
              disp__t_stride(mat2, 1), disp__t_size(self, 2), o + (size_t)((n * sz[1] + i) * sz[2] + j) * isz);
    *out0 = out;
    return DISP_OK;
  }
  bmm_job j = {self, mat2, out, 0};
  /* batches on the library's threads, each product on one (Note [Threaded
   * gemm]); a failure is redone here, where its message belongs */
  double per = (double)sz[1] * (double)sz[2] * (double)disp__t_size(self, 2); /* int64 may overflow */
  int64_t grain = per >= BMM_MIN_WORK ? 1 : BMM_MIN_WORK / (int64_t)(per > 1 ? per : 1) + 1;
  disp__parallel_for(0, sz[0], grain, bmm_batches, &j);
  if (atomic_load(&j.status) != DISP_OK) st = bmm_gemms(&j, 0, sz[0]);
  if (st != DISP_OK) {
    disp_tensor_release(out);
    return st;
  }
  *out0 = out;
  return DISP_OK;
}

/* ---- matmul (CompositeImplicitAutograd) ------------------------------------ */

static disp_int_list ilist(const int64_t *v, int n) {
  disp_int_list l = {v, (size_t)n};
  return l;
}

/* Replaces *t by op(*t) (releasing the old one); on error *t is released and NULL. */
#define CHAIN(t, call)                    \
  do {                                    \
    disp_tensor *nt_ = NULL;              \
    disp_status cs_ = (call);             \
    disp_tensor_release(t);               \
    (t) = nt_;                            \
    if (cs_ != DISP_OK) return cs_;       \
  } while (0)

/* 1-D . 1-D: PyTorch calls dot; here (1,n) @ (n,1) viewed as 0-dim. */
static disp_status matmul_dot(disp_tensor *a, disp_tensor *b, disp_tensor **out) {
  if (disp__t_size(a, 0) != disp__t_size(b, 0))
    return FAIL("dot: inconsistent tensor size, expected tensor [%lld] and src [%lld] to have the "
                "same number of elements, but got %lld and %lld elements respectively",
                (long long)disp__t_size(a, 0), (long long)disp__t_size(b, 0), (long long)disp__t_size(a, 0),
                (long long)disp__t_size(b, 0));
  if (disp__t_dtype(a) != disp__t_dtype(b))
    return FAIL("dot: expected both vectors to have same dtype, but found %s and %s", tname(disp__t_dtype(a)),
                tname(disp__t_dtype(b)));
  disp_tensor *x = NULL, *y = NULL, *r = NULL;
  disp_status st = disp_aten_unsqueeze(a, 0, &x);
  if (st == DISP_OK) st = disp_aten_unsqueeze(b, 1, &y);
  if (st == DISP_OK) st = disp_aten_mm(x, y, &r);
  disp_tensor_release(x);
  disp_tensor_release(y);
  if (st != DISP_OK) return st;
  CHAIN(r, disp_aten_reshape(r, ilist(NULL, 0), &nt_));
  *out = r;
  return DISP_OK;
}

/* Broadcast of two batch shapes (PyTorch's infer_size wording). */
static disp_status broadcast_batch(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out,
                                   int *nout) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int ia = na - n + i, ib = nb - n + i;
    int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1)
      return FAIL("matmul: The size of tensor a (%lld) must match the size of tensor b (%lld) at "
                  "non-singleton dimension %d", (long long)sa, (long long)sb, i);
    out[i] = sa == 1 ? sb : sa;
  }
  *nout = n;
  return DISP_OK;
}

disp_status disp__cia_matmul(disp_tensor *self, disp_tensor *other, disp_tensor **out0) {
  int d1 = disp__t_ndim(self), d2 = disp__t_ndim(other);
  if (d1 == 0 || d2 == 0)
    return FAIL("matmul: both arguments to matmul need to be at least 1D, but they are %dD and %dD", d1, d2);
  if (d1 == 1 && d2 == 1) return matmul_dot(self, other, out0);
  disp_tensor *r = NULL;
  if (d1 == 2 && d2 == 1) { /* mv */
    disp_tensor *v = NULL;
    disp_status st = disp_aten_unsqueeze(other, 1, &v);
    if (st == DISP_OK) st = disp_aten_mm(self, v, &r);
    disp_tensor_release(v);
    if (st != DISP_OK) return st;
    CHAIN(r, disp_aten_squeeze_dim(r, -1, &nt_));
    *out0 = r;
    return DISP_OK;
  }
  if (d1 == 1 && d2 == 2) {
    disp_tensor *v = NULL;
    disp_status st = disp_aten_unsqueeze(self, 0, &v);
    if (st == DISP_OK) st = disp_aten_mm(v, other, &r);
    disp_tensor_release(v);
    if (st != DISP_OK) return st;
    CHAIN(r, disp_aten_squeeze_dim(r, 0, &nt_));
    *out0 = r;
    return DISP_OK;
  }
  if (d1 == 2 && d2 == 2) return disp_aten_mm(self, other, out0);

  int64_t osz[DISP_TENSOR_MAX_DIMS + 2];
  if (d1 >= 3 && (d2 == 1 || d2 == 2)) {
    /* Fold self's batch into its rows: one mm. */
    int64_t shape[2] = {-1, disp__t_size(self, d1 - 1)};
    disp_tensor *f = NULL, *v = NULL;
    disp_status st = disp_aten_reshape(self, ilist(shape, 2), &f);
    if (st == DISP_OK) st = d2 == 1 ? disp_aten_unsqueeze(other, 1, &v) : DISP_OK;
    if (st == DISP_OK) st = disp_aten_mm(f, d2 == 1 ? v : other, &r);
    disp_tensor_release(f);
    disp_tensor_release(v);
    if (st != DISP_OK) return st;
    int n = 0;
    for (int i = 0; i < d1 - 1; i++) osz[n++] = disp__t_size(self, i);
    if (d2 == 2) osz[n++] = disp__t_size(other, 1);
    CHAIN(r, disp_aten_view(r, ilist(osz, n), &nt_));
    *out0 = r;
    return DISP_OK;
  }

  /* General batched case: broadcast the batch dims, bmm, reshape. */
  int64_t n = d1 > 1 ? disp__t_size(self, d1 - 2) : 1, m1 = disp__t_size(self, d1 - 1);
  int64_t m2 = d2 > 1 ? disp__t_size(other, d2 - 2) : disp__t_size(other, 0);
  int64_t p = d2 > 1 ? disp__t_size(other, d2 - 1) : 1;
  (void)m2;
  int64_t batch[DISP_TENSOR_MAX_DIMS];
  int nb = 0;
  disp_status st = broadcast_batch(disp__t_sizes(self), d1 > 2 ? d1 - 2 : 0, disp__t_sizes(other), d2 > 2 ? d2 - 2 : 0,
                                   batch, &nb);
  if (st != DISP_OK) return st;
  int64_t bprod = 1;
  for (int i = 0; i < nb; i++) bprod *= batch[i];

  int64_t e1[DISP_TENSOR_MAX_DIMS + 2], e2[DISP_TENSOR_MAX_DIMS + 2];
  memcpy(e1, batch, sizeof(int64_t) * (size_t)nb);
  memcpy(e2, batch, sizeof(int64_t) * (size_t)nb);
  e1[nb] = n, e1[nb + 1] = m1;
  e2[nb] = d2 > 1 ? disp__t_size(other, d2 - 2) : disp__t_size(other, 0), e2[nb + 1] = p;
  int64_t f1[3] = {bprod, n, m1}, f2[3] = {bprod, e2[nb], p};

  disp_tensor *t1 = NULL, *t2 = NULL;
  st = d1 == 1 ? disp_aten_unsqueeze(self, 0, &t1) : (disp_tensor_retain(self), t1 = self, DISP_OK);
  if (st == DISP_OK) st = d2 == 1 ? disp_aten_unsqueeze(other, 1, &t2) : (disp_tensor_retain(other), t2 = other, DISP_OK);
  if (st == DISP_OK) {
    disp_tensor *x = NULL;
    st = disp_aten_expand(t1, ilist(e1, nb + 2), false, &x);
    disp_tensor_release(t1);
    t1 = NULL;
    if (st == DISP_OK) st = disp_aten_reshape(x, ilist(f1, 3), &t1);
    disp_tensor_release(x);
  }
  if (st == DISP_OK) {
    disp_tensor *x = NULL;
    st = disp_aten_expand(t2, ilist(e2, nb + 2), false, &x);
    disp_tensor_release(t2);
    t2 = NULL;
    if (st == DISP_OK) st = disp_aten_reshape(x, ilist(f2, 3), &t2);
    disp_tensor_release(x);
  }
  if (st == DISP_OK) st = disp_aten_bmm(t1, t2, &r);
  disp_tensor_release(t1);
  disp_tensor_release(t2);
  if (st != DISP_OK) return st;
  int no = nb;
  memcpy(osz, batch, sizeof(int64_t) * (size_t)nb);
  if (d1 > 1) osz[no++] = n;
  if (d2 > 1) osz[no++] = p;
  CHAIN(r, disp_aten_view(r, ilist(osz, no), &nt_));
  *out0 = r;
  return DISP_OK;
}

/* ---- linear (CompositeImplicitAutograd) -------------------------------------- */

disp_status disp__cia_linear(disp_tensor *input, disp_tensor *weight, disp_tensor *bias,
                             disp_tensor **out0) {
  disp_tensor *wt = NULL, *r = NULL;
  disp_status st = disp_aten_t(weight, &wt);
  if (st != DISP_OK) return st;
  if (disp__t_ndim(input) == 2 && bias) {
    st = disp_aten_addmm(bias, input, wt, disp_scalar_int(1), disp_scalar_int(1), out0);
    disp_tensor_release(wt);
    return st;
  }
  if (disp__t_ndim(input) == 3 && bias && disp__t_is_contiguous(input)) {
    /* 1.13's _flatten_3d_linear: one addmm over (N*M, K), viewed back */
    int64_t flat[2] = {disp__t_size(input, 0) * disp__t_size(input, 1), disp__t_size(input, 2)};
    disp_tensor *x = NULL;
    st = disp_aten_view(input, ilist(flat, 2), &x);
    if (st == DISP_OK) st = disp_aten_addmm(bias, x, wt, disp_scalar_int(1), disp_scalar_int(1), &r);
    disp_tensor_release(x);
    disp_tensor_release(wt);
    if (st != DISP_OK) return st;
    int64_t osz[3] = {disp__t_size(input, 0), disp__t_size(input, 1), disp__t_size(r, 1)};
    st = disp_aten_view(r, ilist(osz, 3), out0);
    disp_tensor_release(r);
    return st;
  }
  st = disp_aten_matmul(input, wt, &r);
  disp_tensor_release(wt);
  if (st != DISP_OK) return st;
  if (bias) {
    disp_tensor *same = NULL;
    st = disp_aten_add__Tensor(r, bias, disp_scalar_int(1), &same);
    disp_tensor_release(same);
    if (st != DISP_OK) {
      disp_tensor_release(r);
      return st;
    }
  }
  *out0 = r;
  return DISP_OK;
}
