/*
 * safetensors_header.c - parsing and validating a safetensors header with
 * jansson, rule by rule as the reference reader (the Rust crate
 * `safetensors`, SafeTensors::read_metadata and Metadata::validate) checks
 * them, in its order: Note [What the reader accepts] in
 * disp/safetensors.h.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"
#include "error_internal.h"
#include "interop/safetensors_internal.h"

disp_status disp__st_bad(const char *label, const char *tensor, const char *fmt, ...) {
  char cause[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cause, sizeof cause, fmt, ap);
  va_end(ap);
  /* a name may be megabytes long: the message shows its first 200 bytes */
  if (tensor)
    return disp__fail(DISP_ERR_IO, "disp_safetensors_load: %s: tensor '%.200s%s': %s", label, tensor,
                      strlen(tensor) > 200 ? "..." : "", cause);
  return disp__fail(DISP_ERR_IO, "disp_safetensors_load: %s: %s", label, cause);
}

/* Length of the longest valid UTF-8 prefix (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF), as Rust's str::from_utf8. */
size_t disp__st_utf8_prefix(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    size_t k = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    if (k == 0 || i + k > n) return i;
    uint8_t lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
    if (k > 1 && (s[i + 1] < lo || s[i + 1] > hi)) return i;
    for (size_t j = 2; j < k; j++)
      if ((s[i + j] & 0xC0) != 0x80) return i;
    i += k;
  }
  return n;
}

static const char *json_kind(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: return "an integer";
  case JSON_REAL: return "a real number";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  default: return "null";
  }
}

/* A non-negative JSON integer (serde's usize): 1 and *out, else 0. */
static int get_index(const json_t *v, uint64_t *out) {
  if (!json_is_integer(v) || json_integer_value(v) < 0) return 0;
  *out = (uint64_t)json_integer_value(v);
  return 1;
}

static disp_status parse_dtype(const char *label, st_entry *e, const json_t *v) {
  if (!v) return disp__st_bad(label, e->name, "missing \"dtype\"");
  if (!json_is_string(v)) return disp__st_bad(label, e->name, "\"dtype\" is %s, not a string", json_kind(v));
  int r = disp__st_dtype_parse(json_string_value(v), &e->dtype);
  if (r > 0) return DISP_OK;
  if (r == 0)
    return disp__st_bad(label, e->name, "dtype \"%s\" is valid safetensors but libdispatch has no such dtype",
                        json_string_value(v));
  return disp__st_bad(label, e->name, "unknown dtype \"%s\"", json_string_value(v));
}

static disp_status parse_shape(const char *label, st_entry *e, const json_t *v) {
  if (!v) return disp__st_bad(label, e->name, "missing \"shape\"");
  if (!json_is_array(v)) return disp__st_bad(label, e->name, "\"shape\" is %s, not an array", json_kind(v));
  size_t n = json_array_size(v);
  if (n > DISP_TENSOR_MAX_DIMS)
    return disp__st_bad(label, e->name, "shape has %zu dimensions, more than libdispatch's %d", n,
                        DISP_TENSOR_MAX_DIMS);
  for (size_t i = 0; i < n; i++) {
    uint64_t d;
    if (!get_index(json_array_get(v, i), &d))
      return disp__st_bad(label, e->name, "shape[%zu] is %s, not a non-negative integer", i,
                          json_is_integer(json_array_get(v, i)) ? "negative" : json_kind(json_array_get(v, i)));
    e->sizes[i] = (int64_t)d;
  }
  e->ndim = (int)n;
  return DISP_OK;
}

static disp_status parse_offsets(const char *label, st_entry *e, const json_t *v) {
  if (!v) return disp__st_bad(label, e->name, "missing \"data_offsets\"");
  if (!json_is_array(v) || json_array_size(v) != 2 || !get_index(json_array_get(v, 0), &e->begin) ||
      !get_index(json_array_get(v, 1), &e->end))
    return disp__st_bad(label, e->name, "\"data_offsets\" is not an array of two non-negative integers");
  return DISP_OK;
}

/* One tensor entry: an object with dtype, shape and data_offsets (other
 * fields ignored, as serde does), or serde's sequence form of the same
 * struct, [dtype, shape, data_offsets]. */
static disp_status parse_entry(const char *label, const char *name, const json_t *v, st_entry *e) {
  e->name = name;
  const json_t *f[3];
  if (json_is_object(v)) {
    f[0] = json_object_get(v, "dtype");
    f[1] = json_object_get(v, "shape");
    f[2] = json_object_get(v, "data_offsets");
  } else if (json_is_array(v) && json_array_size(v) == 3) {
    for (size_t i = 0; i < 3; i++) f[i] = json_array_get(v, i);
  } else {
    return disp__st_bad(label, name, "its entry is %s, not an object with dtype, shape and data_offsets",
                        json_kind(v));
  }
  disp_status s = parse_dtype(label, e, f[0]);
  if (s == DISP_OK) s = parse_shape(label, e, f[1]);
  if (s == DISP_OK) s = parse_offsets(label, e, f[2]);
  return s;
}

/* "__metadata__": null, or an object of strings (serde's
 * Option<HashMap<String, String>>). */
static disp_status parse_metadata(const char *label, const json_t *v, st_header *h) {
  if (json_is_null(v)) return DISP_OK;
  if (!json_is_object(v)) return disp__st_bad(label, NULL, "\"__metadata__\" is %s, not an object of strings", json_kind(v));
  h->meta = disp__malloc((json_object_size(v) + 1) * 2 * sizeof *h->meta);
  if (!h->meta) return disp__fail(DISP_ERR_NO_MEMORY, "disp_safetensors_load: out of memory");
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)v, key, val) {
    if (!json_is_string(val))
      return disp__st_bad(label, NULL, "\"__metadata__\" value of \"%.200s\" is %s, not a string", key, json_kind(val));
    h->meta[2 * h->meta_count] = key;
    h->meta[2 * h->meta_count + 1] = json_string_value(val);
    h->meta_count++;
  }
  return DISP_OK;
}

static int entry_order(const void *pa, const void *pb) {
  const st_entry *a = pa, *b = pb;
  if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
  if (a->end != b->end) return a->end < b->end ? -1 : 1;
  return strcmp(a->name, b->name);
}

/* Metadata::validate: in offset order, each tensor starts where the one
 * before ended, and holds exactly shape x element size bytes. Returns the
 * last end through *total. */
static disp_status validate(const char *label, const st_header *h, uint64_t *total) {
  uint64_t start = 0;
  for (size_t i = 0; i < h->count; i++) {
    const st_entry *e = &h->entries[i];
    if (e->end < e->begin)
      return disp__st_bad(label, e->name, "data_offsets [%llu, %llu] end before they begin", (unsigned long long)e->begin,
                          (unsigned long long)e->end);
    if (e->begin != start)
      return disp__st_bad(label, e->name, "data_offsets [%llu, %llu] %s the previous tensor's data, which ends at %llu%s",
                          (unsigned long long)e->begin, (unsigned long long)e->end,
                          e->begin > start ? "leave a gap after" : "overlap", (unsigned long long)start,
                          i ? "" : " (the first tensor must begin at 0)");
    start = e->end;
    uint64_t n = 1;
    for (int d = 0; d < e->ndim; d++)
      if (__builtin_mul_overflow(n, (uint64_t)e->sizes[d], &n))
        return disp__st_bad(label, e->name, "the shape's element count overflows 64 bits");
    uint64_t bytes;
    if (__builtin_mul_overflow(n, (uint64_t)disp_dtype_itemsize(e->dtype), &bytes))
      return disp__st_bad(label, e->name, "the shape's size in bytes overflows 64 bits");
    if (e->end - e->begin != bytes)
      return disp__st_bad(label, e->name, "data_offsets [%llu, %llu] hold %llu bytes, but %llu elements of %s need %llu",
                          (unsigned long long)e->begin, (unsigned long long)e->end,
                          (unsigned long long)(e->end - e->begin), (unsigned long long)n,
                          disp_safetensors_dtype_name(e->dtype), (unsigned long long)bytes);
    if (n > INT64_MAX) return disp__st_bad(label, e->name, "more than INT64_MAX elements");
  }
  *total = start;
  return DISP_OK;
}

/* The 8-byte length, then the header's bytes: UTF-8, then JSON. */
static disp_status load_json(const uint8_t *buf, size_t len, const char *label, st_header *h) {
  if (len < 8) return disp__st_bad(label, NULL, "the file has %zu bytes, fewer than the 8 of the header length", len);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = n << 8 | buf[i];
  if (n > DISP_SAFETENSORS_MAX_HEADER)
    return disp__st_bad(label, NULL, "header length %llu is larger than the limit of %u bytes", (unsigned long long)n,
                        DISP_SAFETENSORS_MAX_HEADER);
  if (n > len - 8)
    return disp__st_bad(label, NULL, "header length %llu runs past the end of the file (%zu bytes)",
                        (unsigned long long)n, len);
  size_t ok = disp__st_utf8_prefix(buf + 8, (size_t)n);
  if (ok != n) return disp__st_bad(label, NULL, "the header is not valid UTF-8 (byte %zu of the header)", ok);
  json_error_t err;
  json_t *root = json_loadb((const char *)buf + 8, (size_t)n, JSON_REJECT_DUPLICATES, &err);
  if (!root) {
    if (json_error_code(&err) == json_error_out_of_memory)
      return disp__fail(DISP_ERR_NO_MEMORY, "disp_safetensors_load: %s: out of memory parsing the header", label);
    return disp__st_bad(label, NULL, "the header is not valid JSON%s: %s (line %d, column %d)",
                        json_error_code(&err) == json_error_duplicate_key ? " (a duplicate name)" : "", err.text,
                        err.line, err.column);
  }
  h->root = root;
  h->data_start = 8 + n;
  if (!json_is_object(root)) return disp__st_bad(label, NULL, "the header is %s, not a JSON object", json_kind(root));
  return DISP_OK;
}

static disp_status parse_entries(const char *label, st_header *h) {
  json_t *root = h->root;
  h->entries = disp__malloc((json_object_size(root) + 1) * sizeof *h->entries);
  if (!h->entries) return disp__fail(DISP_ERR_NO_MEMORY, "disp_safetensors_load: out of memory");
  const char *key;
  json_t *val;
  json_object_foreach(root, key, val) {
    disp_status s = strcmp(key, "__metadata__") == 0 ? parse_metadata(label, val, h)
                                                      : parse_entry(label, key, val, &h->entries[h->count++]);
    if (s != DISP_OK) return s;
  }
  qsort(h->entries, h->count, sizeof *h->entries, entry_order);
  return DISP_OK;
}

disp_status disp__st_parse(const uint8_t *buf, size_t len, const char *label, st_header *h) {
  *h = (st_header){0};
  disp_status s = load_json(buf, len, label, h);
  if (s == DISP_OK) s = parse_entries(label, h);
  uint64_t total = 0;
  if (s == DISP_OK) s = validate(label, h, &total);
  if (s == DISP_OK && total != len - h->data_start) {
    uint64_t have = len - h->data_start;
    if (total < have)
      s = disp__st_bad(label, NULL, "%llu trailing bytes after the last tensor's data (the data buffer has %llu, the tensors cover %llu)",
                       (unsigned long long)(have - total), (unsigned long long)have, (unsigned long long)total);
    else
      s = disp__st_bad(label, h->entries[h->count - 1].name, "data_offsets end at %llu, past the end of the data buffer (%llu bytes)",
                       (unsigned long long)total, (unsigned long long)have);
  }
  if (s != DISP_OK) disp__st_header_free(h);
  return s;
}

void disp__st_header_free(st_header *h) {
  json_decref(h->root);
  disp__free(h->entries);
  disp__free(h->meta);
  *h = (st_header){0};
}
