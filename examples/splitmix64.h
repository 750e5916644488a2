/*
 * splitmix64.h - the examples' small random generator, the same on every
 * machine: SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom
 * number generators", 2014), and unbiased integers below a bound from it.
 * Shared by fmnist.c (shuffling) and gpt/corpus.c (batches), which each
 * export it under their own header's names. Not thread-safe for one state.
 */
#ifndef EXAMPLES_SPLITMIX64_H
#define EXAMPLES_SPLITMIX64_H

#include <stdint.h>

/* Advances *state (any value, e.g. the seed) and returns the next value. */
static inline uint64_t splitmix64_next(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* A uniform integer in [0, bound): the values below t = 2^64 mod bound
 * would make the first t residues a little likelier than the rest, so they
 * are drawn again. bound 0 returns 0 without drawing. */
static inline uint64_t splitmix64_below(uint64_t *state, uint64_t bound) {
  if (bound == 0) return 0;
  uint64_t t = (0 - bound) % bound, z;
  do z = splitmix64_next(state);
  while (z < t);
  return z % bound;
}

#endif
