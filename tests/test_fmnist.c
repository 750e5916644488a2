/*
 * test_fmnist.c - the Fashion-MNIST reader of the examples (examples/fmnist.h)
 * on tiny gzipped IDX files written here, and on the real data set when
 * Debian's dataset-fashion-mnist is installed.
 */
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "fmnist.h"
#include "test.h"

/* ---- writing tiny data sets ----------------------------------------- */

static char tmp_dir[256];

/* A fresh empty directory for one case (removed by clean_dir). */
static const char *make_dir(void) {
  const char *base = getenv("TMPDIR");
  snprintf(tmp_dir, sizeof tmp_dir, "%s/test_fmnist.XXXXXX", base && *base ? base : "/tmp");
  return mkdtemp(tmp_dir);
}

static const char *const file_names[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};

static void path_of(char *buf, size_t size, const char *dir, const char *name) {
  snprintf(buf, size, "%s/%s", dir, name);
}

static void clean_dir(const char *dir) {
  char path[512];
  for (size_t i = 0; i < sizeof file_names / sizeof *file_names; i++) {
    path_of(path, sizeof path, dir, file_names[i]);
    unlink(path);
  }
  rmdir(dir);
}

static int write_gz(const char *dir, const char *name, const unsigned char *bytes, size_t n) {
  char path[512];
  path_of(path, sizeof path, dir, name);
  gzFile f = gzopen(path, "wb");
  if (!f) return -1;
  int ok = n == 0 || gzwrite(f, bytes, (unsigned)n) == (int)n;
  return gzclose(f) == Z_OK && ok ? 0 : -1;
}

static void put_be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

/* Pixel p of image i in the tiny sets: every byte value turns up. */
static unsigned char pixel(int64_t i, int64_t p) { return (unsigned char)((i * 31 + p * 7) % 256); }

/* An images file: header (magic, count, rows, cols) and `stored` images of
 * rows x cols pixels (fewer than `count` makes a truncated file). */
static int write_images(const char *dir, const char *name, uint32_t magic, uint32_t count, uint32_t rows,
                        uint32_t cols, uint32_t stored) {
  size_t n = 16 + (size_t)stored * rows * cols;
  unsigned char *b = malloc(n);
  if (!b) return -1;
  put_be32(b, magic);
  put_be32(b + 4, count);
  put_be32(b + 8, rows);
  put_be32(b + 12, cols);
  for (size_t k = 0; k < (size_t)stored * rows * cols; k++) b[16 + k] = pixel(k / (rows * cols), k % (rows * cols));
  int r = write_gz(dir, name, b, n);
  free(b);
  return r;
}

static int write_labels(const char *dir, const char *name, uint32_t magic, uint32_t count,
                        const unsigned char *labels, size_t stored) {
  unsigned char b[64];
  if (stored > sizeof b - 8) return -1;
  put_be32(b, magic);
  put_be32(b + 4, count);
  memcpy(b + 8, labels, stored);
  return write_gz(dir, name, b, 8 + stored);
}

static const unsigned char tiny_labels[] = {7, 0, 9, 3, 5};

/* A good training split of n (at most 5) images. */
static int write_good_train(const char *dir, uint32_t n) {
  if (write_images(dir, file_names[0], 0x803, n, 28, 28, n)) return -1;
  return write_labels(dir, file_names[1], 0x801, n, tiny_labels, n);
}

/* A fresh directory holding a good training split of n images, loaded
 * into *s; NULL when any step failed. */
static const char *load_tiny(uint32_t n, fmnist_set *s) {
  const char *dir = make_dir();
  if (!dir || write_good_train(dir, n) != 0 || fmnist_load(dir, 1, s) != DISP_OK) return NULL;
  return dir;
}

/* ---- loading ---------------------------------------------------------- */

static int check_tiny_set(const fmnist_set *s, int64_t n) {
  ASSERT_EQ_INT(s->count, n);
  for (int64_t i = 0; i < n; i++) {
    ASSERT_EQ_INT(s->labels[i], tiny_labels[i]);
    for (int64_t p = 0; p < FMNIST_PIXELS; p++)
      if (s->images[i * FMNIST_PIXELS + p] != (float)pixel(i, p) / 255.0f)
        TEST_FAIL_("image %lld pixel %lld: %g, expected %d/255", (long long)i, (long long)p,
                   (double)s->images[i * FMNIST_PIXELS + p], pixel(i, p));
  }
  return 0;
}

TEST(loads_values_labels_and_scaling) {
  fmnist_set s;
  const char *dir = load_tiny(3, &s);
  ASSERT_TRUE(dir != NULL);
  if (check_tiny_set(&s, 3)) return 1;
  /* byte 0 -> 0 and 255 -> 1 exactly, as ToTensor */
  ASSERT_TRUE(s.images[0] == 0.0f);
  float lo = 1, hi = 0;
  for (int64_t k = 0; k < 3 * FMNIST_PIXELS; k++) {
    lo = s.images[k] < lo ? s.images[k] : lo;
    hi = s.images[k] > hi ? s.images[k] : hi;
  }
  ASSERT_TRUE(lo == 0.0f && hi == 1.0f);
  fmnist_free(&s);
  ASSERT_TRUE(s.images == NULL && s.labels == NULL && s.count == 0);
  fmnist_free(&s); /* twice is fine */
  fmnist_free(NULL);
  clean_dir(dir);
  return 0;
}

TEST(test_split_reads_t10k_files) {
  const char *dir = make_dir();
  ASSERT_TRUE(dir != NULL);
  ASSERT_TRUE(write_images(dir, file_names[2], 0x803, 2, 28, 28, 2) == 0);
  ASSERT_TRUE(write_labels(dir, file_names[3], 0x801, 2, tiny_labels, 2) == 0);
  fmnist_set s;
  ASSERT_OK(fmnist_load(dir, 0, &s));
  if (check_tiny_set(&s, 2)) return 1;
  fmnist_free(&s);
  /* no train-* files there */
  ASSERT_STATUS(fmnist_load(dir, 1, &s), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), "train-images-idx3-ubyte.gz");
  clean_dir(dir);
  return 0;
}

TEST(missing_directory_says_what_to_install) {
  fmnist_set s = {5, NULL, NULL};
  ASSERT_STATUS(fmnist_load("/nonexistent/fashion-mnist", 1, &s), DISP_ERR_IO);
  ASSERT_STARTS_WITH(disp_last_error(), "fashion-mnist: no data directory /nonexistent/fashion-mnist");
  ASSERT_CONTAINS(disp_last_error(), "install Debian's dataset-fashion-mnist package");
  ASSERT_CONTAINS(disp_last_error(), "or pass --data DIR");
  ASSERT_TRUE(s.count == 0 && s.images == NULL);
  ASSERT_STATUS(fmnist_load("/dev/null", 1, &s), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), "/dev/null is not a directory");
  ASSERT_STATUS(fmnist_load(NULL, 1, NULL), DISP_ERR_INVALID_ARG);
  return 0;
}

TEST(missing_files_say_what_to_install) {
  const char *dir = make_dir();
  ASSERT_TRUE(dir != NULL);
  fmnist_set s;
  ASSERT_STATUS(fmnist_load(dir, 1, &s), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), "cannot open");
  ASSERT_CONTAINS(disp_last_error(), "/train-images-idx3-ubyte.gz (No such file or directory)");
  ASSERT_CONTAINS(disp_last_error(), "dataset-fashion-mnist");
  ASSERT_TRUE(write_images(dir, file_names[0], 0x803, 1, 28, 28, 1) == 0);
  ASSERT_STATUS(fmnist_load(dir, 1, &s), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), "/train-labels-idx1-ubyte.gz (No such file or directory)");
  clean_dir(dir);
  return 0;
}

/* Loading `dir`'s training split fails with DISP_ERR_IO and this text. */
static int expect_load_error(const char *dir, const char *text) {
  fmnist_set s;
  ASSERT_STATUS(fmnist_load(dir, 1, &s), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), text);
  ASSERT_TRUE(s.count == 0 && s.images == NULL && s.labels == NULL);
  return 0;
}

/* A training split whose files are wrong in one way, and what loading says. */
typedef struct bad_split {
  uint32_t img_magic, img_count, rows, cols, img_stored; /* write_images' arguments */
  uint32_t lab_magic, lab_count, lab_stored;             /* write_labels' (labels from `labels`) */
  const unsigned char *labels;
  const char *text, *text2; /* the message contains both (text2 may be NULL) */
} bad_split;

static const unsigned char label_ten[] = {3, 10};

static const bad_split bad_splits[] = {
    {0x801, 1, 28, 28, 1, 0x801, 1, 1, tiny_labels,
     "train-images-idx3-ubyte.gz is not an IDX file of images (unsigned bytes, 3 dimensions): magic number "
     "0x00000801, expected 0x00000803", NULL},
    {0x803, 1, 28, 28, 1, 0x08030000, 1, 1, tiny_labels,
     "train-labels-idx1-ubyte.gz is not an IDX file of labels (unsigned bytes, 1 dimension): magic number "
     "0x08030000, expected 0x00000801", NULL},
    {0x803, 1, 32, 32, 1, 0x801, 1, 1, tiny_labels, "train-images-idx3-ubyte.gz holds 32x32 images, expected 28x28",
     NULL},
    {0x803, 2, 28, 28, 2, 0x801, 2, 2, label_ten,
     "train-labels-idx1-ubyte.gz is corrupt: label 10 of item 1 is outside 0..9", NULL},
    {0x803, 0, 28, 28, 0, 0x801, 0, 0, tiny_labels, "train-images-idx3-ubyte.gz holds no images", NULL},
    /* the header announces 3 images, 2 are there (a complete gzip stream) */
    {0x803, 3, 28, 28, 2, 0x801, 3, 3, tiny_labels,
     "train-images-idx3-ubyte.gz is truncated: it ends after 1584 bytes, 2368 expected", NULL},
    {0x803, 3, 28, 28, 3, 0x801, 3, 2, tiny_labels,
     "train-labels-idx1-ubyte.gz is truncated: it ends after 10 bytes, 11 expected", NULL},
    {0x803, 2, 28, 28, 2, 0x801, 2, 3, tiny_labels,
     "train-labels-idx1-ubyte.gz is corrupt: it goes on after the 10 bytes its header announces", NULL},
    /* a count mismatch between images and labels */
    {0x803, 3, 28, 28, 3, 0x801, 2, 2, tiny_labels, "train-images-idx3-ubyte.gz holds 3 images but ",
     "train-labels-idx1-ubyte.gz holds 2 labels"},
};

TEST(wrong_headers_truncation_and_counts) {
  const char *dir = make_dir();
  ASSERT_TRUE(dir != NULL);
  for (size_t i = 0; i < sizeof bad_splits / sizeof *bad_splits; i++) {
    const bad_split *b = &bad_splits[i];
    ASSERT_TRUE(write_images(dir, file_names[0], b->img_magic, b->img_count, b->rows, b->cols, b->img_stored) == 0);
    ASSERT_TRUE(write_labels(dir, file_names[1], b->lab_magic, b->lab_count, b->labels, b->lab_stored) == 0);
    if (expect_load_error(dir, b->text) || (b->text2 && expect_load_error(dir, b->text2)))
      TEST_FAIL_("bad_splits[%zu]", i);
  }
  /* A labels file (shorter than an images header) in place of the images:
   * named by its magic number, not as a truncated file. */
  ASSERT_TRUE(write_labels(dir, file_names[0], 0x801, 1, tiny_labels, 0) == 0);
  if (expect_load_error(dir, "train-images-idx3-ubyte.gz is not an IDX file of images")) return 1;
  /* a header cut short */
  unsigned char half[6] = {0, 0, 8, 3, 0, 0};
  ASSERT_TRUE(write_gz(dir, file_names[0], half, sizeof half) == 0);
  if (expect_load_error(dir, "train-images-idx3-ubyte.gz is truncated: it ends after 6 bytes, 16 expected"))
    return 1;
  clean_dir(dir);
  return 0;
}

/* The gzip file itself damaged: cut short, or a flipped checksum byte. */
TEST(damaged_gzip_stream) {
  const char *dir = make_dir();
  ASSERT_TRUE(dir != NULL);
  char path[512];
  path_of(path, sizeof path, dir, file_names[0]);
  struct stat st;
  ASSERT_TRUE(write_good_train(dir, 3) == 0);
  ASSERT_TRUE(stat(path, &st) == 0);
  ASSERT_TRUE(truncate(path, st.st_size - 4) == 0); /* part of the trailer gone */
  if (expect_load_error(dir, "train-images-idx3-ubyte.gz is truncated: its gzip stream stops before the trailer"))
    return 1;
  ASSERT_TRUE(write_good_train(dir, 3) == 0);
  ASSERT_TRUE(truncate(path, st.st_size / 2) == 0); /* half the deflate data gone */
  if (expect_load_error(dir, "train-images-idx3-ubyte.gz is truncated: it ends after ")) return 1;
  ASSERT_TRUE(write_good_train(dir, 3) == 0);
  FILE *f = fopen(path, "r+b"); /* the CRC-32 is the trailer's first 4 bytes */
  ASSERT_TRUE(f != NULL);
  ASSERT_TRUE(fseek(f, st.st_size - 8, SEEK_SET) == 0);
  int c = fgetc(f);
  ASSERT_TRUE(fseek(f, st.st_size - 8, SEEK_SET) == 0);
  fputc(c ^ 0xff, f);
  fclose(f);
  if (expect_load_error(dir, "train-images-idx3-ubyte.gz is corrupt (incorrect data check)")) return 1;
  clean_dir(dir);
  return 0;
}

TEST(normalize) {
  fmnist_set s;
  const char *dir = load_tiny(2, &s);
  ASSERT_TRUE(dir != NULL);
  ASSERT_OK(fmnist_normalize(&s, FMNIST_MEAN, FMNIST_STD));
  for (int64_t k = 0; k < 2 * FMNIST_PIXELS; k++) {
    float want = ((float)pixel(k / FMNIST_PIXELS, k % FMNIST_PIXELS) / 255.0f - 0.2860f) / 0.3530f;
    if (fabsf(s.images[k] - want) > 1e-6f) TEST_FAIL_("pixel %lld: %g, expected %g", (long long)k, s.images[k], want);
  }
  float first = s.images[0];
  ASSERT_STATUS(fmnist_normalize(&s, 0.5f, 0.0f), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "positive finite std");
  ASSERT_STATUS(fmnist_normalize(&s, NAN, 1.0f), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(fmnist_normalize(&s, 0.0f, INFINITY), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(fmnist_normalize(NULL, 0.0f, 1.0f), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(s.images[0] == first); /* refused calls changed nothing */
  fmnist_free(&s);
  clean_dir(dir);
  return 0;
}

/* ---- shuffling -------------------------------------------------------- */

TEST(rng_is_splitmix64) {
  uint64_t state = 0; /* SplitMix64's published first outputs from state 0 */
  ASSERT_TRUE(fmnist_rng_next(&state) == 0xE220A8397B1DCDAFull);
  ASSERT_TRUE(fmnist_rng_next(&state) == 0x6E789E6AA1B965F4ull);
  ASSERT_TRUE(fmnist_rng_next(&state) == 0x06C45D188009454Full);
  ASSERT_EQ_INT(fmnist_rng_below(&state, 0), 0);
  for (int i = 0; i < 1000; i++) ASSERT_TRUE(fmnist_rng_below(&state, 7) < 7);
  return 0;
}

TEST(shuffle_is_a_repeatable_permutation) {
  enum { N = 1000 };
  static int64_t a[N], b[N];
  static unsigned char seen[N];
  uint64_t s1 = 123, s2 = 123;
  ASSERT_OK(fmnist_shuffle(a, N, &s1));
  ASSERT_OK(fmnist_shuffle(b, N, &s2));
  ASSERT_TRUE(memcmp(a, b, sizeof a) == 0);
  ASSERT_TRUE(s1 == s2 && s1 != 123);
  int moved = 0;
  for (int i = 0; i < N; i++) {
    ASSERT_TRUE(a[i] >= 0 && a[i] < N && !seen[a[i]]);
    seen[a[i]] = 1;
    moved += a[i] != i;
  }
  ASSERT_TRUE(moved > N / 2);
  ASSERT_OK(fmnist_shuffle(b, N, &s2)); /* the next epoch: another order */
  ASSERT_TRUE(memcmp(a, b, sizeof a) != 0);
  /* Pinned: the documented algorithm gives this on every machine (computed
   * independently from the description in fmnist.h). */
  int64_t p[10], want1[10] = {0, 9, 5, 8, 6, 4, 7, 2, 1, 3}, want2[10] = {0, 9, 3, 2, 5, 7, 1, 6, 8, 4};
  uint64_t state = 42;
  ASSERT_OK(fmnist_shuffle(p, 10, &state));
  ASSERT_TRUE(memcmp(p, want1, sizeof p) == 0);
  ASSERT_OK(fmnist_shuffle(p, 10, &state));
  ASSERT_TRUE(memcmp(p, want2, sizeof p) == 0);
  ASSERT_OK(fmnist_shuffle(p, 0, &state));
  ASSERT_OK(fmnist_shuffle(p, 1, &state));
  ASSERT_EQ_INT(p[0], 0);
  ASSERT_STATUS(fmnist_shuffle(NULL, 3, &state), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(fmnist_shuffle(p, 3, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(fmnist_shuffle(p, -1, &state), DISP_ERR_INVALID_ARG);
  return 0;
}

/* ---- batches ---------------------------------------------------------- */

/* Batch `index` holds rows `rows` of the tiny set, in this shape. */
static int check_batch(const fmnist_set *s, const int64_t *perm, int64_t bs, int64_t index, fmnist_shape shape,
                       const int64_t *rows, int64_t b) {
  disp_tensor *x = NULL, *y = NULL;
  ASSERT_OK(fmnist_batch(s, perm, bs, index, shape, &x, &y));
  ASSERT_EQ_INT(disp_tensor_dtype(x), DISP_DTYPE_FLOAT32);
  ASSERT_EQ_INT(disp_tensor_dtype(y), DISP_DTYPE_INT64);
  ASSERT_TRUE(disp_tensor_is_contiguous(x));
  ASSERT_EQ_INT(disp_tensor_ndim(x), shape == FMNIST_SHAPE_IMAGE ? 4 : 2);
  ASSERT_EQ_INT(disp_tensor_sizes(x)[0], b);
  if (shape == FMNIST_SHAPE_IMAGE) {
    ASSERT_EQ_INT(disp_tensor_sizes(x)[1], 1);
    ASSERT_EQ_INT(disp_tensor_sizes(x)[2], 28);
    ASSERT_EQ_INT(disp_tensor_sizes(x)[3], 28);
  } else {
    ASSERT_EQ_INT(disp_tensor_sizes(x)[1], 784);
  }
  ASSERT_EQ_INT(disp_tensor_ndim(y), 1);
  ASSERT_EQ_INT(disp_tensor_sizes(y)[0], b);
  const float *px = disp_tensor_data_ptr(x);
  const int64_t *py = disp_tensor_data_ptr(y);
  for (int64_t k = 0; k < b; k++) {
    ASSERT_EQ_INT(py[k], tiny_labels[rows[k]]);
    ASSERT_TRUE(memcmp(px + k * 784, s->images + rows[k] * 784, 784 * sizeof(float)) == 0);
  }
  disp_tensor_release(x);
  disp_tensor_release(y);
  return 0;
}

TEST(batches_hold_the_right_rows) {
  fmnist_set s;
  const char *dir = load_tiny(5, &s);
  ASSERT_TRUE(dir != NULL);
  int64_t perm[5] = {3, 0, 4, 2, 1};
  ASSERT_EQ_INT(fmnist_batch_count(&s, 2), 3);
  ASSERT_EQ_INT(fmnist_batch_count(&s, 5), 1);
  ASSERT_EQ_INT(fmnist_batch_count(&s, 64), 1);
  ASSERT_EQ_INT(fmnist_batch_count(&s, 0), 0);
  ASSERT_EQ_INT(fmnist_batch_count(NULL, 2), 0);
  if (check_batch(&s, perm, 2, 0, FMNIST_SHAPE_IMAGE, (int64_t[]){3, 0}, 2)) return 1;
  if (check_batch(&s, perm, 2, 1, FMNIST_SHAPE_FLAT, (int64_t[]){4, 2}, 2)) return 1;
  if (check_batch(&s, perm, 2, 2, FMNIST_SHAPE_IMAGE, (int64_t[]){1}, 1)) return 1; /* the short last one */
  if (check_batch(&s, NULL, 3, 1, FMNIST_SHAPE_FLAT, (int64_t[]){3, 4}, 2)) return 1;  /* in order */
  if (check_batch(&s, NULL, 64, 0, FMNIST_SHAPE_IMAGE, (int64_t[]){0, 1, 2, 3, 4}, 5)) return 1;
  fmnist_free(&s);
  clean_dir(dir);
  return 0;
}

TEST(batch_errors) {
  float img[2 * 784] = {0};
  int64_t lab[2] = {1, 2}, bad_perm[2] = {1, 2};
  fmnist_set s = {2, img, lab};
  disp_tensor *x = (disp_tensor *)1, *y = (disp_tensor *)1;
  ASSERT_STATUS(fmnist_batch(&s, NULL, 2, 1, FMNIST_SHAPE_FLAT, &x, &y), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "fmnist_batch: batch 1 is outside 0..0 (2 images in batches of 2)");
  ASSERT_TRUE(x == NULL && y == NULL);
  ASSERT_STATUS(fmnist_batch(&s, NULL, 2, -1, FMNIST_SHAPE_FLAT, &x, &y), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(fmnist_batch(&s, NULL, 0, 0, FMNIST_SHAPE_FLAT, &x, &y), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "batch_size must be positive");
  ASSERT_STATUS(fmnist_batch(&s, bad_perm, 2, 0, FMNIST_SHAPE_FLAT, &x, &y), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "perm[1] = 2 is outside 0..1");
  ASSERT_STATUS(fmnist_batch(&s, NULL, 2, 0, (fmnist_shape)7, &x, &y), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(fmnist_batch(NULL, NULL, 2, 0, FMNIST_SHAPE_FLAT, &x, &y), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(fmnist_batch(&s, NULL, 2, 0, FMNIST_SHAPE_FLAT, NULL, &y), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(fmnist_batch(&s, NULL, 2, 0, FMNIST_SHAPE_FLAT, &x, NULL), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(x == NULL);
  fmnist_set empty = {0, NULL, NULL}, broken = {2, NULL, lab};
  ASSERT_STATUS(fmnist_batch(&empty, NULL, 2, 0, FMNIST_SHAPE_FLAT, &x, &y), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(fmnist_batch(&broken, NULL, 2, 0, FMNIST_SHAPE_FLAT, &x, &y), DISP_ERR_INVALID_ARG);
  ASSERT_CONTAINS(disp_last_error(), "not one fmnist_load filled");
  return 0;
}

/* ---- the real data set ------------------------------------------------ */

static int check_real_split(int train, int64_t count, const int64_t *first) {
  fmnist_set s;
  ASSERT_OK(fmnist_load(NULL, train, &s));
  ASSERT_EQ_INT(s.count, count);
  for (int i = 0; i < 6; i++) ASSERT_EQ_INT(s.labels[i], first[i]);
  if (train) { /* FMNIST_MEAN and FMNIST_STD are this split's */
    double sum = 0, sq = 0;
    int64_t n = s.count * FMNIST_PIXELS;
    for (int64_t k = 0; k < n; k++) sum += s.images[k];
    double mean = sum / (double)n;
    for (int64_t k = 0; k < n; k++) sq += (s.images[k] - mean) * (s.images[k] - mean);
    double std = sqrt(sq / (double)n);
    if (fabs(mean - FMNIST_MEAN) > 5e-5 || fabs(std - FMNIST_STD) > 5e-5)
      TEST_FAIL_("mean %.5f std %.5f, FMNIST_MEAN %.4f FMNIST_STD %.4f", mean, std, FMNIST_MEAN, FMNIST_STD);
  }
  fmnist_free(&s);
  return 0;
}

TEST(real_dataset_when_installed) {
  struct stat st;
  if (stat(FMNIST_DEFAULT_DIR, &st) != 0) {
    printf("skip: %s is not there (Debian's dataset-fashion-mnist)\n", FMNIST_DEFAULT_DIR);
    return 0;
  }
  if (check_real_split(1, 60000, (const int64_t[]){9, 0, 0, 3, 0, 2})) return 1;
  return check_real_split(0, 10000, (const int64_t[]){9, 2, 1, 1, 6, 1});
}

TEST_LIST = {
    TEST_ENTRY(loads_values_labels_and_scaling),
    TEST_ENTRY(test_split_reads_t10k_files),
    TEST_ENTRY(missing_directory_says_what_to_install),
    TEST_ENTRY(missing_files_say_what_to_install),
    TEST_ENTRY(wrong_headers_truncation_and_counts),
    TEST_ENTRY(damaged_gzip_stream),
    TEST_ENTRY(normalize),
    TEST_ENTRY(rng_is_splitmix64),
    TEST_ENTRY(shuffle_is_a_repeatable_permutation),
    TEST_ENTRY(batches_hold_the_right_rows),
    TEST_ENTRY(batch_errors),
    TEST_ENTRY(real_dataset_when_installed),
    TEST_END};
TEST_MAIN()
