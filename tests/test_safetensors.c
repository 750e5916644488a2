/*
 * test_safetensors.c - checkpoints in safetensors (disp/safetensors.h):
 * round trips of every dtype, the reference writer's exact bytes, the
 * mmap and copy paths, one crafted file per class of malformed file the
 * reader rejects (Note [What the reader accepts]) and the files it must
 * accept, save errors, and allocation failures (fault-injection builds).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disp.h"
#include "test.h"
#ifdef DISP_FAULT_INJECTION
#include "alloc_internal.h"
#endif

static const disp_device cpu = {DISP_BACKEND_CPU, -1};

/* A CPU tensor of `dt` with `n` elements' bytes from a fixed pattern
 * (bool: 0/1). */
static disp_tensor *patterned(disp_dtype dt, const int64_t *sizes, int ndim, unsigned seed) {
  disp_tensor *t = NULL;
  if (disp_tensor_empty(sizes, ndim, dt, cpu, &t) != DISP_OK) return NULL;
  uint8_t *p = disp_tensor_data_ptr(t);
  size_t n = (size_t)disp_tensor_numel(t) * disp_tensor_itemsize(t);
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(dt == DISP_DTYPE_BOOL ? (i + seed) % 2 : (i * 37 + seed * 11 + 5));
  return t;
}

static const char *tmp_path(const char *name) {
  static char buf[4][256];
  static int k;
  char *b = buf[k++ % 4];
  snprintf(b, sizeof buf[0], "%s/disp_st_%d_%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(), name);
  return b;
}

static int same_bytes(const disp_tensor *a, const disp_tensor *b) {
  size_t n = (size_t)disp_tensor_numel(a) * disp_tensor_itemsize(a);
  if (disp_tensor_dtype(a) != disp_tensor_dtype(b) || disp_tensor_ndim(a) != disp_tensor_ndim(b)) return 0;
  for (int d = 0; d < disp_tensor_ndim(a); d++)
    if (disp_tensor_sizes(a)[d] != disp_tensor_sizes(b)[d]) return 0;
  return n == 0 || memcmp(disp_tensor_data_ptr(a), disp_tensor_data_ptr(b), n) == 0;
}

/* ---- round trips -------------------------------------------------------- */

TEST(roundtrip_every_dtype) {
  disp_safetensors *set = NULL, *back = NULL;
  ASSERT_OK(disp_safetensors_new(&set));
  int64_t sizes[] = {2, 3, 5};
  int n = 0;
  for (int d = 0; d < DISP_DTYPE_COUNT; d++) {
    if (!disp_safetensors_dtype_name((disp_dtype)d)) continue;
    disp_tensor *t = patterned((disp_dtype)d, sizes, 3, (unsigned)d);
    ASSERT_TRUE(t);
    ASSERT_OK(disp_safetensors_add(set, disp_dtype_name((disp_dtype)d), t));
    disp_tensor_release(t); /* the set holds it */
    n++;
  }
  ASSERT_EQ_INT(n, 10);
  const char *path = tmp_path("every.safetensors");
  ASSERT_OK(disp_safetensors_save(set, path));
  ASSERT_OK(disp_safetensors_load(path, &back));
  ASSERT_EQ_INT(disp_safetensors_count(back), 10);
  for (size_t i = 0; i < disp_safetensors_count(set); i++) {
    disp_tensor *got = disp_safetensors_get(back, disp_safetensors_name(set, i));
    ASSERT_TRUE(got);
    ASSERT_TRUE(same_bytes(disp_safetensors_tensor(set, i), got));
    ASSERT_EQ_INT(disp_tensor_device(got).type, DISP_BACKEND_CPU);
    ASSERT_FALSE(disp_tensor_requires_grad(got));
    /* written aligned: every tensor borrows the mapping */
    ASSERT_TRUE((uintptr_t)disp_tensor_data_ptr(got) % disp_tensor_itemsize(got) == 0);
    ASSERT_TRUE(disp_tensor_storage(got) == disp_tensor_storage(disp_safetensors_tensor(back, 0)));
  }
  /* file order: largest element first (the reference's dtype order), then name */
  ASSERT_EQ_STR(disp_safetensors_name(back, 0), "int64");
  ASSERT_EQ_STR(disp_safetensors_name(back, 9), "bool");
  ASSERT_TRUE(disp_safetensors_get(back, "nope") == NULL);
  unlink(path);
  disp_safetensors_free(set);
  disp_safetensors_free(back);
  return 0;
}

TEST(roundtrip_non_contiguous_zero_dim_and_empty) {
  disp_safetensors *set = NULL, *back = NULL;
  ASSERT_OK(disp_safetensors_new(&set));
  int64_t base_sizes[] = {3, 4};
  disp_tensor *base = patterned(DISP_DTYPE_FLOAT64, base_sizes, 2, 1), *tr = NULL, *scalar = NULL, *e1 = NULL,
              *e2 = NULL;
  ASSERT_OK(disp_tensor_new_view(base, (int64_t[]){4, 3}, (int64_t[]){1, 4}, 2, 0, &tr)); /* transpose */
  ASSERT_FALSE(disp_tensor_is_contiguous(tr));
  scalar = patterned(DISP_DTYPE_INT32, NULL, 0, 7);
  e1 = patterned(DISP_DTYPE_FLOAT32, (int64_t[]){0, 3}, 2, 0);
  e2 = patterned(DISP_DTYPE_BFLOAT16, (int64_t[]){2, 0}, 2, 0);
  ASSERT_OK(disp_safetensors_add(set, "t", tr));
  ASSERT_OK(disp_safetensors_add(set, "scalar", scalar));
  ASSERT_OK(disp_safetensors_add(set, "empty_a", e1));
  ASSERT_OK(disp_safetensors_add(set, "empty_b", e2));
  const char *path = tmp_path("nc.safetensors");
  ASSERT_OK(disp_safetensors_save(set, path));
  ASSERT_OK(disp_safetensors_load(path, &back));
  disp_tensor *t = disp_safetensors_get(back, "t");
  ASSERT_EQ_INT(disp_tensor_ndim(t), 2);
  ASSERT_EQ_INT(disp_tensor_sizes(t)[0], 4);
  const double *src = disp_tensor_data_ptr(base), *got = disp_tensor_data_ptr(t);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++) ASSERT_TRUE(memcmp(&got[i * 3 + j], &src[j * 4 + i], 8) == 0);
  ASSERT_TRUE(same_bytes(scalar, disp_safetensors_get(back, "scalar")));
  ASSERT_EQ_INT(disp_tensor_ndim(disp_safetensors_get(back, "scalar")), 0);
  ASSERT_TRUE(same_bytes(e1, disp_safetensors_get(back, "empty_a")));
  ASSERT_TRUE(same_bytes(e2, disp_safetensors_get(back, "empty_b")));
  unlink(path);
  disp_tensor_release(base);
  disp_tensor_release(tr);
  disp_tensor_release(scalar);
  disp_tensor_release(e1);
  disp_tensor_release(e2);
  disp_safetensors_free(set);
  disp_safetensors_free(back);
  return 0;
}

TEST(metadata_roundtrip) {
  disp_safetensors *set = NULL, *back = NULL;
  ASSERT_OK(disp_safetensors_new(&set));
  ASSERT_OK(disp_safetensors_set_metadata(set, "step", "999"));
  ASSERT_OK(disp_safetensors_set_metadata(set, "format", "pt"));
  ASSERT_OK(disp_safetensors_set_metadata(set, "step", "1000")); /* replaces */
  ASSERT_OK(disp_safetensors_set_metadata(set, "note", "quote \" and \xc3\xa9 and\nnewline"));
  void *buf = NULL;
  size_t len = 0;
  ASSERT_OK(disp_safetensors_serialize(set, &buf, &len));
  ASSERT_OK(disp_safetensors_load_buffer(buf, len, NULL, &back));
  ASSERT_EQ_INT(disp_safetensors_count(back), 0);
  ASSERT_EQ_INT(disp_safetensors_metadata_count(back), 3);
  ASSERT_EQ_STR(disp_safetensors_metadata_key(back, 0), "step");
  ASSERT_EQ_STR(disp_safetensors_metadata_value(back, 0), "1000");
  ASSERT_EQ_STR(disp_safetensors_metadata_get(back, "format"), "pt");
  ASSERT_EQ_STR(disp_safetensors_metadata_get(back, "note"), "quote \" and \xc3\xa9 and\nnewline");
  ASSERT_TRUE(disp_safetensors_metadata_get(back, "absent") == NULL);
  ASSERT_TRUE(disp_safetensors_metadata_key(back, 3) == NULL);
  free(buf);
  disp_safetensors_free(set);
  disp_safetensors_free(back);
  return 0;
}

/* The reference crate's own test vectors (tensor.rs test_serialization,
 * test_empty): the same bytes. */
TEST(reference_writer_bytes) {
  static const uint8_t want[] = {
      64, 0, 0, 0, 0, 0, 0, 0, '{', '"', 'a', 't', 't', 'n', '.', '0', '"', ':', '{', '"', 'd', 't', 'y', 'p', 'e', '"',
      ':', '"', 'F', '3', '2', '"', ',', '"', 's', 'h', 'a', 'p', 'e', '"', ':', '[', '1', ',', '2', ',', '3', ']', ',',
      '"', 'd', 'a', 't', 'a', '_', 'o', 'f', 'f', 's', 'e', 't', 's', '"', ':', '[', '0', ',', '2', '4', ']', '}', '}',
      0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64};
  disp_safetensors *set = NULL;
  ASSERT_OK(disp_safetensors_new(&set));
  disp_tensor *t = NULL;
  ASSERT_OK(disp_tensor_empty((int64_t[]){1, 2, 3}, 3, DISP_DTYPE_FLOAT32, cpu, &t));
  for (int i = 0; i < 6; i++) ((float *)disp_tensor_data_ptr(t))[i] = (float)i;
  ASSERT_OK(disp_safetensors_add(set, "attn.0", t));
  void *buf = NULL;
  size_t len = 0;
  ASSERT_OK(disp_safetensors_serialize(set, &buf, &len));
  ASSERT_EQ_INT(len, sizeof want);
  ASSERT_TRUE(memcmp(buf, want, len) == 0);
  free(buf);
  disp_tensor_release(t);
  disp_safetensors_free(set);

  static const uint8_t empty[] = {8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '};
  static const char meta[] = "{\"__metadata__\":{\"framework\":\"pt\"}}     ";
  ASSERT_OK(disp_safetensors_new(&set));
  ASSERT_OK(disp_safetensors_serialize(set, &buf, &len));
  ASSERT_EQ_INT(len, sizeof empty);
  ASSERT_TRUE(memcmp(buf, empty, len) == 0);
  free(buf);
  ASSERT_OK(disp_safetensors_set_metadata(set, "framework", "pt"));
  ASSERT_OK(disp_safetensors_serialize(set, &buf, &len));
  ASSERT_EQ_INT(len, 8 + 40);
  ASSERT_EQ_INT(((uint8_t *)buf)[0], 40);
  ASSERT_TRUE(memcmp((char *)buf + 8, meta, 40) == 0);
  free(buf);
  disp_safetensors_free(set);
  return 0;
}

/* ---- crafted files -------------------------------------------------------- */

/* The file: 8-byte length of `header`, header, then `dlen` data bytes. */
static uint8_t *craft(const char *header, size_t hlen, size_t dlen, size_t *len) {
  *len = 8 + hlen + dlen;
  uint8_t *b = calloc(1, *len);
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
  memcpy(b + 8, header, hlen);
  for (size_t i = 0; i < dlen; i++) b[8 + hlen + i] = (uint8_t)(i + 1);
  return b;
}

/* Load the crafted file; 0 when it was rejected with DISP_ERR_IO and a
 * message naming the buffer and containing `want` (and `tensor` when not
 * NULL), the set untouched. */
static int rejects(const char *header, size_t dlen, const char *tensor, const char *want) {
  size_t len;
  uint8_t *b = craft(header, strlen(header), dlen, &len);
  disp_safetensors *set = (disp_safetensors *)b; /* a sentinel: must stay */
  disp_status s = disp_safetensors_load_buffer(b, len, "crafted.safetensors", &set);
  free(b);
  ASSERT_TRUE(set == (disp_safetensors *)b);
  ASSERT_STATUS(s, DISP_ERR_IO);
  ASSERT_STARTS_WITH(disp_last_error(), "disp_safetensors_load: crafted.safetensors: ");
  if (tensor) {
    char t[128];
    snprintf(t, sizeof t, "tensor '%s': ", tensor);
    ASSERT_CONTAINS(disp_last_error(), t);
  }
  ASSERT_CONTAINS(disp_last_error(), want);
  return 0;
}

/* 0 when the crafted file loads, with `count` tensors. */
static int accepts(const char *header, size_t dlen, size_t count) {
  size_t len;
  uint8_t *b = craft(header, strlen(header), dlen, &len);
  disp_safetensors *set = NULL;
  disp_status s = disp_safetensors_load_buffer(b, len, "crafted", &set);
  free(b);
  ASSERT_OK(s);
  ASSERT_EQ_INT(disp_safetensors_count(set), count);
  disp_safetensors_free(set);
  return 0;
}

#define U8(off0, off1, n) "{\"dtype\":\"U8\",\"shape\":[" #n "],\"data_offsets\":[" #off0 "," #off1 "]}"

TEST(rejects_short_file) {
  disp_safetensors *set = NULL;
  ASSERT_STATUS(disp_safetensors_load_buffer("\x02\0\0\0\0", 5, "crafted.safetensors", &set), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), "crafted.safetensors: the file has 5 bytes, fewer than the 8");
  ASSERT_STATUS(disp_safetensors_load_buffer(NULL, 0, "crafted.safetensors", &set), DISP_ERR_IO);
  ASSERT_TRUE(set == NULL);
  return 0;
}

TEST(rejects_header_length) {
  uint8_t b[16] = {0};
  uint64_t n = 100000001;
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(n >> (8 * i));
  disp_safetensors *set = NULL;
  ASSERT_STATUS(disp_safetensors_load_buffer(b, sizeof b, "crafted", &set), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), "header length 100000001 is larger than the limit of 100000000 bytes");
  memset(b, 0xff, 8); /* 2^64 - 1: no overflow of 8 + n either */
  ASSERT_STATUS(disp_safetensors_load_buffer(b, sizeof b, "crafted", &set), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), "is larger than the limit");
  memset(b, 0, 8);
  b[0] = 9; /* 9 > the 8 bytes left */
  ASSERT_STATUS(disp_safetensors_load_buffer(b, sizeof b, "crafted", &set), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), "header length 9 runs past the end of the file (16 bytes)");
  ASSERT_TRUE(set == NULL);
  return 0;
}

TEST(rejects_bad_utf8_and_json) {
  ASSERT_EQ_INT(rejects("{\"a\xff\":" U8(0, 1, 1) "}", 1, NULL, "the header is not valid UTF-8 (byte 3"), 0);
  ASSERT_EQ_INT(rejects("{\"a\xc0\x80\":1}", 0, NULL, "not valid UTF-8"), 0);     /* overlong NUL */
  ASSERT_EQ_INT(rejects("{\"a\xed\xa0\x80\":1}", 0, NULL, "not valid UTF-8"), 0); /* a surrogate */
  ASSERT_EQ_INT(rejects("{\"a\":", 0, NULL, "the header is not valid JSON: "), 0);
  ASSERT_EQ_INT(rejects("", 0, NULL, "not valid JSON"), 0);
  ASSERT_EQ_INT(rejects("{}x", 0, NULL, "not valid JSON"), 0);
  /* NUL padding (the reference writer pads with spaces; NUL is not JSON whitespace) */
  size_t len;
  uint8_t *b = craft("{}\0\0\0\0\0\0", 8, 0, &len);
  disp_safetensors *set = NULL;
  ASSERT_STATUS(disp_safetensors_load_buffer(b, len, "crafted", &set), DISP_ERR_IO);
  free(b);
  ASSERT_CONTAINS(disp_last_error(), "not valid JSON");
  return 0;
}

TEST(rejects_non_object_header) {
  ASSERT_EQ_INT(rejects("[1,2]", 0, NULL, "the header is an array, not a JSON object"), 0);
  ASSERT_EQ_INT(rejects("\"x\"", 0, NULL, "not valid JSON"), 0);
  return 0;
}

TEST(rejects_bad_entries) {
  ASSERT_EQ_INT(rejects("{\"w\":5}", 0, "w", "its entry is an integer, not an object"), 0);
  ASSERT_EQ_INT(rejects("{\"w\":[\"U8\",[1]]}", 0, "w", "its entry is an array"), 0);
  ASSERT_EQ_INT(rejects("{\"w\":{\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "w", "missing \"dtype\""), 0);
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", 1, "w", "missing \"shape\""), 0);
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1, "w", "missing \"data_offsets\""), 0);
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "w", "\"dtype\" is an integer"), 0);
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"U8\",\"shape\":1,\"data_offsets\":[0,1]}}", 1, "w", "\"shape\" is an integer"), 0);
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", 1, "w", "two non-negative"), 0);
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[-1,1]}}", 1, "w", "two non-negative"), 0);
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1.0]}}", 1, "w", "two non-negative"), 0);
  return 0;
}

TEST(rejects_dtypes) {
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "w", "unknown dtype \"F33\""), 0);
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "w", "unknown dtype"), 0);
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"U16\",\"shape\":[1],\"data_offsets\":[0,2]}}", 2, "w",
                        "dtype \"U16\" is valid safetensors but libdispatch has no such dtype"), 0);
  return 0;
}

TEST(rejects_shapes) {
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0, "w", "shape[0] is negative"), 0);
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"U8\",\"shape\":[1,2.0],\"data_offsets\":[0,2]}}", 2, "w",
                        "shape[1] is a real number, not a non-negative integer"), 0);
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"U8\",\"shape\":[\"2\"],\"data_offsets\":[0,2]}}", 2, "w", "shape[0] is a string"), 0);
  /* left to right, as the reference: 2^32 * 2^32 overflows before the 0 */
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,0],\"data_offsets\":[0,0]}}", 0, "w",
                        "the shape's element count overflows 64 bits"), 0);
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],\"data_offsets\":[0,0]}}", 0, "w",
                        "the shape's size in bytes overflows 64 bits"), 0);
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"U8\",\"shape\":[18446744073709551615],\"data_offsets\":[0,0]}}", 0, NULL,
                        "not valid JSON"), 0); /* above INT64_MAX: jansson's limit */
  char big[600] = "{\"w\":{\"dtype\":\"U8\",\"data_offsets\":[0,1],\"shape\":[1";
  for (int i = 0; i < 64; i++) strcat(big, ",1");
  strcat(big, "]}}");
  ASSERT_EQ_INT(rejects(big, 1, "w", "shape has 65 dimensions, more than libdispatch's 64"), 0);
  /* a zero first stops the reference's product at 0: valid safetensors,
   * but its strides overflow, as they would in PyTorch */
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"U8\",\"shape\":[0,4294967296,4294967296],\"data_offsets\":[0,0]}}", 0, "w",
                        "libdispatch cannot make this tensor: "), 0);
  ASSERT_EQ_INT(accepts("{\"w\":{\"dtype\":\"U8\",\"shape\":[0,4294967296,3],\"data_offsets\":[0,0]}}", 0, 1), 0);
  return 0;
}

TEST(rejects_offsets) {
  ASSERT_EQ_INT(rejects("{\"w\":" U8(4, 0, 0) "}", 4, "w", "data_offsets [4, 0] end before they begin"), 0);
  ASSERT_EQ_INT(rejects("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "w",
                        "data_offsets [0, 4] hold 4 bytes, but 2 elements of F32 need 8"), 0);
  /* a gap between two tensors, and before the first */
  ASSERT_EQ_INT(rejects("{\"a\":" U8(0, 4, 4) ",\"b\":" U8(8, 12, 4) "}", 12, "b", "leave a gap after"), 0);
  ASSERT_EQ_INT(rejects("{\"a\":" U8(4, 8, 4) "}", 8, "a", "the first tensor must begin at 0"), 0);
  /* overlapping */
  ASSERT_EQ_INT(rejects("{\"a\":" U8(0, 8, 8) ",\"b\":" U8(4, 8, 4) "}", 8, "b", "overlap the previous tensor's data, which ends at 8"), 0);
  ASSERT_EQ_INT(rejects("{\"a\":" U8(0, 4, 4) ",\"b\":" U8(0, 4, 4) "}", 4, NULL, "overlap"), 0);
  /* the data buffer: trailing bytes, and too short */
  ASSERT_EQ_INT(rejects("{\"a\":" U8(0, 4, 4) "}", 6, NULL, "2 trailing bytes after the last tensor's data"), 0);
  ASSERT_EQ_INT(rejects("{\"a\":" U8(0, 4, 4) ",\"b\":" U8(4, 8, 4) "}", 5, "b",
                        "data_offsets end at 8, past the end of the data buffer (5 bytes)"), 0);
  ASSERT_EQ_INT(rejects("{}", 1, NULL, "1 trailing bytes"), 0);
  return 0;
}

/* A megabyte-long name is cut to 200 bytes in the message. */
TEST(rejects_name_long_names_briefly) {
  size_t n = 1 << 20;
  char *hdr = malloc(n + 64);
  strcpy(hdr, "{\"");
  memset(hdr + 2, 'x', n);
  strcpy(hdr + 2 + n, "\":5}");
  ASSERT_EQ_INT(rejects(hdr, 0, NULL, "xxx...': its entry is an integer"), 0);
  free(hdr);
  ASSERT_TRUE(strlen(disp_last_error()) < 400);
  return 0;
}

TEST(rejects_duplicates_and_metadata) {
  ASSERT_EQ_INT(rejects("{\"a\":" U8(0, 1, 1) ",\"a\":" U8(0, 1, 1) "}", 1, NULL, "not valid JSON (a duplicate name): "), 0);
  ASSERT_EQ_INT(rejects("{\"__metadata__\":5}", 0, NULL, "\"__metadata__\" is an integer, not an object of strings"), 0);
  ASSERT_EQ_INT(rejects("{\"__metadata__\":{\"k\":1}}", 0, NULL, "\"__metadata__\" value of \"k\" is an integer, not a string"), 0);
  ASSERT_EQ_INT(rejects("{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, NULL, "duplicate"), 0);
  ASSERT_EQ_INT(rejects("{\"a\\u0000b\":" U8(0, 1, 1) "}", 1, NULL, "not valid JSON"), 0);
  return 0;
}

/* What the reference accepts, so must this reader. */
TEST(accepts_what_the_reference_accepts) {
  ASSERT_EQ_INT(accepts("{}", 0, 0), 0);
  ASSERT_EQ_INT(accepts("  \n{}   ", 0, 0), 0); /* whitespace around: the '{' check is off in the reference */
  ASSERT_EQ_INT(accepts("{\"__metadata__\":null}", 0, 0), 0);
  ASSERT_EQ_INT(accepts("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"extra\":[1,{}]}}", 1, 1), 0);
  ASSERT_EQ_INT(accepts("{\"w\":[\"U8\",[1],[0,1]]}", 1, 1), 0); /* serde's sequence form of a struct */
  ASSERT_EQ_INT(accepts("{\"b\":" U8(4, 8, 4) ",\"a\":" U8(0, 4, 4) "}", 8, 2), 0); /* any JSON order */
  ASSERT_EQ_INT(accepts("{\"z\":" U8(0, 0, 0) ",\"e\":" U8(0, 0, 0) ",\"a\":" U8(0, 1, 1) "}", 1, 3), 0);
  ASSERT_EQ_INT(accepts("{\"\":" U8(0, 1, 1) "}", 1, 1), 0); /* an empty name */
  /* file order, not JSON order */
  size_t len;
  uint8_t *b = craft("{\"b\":" U8(4, 8, 4) ",\"a\":" U8(0, 4, 4) "}", strlen("{\"b\":" U8(4, 8, 4) ",\"a\":" U8(0, 4, 4) "}"), 8, &len);
  disp_safetensors *set = NULL;
  ASSERT_OK(disp_safetensors_load_buffer(b, len, NULL, &set));
  free(b);
  ASSERT_EQ_STR(disp_safetensors_name(set, 0), "a");
  ASSERT_EQ_INT(((uint8_t *)disp_tensor_data_ptr(disp_safetensors_get(set, "b")))[0], 5);
  disp_safetensors_free(set);
  return 0;
}

/* The message names the file a load read. */
TEST(rejects_name_the_file) {
  const char *path = tmp_path("bad.safetensors");
  FILE *f = fopen(path, "wb");
  ASSERT_TRUE(f);
  fwrite("\x05\0\0\0\0\0\0\0{\"a\"}", 1, 13, f);
  fclose(f);
  disp_safetensors *set = NULL;
  ASSERT_STATUS(disp_safetensors_load(path, &set), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), path);
  ASSERT_CONTAINS(disp_last_error(), "not valid JSON");
  f = fopen(path, "wb");
  fwrite("\x05\0\0", 1, 3, f);
  fclose(f);
  ASSERT_STATUS(disp_safetensors_load(path, &set), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), "the file has 3 bytes");
  unlink(path);
  ASSERT_STATUS(disp_safetensors_load(path, &set), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), "cannot open");
  ASSERT_CONTAINS(disp_last_error(), "No such file");
  ASSERT_STATUS(disp_safetensors_load("/", &set), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), "not a regular file");
  ASSERT_TRUE(set == NULL);
  return 0;
}

/* ---- the mapping ------------------------------------------------------------ */

/* a U8[1] at 0, then F32[1] at 1 (misaligned: copied), U8[3] at 5, F32[2]
 * at 8 (aligned: borrowed), after a header of 8 + 256 bytes. */
TEST(mmap_and_copy_paths) {
  char hdr[257];
  snprintf(hdr, sizeof hdr, "%-256s",
           "{\"a\":" U8(0, 1, 1) ",\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[1,5]},\"c\":" U8(5, 8, 3)
           ",\"d\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}");
  size_t len;
  uint8_t *b = craft(hdr, 256, 16, &len);
  float x = 1.5f, y[2] = {2.5f, -3.0f};
  memcpy(b + 264 + 1, &x, 4);
  memcpy(b + 264 + 8, y, 8);
  const char *path = tmp_path("map.safetensors");
  FILE *f = fopen(path, "wb");
  ASSERT_TRUE(f && fwrite(b, 1, len, f) == len);
  fclose(f);
  disp_safetensors *set = NULL;
  ASSERT_OK(disp_safetensors_load(path, &set));
  disp_tensor *ta = disp_safetensors_get(set, "a"), *tb = disp_safetensors_get(set, "b"),
              *tc = disp_safetensors_get(set, "c"), *td = disp_safetensors_get(set, "d");
  disp_storage *map = disp_tensor_storage(ta);
  ASSERT_TRUE(disp_tensor_storage(tc) == map && disp_tensor_storage(td) == map);
  ASSERT_TRUE(disp_tensor_storage(tb) != map); /* copied */
  ASSERT_EQ_INT(disp_storage_nbytes(map), len);
  ASSERT_TRUE(*(float *)disp_tensor_data_ptr(tb) == 1.5f);
  ASSERT_TRUE(memcmp(disp_tensor_data_ptr(td), y, 8) == 0);
  ASSERT_EQ_INT(((uint8_t *)disp_tensor_data_ptr(tc))[2], 8);
  /* the mapping outlives the set while a tensor holds it; writes stay private */
  disp_tensor *keep = disp_tensor_retain(td);
  disp_safetensors_free(set);
  ((float *)disp_tensor_data_ptr(keep))[0] = 42.0f;
  ASSERT_OK(disp_safetensors_load(path, &set));
  ASSERT_TRUE(*(float *)disp_tensor_data_ptr(disp_safetensors_get(set, "d")) == 2.5f);
  disp_safetensors_free(set);
  disp_tensor_release(keep);
  /* a buffer: the same tensors */
  ASSERT_OK(disp_safetensors_load_buffer(b, len, NULL, &set));
  ASSERT_TRUE(*(float *)disp_tensor_data_ptr(disp_safetensors_get(set, "b")) == 1.5f);
  ASSERT_TRUE(memcmp(disp_tensor_data_ptr(disp_safetensors_get(set, "d")), y, 8) == 0);
  disp_safetensors_free(set);
  free(b);
  unlink(path);
  return 0;
}

/* ---- building and saving errors --------------------------------------------- */

TEST(save_errors) {
  disp_safetensors *set = NULL;
  ASSERT_OK(disp_safetensors_new(&set));
  disp_tensor *t = patterned(DISP_DTYPE_FLOAT32, (int64_t[]){2}, 1, 0), *meta = NULL, *q = NULL;
  ASSERT_OK(disp_safetensors_add(set, "w", t));
  ASSERT_STATUS(disp_safetensors_add(set, "w", t), DISP_ERR_DUPLICATE);
  ASSERT_CONTAINS(disp_last_error(), "already has a tensor named 'w'");
  ASSERT_STATUS(disp_safetensors_add(set, "__metadata__", t), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_safetensors_add(set, "", t), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_safetensors_add(set, NULL, t), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_INT(disp_safetensors_count(set), 1);
  const char *dir_path = "/nonexistent-dir-disp/ckpt.safetensors";
  ASSERT_STATUS(disp_safetensors_save(set, dir_path), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), "cannot create /nonexistent-dir-disp/ckpt.safetensors.tmp.");
  /* a tensor not on the CPU is refused, by name */
  ASSERT_OK(disp_tensor_empty((int64_t[]){2}, 1, DISP_DTYPE_FLOAT32, (disp_device){DISP_BACKEND_META, -1}, &meta));
  ASSERT_OK(disp_safetensors_add(set, "m", meta));
  const char *path = tmp_path("err.safetensors");
  ASSERT_STATUS(disp_safetensors_save(set, path), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "disp_safetensors_save: tensor 'm' (float32) is not on the CPU");
  ASSERT_TRUE(access(path, F_OK) != 0); /* nothing written */
  disp_safetensors_free(set);
  ASSERT_OK(disp_safetensors_new(&set));
  ASSERT_OK(disp_tensor_empty((int64_t[]){2}, 1, DISP_DTYPE_QUINT8, cpu, &q));
  ASSERT_OK(disp_safetensors_add(set, "q", q));
  void *buf = (void *)1;
  size_t len = 0;
  ASSERT_STATUS(disp_safetensors_serialize(set, &buf, &len), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "tensor 'q' (quint8) has a dtype safetensors cannot hold");
  ASSERT_TRUE(buf == (void *)1);
  disp_safetensors_free(set);
  /* names must be UTF-8 (JSON text is) */
  ASSERT_OK(disp_safetensors_new(&set));
  ASSERT_OK(disp_safetensors_add(set, "bad\xff", t));
  ASSERT_STATUS(disp_safetensors_save(set, path), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "is not valid UTF-8");
  disp_safetensors_free(set);
  disp_tensor_release(t);
  disp_tensor_release(meta);
  disp_tensor_release(q);
  return 0;
}

/* Saving over an existing file replaces it whole. */
TEST(save_replaces) {
  const char *path = tmp_path("replace.safetensors");
  for (int round = 0; round < 2; round++) {
    disp_safetensors *set = NULL;
    ASSERT_OK(disp_safetensors_new(&set));
    disp_tensor *t = patterned(DISP_DTYPE_INT16, (int64_t[]){3 + round}, 1, (unsigned)round);
    ASSERT_OK(disp_safetensors_add(set, round ? "second" : "first", t));
    ASSERT_OK(disp_safetensors_save(set, path));
    disp_tensor_release(t);
    disp_safetensors_free(set);
  }
  disp_safetensors *set = NULL;
  ASSERT_OK(disp_safetensors_load(path, &set));
  ASSERT_EQ_INT(disp_safetensors_count(set), 1);
  ASSERT_EQ_STR(disp_safetensors_name(set, 0), "second");
  disp_safetensors_free(set);
  struct stat sb;
  ASSERT_TRUE(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0644);
  unlink(path);
  return 0;
}

TEST(null_arguments) {
  disp_safetensors *set = NULL;
  ASSERT_STATUS(disp_safetensors_new(NULL), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_safetensors_load(NULL, &set), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_safetensors_load("x", NULL), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_safetensors_load_buffer(NULL, 3, NULL, &set), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_safetensors_save(NULL, "x"), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_safetensors_set_metadata(NULL, "k", "v"), DISP_ERR_INVALID_ARG);
  ASSERT_EQ_INT(disp_safetensors_count(NULL), 0);
  ASSERT_TRUE(disp_safetensors_get(NULL, "x") == NULL);
  ASSERT_TRUE(disp_safetensors_dtype_name(DISP_DTYPE_COUNT) == NULL);
  ASSERT_EQ_STR(disp_safetensors_dtype_name(DISP_DTYPE_BFLOAT16), "BF16");
  disp_safetensors_free(NULL);
  return 0;
}

/* ---- allocation failures ------------------------------------------------------ */

#ifdef DISP_FAULT_INJECTION
/* Save, serialize and load a small set with allocation n failing: every
 * failure is DISP_ERR_NO_MEMORY saying so (LeakSanitizer checks that
 * nothing leaks), and an unarmed run after it succeeds. */
static disp_status scenario(const char *path) {
  disp_safetensors *set = NULL, *back = NULL;
  disp_tensor *t = NULL;
  disp_status s = disp_safetensors_new(&set);
  if (s == DISP_OK) s = disp_tensor_empty((int64_t[]){4, 2}, 2, DISP_DTYPE_FLOAT64, cpu, &t);
  if (s == DISP_OK) memset(disp_tensor_data_ptr(t), 1, 64);
  if (s == DISP_OK) s = disp_safetensors_add(set, "w", t);
  disp_tensor *tr = NULL; /* non-contiguous: written through a gather buffer */
  if (s == DISP_OK) s = disp_tensor_new_view(t, (int64_t[]){2, 4}, (int64_t[]){1, 2}, 2, 0, &tr);
  if (s == DISP_OK) s = disp_safetensors_add(set, "wt", tr);
  disp_tensor_release(tr);
  if (s == DISP_OK) s = disp_safetensors_set_metadata(set, "step", "1");
  if (s == DISP_OK) s = disp_safetensors_save(set, path);
  if (s == DISP_OK) s = disp_safetensors_load(path, &back);
  disp_safetensors_free(back);
  back = NULL;
  void *buf = NULL;
  size_t len = 0;
  if (s == DISP_OK) s = disp_safetensors_serialize(set, &buf, &len);
  if (s == DISP_OK) s = disp_safetensors_load_buffer(buf, len, NULL, &back);
  free(buf);
  disp_safetensors_free(back);
  disp_safetensors_free(set);
  disp_tensor_release(t);
  return s;
}

TEST(allocation_failures) {
  const char *path = tmp_path("alloc.safetensors");
  ASSERT_OK(scenario(path));
  disp__fault_arm(0, 0);
  ASSERT_OK(scenario(path));
  long total = disp__fault_count(), reported = 0;
  ASSERT_TRUE(total > 5);
  for (long n = 1; n <= total; n++) {
    disp__fault_arm(n, 0);
    disp_status s = scenario(path);
    disp__fault_arm(0, 0);
    if (s != DISP_OK) {
      ASSERT_STATUS(s, DISP_ERR_NO_MEMORY);
      if (!strstr(disp_last_error(), "out of memory") && !strstr(disp_last_error(), "not enough memory"))
        TEST_FAIL_("allocation %ld: %s", n, disp_last_error());
      reported++;
    }
    ASSERT_OK(scenario(path));
  }
  printf("safetensors: %ld allocations failed in turn, %ld reported out of memory\n", total, reported);
  ASSERT_TRUE(reported > 0);
  unlink(path);
  return 0;
}
#endif

TEST_LIST = {
    TEST_ENTRY(roundtrip_every_dtype),
    TEST_ENTRY(roundtrip_non_contiguous_zero_dim_and_empty),
    TEST_ENTRY(metadata_roundtrip),
    TEST_ENTRY(reference_writer_bytes),
    TEST_ENTRY(rejects_short_file),
    TEST_ENTRY(rejects_header_length),
    TEST_ENTRY(rejects_bad_utf8_and_json),
    TEST_ENTRY(rejects_non_object_header),
    TEST_ENTRY(rejects_bad_entries),
    TEST_ENTRY(rejects_dtypes),
    TEST_ENTRY(rejects_shapes),
    TEST_ENTRY(rejects_offsets),
    TEST_ENTRY(rejects_name_long_names_briefly),
    TEST_ENTRY(rejects_duplicates_and_metadata),
    TEST_ENTRY(accepts_what_the_reference_accepts),
    TEST_ENTRY(rejects_name_the_file),
    TEST_ENTRY(mmap_and_copy_paths),
    TEST_ENTRY(save_errors),
    TEST_ENTRY(save_replaces),
    TEST_ENTRY(null_arguments),
#ifdef DISP_FAULT_INJECTION
    TEST_ENTRY(allocation_failures),
#endif
    TEST_END,
};

TEST_MAIN()
