/*
 * gen_aten - generates everything about the built-in operators from the
 * operator manifest, src/kernels/manifest.def (build time only).
 *
 *   gen_aten OUTDIR
 * writes
 *   OUTDIR/disp/aten.h      public typed entry points disp_aten_ID(...), and
 *                           the C function type of each operator's kernels
 *   OUTDIR/aten_kernels.h   the C prototype of every kernel the manifest names
 *   OUTDIR/aten_ids.h       ATEN_ID, each operator's index, shared by the two
 *                           files below, and disp__aten_handle
 *   OUTDIR/aten_gen.c       entry points, boxed adapters, the stub table, the
 *                           def and the kernels' registration (kernels module)
 *   OUTDIR/aten_autograd_gen.c  the Autograd pass-through, ADInplaceOrView and
 *                           Autocast kernels' registration (autograd module,
 *                           which may use the kernels module, not the reverse)
 *   OUTDIR/aten_backward.h  the prototype of every backward function
 *   OUTDIR/aten_formulas.c  the derivative formulas with their node names and
 *                           the non-differentiable list (autograd module)
 *   OUTDIR/aten_ops.txt     the schemas, one a line (what tests count)
 *
 * The C signature of everything comes from the schema through the one
 * mapping of disp/value.h (signature.c), so nothing here is written per op.
 * Typed entries and adapters never touch libffi.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disp/schema.h"
#include "disp/stub.h"
#include "builtins_internal.h"
#include "schema_internal.h"
#include "signature_internal.h"
#include "gen_aten.h"


static const decl decls[] = {
#define OP(ID, SCHEMA, ...) {.id = #ID, .schema = SCHEMA, .kernels = __VA_ARGS__},
#include "manifest.def"
#undef OP
};
enum { NDECLS = sizeof decls / sizeof decls[0] };

/* Kernel kinds: table flag, name part, key macro name, takes the key set,
 * checked: gets the generated device check (Note [One device check] in
 * src/kernels/device_check.c): 2 for tensors and Device arguments (kernels
 * that compute: backend and CompositeExplicitAutograd ones), 1 for Device
 * arguments only (BackendSelect: the kernel it selects checks tensors), 0
 * for kernels made of calls that are checked themselves. */
static const struct {
  unsigned flag;
  const char *part;
  const char *key;
  int with_ks;
  int checked;
} kinds[] = {
    {DISP_K_CPU, "cpu", "CPU", 0, 2},
    {DISP_K_META, "meta", "META", 0, 2},
    {DISP_K_CIA, "cia", "COMPOSITE_IMPLICIT_AUTOGRAD", 0, 0},
    {DISP_K_CEA, "cea", "COMPOSITE_EXPLICIT_AUTOGRAD", 0, 2},
    {DISP_K_CEANF, "ceanf", "COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL", 0, 2},
    {DISP_K_BSEL, "bsel", "BACKEND_SELECT", 1, 1},
    /* Autocast kernels (src/autograd/autocast_kernels.c): the key's cast
     * policy, then a full call of the operator with the key excluded. */
    {DISP_K_AUTOCAST_CPU, "autocast_cpu", "AUTOCAST_CPU", 0, 0},
    {DISP_K_AUTOCAST_CUDA, "autocast_cuda", "AUTOCAST_CUDA", 0, 0},
};

/* Whether kind j's kernels belong to the autograd module (the Autocast
 * ones): aten_autograd_gen.c registers them, aten_gen.c the others. */
static int kind_in_autograd(size_t j) {
  return kinds[j].flag == DISP_K_AUTOCAST_CPU || kinds[j].flag == DISP_K_AUTOCAST_CUDA;
}

static const char *param_type(disp_ctype t) {
  switch (t) {
    case DISP_CT_TENSOR: case DISP_CT_OPT_TENSOR: return "disp_tensor *";
    case DISP_CT_TENSOR_LIST: return "disp_tensor_list";
    case DISP_CT_INT: return "int64_t";
    case DISP_CT_OPT_INT: return "disp_opt_int";
    case DISP_CT_INT_LIST: return "disp_int_list";
    case DISP_CT_OPT_INT_LIST: return "disp_opt_int_list";
    case DISP_CT_DOUBLE: return "double";
    case DISP_CT_OPT_DOUBLE: return "disp_opt_double";
    case DISP_CT_DOUBLE_LIST: return "disp_double_list";
    case DISP_CT_BOOL: return "bool";
    case DISP_CT_OPT_BOOL: return "disp_opt_bool";
    case DISP_CT_BOOL_LIST: return "disp_bool_list";
    case DISP_CT_STR: return "const char *";
    case DISP_CT_SCALAR: return "disp_scalar";
    case DISP_CT_ENUM: return "int32_t";
    case DISP_CT_DEVICE: return "disp_opt_device";
    case DISP_CT_GENERATOR: return "void *";
    case DISP_CT_STORAGE: return "disp_storage *";
    default: return NULL;
  }
}

static const char *field(disp_ctype t) {
  switch (t) {
    case DISP_CT_TENSOR: case DISP_CT_OPT_TENSOR: return "tensor";
    case DISP_CT_TENSOR_LIST: return "tensors";
    case DISP_CT_INT: return "i";
    case DISP_CT_OPT_INT: return "opt_i";
    case DISP_CT_INT_LIST: return "ints";
    case DISP_CT_OPT_INT_LIST: return "opt_ints";
    case DISP_CT_DOUBLE: return "d";
    case DISP_CT_OPT_DOUBLE: return "opt_d";
    case DISP_CT_DOUBLE_LIST: return "doubles";
    case DISP_CT_BOOL: return "b";
    case DISP_CT_OPT_BOOL: return "opt_b";
    case DISP_CT_BOOL_LIST: return "bools";
    case DISP_CT_STR: return "str";
    case DISP_CT_SCALAR: return "scalar";
    case DISP_CT_ENUM: return "e";
    case DISP_CT_DEVICE: return "device";
    case DISP_CT_GENERATOR: return "ptr";
    case DISP_CT_STORAGE: return "storage";
    case DISP_CT_TENSOR_VEC: return "vec";
    default: return NULL;
  }
}

static const char *ret_type(disp_ctype t) {
  switch (t) {
    case DISP_CT_TENSOR: return "disp_tensor **";
    case DISP_CT_INT: return "int64_t *";
    case DISP_CT_DOUBLE: return "double *";
    case DISP_CT_BOOL: return "bool *";
    case DISP_CT_SCALAR: return "disp_scalar *";
    case DISP_CT_TENSOR_VEC: return "disp_tensor_vec *";
    default: return NULL;
  }
}

/* A C identifier for an argument name (PyTorch uses some C keywords). */
static void arg_name(char *buf, size_t n, const char *name) {
  static const char *const reserved[] = {"default", "int", "float", "double", "char", "bool", "out", "ks", "op", "st"};
  for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
    if (!strcmp(name, reserved[i])) {
      snprintf(buf, n, "%s_", name);
      return;
    }
  snprintf(buf, n, "%s", name);
}

/* "disp_tensor *self, disp_tensor *other, disp_scalar alpha, disp_tensor **out0" */
static void params(FILE *f, const disp_schema *s, const disp_signature *sig, int with_names, int with_ks) {
  int first = 1;
  if (with_ks) {
    fprintf(f, "disp_keyset%s", with_names ? " ks" : "");
    first = 0;
  }
  for (int i = 0; i < sig->nargs; i++) {
    char nm[64];
    arg_name(nm, sizeof nm, s->args[i].name);
    const char *t = param_type(sig->args[i]);
    fprintf(f, "%s%s%s%s", first ? "" : ", ", t, with_names ? (t[strlen(t) - 1] == '*' ? "" : " ") : "",
            with_names ? nm : "");
    first = 0;
  }
  for (int i = 0; i < sig->nrets; i++) {
    const char *t = ret_type(sig->rets[i]);
    fprintf(f, "%s%s", first ? "" : ", ", t);
    if (with_names) fprintf(f, "out%d", i);
    first = 0;
  }
  if (first) fprintf(f, "void");
}

enum { DISP_MAX_RETURNS_GEN = 8 };

/* After a kernel call: a Tensor return the kernel left NULL although it
 * returned DISP_OK fails the call (returns_check.c), and the tensors it did
 * return are released so nothing leaks. ret_fmt spells return %d. */
static void emit_return_checks(FILE *c, const disp_schema *s, const disp_signature *sig, const char *ret_fmt,
                               const char *op, const char *ks_args) {
  /* An output_mask argument says which returns are wanted: 1.13 leaves the
   * others undefined (convolution_backward), so NULL is legal there. */
  for (size_t i = 0; i < s->num_args; i++)
    if (!strcmp(s->args[i].name, "output_mask")) return;
  char r[DISP_MAX_RETURNS_GEN][64];
  int n = 0, idx[DISP_MAX_RETURNS_GEN];
  for (int i = 0; i < sig->nrets && n < DISP_MAX_RETURNS_GEN; i++)
    if (sig->rets[i] == DISP_CT_TENSOR && s->rets[i].type->kind != DISP_TYPE_OPTIONAL)
      snprintf(r[n], sizeof r[n], ret_fmt, i), idx[n++] = i;
  if (n == 0) return;
  fprintf(c, "  if (st == DISP_OK && (");
  for (int k = 0; k < n; k++) fprintf(c, "%s!%s", k ? " || " : "", r[k]);
  fprintf(c, ")) {\n    int missing = ");
  for (int k = 0; k < n - 1; k++) fprintf(c, "!%s ? %d : ", r[k], idx[k]);
  fprintf(c, "%d;\n", idx[n - 1]);
  for (int k = 0; k < n; k++) fprintf(c, "    disp_tensor_release(%s);\n    %s = NULL;\n", r[k], r[k]);
  fprintf(c, "    st = disp__no_tensor_returned(%s, %s, missing);\n  }\n", op, ks_args);
}

static void call_args(FILE *f, const disp_schema *s, const disp_signature *sig) {
  int first = 1;
  for (int i = 0; i < sig->nargs; i++) {
    char nm[64];
    arg_name(nm, sizeof nm, s->args[i].name);
    fprintf(f, "%s%s", first ? "" : ", ", nm);
    first = 0;
  }
  for (int i = 0; i < sig->nrets; i++) fprintf(f, "%sout%d", first ? "" : ", ", i), first = 0;
}

/* The flags of device_check.h's disp__devices_check for decl d. */
static unsigned dev_flags(int d) {
  return (decls[d].kernels & DISP_K_CPU_SCALAR ? 1u : 0u) | (decls[d].kernels & DISP_K_CPU_SCALARS ? 2u : 0u);
}

static int is_written(const disp_schema *s, int i) { return s->args[i].alias && s->args[i].alias->is_write; }

/* Whether the operator writes any argument (in-place and out= ops). */
static int writes_any(const disp_schema *s) {
  for (size_t i = 0; i < s->num_args; i++)
    if (is_written(s, (int)i)) return 1;
  return 0;
}

/* What the device check of kind j's kernel of decl d looks at: Tensor and
 * Tensor? arguments (tensors), Tensor[] ones (lists), Device ones (devices),
 * ScalarType/Layout/MemoryFormat ones (enums, whose range is checked in
 * composite implicit kernels too: they may read the value themselves).
 * Tensors are checked when two could differ: two tensors, or a list. */
typedef struct dev_plan {
  int tensors, lists, devices, enums, check_tensors;
} dev_plan;

static int plan_wraps(dev_plan p) { return p.check_tensors || p.devices || p.enums; }

static dev_plan plan_devices(int d, const disp_signature *sig, size_t j) {
  dev_plan p = {0, 0, 0, 0, 0};
  for (int i = 0; i < sig->nargs; i++) {
    if (sig->args[i] == DISP_CT_TENSOR || sig->args[i] == DISP_CT_OPT_TENSOR) p.tensors++;
    else if (sig->args[i] == DISP_CT_TENSOR_LIST) p.lists++;
    else if (sig->args[i] == DISP_CT_DEVICE) p.devices++;
    else if (sig->args[i] == DISP_CT_ENUM) p.enums++;
  }
  p.check_tensors = kinds[j].checked == 2 && !(decls[d].kernels & DISP_K_ANY_DEVICE) && (p.tensors >= 2 || p.lists);
  if (!kinds[j].checked) p.devices = 0;
  if (!kinds[j].checked && kinds[j].flag != DISP_K_CIA) p.enums = 0;
  return p;
}

/* The name part of the body kind j's kernel of decl d runs: its own, or
 * the CPU kernel's for a Meta kernel the manifest marks META_IS_CPU. */
static const char *body_part(int d, size_t j) {
  return kinds[j].flag == DISP_K_META && (decls[d].kernels & DISP_K_META_IS_CPU) ? "cpu" : kinds[j].part;
}

/* The registered function of kind j's kernel of decl d: the kernel itself,
 * or its argument-checking wrapper. */
static void kernel_fn(char *buf, size_t n, int d, const disp_signature *sig, size_t j) {
  dev_plan p = plan_devices(d, sig, j);
  if (plan_wraps(p)) snprintf(buf, n, "argchk_%s_%s", kinds[j].part, decls[d].id);
  else snprintf(buf, n, "disp__%s_%s", body_part(d, j), decls[d].id);
}

/* "  return NAME(ks, a, b, out0);\n" */
static void emit_return_call(FILE *c, const char *name, const disp_schema *s, const disp_signature *sig, int with_ks) {
  char nm[64];
  fprintf(c, "  return %s(%s", name, with_ks ? "ks" : "");
  for (int i = 0; i < sig->nargs; i++) {
    arg_name(nm, sizeof nm, s->args[i].name);
    fprintf(c, "%s%s", i || with_ks ? ", " : "", nm);
  }
  for (int i = 0; i < sig->nrets; i++) fprintf(c, "%sout%d", i || sig->nargs || with_ks ? ", " : "", i);
  fprintf(c, ");\n");
}

/* The full rule, out of the hot path: the tensors in TensorIterator's
 * order (written ones first) and the lists, then the kernel. */
static void emit_slow_check(FILE *c, int d, const disp_schema *s, const disp_signature *sig, size_t j, dev_plan p,
                            const char *kernel) {
  char nm[64];
  int nout = 0;
  fprintf(c, "__attribute__((cold, noinline)) static disp_status devslow_%s_%s(", kinds[j].part, decls[d].id);
  params(c, s, sig, 1, kinds[j].with_ks);
  fprintf(c, ") {\n  const disp_tensor *dv[%d + 1] = {", p.tensors);
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < sig->nargs; i++) {
      if ((sig->args[i] != DISP_CT_TENSOR && sig->args[i] != DISP_CT_OPT_TENSOR) || is_written(s, i) != !pass) continue;
      arg_name(nm, sizeof nm, s->args[i].name);
      fprintf(c, "%s, ", nm);
      nout += !pass;
    }
  fprintf(c, "NULL};\n");
  if (p.lists) {
    fprintf(c, "  const disp_tensor_list dl[%d] = {", p.lists);
    for (int i = 0; i < sig->nargs; i++) {
      if (sig->args[i] != DISP_CT_TENSOR_LIST) continue;
      arg_name(nm, sizeof nm, s->args[i].name);
      fprintf(c, "%s, ", nm);
    }
    fprintf(c, "};\n");
  }
  fprintf(c, "  disp_status st = disp__devices_check(dv, %d, %d, %s, %d, %uu);\n  if (st != DISP_OK) return st;\n",
          p.tensors, nout, p.lists ? "dl" : "NULL", p.lists, dev_flags(d));
  emit_return_call(c, kernel, s, sig, kinds[j].with_ks);
  fprintf(c, "}\n\n");
}

/* The range of each ScalarType / Layout / MemoryFormat argument. */
static void emit_enum_checks(FILE *c, const disp_schema *s, const disp_signature *sig, dev_plan p) {
  char nm[64];
  for (int i = 0; i < sig->nargs && p.enums; i++) {
    if (sig->args[i] != DISP_CT_ENUM) continue;
    const disp_type *t = s->args[i].type;
    int optional = t->kind == DISP_TYPE_OPTIONAL;
    arg_name(nm, sizeof nm, s->args[i].name);
    fprintf(c, "  if (disp__enum_arg_check(%d, %s, %d, \"%s\") != DISP_OK) return DISP_ERR_INVALID_ARG;\n",
            (int)(optional ? t->elems[0]->kind : t->kind), nm, optional, s->args[i].name);
  }
}

/* The argument-checking wrapper of kind j's kernel of decl d: the Device
 * arguments; then a compare per tensor against the first Tensor (the fast
 * path, ending in a tail call of the kernel), the full rule only when one
 * differs or a list is involved. */
static void emit_device_wrapper(FILE *c, int d, const disp_schema *s, const disp_signature *sig, size_t j) {
  dev_plan p = plan_devices(d, sig, j);
  if (!plan_wraps(p)) return;
  char nm[64], ref[64] = "", kernel[128], slow[128];
  snprintf(kernel, sizeof kernel, "disp__%s_%s", body_part(d, j), decls[d].id);
  snprintf(slow, sizeof slow, "devslow_%s_%s", kinds[j].part, decls[d].id);
  if (p.check_tensors) emit_slow_check(c, d, s, sig, j, p, kernel);
  fprintf(c, "static disp_status argchk_%s_%s(", kinds[j].part, decls[d].id);
  params(c, s, sig, 1, kinds[j].with_ks);
  fprintf(c, ") {\n");
  emit_enum_checks(c, s, sig, p);
  for (int i = 0; i < sig->nargs; i++) {
    if (sig->args[i] != DISP_CT_DEVICE) continue;
    arg_name(nm, sizeof nm, s->args[i].name);
    fprintf(c, "  if (%s.has_value && disp__device_arg_check(%s) != DISP_OK) return DISP_ERR_INVALID_ARG;\n", nm, nm);
  }
  for (int i = 0; i < sig->nargs && !ref[0]; i++)
    if (sig->args[i] == DISP_CT_TENSOR) arg_name(ref, sizeof ref, s->args[i].name);
  if (p.check_tensors && (!ref[0] || p.lists)) {
    emit_return_call(c, slow, s, sig, kinds[j].with_ks);
    fprintf(c, "}\n\n");
    return;
  }
  if (p.check_tensors) {
    fprintf(c, "  if (__builtin_expect(0");
    for (int i = 0; i < sig->nargs; i++) {
      if (sig->args[i] != DISP_CT_TENSOR && sig->args[i] != DISP_CT_OPT_TENSOR) continue;
      arg_name(nm, sizeof nm, s->args[i].name);
      if (strcmp(nm, ref)) fprintf(c, " || disp__device_differs(%s, %s)", ref, nm);
    }
    fprintf(c, ", 0))\n  ");
    emit_return_call(c, slow, s, sig, kinds[j].with_ks);
  }
  emit_return_call(c, kernel, s, sig, kinds[j].with_ks);
  fprintf(c, "}\n\n");
}

/* Note [NULL arguments] for a typed entry: a NULL Tensor, Storage or str
 * (not str?), a NULL element of a Tensor[] or a NULL out-pointer is refused,
 * naming the header's parameter; a NULL Tensor? (or element of a Tensor?[])
 * or str? is None. */
static void emit_null_checks(FILE *c, const char *id, const disp_schema *s, const disp_signature *sig) {
  char nm[64];
  for (int i = 0; i < sig->nargs; i++) {
    arg_name(nm, sizeof nm, s->args[i].name);
    /* a str that is not optional too: NULL is how C says None */
    int required_str = sig->args[i] == DISP_CT_STR && s->args[i].type->kind != DISP_TYPE_OPTIONAL;
    if (sig->args[i] == DISP_CT_TENSOR || sig->args[i] == DISP_CT_STORAGE || required_str)
      fprintf(c, "  if (!%s) return disp__null_arg(\"disp_aten_%s\", \"%s\");\n", nm, id, nm);
    else if (sig->args[i] == DISP_CT_TENSOR_LIST && s->args[i].type->elems[0]->kind == DISP_TYPE_TENSOR)
      fprintf(c, "  if (null_in_list(\"disp_aten_%s\", \"%s\", %s)) return DISP_ERR_INVALID_ARG;\n", id, nm, nm);
  }
  for (int i = 0; i < sig->nrets; i++)
    fprintf(c, "  if (!out%d) return disp__null_arg(\"disp_aten_%s\", \"out%d\");\n", i, id, i);
}

FILE *open_output(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) perror(path);
  return f;
}

/* s as a C string literal. */
static void c_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

/* What disp/aten_impl.h's typed registration needs of decl d: the C
 * function types of its unboxed kernel, without and with the key set
 * (typedefs of function types, not pointers: a kernel can be declared with
 * one), its qualified name, its schema (the registered kernel carries it, so
 * a plugin built against another version's header is refused at run time
 * when the types differ) and the C type as text (the compile-time check's
 * message names it). */
static void emit_kernel_types(FILE *h, int d, const disp_schema *s, const disp_signature *sig) {
  const char *id = decls[d].id;
  for (int with_ks = 0; with_ks < 2; with_ks++) {
    fprintf(h, "typedef disp_status disp_aten_%s_kernel%s(", id, with_ks ? "_ks" : "");
    params(h, s, sig, 1, with_ks);
    fprintf(h, ");\n");
  }
  fprintf(h, "#define DISP_ATEN_NAME_%s \"%s\"\n#define DISP_ATEN_SCHEMA_%s ", id, s->qualified, id);
  c_string(h, decls[d].schema);
  fprintf(h, "\n#define DISP_ATEN_CTYPE_%s \"disp_status(", id);
  params(h, s, sig, 0, 0);
  fprintf(h, ")\"\n");
}

static void builtin_node(FILE *c, const char *kind, const char *key, const char *body) {
  fprintf(c, "    {.kind = %s, .ns = \"aten\", .key = DISP_KEY_%s, .body = %s, .file = __FILE__, .line = __LINE__},\n",
          kind, key, body);
}

/* One of the two lists the dispatcher drains before any DISP_LIBRARY block
 * (builtins_internal.h), kernels' first: together in the order the blocks
 * used to run: def, each kernel kind, then (autograd's) the Autocast kinds,
 * ADInplaceOrView and Autograd. The runtime offers both (Note [Start-up]). */
static void builtin_list(FILE *c, int autograd) {
  const char *list = autograd ? "disp__builtin_autograd_libraries" : "disp__builtin_kernel_libraries";
  fprintf(c, "disp_library_node %s[] = {\n", list);
  if (!autograd) builtin_node(c, "DISP_LIBRARY_DEF", "UNDEFINED", "aten_def");
  char body[64];
  for (size_t j = 0; j < sizeof kinds / sizeof *kinds; j++) {
    if (kind_in_autograd(j) != autograd) continue;
    snprintf(body, sizeof body, "aten_impl_%s", kinds[j].key);
    builtin_node(c, "DISP_LIBRARY_IMPL", kinds[j].key, body);
  }
  if (autograd) {
    builtin_node(c, "DISP_LIBRARY_IMPL", "AD_INPLACE_OR_VIEW", "aten_impl_AD_INPLACE_OR_VIEW");
    builtin_node(c, "DISP_LIBRARY_IMPL", "AUTOGRAD", "disp__aten_impl_autograd");
  }
  fprintf(c, "};\nconst size_t %s_count = sizeof %s / sizeof *%s;\n\n", list, list, list);
}

/* ---- derivatives (autograd module) ------------------------------------- */

/* Whether backward function `name` was named by an earlier row (rows share
 * one: add and add_). */
static int backward_seen_before(int d) {
  for (int e = 0; e < d; e++)
    if (decls[e].grad.backward && !strcmp(decls[e].grad.backward, decls[d].grad.backward)) return 1;
  return 0;
}

/* aten_backward.h: the prototype of every backward function the manifest
 * names; src/autograd/formula.h includes it, so a formula file defining
 * one (AG_BACKWARD) is checked against it, and a missing one fails the link. */
static int write_backward_header(const char *dir) {
  FILE *b = open_output(dir, "aten_backward.h");
  if (!b) return 1;
  fprintf(b, "/* Generated by tools/gen_aten.c from src/kernels/manifest.def. Do not edit. */\n"
             "#ifndef DISP_ATEN_BACKWARD_H\n#define DISP_ATEN_BACKWARD_H\n\n");
  for (int d = 0; d < NDECLS; d++)
    if (decls[d].grad.backward && !backward_seen_before(d)) fprintf(b, "AG_BACKWARD(%s);\n", decls[d].grad.backward);
  fprintf(b, "\n#endif\n");
  return fclose(b) != 0;
}

/* aten_formulas.c: the formula of every row with .grad = GRAD(...), and the
 * operators of NOT_DIFFERENTIABLE rows (register.c binds both). */
static int write_formulas(const char *dir, disp_schema *const *schemas) {
  FILE *f = open_output(dir, "aten_formulas.c");
  if (!f) return 1;
  fprintf(f, "/* Generated by tools/gen_aten.c from src/kernels/manifest.def. Do not edit. */\n"
             "#include \"autograd/formula.h\"\n\nconst ag_formula disp__ag_formulas[] = {\n");
  for (int d = 0; d < NDECLS; d++) {
    const grad_spec *g = &decls[d].grad;
    if (!g->backward) continue;
    fprintf(f, "    {\"%s\", \"%s\", \"%s\", \"%s\", disp__bw_%s, ", schemas[d]->qualified, g->node, g->inputs,
            g->saved, g->backward);
    if (decls[d].nondiff_outputs) fprintf(f, "\"%s\"},\n", decls[d].nondiff_outputs);
    else fprintf(f, "NULL},\n");
  }
  fprintf(f, "};\nconst size_t disp__ag_formula_count = sizeof disp__ag_formulas / sizeof *disp__ag_formulas;\n\n"
             "const char *const disp__ag_not_differentiable[] = {\n");
  for (int d = 0; d < NDECLS; d++)
    if (decls[d].grad.not_differentiable) fprintf(f, "    \"%s\",\n", schemas[d]->qualified);
  fprintf(f, "};\nconst size_t disp__ag_not_differentiable_count =\n"
             "    sizeof disp__ag_not_differentiable / sizeof *disp__ag_not_differentiable;\n");
  return fclose(f) != 0;
}

/* The stub table (stub_registry.c): each row with .stub, its kernel
 * disp__stub_ID. */
static void write_stub_table(FILE *c, disp_schema *const *schemas) {
  fprintf(c, "const disp__stub_op disp__stub_ops[DISP__STUB_OP_COUNT] = {\n");
  for (int d = 0; d < NDECLS; d++)
    if (decls[d].stub)
      fprintf(c, "    {\"%s\", DISP_FN(disp__stub_%s), 0x%xu},\n", schemas[d]->qualified, decls[d].id, decls[d].stub);
  fprintf(c, "};\n\n");
}

/* aten_ops.txt: the schemas, one a line, in manifest order. */
static int write_ops_list(const char *dir) {
  FILE *o = open_output(dir, "aten_ops.txt");
  if (!o) return 1;
  for (int d = 0; d < NDECLS; d++) fprintf(o, "%s\n", decls[d].schema);
  return fclose(o) != 0;
}

/* A row's fields that contradict each other or the schema. */
static int check_row(int d, const disp_schema *s) {
  const decl *r = &decls[d];
  if (r->grad.backward && (r->kernels & DISP_K_CIA)) {
    fprintf(stderr, "gen_aten: %s: a CompositeImplicitAutograd operator is differentiated through its calls; "
                    "it takes no .grad\n", r->id);
    return 1;
  }
  if ((r->kernels & DISP_K_META_IS_CPU) && !((r->kernels & DISP_K_META) && (r->kernels & DISP_K_CPU))) {
    fprintf(stderr, "gen_aten: %s: META_IS_CPU needs both CPU and META\n", r->id);
    return 1;
  }
  if (r->grad.backward) {
    for (int e = 0; e < d; e++)
      if (!strcmp(decls[e].id, r->id)) {
        fprintf(stderr, "gen_aten: %s: two rows\n", r->id);
        return 1;
      }
  }
  (void)s;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: gen_aten OUTDIR\n");
    return 2;
  }
  disp_schema *schemas[NDECLS];
  disp_signature *sigs[NDECLS];
  for (int d = 0; d < NDECLS; d++) {
    if (disp_schema_parse(decls[d].schema, &schemas[d]) != DISP_OK ||
        disp__signature_new(schemas[d], &sigs[d]) != DISP_OK) {
      fprintf(stderr, "gen_aten: %s: %s\n", decls[d].id, disp_last_error());
      return 1;
    }
    if (!sigs[d]->supported) {
      fprintf(stderr, "gen_aten: %s: a type has no C mapping\n", decls[d].id);
      return 1;
    }
    if (check_row(d, schemas[d])) return 1;
  }
  if (write_backward_header(argv[1]) || write_formulas(argv[1], schemas) || write_ops_list(argv[1]) ||
      gen_api_write(argv[1], decls, NDECLS, schemas, sigs))
    return 1;

  /* ---- disp/aten.h --------------------------------------------------- */
  FILE *h = open_output(argv[1], "disp/aten.h");
  if (!h) return 1;
  fprintf(h, "/* Generated by tools/gen_aten.c from src/kernels/manifest.def. Do not edit. */\n"
             "/*\n * disp/aten.h - typed entry points of the built-in aten operators.\n *\n"
             " * disp_aten_ID(args..., outs...) dispatches ID like any call (its tensors'\n"
             " * key sets, the thread-local state, the operator's table) without boxing\n"
             " * or libffi. Arguments and returns follow disp/value.h's mapping; each\n"
             " * return is a new reference the caller releases. Thread-safe.\n *\n"
             " * For kernels of ID (disp/aten_impl.h's DISP_IMPL_ATEN checks them):\n"
             " *   disp_aten_ID_kernel     the C function type of an unboxed kernel\n"
             " *   disp_aten_ID_kernel_ks  the same taking the key set first\n"
             " *                           (DISP_KERNEL_WITH_KEYSET)\n"
             " *   DISP_ATEN_NAME_ID       \"aten::name.overload\"\n"
             " *   DISP_ATEN_SCHEMA_ID     the schema text\n"
             " *   DISP_ATEN_CTYPE_ID      disp_aten_ID_kernel as text, for messages\n */\n"
             "#ifndef DISP_ATEN_H\n#define DISP_ATEN_H\n\n#include \"disp/value.h\"\n#include \"disp/keyset.h\"\n\n"
             "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
  for (int d = 0; d < NDECLS; d++) {
    fprintf(h, "/* %s */\nDISP_API disp_status disp_aten_%s(", decls[d].schema, decls[d].id);
    params(h, schemas[d], sigs[d], 1, 0);
    fprintf(h, ");\n");
    emit_kernel_types(h, d, schemas[d], sigs[d]);
    fprintf(h, "\n");
  }
  fprintf(h, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
  fclose(h);

  /* ---- aten_kernels.h ------------------------------------------------ */
  FILE *k = open_output(argv[1], "aten_kernels.h");
  if (!k) return 1;
  fprintf(k, "/* Generated by tools/gen_aten.c from src/kernels/manifest.def. Do not edit. */\n"
             "/* The prototype of every built-in kernel: disp__KIND_ID, KIND one of cpu, meta,\n"
             " * cia, cea, ceanf, bsel, autocast_cpu, autocast_cuda. The registration refers to\n"
             " * each one strongly: a kernel the table names but nobody wrote fails the link. */\n"
             "#ifndef DISP_ATEN_KERNELS_H\n#define DISP_ATEN_KERNELS_H\n\n#include <disp.h>\n\n");
  for (int d = 0; d < NDECLS; d++)
    for (size_t j = 0; j < sizeof kinds / sizeof *kinds; j++) {
      if (!(decls[d].kernels & kinds[j].flag) || strcmp(body_part(d, j), kinds[j].part)) continue;
      fprintf(k, "disp_status disp__%s_%s(", kinds[j].part, decls[d].id);
      params(k, schemas[d], sigs[d], 1, kinds[j].with_ks);
      fprintf(k, ");\n");
    }
  int nstub = 0;
  for (int d = 0; d < NDECLS; d++) {
    if (!decls[d].stub) continue;
    fprintf(k, "disp_status disp__stub_%s(", decls[d].id);
    params(k, schemas[d], sigs[d], 1, 0);
    fprintf(k, ");\n");
    nstub++;
  }
  fprintf(k, "/* The rows of disp__stub_ops (stub_internal.h). */\n#define DISP__STUB_OP_COUNT %d\n", nstub);
  fprintf(k, "\n/* The Autograd pass-through of every operator without a CompositeImplicitAutograd\n"
             " * kernel; src/autograd registers it where no derivative formula is written. */\n"
             "typedef struct disp__ag_passthrough { const char *op; disp_fn fn; int id; } disp__ag_passthrough;\n"
             "/* Per operator (ATEN_ID): the formula src/autograd bound to it, NULL when none. Set once at\n"
             " * registration, before any call can read it. */\n"
             "extern const void *disp__aten_autograd_info[];\n"
             "/* Grad mode on and t (NULL: None) requires grad, a view also when its base does (1.13's\n"
             " * requires_grad()); any element of l does. */\n"
             "int disp__ag_requires_grad(const disp_tensor *t);\n"
             "int disp__ag_list_requires_grad(disp_tensor_list l);\n"
             "/* Marks view, the output of a view operator, as a view of input, as 1.13's as_view in its\n"
             " * ADInplaceOrView kernels (src/autograd/view_meta.c); DISP_ERR_NO_MEMORY with a message. */\n"
             "disp_status disp__ag_view_created(disp_tensor *input, disp_tensor *view);\n"
             "/* The Autograd kernel of every formula (src/autograd/record.c). */\n"
             "disp_status disp__ag_record_kernel(const disp_op *op, disp_keyset ks, disp_stack *st, void *info);\n"
             "extern const disp__ag_passthrough disp__aten_autograd_passthroughs[];\n"
             "extern const size_t disp__aten_autograd_passthrough_count;\n"
             "/* Registers the built-in Autograd kernels (src/autograd/record.c). */\n"
             "void disp__aten_impl_autograd(disp_library *m);\n");
  fprintf(k, "\n#endif\n");
  fclose(k);

  /* ---- aten_ids.h ---------------------------------------------------- */
  FILE *ids = open_output(argv[1], "aten_ids.h");
  if (!ids) return 1;
  fprintf(ids, "/* Generated by tools/gen_aten.c from src/kernels/manifest.def. Do not edit. */\n"
               "/* ATEN_ID: each built-in operator's index, in manifest order, shared by\n"
               " * aten_gen.c (kernels module) and aten_autograd_gen.c (autograd module). */\n"
               "#ifndef DISP_ATEN_IDS_H\n#define DISP_ATEN_IDS_H\n\n#include <disp.h>\n\nenum {\n");
  for (int d = 0; d < NDECLS; d++) fprintf(ids, "  ATEN_%s,\n", decls[d].id);
  fprintf(ids, "  ATEN_COUNT\n};\n\n"
               "/* The operator of ATEN_ID id, found once and cached until disp_shutdown\n"
               " * (aten_gen.c); NULL when it is not registered (disp_op_find set the\n"
               " * message). Lock-free, thread-safe. */\n"
               "const disp_op *disp__aten_handle(int id);\n\n#endif\n");
  if (fclose(ids) != 0) return 1;

  /* ---- aten_gen.c ---------------------------------------------------- */
  FILE *c = open_output(argv[1], "aten_gen.c");
  if (!c) return 1;
  fprintf(c, "/* Generated by tools/gen_aten.c from src/kernels/manifest.def. Do not edit. */\n"
             "#include <disp.h>\n#include \"disp/aten.h\"\n#include \"aten_ids.h\"\n#include \"aten_kernels.h\"\n"
             "#include \"aten_internal.h\"\n#include \"argcheck_internal.h\"\n#include \"builtins_internal.h\"\n#include \"device_check.h\"\n"
             "#include \"error_internal.h\"\n#include \"library_internal.h\"\n#include \"returns_check_internal.h\"\n"
             "#include \"signature_internal.h\"\n#include \"stack_internal.h\"\n#include \"stub_internal.h\"\n"
             "#include \"tls_internal.h\"\n\n"
             "/* A NULL array with elements, or a NULL element: refused (Note [NULL arguments]). */\n"
             "static int null_in_list(const char *fn, const char *arg, disp_tensor_list l) {\n"
             "  if (l.len && !l.data) return disp__null_arg(fn, arg), 1;\n"
             "  for (size_t i = 0; i < l.len; i++)\n"
             "    if (!l.data[i]) return disp__fail(DISP_ERR_INVALID_ARG, \"%%s: %%s[%%zu] is NULL\", fn, arg, i), 1;\n"
             "  return 0;\n}\n\n");
  fprintf(c, "static const char *const aten_names[ATEN_COUNT] = {\n");
  for (int d = 0; d < NDECLS; d++) fprintf(c, "  \"%s\",\n", schemas[d]->qualified);
  fprintf(c, "};\n\n");
  fprintf(c, "static _Atomic(const disp_op *) aten_handles[ATEN_COUNT];\n\n"
             "static void aten_forget(void) {\n"
             "  for (int i = 0; i < ATEN_COUNT; i++) atomic_store(&aten_handles[i], NULL);\n}\n\n"
             "static const disp_op *aten_op(int id) {\n"
             "  const disp_op *op = atomic_load_explicit(&aten_handles[id], memory_order_acquire);\n"
             "  if (__builtin_expect(op != NULL, 1)) return op;\n"
             "  if (disp_op_find(aten_names[id], &op) != DISP_OK) return NULL;\n"
             "  disp__at_shutdown(aten_forget);\n"
             "  atomic_store_explicit(&aten_handles[id], op, memory_order_release);\n"
             "  return op;\n}\n\n"
             "const disp_op *disp__aten_handle(int id) { return aten_op(id); }\n\n");

  for (int d = 0; d < NDECLS; d++) {
    const disp_schema *s = schemas[d];
    const disp_signature *sig = sigs[d];
    const char *id = decls[d].id;
    /* typed entry point; a Tensor return left NULL by a kernel that said
     * DISP_OK is an error (returns_check.c), at every generated call site */
    fprintf(c, "disp_status disp_aten_%s(", id);
    params(c, s, sig, 1, 0);
    fprintf(c, ") {\n");
    emit_null_checks(c, id, s, sig);
    fprintf(c, "  const disp_op *op = aten_op(ATEN_%s);\n  if (!op) return DISP_ERR_OP_NOT_FOUND;\n"
               "  disp_keyset keys = {0};\n", id);
    for (int i = 0; i < sig->nargs; i++) {
      char nm[64];
      arg_name(nm, sizeof nm, s->args[i].name);
      if (sig->args[i] == DISP_CT_TENSOR) fprintf(c, "  keys.repr |= disp__tensor_keys(%s).repr;\n", nm);
      else if (sig->args[i] == DISP_CT_OPT_TENSOR) fprintf(c, "  if (%s) keys.repr |= disp__tensor_keys(%s).repr;\n", nm, nm);
      else if (sig->args[i] == DISP_CT_TENSOR_LIST) fprintf(c, "  keys.repr |= disp__tensor_list_keys(%s).repr;\n", nm);
    }
    /* Tensor returns start NULL, so one a kernel leaves unset is seen; a
     * failed call leaves the caller's variable as it was (keep%d) */
    for (int i = 0; i < sig->nrets; i++)
      if (sig->rets[i] == DISP_CT_TENSOR) fprintf(c, "  disp_tensor *keep%d = *out%d;\n  *out%d = NULL;\n", i, i, i);
    fprintf(c, "  disp_status st;\n  DISP_CALL(st, op, keys, (");
    params(c, s, sig, 0, 0);
    fprintf(c, "), ");
    call_args(c, s, sig);
    fprintf(c, ");\n");
    emit_return_checks(c, s, sig, "*out%d", "op", "keys, 1");
    for (int i = 0; i < sig->nrets; i++)
      if (sig->rets[i] == DISP_CT_TENSOR) fprintf(c, "  if (st != DISP_OK && !*out%d) *out%d = keep%d;\n", i, i, i);
    fprintf(c, "  return st;\n}\n\n");
    /* boxed adapter: arguments viewed in place on the stack, tensors
     * without a function call, returns written where the arguments were.
     * Every boxed entry checked the values against the schema already (Note
     * [Checking boxed values]); unboxing checks again, so that a failure
     * here can only leave the stack empty: the returns start out NULL, the
     * arguments are released once, at `fail`. The error sequence number
     * tells whether a failing kernel set a message (error_internal.h). */
    fprintf(c, "static disp_status adapt_%s(const disp_op *op, disp_fn fn, int with_ks, disp_keyset ks, disp_stack *stack) {\n"
               "  disp_value *av = disp__stack_top(stack, %d);\n"
               "  disp_cvalue a[%d + 1], r[%d + 1];\n  disp_status st = DISP_OK;\n"
               "  uint64_t seq = disp__error_seq;\n", id, sig->nargs, sig->nargs, sig->nrets);
    for (int i = 0; i < sig->nrets; i++) {
      if (sig->rets[i] == DISP_CT_TENSOR) fprintf(c, "  r[%d].tensor = NULL;\n", i);
      else fprintf(c, "  memset(&r[%d], 0, sizeof r[%d]);\n", i, i);
    }
    for (int i = 0; i < sig->nargs; i++) {
      if (sig->args[i] == DISP_CT_TENSOR)
        fprintf(c, "  if (av[%d].tag == DISP_VALUE_TENSOR) a[%d].tensor = av[%d].u.tensor;\n  else", i, i, i);
      fprintf(c, "  if ((st = disp__cvalue_unbox((disp_ctype)%d, &av[%d], &a[%d])) != DISP_OK) goto fail;\n",
              (int)sig->args[i], i, i);
    }
    fprintf(c, "  st = with_ks ? ((disp_status (*)(");
    params(c, s, sig, 0, 1);
    fprintf(c, "))fn)(ks");
    for (int i = 0; i < sig->nargs; i++) fprintf(c, ", a[%d].%s", i, field(sig->args[i]));
    for (int i = 0; i < sig->nrets; i++) fprintf(c, ", &r[%d].%s", i, field(sig->rets[i]));
    fprintf(c, ")\n               : ((disp_status (*)(");
    params(c, s, sig, 0, 0);
    fprintf(c, "))fn)(");
    int first = 1;
    for (int i = 0; i < sig->nargs; i++) fprintf(c, "%sa[%d].%s", first ? "" : ", ", i, field(sig->args[i])), first = 0;
    for (int i = 0; i < sig->nrets; i++) fprintf(c, "%s&r[%d].%s", first ? "" : ", ", i, field(sig->rets[i])), first = 0;
    fprintf(c, ");\n");
    emit_return_checks(c, s, sig, "r[%d].tensor", "op", "ks, 0");
    /* Re-derive av: fewer values live across the kernel call. */
    fprintf(c, "  av = disp__stack_top(stack, %d);\n", sig->nargs);
    fprintf(c, "fail:\n");
    for (int i = 0; i < sig->nargs; i++) {
      if (sig->args[i] == DISP_CT_TENSOR)
        fprintf(c, "  if (av[%d].tag == DISP_VALUE_TENSOR) disp__tensor_release_fast(av[%d].u.tensor);\n  else", i, i);
      fprintf(c, "  disp_value_clear(&av[%d]);\n", i);
    }
    fprintf(c, "  stack->len -= %d;\n", sig->nargs);
    if (sig->nrets == 1 && sig->rets[0] == DISP_CT_TENSOR)
      fprintf(c, "  if (st != DISP_OK) {\n    disp_tensor_release(r[0].tensor);\n    disp__error_name_op(disp_op_name(op), st, seq);\n    return st;\n  }\n"
                 "  return disp__stack_push_tensor_fast(stack, r[0].tensor);\n}\n\n");
    else {
      fprintf(c, "  if (st != DISP_OK) disp__error_name_op(disp_op_name(op), st, seq);\n");
      fprintf(c, "  return disp__push_returns(stack, st, r, (const disp_ctype[]){");
      for (int i = 0; i < sig->nrets; i++) fprintf(c, "%s(disp_ctype)%d", i ? ", " : "", (int)sig->rets[i]);
      fprintf(c, "%s}, %d);\n}\n\n", sig->nrets ? "" : "0", sig->nrets);
    }
  }

  /* ---- aten_autograd_gen.c ------------------------------------------- */
  FILE *a = open_output(argv[1], "aten_autograd_gen.c");
  if (!a) return 1;
  fprintf(a, "/* Generated by tools/gen_aten.c from src/kernels/manifest.def. Do not edit. */\n"
             "/* The autograd module's part of the built-in operators: the Autograd\n"
             " * pass-through, ADInplaceOrView and Autocast kernels' registration. It uses\n"
             " * the kernels module (disp__aten_handle), never the reverse. */\n"
             "#include <disp.h>\n#include \"disp/aten.h\"\n#include \"aten_ids.h\"\n#include \"aten_kernels.h\"\n"
             "#include \"aten_internal.h\"\n#include \"argcheck_internal.h\"\n#include \"builtins_internal.h\"\n"
             "#include \"device_check.h\"\n#include \"error_internal.h\"\n#include \"library_internal.h\"\n"
             "#include \"returns_check_internal.h\"\n#include \"tls_internal.h\"\n\n"
             "const void *disp__aten_autograd_info[ATEN_COUNT];\n\n");

  /* Autograd pass-through kernels: every operator without a
   * CompositeImplicitAutograd kernel gets one on the Autograd alias key, as
   * PyTorch's generated VariableType kernels. With no gradient to record
   * they redispatch below autograd, unboxed, with 1.13's guard around the
   * call (gen_variable_type.py emit_call): a view or in-place operator runs
   * below autograd (AutoDispatchBelowAutograd: its ADInplaceOrView kernel
   * still tracks the view or bumps the version), any other below
   * ADInplaceOrView too (AutoDispatchBelowADInplaceOrView), so the in-place
   * ops its kernel runs on a fresh result (clone's copy_, zeros_like's
   * zero_) leave that result at version 0 (Note [Excluding keys around a
   * redispatch]). The autograd layer hands the call to its recording kernel
   * when a gradient is wanted. */
  for (int d = 0; d < NDECLS; d++) {
    if (decls[d].kernels & DISP_K_CIA) continue;
    const disp_schema *s = schemas[d];
    const disp_signature *sig = sigs[d];
    fprintf(a, "static disp_status autograd_%s(", decls[d].id);
    params(a, s, sig, 1, 1);
    fprintf(a, ") {\n  const void *info = disp__aten_autograd_info[ATEN_%s];\n  if (info && (", decls[d].id);
    int any = 0;
    for (int i = 0; i < sig->nargs; i++) {
      char nm[64];
      arg_name(nm, sizeof nm, s->args[i].name);
      if (sig->args[i] == DISP_CT_TENSOR || sig->args[i] == DISP_CT_OPT_TENSOR)
        fprintf(a, "%sdisp__ag_requires_grad(%s)", any++ ? " || " : "", nm);
      else if (sig->args[i] == DISP_CT_TENSOR_LIST)
        fprintf(a, "%sdisp__ag_list_requires_grad(%s)", any++ ? " || " : "", nm);
    }
    fprintf(a, "%s))\n    return disp_call_boxed_kernel(disp__aten_handle(ATEN_%s), disp__ag_record_kernel, (void *)info, ks, ",
            any ? "" : "0", decls[d].id);
    call_args(a, s, sig);
    int view_or_inplace = (s->num_rets > 0 && s->rets[0].alias) || writes_any(s);
    fprintf(a, ");\n  disp_status st;\n");
    for (int i = 0; i < sig->nrets; i++)
      if (sig->rets[i] == DISP_CT_TENSOR) fprintf(a, "  *out%d = NULL;\n", i);
    fprintf(a, "  uint64_t keep = disp__tls_exclude_fast(%s);\n"
               "  DISP_REDISPATCH(st, disp__aten_handle(ATEN_%s), disp_keyset_and(ks, disp_keyset_after_autograd()), (",
            view_or_inplace ? "DISP__BELOW_AUTOGRAD" : "DISP__BELOW_AD_INPLACE_OR_VIEW", decls[d].id);
    params(a, s, sig, 0, 0);
    fprintf(a, "), ");
    call_args(a, s, sig);
    fprintf(a, ");\n  disp__tls_exclude_restore(keep);\n");
    char opexpr[96];
    snprintf(opexpr, sizeof opexpr, "disp__aten_handle(ATEN_%s)", decls[d].id);
    emit_return_checks(a, s, sig, "*out%d", opexpr, "disp_keyset_and(ks, disp_keyset_after_autograd()), 0");
    fprintf(a, "  return st;\n}\n\n");
  }

  /* ADInplaceOrView kernels, as PyTorch's generated ones: run the op below
   * this key, then bump the version counter of every argument the schema
   * says is written (Tensor(a!)), so autograd can tell a saved tensor was
   * modified, or mark a view op's output as a view of its first argument
   * (1.13's as_view; the kernels already share storage and version counter
   * with the base), in every mode, as 1.13 does. detach's output is no
   * differentiable view (1.13's as_view with is_bw_differentiable false).
   * The op runs with autograd and ADInplaceOrView excluded
   * (AutoDispatchBelowADInplaceOrView), so the calls a kernel makes (add_'s
   * CompositeExplicitAutogradNonFunctional kernel calls add.out on self) do
   * not bump self a second time. */
  for (int d = 0; d < NDECLS; d++) {
    if (!(decls[d].kernels & DISP_K_ADIOV)) continue;
    const disp_schema *s = schemas[d];
    const disp_signature *sig = sigs[d];
    fprintf(a, "static disp_status adinplace_%s(", decls[d].id);
    params(a, s, sig, 1, 1);
    fprintf(a, ") {\n  disp_status st;\n  uint64_t keep = disp__tls_exclude_fast(DISP__BELOW_AD_INPLACE_OR_VIEW);\n"
               "  DISP_REDISPATCH(st, disp__aten_handle(ATEN_%s), "
               "disp_keyset_and(ks, disp_keyset_full_after(DISP_KEY_AD_INPLACE_OR_VIEW)), (", decls[d].id);
    params(a, s, sig, 0, 0);
    fprintf(a, "), ");
    call_args(a, s, sig);
    fprintf(a, ");\n  disp__tls_exclude_restore(keep);\n  if (st != DISP_OK) return st;\n");
    int view = s->num_rets > 0 && s->rets[0].alias && !s->rets[0].alias->is_write && sig->args[0] == DISP_CT_TENSOR;
    if (view && sig->rets[0] == DISP_CT_TENSOR_VEC) {
      /* Tensor(a)[] (split): every element is a view of the input */
      char nm[64];
      arg_name(nm, sizeof nm, s->args[0].name);
      fprintf(a, "  for (size_t e = 0; e < out0->len && st == DISP_OK; e++)\n"
                 "    st = disp__ag_view_created(%s, out0->data[e]);\n"
                 "  if (st != DISP_OK) disp_tensor_vec_free(out0);\n", nm);
    } else if (view && strcmp(schemas[d]->qualified, "aten::detach")) {
      char nm[64];
      arg_name(nm, sizeof nm, s->args[0].name);
      fprintf(a, "  st = disp__ag_view_created(%s, *out0);\n  if (st != DISP_OK) {\n"
                 "    disp_tensor_release(*out0);\n    *out0 = NULL;\n  }\n", nm);
    }
    int writes = 0;
    for (int i = 0; i < sig->nargs; i++) {
      if (sig->args[i] != DISP_CT_TENSOR || !s->args[i].alias || !s->args[i].alias->is_write) continue;
      char nm[64];
      arg_name(nm, sizeof nm, s->args[i].name);
      fprintf(a, "  if (st == DISP_OK) st = disp_tensor_bump_version(%s);\n", nm);
      writes++;
    }
    /* A failed bump (an inference tensor written outside inference mode)
     * fails the call: hand back no result. */
    if (writes) {
      fprintf(a, "  if (st != DISP_OK) {\n");
      for (int i = 0; i < sig->nrets; i++)
        if (sig->rets[i] == DISP_CT_TENSOR) fprintf(a, "    disp_tensor_release(*out%d);\n    *out%d = NULL;\n", i, i);
      fprintf(a, "  }\n");
    }
    fprintf(a, "  return st;\n}\n\n");
  }

  for (int d = 0; d < NDECLS; d++)
    for (size_t j = 0; j < sizeof kinds / sizeof *kinds; j++)
      if (decls[d].kernels & kinds[j].flag) emit_device_wrapper(kind_in_autograd(j) ? a : c, d, schemas[d], sigs[d], j);

  /* registration: one function per library, then the list of them */
  fprintf(c, "static void aten_def(disp_library *m) {\n");
  for (int d = 0; d < NDECLS; d++)
  {
    fprintf(c, "  disp__library_def_builtin(m, ");
    c_string(c, decls[d].schema);
    fprintf(c, ", DISP_FN(adapt_%s));\n", decls[d].id);
  }
  fprintf(c, "}\n\n");
  for (size_t j = 0; j < sizeof kinds / sizeof *kinds; j++) {
    FILE *kf = kind_in_autograd(j) ? a : c;
    fprintf(kf, "static void aten_impl_%s(disp_library *m) {\n", kinds[j].key);
    for (int d = 0; d < NDECLS; d++) {
      if (!(decls[d].kernels & kinds[j].flag)) continue;
      char fn[160];
      kernel_fn(fn, sizeof fn, d, sigs[d], j);
      fprintf(kf, "  disp_library_impl(m, \"%s\", disp_kernel_unboxed(DISP_FN(%s), %s), NULL);\n",
              schemas[d]->qualified, fn, kinds[j].with_ks ? "DISP_KERNEL_WITH_KEYSET" : "0");
    }
    fprintf(kf, "}\n\n");
  }
  fprintf(a, "static void aten_impl_AD_INPLACE_OR_VIEW(disp_library *m) {\n");
  for (int d = 0; d < NDECLS; d++) {
    if (!(decls[d].kernels & DISP_K_ADIOV)) continue;
    fprintf(a, "  disp_library_impl(m, \"%s\", disp_kernel_unboxed(DISP_FN(adinplace_%s), DISP_KERNEL_WITH_KEYSET), NULL);\n",
            schemas[d]->qualified, decls[d].id);
  }
  fprintf(a, "}\n\n");
  fprintf(a, "const disp__ag_passthrough disp__aten_autograd_passthroughs[] = {\n");
  for (int d = 0; d < NDECLS; d++) {
    if (decls[d].kernels & DISP_K_CIA) continue;
    fprintf(a, "  {\"%s\", DISP_FN(autograd_%s), ATEN_%s},\n", schemas[d]->qualified, decls[d].id, decls[d].id);
  }
  fprintf(a, "};\nconst size_t disp__aten_autograd_passthrough_count =\n"
             "    sizeof disp__aten_autograd_passthroughs / sizeof *disp__aten_autograd_passthroughs;\n\n");
  write_stub_table(c, schemas);
  builtin_list(c, 0);
  builtin_list(a, 1);
  int failed = fclose(c) != 0; /* both closed, whichever fails */
  failed |= fclose(a) != 0;
  if (failed) return 1;
  for (int d = 0; d < NDECLS; d++) {
    disp__signature_free(sigs[d]);
    disp_schema_free(schemas[d]);
  }
  return 0;
}
