/*
 * gen_api.c - the concise face of the built-in operators (include/disp/easy.h),
 * generated from the manifest rows that carry `.api = "NAME"`.
 *
 * Per row, into OUTDIR/disp/easy_ops.h and OUTDIR/easy_ops.c:
 *   disp_NAME_opts   the arguments 1.13 gives a default, and the optional
 *                    ones (T?: None when omitted),
 *                    as fields named after the schema's arguments
 *   disp_NAME_with   the function: the schema's other arguments in order,
 *                    then the options; returns the result (NULL on failure)
 *   disp_NAME(...)   a macro: the positional arguments, then any options by
 *                    name (.alpha = 2), the schema's defaults for the rest
 *   A row without options gets the function disp_NAME itself.
 *
 * The concise C type of a schema type (Note [Concise argument types] in
 * include/disp/easy.h): Tensor and Tensor? -> disp_tensor *; Tensor[] ->
 * disp_tensor_list; int -> int64_t (int reduction -> disp_reduction); int? ->
 * int64_t, DISP_NONE_INT = None; int[] and int[]? -> disp_dims (by value;
 * DISP_DIMS(...) builds one, DISP_DIMS_NONE is None); float, Scalar -> double;
 * float?, Scalar? -> double, NaN (DISP_NONE) = None; bool -> bool;
 * ScalarType(?) -> disp_dtype, DISP_DTYPE_NONE = None. Any other argument
 * with a default (Layout?, Device?, Generator?, ...) is not offered and
 * always passes its default; a row needing one without a default fails the
 * build, as does a row whose result is not one Tensor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_aten.h"
#include "schema_internal.h"

/* The concise kinds of an argument. */
typedef enum ekind {
  E_HIDDEN, /* not offered: its default is passed */
  E_TENSOR, E_OPT_TENSOR, E_TENSOR_LIST,
  E_INT, E_OPT_INT, E_INT_LIST, E_OPT_INT_LIST, E_REDUCTION,
  E_DOUBLE, E_OPT_DOUBLE, E_SCALAR, E_OPT_SCALAR,
  E_BOOL, E_DTYPE, E_OPT_DTYPE, E_STR,
  E_UNSUPPORTED
} ekind;

static const char *const ctypes[] = {
    [E_TENSOR] = "disp_tensor *", [E_OPT_TENSOR] = "disp_tensor *", [E_TENSOR_LIST] = "disp_tensor_list",
    [E_INT] = "int64_t", [E_OPT_INT] = "int64_t", [E_INT_LIST] = "disp_dims",
    [E_OPT_INT_LIST] = "disp_dims", [E_REDUCTION] = "disp_reduction", [E_DOUBLE] = "double",
    [E_OPT_DOUBLE] = "double", [E_SCALAR] = "double", [E_OPT_SCALAR] = "double", [E_BOOL] = "bool",
    [E_DTYPE] = "disp_dtype", [E_OPT_DTYPE] = "disp_dtype", [E_STR] = "const char *",
};

static ekind kind_of(const disp_schema *s, const disp_signature *sig, int i) {
  const disp_type *t = s->args[i].type;
  int opt = t->kind == DISP_TYPE_OPTIONAL;
  const disp_type *e = opt ? t->elems[0] : t;
  switch (sig->args[i]) {
    case DISP_CT_TENSOR: return E_TENSOR;
    case DISP_CT_OPT_TENSOR: return E_OPT_TENSOR;
    case DISP_CT_TENSOR_LIST: return e->elems[0]->kind == DISP_TYPE_TENSOR ? E_TENSOR_LIST : E_UNSUPPORTED;
    case DISP_CT_INT: return strcmp(s->args[i].name, "reduction") ? E_INT : E_REDUCTION;
    case DISP_CT_OPT_INT: return E_OPT_INT;
    case DISP_CT_INT_LIST: return E_INT_LIST;
    case DISP_CT_OPT_INT_LIST: return E_OPT_INT_LIST;
    case DISP_CT_DOUBLE: return E_DOUBLE;
    case DISP_CT_OPT_DOUBLE: return E_OPT_DOUBLE;
    case DISP_CT_SCALAR: return opt ? E_OPT_SCALAR : E_SCALAR;
    case DISP_CT_BOOL: return E_BOOL;
    case DISP_CT_STR: return opt ? (s->args[i].default_value ? E_HIDDEN : E_UNSUPPORTED) : E_STR;
    case DISP_CT_ENUM:
      if (e->kind == DISP_TYPE_SCALAR_TYPE) return opt ? E_OPT_DTYPE : E_DTYPE;
      return s->args[i].default_value ? E_HIDDEN : E_UNSUPPORTED;
    default: return s->args[i].default_value ? E_HIDDEN : E_UNSUPPORTED;
  }
}

static int has_default(const disp_schema *s, int i) { return s->args[i].default_value != NULL; }

/* Whether argument i is an option (a field of disp_NAME_opts). */
static int is_option(const disp_schema *s, ekind k, int i) {
  return k != E_HIDDEN && (has_default(s, i) || s->args[i].type->kind == DISP_TYPE_OPTIONAL);
}

static int option_count(const disp_schema *s, const disp_signature *sig) {
  int n = 0;
  for (int i = 0; i < sig->nargs; i++) n += is_option(s, kind_of(s, sig, i), i);
  return n;
}

/* A C identifier for an argument (as gen_aten.c's arg_name). */
static const char *cname(char *buf, size_t n, const char *name) {
  static const char *const reserved[] = {"default", "int", "float", "double", "char", "bool", "out", "o", "r"};
  for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
    if (!strcmp(name, reserved[i])) {
      snprintf(buf, n, "%s_", name);
      return buf;
    }
  snprintf(buf, n, "%s", name);
  return buf;
}

/* "[1, 1]" or "1" (repeated n times for int[n]) as DISP_DIMS(1, 1);
 * "[]" as an empty list. */
static void emit_int_list_default(FILE *h, const char *d, int64_t n) {
  if (!strcmp(d, "[]")) {
    fprintf(h, "DISP_DIMS_EMPTY");
    return;
  }
  if (d[0] == '[') {
    fprintf(h, "DISP_DIMS(%.*s)", (int)(strlen(d) - 2), d + 1);
    return;
  }
  fprintf(h, "DISP_DIMS(");
  for (int64_t k = 0; k < (n > 0 ? n : 1); k++) fprintf(h, "%s%s", k ? ", " : "", d);
  fprintf(h, ")");
}

/* The default of option i, as a designated initialiser's value. */
static int emit_default(FILE *h, const disp_schema *s, ekind k, int i) {
  const char *d = s->args[i].default_str;
  if (!d || !strcmp(d, "None")) {
    static const char *const none[] = {[E_OPT_TENSOR] = "NULL", [E_OPT_INT] = "DISP_NONE_INT",
                                       [E_OPT_INT_LIST] = "DISP_DIMS_NONE", [E_OPT_DOUBLE] = "DISP_NONE",
                                       [E_OPT_SCALAR] = "DISP_NONE", [E_OPT_DTYPE] = "DISP_DTYPE_NONE"};
    if ((size_t)k >= sizeof none / sizeof *none || !none[k]) return 1;
    fprintf(h, "%s", none[k]);
    return 0;
  }
  switch (k) {
    case E_INT_LIST: case E_OPT_INT_LIST:
      emit_int_list_default(h, d, disp_schema_argument_list_size(s, (size_t)i));
      return 0;
    case E_REDUCTION:
      /* 1.13 prints Reduction::Mean as its value, 1 */
      fprintf(h, "DISP_REDUCTION_%s", !strcmp(d, "Mean") || !strcmp(d, "1") ? "MEAN"
                                      : !strcmp(d, "Sum") || !strcmp(d, "2") ? "SUM" : "NONE");
      return 0;
    case E_BOOL:
      fprintf(h, "%s", !strcmp(d, "True") ? "true" : "false");
      return 0;
    case E_INT: case E_OPT_INT: case E_DOUBLE: case E_OPT_DOUBLE: case E_SCALAR: case E_OPT_SCALAR:
      fprintf(h, "%s", d);
      return 0;
    case E_STR: /* 'none' or "none": a C string literal */
      if (strlen(d) < 2 || (d[0] != '"' && d[0] != '\'') || d[strlen(d) - 1] != d[0] ||
          strcspn(d + 1, "\"\\") < strlen(d) - 2)
        return 1;
      fprintf(h, "\"%.*s\"", (int)(strlen(d) - 2), d + 1);
      return 0;
    default: return 1;
  }
}

/* The typed entry's argument for argument i, named v (o.NAME or NAME). */
static int emit_typed_arg(FILE *c, const disp_schema *s, const disp_signature *sig, ekind k, int i, const char *v) {
  switch (k) {
    case E_TENSOR: case E_OPT_TENSOR: case E_TENSOR_LIST: case E_INT: case E_DOUBLE: case E_BOOL: case E_STR:
      fprintf(c, "%s", v);
      return 0;
    case E_INT_LIST: fprintf(c, "disp__easy_ints(&%s)", v); return 0;
    case E_OPT_INT: fprintf(c, "disp__easy_opt_int(%s)", v); return 0;
    case E_OPT_INT_LIST: fprintf(c, "disp__easy_opt_ints(&%s)", v); return 0;
    case E_REDUCTION: fprintf(c, "(int64_t)%s", v); return 0;
    case E_OPT_DOUBLE: fprintf(c, "disp__easy_opt_double(%s)", v); return 0;
    case E_SCALAR: fprintf(c, "disp__easy_scalar(%s)", v); return 0;
    case E_OPT_SCALAR: fprintf(c, "disp__easy_opt_scalar(%s)", v); return 0;
    case E_DTYPE: case E_OPT_DTYPE: fprintf(c, "(int32_t)%s", v); return 0;
    case E_HIDDEN: break;
    default: return 1;
  }
  /* Not offered: its default, which must be None or a bool. */
  const char *d = s->args[i].default_str;
  if (sig->args[i] == DISP_CT_BOOL) {
    fprintf(c, "%s", !strcmp(d, "True") ? "true" : "false");
    return 0;
  }
  if (strcmp(d, "None")) return 1;
  switch (sig->args[i]) {
    case DISP_CT_ENUM: fprintf(c, "-1"); return 0;
    case DISP_CT_STR: case DISP_CT_GENERATOR: fprintf(c, "NULL"); return 0;
    case DISP_CT_DEVICE: fprintf(c, "(disp_opt_device){0, 0, false}"); return 0;
    case DISP_CT_OPT_BOOL: fprintf(c, "(disp_opt_bool){false, false}"); return 0;
    default: return 1;
  }
}

/* The positional parameters: "disp_tensor *self, disp_tensor *other". */
static void emit_positional(FILE *f, const disp_schema *s, const disp_signature *sig, int names) {
  int first = 1;
  char nm[64];
  for (int i = 0; i < sig->nargs; i++) {
    ekind k = kind_of(s, sig, i);
    if (k == E_HIDDEN || is_option(s, k, i)) continue;
    const char *t = ctypes[k];
    if (names) fprintf(f, "%s%s%s%s", first ? "" : ", ", t, t[strlen(t) - 1] == '*' ? "" : " ", cname(nm, sizeof nm, s->args[i].name));
    else fprintf(f, "%s%s", first ? "" : ", ", t);
    first = 0;
  }
}

/* The options struct and the defaults macro of row d. */
static int emit_options(FILE *h, const char *api, const disp_schema *s, const disp_signature *sig) {
  char nm[64];
  fprintf(h, "typedef struct disp_%s_opts {\n", api);
  for (int i = 0; i < sig->nargs; i++) {
    ekind k = kind_of(s, sig, i);
    if (!is_option(s, k, i)) continue;
    const char *t = ctypes[k];
    fprintf(h, "  %s%s%s; /* %s %s", t, t[strlen(t) - 1] == '*' ? "" : " ", cname(nm, sizeof nm, s->args[i].name),
            disp_schema_argument_type_str(s, (size_t)i), s->args[i].name);
    if (s->args[i].default_str) fprintf(h, "=%s", s->args[i].default_str);
    fprintf(h, " */\n");
  }
  fprintf(h, "} disp_%s_opts;\n#define DISP__DEFAULTS_disp_%s", api, api);
  int first = 1;
  for (int i = 0; i < sig->nargs; i++) {
    ekind k = kind_of(s, sig, i);
    if (!is_option(s, k, i)) continue;
    fprintf(h, "%s .%s = ", first ? "" : ",", cname(nm, sizeof nm, s->args[i].name));
    if (emit_default(h, s, k, i)) return 1;
    first = 0;
  }
  fprintf(h, "\n");
  return 0;
}

/* The declaration (and for rows with options the macro) of row d. */
static int emit_decl(FILE *h, const decl *r, const disp_schema *s, const disp_signature *sig) {
  int nopt = option_count(s, sig);
  fprintf(h, "/* %s */\n", r->schema);
  if (nopt && emit_options(h, r->api, s, sig)) return 1;
  fprintf(h, "DISP_API disp_tensor *disp_%s%s(", r->api, nopt ? "_with" : "");
  emit_positional(h, s, sig, 1);
  int npos = 0;
  for (int i = 0; i < sig->nargs; i++) {
    ekind k = kind_of(s, sig, i);
    npos += k != E_HIDDEN && !is_option(s, k, i);
  }
  if (nopt) fprintf(h, "%sdisp_%s_opts o", npos ? ", " : "", r->api);
  else if (!npos) fprintf(h, "void");
  fprintf(h, ");\n");
  /* DISP__WITHn (disp/easy.h) splits the n positional arguments from the
   * options; the trailing empty argument keeps `...` non-empty (ISO C). */
  if (nopt) fprintf(h, "#define disp_%s(...) DISP__WITH%d(disp_%s, __VA_ARGS__, )\n", r->api, npos, r->api);
  fprintf(h, "\n");
  return 0;
}

/* The body of row d: the typed call, the result handed to the current
 * scope. A NULL argument is found only after a failed call, from the typed
 * entry's message (it refuses NULL itself): the hot path is the typed call, a test and the owner check
 * (Note [Concise call cost] in src/api/easy_internal.h). */
static int emit_body(FILE *c, const decl *r, const disp_schema *s, const disp_signature *sig) {
  int nopt = option_count(s, sig);
  char nm[64], v[80];
  fprintf(c, "disp_tensor *disp_%s%s(", r->api, nopt ? "_with" : "");
  emit_positional(c, s, sig, 1);
  int npos = sig->nargs - nopt;
  for (int i = 0; i < sig->nargs; i++) npos -= kind_of(s, sig, i) == E_HIDDEN;
  if (nopt) fprintf(c, "%sdisp_%s_opts o", npos ? ", " : "", r->api);
  else if (!npos) fprintf(c, "void");
  fprintf(c, ") {\n  disp_tensor *r; /* the typed entry sets it */\n  disp_status st = disp_aten_%s(", r->id);
  for (int i = 0; i < sig->nargs; i++) {
    ekind k = kind_of(s, sig, i);
    cname(nm, sizeof nm, s->args[i].name);
    snprintf(v, sizeof v, "%s%s", is_option(s, k, i) ? "o." : "", nm);
    if (i) fprintf(c, ", ");
    if (emit_typed_arg(c, s, sig, k, i, v)) {
      fprintf(stderr, "gen_api: %s: argument %s has no concise form\n", r->id, s->args[i].name);
      return 1;
    }
  }
  /* one test for "failed or a scope is open somewhere" */
  fprintf(c, "%s&r);\n  if (DISP__UNLIKELY(disp__easy_slow(st))) return disp__easy_finish(r, st, \"disp_%s%s\");\n",
          sig->nargs ? ", " : "", r->api, nopt ? "_with" : "");
  fprintf(c, "  return r;\n}\n\n");
  return 0;
}

static int check_row(const decl *decls, int d, const disp_schema *s, const disp_signature *sig) {
  const decl *r = &decls[d];
  if (sig->nrets != 1 || sig->rets[0] != DISP_CT_TENSOR || s->rets[0].type->kind != DISP_TYPE_TENSOR) {
    fprintf(stderr, "gen_api: %s: .api needs one Tensor result\n", r->id);
    return 1;
  }
  for (int i = 0; i < sig->nargs; i++)
    if (kind_of(s, sig, i) == E_UNSUPPORTED) {
      fprintf(stderr, "gen_api: %s: argument %s has no concise form\n", r->id, s->args[i].name);
      return 1;
    }
  int npos = 0;
  for (int i = 0; i < sig->nargs; i++) {
    ekind k = kind_of(s, sig, i);
    npos += k != E_HIDDEN && !is_option(s, k, i);
  }
  if (npos > 4) {
    fprintf(stderr, "gen_api: %s: more than 4 positional arguments (disp/easy.h has DISP__WITH0..4)\n", r->id);
    return 1;
  }
  for (int e = 0; e < d; e++)
    if (decls[e].api && !strcmp(decls[e].api, r->api)) {
      fprintf(stderr, "gen_api: .api \"%s\" on %s and %s (one overload per name)\n", r->api, decls[e].id, r->id);
      return 1;
    }
  return 0;
}


int gen_api_write(const char *outdir, const decl *decls, int n, disp_schema *const *schemas,
                  disp_signature *const *sigs) {
  FILE *h = open_output(outdir, "disp/easy_ops.h");
  FILE *c = h ? open_output(outdir, "easy_ops.c") : NULL;
  if (!c) {
    if (h) fclose(h);
    return 1;
  }
  fprintf(h, "/* Generated by tools/gen_api.c from src/kernels/manifest.def. Do not edit. */\n"
             "/* disp/easy_ops.h - the concise function of every operator the manifest names\n"
             " * with .api (read disp/easy.h, which includes this). Each returns its result: a\n"
             " * new reference, owned by the current scope when there is one; NULL on failure\n"
             " * (disp_last_error says why; a NULL argument keeps an earlier failure's message).\n"
             " * Thread-safe as the typed entry it calls. */\n"
             "#ifndef DISP_EASY_OPS_H\n#define DISP_EASY_OPS_H\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
  fprintf(c, "/* Generated by tools/gen_api.c from src/kernels/manifest.def. Do not edit. */\n"
             "#include <disp.h>\n\n#include \"api/easy_internal.h\"\n\n");
  int rc = 0;
  for (int d = 0; d < n && !rc; d++) {
    if (!decls[d].api) continue;
    rc = check_row(decls, d, schemas[d], sigs[d]) || emit_decl(h, &decls[d], schemas[d], sigs[d]) ||
         emit_body(c, &decls[d], schemas[d], sigs[d]);
  }
  fprintf(h, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
  rc |= fclose(h) != 0;
  rc |= fclose(c) != 0;
  return rc;
}
