/*
 * validate.c - what the engine checks of each gradient a node returns
 * (PyTorch 1.13's validate_outputs, and anomaly mode's NaN check).
 */
#include <math.h>

#include "engine_internal.h"
#include "error_internal.h"
#include "formula.h"
#include "strbuf_internal.h"
#include "tensor/tensor_internal.h"

/* Whether `shape` broadcasts to `desired` (PyTorch's is_expandable_to). */
static int expandable_to(const int64_t *shape, int nd, const int64_t *desired, int dd) {
  if (nd > dd) return 0;
  for (int i = 0; i < nd; i++) {
    int64_t s = shape[nd - 1 - i], d = desired[dd - 1 - i];
    if (s != d && s != 1) return 0;
  }
  return 1;
}

static int same_shape(const int64_t *a, int na, const int64_t *b, int nb) {
  if (na != nb) return 0;
  for (int i = 0; i < na; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

static disp_status bad_shape(disp_node *n, uint32_t i, disp_tensor *g, const ag_geom *m) {
  disp_strbuf b;
  disp__strbuf_init(&b);
  disp__strbuf_appendf(&b, "Function %s returned an invalid gradient at index %u - got ", n->name, i);
  disp__format_int_list(&b, disp_tensor_sizes(g), disp_tensor_ndim(g));
  disp__strbuf_append(&b, " but expected shape compatible with ");
  disp__format_int_list(&b, disp__geom_sizes(m), m->ndim);
  disp_status st = disp__fail(DISP_ERR_INVALID_ARG, "%s", disp__strbuf_cstr(&b));
  disp__strbuf_free(&b);
  return st;
}

static disp_status fix_one(disp_node *n, uint32_t i, disp_tensor **slot) {
  const ag_geom *m = &n->geom[i];
  disp_tensor *g = *slot, *t;
  disp_status st;
  if (!same_shape(disp_tensor_sizes(g), disp_tensor_ndim(g), disp__geom_sizes(m), m->ndim)) {
    if (!expandable_to(disp__geom_sizes(m), m->ndim, disp_tensor_sizes(g), disp_tensor_ndim(g)))
      return bad_shape(n, i, g, m);
    if ((st = ag_sum_to(g, disp__geom_sizes(m), m->ndim, &t)) != DISP_OK) return st;
    disp_tensor_release(g);
    *slot = g = t;
  }
  if (disp_tensor_dtype(g) != m->dtype) {
    if ((st = disp_aten_to_dtype(g, (int32_t)m->dtype, false, false, -1, &t)) != DISP_OK) return st;
    disp_tensor_release(g);
    *slot = g = t;
  }
  disp_device d = disp_tensor_device(g);
  if (d.type != m->device.type || (d.index != m->device.index && m->device.index >= 0 && d.index >= 0)) {
    char want[64], got[64];
    disp_device_format(m->device, want, sizeof want);
    disp_device_format(d, got, sizeof got);
    return disp__fail(DISP_ERR_INVALID_ARG, "Function %s returned an invalid gradient at index %u - expected device %s but got %s",
                      n->name, i, want, got);
  }
  return DISP_OK;
}

disp_status disp__validate_outputs(disp_node *n, disp_tensor **out, int create_graph) {
  disp_tls_state g = disp_grad_mode_push(create_graph);
  disp_status st = DISP_OK;
  for (uint32_t i = 0; i < n->num_next && st == DISP_OK; i++) {
    if (!out[i]) continue;
    if (!n->next[i].fn) { /* nobody wants it */
      disp_tensor_release(out[i]);
      out[i] = NULL;
      continue;
    }
    st = fix_one(n, i, &out[i]);
  }
  disp_tls_restore(g);
  return st;
}

static int has_nan(disp_tensor *t) {
  disp_tensor *isn = NULL, *any = NULL;
  /* x != x is true exactly for NaN. */
  disp_tls_state g = disp_grad_mode_push(0);
  int found = 0;
  if (disp_aten_ne_Tensor(t, t, &isn) == DISP_OK && disp_aten_sum(isn, -1, &any) == DISP_OK) {
    disp_scalar s;
    if (disp_aten_item(any, &s) == DISP_OK) found = disp_scalar_to_double(s) != 0;
  }
  disp_tls_restore(g);
  disp_tensor_release(isn);
  disp_tensor_release(any);
  return found;
}

disp_status disp__check_nan(disp_node *n, disp_tensor **out) {
  for (uint32_t i = 0; i < n->num_next; i++)
    if (out[i] && disp_dtype_is_floating(disp_tensor_dtype(out[i])) && has_nan(out[i]))
      return disp__fail(DISP_ERR_KERNEL,
                        "Function '%s' returned nan values in its %uth output. (the forward operator was %s)",
                        n->name, i, n->fwd_op ? n->fwd_op : "unknown");
  return DISP_OK;
}
