/*
 * disp/keyset.h - dispatch keys and key sets.
 *
 * Note [Key set representation]
 * A key set is PyTorch's factored uint64: the low DISP_NUM_BACKENDS bits are
 * backend components (CPU, CUDA, ..., PrivateUse3), the bits above them are
 * functionalities (Dense, Quantized, Sparse, BackendSelect, ADInplaceOrView,
 * AutogradOther, AutogradFunctionality, Autocast*), both in PyTorch's order.
 * A per-backend runtime key such as AutogradCPU is the functionality bit
 * AutogradFunctionality plus the backend bit CPU, so a set holding
 * AutogradCPU and PrivateUse1 dispatches to AutogradPrivateUse1, as in
 * PyTorch. The highest functionality bit picks the functionality; for a
 * per-backend one the highest backend bit picks the backend.
 *
 * Alias keys (Autograd, CompositeImplicitAutograd, CompositeExplicitAutograd,
 * CompositeExplicitAutogradNonFunctional) are registration-time only: they
 * never appear in a set and expand to the runtime keys they cover.
 *
 * Names are spelled exactly as PyTorch spells them ("AutogradPrivateUse1"),
 * so dumps and documents read the same. Everything here is a pure function
 * of its arguments: thread-safe. NULL arguments follow status.h's Note [NULL
 * arguments].
 */
#ifndef DISP_KEYSET_H
#define DISP_KEYSET_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Backend components, lowest priority first (PyTorch 1.13's order). */
#define DISP_FORALL_BACKENDS(X)                                              \
  X(CPU, "CPU") X(CUDA, "CUDA") X(HIP, "HIP") X(XLA, "XLA") X(MPS, "MPS")    \
  X(IPU, "IPU") X(XPU, "XPU") X(HPU, "HPU") X(VE, "VE") X(LAZY, "Lazy")      \
  X(META, "Meta") X(PRIVATEUSE1, "PrivateUse1")                              \
  X(PRIVATEUSE2, "PrivateUse2") X(PRIVATEUSE3, "PrivateUse3")

/* Functionality keys, lowest priority first. The third column says whether
 * the functionality has one runtime key per backend (PER_BACKEND) or a
 * single one (SINGLE); the fourth is the prefix of its per-backend names. */
#define DISP_FORALL_FUNCTIONALITIES(X)                                       \
  X(DENSE, "Dense", PER_BACKEND, "")                                         \
  X(QUANTIZED, "Quantized", PER_BACKEND, "Quantized")                        \
  X(SPARSE, "Sparse", PER_BACKEND, "Sparse")                                 \
  X(BACKEND_SELECT, "BackendSelect", SINGLE, "")                             \
  X(AD_INPLACE_OR_VIEW, "ADInplaceOrView", SINGLE, "")                       \
  X(AUTOGRAD_OTHER, "AutogradOther", SINGLE, "")                             \
  X(AUTOGRAD_FUNCTIONALITY, "AutogradFunctionality", PER_BACKEND, "Autograd")\
  X(AUTOCAST_CPU, "AutocastCPU", SINGLE, "")                                 \
  X(AUTOCAST_CUDA, "AutocastCUDA", SINGLE, "")                               \
  X(AUTOCAST_PRIVATEUSE1, "AutocastPrivateUse1", SINGLE, "")

/* Alias keys: registration-time only. */
#define DISP_FORALL_ALIAS_KEYS(X)                                            \
  X(AUTOGRAD, "Autograd")                                                    \
  X(COMPOSITE_IMPLICIT_AUTOGRAD, "CompositeImplicitAutograd")                \
  X(COMPOSITE_EXPLICIT_AUTOGRAD, "CompositeExplicitAutograd")                \
  X(COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL,                              \
    "CompositeExplicitAutogradNonFunctional")

/* Backend components as small integers (bit index in a key set). */
typedef enum disp_backend {
#define X(B, s) DISP_BACKEND_##B,
  DISP_FORALL_BACKENDS(X)
#undef X
  DISP_NUM_BACKENDS
} disp_backend;

/*
 * A dispatch key. Order: Undefined, the functionality keys, the per-backend
 * runtime keys grouped by functionality (CPU..PrivateUse3, QuantizedCPU..,
 * SparseCPU.., AutogradCPU..), then the alias keys - the order of PyTorch's
 * DispatchKey enum, which dumpState() follows.
 */
typedef enum disp_key {
  DISP_KEY_UNDEFINED = 0,
#define X(F, s, kind, prefix) DISP_KEY_##F,
  DISP_FORALL_FUNCTIONALITIES(X)
#undef X
#define X(B, s) DISP_KEY_##B,
  DISP_FORALL_BACKENDS(X)
#undef X
#define X(B, s) DISP_KEY_QUANTIZED_##B,
  DISP_FORALL_BACKENDS(X)
#undef X
#define X(B, s) DISP_KEY_SPARSE_##B,
  DISP_FORALL_BACKENDS(X)
#undef X
#define X(B, s) DISP_KEY_AUTOGRAD_##B,
  DISP_FORALL_BACKENDS(X)
#undef X
  DISP_KEY_END_OF_RUNTIME_KEYS,
#define X(A, s) DISP_KEY_##A,
  DISP_FORALL_ALIAS_KEYS(X)
#undef X
  DISP_KEY_COUNT,
  /* PyTorch's backward-compatible name (DispatchKey::Autocast), which seed
   * code registers on: the same key as AutocastCUDA. Not a parseable name,
   * as in PyTorch. */
  DISP_KEY_AUTOCAST = DISP_KEY_AUTOCAST_CUDA
} disp_key;

#define DISP__PER_BACKEND_COUNT_PER_BACKEND 1
#define DISP__PER_BACKEND_COUNT_SINGLE 0
enum {
  DISP_NUM_FUNCTIONALITIES = 0
#define X(F, s, kind, prefix) + 1
      DISP_FORALL_FUNCTIONALITIES(X)
#undef X
  ,
  DISP_NUM_PER_BACKEND_FUNCTIONALITIES = 0
#define X(F, s, kind, prefix) + DISP__PER_BACKEND_COUNT_##kind
      DISP_FORALL_FUNCTIONALITIES(X)
#undef X
};

/* What kind of key a disp_key is. */
typedef enum disp_key_kind {
  DISP_KEY_KIND_UNDEFINED,
  DISP_KEY_KIND_FUNCTIONALITY,  /* BackendSelect, ADInplaceOrView, Dense, ... */
  DISP_KEY_KIND_PER_BACKEND,    /* CPU, QuantizedCPU, AutogradPrivateUse1, ... */
  DISP_KEY_KIND_ALIAS           /* Autograd, CompositeImplicitAutograd, ... */
} disp_key_kind;

/* A set of runtime keys (Note [Key set representation]). Passed by value. */
typedef struct disp_keyset {
  uint64_t repr;
} disp_keyset;

/* All backend-component bits. */
#define DISP_KEYSET_BACKEND_MASK ((UINT64_C(1) << DISP_NUM_BACKENDS) - 1)

/*
 * The number of entries of an operator's dispatch table: Undefined, one per
 * single functionality, DISP_NUM_BACKENDS per per-backend functionality.
 */
#define DISP_NUM_RUNTIME_ENTRIES                                             \
  (1 + (DISP_NUM_FUNCTIONALITIES - DISP_NUM_PER_BACKEND_FUNCTIONALITIES) +   \
   DISP_NUM_PER_BACKEND_FUNCTIONALITIES * DISP_NUM_BACKENDS)

/* ---- keys ------------------------------------------------------------- */

/*
 * disp_key_name - PyTorch's name of the key ("AutogradCPU"). Static string;
 * "UNKNOWN_KEY" for values outside the enum. Thread-safe.
 */
DISP_API const char *disp_key_name(disp_key k);

/*
 * disp_key_parse - the key named `name` (exact, case-sensitive PyTorch
 * spelling; "Math" and "DefaultBackend" are not accepted). Writes it to *out.
 * Errors: DISP_ERR_INVALID_ARG with a message listing nothing else. Thread-safe.
 */
DISP_API disp_status disp_key_parse(const char *name, disp_key *out);

/* disp_key_kind_of - the kind of a key. Thread-safe. */
DISP_API disp_key_kind disp_key_kind_of(disp_key k);

/* disp_key_is_alias - nonzero for the four alias keys. Thread-safe. */
DISP_API int disp_key_is_alias(disp_key k);

/*
 * disp_key_functionality - the functionality key of a runtime key
 * (AutogradCPU -> AutogradFunctionality, CPU -> Dense, BackendSelect ->
 * BackendSelect). Undefined for alias keys. Thread-safe.
 */
DISP_API disp_key disp_key_functionality(disp_key k);

/*
 * disp_key_backend - the backend of a per-backend runtime key (QuantizedCUDA
 * -> DISP_BACKEND_CUDA); -1 for other keys. Thread-safe.
 */
DISP_API int disp_key_backend(disp_key k);

/*
 * disp_key_for_backend - the per-backend runtime key of functionality `f`
 * (Dense, Quantized, Sparse or AutogradFunctionality) on backend `b`;
 * DISP_KEY_UNDEFINED if `f` is not per-backend. Thread-safe.
 */
DISP_API disp_key disp_key_for_backend(disp_key f, disp_backend b);

/* disp_backend_name - "CPU", "PrivateUse1", ... Static string. Thread-safe. */
DISP_API const char *disp_backend_name(disp_backend b);

/*
 * disp_key_table_index - the slot of runtime key `k` in an operator's
 * dispatch table (0 for Undefined), or -1 for alias keys and functionality
 * keys that are not runtime keys (Dense, Quantized, ...). Thread-safe.
 */
DISP_API int disp_key_table_index(disp_key k);

/*
 * disp_key_for_table_index - the runtime key in table slot `i`
 * (0 <= i < DISP_NUM_RUNTIME_ENTRIES). Thread-safe.
 */
DISP_API disp_key disp_key_for_table_index(int i);

/* ---- key sets --------------------------------------------------------- */

/*
 * disp_keyset_of - the set holding one runtime or functionality key. A
 * per-backend key sets its functionality bit and its backend bit. Undefined
 * and alias keys give the empty set. Thread-safe.
 */
DISP_API disp_keyset disp_keyset_of(disp_key k);

/* disp_keyset_of_keys - the union of `n` keys; `keys` must not be NULL (the
 * empty set when it is). Thread-safe. */
DISP_API disp_keyset disp_keyset_of_keys(const disp_key *keys, size_t n);

/* Set algebra on the raw bits. All are pure: thread-safe. */
static inline disp_keyset disp_keyset_empty(void) { disp_keyset s = {0}; return s; }
static inline disp_keyset disp_keyset_or(disp_keyset a, disp_keyset b) {
  disp_keyset s = {a.repr | b.repr};
  return s;
}
static inline disp_keyset disp_keyset_and(disp_keyset a, disp_keyset b) {
  disp_keyset s = {a.repr & b.repr};
  return s;
}
/*
 * disp_keyset_minus - PyTorch's `a - b`: removes b's functionality bits from
 * a but never a's backend bits (the backend stays known after removing
 * AutogradCPU, say).
 */
static inline disp_keyset disp_keyset_minus(disp_keyset a, disp_keyset b) {
  disp_keyset s = {a.repr & (DISP_KEYSET_BACKEND_MASK | ~b.repr)};
  return s;
}
static inline int disp_keyset_is_empty(disp_keyset a) { return a.repr == 0; }
static inline int disp_keyset_equal(disp_keyset a, disp_keyset b) { return a.repr == b.repr; }

/* disp_keyset_add - a | {k}. Thread-safe. */
DISP_API disp_keyset disp_keyset_add(disp_keyset s, disp_key k);

/*
 * disp_keyset_remove - s without k's functionality bit (backend bits stay),
 * as PyTorch's DispatchKeySet::remove. Thread-safe.
 */
DISP_API disp_keyset disp_keyset_remove(disp_keyset s, disp_key k);

/*
 * disp_keyset_has - whether the set contains runtime key k (its functionality
 * bit and, for a per-backend key, its backend bit). False for Undefined and
 * alias keys. Thread-safe.
 */
DISP_API int disp_keyset_has(disp_keyset s, disp_key k);

/*
 * disp_keyset_full_after - every backend bit and every functionality of lower
 * priority than k's functionality (PyTorch's DispatchKeySet(FULL_AFTER, k)).
 * A kernel at k redispatches with `ks & full_after(k)`. Thread-safe.
 */
DISP_API disp_keyset disp_keyset_full_after(disp_key k);

/* disp_keyset_full - every key (PyTorch's DispatchKeySet(FULL)). */
DISP_API disp_keyset disp_keyset_full(void);

/*
 * disp_keyset_highest_key - the highest-priority runtime key in the set:
 * the highest functionality, combined with the highest backend when that
 * functionality is per-backend. DISP_KEY_UNDEFINED for a set with no
 * functionality bits. Thread-safe.
 */
DISP_API disp_key disp_keyset_highest_key(disp_keyset s);

/*
 * Table slots. Per functionality (index 0: Undefined) the slot of its first
 * runtime key, and 0xff for per-backend functionalities (whose slot adds the
 * backend index) or 0 for single ones. Read by the inline functions below.
 */
DISP_API extern const uint8_t disp_keyset_slot_base[DISP_NUM_FUNCTIONALITIES + 1];
DISP_API extern const uint8_t disp_keyset_slot_per_backend[DISP_NUM_FUNCTIONALITIES + 1];

/* Index of the highest set bit of a nonzero x, as a 64-bit value: on
 * x86-64 one BSR with no sign or zero extension after it (GCC's clz
 * builtin returns an int it then widens). */
static inline uint64_t disp__bsr64(uint64_t x) {
#if defined(__x86_64__) && defined(__GNUC__)
  uint64_t r;
  __asm__("bsrq %1, %0" : "=r"(r) : "rm"(x) : "cc");
  return r;
#else
  return (uint64_t)(63 ^ __builtin_clzll(x));
#endif
}

/* Index of the highest set bit, 0 for x == 0 (so "no backend" reads as CPU,
 * whose per-backend slots a set without backend bits cannot reach anyway). */
static inline int disp__highest_bit(uint64_t x) { return __builtin_clzll(x | 1) ^ 63; }

/*
 * disp_keyset_backend_index - the index of the highest backend bit (0 when
 * the set has none). Thread-safe.
 */
static inline int disp_keyset_backend_index(disp_keyset s) {
  return disp__highest_bit(s.repr & DISP_KEYSET_BACKEND_MASK);
}

/*
 * disp_keyset_table_index - the dispatch-table slot a call with this set
 * goes to (the slot of disp_keyset_highest_key). Inline: it is the hot path.
 */
static inline int disp_keyset_table_index(disp_keyset s) {
  /* (f << 1 | 1) makes the highest-bit index 1-based: 0 = no functionality. */
  int f = disp__highest_bit(((s.repr >> DISP_NUM_BACKENDS) << 1) | 1);
  return disp_keyset_slot_base[f] + (disp_keyset_backend_index(s) & disp_keyset_slot_per_backend[f]);
}

/*
 * disp_keyset_to_keys - the runtime keys of the set, lowest priority first
 * (the order PyTorch prints them), written to out[0..cap). Returns how many
 * the set has (which may exceed cap). With out NULL only counts. Thread-safe.
 */
DISP_API size_t disp_keyset_to_keys(disp_keyset s, disp_key *out, size_t cap);

/*
 * disp_keyset_format - writes "DispatchKeySet(CPU, ADInplaceOrView,
 * AutogradCPU, AutocastCPU)" into buf (always NUL-terminated when size > 0).
 * Returns the length the full text needs, like snprintf; with buf NULL only
 * measures. Thread-safe.
 */
DISP_API size_t disp_keyset_format(disp_keyset s, char *buf, size_t size);

/*
 * disp_key_runtime_keyset - the runtime keys an alias key covers (PyTorch's
 * getRuntimeDispatchKeySet); for a runtime key, the set of that key alone.
 *   Autograd: AutogradOther and Autograd<B> for every backend.
 *   CompositeExplicitAutograd: the plain, Quantized and Sparse keys of every
 *     backend (Undefined is handled separately by the table computation).
 *   CompositeExplicitAutogradNonFunctional: the same minus the Sparse keys
 *     and every XLA and Lazy key (backends that functionalize).
 *   CompositeImplicitAutograd: CompositeExplicitAutograd's set plus Autograd's.
 * Thread-safe.
 */
DISP_API disp_keyset disp_key_runtime_keyset(disp_key k);

/*
 * disp_key_is_included_in_alias - whether runtime key k is one of the keys
 * alias key `alias` covers. Thread-safe.
 */
DISP_API int disp_key_is_included_in_alias(disp_key k, disp_key alias);

#ifdef __cplusplus
}
#endif

#endif /* DISP_KEYSET_H */
