/*
 * stl_order.c - libstdc++'s selection and sorting algorithms (bits/stl_algo.h
 * and bits/stl_heap.h of GCC's libstdc++), written again in C so that ties
 * come out in the order 1.13's topk leaves them (stl_order.h).
 */
#include "stl_order.h"

#include <math.h>

#define THRESHOLD 16 /* libstdc++'s _S_threshold */

static int before(stl_cmp c, const stl_elem *x, const stl_elem *y) {
  int xn = isnan(x->v), yn = isnan(y->v);
  if (c.largest) return (xn && !yn) || x->v > y->v;
  return (!xn && yn) || x->v < y->v;
}

static void swap(stl_elem *a, stl_elem *b) {
  stl_elem t = *a;
  *a = *b;
  *b = t;
}

static int64_t lg(int64_t n) {
  int64_t k = 0;
  while (n > 1) n >>= 1, k++;
  return k;
}

/* ---- heap ---------------------------------------------------------------- */

static void push_heap(stl_elem *a, int64_t hole, int64_t top, stl_elem v, stl_cmp c) {
  int64_t parent = (hole - 1) / 2;
  while (hole > top && before(c, &a[parent], &v)) {
    a[hole] = a[parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  a[hole] = v;
}

static void adjust_heap(stl_elem *a, int64_t hole, int64_t len, stl_elem v, stl_cmp c) {
  int64_t top = hole, child = hole;
  while (child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (before(c, &a[child], &a[child - 1])) child--;
    a[hole] = a[child];
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    a[hole] = a[child - 1];
    hole = child - 1;
  }
  push_heap(a, hole, top, v, c);
}

static void make_heap(stl_elem *a, int64_t len, stl_cmp c) {
  if (len < 2) return;
  for (int64_t parent = (len - 2) / 2;; parent--) {
    adjust_heap(a, parent, len, a[parent], c);
    if (parent == 0) return;
  }
}

/* __pop_heap(first, last, result): result's value sifts in from the top */
static void pop_heap(stl_elem *a, int64_t len, stl_elem *result, stl_cmp c) {
  stl_elem v = *result;
  *result = a[0];
  adjust_heap(a, 0, len, v, c);
}

static void heap_select(stl_elem *a, int64_t mid, int64_t n, stl_cmp c) {
  make_heap(a, mid, c);
  for (int64_t i = mid; i < n; i++)
    if (before(c, &a[i], &a[0])) pop_heap(a, mid, &a[i], c);
}

static void sort_heap(stl_elem *a, int64_t len, stl_cmp c) {
  while (len > 1) {
    len--;
    pop_heap(a, len, &a[len], c);
  }
}

void disp__stl_partial_sort(stl_elem *a, int64_t mid, int64_t n, stl_cmp c) {
  heap_select(a, mid, n, c);
  sort_heap(a, mid, c);
}

/* ---- insertion sort and partition ---------------------------------------- */

static void unguarded_linear_insert(stl_elem *a, int64_t last, stl_cmp c) {
  stl_elem v = a[last];
  int64_t next = last - 1;
  while (before(c, &v, &a[next])) {
    a[last] = a[next];
    last = next--;
  }
  a[last] = v;
}

static void insertion_sort(stl_elem *a, int64_t n, stl_cmp c) {
  for (int64_t i = 1; i < n; i++) {
    if (before(c, &a[i], &a[0])) {
      stl_elem v = a[i];
      for (int64_t k = i; k > 0; k--) a[k] = a[k - 1];
      a[0] = v;
    } else {
      unguarded_linear_insert(a, i, c);
    }
  }
}

static void move_median_to_first(stl_elem *r, stl_elem *a, stl_elem *b, stl_elem *m, stl_cmp c) {
  if (before(c, a, b)) {
    if (before(c, b, m)) swap(r, b);
    else if (before(c, a, m)) swap(r, m);
    else swap(r, a);
  } else if (before(c, a, m)) {
    swap(r, a);
  } else if (before(c, b, m)) {
    swap(r, m);
  } else {
    swap(r, b);
  }
}

/* __unguarded_partition_pivot over [lo, hi): the cut's index */
static int64_t partition_pivot(stl_elem *a, int64_t lo, int64_t hi, stl_cmp c) {
  int64_t mid = lo + (hi - lo) / 2;
  move_median_to_first(&a[lo], &a[lo + 1], &a[mid], &a[hi - 1], c);
  int64_t f = lo + 1, l = hi;
  for (;;) {
    while (before(c, &a[f], &a[lo])) f++;
    l--;
    while (before(c, &a[lo], &a[l])) l--;
    if (!(f < l)) return f;
    swap(&a[f], &a[l]);
    f++;
  }
}

void disp__stl_nth_element(stl_elem *a, int64_t nth, int64_t n, stl_cmp c) {
  if (n == 0 || nth == n) return;
  int64_t lo = 0, hi = n, depth = lg(n) * 2;
  while (hi - lo > 3) {
    if (depth == 0) {
      heap_select(a + lo, nth + 1 - lo, hi - lo, c);
      swap(&a[lo], &a[nth]);
      return;
    }
    depth--;
    int64_t cut = partition_pivot(a, lo, hi, c);
    if (cut <= nth) lo = cut;
    else hi = cut;
  }
  insertion_sort(a + lo, hi - lo, c);
}

static void introsort_loop(stl_elem *a, int64_t lo, int64_t hi, int64_t depth, stl_cmp c) {
  while (hi - lo > THRESHOLD) {
    if (depth == 0) {
      disp__stl_partial_sort(a + lo, hi - lo, hi - lo, c);
      return;
    }
    depth--;
    int64_t cut = partition_pivot(a, lo, hi, c);
    introsort_loop(a, cut, hi, depth, c);
    hi = cut;
  }
}

void disp__stl_sort(stl_elem *a, int64_t n, stl_cmp c) {
  if (n == 0) return;
  introsort_loop(a, 0, n, lg(n) * 2, c);
  if (n > THRESHOLD) {
    insertion_sort(a, THRESHOLD, c);
    for (int64_t i = THRESHOLD; i < n; i++) unguarded_linear_insert(a, i, c);
  } else {
    insertion_sort(a, n, c);
  }
}
