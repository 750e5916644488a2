/*
 * host_cache.h - a bounded, process-wide cache of large freed CPU blocks.
 *
 * Why: glibc serves a block above its mmap threshold with fresh pages from
 * the kernel, and gives large free space at the top of the heap back
 * (trim), so a training step that makes and frees the same few megabyte
 * tensors every iteration pays a page fault and a zeroed page for every
 * 4 KiB of them, every step (about a third of the CNN step of
 * bench/train_step). The CPU allocator (allocator.c) hands blocks of at
 * least DISP__HOST_CACHE_MIN bytes here when they are freed and asks here
 * first for a block of the same size class, as PyTorch's
 * CPUCachingAllocator reuses freed blocks of the same size.
 *
 * Bounds (the cache never keeps what the user freed without limit):
 *  - at most DISP__HOST_CACHE_BLOCKS blocks and the byte limit, by default
 *    DISP__HOST_CACHE_DEFAULT_MB MiB, set by the environment variable
 *    DISP_HOST_CACHE_MB (read once; 0 turns the cache off); the oldest
 *    blocks are freed first to make room;
 *  - a block nobody reused within DISP__HOST_CACHE_AGE later large
 *    allocations is freed (a program whose sizes changed keeps nothing);
 *  - disp_shutdown() frees every cached block (disp__host_cache_release).
 * Under AddressSanitizer a cached block is poisoned, so a use after free
 * is still reported (as a use of poisoned memory).
 *
 * Size classes: a request is rounded up to a multiple of 4 KiB and only a
 * block of exactly that class is reused. Thread-safe (one mutex; every
 * block it guards is at least 64 KiB, so the lock is cheap beside the
 * memory it saves touching).
 */
#ifndef DISP_HOST_CACHE_H
#define DISP_HOST_CACHE_H

#include <stddef.h>

enum {
  DISP__HOST_CACHE_MIN = 64 * 1024, /* smaller blocks: malloc's own bins */
  DISP__HOST_CACHE_BLOCKS = 128,
  DISP__HOST_CACHE_AGE = 1024,
  DISP__HOST_CACHE_DEFAULT_MB = 512
};

/* The size class of an allocation of `size` bytes (>= DISP__HOST_CACHE_MIN):
 * size rounded up to 4 KiB, or 0 when that overflows. */
size_t disp__host_cache_class(size_t size);

/* A block of `cls` bytes (a value of disp__host_cache_class): a cached one
 * when there is one, else malloc's. NULL on OOM. The caller owns it and
 * gives it back with disp__host_cache_put (or free). */
void *disp__host_cache_get(size_t cls);

/* Takes ownership of `block` (NULL ok) of class `cls`: kept for reuse
 * within the bounds above, or freed. */
void disp__host_cache_put(void *block, size_t cls);

/* Frees every cached block (disp_shutdown calls it). */
void disp__host_cache_release(void);

/*
 * disp__host_cache_set_limit - sets the byte limit (0: off, cached blocks
 * freed at once) and returns the previous one; for tests and benchmarks.
 * disp__host_cache_stats - the blocks and bytes cached now (either NULL ok).
 */
size_t disp__host_cache_set_limit(size_t bytes);
void disp__host_cache_stats(size_t *blocks, size_t *bytes);

#endif
