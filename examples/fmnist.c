/*
 * fmnist.c - the Fashion-MNIST reader (fmnist.h): IDX files through zlib,
 * a seeded shuffle and mini-batches as tensors.
 */
#include "fmnist.h"
#include "splitmix64.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>

#define IDX_IMAGES_MAGIC 0x00000803u /* unsigned bytes, 3 dimensions */
#define IDX_LABELS_MAGIC 0x00000801u /* unsigned bytes, 1 dimension */
#define IMAGES_HEADER 16             /* magic, count, rows, cols */
#define LABELS_HEADER 8              /* magic, count */

#define INSTALL_HINT                                                             \
  "; install Debian's dataset-fashion-mnist package (apt-get install "         \
  "dataset-fashion-mnist) or pass --data DIR naming a directory with the four " \
  "Fashion-MNIST files"

/* One IDX file being read: where it is, how far we got, how far it should go
 * (the header's size until the header is read, then the whole file's). */
typedef struct idx_file {
  gzFile f;
  char path[4096];
  int64_t pos, size;
} idx_file;

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static disp_status check_dir(const char *dir) {
  struct stat st;
  if (stat(dir, &st) != 0)
    return disp_set_error(DISP_ERR_IO, "fashion-mnist: no data directory %s (%s)" INSTALL_HINT, dir,
                          strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return disp_set_error(DISP_ERR_IO, "fashion-mnist: %s is not a directory" INSTALL_HINT, dir);
  return DISP_OK;
}

static disp_status idx_open(idx_file *x, const char *dir, const char *name, int64_t header) {
  int n = snprintf(x->path, sizeof x->path, "%s/%s", dir, name);
  if (n < 0 || (size_t)n >= sizeof x->path)
    return disp_set_error(DISP_ERR_INVALID_ARG, "fashion-mnist: the path %s/%s is too long", dir, name);
  errno = 0;
  x->f = gzopen(x->path, "rb");
  if (!x->f)
    return disp_set_error(DISP_ERR_IO, "fashion-mnist: cannot open %s (%s)" INSTALL_HINT, x->path,
                          errno ? strerror(errno) : "out of memory");
  gzbuffer(x->f, 1 << 17); /* fewer read() calls on the 26 MB training images */
  x->pos = 0;
  x->size = header;
  return DISP_OK;
}

/* The error after gzread fell short: a clean end of data (or of the gzip
 * stream, Z_BUF_ERROR) is a truncation; anything else is corruption. */
static disp_status idx_short_read(idx_file *x) {
  int errnum = Z_OK;
  const char *msg = gzerror(x->f, &errnum);
  if ((errnum == Z_OK || errnum == Z_BUF_ERROR) && x->pos < x->size)
    return disp_set_error(DISP_ERR_IO, "fashion-mnist: %s is truncated: it ends after %lld bytes, %lld expected",
                          x->path, (long long)x->pos, (long long)x->size);
  if (errnum == Z_OK || errnum == Z_BUF_ERROR)
    return disp_set_error(DISP_ERR_IO, "fashion-mnist: %s is truncated: its gzip stream stops before the trailer",
                          x->path);
  /* zlib's message starts with the path we gave gzopen */
  size_t n = strlen(x->path);
  if (strncmp(msg, x->path, n) == 0 && strncmp(msg + n, ": ", 2) == 0) msg += n + 2;
  return disp_set_error(DISP_ERR_IO, "fashion-mnist: %s is corrupt (%s)", x->path,
                        errnum == Z_ERRNO ? strerror(errno) : msg);
}

static disp_status idx_read(idx_file *x, void *buf, size_t n) {
  int got = gzread(x->f, buf, (unsigned)n);
  if (got > 0) x->pos += got;
  return got == (int)n ? DISP_OK : idx_short_read(x);
}

/* After the last announced byte: the stream must end there, and reading on
 * makes zlib check the gzip trailer (CRC-32 and length). */
static disp_status idx_finish(idx_file *x) {
  unsigned char extra;
  int got = gzread(x->f, &extra, 1);
  if (got == 1)
    return disp_set_error(DISP_ERR_IO, "fashion-mnist: %s is corrupt: it goes on after the %lld bytes its header announces",
                          x->path, (long long)x->size);
  int errnum = Z_OK;
  gzerror(x->f, &errnum);
  return errnum == Z_OK ? DISP_OK : idx_short_read(x);
}

static void idx_close(idx_file *x) {
  if (x->f) gzclose(x->f);
  x->f = NULL;
}

/* The magic number first, alone: a file of the wrong kind is named as such
 * even when it is shorter than the header expected. */
static disp_status read_header(idx_file *x, unsigned char *h, uint32_t want, const char *what) {
  disp_status st = idx_read(x, h, 4);
  if (st != DISP_OK) return st;
  if (be32(h) != want)
    return disp_set_error(DISP_ERR_IO, "fashion-mnist: %s is not an IDX file of %s: magic number 0x%08x, expected 0x%08x",
                          x->path, what, (unsigned)be32(h), (unsigned)want);
  return idx_read(x, h + 4, (size_t)x->size - 4);
}

/* Reads and checks the images header; *count is the number of images. */
static disp_status read_images_header(idx_file *x, int64_t *count) {
  unsigned char h[IMAGES_HEADER];
  disp_status st = read_header(x, h, IDX_IMAGES_MAGIC, "images (unsigned bytes, 3 dimensions)");
  if (st != DISP_OK) return st;
  uint32_t rows = be32(h + 8), cols = be32(h + 12);
  if (rows != FMNIST_ROWS || cols != FMNIST_COLS)
    return disp_set_error(DISP_ERR_IO, "fashion-mnist: %s holds %ux%u images, expected %dx%d", x->path,
                          (unsigned)rows, (unsigned)cols, FMNIST_ROWS, FMNIST_COLS);
  *count = be32(h + 4);
  x->size = IMAGES_HEADER + *count * FMNIST_PIXELS;
  return DISP_OK;
}

static disp_status read_labels_header(idx_file *x, int64_t *count) {
  unsigned char h[LABELS_HEADER];
  disp_status st = read_header(x, h, IDX_LABELS_MAGIC, "labels (unsigned bytes, 1 dimension)");
  if (st != DISP_OK) return st;
  *count = be32(h + 4);
  x->size = LABELS_HEADER + *count;
  return DISP_OK;
}

/* Bytes to floats a few images at a time, so no second 47 MB buffer. */
static disp_status read_images(idx_file *x, float *out, int64_t count) {
  enum { CHUNK = 64 };
  unsigned char buf[CHUNK * FMNIST_PIXELS];
  for (int64_t i = 0; i < count; i += CHUNK) {
    int64_t k = count - i < CHUNK ? count - i : CHUNK;
    disp_status st = idx_read(x, buf, (size_t)(k * FMNIST_PIXELS));
    if (st != DISP_OK) return st;
    float *dst = out + i * FMNIST_PIXELS;
    for (int64_t p = 0; p < k * FMNIST_PIXELS; p++) dst[p] = (float)buf[p] / 255.0f;
  }
  return DISP_OK;
}

static disp_status read_labels(idx_file *x, int64_t *out, int64_t count) {
  unsigned char *buf = malloc((size_t)count);
  if (!buf) return disp_set_error(DISP_ERR_NO_MEMORY, "fashion-mnist: out of memory for %lld labels", (long long)count);
  disp_status st = idx_read(x, buf, (size_t)count);
  for (int64_t i = 0; st == DISP_OK && i < count; i++) {
    if (buf[i] >= FMNIST_CLASSES)
      st = disp_set_error(DISP_ERR_IO, "fashion-mnist: %s is corrupt: label %d of item %lld is outside 0..%d",
                          x->path, buf[i], (long long)i, FMNIST_CLASSES - 1);
    out[i] = buf[i];
  }
  free(buf);
  return st;
}

/* Both headers read and agreeing; allocate and read both bodies. */
static disp_status read_bodies(idx_file *img, idx_file *lab, int64_t count, fmnist_set *out) {
  out->images = malloc((size_t)count * FMNIST_PIXELS * sizeof(float));
  out->labels = malloc((size_t)count * sizeof(int64_t));
  if (!out->images || !out->labels)
    return disp_set_error(DISP_ERR_NO_MEMORY, "fashion-mnist: out of memory for %lld images", (long long)count);
  disp_status st = read_images(img, out->images, count);
  if (st == DISP_OK) st = idx_finish(img);
  if (st == DISP_OK) st = read_labels(lab, out->labels, count);
  if (st == DISP_OK) st = idx_finish(lab);
  return st;
}

static disp_status load_split(const char *dir, int train, idx_file *img, idx_file *lab, fmnist_set *out) {
  const char *split = train ? "train" : "t10k";
  char name[64];
  int64_t n_img = 0, n_lab = 0;
  snprintf(name, sizeof name, "%s-images-idx3-ubyte.gz", split);
  disp_status st = idx_open(img, dir, name, IMAGES_HEADER);
  if (st == DISP_OK) st = read_images_header(img, &n_img);
  if (st != DISP_OK) return st;
  snprintf(name, sizeof name, "%s-labels-idx1-ubyte.gz", split);
  st = idx_open(lab, dir, name, LABELS_HEADER);
  if (st == DISP_OK) st = read_labels_header(lab, &n_lab);
  if (st != DISP_OK) return st;
  if (n_img != n_lab)
    return disp_set_error(DISP_ERR_IO, "fashion-mnist: %s holds %lld images but %s holds %lld labels", img->path,
                          (long long)n_img, lab->path, (long long)n_lab);
  if (n_img == 0) return disp_set_error(DISP_ERR_IO, "fashion-mnist: %s holds no images", img->path);
  st = read_bodies(img, lab, n_img, out);
  if (st == DISP_OK) out->count = n_img;
  return st;
}

disp_status fmnist_load(const char *dir, int train, fmnist_set *out) {
  if (!out) return disp_set_error(DISP_ERR_INVALID_ARG, "fmnist_load: out is NULL");
  memset(out, 0, sizeof *out);
  if (!dir) dir = FMNIST_DEFAULT_DIR;
  disp_status st = check_dir(dir);
  if (st != DISP_OK) return st;
  idx_file *files = calloc(2, sizeof *files); /* two 4 KB paths: off the stack */
  if (!files) return disp_set_error(DISP_ERR_NO_MEMORY, "fashion-mnist: out of memory");
  st = load_split(dir, train, &files[0], &files[1], out);
  idx_close(&files[0]);
  idx_close(&files[1]);
  free(files);
  if (st != DISP_OK) fmnist_free(out);
  return st;
}

void fmnist_free(fmnist_set *set) {
  if (!set) return;
  free(set->images);
  free(set->labels);
  memset(set, 0, sizeof *set);
}

disp_status fmnist_normalize(fmnist_set *set, float mean, float std) {
  if (!set) return disp_set_error(DISP_ERR_INVALID_ARG, "fmnist_normalize: set is NULL");
  if (!(std > 0.0f) || !isfinite(std) || !isfinite(mean))
    return disp_set_error(DISP_ERR_INVALID_ARG, "fmnist_normalize: expected a finite mean and a positive finite std, got %g and %g",
                          (double)mean, (double)std);
  if (set->count > 0 && !set->images) return disp_set_error(DISP_ERR_INVALID_ARG, "fmnist_normalize: set has no images");
  float inv = 1.0f / std;
  for (int64_t i = 0; i < set->count * FMNIST_PIXELS; i++) set->images[i] = (set->images[i] - mean) * inv;
  return DISP_OK;
}

/* ---- shuffling ------------------------------------------------------- */

uint64_t fmnist_rng_next(uint64_t *state) { return splitmix64_next(state); }

uint64_t fmnist_rng_below(uint64_t *state, uint64_t bound) { return splitmix64_below(state, bound); }

disp_status fmnist_shuffle(int64_t *perm, int64_t n, uint64_t *state) {
  if (!perm || !state || n < 0)
    return disp_set_error(DISP_ERR_INVALID_ARG, "fmnist_shuffle: expected perm and state and n >= 0");
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)fmnist_rng_below(state, (uint64_t)i + 1);
    int64_t tmp = perm[i];
    perm[i] = perm[j];
    perm[j] = tmp;
  }
  return DISP_OK;
}

/* ---- batches --------------------------------------------------------- */

int64_t fmnist_batch_count(const fmnist_set *set, int64_t batch_size) {
  if (!set || batch_size < 1 || set->count < 1) return 0;
  return set->count / batch_size + (set->count % batch_size != 0);
}

static disp_status check_batch_args(const fmnist_set *set, const int64_t *perm, int64_t batch_size,
                                    int64_t index, fmnist_shape shape) {
  if (set->count < 0 || (set->count > 0 && (!set->images || !set->labels)))
    return disp_set_error(DISP_ERR_INVALID_ARG, "fmnist_batch: the set is not one fmnist_load filled");
  if (shape != FMNIST_SHAPE_IMAGE && shape != FMNIST_SHAPE_FLAT)
    return disp_set_error(DISP_ERR_INVALID_ARG, "fmnist_batch: unknown shape %d", (int)shape);
  if (batch_size < 1)
    return disp_set_error(DISP_ERR_INVALID_ARG, "fmnist_batch: batch_size must be positive, got %lld",
                          (long long)batch_size);
  int64_t nb = fmnist_batch_count(set, batch_size);
  if (index < 0 || index >= nb)
    return disp_set_error(DISP_ERR_INVALID_ARG, "fmnist_batch: batch %lld is outside 0..%lld (%lld images in batches of %lld)",
                          (long long)index, (long long)nb - 1, (long long)set->count, (long long)batch_size);
  int64_t start = index * batch_size, end = start + batch_size < set->count ? start + batch_size : set->count;
  for (int64_t k = start; perm && k < end; k++)
    if (perm[k] < 0 || perm[k] >= set->count)
      return disp_set_error(DISP_ERR_INVALID_ARG, "fmnist_batch: perm[%lld] = %lld is outside 0..%lld", (long long)k,
                            (long long)perm[k], (long long)set->count - 1);
  return DISP_OK;
}

disp_status fmnist_batch(const fmnist_set *set, const int64_t *perm, int64_t batch_size, int64_t index,
                         fmnist_shape shape, disp_tensor **images, disp_tensor **labels) {
  if (images) *images = NULL;
  if (labels) *labels = NULL;
  if (!set || !images || !labels)
    return disp_set_error(DISP_ERR_INVALID_ARG, "fmnist_batch: set, images and labels must not be NULL");
  disp_status st = check_batch_args(set, perm, batch_size, index, shape);
  if (st != DISP_OK) return st;
  int64_t start = index * batch_size;
  int64_t b = set->count - start < batch_size ? set->count - start : batch_size;
  int64_t image_sizes[4] = {b, 1, FMNIST_ROWS, FMNIST_COLS}, flat_sizes[2] = {b, FMNIST_PIXELS};
  disp_device cpu = disp_device_make(DISP_BACKEND_CPU, -1);
  st = shape == FMNIST_SHAPE_IMAGE ? disp_tensor_empty(image_sizes, 4, DISP_DTYPE_FLOAT32, cpu, images)
                                   : disp_tensor_empty(flat_sizes, 2, DISP_DTYPE_FLOAT32, cpu, images);
  if (st == DISP_OK) st = disp_tensor_empty(&b, 1, DISP_DTYPE_INT64, cpu, labels);
  if (st != DISP_OK) {
    disp_tensor_release(*images);
    *images = NULL;
    return st;
  }
  float *img = disp_tensor_data_ptr(*images);
  int64_t *lab = disp_tensor_data_ptr(*labels);
  for (int64_t k = 0; k < b; k++) {
    int64_t row = perm ? perm[start + k] : start + k;
    memcpy(img + k * FMNIST_PIXELS, set->images + row * FMNIST_PIXELS, FMNIST_PIXELS * sizeof(float));
    lab[k] = set->labels[row];
  }
  return DISP_OK;
}
