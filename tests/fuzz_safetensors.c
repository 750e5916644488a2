/*
 * fuzz_safetensors.c - libFuzzer target for the safetensors reader.
 *
 * Any input must load or fail cleanly with DISP_ERR_IO (or
 * DISP_ERR_NO_MEMORY) and a message; the sanitizers catch crashes and
 * leaks. When it loads, for every tensor (in file order, the header's
 * entries sorted by data_offsets): the name and dtype are the entry's, its
 * bytes lie inside the input's data buffer and equal the input's bytes at
 * its data_offsets, and a tensor borrowing the mapping points inside it;
 * then the set, written again and read back, gives the same tensors.
 * Otherwise the target aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disp.h"
#include "interop/safetensors_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what, const char *name) {
  fprintf(stderr, "fuzz_safetensors: %s (tensor '%s')\n", what, name ? name : "");
  abort();
}

static size_t nbytes(const disp_tensor *t) { return (size_t)disp_tensor_numel(t) * disp_tensor_itemsize(t); }

/* The tensor agrees with its header entry and with the input's bytes. */
static void check_tensor(const disp_safetensors *set, size_t i, const st_header *h, const uint8_t *data, size_t size) {
  const st_entry *e = &h->entries[i];
  const disp_tensor *t = disp_safetensors_tensor(set, i);
  if (strcmp(disp_safetensors_name(set, i), e->name) != 0) broken("name differs from the header", e->name);
  if (disp_tensor_dtype(t) != e->dtype || disp_tensor_ndim(t) != e->ndim) broken("dtype or rank differs", e->name);
  if (!disp_tensor_is_contiguous(t) || disp_tensor_device(t).type != DISP_BACKEND_CPU) broken("not a contiguous CPU tensor", e->name);
  if (e->end < e->begin || e->end > size - h->data_start || nbytes(t) != e->end - e->begin)
    broken("bytes outside the data buffer", e->name);
  if (nbytes(t) && memcmp(disp_tensor_data_ptr(t), data + h->data_start + e->begin, nbytes(t)) != 0)
    broken("bytes differ from the file's", e->name);
  disp_storage *st = disp_tensor_storage(t);
  if (st == set->mapping) {
    const uint8_t *p = disp_tensor_data_ptr(t), *lo = disp_storage_data(st);
    if (p < lo + h->data_start || p + nbytes(t) > lo + disp_storage_nbytes(st)) broken("view outside the mapping", e->name);
    if ((uintptr_t)p % disp_tensor_itemsize(t)) broken("misaligned view", e->name);
  }
}

/* Written again and read back: the same names and bytes. */
static void check_roundtrip(const disp_safetensors *set) {
  void *buf = NULL;
  size_t len = 0;
  disp_safetensors *again = NULL;
  if (disp_safetensors_serialize(set, &buf, &len) != DISP_OK) broken("cannot write a loaded set again", disp_last_error());
  if (disp_safetensors_load_buffer(buf, len, "rewritten", &again) != DISP_OK) broken("cannot read a rewritten set", disp_last_error());
  if (disp_safetensors_count(again) != disp_safetensors_count(set)) broken("tensor count changed", NULL);
  for (size_t i = 0; i < disp_safetensors_count(set); i++) {
    const disp_tensor *a = disp_safetensors_tensor(set, i);
    const disp_tensor *b = disp_safetensors_get(again, disp_safetensors_name(set, i));
    if (!b || disp_tensor_dtype(a) != disp_tensor_dtype(b) || nbytes(a) != nbytes(b) ||
        (nbytes(a) && memcmp(disp_tensor_data_ptr(a), disp_tensor_data_ptr(b), nbytes(a)) != 0))
      broken("round trip changed a tensor", disp_safetensors_name(set, i));
  }
  if (disp_safetensors_metadata_count(again) != disp_safetensors_metadata_count(set)) broken("metadata changed", NULL);
  disp_safetensors_free(again);
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  disp_safetensors *set = NULL;
  disp_status s = disp_safetensors_load_buffer(data, size, "fuzz", &set);
  if (s != DISP_OK) {
    if ((s != DISP_ERR_IO && s != DISP_ERR_NO_MEMORY) || !*disp_last_error()) broken("bad failure", disp_last_error());
    return 0;
  }
  st_header h;
  if (disp__st_parse(data, size, "fuzz", &h) != DISP_OK) broken("loaded, but the header does not parse", NULL);
  if (h.count != disp_safetensors_count(set)) broken("tensor count differs from the header", NULL);
  for (size_t i = 0; i < h.count; i++) check_tensor(set, i, &h, data, size);
  disp__st_header_free(&h);
  check_roundtrip(set);
  disp_safetensors_free(set);
  return 0;
}
