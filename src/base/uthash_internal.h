/*
 * uthash_internal.h - uthash as the library uses it: through the allocation
 * seam (Note [Allocation seam] in alloc_internal.h), and never exiting on
 * out of memory. uthash's default reaction is exit(-1); with
 * HASH_NONFATAL_OOM a failed HASH_ADD leaves the item out of the table, so
 * each caller checks with HASH_FIND (or a flag set by uthash_nonfatal_oom)
 * and reports DISP_ERR_NO_MEMORY. Include this instead of <uthash.h>.
 */
#ifndef DISP_UTHASH_INTERNAL_H
#define DISP_UTHASH_INTERNAL_H

#include "alloc_internal.h"

#define HASH_NONFATAL_OOM 1
#define uthash_malloc(sz) disp__malloc(sz)
#define uthash_free(ptr, sz) disp__free(ptr)
#include <uthash.h>

#endif
