/*
 * ffi_bridge.c - calling unboxed kernels whose C signature is known only at
 * run time, with libffi.
 *
 * Built-in operators never come here (their adapters are generated C). This
 * path serves operators a program or plugin defines at run time: a boxed
 * call of their unboxed kernel goes through ffi_call over the ffi_cif that
 * the operator's def prepared once.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "error_internal.h"
#include "signature_internal.h"

/* libffi descriptions of the value structs of disp/value.h. Each element
 * array is NULL-terminated; size and alignment are filled by ffi_prep_cif. */
#define STRUCT_TYPE(name, ...)                                            \
  static ffi_type *name##_elems[] = {__VA_ARGS__, NULL};                 \
  static ffi_type name = {0, 0, FFI_TYPE_STRUCT, name##_elems}

STRUCT_TYPE(t_list, &ffi_type_pointer, &ffi_type_uint64);           /* {ptr, size_t} lists */
STRUCT_TYPE(t_opt_int, &ffi_type_sint64, &ffi_type_uint8);
STRUCT_TYPE(t_opt_double, &ffi_type_double, &ffi_type_uint8);
STRUCT_TYPE(t_opt_bool, &ffi_type_uint8, &ffi_type_uint8);
STRUCT_TYPE(t_opt_int_list, &t_list, &ffi_type_uint8);
STRUCT_TYPE(t_opt_device, &ffi_type_sint32, &ffi_type_sint32, &ffi_type_uint8);
/* disp_scalar: an enum, then a union of int64/double/bool. A union mixing
 * an integer and a double in one eightbyte is passed in integer registers on
 * the ABIs we build for, exactly like an int64, so it is described as one. */
STRUCT_TYPE(t_scalar, &ffi_type_sint32, &ffi_type_sint64);
STRUCT_TYPE(t_keyset, &ffi_type_uint64);

_Static_assert(sizeof(size_t) == 8, "the list descriptions assume a 64-bit size_t");
_Static_assert(sizeof(disp_scalar) == 16 && offsetof(disp_scalar, v) == 8,
               "t_scalar must match disp_scalar's layout");

static ffi_type *ffi_type_of(disp_ctype t) {
  switch (t) {
    case DISP_CT_TENSOR: case DISP_CT_OPT_TENSOR: case DISP_CT_STR: case DISP_CT_GENERATOR:
    case DISP_CT_STORAGE:
      return &ffi_type_pointer;
    case DISP_CT_TENSOR_LIST: case DISP_CT_INT_LIST: case DISP_CT_DOUBLE_LIST: case DISP_CT_BOOL_LIST:
      return &t_list;
    case DISP_CT_INT: return &ffi_type_sint64;
    case DISP_CT_OPT_INT: return &t_opt_int;
    case DISP_CT_OPT_INT_LIST: return &t_opt_int_list;
    case DISP_CT_DOUBLE: return &ffi_type_double;
    case DISP_CT_OPT_DOUBLE: return &t_opt_double;
    case DISP_CT_BOOL: return &ffi_type_uint8;
    case DISP_CT_OPT_BOOL: return &t_opt_bool;
    case DISP_CT_SCALAR: return &t_scalar;
    case DISP_CT_ENUM: return &ffi_type_sint32;
    case DISP_CT_DEVICE: return &t_opt_device;
    default: return NULL;
  }
}

/* Note [Calling from a register plan]
 * ffi_call classifies every argument again on every call (its x86-64 code
 * runs the ABI's classification algorithm per argument and per call): about
 * 500 instructions for a kernel taking a tensor and an out-pointer, more
 * than the rest of a boxed call. Our argument types are a fixed set, so
 * their classes are fixed too. When a signature's arguments all fit in
 * registers (at most six integer and eight SSE eightbytes, no argument in
 * memory), the def computes once where each eightbyte goes and a call just
 * loads the registers and calls the kernel through one prototype taking
 * six integers and eight doubles: under the System V x86-64 ABI, integer
 * and SSE registers are assigned independently in argument order, so that
 * prototype puts every eightbyte where the kernel's own prototype expects
 * it, and the kernel ignores the registers it does not use (its return, a
 * disp_status, comes back in eax either way). Any other signature, and any
 * other ABI, keeps ffi_call over the cif: the plan is only a faster route
 * to the same call, and test_call checks both routes with every C type. */

/* The eightbyte classes of a C type under the System V x86-64 ABI, one
 * letter each: I integer, E int32_t (sign-extended), S SSE; "" for a type
 * passed in memory (more than 16 bytes). Matches the descriptions above. */
static const char *classes_of(disp_ctype t) {
  switch (t) {
    case DISP_CT_TENSOR: case DISP_CT_OPT_TENSOR: case DISP_CT_STR: case DISP_CT_GENERATOR:
    case DISP_CT_STORAGE: case DISP_CT_INT: case DISP_CT_BOOL: case DISP_CT_OPT_BOOL:
      return "I";
    case DISP_CT_TENSOR_LIST: case DISP_CT_INT_LIST: case DISP_CT_DOUBLE_LIST: case DISP_CT_BOOL_LIST:
    case DISP_CT_OPT_INT: case DISP_CT_DEVICE:
    case DISP_CT_SCALAR: /* an enum, then a union of integer and double: integer */
      return "II";
    case DISP_CT_DOUBLE: return "S";
    case DISP_CT_OPT_DOUBLE: return "SI";
    case DISP_CT_ENUM: return "E";
    default: return ""; /* disp_opt_int_list: 24 bytes, in memory */
  }
}

_Static_assert(sizeof(disp_opt_double) == 16 && sizeof(disp_opt_device) == 12 && sizeof(disp_opt_bool) == 2 &&
                   sizeof(disp_opt_int) == 16 && sizeof(disp_int_list) == 16 && sizeof(disp_opt_int_list) == 24,
               "classes_of assumes these layouts");
_Static_assert(sizeof(disp_cvalue) >= 16, "the plan reads whole eightbytes of a disp_cvalue");

/* Adds an argument of classes `cls`, at byte `offset` of `source`, to the
 * plan; 0 when it does not fit. */
static int plan_add(disp_reg_plan *p, disp_plan_source source, size_t offset, const char *cls, unsigned *gpr,
                    unsigned *sse) {
  unsigned ng = 0, ns = 0;
  for (const char *c = cls; *c; c++) *c == 'S' ? ns++ : ng++;
  if (!*cls || *gpr + ng > DISP_PLAN_GPRS || *sse + ns > DISP_PLAN_SSES) return 0;
  for (unsigned j = 0; cls[j]; j++) {
    disp_plan_word *w = &p->word[p->nwords++];
    w->source = (uint8_t)source;
    w->offset = (uint16_t)(offset + 8 * j);
    w->sext32 = cls[j] == 'E';
    w->reg = (uint8_t)(cls[j] == 'S' ? DISP_PLAN_GPRS + (*sse)++ : (*gpr)++);
    if (cls[j] == 'S') p->sse = 1;
  }
  return 1;
}

/* The plan of one of the two variants; p->ok stays 0 when it does not apply. */
static void plan_prepare(disp_reg_plan *p, const disp_signature *sig, int with_ks) {
  memset(p, 0, sizeof *p);
#if defined(__x86_64__) && !defined(_WIN32) && !defined(__ILP32__)
  unsigned gpr = 0, sse = 0;
  if (with_ks && !plan_add(p, DISP_PLAN_KEYSET, 0, "I", &gpr, &sse)) return;
  for (int i = 0; i < sig->nargs; i++)
    if (!plan_add(p, DISP_PLAN_ARGS, (size_t)i * sizeof(disp_cvalue), classes_of(sig->args[i]), &gpr, &sse)) return;
  for (int i = 0; i < sig->nrets; i++)
    if (!plan_add(p, DISP_PLAN_OUTS, (size_t)i * sizeof(void *), "I", &gpr, &sse)) return;
  p->ok = 1;
#else
  (void)sig, (void)with_ks;
#endif
}

typedef disp_status (*gpr_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
typedef disp_status (*reg_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, double, double, double,
                              double, double, double, double, double);

/* The call of a plan that applies. Every eightbyte is read whole: a
 * disp_cvalue is at least 16 bytes (zeroed past a shorter value), a key
 * set and a pointer are 8. */
static disp_status plan_call(const disp_reg_plan *p, disp_fn fn, const disp_keyset *ks, const disp_cvalue *args,
                             void *const *outs) {
  const char *const from[3] = {(const char *)ks, (const char *)args, (const char *)outs};
  uint64_t r[DISP_PLAN_WORDS];
  for (unsigned k = 0; k < DISP_PLAN_GPRS; k++) r[k] = 0;
  if (p->sse)
    for (unsigned k = DISP_PLAN_GPRS; k < DISP_PLAN_WORDS; k++) r[k] = 0;
  for (unsigned k = 0; k < p->nwords; k++) {
    const disp_plan_word *w = &p->word[k];
    uint64_t v;
    memcpy(&v, from[w->source] + w->offset, sizeof v);
    if (w->sext32) v = (uint64_t)(int64_t)(int32_t)(uint32_t)v;
    r[w->reg] = v;
  }
  if (!p->sse) return ((gpr_fn)fn)(r[0], r[1], r[2], r[3], r[4], r[5]);
  double x[DISP_PLAN_SSES];
  memcpy(x, r + DISP_PLAN_GPRS, sizeof x);
  return ((reg_fn)fn)(r[0], r[1], r[2], r[3], r[4], r[5], x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]);
}

disp_status disp__ffi_prepare(disp_signature *sig, const char *op_name) {
  for (int with_ks = 0; with_ks < 2; with_ks++) {
    ffi_type **at = sig->atypes[with_ks];
    unsigned n = 0;
    if (with_ks) at[n++] = &t_keyset;
    for (int i = 0; i < sig->nargs; i++) {
      ffi_type *ft = ffi_type_of(sig->args[i]);
      if (!ft) return disp__fail(DISP_ERR_SCHEMA, "%s: argument %d has no C type", op_name, i + 1);
      at[n++] = ft;
    }
    for (int i = 0; i < sig->nrets; i++) at[n++] = &ffi_type_pointer; /* out-pointers */
    if (ffi_prep_cif(&sig->cif[with_ks], FFI_DEFAULT_ABI, n, &ffi_type_sint32, at) != FFI_OK)
      return disp__fail(DISP_ERR_SCHEMA, "%s: libffi cannot describe its C signature", op_name);
    plan_prepare(&sig->plan[with_ks], sig, with_ks);
  }
  return DISP_OK;
}

disp_status disp__ffi_call_unboxed(const disp_signature *sig, disp_fn fn, int with_keyset,
                                   disp_keyset ks, disp_cvalue *args, void **outs) {
  const disp_reg_plan *plan = &sig->plan[with_keyset != 0];
  if (plan->ok) return plan_call(plan, fn, &ks, args, outs);
  void *avalues[1 + DISP_MAX_ARGS + DISP_MAX_RETS];
  unsigned n = 0;
  if (with_keyset) avalues[n++] = &ks;
  for (int i = 0; i < sig->nargs; i++) avalues[n++] = &args[i];
  /* Each out-pointer is an argument: libffi wants the address of each. */
  for (int i = 0; i < sig->nrets; i++) avalues[n++] = &outs[i];
  ffi_arg result = 0;
  ffi_call((ffi_cif *)&sig->cif[with_keyset != 0], fn, &result, avalues);
  return (disp_status)(int32_t)result;
}
