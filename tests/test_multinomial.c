/*
 * test_multinomial.c - aten::multinomial's samples follow their weights.
 *
 * libdispatch's generator is not 1.13's (README, difference 10), so the
 * reference cases (tests/data/ops/multinomial.txt) check errors, shapes
 * and per-sample properties only; here many draws after a fixed seed are
 * counted. The counts are deterministic (disp_manual_seed), and the bounds
 * are six standard deviations wide, so a correct sampler passes with any
 * seed and a sampler off by a percentage point or more fails.
 */
#include <math.h>
#include <string.h>

#include "test.h"
#include "disp/aten.h"
#include "disp/random.h"

#define NCAT 4
static const double weights[NCAT] = {1.0, 0.0, 3.0, 4.0}; /* probabilities 1/8, 0, 3/8, 4/8 */

static disp_tensor *weights_tensor(void) {
  int64_t n = NCAT;
  disp_tensor *t = NULL;
  if (disp_tensor_empty(&n, 1, DISP_DTYPE_FLOAT64, disp_device_make(DISP_BACKEND_CPU, 0), &t) != DISP_OK) return NULL;
  memcpy(disp_tensor_data_ptr(t), weights, sizeof weights);
  return t;
}

/* counts[k] of category k over `draws` samples, drawn `per_call` at a time */
static int count(bool replacement, int64_t per_call, int64_t draws, int64_t *counts) {
  disp_tensor *w = weights_tensor();
  if (!w) return 0;
  memset(counts, 0, NCAT * sizeof *counts);
  for (int64_t done = 0; done < draws; done += per_call) {
    disp_tensor *s = NULL;
    if (disp_aten_multinomial(w, per_call, replacement, NULL, &s) != DISP_OK) {
      disp_tensor_release(w);
      return 0;
    }
    const int64_t *v = disp_tensor_data_ptr(s);
    for (int64_t k = 0; k < per_call; k++) counts[v[k]]++;
    disp_tensor_release(s);
  }
  disp_tensor_release(w);
  return 1;
}

/* |count - n p| within six standard deviations of a binomial */
static int near(int64_t got, int64_t n, double p) {
  double sd = sqrt(n * p * (1 - p));
  return fabs((double)got - n * p) <= 6 * sd + 1e-9;
}

TEST(with_replacement_follows_the_weights) {
  disp_manual_seed(20);
  int64_t c[NCAT], n = 40000;
  ASSERT_TRUE(count(true, 100, n, c));
  ASSERT_EQ_INT(c[1], 0);
  for (int k = 0; k < NCAT; k++) ASSERT_TRUE(near(c[k], n, weights[k] / 8));
  return 0;
}

TEST(one_sample_without_replacement_follows_the_weights) {
  disp_manual_seed(21);
  int64_t c[NCAT], n = 20000;
  ASSERT_TRUE(count(false, 1, n, c));
  ASSERT_EQ_INT(c[1], 0);
  for (int k = 0; k < NCAT; k++) ASSERT_TRUE(near(c[k], n, weights[k] / 8));
  return 0;
}

/* Two draws without replacement: the first is category i with p_i, the
 * second j with p_j / (1 - p_i). Category 3 (p 1/2) is first in half the
 * pairs; category 0 appears in a pair with probability
 * 1/8 + 3/8 * (1/8)/(5/8) + 4/8 * (1/8)/(4/8) = 0.325. */
TEST(pairs_without_replacement_are_distinct_and_weighted) {
  disp_manual_seed(22);
  disp_tensor *w = weights_tensor();
  ASSERT_TRUE(w != NULL);
  int64_t first3 = 0, has0 = 0, n = 20000;
  for (int64_t i = 0; i < n; i++) {
    disp_tensor *s = NULL;
    ASSERT_OK(disp_aten_multinomial(w, 2, false, NULL, &s));
    const int64_t *v = disp_tensor_data_ptr(s);
    int distinct = v[0] != v[1], zero = v[0] == 1 || v[1] == 1;
    first3 += v[0] == 3;
    has0 += v[0] == 0 || v[1] == 0;
    disp_tensor_release(s);
    ASSERT_TRUE(distinct);
    ASSERT_FALSE(zero);
  }
  disp_tensor_release(w);
  ASSERT_TRUE(near(first3, n, 0.5));
  ASSERT_TRUE(near(has0, n, 0.325));
  return 0;
}

TEST(same_seed_same_samples) {
  disp_tensor *w = weights_tensor(), *a = NULL, *b = NULL;
  ASSERT_TRUE(w != NULL);
  disp_manual_seed(7);
  ASSERT_OK(disp_aten_multinomial(w, 16, true, NULL, &a));
  disp_manual_seed(7);
  ASSERT_OK(disp_aten_multinomial(w, 16, true, NULL, &b));
  int same = !memcmp(disp_tensor_data_ptr(a), disp_tensor_data_ptr(b), 16 * sizeof(int64_t));
  disp_tensor_release(a), disp_tensor_release(b), disp_tensor_release(w);
  ASSERT_TRUE(same);
  return 0;
}

TEST(a_generator_argument_is_refused_clearly) {
  disp_tensor *w = weights_tensor(), *s = NULL;
  ASSERT_TRUE(w != NULL);
  int dummy = 0;
  disp_status st = disp_aten_multinomial(w, 1, true, &dummy, &s);
  disp_tensor_release(w);
  ASSERT_TRUE(st != DISP_OK);
  ASSERT_TRUE(s == NULL);
  ASSERT_CONTAINS(disp_last_error(), "Generator");
  return 0;
}

TEST_LIST = {TEST_ENTRY(with_replacement_follows_the_weights),
             TEST_ENTRY(one_sample_without_replacement_follows_the_weights),
             TEST_ENTRY(pairs_without_replacement_are_distinct_and_weighted), TEST_ENTRY(same_seed_same_samples),
             TEST_ENTRY(a_generator_argument_is_refused_clearly), TEST_END};

TEST_MAIN()
