/*
 * safetensors_write.c - writing a set as the reference writer does
 * (Note [What the reader accepts] in disp/safetensors.h): tensors by
 * element size, largest first, then name; compact JSON header padded with
 * spaces to a multiple of 8; the data, each tensor contiguous.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc_internal.h"
#include "error_internal.h"
#include "interop/safetensors_internal.h"

/* JSON text is UTF-8: jansson refuses other strings. */
static int utf8(const char *s) {
  size_t n = strlen(s);
  return disp__st_utf8_prefix((const uint8_t *)s, n) == n;
}

/* Every tensor must be a CPU tensor with storage and a dtype the format
 * names; the message says which one is not. */
static disp_status check_tensors(const char *fn, const disp_safetensors *set) {
  for (size_t i = 0; i < set->count; i++) {
    const disp_tensor *t = set->items[i].tensor;
    const char *why = disp_tensor_device(t).type != DISP_BACKEND_CPU ? "is not on the CPU (copy it there first)"
                      : !disp_tensor_strides(t) || !disp_tensor_storage(t) ? "has no CPU storage"
                      : !disp_safetensors_dtype_name(disp_tensor_dtype(t)) ? "has a dtype safetensors cannot hold"
                                                                           : NULL;
    if (why)
      return disp__fail(DISP_ERR_INVALID_ARG, "%s: tensor '%s' (%s) %s", fn, set->items[i].name,
                        disp_dtype_name(disp_tensor_dtype(t)), why);
    if (!utf8(set->items[i].name))
      return disp__fail(DISP_ERR_INVALID_ARG, "%s: tensor name '%s' is not valid UTF-8", fn, set->items[i].name);
  }
  for (size_t i = 0; i < set->meta_count; i++)
    if (!utf8(set->meta[i].key) || !utf8(set->meta[i].value))
      return disp__fail(DISP_ERR_INVALID_ARG, "%s: metadata '%s' is not valid UTF-8", fn, set->meta[i].key);
  return DISP_OK;
}

/* The reference's Dtype enum order ("increasing alignment"), by which its
 * writer sorts, descending: matching it makes the files byte-identical. */
static int dtype_rank(disp_dtype dt) {
  static const int rank[DISP_DTYPE_COUNT] = {
      [DISP_DTYPE_BOOL] = 0, [DISP_DTYPE_UINT8] = 1, [DISP_DTYPE_INT8] = 2, [DISP_DTYPE_INT16] = 5,
      [DISP_DTYPE_FLOAT16] = 7, [DISP_DTYPE_BFLOAT16] = 8, [DISP_DTYPE_INT32] = 9, [DISP_DTYPE_FLOAT32] = 11,
      [DISP_DTYPE_FLOAT64] = 12, [DISP_DTYPE_INT64] = 13};
  return rank[dt];
}

static int item_order(const void *pa, const void *pb) {
  const st_item *a = *(const st_item *const *)pa, *b = *(const st_item *const *)pb;
  int ra = dtype_rank(disp_tensor_dtype(a->tensor)), rb = dtype_rank(disp_tensor_dtype(b->tensor));
  if (ra != rb) return ra > rb ? -1 : 1;
  return strcmp(a->name, b->name);
}

static json_t *tensor_json(const disp_tensor *t, uint64_t begin, uint64_t end) {
  json_t *shape = json_array();
  for (int d = 0; shape && d < disp_tensor_ndim(t); d++)
    if (json_array_append_new(shape, json_integer(disp_tensor_sizes(t)[d])) != 0) {
      json_decref(shape);
      return NULL;
    }
  return json_pack("{s:s, s:o, s:[I,I]}", "dtype", disp_safetensors_dtype_name(disp_tensor_dtype(t)), "shape",
                   shape, "data_offsets", (json_int_t)begin, (json_int_t)end);
}

/* The header's JSON, padded with spaces to a multiple of 8 (malloc'ed,
 * *len bytes, not NUL-terminated). `order` is the items in file order. */
static char *header_text(const disp_safetensors *set, st_item *const *order, size_t *len) {
  json_t *root = json_object(), *meta = set->meta_count ? json_object() : NULL;
  int bad = !root || (set->meta_count && (!meta || json_object_set(root, "__metadata__", meta) != 0));
  for (size_t i = 0; !bad && i < set->meta_count; i++)
    bad = json_object_set_new(meta, set->meta[i].key, json_string(set->meta[i].value)) != 0;
  uint64_t off = 0;
  for (size_t i = 0; !bad && i < set->count; i++) {
    const disp_tensor *t = order[i]->tensor;
    uint64_t n = (uint64_t)disp_tensor_numel(t) * disp_tensor_itemsize(t);
    bad = json_object_set_new(root, order[i]->name, tensor_json(t, off, off + n)) != 0;
    off += n;
  }
  char *text = bad ? NULL : json_dumps(root, JSON_COMPACT);
  json_decref(meta);
  json_decref(root);
  if (!text) return NULL;
  size_t n = strlen(text), padded = (n + 7) / 8 * 8;
  char *out = disp__malloc(padded ? padded : 1);
  if (out) {
    memcpy(out, text, n);
    memset(out + n, ' ', padded - n);
    *len = padded;
  }
  free(text); /* json_dumps allocates with jansson's allocator: malloc */
  return out;
}

/* Write t's elements in row-major order: contiguous tensors in one write,
 * others gathered element by element into a buffer first. 0 when written,
 * else the status (DISP_ERR_IO with errno set, or DISP_ERR_NO_MEMORY). */
static disp_status write_data(FILE *f, const disp_tensor *t) {
  size_t item = disp_tensor_itemsize(t), n = (size_t)disp_tensor_numel(t);
  if (n == 0) return DISP_OK;
  const char *src = disp_tensor_data_ptr(t);
  if (disp_tensor_is_contiguous(t)) return fwrite(src, item, n, f) == n ? DISP_OK : DISP_ERR_IO;
  char *buf = disp__malloc(n * item);
  if (!buf) return DISP_ERR_NO_MEMORY;
  int nd = disp_tensor_ndim(t);
  const int64_t *sz = disp_tensor_sizes(t), *st = disp_tensor_strides(t);
  int64_t idx[DISP_TENSOR_MAX_DIMS] = {0};
  for (size_t k = 0; k < n; k++) {
    int64_t at = 0;
    for (int d = 0; d < nd; d++) at += idx[d] * st[d];
    memcpy(buf + k * item, src + at * (int64_t)item, item);
    for (int d = nd - 1; d >= 0 && ++idx[d] == sz[d]; d--) idx[d] = 0;
  }
  disp_status s = fwrite(buf, item, n, f) == n ? DISP_OK : DISP_ERR_IO;
  disp__free(buf);
  return s;
}

/* The whole file to `f`. DISP_ERR_IO with errno when a write fails. */
static disp_status write_set(const char *fn, const disp_safetensors *set, FILE *f, const char *where) {
  disp_status s = check_tensors(fn, set);
  if (s != DISP_OK) return s;
  st_item **order = disp__malloc((set->count + 1) * sizeof *order);
  size_t hlen = 0;
  char *hdr = NULL;
  if (order) {
    for (size_t i = 0; i < set->count; i++) order[i] = &set->items[i];
    qsort(order, set->count, sizeof *order, item_order);
    hdr = header_text(set, order, &hlen);
  }
  if (!hdr) {
    disp__free(order);
    return disp__fail(DISP_ERR_NO_MEMORY, "%s: out of memory", fn);
  }
  uint8_t le[8];
  for (int i = 0; i < 8; i++) le[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
  errno = 0;
  s = fwrite(le, 1, 8, f) == 8 && fwrite(hdr, 1, hlen, f) == hlen ? DISP_OK : DISP_ERR_IO;
  for (size_t i = 0; s == DISP_OK && i < set->count; i++) s = write_data(f, order[i]->tensor);
  if (s == DISP_OK && fflush(f) != 0) s = DISP_ERR_IO;
  if (s == DISP_ERR_IO && errno == ENOMEM) s = DISP_ERR_NO_MEMORY; /* a memory stream that could not grow */
  disp__free(hdr);
  disp__free(order);
  if (s == DISP_ERR_NO_MEMORY) return disp__fail(s, "%s: out of memory", fn);
  if (s != DISP_OK) return disp__fail(s, "%s: cannot write %s: %s", fn, where, strerror(errno ? errno : EIO));
  return DISP_OK;
}

disp_status disp_safetensors_serialize(const disp_safetensors *set, void **out, size_t *len) {
  if (!set || !out || !len)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_safetensors_serialize: %s is NULL", !set ? "set" : !out ? "out" : "len");
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  if (!f) return disp__fail(DISP_ERR_NO_MEMORY, "disp_safetensors_serialize: out of memory");
  disp_status s = write_set("disp_safetensors_serialize", set, f, "to memory");
  if (fclose(f) != 0 && s == DISP_OK) s = disp__fail(DISP_ERR_NO_MEMORY, "disp_safetensors_serialize: out of memory");
  if (s != DISP_OK) {
    free(buf);
    return s;
  }
  *out = buf;
  *len = n;
  return DISP_OK;
}

disp_status disp_safetensors_save(const disp_safetensors *set, const char *path) {
  if (!set || !path) return disp__fail(DISP_ERR_INVALID_ARG, "disp_safetensors_save: %s is NULL", !set ? "set" : "path");
  disp_status s = check_tensors("disp_safetensors_save", set);
  if (s != DISP_OK) return s;
  size_t n = strlen(path);
  char *tmp = disp__malloc(n + 16);
  if (!tmp) return disp__fail(DISP_ERR_NO_MEMORY, "disp_safetensors_save: out of memory");
  snprintf(tmp, n + 16, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd >= 0) (void)fchmod(fd, 0644); /* mkstemp's 0600 is for secrets, not checkpoints */
  FILE *f = fd < 0 ? NULL : fdopen(fd, "wb");
  if (!f) {
    s = disp__fail(DISP_ERR_IO, "disp_safetensors_save: cannot create %s: %s", tmp, strerror(errno));
    if (fd >= 0) close(fd), unlink(tmp);
    disp__free(tmp);
    return s;
  }
  s = write_set("disp_safetensors_save", set, f, tmp);
  if (fclose(f) != 0 && s == DISP_OK) s = disp__fail(DISP_ERR_IO, "disp_safetensors_save: cannot write %s: %s", tmp, strerror(errno));
  if (s == DISP_OK && rename(tmp, path) != 0)
    s = disp__fail(DISP_ERR_IO, "disp_safetensors_save: cannot rename %s to %s: %s", tmp, path, strerror(errno));
  if (s != DISP_OK) unlink(tmp);
  disp__free(tmp);
  return s;
}
