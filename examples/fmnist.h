/*
 * fmnist.h - reading Fashion-MNIST for the training examples (mlp.c, cnn.c).
 *
 * The data set is the four gzipped IDX files Debian's dataset-fashion-mnist
 * package installs in FMNIST_DEFAULT_DIR:
 *   train-images-idx3-ubyte.gz  train-labels-idx1-ubyte.gz   (60000 images)
 *   t10k-images-idx3-ubyte.gz   t10k-labels-idx1-ubyte.gz    (10000 images)
 * zlib's gzread decompresses them. An IDX file is a big-endian header (magic
 * 0x00000803 / 0x00000801: unsigned bytes in 3 / 1 dimensions, then one
 * uint32 per dimension) followed by the bytes.
 *
 * Images come back as float32 in [0, 1] (byte / 255, what torchvision's
 * ToTensor gives), NOT normalized: the examples choose whether to call
 * fmnist_normalize. Labels come back as int64 class indices 0..9.
 *
 * This is example code (a static library next to the examples), not part of
 * libdispatch's API; errors still follow the library's convention: a
 * disp_status, with the message in disp_last_error() for the caller to print.
 */
#ifndef FMNIST_H
#define FMNIST_H

#include <stdint.h>

#include <disp.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FMNIST_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define FMNIST_ROWS 28
#define FMNIST_COLS 28
#define FMNIST_PIXELS (FMNIST_ROWS * FMNIST_COLS)
#define FMNIST_CLASSES 10
/* Mean and standard deviation of the training images' [0, 1] pixels
 * (0.28604 and 0.35302 computed over all 60000), the usual Normalize values. */
#define FMNIST_MEAN 0.2860f
#define FMNIST_STD 0.3530f

/* One split, owned by the caller after fmnist_load; free with fmnist_free. */
typedef struct fmnist_set {
  int64_t count;   /* number of images */
  float *images;   /* count x FMNIST_PIXELS, row-major, image after image */
  int64_t *labels; /* count class indices, 0..FMNIST_CLASSES-1 */
} fmnist_set;

/*
 * fmnist_load - read the training split (train != 0) or the test split
 * (train == 0) from `dir` (NULL: FMNIST_DEFAULT_DIR) into *out, which owns
 * the arrays afterwards. The headers are checked (magic numbers, 28x28
 * images, as many labels as images, labels 0..9) and so is the gzip
 * checksum; anything after the last image or label is an error.
 * Errors (disp_last_error() says which file and what is wrong; *out is left
 * empty, nothing leaked):
 *   DISP_ERR_IO - the directory or a file is missing or unreadable (the
 *     message says to install Debian's dataset-fashion-mnist package or pass
 *     --data DIR), a file is truncated, not gzip, fails its checksum, or its
 *     header is wrong;
 *   DISP_ERR_INVALID_ARG - out is NULL, or the path is too long;
 *   DISP_ERR_NO_MEMORY.
 * Thread-safe (each call reads its own files into its own arrays).
 */
disp_status fmnist_load(const char *dir, int train, fmnist_set *out);

/* fmnist_free - free the arrays and empty *set. NULL and an empty set are
 * fine. Not thread-safe for one set. */
void fmnist_free(fmnist_set *set);

/*
 * fmnist_normalize - x = (x - mean) / std on every pixel, in place
 * (torchvision's Normalize; Fashion-MNIST's usual values are FMNIST_MEAN and
 * FMNIST_STD). Errors: DISP_ERR_INVALID_ARG for a NULL set or a std that is
 * not a positive finite number (nothing changed). Not thread-safe for one set.
 */
disp_status fmnist_normalize(fmnist_set *set, float mean, float std);

/*
 * A small random generator, the same on every machine: SplitMix64 (Steele,
 * Lea and Flood, "Fast splittable pseudorandom number generators", 2014).
 * The state is any uint64_t, e.g. the seed itself. One step:
 *   state += 0x9E3779B97F4A7C15;  z = state;
 *   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
 *   z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
 *   return z ^ (z >> 31);                       (all arithmetic mod 2^64)
 * fmnist_rng_next advances *state and returns the next value.
 * Not thread-safe for one state.
 */
uint64_t fmnist_rng_next(uint64_t *state);

/*
 * fmnist_rng_below - a uniform integer in [0, bound) from *state, unbiased:
 * with t = 2^64 mod bound, draw values until one is >= t and return it mod
 * bound. bound 0 returns 0 without drawing. Not thread-safe for one state.
 */
uint64_t fmnist_rng_below(uint64_t *state, uint64_t bound);

/*
 * fmnist_shuffle - fill perm[0..n) with a random permutation of 0..n-1:
 * perm[i] = i, then Fisher-Yates from the end: for i = n-1 down to 1,
 * j = fmnist_rng_below(state, i + 1), swap perm[i] and perm[j]. The same
 * state gives the same order on every machine; *state advances, so calling
 * again with the same state variable gives the next epoch's order (a fresh
 * permutation each epoch, as PyTorch's RandomSampler draws randperm(n)).
 * Errors: DISP_ERR_INVALID_ARG for NULL perm or state or n < 0.
 * Not thread-safe for one state.
 */
disp_status fmnist_shuffle(int64_t *perm, int64_t n, uint64_t *state);

/* The shape of the images tensor fmnist_batch makes. */
typedef enum fmnist_shape {
  FMNIST_SHAPE_IMAGE, /* [B, 1, 28, 28], for convolutions */
  FMNIST_SHAPE_FLAT   /* [B, 784], for an MLP */
} fmnist_shape;

/*
 * fmnist_batch_count - how many batches of `batch_size` cover the set, the
 * last one possibly smaller (PyTorch's DataLoader with drop_last=False).
 * 0 for a NULL set or batch_size < 1. Thread-safe.
 */
int64_t fmnist_batch_count(const fmnist_set *set, int64_t batch_size);

/*
 * fmnist_batch - batch number `index`: rows perm[index * batch_size + k] of
 * the set for k in 0..B-1, where B is batch_size, or what is left for the
 * last batch. perm has set->count entries (from fmnist_shuffle); NULL takes
 * the rows in order (for evaluation). *images is a new contiguous float32
 * CPU tensor of `shape`, *labels a new int64 tensor [B].
 * Errors: DISP_ERR_INVALID_ARG (NULL arguments, batch_size < 1, index
 * outside 0..fmnist_batch_count-1, a perm entry outside 0..count-1, an
 * unknown shape), DISP_ERR_NO_MEMORY; *images and *labels are then NULL.
 * Thread-safe (reads the set only).
 */
disp_status fmnist_batch(const fmnist_set *set, const int64_t *perm, int64_t batch_size,
                         int64_t index, fmnist_shape shape, disp_tensor **images,
                         disp_tensor **labels);

#ifdef __cplusplus
}
#endif

#endif /* FMNIST_H */
