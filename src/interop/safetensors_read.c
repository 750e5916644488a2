/*
 * safetensors_read.c - loading a safetensors file into a set: map the
 * file (or copy a caller's buffer), validate the header
 * (safetensors_header.c), then give each tensor a view of the mapping when
 * its data are aligned for its dtype, or a copy otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc_internal.h"
#include "disp/guard.h"
#include "error_internal.h"
#include "interop/safetensors_internal.h"

static const disp_device cpu = {DISP_BACKEND_CPU, -1};

static void unmap(void *data, void *ctx) { munmap(data, (size_t)(uintptr_t)ctx); }
static void free_copy(void *data, void *ctx) {
  (void)ctx;
  disp__free(data);
}

/* One tensor: a view at its offset in the mapping when the address is a
 * multiple of the element size, else (and for empty tensors, which need no
 * bytes) a fresh CPU tensor with the bytes copied in. */
static disp_status make_tensor(disp_storage *map, const st_header *h, const st_entry *e, disp_tensor **out) {
  size_t item = disp_dtype_itemsize(e->dtype);
  uint64_t at = h->data_start + e->begin; /* from the start of the mapping */
  const uint8_t *base = disp_storage_data(map);
  disp_keyset keys = disp_tensor_default_keyset(cpu, e->dtype, DISP_LAYOUT_STRIDED, disp_inference_mode_enabled());
  if (e->end > e->begin && ((uintptr_t)(base + at)) % item == 0)
    return disp_tensor_new_with_storage(map, (int64_t)(at / item), e->sizes, NULL, e->ndim, e->dtype, keys, out);
  disp_status s = disp_tensor_empty(e->sizes, e->ndim, e->dtype, cpu, out);
  if (s == DISP_OK && e->end > e->begin) memcpy(disp_tensor_data_ptr(*out), base + at, e->end - e->begin);
  return s;
}

/* The set of a parsed header over `map` (borrowed; the set and borrowing
 * tensors take references). */
static disp_status build_set(disp_storage *map, const st_header *h, const char *label, disp_safetensors **out) {
  disp_safetensors *set = NULL;
  disp_status s = disp_safetensors_new(&set);
  for (size_t i = 0; s == DISP_OK && i < h->meta_count; i++)
    s = disp_safetensors_set_metadata(set, h->meta[2 * i], h->meta[2 * i + 1]);
  for (size_t i = 0; s == DISP_OK && i < h->count; i++) {
    disp_tensor *t = NULL;
    s = make_tensor(map, h, &h->entries[i], &t);
    if (s == DISP_ERR_INVALID_ARG) /* valid safetensors, but no libdispatch tensor: say which and why */
      s = disp__st_bad(label, h->entries[i].name, "libdispatch cannot make this tensor: %s", disp_last_error());
    if (s == DISP_OK) s = disp__st_append_steal(set, h->entries[i].name, t, 0);
    if (s != DISP_OK) disp_tensor_release(t);
  }
  if (s != DISP_OK) {
    disp_safetensors_free(set);
    return s;
  }
  set->mapping = disp_storage_retain(map);
  *out = set;
  return DISP_OK;
}

/* Parse the bytes of `map` and build the set. Releases the caller's
 * reference to map either way. */
static disp_status load_storage(disp_storage *map, const char *label, disp_safetensors **out) {
  st_header h;
  disp_status s = disp__st_parse(disp_storage_data(map), disp_storage_nbytes(map), label, &h);
  if (s == DISP_OK) {
    s = build_set(map, &h, label, out);
    disp__st_header_free(&h);
  }
  disp_storage_release(map);
  return s;
}

/* Wrap `len` bytes at `data` in a storage that calls release(data, ctx). */
static disp_status wrap(void *data, size_t len, void (*release)(void *, void *), void *ctx, disp_storage **st) {
  disp_status s = disp_storage_new_with_data(data, len, cpu, release, ctx, st);
  if (s != DISP_OK) release(data, ctx);
  return s;
}

/* mmap the whole file: private and writable, so a loaded tensor can be
 * written without touching the file (pages copy on write). */
static disp_status map_file(const char *path, disp_storage **st) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return disp__fail(DISP_ERR_IO, "disp_safetensors_load: cannot open %s: %s", path, strerror(errno));
  struct stat sb;
  const char *why = fstat(fd, &sb) != 0 ? strerror(errno) : !S_ISREG(sb.st_mode) ? "not a regular file" : NULL;
  if (why) {
    close(fd);
    return disp__fail(DISP_ERR_IO, "disp_safetensors_load: %s: %s", path, why);
  }
  size_t len = (size_t)sb.st_size;
  if (len < 8) {
    close(fd);
    return disp__st_bad(path, NULL, "the file has %zu bytes, fewer than the 8 of the header length", len);
  }
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) return disp__fail(DISP_ERR_IO, "disp_safetensors_load: cannot map %s: %s", path, strerror(e));
  return wrap(p, len, unmap, (void *)(uintptr_t)len, st);
}

disp_status disp_safetensors_load(const char *path, disp_safetensors **out) {
  if (!path || !out)
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_safetensors_load: %s is NULL", !path ? "path" : "out");
  disp_storage *map = NULL;
  disp_status s = map_file(path, &map);
  return s == DISP_OK ? load_storage(map, path, out) : s;
}

disp_status disp_safetensors_load_buffer(const void *data, size_t len, const char *label, disp_safetensors **out) {
  if (!out || (!data && len))
    return disp__fail(DISP_ERR_INVALID_ARG, "disp_safetensors_load_buffer: %s is NULL", !out ? "out" : "data");
  if (!label) label = "<buffer>";
  if (len < 8) return disp__st_bad(label, NULL, "the file has %zu bytes, fewer than the 8 of the header length", len);
  void *copy = disp__malloc(len);
  if (!copy) return disp__fail(DISP_ERR_NO_MEMORY, "disp_safetensors_load_buffer: out of memory (%zu bytes)", len);
  memcpy(copy, data, len);
  disp_storage *st = NULL;
  disp_status s = wrap(copy, len, free_copy, NULL, &st);
  return s == DISP_OK ? load_storage(st, label, out) : s;
}
