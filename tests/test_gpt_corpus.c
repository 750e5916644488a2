/*
 * test_gpt_corpus.c - the GPT example's corpus reader (examples/gpt/corpus.h)
 * on quote files written here, and on Debian's fortunes when installed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corpus.h"
#include "test.h"

static char tmp_dir[256];
static const char *const names[] = {"b", "a", "a.dat", "a.u8"};

static void write_file(const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
  FILE *f = fopen(path, "wb");
  if (f) fputs(text, f), fclose(f);
}

/* a: quotes q0..q9 (q9 is the 10th quote: validation); b: two more, the
 * last without its "%" line; a.dat ignored; a.u8 a link to a, ignored. */
static const char *make_corpus(void) {
  const char *base = getenv("TMPDIR");
  snprintf(tmp_dir, sizeof tmp_dir, "%s/test_gpt_corpus.XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmp_dir)) return NULL;
  write_file("a", "q0\n%\nq1\n%\n%\nq2\n%\nq3\n%\nq4\n%\nq5\n%\nq6\n%\nq7\n%\nq8\n%\nq9 %x\n%\n");
  write_file("b", "r0\n%\nr1 ~\n");
  write_file("a.dat", "\xff\xfe binary index");
  char path[512];
  snprintf(path, sizeof path, "%s/a.u8", tmp_dir);
  if (symlink("a", path) != 0) return NULL;
  return tmp_dir;
}

static void clean_corpus(void) {
  char path[512];
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    snprintf(path, sizeof path, "%s/%s", tmp_dir, names[i]);
    unlink(path);
  }
  rmdir(tmp_dir);
}

static void decode_split(const corpus *c, int val, char *out) {
  size_t n = val ? c->nval : c->ntrain;
  const uint8_t *s = val ? c->val : c->train;
  for (size_t i = 0; i < n; i++) out[i] = (char)c->byte[s[i]];
  out[n] = 0;
}

TEST(quotes_files_and_splits) {
  ASSERT_TRUE(make_corpus() != NULL);
  corpus c;
  ASSERT_OK(corpus_load(tmp_dir, &c));
  ASSERT_EQ_INT(c.files, 2);   /* a and b; not a.dat, not the link */
  ASSERT_EQ_INT(c.quotes, 12); /* the empty quote between two "%" lines skipped */
  char text[256];
  decode_split(&c, 1, text);
  ASSERT_EQ_STR(text, "q9 %x\n%\n"); /* quote 9; a "%" inside a line is text */
  decode_split(&c, 0, text);
  ASSERT_EQ_STR(text, "q0\n%\nq1\n%\nq2\n%\nq3\n%\nq4\n%\nq5\n%\nq6\n%\nq7\n%\nq8\n%\nr0\n%\nr1 ~\n%\n");
  /* the vocabulary: the bytes that occur, in byte order */
  ASSERT_EQ_INT(c.vocab, 17); /* \n space % 0-9 q r x ~ */
  ASSERT_TRUE(c.byte[0] == '\n' && c.byte[1] == ' ' && c.byte[2] == '%' && c.byte[c.vocab - 1] == '~');
  ASSERT_EQ_INT(corpus_encode(&c, 'q'), 13);
  ASSERT_EQ_INT(corpus_encode(&c, 'Z'), -1);
  corpus_free(&c);
  clean_corpus();
  return 0;
}

TEST(batches_are_shifted_windows_and_repeat_with_the_seed) {
  ASSERT_TRUE(make_corpus() != NULL);
  corpus c;
  ASSERT_OK(corpus_load(tmp_dir, &c));
  uint64_t s1 = 7, s2 = 7;
  disp_tensor *x = NULL, *y = NULL, *x2 = NULL, *y2 = NULL;
  ASSERT_OK(corpus_batch(&c, 0, 3, 5, &s1, &x, &y));
  ASSERT_OK(corpus_batch(&c, 0, 3, 5, &s2, &x2, &y2));
  ASSERT_TRUE(s1 == s2 && s1 != 7);
  const int64_t *px = disp_tensor_data_ptr(x), *py = disp_tensor_data_ptr(y), *px2 = disp_tensor_data_ptr(x2);
  ASSERT_TRUE(disp_tensor_ndim(x) == 2 && disp_tensor_sizes(x)[0] == 3 && disp_tensor_sizes(x)[1] == 5);
  ASSERT_TRUE(memcmp(px, px2, 15 * sizeof *px) == 0);
  for (int b = 0; b < 3; b++) {
    for (int t = 0; t < 4; t++) ASSERT_TRUE(py[b * 5 + t] == px[b * 5 + t + 1]);
    /* the window is somewhere in the training stream */
    int found = 0;
    for (size_t o = 0; o + 6 <= c.ntrain && !found; o++) {
      found = 1;
      for (int t = 0; t < 5; t++) found &= c.train[o + (size_t)t] == px[b * 5 + t] && c.train[o + (size_t)t + 1] == py[b * 5 + t];
    }
    ASSERT_TRUE(found);
  }
  char out[6] = {0};
  corpus_decode(&c, px, 5, out);
  ASSERT_TRUE(strlen(out) == 5);
  disp_tensor_release(x), disp_tensor_release(y), disp_tensor_release(x2), disp_tensor_release(y2);
  /* the validation split (8 tokens) is too short for a context of 8 */
  x = y = NULL;
  ASSERT_STATUS(corpus_batch(&c, 1, 1, 8, &s1, &x, &y), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(x == NULL && y == NULL);
  ASSERT_STATUS(corpus_batch(&c, 0, 0, 4, &s1, &x, &y), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(corpus_batch(NULL, 0, 1, 4, &s1, &x, &y), DISP_ERR_INVALID_ARG);
  corpus_free(&c);
  clean_corpus();
  return 0;
}

TEST(rng_is_splitmix64_and_unbiased_below) {
  uint64_t s = 0;
  /* SplitMix64's first output from state 0 is 0xE220A8397B1DCDAF */
  ASSERT_TRUE(corpus_rng_below(&s, UINT64_MAX) == 0xE220A8397B1DCDAFull % UINT64_MAX);
  ASSERT_TRUE(corpus_rng_below(&s, 0) == 0);
  for (int i = 0; i < 100; i++) ASSERT_TRUE(corpus_rng_below(&s, 3) < 3);
  return 0;
}

TEST(errors) {
  corpus c;
  ASSERT_STATUS(corpus_load("/nonexistent/fortunes", &c), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), "install Debian's fortunes package");
  ASSERT_TRUE(c.train == NULL && c.vocab == 0);
  ASSERT_STATUS(corpus_load(NULL, NULL), DISP_ERR_INVALID_ARG);
  /* a directory with one quote: no validation text */
  const char *base = getenv("TMPDIR");
  snprintf(tmp_dir, sizeof tmp_dir, "%s/test_gpt_corpus.XXXXXX", base && *base ? base : "/tmp");
  ASSERT_TRUE(mkdtemp(tmp_dir) != NULL);
  write_file("a", "only one\n");
  ASSERT_STATUS(corpus_load(tmp_dir, &c), DISP_ERR_IO);
  ASSERT_CONTAINS(disp_last_error(), "too little text");
  clean_corpus();
  corpus_free(NULL);
  return 0;
}

/* Debian's fortunes, when installed: the corpus the example trains on. */
TEST(real_fortunes) {
  if (access(CORPUS_DEFAULT_DIR, R_OK) != 0) {
    printf("skip: %s not installed (Debian's fortunes)\n", CORPUS_DEFAULT_DIR);
    return 0;
  }
  corpus c;
  ASSERT_OK(corpus_load(NULL, &c));
  printf("fortunes: %zu files, %zu quotes, %d distinct bytes, %zu training and %zu validation tokens\n",
         c.files, c.quotes, c.vocab, c.ntrain, c.nval);
  ASSERT_TRUE(c.files >= 1 && c.quotes >= 100 && c.vocab > 60 && c.vocab <= 256);
  double share = (double)c.nval / (double)(c.ntrain + c.nval);
  ASSERT_TRUE(share > 0.07 && share < 0.13);
  corpus_free(&c);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(quotes_files_and_splits),
    TEST_ENTRY(batches_are_shifted_windows_and_repeat_with_the_seed),
    TEST_ENTRY(rng_is_splitmix64_and_unbiased_below),
    TEST_ENTRY(errors),
    TEST_ENTRY(real_fortunes),
    TEST_END,
};

TEST_MAIN()
