/*
 * random.h - draws from the device generators (disp/backend.h, disp/random.h).
 *
 * A counter-based generator: draw i of the stream is splitmix64(seed, i).
 * A kernel reserves the n draws it needs with one atomic add, so concurrent
 * kernels never share a draw and need no lock, and a single-threaded
 * sequence of calls is reproducible after disp_manual_seed.
 */
#ifndef DISP_KERNELS_RANDOM_H
#define DISP_KERNELS_RANDOM_H

#include <stdint.h>

#include <disp.h>

/* A reserved block of draws. */
typedef struct disp__rng { uint64_t seed, next; } disp__rng;

/* disp__rng_reserve - reserve n draws from the CPU generator. Thread-safe. */
disp__rng disp__rng_reserve(uint64_t n);

/* disp__rng_reserve_on - reserve n draws from dev's generator
 * (disp_device_generator; index -1 is the current device). Thread-safe. */
disp__rng disp__rng_reserve_on(disp_device dev, uint64_t n);

/* The next raw 64-bit draw of a reserved block. */
uint64_t disp__rng_u64(disp__rng *r);

/* Uniform in [0, 1) with `bits` bits of resolution (24 float, 53 double,
 * 8 bfloat16, 11 float16), so rounding to the dtype can never reach 1. */
double disp__rng_uniform(disp__rng *r, int bits);

/* Standard normal (Box-Muller; two draws per value). */
double disp__rng_normal(disp__rng *r);

/* 1 with probability p (p in [0, 1]). */
int disp__rng_bernoulli(disp__rng *r, double p);

/* disp__fill_uniform / disp__fill_normal - fill a floating CPU tensor (any
 * strides) with uniform [0, 1) / standard normal values. */
void disp__fill_uniform(disp_tensor *t);
void disp__fill_normal(disp_tensor *t);

#endif /* DISP_KERNELS_RANDOM_H */
