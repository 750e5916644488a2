/*
 * device_check.c - the slow path of the device check of built-in kernels
 * (device_check.h), taken only when the operands' devices differ.
 *
 * Note [One device check]
 * PyTorch 1.13 checks devices inside each kernel: TensorIterator's
 * compute_types for pointwise and reduction ops, hand-written checks
 * elsewhere, and none at all in some Meta kernels (mm(cpu, meta) then
 * answers with a Meta tensor or an internal assert). Here one generated
 * wrapper per CPU, Meta and CompositeExplicitAutograd kernel
 * (tools/gen_aten.c) applies TensorIterator's rule to every Tensor, Tensor?
 * and Tensor[] argument before the kernel runs, so no kernel that computes
 * sees mixed devices; CompositeImplicitAutograd kernels only call operators
 * that are checked. The rule's message puts the common device first, as
 * compute_types does: add(cpu, meta) fails with "..., meta and cpu!".
 * Operators whose 1.13 kernels take tensors on different devices say so in
 * aten_ops.def (CPU_SCALAR, CPU_SCALARS, ANY_DEVICE). Device arguments of
 * these kernels and of BackendSelect ones are checked as torch.device
 * checks them. The same wrappers (CompositeImplicitAutograd ones included)
 * check that ScalarType, Layout and MemoryFormat arguments hold a value of
 * their enum (disp__enum_arg_check), which PyTorch's C++ types guarantee.
 */
#include <limits.h>
#include <stdint.h>

#include "device_check.h"
#include "error_internal.h"
#include "schema_internal.h"

static disp_status mixed(disp_device common, disp_device other) {
  char a[32], b[32];
  disp_device_format(common, a, sizeof a);
  disp_device_format(other, b, sizeof b);
  return disp__fail(DISP_ERR_INVALID_ARG,
                    "Expected all tensors to be on the same device, but found at least two devices, %s and %s!", a, b);
}

/* The first non-CPU device of ts[0..n), or `found` unchanged. */
static int first_non_cpu(const disp_tensor *const *ts, size_t n, disp_device *found) {
  for (size_t i = 0; i < n; i++)
    if (ts[i] && disp__t_device_type(ts[i]) != DISP_BACKEND_CPU) {
      *found = disp__t_device(ts[i]);
      return 1;
    }
  return 0;
}

typedef struct rule {
  disp_device common;
  int scalars, max_scalars; /* CPU scalars seen and allowed */
} rule;

/* compute_types' second loop over ts[0..n), outputs or inputs. */
static disp_status check_all(rule *r, const disp_tensor *const *ts, size_t n, int outputs) {
  for (size_t i = 0; i < n; i++) {
    const disp_tensor *t = ts[i];
    if (!t) continue;
    if (r->common.type != DISP_BACKEND_CPU && r->max_scalars && !outputs && disp__t_ndim(t) == 0 &&
        disp__t_device_type(t) == DISP_BACKEND_CPU) {
      if (r->scalars == r->max_scalars)
        return disp__fail(DISP_ERR_INVALID_ARG, "Trying to pass too many CPU scalars to non-CPU kernel!");
      r->scalars++;
    } else if (!disp__device_same(disp__t_device(t), r->common)) {
      return mixed(r->common, disp__t_device(t));
    }
  }
  return DISP_OK;
}

disp_status disp__devices_check(const disp_tensor *const *ts, int n, int nout, const disp_tensor_list *ls, int nl,
                                unsigned flags) {
  rule r = {disp_device_make(DISP_BACKEND_CPU, -1), 0,
            (flags & DISP__DEV_CPU_SCALARS) ? INT_MAX : (flags & DISP__DEV_CPU_SCALAR) ? 1 : 0};
  int found = first_non_cpu(ts, (size_t)n, &r.common);
  for (int l = 0; l < nl && !found; l++) found = first_non_cpu((const disp_tensor *const *)ls[l].data, ls[l].len, &r.common);
  disp_status st = check_all(&r, ts, (size_t)nout, 1);
  if (st == DISP_OK) st = check_all(&r, ts + nout, (size_t)(n - nout), 0);
  for (int l = 0; l < nl && st == DISP_OK; l++)
    st = check_all(&r, (const disp_tensor *const *)ls[l].data, ls[l].len, 0);
  return st;
}

disp_status disp__device_arg_check(disp_opt_device d) {
  if (!d.has_value) return DISP_OK;
  if (d.index > INT16_MAX)
    return disp__fail(DISP_ERR_INVALID_ARG, "Device index %d is out of range (at most %d)", (int)d.index, INT16_MAX);
  return disp_device_validate(disp_device_make((disp_backend)d.type, d.index));
}

disp_status disp__enum_arg_check(int kind, int32_t v, int optional, const char *name) {
  int32_t count = kind == DISP_TYPE_SCALAR_TYPE ? DISP_DTYPE_COUNT
                  : kind == DISP_TYPE_LAYOUT    ? DISP_LAYOUT_COUNT
                                                : DISP_MEMORY_FORMAT_CHANNELS_LAST_3D + 1;
  if ((v >= 0 && v < count) || (optional && v == -1)) return DISP_OK;
  return disp__fail(DISP_ERR_INVALID_ARG, "argument '%s' must be a %s (0 to %d)%s, not %d", name,
                    disp__schema_kind_name((disp_type_kind)kind), (int)count - 1, optional ? " or None (-1)" : "",
                    (int)v);
}
