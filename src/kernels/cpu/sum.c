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

/* Level 0 is the rows of one block of 2^lp rows, summed in registers
 * (the whole acc array would not fit in 16 vector registers and would
 * spill every row); a full block then folds into level 1, and every level
 * that completes folds upward: the additions and their order are those of
 * accumulating row by row. */
static void fold_up(V acc[LEVELS][ILP], int64_t rows_done, int lp) {
  uint64_t c = (uint64_t)rows_done, mask = ((uint64_t)1 << lp) - 1;
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
  const int64_t block = (int64_t)1 << lp;
  for (int64_t b0 = 0; b0 < nrows; b0 += block) {
    int64_t end = nrows - b0 < block ? nrows : b0 + block;
    V s0 = acc[0][0], s1 = acc[0][1], s2 = acc[0][2], s3 = acc[0][3];
    for (const float *r = a + b0 * row, *e = a + end * row; r < e; r += row) {
      s0 = VADD(s0, VLOAD(r));
      s1 = VADD(s1, VLOAD(r + W));
      s2 = VADD(s2, VLOAD(r + 2 * W));
      s3 = VADD(s3, VLOAD(r + 3 * W));
    }
    acc[0][0] = s0, acc[0][1] = s1, acc[0][2] = s2, acc[0][3] = s3;
    if (end - b0 == block) fold_up(acc, end, lp);
  }
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
