/*
 * safetensors_internal.h - the set's body and the pieces the reader and
 * writer share (src/interop/, DESIGN.md: interop sits on top of the
 * tensor module and uses nothing of kernels or autograd).
 */
#ifndef DISP_SAFETENSORS_INTERNAL_H
#define DISP_SAFETENSORS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "disp/safetensors.h"

typedef struct st_item {
  char *name;
  disp_tensor *tensor; /* owned reference */
} st_item;

typedef struct st_meta {
  char *key;
  char *value;
} st_meta;

struct disp_safetensors {
  st_item *items;
  size_t count, cap;
  st_meta *meta;
  size_t meta_count, meta_cap;
  disp_storage *mapping; /* the loaded file, shared by borrowing tensors; NULL if none */
};

/* One tensor entry of a parsed header (borrowing its name from the JSON). */
typedef struct st_entry {
  const char *name;
  disp_dtype dtype;
  int ndim;
  int64_t sizes[DISP_TENSOR_MAX_DIMS];
  uint64_t begin, end; /* data_offsets, relative to the data buffer */
} st_entry;

/* The safetensors dtype `name` as a libdispatch dtype: 1 and *out when it
 * has one, 0 when the format knows it but the library has no such dtype,
 * -1 when the format does not know it. */
int disp__st_dtype_parse(const char *name, disp_dtype *out);

/* Appending to a set; the set takes `t` (steals the reference) only on
 * success. With `check`, DISP_ERR_DUPLICATE when name is taken (the
 * reader passes 0: the JSON parser already refused duplicate names, and
 * checking again would cost a file of n tensors n^2/2 comparisons). */
disp_status disp__st_append_steal(disp_safetensors *set, const char *name, disp_tensor *t, int check);

/* Find the index of `name` in the set, -1 if absent. */
long disp__st_find(const disp_safetensors *set, const char *name);

/* A parsed and validated header (safetensors_header.c). */
typedef struct st_header {
  void *root;          /* the json_t, owning every borrowed string below */
  st_entry *entries;   /* sorted by data_offsets: file order */
  size_t count;
  const char **meta;   /* key, value, key, value... in the file's order */
  size_t meta_count;   /* pairs */
  uint64_t data_start; /* 8 + header length: where the data buffer begins */
} st_header;

/* Parse and validate the `len` bytes of a whole file (Note [What the
 * reader accepts] in disp/safetensors.h). Messages name `label`. On
 * failure *h is left empty (nothing to free). */
disp_status disp__st_parse(const uint8_t *buf, size_t len, const char *label, st_header *h);
void disp__st_header_free(st_header *h);

/* Length of the longest valid UTF-8 prefix of s[0..n) (RFC 3629). */
size_t disp__st_utf8_prefix(const uint8_t *s, size_t n);

/* "disp_safetensors_load: LABEL: [tensor 'NAME': ]CAUSE", DISP_ERR_IO. */
disp_status disp__st_bad(const char *label, const char *tensor, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* DISP_SAFETENSORS_INTERNAL_H */
