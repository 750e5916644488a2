/*
 * uthash_internal.h - uthash as the library uses it: through the allocation
 * seam (Note [Allocation seam] in alloc_internal.h), and never exiting on
 * out of memory. uthash's default reaction is exit(-1); with
 * HASH_NONFATAL_OOM a failed HASH_ADD leaves the item out of the table, so
 * each caller checks with DISP_HASH_ADDED (or HASH_FIND) and reports
 * DISP_ERR_NO_MEMORY. Include this instead of <uthash.h>.
 */
#ifndef DISP_UTHASH_INTERNAL_H
#define DISP_UTHASH_INTERNAL_H

#include "alloc_internal.h"

#define HASH_NONFATAL_OOM 1
#define uthash_malloc(sz) disp__malloc(sz)
#define uthash_free(ptr, sz) disp__free(ptr)
#include <uthash.h>

/* After HASH_ADD*: whether `item` went in (uthash leaves hh.tbl NULL when
 * it ran out of memory and rolled the add back). */
#define DISP_HASH_ADDED(item) ((item)->hh.tbl != NULL)

#endif
