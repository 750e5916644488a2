/*
 * stl_order.h - libstdc++'s std::nth_element, std::partial_sort and
 * std::sort, step for step, over (value, index) pairs.
 *
 * 1.13's CPU topk orders each slice with these (TopKImpl.h), and they are
 * not stable: which of two equal values comes first, and so the indices
 * topk returns for ties, is whatever libstdc++'s introselect, heap select
 * and introsort leave. Reproducing their exact steps (pivot choice, the
 * partition's swaps, the insertion-sort threshold of 16, the heap's sift)
 * gives 1.13's indices for ties too. Values are long double so that every
 * int64 and every double is held exactly.
 *
 * Thread safety: pure functions of their arguments.
 */
#ifndef DISP_STL_ORDER_H
#define DISP_STL_ORDER_H

#include <stdint.h>

typedef struct stl_elem {
  long double v;
  int64_t i;
} stl_elem;

/* The order: 1 when a goes before b. largest: NaN first, then descending;
 * else ascending, NaN last (1.13's topk comparators). */
typedef struct stl_cmp {
  int largest;
} stl_cmp;

/* std::nth_element(first, first + nth, first + n, cmp) */
void disp__stl_nth_element(stl_elem *a, int64_t nth, int64_t n, stl_cmp cmp);

/* std::partial_sort(first, first + mid, first + n, cmp) */
void disp__stl_partial_sort(stl_elem *a, int64_t mid, int64_t n, stl_cmp cmp);

/* std::sort(first, first + n, cmp) */
void disp__stl_sort(stl_elem *a, int64_t n, stl_cmp cmp);

#endif
