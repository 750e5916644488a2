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

/* Level 0 is the rows of one block of 2^lp rows, summed from zero in
 * registers; a full block then folds into level 1 (also in registers), and
 * every 2^lp blocks level 1 folds into level 2, and so on up (levels 2 and
 * 3 in memory: they are touched once in 256 blocks or more). The additions
 * and their order are those of accumulating row by row into levels that
 * fold when they fill (1.13's multi_row_sum); only where the partial sums
 * live changed, which took the cost of a 1M sum from 0.37 to 0.2
 * instructions a float. */

/* Level 1 (l1) folds into level 2 (up[0]) after `blocks` full blocks (a
 * multiple of 2^lp), and each upper level that filled into the next. */
static void fold_upper(V up[LEVELS - 2][ILP], V l1[ILP], uint64_t blocks, int lp) {
  const uint64_t mask = ((uint64_t)1 << lp) - 1;
  for (int k = 0; k < ILP; k++) {
    up[0][k] = VADD(up[0][k], l1[k]);
    l1[k] = VSET1(0.0f);
  }
  for (int j = 1; j < LEVELS - 2 && ((blocks >>= lp) & mask) == 0; j++)
    for (int k = 0; k < ILP; k++) {
      up[j][k] = VADD(up[j][k], up[j - 1][k]);
      up[j - 1][k] = VSET1(0.0f);
    }
}

float DISP_CPU_FN(sum_f32)(const float *a, int64_t n) {
  _Static_assert(ILP == 4 && LEVELS == 4, "the row loop and the final fold are written for 4 and 4");
  const int64_t row = ILP * W, nrows = n / row;
  int lp = ceil_log2(nrows) / LEVELS;
  if (lp < 4) lp = 4;
  const int64_t block = (int64_t)1 << lp;
  const uint64_t mask = (uint64_t)block - 1;
  V up[LEVELS - 2][ILP], l1[ILP];
  for (int k = 0; k < ILP; k++) l1[k] = up[0][k] = up[1][k] = VSET1(0.0f);
  V l1_0 = l1[0], l1_1 = l1[1], l1_2 = l1[2], l1_3 = l1[3];
  V s0 = VSET1(0.0f), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t b0 = 0; b0 < nrows; b0 += block) {
    const int64_t end = nrows - b0 < block ? nrows : b0 + block;
    const float *r = a + b0 * row, *e = a + end * row;
    s0 = s1 = s2 = s3 = VSET1(0.0f);
    for (; r + 2 * row <= e; r += 2 * row) { /* two rows a turn, each sum in row order */
      s0 = VADD(s0, VLOAD(r));
      s1 = VADD(s1, VLOAD(r + W));
      s2 = VADD(s2, VLOAD(r + 2 * W));
      s3 = VADD(s3, VLOAD(r + 3 * W));
      s0 = VADD(s0, VLOAD(r + 4 * W));
      s1 = VADD(s1, VLOAD(r + 5 * W));
      s2 = VADD(s2, VLOAD(r + 6 * W));
      s3 = VADD(s3, VLOAD(r + 7 * W));
    }
    if (r < e) {
      s0 = VADD(s0, VLOAD(r));
      s1 = VADD(s1, VLOAD(r + W));
      s2 = VADD(s2, VLOAD(r + 2 * W));
      s3 = VADD(s3, VLOAD(r + 3 * W));
    }
    if (end - b0 < block) break; /* a last partial block stays level 0 */
    l1_0 = VADD(l1_0, s0), l1_1 = VADD(l1_1, s1), l1_2 = VADD(l1_2, s2), l1_3 = VADD(l1_3, s3);
    s0 = s1 = s2 = s3 = VSET1(0.0f);
    if (((uint64_t)(end >> lp) & mask) == 0) {
      l1[0] = l1_0, l1[1] = l1_1, l1[2] = l1_2, l1[3] = l1_3;
      fold_upper(up, l1, (uint64_t)(end >> lp), lp);
      l1_0 = l1[0], l1_1 = l1[1], l1_2 = l1[2], l1_3 = l1[3];
    }
  }
  /* level 0 (a last partial block) then each level above, in order */
  V l1v[ILP] = {l1_0, l1_1, l1_2, l1_3}, sv[ILP] = {s0, s1, s2, s3};
  for (int k = 0; k < ILP; k++) sv[k] = VADD(VADD(VADD(sv[k], l1v[k]), up[0][k]), up[1][k]);
  /* what is left after the rows: whole vectors, then one padded vector */
  int64_t i = nrows * row;
  V t = VSET1(0.0f);
  for (; i + W <= n; i += W) t = VADD(t, VLOAD(a + i));
  if (i < n) t = VADD(t, disp__vload_part(a + i, n - i, 0.0f));
  V total = sv[0];
  for (int k = 1; k < ILP; k++) total = VADD(total, sv[k]);
  return disp__hsum(VADD(total, t));
}
