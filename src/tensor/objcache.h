/*
 * objcache.h - a small per-thread cache of freed fixed-size blocks.
 *
 * Every op makes and frees a tensor object, its storage object, a version
 * counter and, for small tensors, a small data block. glibc's malloc costs
 * ~70-250 instructions a call here (no thread cache for these paths), the
 * dispatch itself ~30; reusing the thread's last freed blocks keeps small
 * ops cheap. Each cache keeps at most DISP__CACHE_DEPTH blocks of one kind;
 * a thread's blocks are freed when it exits.
 */
#ifndef DISP_OBJCACHE_H
#define DISP_OBJCACHE_H

#include <stddef.h>

typedef enum disp__cache_kind {
  DISP__CACHE_TENSOR,
  DISP__CACHE_STORAGE,
  DISP__CACHE_VERSION,
  DISP__CACHE_SMALL_DATA,  /* CPU data blocks of at most DISP__SMALL_DATA bytes */
  DISP__CACHE_MEDIUM_DATA, /* and of at most DISP__MEDIUM_DATA bytes */
  DISP__CACHE_AG_META,     /* src/autograd's per-tensor data (ag_meta) */
  DISP__CACHE_KINDS
} disp__cache_kind;

/* A medium block is past glibc's per-thread cache (1 KiB), so a tensor of
 * a few hundred floats cost a malloc and a free of ~150 instructions each;
 * 32 of them are 128 KiB a thread at most. */
enum { DISP__CACHE_DEPTH = 32, DISP__SMALL_DATA = 512, DISP__MEDIUM_DATA = 4096 };

/* A block of `size` bytes (always the same size per kind), or NULL on OOM. */
void *disp__cache_get(disp__cache_kind kind, size_t size);
/* Gives a block back (NULL ok); freed for real when the cache is full. */
void disp__cache_put(disp__cache_kind kind, void *block);

#endif
