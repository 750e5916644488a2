/*
 * keyset.c - dispatch key names, key-set algebra and table indices.
 *
 * See Note [Key set representation] in include/disp/keyset.h.
 */
#include <stdio.h>
#include <string.h>

#include "disp/keyset.h"
#include "argcheck_internal.h"
#include "error_internal.h"

/* Functionality keys are numbered 1..DISP_NUM_FUNCTIONALITIES in the enum,
 * so a functionality key's value is also its 1-based bit index above the
 * backend bits. */
#define FUNC_BIT(f) (UINT64_C(1) << (DISP_NUM_BACKENDS + (int)(f) - 1))

enum { PER_BACKEND = 1, SINGLE = 0 };

static const int func_is_per_backend[DISP_NUM_FUNCTIONALITIES + 1] = {
    0,
#define X(F, s, kind, prefix) kind,
    DISP_FORALL_FUNCTIONALITIES(X)
#undef X
};

/* First per-backend runtime key of each functionality, in enum order. */
static const disp_key per_backend_first[] = {
    DISP_KEY_CPU, DISP_KEY_QUANTIZED_CPU, DISP_KEY_SPARSE_CPU, DISP_KEY_AUTOGRAD_CPU};
static const disp_key per_backend_func[] = {
    DISP_KEY_DENSE, DISP_KEY_QUANTIZED, DISP_KEY_SPARSE, DISP_KEY_AUTOGRAD_FUNCTIONALITY};
_Static_assert(sizeof per_backend_first / sizeof per_backend_first[0] ==
                   DISP_NUM_PER_BACKEND_FUNCTIONALITIES,
               "every per-backend functionality needs its block of runtime keys");

static const char *const backend_names[DISP_NUM_BACKENDS] = {
#define X(B, s) s,
    DISP_FORALL_BACKENDS(X)
#undef X
};

static const char *const func_names[DISP_NUM_FUNCTIONALITIES + 1] = {
    "Undefined",
#define X(F, s, kind, prefix) s,
    DISP_FORALL_FUNCTIONALITIES(X)
#undef X
};

static const char *const alias_names[] = {
#define X(A, s) s,
    DISP_FORALL_ALIAS_KEYS(X)
#undef X
};

/* Runtime key names like "QuantizedPrivateUse1", built once into a static
 * table; every entry is a compile-time concatenation, so no init is needed. */
static const char *const per_backend_names[DISP_NUM_PER_BACKEND_FUNCTIONALITIES][DISP_NUM_BACKENDS] = {
    {
#define X(B, s) s,
        DISP_FORALL_BACKENDS(X)
#undef X
    },
    {
#define X(B, s) "Quantized" s,
        DISP_FORALL_BACKENDS(X)
#undef X
    },
    {
#define X(B, s) "Sparse" s,
        DISP_FORALL_BACKENDS(X)
#undef X
    },
    {
#define X(B, s) "Autograd" s,
        DISP_FORALL_BACKENDS(X)
#undef X
    },
};

/* Slot of each functionality's first runtime key (row 0: Undefined), and
 * whether the backend index is added. Spelled out rather than computed so
 * the hot path reads constant tables. */
#define W DISP_NUM_BACKENDS
const uint8_t disp_keyset_slot_base[DISP_NUM_FUNCTIONALITIES + 1] = {
    0,
    /* Dense */ 1, /* Quantized */ 1 + W, /* Sparse */ 1 + 2 * W,
    /* BackendSelect */ 1 + 3 * W, /* ADInplaceOrView */ 2 + 3 * W, /* AutogradOther */ 3 + 3 * W,
    /* AutogradFunctionality */ 4 + 3 * W,
    /* AutocastCPU */ 4 + 4 * W, /* AutocastCUDA */ 5 + 4 * W, /* AutocastPrivateUse1 */ 6 + 4 * W,
};
const uint8_t disp_keyset_slot_per_backend[DISP_NUM_FUNCTIONALITIES + 1] = {
    0, 0xff, 0xff, 0xff, 0, 0, 0, 0xff, 0, 0, 0,
};
#undef W
_Static_assert(DISP_NUM_FUNCTIONALITIES == 10,
               "the slot tables spell out one row per functionality: update them");
_Static_assert(6 + 4 * DISP_NUM_BACKENDS + 1 == DISP_NUM_RUNTIME_ENTRIES,
               "table size and slot tables disagree");

static int is_functionality(disp_key k) {
  return k >= DISP_KEY_DENSE && k <= (disp_key)DISP_NUM_FUNCTIONALITIES;
}

static int is_per_backend(disp_key k) {
  return k >= DISP_KEY_CPU && k < DISP_KEY_END_OF_RUNTIME_KEYS;
}

int disp_key_is_alias(disp_key k) { return k > DISP_KEY_END_OF_RUNTIME_KEYS && k < DISP_KEY_COUNT; }

disp_key_kind disp_key_kind_of(disp_key k) {
  if (k == DISP_KEY_UNDEFINED) return DISP_KEY_KIND_UNDEFINED;
  if (is_functionality(k)) return DISP_KEY_KIND_FUNCTIONALITY;
  if (is_per_backend(k)) return DISP_KEY_KIND_PER_BACKEND;
  return DISP_KEY_KIND_ALIAS;
}

const char *disp_backend_name(disp_backend b) {
  return (unsigned)b < DISP_NUM_BACKENDS ? backend_names[b] : "UNKNOWN_BACKEND";
}

const char *disp_key_name(disp_key k) {
  if ((unsigned)k <= (unsigned)DISP_NUM_FUNCTIONALITIES) return func_names[k];
  if (is_per_backend(k)) {
    int off = k - DISP_KEY_CPU;
    return per_backend_names[off / DISP_NUM_BACKENDS][off % DISP_NUM_BACKENDS];
  }
  if (disp_key_is_alias(k)) return alias_names[k - DISP_KEY_END_OF_RUNTIME_KEYS - 1];
  return "UNKNOWN_KEY";
}

disp_status disp_key_parse(const char *name, disp_key *out) {
  DISP_REFUSE_NULL(name);
  DISP_REFUSE_NULL(out);
  for (int k = 0; k < DISP_KEY_COUNT; k++) {
    if (k == DISP_KEY_END_OF_RUNTIME_KEYS) continue;
    if (strcmp(disp_key_name((disp_key)k), name) == 0) {
      *out = (disp_key)k;
      return DISP_OK;
    }
  }
  return disp__fail(DISP_ERR_INVALID_ARG, "could not parse dispatch key: %s", name);
}

disp_key disp_key_functionality(disp_key k) {
  if ((unsigned)k <= (unsigned)DISP_NUM_FUNCTIONALITIES) return k;
  if (is_per_backend(k)) return per_backend_func[(k - DISP_KEY_CPU) / DISP_NUM_BACKENDS];
  return DISP_KEY_UNDEFINED;
}

int disp_key_backend(disp_key k) {
  return is_per_backend(k) ? (int)((k - DISP_KEY_CPU) % DISP_NUM_BACKENDS) : -1;
}

disp_key disp_key_for_backend(disp_key f, disp_backend b) {
  if ((unsigned)b >= DISP_NUM_BACKENDS) return DISP_KEY_UNDEFINED;
  for (int i = 0; i < DISP_NUM_PER_BACKEND_FUNCTIONALITIES; i++)
    if (per_backend_func[i] == f) return (disp_key)(per_backend_first[i] + (int)b);
  return DISP_KEY_UNDEFINED;
}

int disp_key_table_index(disp_key k) {
  if (k == DISP_KEY_UNDEFINED) return 0;
  if (is_functionality(k))
    return func_is_per_backend[k] ? -1 : disp_keyset_slot_base[k];
  if (is_per_backend(k)) {
    disp_key f = disp_key_functionality(k);
    return disp_keyset_slot_base[f] + disp_key_backend(k);
  }
  return -1;
}

disp_key disp_key_for_table_index(int i) {
  if (i <= 0 || i >= DISP_NUM_RUNTIME_ENTRIES) return DISP_KEY_UNDEFINED;
  for (int f = DISP_NUM_FUNCTIONALITIES; f >= 1; f--) {
    int off = disp_keyset_slot_base[f];
    if (i >= off) {
      if (!func_is_per_backend[f]) return (disp_key)f;
      return disp_key_for_backend((disp_key)f, (disp_backend)(i - off));
    }
  }
  return DISP_KEY_UNDEFINED;
}

disp_keyset disp_keyset_of(disp_key k) {
  disp_keyset s = {0};
  if (is_functionality(k)) {
    s.repr = FUNC_BIT(k);
  } else if (is_per_backend(k)) {
    s.repr = FUNC_BIT(disp_key_functionality(k)) | (UINT64_C(1) << disp_key_backend(k));
  }
  return s;
}

disp_keyset disp_keyset_of_keys(const disp_key *keys, size_t n) {
  disp_keyset s = {0};
  if (!keys) return s; /* no keys to read: the empty set */
  for (size_t i = 0; i < n; i++) s.repr |= disp_keyset_of(keys[i]).repr;
  return s;
}

disp_keyset disp_keyset_add(disp_keyset s, disp_key k) {
  s.repr |= disp_keyset_of(k).repr;
  return s;
}

disp_keyset disp_keyset_remove(disp_keyset s, disp_key k) {
  s.repr &= ~(disp_keyset_of(k).repr & ~DISP_KEYSET_BACKEND_MASK);
  return s;
}

int disp_keyset_has(disp_keyset s, disp_key k) {
  uint64_t bits = disp_keyset_of(k).repr;
  return bits != 0 && (s.repr & bits) == bits;
}

disp_keyset disp_keyset_full(void) {
  disp_keyset s = {(UINT64_C(1) << (DISP_NUM_BACKENDS + DISP_NUM_FUNCTIONALITIES)) - 1};
  return s;
}

disp_keyset disp_keyset_full_after(disp_key k) {
  disp_key f = disp_key_functionality(k);
  disp_keyset s = {0};
  if (f != DISP_KEY_UNDEFINED) s.repr = FUNC_BIT(f) - 1;
  return s;
}

disp_key disp_keyset_highest_key(disp_keyset s) {
  uint64_t f = s.repr >> DISP_NUM_BACKENDS;
  if (!f) return DISP_KEY_UNDEFINED;
  disp_key func = (disp_key)(64 - __builtin_clzll(f));
  if (!func_is_per_backend[func]) return func;
  /* A per-backend functionality without a backend bit goes to the first
   * backend's slot, as PyTorch's table index does. */
  return disp_key_for_backend(func, (disp_backend)disp_keyset_backend_index(s));
}

size_t disp_keyset_to_keys(disp_keyset s, disp_key *out, size_t cap) {
  if (!out) cap = 0; /* nowhere to write: only count, like snprintf(NULL, 0) */
  size_t n = 0;
  for (int f = 1; f <= DISP_NUM_FUNCTIONALITIES; f++) {
    if (!(s.repr & FUNC_BIT(f))) continue;
    if (!func_is_per_backend[f]) {
      if (n < cap) out[n] = (disp_key)f;
      n++;
      continue;
    }
    for (int b = 0; b < DISP_NUM_BACKENDS; b++) {
      if (!(s.repr & (UINT64_C(1) << b))) continue;
      if (n < cap) out[n] = disp_key_for_backend((disp_key)f, (disp_backend)b);
      n++;
    }
  }
  return n;
}

size_t disp_keyset_format(disp_keyset s, char *buf, size_t size) {
  if (!buf) size = 0; /* nowhere to write: only measure, like snprintf(NULL, 0) */
  disp_key keys[DISP_NUM_RUNTIME_ENTRIES];
  size_t n = disp_keyset_to_keys(s, keys, DISP_NUM_RUNTIME_ENTRIES);
  size_t len = 0;
#define PUT(str)                                                        \
  do {                                                                  \
    const char *p_ = (str);                                             \
    size_t l_ = strlen(p_);                                             \
    if (len < size) memcpy(buf + len, p_, len + l_ < size ? l_ : size - len); \
    len += l_;                                                          \
  } while (0)
  PUT("DispatchKeySet(");
  for (size_t i = 0; i < n; i++) {
    if (i) PUT(", ");
    PUT(disp_key_name(keys[i]));
  }
  PUT(")");
#undef PUT
  if (size) buf[len < size ? len : size - 1] = '\0';
  return len;
}

/* ---- alias keys --------------------------------------------------------- */

static disp_keyset per_backend_all(disp_key f) {
  disp_keyset s = {FUNC_BIT(f) | DISP_KEYSET_BACKEND_MASK};
  return s;
}

disp_keyset disp_key_runtime_keyset(disp_key k) {
  disp_keyset s = {0};
  switch (k) {
    case DISP_KEY_AUTOGRAD:
      s.repr = per_backend_all(DISP_KEY_AUTOGRAD_FUNCTIONALITY).repr | FUNC_BIT(DISP_KEY_AUTOGRAD_OTHER);
      return s;
    case DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL:
      /* As PyTorch's non_functional_backend_dispatch_keyset: no Sparse keys,
       * and no XLA or Lazy keys at all (those backends functionalize). */
      s.repr = (per_backend_all(DISP_KEY_DENSE).repr | per_backend_all(DISP_KEY_QUANTIZED).repr) &
               ~((UINT64_C(1) << DISP_BACKEND_XLA) | (UINT64_C(1) << DISP_BACKEND_LAZY));
      return s;
    case DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD:
      s.repr = per_backend_all(DISP_KEY_DENSE).repr | per_backend_all(DISP_KEY_QUANTIZED).repr |
               per_backend_all(DISP_KEY_SPARSE).repr;
      return s;
    case DISP_KEY_COMPOSITE_IMPLICIT_AUTOGRAD:
      s.repr = disp_key_runtime_keyset(DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD).repr |
               disp_key_runtime_keyset(DISP_KEY_AUTOGRAD).repr;
      return s;
    default:
      return disp_keyset_of(k);
  }
}

int disp_key_is_included_in_alias(disp_key k, disp_key alias) {
  return k != DISP_KEY_UNDEFINED && disp_keyset_has(disp_key_runtime_keyset(alias), k);
}
