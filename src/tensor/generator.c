/*
 * generator.c - one random generator per device (disp/backend.h), and the
 * process-wide seed of disp/random.h, which seeds them all.
 *
 * A generator is a seed and a count of draws taken: draw i of a stream is
 * splitmix64(seed, i), so a kernel reserves its n draws with one atomic
 * add and needs no lock, and the state is just those two numbers.
 */
#include <stdatomic.h>

#include "disp/backend.h"
#include "disp/random.h"
#include "argcheck_internal.h"
#include "device_internal.h"
#include "tensor_internal.h"

#define DEFAULT_SEED 67280421310721ull /* PyTorch's default_rng_seed_val */

/* The seed is stored XOR DEFAULT_SEED, so the zero-initialized table holds
 * default-seeded generators without an init step. */
struct disp_generator {
  _Atomic uint64_t seed_x;
  _Atomic uint64_t offset;
};

static disp_generator generators[DISP_NUM_BACKENDS * DISP_MAX_DEVICES_PER_TYPE];

uint64_t disp_generator_draw(uint64_t seed, uint64_t i) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

disp_generator *disp_device_generator(disp_device dev) {
  int slot;
  if (disp__device_slot("disp_device_generator", dev, &slot) != DISP_OK) return NULL;
  return &generators[slot];
}

static void seed_generator(disp_generator *g, uint64_t seed) {
  atomic_store(&g->seed_x, seed ^ DEFAULT_SEED);
  atomic_store(&g->offset, 0);
}

disp_status disp_generator_manual_seed(disp_generator *g, uint64_t seed) {
  DISP_REFUSE_NULL(g);
  seed_generator(g, seed);
  return DISP_OK;
}

uint64_t disp_generator_initial_seed(const disp_generator *g) {
  return g ? atomic_load((_Atomic uint64_t *)&g->seed_x) ^ DEFAULT_SEED : 0;
}

disp_status disp_generator_get_state(const disp_generator *g, disp_generator_state *out) {
  DISP_REFUSE_NULL(g);
  DISP_REFUSE_NULL(out);
  disp_generator *m = (disp_generator *)g; /* atomic loads take non-const pointers */
  out->seed = atomic_load(&m->seed_x) ^ DEFAULT_SEED;
  out->offset = atomic_load(&m->offset);
  return DISP_OK;
}

disp_status disp_generator_set_state(disp_generator *g, const disp_generator_state *state) {
  DISP_REFUSE_NULL(g);
  DISP_REFUSE_NULL(state);
  atomic_store(&g->seed_x, state->seed ^ DEFAULT_SEED);
  atomic_store(&g->offset, state->offset);
  return DISP_OK;
}

disp_status disp_generator_reserve(disp_generator *g, uint64_t n, disp_generator_state *out) {
  DISP_REFUSE_NULL(g);
  DISP_REFUSE_NULL(out);
  out->seed = atomic_load(&g->seed_x) ^ DEFAULT_SEED;
  out->offset = atomic_fetch_add(&g->offset, n);
  return DISP_OK;
}

/* torch.manual_seed: every device's default generator restarts. */
void disp_manual_seed(uint64_t seed) {
  for (size_t i = 0; i < sizeof generators / sizeof *generators; i++) seed_generator(&generators[i], seed);
}

/* torch.initial_seed: the default CPU generator's. */
uint64_t disp_initial_seed(void) {
  return disp_generator_initial_seed(&generators[DISP_BACKEND_CPU * DISP_MAX_DEVICES_PER_TYPE]);
}
