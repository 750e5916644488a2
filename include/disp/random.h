/*
 * disp/random.h - the process-wide random number generator of the built-in
 * random operators (rand, randn, dropout).
 *
 * One generator for the whole process, as PyTorch's default CPU generator:
 * after disp_manual_seed(s), the same sequence of calls on one thread gives
 * the same values. The stream is not PyTorch's (mt19937), so the values
 * themselves differ from PyTorch's for the same seed.
 */
#ifndef DISP_RANDOM_H
#define DISP_RANDOM_H

#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* disp_manual_seed - restart the generator from `seed`. Thread-safe. */
DISP_API void disp_manual_seed(uint64_t seed);

/* disp_initial_seed - the seed last set (the default one until then). Thread-safe. */
DISP_API uint64_t disp_initial_seed(void);

#ifdef __cplusplus
}
#endif

#endif /* DISP_RANDOM_H */
