/*
 * cpu/sum.c - the float32 sum of the kernel table: 1.13's cascade sum in
 * float (ReduceOps' cascade_sum): rows of ILP vectors go into a level-0
 * accumulator, which folds into the next level every 2^lp rows, and so on
 * up; the levels, then the ILP vectors, then the lanes are added at the
 * end. The error grows with log(n), not n, and no double is involved.
 */
#include "cpu_kernels_internal.h"

enum { ILP = 4, LEVELS = 4 };

static int ceil_log2(int64_t x) {
  int r = 0;
  while (((int64_t)1 << r) < x) r++;
  return r;
}

/* acc[0] += the row; then every level that completes folds upward. */
static void cascade_add(V acc[LEVELS][ILP], const float *row, int64_t i, int lp) {
  for (int k = 0; k < ILP; k++) acc[0][k] = VADD(acc[0][k], VLOAD(row + k * W));
  uint64_t c = (uint64_t)i + 1, mask = ((uint64_t)1 << lp) - 1;
  for (int j = 1; j < LEVELS && (c & mask) == 0; j++, c >>= lp)
    for (int k = 0; k < ILP; k++) {
      acc[j][k] = VADD(acc[j][k], acc[j - 1][k]);
      acc[j - 1][k] = VSET1(0.0f);
    }
}

float DISP_CPU_FN(sum_f32)(const float *a, int64_t n) {
  const int64_t row = ILP * W, nrows = n / row;
  int lp = ceil_log2(nrows) / LEVELS;
  if (lp < 4) lp = 4;
  V acc[LEVELS][ILP];
  for (int j = 0; j < LEVELS; j++)
    for (int k = 0; k < ILP; k++) acc[j][k] = VSET1(0.0f);
  for (int64_t i = 0; i < nrows; i++) cascade_add(acc, a + i * row, i, lp);
  for (int j = 1; j < LEVELS; j++)
    for (int k = 0; k < ILP; k++) acc[0][k] = VADD(acc[0][k], acc[j][k]);
  /* what is left after the rows: whole vectors, then one padded vector */
  int64_t i = nrows * row;
  V t = VSET1(0.0f);
  for (; i + W <= n; i += W) t = VADD(t, VLOAD(a + i));
  if (i < n) t = VADD(t, disp__vload_part(a + i, n - i, 0.0f));
  V total = acc[0][0];
  for (int k = 1; k < ILP; k++) total = VADD(total, acc[0][k]);
  return disp__hsum(VADD(total, t));
}
