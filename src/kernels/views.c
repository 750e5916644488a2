/*
 * views.c - the view operators: results share storage and version counter
 * with their input (disp_tensor_new_view) and carry PyTorch's exact
 * geometry. One function per op computes sizes/strides/offset; the CPU and
 * Meta kernels of the backend ops and the composite kernels all go through
 * make_view, so every device gets the same geometry.
 */
#include <stdio.h>
#include <string.h>

#include "aten_internal.h"
#include "aten_kernels.h"
#include "elementwise_copy.h"
#include "disp/aten.h"
#include "strbuf_internal.h"
#include "tensor/checked_math_internal.h"
#include "views_internal.h"

/* ---- shared helpers ------------------------------------------------------ */

disp_status disp__views_wrap_dim(int64_t dim, int64_t ndim, int64_t *out) {
  if (ndim <= 0) ndim = 1; /* scalars accept 0 and -1 (PyTorch's wrap_scalar) */
  int64_t lo = -ndim, hi = ndim - 1;
  if (dim < lo || dim > hi)
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
                          (long long)lo, (long long)hi, (long long)dim);
  *out = dim < 0 ? dim + ndim : dim;
  return DISP_OK;
}

static void format_list(char *buf, size_t n, const int64_t *v, int len) {
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__format_int_list(&b, v, len);
  snprintf(buf, n, "%s", disp__strbuf_cstr(&b));
  disp__strbuf_free(&b);
}

/* A view's stride or offset that has no int64 value: no tensor can have it. */
static disp_status fail_overflow(const char *op, const char *what) {
  return disp_set_error(DISP_ERR_INVALID_ARG, "%s: the %s of the result overflows int64", op, what);
}

static disp_status make_view(disp_tensor *self, const int64_t *sizes, const int64_t *strides, int ndim,
                             int64_t offset, disp_tensor **out) {
  return disp_tensor_new_view(self, sizes, strides, ndim, offset, out);
}

/* A view with self's own geometry (PyTorch's alias()). */
static disp_status alias_of(disp_tensor *self, disp_tensor **out) {
  return make_view(self, disp__t_sizes(self), disp__t_strides(self), disp__t_ndim(self), disp__t_offset(self), out);
}

disp_status disp__views_infer_size(const char *op, const int64_t *shape, int n, int64_t numel, int64_t *out) {
  (void)op;
  int64_t prod = 1;
  int infer = -1, overflow = 0;
  for (int d = 0; d < n; d++) {
    if (shape[d] == -1) {
      if (infer >= 0) return disp_set_error(DISP_ERR_INVALID_ARG, "only one dimension can be inferred");
      infer = d;
    } else if (shape[d] >= 0) {
      /* No product past int64 equals an element count. */
      if (disp__mul_i64(prod, shape[d], &prod)) overflow = 1;
    } else {
      return disp_set_error(DISP_ERR_INVALID_ARG, "invalid shape dimension %lld", (long long)shape[d]);
    }
    out[d] = shape[d];
  }
  char list[512];
  if (overflow) {
    format_list(list, sizeof list, shape, n);
    return disp_set_error(DISP_ERR_INVALID_ARG, "shape '%s' is invalid for input of size %lld", list,
                          (long long)numel);
  }
  if (numel == prod || (infer >= 0 && prod > 0 && numel % prod == 0)) {
    if (infer >= 0) {
      if (prod == 0) {
        format_list(list, sizeof list, shape, n);
        return disp_set_error(DISP_ERR_INVALID_ARG,
                              "cannot reshape tensor of 0 elements into shape %s because the unspecified "
                              "dimension size -1 can be any value and is ambiguous",
                              list);
      }
      out[infer] = numel / prod;
    }
    return DISP_OK;
  }
  if (infer >= 0 && prod == 0 && numel == 0) {
    format_list(list, sizeof list, shape, n);
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "cannot reshape tensor of 0 elements into shape %s because the unspecified "
                          "dimension size -1 can be any value and is ambiguous",
                          list);
  }
  format_list(list, sizeof list, shape, n);
  return disp_set_error(DISP_ERR_INVALID_ARG, "shape '%s' is invalid for input of size %lld", list,
                        (long long)numel);
}

int disp__views_compute_strides(const int64_t *oldshape, const int64_t *oldstride, int oldn,
                               const int64_t *newshape, int newn, int64_t *newstride) {
  if (oldn == 0) {
    for (int d = 0; d < newn; d++) newstride[d] = 1;
    return 1;
  }
  int64_t numel = 1;
  for (int d = 0; d < oldn; d++) numel *= oldshape[d];
  if (numel == 0) {
    if (oldn == newn && !memcmp(oldshape, newshape, (size_t)oldn * sizeof *oldshape)) {
      memcpy(newstride, oldstride, (size_t)oldn * sizeof *oldstride);
      return 1;
    }
    disp__tensor_contiguous_strides(newshape, newn, newstride);
    return 1;
  }
  /* Walk the old dims from the innermost, in chunks of dims that are
   * contiguous with each other; each chunk must be exactly covered by a run
   * of new dims, which then get strides inside the chunk. */
  int view_d = newn - 1;
  int64_t chunk_base = oldstride[oldn - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int td = oldn - 1; td >= 0; td--) {
    /* A product past int64 matches no stride and no view size: whatever
     * would need it is not viewable (reshape then copies). */
    int64_t span;
    tensor_numel *= oldshape[td];
    if (disp__mul_i64(tensor_numel, chunk_base, &span)) return 0;
    if (td == 0 || (oldshape[td - 1] != 1 && oldstride[td - 1] != span)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        if (disp__mul_i64(view_numel, chunk_base, &newstride[view_d])) return 0;
        if (disp__mul_i64(view_numel, newshape[view_d], &view_numel)) return 0;
        view_d--;
      }
      if (view_numel != tensor_numel) return 0;
      if (td > 0) {
        chunk_base = oldstride[td - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

/* ---- as_strided, _reshape_alias, view --------------------------------- */

static disp_status as_strided_impl(disp_tensor *self, disp_int_list size, disp_int_list stride,
                                   disp_opt_int storage_offset, disp_tensor **out) {
  if (size.len != stride.len)
    return disp_set_error(DISP_ERR_INVALID_ARG, "mismatch in length of strides and shape");
  int n = 0;
  disp_status st = disp__check_ndim("as_strided", size.len, &n);
  if (st != DISP_OK) return st;
  for (int d = 0; d < n; d++) {
    if (stride.data[d] < 0) {
      char list[512];
      format_list(list, sizeof list, stride.data, n);
      return disp_set_error(DISP_ERR_INVALID_ARG,
                            "as_strided: Negative strides are not supported at the moment, got strides: %s", list);
    }
  }
  int64_t offset = storage_offset.has_value ? storage_offset.value : disp__t_offset(self);
  return make_view(self, size.data, stride.data, n, offset, out);
}

disp_status disp__cpu_as_strided(disp_tensor *self, disp_int_list size, disp_int_list stride,
                                 disp_opt_int storage_offset, disp_tensor **out0) {
  return as_strided_impl(self, size, stride, storage_offset, out0);
}


static disp_status reshape_alias_impl(disp_tensor *self, disp_int_list size, disp_int_list stride,
                                      disp_tensor **out) {
  disp_opt_int none = {0, false};
  return as_strided_impl(self, size, stride, none, out);
}

disp_status disp__cpu__reshape_alias(disp_tensor *self, disp_int_list size, disp_int_list stride,
                                     disp_tensor **out0) {
  return reshape_alias_impl(self, size, stride, out0);
}


static disp_status view_impl(disp_tensor *self, disp_int_list size, disp_tensor **out) {
  int64_t shape[DISP_TENSOR_MAX_DIMS], strides[DISP_TENSOR_MAX_DIMS];
  int n = 0;
  disp_status st = disp__check_ndim("view", size.len, &n);
  if (st == DISP_OK) st = disp__views_infer_size("view", size.data, n, disp__t_numel(self), shape);
  if (st != DISP_OK) return st;
  if (!disp__views_compute_strides(disp__t_sizes(self), disp__t_strides(self), disp__t_ndim(self), shape, n, strides))
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "view size is not compatible with input tensor's size and stride (at least one "
                          "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
  return make_view(self, shape, strides, n, disp__t_offset(self), out);
}

disp_status disp__cpu_view(disp_tensor *self, disp_int_list size, disp_tensor **out0) {
  return view_impl(self, size, out0);
}


/* ---- composites ------------------------------------------------------------ */

disp_status disp__cia_reshape(disp_tensor *self, disp_int_list shape, disp_tensor **out0) {
  int64_t sizes[DISP_TENSOR_MAX_DIMS], strides[DISP_TENSOR_MAX_DIMS];
  int n = 0;
  disp_status st = disp__check_ndim("reshape", shape.len, &n);
  if (st == DISP_OK) st = disp__views_infer_size("reshape", shape.data, n, disp__t_numel(self), sizes);
  if (st != DISP_OK) return st;
  disp_int_list sl = {sizes, (size_t)n};
  if (disp__views_compute_strides(disp__t_sizes(self), disp__t_strides(self), disp__t_ndim(self), sizes, n, strides)) {
    disp_int_list tl = {strides, (size_t)n};
    return disp_aten__reshape_alias(self, sl, tl, out0);
  }
  disp_tensor *c;
  st = disp_aten_clone(self, DISP_MEMORY_FORMAT_CONTIGUOUS, &c);
  if (st != DISP_OK) return st;
  st = disp_aten_view(c, sl, out0);
  disp_tensor_release(c);
  return st;
}

disp_status disp__cea_detach(disp_tensor *self, disp_tensor **out0) { return alias_of(self, out0); }

static disp_status transpose_impl(disp_tensor *self, int64_t dim0, int64_t dim1, disp_tensor **out) {
  int64_t d0 = 0, d1 = 0;
  disp_status st = disp__views_wrap_dim(dim0, disp__t_ndim(self), &d0);
  if (st == DISP_OK) st = disp__views_wrap_dim(dim1, disp__t_ndim(self), &d1);
  if (st != DISP_OK) return st;
  if (d0 == d1 || disp__t_ndim(self) == 0) return alias_of(self, out);
  int64_t sizes[DISP_TENSOR_MAX_DIMS], strides[DISP_TENSOR_MAX_DIMS];
  memcpy(sizes, disp__t_sizes(self), (size_t)disp__t_ndim(self) * sizeof *sizes);
  memcpy(strides, disp__t_strides(self), (size_t)disp__t_ndim(self) * sizeof *strides);
  sizes[d0] = disp__t_size(self, d1);
  sizes[d1] = disp__t_size(self, d0);
  strides[d0] = disp__t_stride(self, d1);
  strides[d1] = disp__t_stride(self, d0);
  return make_view(self, sizes, strides, disp__t_ndim(self), disp__t_offset(self), out);
}

disp_status disp__cea_transpose_int(disp_tensor *self, int64_t dim0, int64_t dim1, disp_tensor **out0) {
  return transpose_impl(self, dim0, dim1, out0);
}

disp_status disp__cea_t(disp_tensor *self, disp_tensor **out0) {
  if (disp__t_ndim(self) > 2)
    return disp_set_error(DISP_ERR_INVALID_ARG, "t() expects a tensor with <= 2 dimensions, but self is %dD",
                          disp__t_ndim(self));
  return transpose_impl(self, 0, disp__t_ndim(self) < 2 ? 0 : 1, out0);
}

disp_status disp__cea_permute(disp_tensor *self, disp_int_list dims, disp_tensor **out0) {
  int n = disp__t_ndim(self);
  if ((int64_t)dims.len != n)
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "permute(sparse_coo): number of dimensions in the tensor input does not match the "
                          "length of the desired ordering of dimensions i.e. input.dim() = %d is not equal to "
                          "len(dims) = %zu",
                          n, dims.len);
  int64_t sizes[DISP_TENSOR_MAX_DIMS], strides[DISP_TENSOR_MAX_DIMS];
  unsigned char seen[DISP_TENSOR_MAX_DIMS] = {0};
  for (int i = 0; i < n; i++) {
    int64_t d = 0;
    disp_status st = disp__views_wrap_dim(dims.data[i], n, &d);
    if (st != DISP_OK) return st;
    if (seen[d]) return disp_set_error(DISP_ERR_INVALID_ARG, "permute(): duplicate dims are not allowed.");
    seen[d] = 1;
    sizes[i] = disp__t_size(self, d);
    strides[i] = disp__t_stride(self, d);
  }
  return make_view(self, sizes, strides, n, disp__t_offset(self), out0);
}

static const char *legacy_type_name(disp_dtype dt) {
  switch (dt) {
  case DISP_DTYPE_FLOAT32: return "Float";
  case DISP_DTYPE_FLOAT64: return "Double";
  case DISP_DTYPE_FLOAT16: return "Half";
  case DISP_DTYPE_BFLOAT16: return "BFloat16";
  case DISP_DTYPE_INT64: return "Long";
  case DISP_DTYPE_INT32: return "Int";
  case DISP_DTYPE_INT16: return "Short";
  case DISP_DTYPE_INT8: return "Char";
  case DISP_DTYPE_UINT8: return "Byte";
  case DISP_DTYPE_BOOL: return "Bool";
  default: return disp_dtype_torch_name(dt);
  }
}

disp_status disp__cea_expand(disp_tensor *self, disp_int_list size, bool implicit, disp_tensor **out0) {
  (void)implicit; /* only autograd's broadcasting bookkeeping uses it */
  int n = 0, old = disp__t_ndim(self);
  char want[512], have[512];
  if (size.len < (size_t)old) {
    n = (int)size.len;
    format_list(want, sizeof want, size.data, n);
    format_list(have, sizeof have, disp__t_sizes(self), old);
    return disp_set_error(
        DISP_ERR_INVALID_ARG,
        "expand(torch.%s%sTensor{%s}, size=%s): the number of sizes provided (%d) must be "
        "greater or equal to the number of dimensions in the tensor (%d)",
        disp__t_device_type(self) == DISP_BACKEND_CPU ? "" : disp_device_type_name(disp__t_device_type(self)),
        disp__t_device_type(self) == DISP_BACKEND_CPU ? "" : ".", have, want, n, old);
  }
  disp_status st = disp__check_ndim("expand", size.len, &n);
  if (st != DISP_OK) return st;
  (void)legacy_type_name;
  int64_t sizes[DISP_TENSOR_MAX_DIMS], strides[DISP_TENSOR_MAX_DIMS];
  for (int i = n - 1; i >= 0; i--) {
    int dim = i - (n - old);
    int64_t sz = dim >= 0 ? disp__t_size(self, dim) : 1;
    int64_t sd = dim >= 0 ? disp__t_stride(self, dim) : 1;
    if (dim < 0 && i < n - 1 && disp__mul_i64(sizes[i + 1], strides[i + 1], &sd))
      return fail_overflow("expand", "stride");
    int64_t target = size.data[i];
    if (target == -1) {
      if (dim < 0)
        return disp_set_error(DISP_ERR_INVALID_ARG,
                              "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                              "dimension %d",
                              i);
      target = sz;
    }
    if (sz != target) {
      if (sz != 1 || target < 0) {
        format_list(want, sizeof want, size.data, n);
        format_list(have, sizeof have, disp__t_sizes(self), old);
        return disp_set_error(DISP_ERR_INVALID_ARG,
                              "The expanded size of the tensor (%lld) must match the existing size (%lld) at "
                              "non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s",
                              (long long)target, (long long)sz, i, want, have);
      }
      sz = target;
      sd = 0;
    }
    sizes[i] = sz;
    strides[i] = sd;
  }
  return make_view(self, sizes, strides, n, disp__t_offset(self), out0);
}

disp_status disp__cea_squeeze_dim(disp_tensor *self, int64_t dim, disp_tensor **out0) {
  int64_t d = 0;
  disp_status st = disp__views_wrap_dim(dim, disp__t_ndim(self), &d);
  if (st != DISP_OK) return st;
  if (disp__t_ndim(self) == 0 || disp__t_size(self, d) != 1) return alias_of(self, out0);
  int64_t sizes[DISP_TENSOR_MAX_DIMS], strides[DISP_TENSOR_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < disp__t_ndim(self); i++) {
    if (i == d) continue;
    sizes[n] = disp__t_size(self, i);
    strides[n++] = disp__t_stride(self, i);
  }
  return make_view(self, sizes, strides, n, disp__t_offset(self), out0);
}

disp_status disp__cea_unsqueeze(disp_tensor *self, int64_t dim, disp_tensor **out0) {
  int64_t d = 0;
  disp_status st = disp__views_wrap_dim(dim, disp__t_ndim(self) + 1, &d);
  if (st != DISP_OK) return st;
  if (disp__t_ndim(self) + 1 > DISP_TENSOR_MAX_DIMS)
    return disp_set_error(DISP_ERR_INVALID_ARG, "unsqueeze: too many dimensions");
  int64_t sizes[DISP_TENSOR_MAX_DIMS], strides[DISP_TENSOR_MAX_DIMS];
  int n = 0;
  for (int i = 0; i <= disp__t_ndim(self); i++) {
    if (i == d) {
      sizes[n] = 1;
      strides[n] = 1;
      if (d < disp__t_ndim(self) && disp__mul_i64(disp__t_size(self, d), disp__t_stride(self, d), &strides[n]))
        return fail_overflow("unsqueeze", "stride");
      n++;
    }
    if (i < disp__t_ndim(self)) {
      sizes[n] = disp__t_size(self, i);
      strides[n++] = disp__t_stride(self, i);
    }
  }
  return make_view(self, sizes, strides, n, disp__t_offset(self), out0);
}

disp_status disp__cea_select_int(disp_tensor *self, int64_t dim, int64_t index, disp_tensor **out0) {
  if (disp__t_ndim(self) == 0)
    return disp_set_error(DISP_ERR_INVALID_ARG, "select() cannot be applied to a 0-dim tensor.");
  int64_t d = 0;
  disp_status st = disp__views_wrap_dim(dim, disp__t_ndim(self), &d);
  if (st != DISP_OK) return st;
  int64_t size = disp__t_size(self, d);
  if (index < -size || index >= size) {
    char have[512];
    format_list(have, sizeof have, disp__t_sizes(self), disp__t_ndim(self));
    return disp_set_error(DISP_ERR_INVALID_ARG,
                          "select(): index %lld out of range for tensor of size %s at dimension %lld",
                          (long long)index, have, (long long)dim);
  }
  if (index < 0) index += size;
  int64_t sizes[DISP_TENSOR_MAX_DIMS], strides[DISP_TENSOR_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < disp__t_ndim(self); i++) {
    if (i == d) continue;
    sizes[n] = disp__t_size(self, i);
    strides[n++] = disp__t_stride(self, i);
  }
  int64_t offset;
  if (disp__mul_i64(index, disp__t_stride(self, d), &offset) || disp__add_i64(disp__t_offset(self), offset, &offset))
    return fail_overflow("select", "storage offset");
  return make_view(self, sizes, strides, n, offset, out0);
}

disp_status disp__cea_slice_Tensor(disp_tensor *self, int64_t dim, disp_opt_int start, disp_opt_int end,
                                   int64_t step, disp_tensor **out0) {
  if (disp__t_ndim(self) == 0)
    return disp_set_error(DISP_ERR_INVALID_ARG, "slice() cannot be applied to a 0-dim tensor.");
  int64_t d = 0;
  disp_status st = disp__views_wrap_dim(dim, disp__t_ndim(self), &d);
  if (st != DISP_OK) return st;
  if (step <= 0) return disp_set_error(DISP_ERR_INVALID_ARG, "slice step must be positive");
  int64_t size = disp__t_size(self, d);
  int64_t s = start.has_value ? start.value : 0;
  int64_t e = end.has_value ? end.value : INT64_MAX;
  /* 1.13 reads a start of INT64_MAX as "no start" (0). Adding a size to a
   * negative bound cannot overflow; after clamping 0 <= s <= e <= size. */
  if (s == INT64_MAX) s = 0;
  if (s < 0) s += size;
  if (e < 0) e += size;
  if (s < 0) s = 0;
  else if (s >= size) s = size;
  if (e < s) e = s;
  else if (e >= size) e = size;
  int64_t sizes[DISP_TENSOR_MAX_DIMS], strides[DISP_TENSOR_MAX_DIMS], offset;
  memcpy(sizes, disp__t_sizes(self), (size_t)disp__t_ndim(self) * sizeof *sizes);
  memcpy(strides, disp__t_strides(self), (size_t)disp__t_ndim(self) * sizeof *strides);
  /* ceil(len / step) without 1.13's len + step - 1, which wraps for a huge step */
  sizes[d] = e == s ? 0 : (e - s - 1) / step + 1;
  /* stride * step passes int64 only when at most one element is left
   * along d or the tensor has none (a non-empty tensor's (size - 1) *
   * stride fits its storage): no address depends on that stride then, so
   * it keeps the input's (1.13's product wraps). */
  if (disp__mul_i64(disp__t_stride(self, d), step, &strides[d])) strides[d] = disp__t_stride(self, d);
  if (disp__mul_i64(s, disp__t_stride(self, d), &offset) || disp__add_i64(disp__t_offset(self), offset, &offset))
    return fail_overflow("slice", "storage offset");
  return make_view(self, sizes, strides, disp__t_ndim(self), offset, out0);
}

disp_status disp__cia_narrow(disp_tensor *self, int64_t dim, int64_t start, int64_t length, disp_tensor **out0) {
  if (disp__t_ndim(self) == 0)
    return disp_set_error(DISP_ERR_INVALID_ARG, "narrow() cannot be applied to a 0-dim tensor.");
  int64_t d = 0;
  disp_status st = disp__views_wrap_dim(dim, disp__t_ndim(self), &d);
  if (st != DISP_OK) return st;
  if (length < 0) return disp_set_error(DISP_ERR_INVALID_ARG, "narrow(): length must be non-negative.");
  int64_t size = disp__t_size(self, d);
  if (start < -size || start > size)
    return disp_set_error(DISP_ERR_INVALID_ARG, "start out of range (expected to be in range of [%lld, %lld], but got %lld)",
                          (long long)-size, (long long)size, (long long)start);
  if (start < 0) start += size;
  if (start > size - length)
    return disp_set_error(DISP_ERR_INVALID_ARG, "start (%lld) + length (%lld) exceeds dimension size (%lld).",
                          (long long)start, (long long)length, (long long)size);
  disp_opt_int s = {start, true}, e = {start + length, true};
  return disp_aten_slice_Tensor(self, d, s, e, 1, out0);
}

disp_status disp__cia_flatten_using_ints(disp_tensor *self, int64_t start_dim, int64_t end_dim,
                                         disp_tensor **out0) {
  int64_t s = 0, e = 0;
  disp_status st = disp__views_wrap_dim(start_dim, disp__t_ndim(self), &s);
  if (st == DISP_OK) st = disp__views_wrap_dim(end_dim, disp__t_ndim(self), &e);
  if (st != DISP_OK) return st;
  if (s > e)
    return disp_set_error(DISP_ERR_INVALID_ARG, "flatten() has invalid args: start_dim cannot come after end_dim");
  int64_t one = 1;
  if (disp__t_ndim(self) == 0) {
    disp_int_list l = {&one, 1};
    return disp_aten_reshape(self, l, out0);
  }
  if (s == e) {
    *out0 = disp_tensor_retain(self);
    return DISP_OK;
  }
  int64_t shape[DISP_TENSOR_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < s; i++) shape[n++] = disp__t_size(self, i);
  int64_t prod = 1;
  for (int64_t i = s; i <= e; i++) prod *= disp__t_size(self, i);
  shape[n++] = prod;
  for (int i = (int)e + 1; i < disp__t_ndim(self); i++) shape[n++] = disp__t_size(self, i);
  disp_int_list l = {shape, (size_t)n};
  return disp_aten_reshape(self, l, out0);
}
