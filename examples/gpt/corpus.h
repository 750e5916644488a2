/*
 * corpus.h - the text the GPT example trains on: Debian's `fortunes` quote
 * files, read as bytes (a character-level model over the bytes that occur).
 *
 * The corpus is every regular file in CORPUS_DEFAULT_DIR (or the directory
 * given) whose name has no '.' (the quote files; not the `.dat` indexes, not
 * the `.u8` symbolic links), in byte order of their names. A file is quotes
 * separated by lines that are exactly "%" (fortune(6)'s strfile format).
 * Quote k (counted over all files in that order, empty ones skipped) goes to
 * the validation split when k % 10 == 9, else to training: a held-out 10%
 * spread over every file. Each split is its quotes in order, each followed
 * by its "%\n" line, as one stream of token ids.
 *
 * Tokens: the distinct bytes of the whole corpus, in increasing byte order
 * (token 0 is the smallest byte that occurs). The libtorch twin and the
 * export script read the corpus by the same rules.
 *
 * Example code (a static library next to the examples), not libdispatch's
 * API; errors follow the library's convention (a disp_status, the message
 * in disp_last_error()).
 */
#ifndef GPT_CORPUS_H
#define GPT_CORPUS_H

#include <stddef.h>
#include <stdint.h>

#include <disp.h>

#define CORPUS_DEFAULT_DIR "/usr/share/games/fortunes"

/* A loaded corpus; owned by the caller after corpus_load, freed with
 * corpus_free. */
typedef struct corpus {
  uint8_t *train, *val;   /* token ids of each split */
  size_t ntrain, nval;    /* their lengths */
  int vocab;              /* distinct bytes: token ids are 0..vocab-1 */
  unsigned char byte[256]; /* token id -> byte */
  size_t files, quotes;   /* what was read */
} corpus;

/*
 * corpus_load - read dir (NULL: CORPUS_DEFAULT_DIR) into *out by the rules
 * above. Errors (*out left empty, nothing leaked): DISP_ERR_IO - the
 * directory is missing or unreadable (the message says to install Debian's
 * `fortunes` package or pass --data DIR), a file cannot be read, no quote
 * was found, or a split is shorter than 2 tokens; DISP_ERR_INVALID_ARG -
 * out is NULL or the path too long; DISP_ERR_NO_MEMORY. Thread-safe.
 */
disp_status corpus_load(const char *dir, corpus *out);

/* corpus_free - free the splits and empty *c. NULL and empty are fine. */
void corpus_free(corpus *c);

/*
 * corpus_batch - a batch of `batch` windows of `context` tokens from the
 * training split (val == 0) or the validation split (val != 0) of n
 * tokens: window b starts at o_b = corpus_rng_below(state, n - context),
 * drawn in order b = 0, 1, ...; *x gets tokens
 * [o_b, o_b + context) and *y tokens [o_b + 1, o_b + context + 1), both
 * int64 [batch, context] on the CPU (new references). Errors:
 * DISP_ERR_INVALID_ARG (NULL arguments, batch or context < 1, a split no
 * longer than context), DISP_ERR_NO_MEMORY; *x and *y untouched.
 * Not thread-safe for one state.
 */
disp_status corpus_batch(const corpus *c, int val, int64_t batch, int64_t context, uint64_t *state,
                         disp_tensor **x, disp_tensor **y);

/*
 * corpus_rng_below - a uniform integer in [0, bound) from the SplitMix64
 * state (Steele, Lea and Flood 2014; one step: state += 0x9E3779B97F4A7C15,
 * z = state, z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9, z = (z ^ z >> 27) *
 * 0x94D049BB133111EB, z ^ z >> 31), unbiased: with t = 2^64 mod bound,
 * draw until z >= t, return z mod bound. bound 0: 0, nothing drawn.
 */
uint64_t corpus_rng_below(uint64_t *state, uint64_t bound);

/* corpus_decode - the bytes of tokens ids[0..n) into out (n bytes, not
 * terminated); an id outside the vocabulary gives '?'. */
void corpus_decode(const corpus *c, const int64_t *ids, size_t n, char *out);

/* corpus_encode - the token of byte b, or -1 when b is not in the corpus. */
int corpus_encode(const corpus *c, unsigned char b);

#endif
