/*
 * disp/random.h - the seed of the random number generators of the
 * built-in random operators (rand, randn, dropout).
 *
 * Each device has its own generator (disp_device_generator, disp/backend.h),
 * as PyTorch's default generator per device; disp_manual_seed seeds them
 * all, as torch.manual_seed does. After disp_manual_seed(s), the same
 * sequence of calls on one thread gives the same values. The stream is not
 * PyTorch's (mt19937), so the values themselves differ from PyTorch's for
 * the same seed.
 */
#ifndef DISP_RANDOM_H
#define DISP_RANDOM_H

#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* disp_manual_seed - restart every device's generator from `seed`. Thread-safe. */
DISP_API void disp_manual_seed(uint64_t seed);

/* disp_initial_seed - the CPU generator's seed (the default one until set). Thread-safe. */
DISP_API uint64_t disp_initial_seed(void);

#ifdef __cplusplus
}
#endif

#endif /* DISP_RANDOM_H */
