/*
 * safetensors_set.c - the named set of tensors and its metadata
 * (disp/safetensors.h): building, looking up, freeing. Reading and
 * writing files live in safetensors_read.c / safetensors_write.c.
 */
#include <string.h>

#include "alloc_internal.h"
#include "error_internal.h"
#include "interop/safetensors_internal.h"

/* The format's names, by libdispatch dtype (NULL: not representable). */
static const char *const st_names[DISP_DTYPE_COUNT] = {
    [DISP_DTYPE_FLOAT32] = "F32", [DISP_DTYPE_FLOAT64] = "F64", [DISP_DTYPE_FLOAT16] = "F16",
    [DISP_DTYPE_BFLOAT16] = "BF16", [DISP_DTYPE_INT64] = "I64", [DISP_DTYPE_INT32] = "I32",
    [DISP_DTYPE_INT16] = "I16", [DISP_DTYPE_INT8] = "I8", [DISP_DTYPE_UINT8] = "U8",
    [DISP_DTYPE_BOOL] = "BOOL", [DISP_DTYPE_QUINT8] = NULL};

/* Names the reference knows that libdispatch has no dtype for. */
static const char *const st_unsupported[] = {"U16", "U32", "U64", "F8_E5M2", "F8_E4M3"};

const char *disp_safetensors_dtype_name(disp_dtype dt) {
  if ((unsigned)dt >= DISP_DTYPE_COUNT)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_safetensors_dtype_name: %d is not a dtype", (int)dt), NULL;
  if (!st_names[dt])
    disp__fail(DISP_ERR_INVALID_ARG, "disp_safetensors_dtype_name: safetensors has no %s", disp_dtype_name(dt));
  return st_names[dt];
}

int disp__st_dtype_parse(const char *name, disp_dtype *out) {
  for (int d = 0; d < DISP_DTYPE_COUNT; d++) {
    if (st_names[d] && strcmp(st_names[d], name) == 0) {
      *out = (disp_dtype)d;
      return 1;
    }
  }
  for (size_t i = 0; i < sizeof st_unsupported / sizeof *st_unsupported; i++)
    if (strcmp(st_unsupported[i], name) == 0) return 0;
  return -1;
}

disp_status disp_safetensors_new(disp_safetensors **out) {
  if (!out) return disp__fail(DISP_ERR_INVALID_ARG, "disp_safetensors_new: out is NULL");
  disp_safetensors *set = disp__calloc(1, sizeof *set);
  if (!set) return disp__fail(DISP_ERR_NO_MEMORY, "disp_safetensors_new: out of memory");
  *out = set;
  return DISP_OK;
}

void disp_safetensors_free(disp_safetensors *set) {
  if (!set) return;
  for (size_t i = 0; i < set->count; i++) {
    disp__free(set->items[i].name);
    disp_tensor_release(set->items[i].tensor);
  }
  for (size_t i = 0; i < set->meta_count; i++) {
    disp__free(set->meta[i].key);
    disp__free(set->meta[i].value);
  }
  disp__free(set->items);
  disp__free(set->meta);
  disp_storage_release(set->mapping);
  disp__free(set);
}

/* Grow an array of `size`-byte elements to hold one more. */
static int grow(void **arr, size_t *cap, size_t count, size_t size) {
  if (count < *cap) return 1;
  size_t n = *cap ? *cap * 2 : 8;
  void *p = disp__realloc(*arr, n * size);
  if (!p) return 0;
  *arr = p;
  *cap = n;
  return 1;
}

long disp__st_find(const disp_safetensors *set, const char *name) {
  for (size_t i = 0; i < set->count; i++)
    if (strcmp(set->items[i].name, name) == 0) return (long)i;
  return -1;
}

disp_status disp__st_append_steal(disp_safetensors *set, const char *name, disp_tensor *t, int check) {
  if (check && disp__st_find(set, name) >= 0)
    return disp__fail(DISP_ERR_DUPLICATE, "disp_safetensors_add: the set already has a tensor named '%s'",
                      name);
  char *copy = disp__strdup(name);
  if (!copy || !grow((void **)&set->items, &set->cap, set->count, sizeof *set->items)) {
    disp__free(copy);
    return disp__fail(DISP_ERR_NO_MEMORY, "disp_safetensors_add: out of memory");
  }
  set->items[set->count++] = (st_item){copy, t};
  return DISP_OK;
}

disp_status disp_safetensors_add(disp_safetensors *set, const char *name, disp_tensor *t) {
  if (!set || !name || !t)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_safetensors_add: %s is NULL",
                      !set ? "set" : !name ? "name" : "t");
  if (!*name || strcmp(name, "__metadata__") == 0)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_safetensors_add: '%s' cannot name a tensor%s", name,
                      *name ? " (the header's metadata key)" : " (empty name)");
  disp_status s = disp__st_append_steal(set, name, t, 1);
  if (s == DISP_OK) disp_tensor_retain(t);
  return s;
}

disp_status disp_safetensors_set_metadata(disp_safetensors *set, const char *key, const char *value) {
  if (!set || !key || !value)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_safetensors_set_metadata: %s is NULL",
                      !set ? "set" : !key ? "key" : "value");
  char *v = disp__strdup(value);
  if (!v) return disp__fail(DISP_ERR_NO_MEMORY, "disp_safetensors_set_metadata: out of memory");
  for (size_t i = 0; i < set->meta_count; i++) {
    if (strcmp(set->meta[i].key, key) == 0) {
      disp__free(set->meta[i].value);
      set->meta[i].value = v;
      return DISP_OK;
    }
  }
  char *k = disp__strdup(key);
  if (!k || !grow((void **)&set->meta, &set->meta_cap, set->meta_count, sizeof *set->meta)) {
    disp__free(k);
    disp__free(v);
    return disp__fail(DISP_ERR_NO_MEMORY, "disp_safetensors_set_metadata: out of memory");
  }
  set->meta[set->meta_count++] = (st_meta){k, v};
  return DISP_OK;
}

size_t disp_safetensors_count(const disp_safetensors *set) { return set ? set->count : 0; }

/* Note [NULL arguments] (b): a getter given NULL returns NULL and says so. */
static void *null_arg(const char *fn, const char *arg) {
  disp__fail(DISP_ERR_INVALID_ARG, "%s: %s is NULL", fn, arg);
  return NULL;
}

/* The same for an index past the end. */
static void *out_of_range(const char *fn, size_t i, size_t n, const char *what) {
  disp__fail(DISP_ERR_INVALID_ARG, "%s: index %zu is out of range (the set has %zu %s)", fn, i, n, what);
  return NULL;
}

const char *disp_safetensors_name(const disp_safetensors *set, size_t i) {
  if (!set) return null_arg("disp_safetensors_name", "set");
  return i < set->count ? set->items[i].name : out_of_range("disp_safetensors_name", i, set->count, "tensors");
}

disp_tensor *disp_safetensors_tensor(const disp_safetensors *set, size_t i) {
  if (!set) return null_arg("disp_safetensors_tensor", "set");
  return i < set->count ? set->items[i].tensor : out_of_range("disp_safetensors_tensor", i, set->count, "tensors");
}

disp_tensor *disp_safetensors_get(const disp_safetensors *set, const char *name) {
  if (!set || !name) return null_arg("disp_safetensors_get", !set ? "set" : "name");
  long i = disp__st_find(set, name);
  return i < 0 ? NULL : set->items[i].tensor;
}

size_t disp_safetensors_metadata_count(const disp_safetensors *set) { return set ? set->meta_count : 0; }

const char *disp_safetensors_metadata_key(const disp_safetensors *set, size_t i) {
  if (!set) return null_arg("disp_safetensors_metadata_key", "set");
  return i < set->meta_count ? set->meta[i].key : out_of_range("disp_safetensors_metadata_key", i, set->meta_count, "metadata entries");
}

const char *disp_safetensors_metadata_value(const disp_safetensors *set, size_t i) {
  if (!set) return null_arg("disp_safetensors_metadata_value", "set");
  return i < set->meta_count ? set->meta[i].value : out_of_range("disp_safetensors_metadata_value", i, set->meta_count, "metadata entries");
}

const char *disp_safetensors_metadata_get(const disp_safetensors *set, const char *key) {
  if (!set || !key) return null_arg("disp_safetensors_metadata_get", !set ? "set" : "key");
  for (size_t i = 0; i < set->meta_count; i++)
    if (strcmp(set->meta[i].key, key) == 0) return set->meta[i].value;
  return NULL;
}
