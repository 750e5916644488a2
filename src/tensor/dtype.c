/*
 * dtype.c - the dtype and layout tables, all generated from
 * DISP_FORALL_DTYPES so names, sizes and kinds cannot drift apart.
 */
#include <string.h>

#include "argcheck_internal.h"
#include "strbuf_internal.h"
#include "tensor_internal.h"

enum dtype_kind { KIND_FLOAT, KIND_INT, KIND_BOOL, KIND_QUANT };

typedef struct dtype_info {
  const char *name;
  const char *torch_name;
  const char *alias;
  size_t itemsize;
  enum dtype_kind kind;
} dtype_info;

static const dtype_info dtype_table[DISP_DTYPE_COUNT] = {
#define X(E, name, torch, alias, size, kind) {name, torch, alias, size, KIND_##kind},
    DISP_FORALL_DTYPES(X)
#undef X
};

static const dtype_info *info(disp_dtype dt) {
  return disp__dtype_valid(dt) ? &dtype_table[dt] : NULL;
}

const char *disp_dtype_name(disp_dtype dt) {
  const dtype_info *i = info(dt);
  return i ? i->name : "UNKNOWN_DTYPE";
}

const char *disp_dtype_torch_name(disp_dtype dt) {
  const dtype_info *i = info(dt);
  return i ? i->torch_name : "UNKNOWN_DTYPE";
}

size_t disp_dtype_itemsize(disp_dtype dt) {
  const dtype_info *i = info(dt);
  return i ? i->itemsize : 0;
}

int disp_dtype_is_floating(disp_dtype dt) {
  const dtype_info *i = info(dt);
  return i && i->kind == KIND_FLOAT;
}

int disp_dtype_is_integral(disp_dtype dt, int include_bool) {
  const dtype_info *i = info(dt);
  return i && (i->kind == KIND_INT || (include_bool && i->kind == KIND_BOOL));
}

int disp_dtype_is_quantized(disp_dtype dt) {
  const dtype_info *i = info(dt);
  return i && i->kind == KIND_QUANT;
}

disp_status disp_dtype_parse(const char *name, disp_dtype *out) {
  DISP_REFUSE_NULL(name);
  DISP_REFUSE_NULL(out);
  /* "torch.float32" reads as it does in Python. */
  const char *n = strncmp(name, "torch.", 6) == 0 ? name + 6 : name;
  for (int i = 0; i < DISP_DTYPE_COUNT; i++) {
    const dtype_info *d = &dtype_table[i];
    if (!strcmp(n, d->name) || (d->alias[0] && !strcmp(n, d->alias)) ||
        (n == name && !strcmp(n, d->torch_name))) {
      *out = (disp_dtype)i;
      return DISP_OK;
    }
  }
  disp_strbuf b;
  disp__strbuf_init(&b);
  for (int i = 0; i < DISP_DTYPE_COUNT; i++)
    disp__strbuf_appendf(&b, "%s%s", i ? ", " : "", dtype_table[i].name);
  disp_status s = disp__fail(DISP_ERR_INVALID_ARG, "Unknown dtype name: '%s' (expected one of %s)",
                             name, disp__strbuf_cstr(&b));
  disp__strbuf_free(&b);
  return s;
}

const char *disp_layout_name(disp_layout l) {
  switch (l) {
    case DISP_LAYOUT_STRIDED: return "strided";
    case DISP_LAYOUT_SPARSE_COO: return "sparse_coo";
    default: return "UNKNOWN_LAYOUT";
  }
}
