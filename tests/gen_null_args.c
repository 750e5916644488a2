/*
 * gen_null_args - writes the cases of test_null_args: one call per pointer
 * parameter of every exported function, with that parameter NULL and every
 * other one a valid value (status.h's Note [NULL arguments]).
 *
 *   gen_null_args OUT.c NM LIBRARY HEADER...
 *
 * The functions come from two places that must agree: the DISP_API
 * declarations of the public headers (which give the parameter types) and
 * the symbols the shared library exports (`NM -D --defined-only LIBRARY`,
 * which cannot forget a function a header forgot). Any disagreement, and any
 * parameter type this file has no value for, fails the build with a message
 * saying what to add, so a new function is never skipped silently.
 *
 * Variadic functions get a case per pointer parameter before the `...` whose
 * call is written by hand in test_null_args.c (null_hand_<function>_<param>):
 * a missing one is a link error.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FUNCS 1024
#define MAX_PARAMS 24
#define MAX_DATA 64

typedef struct param {
  char name[64];
  char type[128]; /* canonical: whitespace only between identifier characters */
  int is_pointer;
  int schema_optional; /* `Tensor? name` in the schema comment of a typed entry */
} param;

typedef struct func {
  char name[128];
  char ret[128]; /* canonical */
  char header[256];
  param params[MAX_PARAMS];
  int nparams;
  int variadic;
} func;

static func funcs[MAX_FUNCS];
static int nfuncs;
static char data_syms[MAX_DATA][128];
static int ndata;
static int nerrors;

static void error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "gen_null_args: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  nerrors++;
}

/* ---- values per parameter ---------------------------------------------- */

/* A valid value for each parameter type (canonical spelling). Fixtures
 * (fx.*, fx_out.*) live in test_null_args.c; see null_args.h. */
typedef struct type_value {
  const char *type;
  int is_pointer;
  const char *value;
} type_value;

static const type_value type_values[] = {
    /* plain values */
    {"int", 0, "0"},
    {"unsigned", 0, "0"},
    {"size_t", 0, "1"}, /* 1, not 0: a NULL array with a nonzero count must be refused */
    {"int32_t", 0, "0"},
    {"int64_t", 0, "0"},
    {"uint64_t", 0, "0"},
    {"double", 0, "0.0"},
    {"bool", 0, "false"},
    {"disp_backend", 0, "DISP_BACKEND_CPU"},
    {"disp_stub", 0, "DISP_STUB_ABS"},
    {"disp_dtype", 0, "DISP_DTYPE_FLOAT32"},
    {"disp_key", 0, "DISP_KEY_CPU"},
    {"disp_layout", 0, "DISP_LAYOUT_STRIDED"},
    {"disp_library_kind", 0, "DISP_LIBRARY_FRAGMENT"},
    {"disp_status", 0, "DISP_ERR_KERNEL"},
    {"disp_value_tag", 0, "DISP_VALUE_INT"},
    {"disp_autograd_fallback_mode", 0, "DISP_AUTOGRAD_FALLBACK_WARN"},
    {"disp_keyset", 0, "fx.keyset"},
    {"disp_device", 0, "fx.device"},
    {"disp_tls_state", 0, "fx.tls"},
    {"disp_kernel", 0, "fx.kernel"},
    {"disp_dispatch", 0, "fx.dispatch"},
    {"disp_scalar", 0, "fx.scalar"},
    {"disp_int_list", 0, "fx.int_list"},
    {"disp_double_list", 0, "fx.double_list"},
    {"disp_bool_list", 0, "fx.bool_list"},
    {"disp_tensor_list", 0, "fx.tensor_list"},
    {"disp_opt_int", 0, "fx.opt_int"},
    {"disp_opt_double", 0, "fx.opt_double"},
    {"disp_opt_bool", 0, "fx.opt_bool"},
    {"disp_opt_int_list", 0, "fx.opt_int_list"},
    {"disp_opt_device", 0, "fx.opt_device"},
    /* the concise API (disp/easy.h; its disp_NAME_opts: see find_type) */
    {"disp_dims", 0, "DISP_DIMS(1)"},
    {"disp_reduction", 0, "DISP_REDUCTION_MEAN"},
    {"disp_new_opts", 0, "(disp_new_opts){DISP_DTYPE_FLOAT32, {DISP_BACKEND_CPU, -1}, false}"},
    {"disp_scope*", 1, "&(disp_scope){0, 0, 0}"},
    {"disp_grad_guard*", 1, "&(disp_grad_guard){0, 0}"},
    /* objects */
    {"const disp_op*", 1, "fx.op"},
    {"disp_boxed_fn", 1, "fx.kernel.boxed"},
    {"uint64_t*", 1, "&fx_out.u64"},
    {"disp_stack*", 1, "fx.stack"},
    {"const disp_stack*", 1, "fx.stack"},
    {"disp_tensor*", 1, "fx.tensor"},
    {"const disp_tensor*", 1, "fx.tensor"},
    {"disp_tensor*const*", 1, "fx.tensors"},
    {"disp_storage*", 1, "fx.storage"},
    {"const disp_storage*", 1, "fx.storage"},
    {"disp_library*", 1, "fx.lib"},
    {"const disp_library*", 1, "fx.lib"},
    {"disp_registration*", 1, "fx.reg"},
    {"const disp_registration*", 1, "fx.reg"},
    {"disp_schema*", 1, "fx.schema_owned"},
    {"const disp_schema*", 1, "fx.schema"},
    {"const disp_type*", 1, "fx.type"},
    {"const disp_allocator*", 1, "&fx.allocator"},
    {"disp_library_node*", 1, "&fx_out.node"},
    {"disp_tensor_vec*", 1, "&fx_out.vec"},
    {"const disp_value*", 1, "&fx.value"},
    {"const disp_scalar*", 1, "&fx.scalar"},
    {"const disp_key*", 1, "fx.keys"},
    {"const int64_t*", 1, "fx.sizes"},
    {"const double*", 1, "fx.doubles"},
    {"const bool*", 1, "fx.bools"},
    {"const char*", 1, "\"nulltest\""},
    {"void*", 1, "fx.user"},
    {"const disp_sgd_options*", 1, "&fx.sgd_options"},
    {"const disp_adam_options*", 1, "&fx.adam_options"},
    {"disp_optimizer*", 1, "fx.optimizer"},
    {"const disp_optimizer*", 1, "fx.optimizer"},
    {"FILE*", 1, "fx.devnull"},
    {"disp_warning_handler", 1, "null_warning_handler"},
    {"void(*)(void*data,void*ctx)", 1, "null_release_data"},
    {"void(*)(void*handle)", 1, "null_release_handle"},
    {"void(*)(void*ctx)", 1, "null_release_handle"},
    {"void(*)(void*data)", 1, "null_release_handle"},
    {"const disp_function_def*", 1, "&null_function"},
    {"disp_function_ctx*", 1, "fx.fn_ctx"},
    {"const disp_function_ctx*", 1, "fx.fn_ctx"},
    {"disp_tensor*const**", 1, "&fx_out.tensor_array"},
    {"disp_grad_hook", 1, "null_grad_hook"},
    {"disp_gradcheck_fn", 1, "null_gradcheck_fn"},
    {"disp_stub_fn", 1, "null_stub_fn"},
    {"const disp_gradcheck_options*", 1, "&fx.gradcheck_options"},
    {"const disp_node*", 1, "fx.node"},
    {"disp_plugin*", 1, "fx.plugin"},
    {"const disp_plugin*", 1, "fx.plugin"},
    {"uint32_t*", 1, "&fx_out.u32"},
    {"const void*", 1, "fx.user"},
    {"const disp_device_hooks*", 1, "&fx.device_hooks"},
    {"disp_generator*", 1, "fx.generator"},
    {"const disp_generator*", 1, "fx.generator"},
    {"const disp_generator_state*", 1, "&fx.generator_state"},
    /* out-parameters: a global, so whatever a call leaves there stays
     * reachable and LeakSanitizer reports only real leaks */
    {"const disp_op**", 1, "&fx_out.op"},
    {"disp_tensor**", 1, "&fx_out.tensor"},
    {"disp_optimizer**", 1, "&fx_out.optimizer"},
    {"disp_storage**", 1, "&fx_out.storage"},
    {"disp_library**", 1, "&fx_out.lib"},
    {"disp_plugin**", 1, "&fx_out.plugin"},
    {"disp_registration**", 1, "&fx_out.reg"},
    {"disp_schema**", 1, "&fx_out.schema"},
    {"disp_autocast_guard*", 1, "&fx_out.guard"},
    {"disp_value*", 1, "&fx_out.value"},
    {"disp_scalar*", 1, "&fx_out.scalar"},
    {"disp_dtype*", 1, "&fx_out.dtype"},
    {"disp_device*", 1, "&fx_out.device"},
    {"disp_fn*", 1, "&fx_out.fn"},
    {"disp_key*", 1, "fx_out.keys"},
    {"const char***", 1, "&fx_out.names"},
    {"char**", 1, "&fx_out.str"},
    {"char*", 1, "fx_out.buf"},
    {"size_t*", 1, "&fx_out.size"},
    {"int64_t*", 1, "&fx_out.i64"},
    {"int*", 1, "&fx_out.i"},
    {"disp_device_guard*", 1, "&fx_out.device_guard"},
    {"disp_generator_state*", 1, "&fx_out.generator_state"},
    {"disp_memory_stats*", 1, "&fx_out.memory_stats"},
    {"disp_safetensors**", 1, "&fx_out.safetensors"},
    {"void**", 1, "&fx_out.ptr"},
    {"disp_safetensors*", 1, "fx.safetensors"},
    {"const disp_safetensors*", 1, "fx.safetensors"},
};

/* Values by parameter name where the type's value would not reach the NULL
 * check of another argument (an array length must match the array). */
typedef struct name_value {
  const char *type;
  const char *name;
  const char *value;
} name_value;

static const name_value name_values[] = {
    {"int", "ndim", "2"},
    {"const int64_t*", "strides", "fx.strides"},
    {"const char*", "qualified_name", "\"aten::add.Tensor\""},
    {"const char*", "schema", "\"nulltest::other(Tensor self) -> Tensor\""},
    {"const char*", "text", "\"aten::add.Tensor(Tensor self, Tensor other) -> Tensor\""},
    {"const char*", "file", "\"null.c\""},
    {"const char*", "fmt", "\"%s\""},
    /* a multi-output operator's results each get their own slot, so that a
     * call that succeeds (native_layer_norm with weight None) loses none */
    {"disp_tensor**", "out1", "&fx_out.tensor1"},
    {"disp_tensor**", "out2", "&fx_out.tensor2"},
};

/* Values for one parameter of one function, where a valid value is specific. */
typedef struct func_value {
  const char *func;
  const char *name;
  const char *value;
} func_value;

static const func_value func_values[] = {
    {"disp_dtype_parse", "name", "\"float32\""},
    {"disp_key_parse", "name", "\"CPU\""},
    {"disp_device_parse", "str", "\"cpu\""},
    {"disp_device_rename_privateuse1", "name", "\"nulltestdev\""},
    {"disp_library_impl", "name", "\"nullfn\""},
    {"disp_library_impl_key", "name", "\"nullfn\""},
    /* a _steal function takes a reference; the test checks it is not kept */
    {"disp_stack_push_tensor_steal", "t", "null_new_tensor_ref()"},
    {"disp_stack_push_value_steal", "v", "null_new_value()"},
};

/* ---- out-of-range values (the bad-value cases) -------------------------- */

/* Values no valid argument of the type has: enums past either end, and
 * devices of no backend or of a CPU index PyTorch refuses. Each parameter of
 * one of these types gets a case per value, all other arguments valid. */
typedef struct bad_value {
  const char *type;
  const char *name; /* NULL: any parameter of the type */
  const char *values[3];
} bad_value;

static const bad_value bad_values[] = {
    {"disp_backend", NULL, {"(disp_backend)-1", "(disp_backend)100000"}},
    {"disp_key", NULL, {"(disp_key)-1", "(disp_key)100000"}},
    {"disp_stub", NULL, {"(disp_stub)-1", "(disp_stub)100000"}},
    {"disp_library_kind", NULL, {"(disp_library_kind)-1", "(disp_library_kind)100000"}},
    {"disp_dtype", NULL, {"(disp_dtype)-1", "(disp_dtype)100000"}},
    {"disp_layout", NULL, {"(disp_layout)-1", "(disp_layout)100000"}},
    {"disp_value_tag", NULL, {"(disp_value_tag)-1", "(disp_value_tag)100000"}},
    {"disp_device", NULL, {"null_bad_device_type()", "null_bad_device_index()"}},
    {"disp_opt_device", NULL, {"null_bad_opt_device_type()", "null_bad_opt_device_index()"}},
    /* typed entries: ScalarType? / Layout? / MemoryFormat? are int32_t, -1 for None */
    {"int32_t", "dtype", {"-2", "100000"}},
    {"int32_t", "layout", {"-2", "100000"}},
    {"int32_t", "memory_format", {"-2", "100000"}},
    /* indexes, dims, counts and offsets past any object's end (not array
     * counts: a caller that passes a short array with a long count lies) */
    {"size_t", "i", {"1000000", "SIZE_MAX"}},
    {"int", "i", {"-1", "INT_MAX"}},
    {"int64_t", "dim", {"INT64_MIN", "INT64_MAX"}},
    {"int", "ndim", {"-1", "INT_MAX"}},
    {"int64_t", "offset", {"-1", "INT64_MAX"}},
    {"size_t", "nbytes", {"SIZE_MAX"}},
    {"size_t", "given", {"SIZE_MAX"}},
    {"int32_t", "type", {"-1", "100000"}},
    {"int32_t", "index", {"-2", "INT32_MAX"}},
};

static const bad_value *bad_value_for(const param *p) {
  for (size_t i = 0; i < sizeof bad_values / sizeof bad_values[0]; i++)
    if (!strcmp(bad_values[i].type, p->type) && (!bad_values[i].name || !strcmp(bad_values[i].name, p->name)))
      return &bad_values[i];
  return NULL;
}

static const type_value *find_type(const char *type) {
  for (size_t i = 0; i < sizeof type_values / sizeof type_values[0]; i++)
    if (strcmp(type_values[i].type, type) == 0) return &type_values[i];
  /* A generated concise function's options (disp/easy_ops.h): all zero. */
  static char opts_value[160];
  static type_value opts = {NULL, 0, opts_value};
  size_t n = strlen(type);
  if (strncmp(type, "disp_", 5) == 0 && n > 5 && strcmp(type + n - 5, "_opts") == 0 && n < 120) {
    snprintf(opts_value, sizeof opts_value, "(%s){0}", type);
    opts.type = type;
    return &opts;
  }
  return NULL;
}

/* The expression a valid `p` of function `f` gets. */
static const char *value_for(const func *f, const param *p) {
  for (size_t i = 0; i < sizeof func_values / sizeof func_values[0]; i++)
    if (strcmp(func_values[i].func, f->name) == 0 && strcmp(func_values[i].name, p->name) == 0)
      return func_values[i].value;
  for (size_t i = 0; i < sizeof name_values / sizeof name_values[0]; i++)
    if (strcmp(name_values[i].type, p->type) == 0 && strcmp(name_values[i].name, p->name) == 0)
      return name_values[i].value;
  const type_value *tv = find_type(p->type);
  return tv ? tv->value : NULL;
}

/* ---- reading headers ---------------------------------------------------- */

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    error("cannot read %s", path);
    return NULL;
  }
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  size_t n;
  while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (len + 1 == cap) {
      char *bigger = realloc(buf, cap *= 2);
      if (!bigger) free(buf);
      buf = bigger;
    }
  }
  fclose(f);
  if (buf) buf[len] = '\0';
  return buf;
}

static int is_ident(int c) { return isalnum(c) || c == '_'; }

/* Copies src into dst (size dstsize) with whitespace only where two
 * identifier characters would otherwise touch: "const disp_tensor *" and
 * "const disp_tensor*" both become "const disp_tensor*". */
static void canonical(char *dst, size_t dstsize, const char *src, size_t len) {
  size_t o = 0;
  int pending_space = 0;
  for (size_t i = 0; i < len && o + 2 < dstsize; i++) {
    unsigned char c = (unsigned char)src[i];
    if (isspace(c)) {
      pending_space = 1;
      continue;
    }
    if (pending_space && o > 0 && is_ident(dst[o - 1]) && is_ident(c)) dst[o++] = ' ';
    pending_space = 0;
    dst[o++] = (char)c;
  }
  dst[o] = '\0';
}

/* The last identifier in s[0..len), copied to out. */
static int last_ident(const char *s, size_t len, char *out, size_t outsize) {
  size_t end = len;
  while (end > 0 && !is_ident((unsigned char)s[end - 1])) end--;
  size_t start = end;
  while (start > 0 && is_ident((unsigned char)s[start - 1])) start--;
  if (start == end || end - start >= outsize) return 0;
  memcpy(out, s + start, end - start);
  out[end - start] = '\0';
  return 1;
}

/* Whether the schema comment `comment` declares argument `name` optional
 * ("Tensor? bias=None"): the typed entry then takes NULL as None. */
static int schema_optional(const char *comment, const char *name) {
  if (!comment) return 0;
  size_t n = strlen(name);
  for (const char *p = strstr(comment, name); p; p = strstr(p + 1, name)) {
    if (p - comment < 2 || p[-1] != ' ' || p[-2] != '?') continue;
    if (p[n] == ',' || p[n] == ')' || p[n] == '=' || p[n] == ' ') return 1;
  }
  return 0;
}

static void parse_param(func *f, const char *s, size_t len, const char *comment) {
  while (len > 0 && isspace((unsigned char)*s)) s++, len--;
  while (len > 0 && isspace((unsigned char)s[len - 1])) len--;
  if (len == 4 && strncmp(s, "void", 4) == 0 && f->nparams == 0) return;
  if (len == 3 && strncmp(s, "...", 3) == 0) {
    f->variadic = 1;
    return;
  }
  if (f->nparams == MAX_PARAMS) {
    error("%s: more than %d parameters", f->name, MAX_PARAMS);
    return;
  }
  param *p = &f->params[f->nparams++];
  memset(p, 0, sizeof *p);
  const char *star = strstr(s, "(*");
  if (star && (size_t)(star - s) < len) {
    /* a function pointer: the name sits inside "(*name)" */
    const char *name = star + 2, *close = strchr(name, ')');
    char typebuf[256];
    size_t before = (size_t)(name - s), namelen = close ? (size_t)(close - name) : 0;
    if (!close || namelen == 0 || namelen >= sizeof p->name) {
      error("%s: cannot read the function-pointer parameter '%.*s'", f->name, (int)len, s);
      return;
    }
    memcpy(p->name, name, namelen);
    snprintf(typebuf, sizeof typebuf, "%.*s%.*s", (int)before, s, (int)(len - before - namelen),
             close);
    canonical(p->type, sizeof p->type, typebuf, strlen(typebuf));
  } else {
    if (!last_ident(s, len, p->name, sizeof p->name)) {
      error("%s: cannot read the parameter '%.*s'", f->name, (int)len, s);
      return;
    }
    size_t namelen = strlen(p->name);
    canonical(p->type, sizeof p->type, s, len - namelen);
  }
  const type_value *tv = find_type(p->type);
  p->is_pointer = tv ? tv->is_pointer : strchr(p->type, '*') != NULL;
  p->schema_optional = p->is_pointer && schema_optional(comment, p->name);
}

/* One declaration `text` (after DISP_API, up to and without the ';'). */
static void parse_decl(const char *header, const char *text, const char *comment) {
  char canon[2048];
  canonical(canon, sizeof canon, text, strlen(text));
  if (strncmp(canon, "extern ", 7) == 0) {
    /* a data symbol: its name is the last identifier before [ or __attribute__ */
    size_t end = strcspn(canon, "[");
    const char *attr = strstr(canon, "__attribute__");
    if (attr && (size_t)(attr - canon) < end) end = (size_t)(attr - canon);
    if (ndata == MAX_DATA || !last_ident(canon, end, data_syms[ndata], sizeof data_syms[0]))
      error("%s: cannot read the declaration '%s'", header, canon);
    else
      ndata++;
    return;
  }
  const char *open = strchr(canon, '(');
  if (!open || nfuncs == MAX_FUNCS) {
    error("%s: cannot read the declaration '%s'", header, canon);
    return;
  }
  func *f = &funcs[nfuncs++];
  memset(f, 0, sizeof *f);
  snprintf(f->header, sizeof f->header, "%s", header);
  if (!last_ident(canon, (size_t)(open - canon), f->name, sizeof f->name)) {
    error("%s: cannot read the declaration '%s'", header, canon);
    return;
  }
  size_t retlen = (size_t)(open - canon) - strlen(f->name);
  canonical(f->ret, sizeof f->ret, canon, retlen);
  /* split the parameter list at commas outside parentheses */
  int depth = 0;
  const char *start = open + 1;
  for (const char *c = open + 1; *c; c++) {
    if (*c == '(') depth++;
    else if (*c == ')' && depth-- == 0) {
      parse_param(f, start, (size_t)(c - start), comment);
      return;
    } else if (*c == ',' && depth == 0) {
      parse_param(f, start, (size_t)(c - start), comment);
      start = c + 1;
    }
  }
  error("%s: unbalanced parentheses in '%s'", header, canon);
}

/* Finds every DISP_API declaration of one header, skipping comments and
 * preprocessor lines (export.h defines DISP_API itself). */
static void scan_header(const char *path) {
  char *src = read_file(path);
  if (!src) return;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char *comment = NULL; /* the last comment, for the schema of a typed entry */
  int line_start = 1;
  for (char *c = src; *c;) {
    if (c[0] == '/' && c[1] == '*') {
      char *end = strstr(c + 2, "*/");
      size_t n = end ? (size_t)(end - c) + 2 : strlen(c);
      free(comment);
      comment = strndup(c, n);
      c += n;
    } else if (c[0] == '/' && c[1] == '/') {
      c += strcspn(c, "\n");
    } else if (line_start && *c == '#') {
      while (*c && !(*c == '\n' && c[-1] != '\\')) c++;
    } else if (strncmp(c, "DISP_API", 8) == 0 && !is_ident((unsigned char)c[8]) &&
               (c == src || !is_ident((unsigned char)c[-1]))) {
      /* the declaration runs to the ';', comments inside it blanked out */
      char decl[2048];
      size_t o = 0;
      c += 8;
      while (*c && *c != ';' && o + 1 < sizeof decl) {
        if (c[0] == '/' && c[1] == '*') {
          char *end = strstr(c + 2, "*/");
          c = end ? end + 2 : c + strlen(c);
          decl[o++] = ' ';
        } else {
          decl[o++] = *c++;
        }
      }
      decl[o] = '\0';
      parse_decl(base, decl, comment);
      free(comment);
      comment = NULL;
    } else {
      if (!isspace((unsigned char)*c)) line_start = 0;
      if (*c == '\n') line_start = 1;
      c++;
      continue;
    }
    line_start = 0;
  }
  free(comment);
  free(src);
}

/* ---- the export list ---------------------------------------------------- */

typedef struct export_sym {
  char name[128];
  int is_func;
  int seen;
} export_sym;

static export_sym exports[MAX_FUNCS + MAX_DATA];
static int nexports;

/* Reads `nm -D --defined-only lib`: the disp_ symbols the library exports
 * (sanitizer builds add their own, which are not the API). */
static void read_exports(const char *nm, const char *lib) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' -D --defined-only '%s'", nm, lib);
  FILE *p = popen(cmd, "r");
  if (!p) {
    error("cannot run %s", cmd);
    return;
  }
  char line[512];
  while (fgets(line, sizeof line, p)) {
    char addr[64], kind[8], name[128];
    if (sscanf(line, "%63s %7s %127s", addr, kind, name) != 3) continue;
    if (strncmp(name, "disp_", 5) != 0) continue;
    if (nexports == MAX_FUNCS + MAX_DATA) {
      error("too many exported symbols");
      break;
    }
    export_sym *e = &exports[nexports++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->is_func = strchr("TtWi", kind[0]) != NULL;
  }
  if (pclose(p) != 0) error("%s failed", cmd);
  if (nexports == 0) error("%s listed no disp_ symbols", cmd);
}

static export_sym *find_export(const char *name) {
  for (int i = 0; i < nexports; i++)
    if (strcmp(exports[i].name, name) == 0) return &exports[i];
  return NULL;
}

/* Headers and library must list the same functions and data symbols. */
static void cross_check(void) {
  for (int i = 0; i < nfuncs; i++) {
    export_sym *e = find_export(funcs[i].name);
    if (!e) error("%s (%s) is declared DISP_API but the library does not export it", funcs[i].name,
                  funcs[i].header);
    else if (!e->is_func) error("%s is declared as a function but exported as data", funcs[i].name);
    else e->seen = 1;
  }
  for (int i = 0; i < ndata; i++) {
    export_sym *e = find_export(data_syms[i]);
    if (!e) error("%s is declared DISP_API but the library does not export it", data_syms[i]);
    else if (e->is_func) error("%s is declared as data but exported as a function", data_syms[i]);
    else e->seen = 1;
  }
  /* (fault-injection builds export their test controls, disp__fault_*:
   * Note [Allocation seam]; they are no public API) */
  for (int i = 0; i < nexports; i++)
    if (!exports[i].seen && strncmp(exports[i].name, "disp__fault_", 12) != 0)
      error("%s is exported but no public header declares it with DISP_API", exports[i].name);
}

/* ---- writing the cases -------------------------------------------------- */

static const char *ret_kind(const func *f) {
  if (strcmp(f->ret, "disp_status") == 0) return "NULL_RET_STATUS";
  if (strcmp(f->ret, "void") == 0) return "NULL_RET_VOID";
  if (strchr(f->ret, '*')) return "NULL_RET_POINTER";
  return "NULL_RET_VALUE";
}

/* The call of f with parameter `index` given as `expr`, every other one a
 * valid value. */
static void write_call(FILE *out, const func *f, int index, const char *expr) {
  fprintf(out, "%s(", f->name);
  for (int i = 0; i < f->nparams; i++)
    fprintf(out, "%s%s", i ? ", " : "", i == index ? expr : value_for(f, &f->params[i]));
  fprintf(out, ")");
}

/* A thunk `PREFIX_ID` making that call and keeping what it returns. */
static void write_thunk(FILE *out, const char *prefix, int id, const func *f, int index, const char *expr) {
  fprintf(out, "static void %s_%d(void) { ", prefix, id);
  if (strcmp(f->ret, "disp_status") == 0) {
    fprintf(out, "null_result.status = ");
    write_call(out, f, index, expr);
  } else if (strchr(f->ret, '*')) {
    fprintf(out, "null_result.ptr = (const void *)");
    write_call(out, f, index, expr);
  } else if (strcmp(f->ret, "void") == 0) {
    write_call(out, f, index, expr);
  } else {
    fprintf(out, "%s v_ = ", f->ret);
    write_call(out, f, index, expr);
    fprintf(out, "; null_keep_value(&v_, sizeof v_)");
  }
  fprintf(out, "; }\n");
}

/* One case per out-of-range value of every parameter bad_values covers. */
static void write_bad_value_cases(FILE *out) {
  int id = 0;
  for (int pass = 0; pass < 2; pass++) {
    if (pass) fprintf(out, "\nconst null_bad_case null_bad_cases[] = {\n");
    id = 0;
    for (int i = 0; i < nfuncs; i++) {
      const func *f = &funcs[i];
      if (f->variadic) continue;
      for (int j = 0; j < f->nparams; j++) {
        const bad_value *b = bad_value_for(&f->params[j]);
        for (int v = 0; b && v < 3 && b->values[v]; v++, id++) {
          if (!pass) write_thunk(out, "bad", id, f, j, b->values[v]);
          else fprintf(out, "  {\"%s\", \"%s\", \"%s\", %s, bad_%d},\n", f->name, f->params[j].name,
                       b->values[v], ret_kind(f), id);
        }
      }
    }
  }
  fprintf(out, "};\nconst size_t null_num_bad_cases = %d;\n", id);
}

/* Every parameter needs a value, pointer or not: without one no case of the
 * function can be written, and it must not be skipped silently. */
static void check_values(void) {
  for (int i = 0; i < nfuncs; i++)
    for (int j = 0; j < funcs[i].nparams; j++)
      if (!value_for(&funcs[i], &funcs[i].params[j]))
        error("%s (%s): no valid value for parameter '%s' of type '%s'; add the type to "
              "type_values in tests/gen_null_args.c (and a fixture to test_null_args.c)",
              funcs[i].name, funcs[i].header, funcs[i].params[j].name, funcs[i].params[j].type);
}

static int write_cases(const char *path) {
  FILE *out = fopen(path, "w");
  if (!out) {
    error("cannot write %s", path);
    return 0;
  }
  fprintf(out, "/* Generated by tests/gen_null_args.c from the public headers and the library's\n"
               " * export list. Do not edit. */\n#include \"null_args.h\"\n\n");
  int id = 0, ntrivial = 0;
  for (int i = 0; i < nfuncs; i++) {
    const func *f = &funcs[i];
    for (int j = 0; j < f->nparams; j++) {
      if (!f->params[j].is_pointer) continue;
      if (f->variadic)
        fprintf(out, "void null_hand_%s_%s(void); /* hand-written: variadic */\n", f->name,
                f->params[j].name);
      else
        write_thunk(out, "case", id, f, j, "NULL");
      id++;
    }
  }
  fprintf(out, "\nconst null_case null_cases[] = {\n");
  id = 0;
  for (int i = 0; i < nfuncs; i++) {
    const func *f = &funcs[i];
    int any = 0;
    for (int j = 0; j < f->nparams; j++) {
      const param *p = &f->params[j];
      if (!p->is_pointer) continue;
      any = 1;
      fprintf(out, "  {\"%s\", \"%s\", \"%s\", %s, %d, ", f->name, p->name, p->type, ret_kind(f),
              p->schema_optional);
      if (f->variadic) fprintf(out, "null_hand_%s_%s},\n", f->name, p->name);
      else fprintf(out, "case_%d},\n", id);
      id++;
    }
    ntrivial += !any;
  }
  fprintf(out, "};\nconst size_t null_num_cases = %d;\n\n", id);
  fprintf(out, "/* Exported functions without pointer parameters: nothing to pass NULL to. */\n"
               "const char *const null_trivial[] = {\n");
  for (int i = 0; i < nfuncs; i++) {
    int any = 0;
    for (int j = 0; j < funcs[i].nparams; j++) any |= funcs[i].params[j].is_pointer;
    if (!any) fprintf(out, "  \"%s\",\n", funcs[i].name);
  }
  fprintf(out, "  NULL\n};\nconst size_t null_num_trivial = %d;\n", ntrivial);
  fprintf(out, "const size_t null_num_functions = %d;\n\n", nfuncs);
  write_bad_value_cases(out);
  return fclose(out) == 0;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: gen_null_args OUT.c NM LIBRARY HEADER...\n");
    return 2;
  }
  for (int i = 4; i < argc; i++) scan_header(argv[i]);
  read_exports(argv[2], argv[3]);
  cross_check();
  check_values();
  if (nerrors) {
    fprintf(stderr, "gen_null_args: %d problem(s); the NULL-argument test was not written\n", nerrors);
    remove(argv[1]);
    return 1;
  }
  if (!write_cases(argv[1])) return 1;
  return 0;
}
