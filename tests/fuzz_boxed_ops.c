/*
 * fuzz_boxed_ops.c - user operators for fuzz_boxed.c: schemas with what the
 * built-in ones lack (Tensor? returns of several values, str and float[]
 * arguments, fixed-size lists with defaults, Tensor?[], Device, Layout,
 * Generator), kernels of each kind (boxed, unboxed, unboxed taking the key
 * set, CompositeImplicitAutograd calling other operators, a backend with no
 * kernel) and one boxed kernel that breaks the rules on purpose, which the
 * dispatcher must report instead of passing on.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_boxed_ops.h"

/* ---- boxed kernels ------------------------------------------------------ */

/* lists(int[] a, int[2] b, float[] c, bool[2] d, str mode) -> (int, float, bool) */
static disp_status k_lists(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)op, (void)ks, (void)ud;
  const disp_value *a = disp_stack_peek(s, 4), *c = disp_stack_peek(s, 2), *d = disp_stack_peek(s, 1);
  int64_t n = (int64_t)a->u.ints.len;
  double sum = 0;
  for (size_t i = 0; i < c->u.doubles.len; i++) sum += c->u.doubles.data[i];
  bool first = d->u.bools.len ? d->u.bools.data[0] : false;
  if (strcmp(disp_stack_peek(s, 0)->u.str, "none") == 0)
    return disp_set_error(DISP_ERR_INVALID_ARG, "lists: mode 'none' is not supported");
  disp_stack_drop(s, 5);
  disp_stack_push_int(s, n);
  disp_stack_push_double(s, sum);
  disp_stack_push_bool(s, first);
  return DISP_OK;
}

/* cat_first(Tensor[] xs, int dim=0) -> Tensor */
static disp_status k_cat_first(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)op, (void)ks, (void)ud;
  const disp_value *xs = disp_stack_peek(s, 1);
  if (xs->u.tensors.len == 0) return disp_set_error(DISP_ERR_INVALID_ARG, "cat_first: expected a non-empty list");
  disp_tensor *t = disp_tensor_retain(xs->u.tensors.data[0]);
  disp_stack_drop(s, 2);
  return disp_stack_push_tensor_steal(s, t);
}

/* sink(Tensor self, Tensor?[] opts, Device? device, Layout? layout, MemoryFormat? mf, Generator? gen) -> () */
static disp_status k_sink(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)op, (void)ks, (void)ud;
  disp_stack_drop(s, 6);
  return DISP_OK;
}

/* liar(Tensor self, int k) -> Tensor: right for k == 0, else wrong in one
 * of several ways; the dispatcher must turn each into an error. */
static disp_status k_liar(const disp_op *op, disp_keyset ks, disp_stack *s, void *ud) {
  (void)op, (void)ks, (void)ud;
  int64_t k = disp_stack_peek(s, 0)->u.i;
  disp_tensor *self = disp_tensor_retain(disp_stack_peek(s, 1)->u.tensor);
  disp_stack_drop(s, 2);
  switch (k) {
    case 1: disp_tensor_release(self); return DISP_OK;            /* no return */
    case 2: disp_stack_push_tensor(s, self); break;               /* two returns */
    case 3: disp_tensor_release(self); return disp_stack_push_int(s, 3); /* an int */
    case 4: disp_tensor_release(self); return disp_stack_push_string(s, "x");
    case 5: disp_tensor_release(self); return DISP_ERR_KERNEL;    /* fails without a message */
    case 6:                                                       /* fails, leaving values */
      disp_stack_push_tensor_steal(s, self);
      return disp_set_error(DISP_ERR_KERNEL, "liar: failed after pushing");
    default: break;
  }
  return disp_stack_push_tensor_steal(s, self);
}

/* ---- unboxed kernels ---------------------------------------------------- */

/* opt(Tensor? a, int? n, float? f, str? s, Scalar? sc, ScalarType? dtype) -> (Tensor, int) */
static disp_status k_opt(disp_tensor *a, disp_opt_int n, disp_opt_double f, const char *str, disp_scalar sc,
                         int32_t dtype, disp_tensor **out0, int64_t *out1) {
  (void)f, (void)sc;
  if (dtype >= DISP_DTYPE_COUNT) return disp_set_error(DISP_ERR_INVALID_ARG, "opt: bad dtype %d", (int)dtype);
  *out0 = a ? disp_tensor_retain(a) : NULL; /* an undefined tensor when a is None */
  *out1 = n.has_value ? n.value : str ? (int64_t)strlen(str) : -1;
  return DISP_OK;
}

/* two(Tensor self, Scalar alpha=1, *, ScalarType? dtype=None) -> (Tensor, Tensor) */
static disp_status k_two(disp_keyset ks, disp_tensor *self, disp_scalar alpha, int32_t dtype, disp_tensor **out0,
                         disp_tensor **out1) {
  (void)ks, (void)alpha, (void)dtype;
  disp_status st = disp_aten_clone(self, -1, out1);
  if (st != DISP_OK) return st;
  *out0 = disp_tensor_retain(self);
  return DISP_OK;
}

/* tlist(Tensor self, int n) -> Tensor[] */
static disp_status k_tlist(disp_tensor *self, int64_t n, disp_tensor_vec *out) {
  if (n < 0 || n > 4) return disp_set_error(DISP_ERR_INVALID_ARG, "tlist: n must be in [0, 4], got %lld", (long long)n);
  out->data = n ? malloc((size_t)n * sizeof *out->data) : NULL;
  if (n && !out->data) return disp_set_error(DISP_ERR_NO_MEMORY, "tlist: out of memory");
  for (int64_t i = 0; i < n; i++) out->data[i] = disp_tensor_retain(self);
  out->len = (size_t)n;
  return DISP_OK;
}

/* scale_(Tensor(a!) self, Tensor? other=None) -> Tensor(a!) */
static disp_status k_scale(disp_tensor *self, disp_tensor *other, disp_tensor **out) {
  if (other) return disp_aten_mul__Tensor(self, other, out);
  *out = disp_tensor_retain(self);
  return DISP_OK;
}

/* composite(Tensor a, Tensor b) -> Tensor, as CompositeImplicitAutograd: a*b + a */
static disp_status k_composite(disp_tensor *a, disp_tensor *b, disp_tensor **out) {
  disp_tensor *m = NULL;
  disp_status st = disp_aten_mul_Tensor(a, b, &m);
  if (st != DISP_OK) return st;
  st = disp_aten_add_Tensor(m, a, disp_scalar_int(1), out);
  disp_tensor_release(m);
  return st;
}

/* cpu_only(Tensor self) -> Tensor: no Meta kernel. */
static disp_status k_cpu_only(disp_tensor *self, disp_tensor **out) { return disp_aten_neg(self, out); }

/* ---- registration ------------------------------------------------------- */

typedef struct fuzz_op {
  const char *schema;
  const char *name;
  disp_kernel kernel;
  disp_key keys[2]; /* where the kernel goes; UNDEFINED ends the list */
} fuzz_op;

#define BOXED(f) disp_kernel_boxed((f), NULL, NULL)
#define UNBOXED(f) disp_kernel_unboxed(DISP_FN(f), 0)
#define CEA DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD
#define CIA DISP_KEY_COMPOSITE_IMPLICIT_AUTOGRAD

static disp_status define_one(disp_library *lib, const fuzz_op *o) {
  disp_status st = disp_library_def(lib, o->schema, NULL);
  for (int i = 0; st == DISP_OK && i < 2 && o->keys[i] != DISP_KEY_UNDEFINED; i++)
    st = disp_library_impl_key(lib, o->name, o->keys[i], o->kernel, NULL);
  return st;
}

/* Kept reachable: the registrations live until exit, like static ones. */
static disp_library *fuzz_lib;

disp_status fuzz_ops_define(void) {
  const fuzz_op table[] = {
      {"lists(int[] a, int[2] b=[1, 2], float[] c=[], bool[2] d=[True, False], str mode=\"sum\") -> (int, float, bool)",
       "lists", BOXED(k_lists), {CEA}},
      {"cat_first(Tensor[] xs, int dim=0) -> Tensor", "cat_first", BOXED(k_cat_first), {CEA}},
      {"sink(Tensor self, Tensor?[] opts, Device? device=None, Layout? layout=None, MemoryFormat? mf=None, "
       "Generator? gen=None) -> ()",
       "sink", BOXED(k_sink), {DISP_KEY_CPU, DISP_KEY_META}},
      {"liar(Tensor self, int k) -> Tensor", "liar", BOXED(k_liar), {DISP_KEY_CPU, DISP_KEY_META}},
      {"opt(Tensor? a, int? n=None, float? f=None, str? s=None, Scalar? sc=None, ScalarType? dtype=None) -> (Tensor, int)",
       "opt", UNBOXED(k_opt), {CEA}},
      {"two(Tensor self, Scalar alpha=1, *, ScalarType? dtype=None) -> (Tensor, Tensor)", "two",
       disp_kernel_unboxed(DISP_FN(k_two), DISP_KERNEL_WITH_KEYSET), {DISP_KEY_CPU, DISP_KEY_META}},
      {"tlist(Tensor self, int n) -> Tensor[]", "tlist", UNBOXED(k_tlist), {DISP_KEY_CPU, DISP_KEY_META}},
      {"scale_(Tensor(a!) self, Tensor? other=None) -> Tensor(a!)", "scale_", UNBOXED(k_scale), {DISP_KEY_CPU, DISP_KEY_META}},
      {"composite(Tensor a, Tensor b) -> Tensor", "composite", UNBOXED(k_composite), {CIA}},
      {"cpu_only(Tensor self) -> Tensor", "cpu_only", UNBOXED(k_cpu_only), {DISP_KEY_CPU}},
  };
  disp_status st = disp_library_new(DISP_LIBRARY_DEF, "fuzz", DISP_KEY_UNDEFINED, __FILE__, __LINE__, &fuzz_lib);
  for (size_t i = 0; st == DISP_OK && i < sizeof table / sizeof table[0]; i++) st = define_one(fuzz_lib, &table[i]);
  return st;
}
