/*
 * simulate.c - the conformance registration-script interpreter.
 */
#include "simulate.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_IMPLS = 64 };

typedef struct sim_opinfo {
  const disp_op *op;
  char *ns;
  int nimpls;
  char *impl_debug[MAX_IMPLS];
} sim_opinfo;

struct sim_script {
  disp_library **libs;
  int nlibs, caplibs;
  sim_opinfo *ops;
  int nops, capops;
};

/* ---- the test kernels of the conformance README (section calls) ---- */

typedef struct sim_kernel_info {
  int reg;          /* the impl's number; -1 for a user fallback */
  disp_key key;     /* the key as written on the impl line */
  int passes_on;    /* redispatches below itself (non-backend, non-composite keys) */
} sim_kernel_info;

static FILE *g_log;

void sim_set_log(FILE *log) { g_log = log; }

static int is_backend_or_composite(disp_key k) {
  if (disp_key_is_alias(k)) return k != DISP_KEY_AUTOGRAD;
  disp_key f = disp_key_functionality(k);
  return disp_key_kind_of(k) == DISP_KEY_KIND_PER_BACKEND &&
         (f == DISP_KEY_DENSE || f == DISP_KEY_QUANTIZED || f == DISP_KEY_SPARSE);
}

/* ---- the returns of a kernel that does not pass the call on ---- */

/* Whether a value of this type can be made up as a return (see below). */
static int return_buildable(const disp_type *t) {
  switch (disp_schema_type_kind(t)) {
    case DISP_TYPE_TENSOR: case DISP_TYPE_OPTIONAL: case DISP_TYPE_NONE:
    case DISP_TYPE_INT: case DISP_TYPE_SYMINT: case DISP_TYPE_SCALAR_TYPE:
    case DISP_TYPE_LAYOUT: case DISP_TYPE_MEMORY_FORMAT: case DISP_TYPE_FLOAT:
    case DISP_TYPE_BOOL: case DISP_TYPE_SCALAR: case DISP_TYPE_STR:
      return 1;
    case DISP_TYPE_LIST:
      return disp_schema_type_kind(disp_schema_type_element(t, 0)) == DISP_TYPE_TENSOR;
    default:
      return 0;
  }
}

int sim_is_tensor_argument(const disp_type *t) {
  if (disp_schema_type_kind(t) == DISP_TYPE_TENSOR) return 1;
  if (disp_schema_type_kind(t) != DISP_TYPE_LIST) return 0;
  const disp_type *e = disp_schema_type_element(t, 0);
  if (disp_schema_type_kind(e) == DISP_TYPE_OPTIONAL) e = disp_schema_type_element(e, 0);
  return disp_schema_type_kind(e) == DISP_TYPE_TENSOR;
}

static int has_tensor_argument(const disp_schema *s) {
  for (size_t i = 0; i < disp_schema_num_arguments(s); i++)
    if (sim_is_tensor_argument(disp_schema_argument_type(s, i))) return 1;
  return 0;
}

static int needs_tensor(const disp_type *t) {
  disp_type_kind k = disp_schema_type_kind(t);
  return k == DISP_TYPE_TENSOR || k == DISP_TYPE_LIST;
}

disp_status sim_check_returns(const disp_op *op) {
  const disp_schema *s = disp_op_schema(op);
  for (size_t i = 0; i < disp_schema_num_returns(s); i++) {
    const disp_type *t = disp_schema_return_type(s, i);
    if (!return_buildable(t))
      return disp_set_error(DISP_ERR_TYPE, "%s: cannot build a return of type '%s' (return %zu)",
                            disp_op_name(op), disp_schema_return_type_str(s, i), i + 1);
    if (needs_tensor(t) && !has_tensor_argument(s))
      return disp_set_error(DISP_ERR_TYPE,
                            "%s: cannot build a return of type '%s' (return %zu) without a Tensor argument",
                            disp_op_name(op), disp_schema_return_type_str(s, i), i + 1);
  }
  return DISP_OK;
}

/* The first tensor among the top n values (a Tensor or a list element). */
static disp_tensor *first_tensor(disp_stack *stack, size_t n) {
  for (size_t i = n; i-- > 0;) {
    const disp_value *v = disp_stack_peek(stack, i);
    if (v->tag == DISP_VALUE_TENSOR) return v->u.tensor;
    if (v->tag == DISP_VALUE_TENSOR_LIST)
      for (size_t j = 0; j < v->u.tensors.len; j++)
        if (v->u.tensors.data[j]) return v->u.tensors.data[j];
  }
  return NULL;
}

static disp_status push_return(disp_stack *stack, const disp_type *t, disp_tensor *tensor) {
  switch (disp_schema_type_kind(t)) {
    case DISP_TYPE_TENSOR: return disp_stack_push_tensor(stack, tensor);
    case DISP_TYPE_LIST: return disp_stack_push_tensor_list(stack, &tensor, 1);
    case DISP_TYPE_OPTIONAL: case DISP_TYPE_NONE: return disp_stack_push_none(stack);
    case DISP_TYPE_FLOAT: return disp_stack_push_double(stack, 0.0);
    case DISP_TYPE_BOOL: return disp_stack_push_bool(stack, false);
    case DISP_TYPE_SCALAR: return disp_stack_push_scalar(stack, disp_scalar_int(0));
    case DISP_TYPE_STR: return disp_stack_push_string(stack, "");
    default: return disp_stack_push_int(stack, 0);
  }
}

/*
 * sim_push_returns - replaces the arguments on the stack with made-up
 * returns: the first tensor argument for a Tensor (a list of it for
 * Tensor[]), None for an optional, zero/False/"" for the rest. For
 * `(Tensor) -> Tensor` that is the conformance README's "returns its input".
 */
static disp_status sim_push_returns(const disp_op *op, disp_stack *stack) {
  const disp_schema *s = disp_op_schema(op);
  size_t nargs = disp_schema_num_arguments(s);
  disp_status st = sim_check_returns(op);
  if (st == DISP_OK && disp_stack_size(stack) < nargs)
    st = disp_set_error(DISP_ERR_INVALID_ARG, "%s: the stack holds fewer than %zu arguments",
                        disp_op_name(op), nargs);
  disp_tensor *tensor = st == DISP_OK ? first_tensor(stack, nargs) : NULL;
  for (size_t i = 0; st == DISP_OK && !tensor && i < disp_schema_num_returns(s); i++)
    if (needs_tensor(disp_schema_return_type(s, i)))
      st = disp_set_error(DISP_ERR_TYPE, "%s: no tensor was passed to return", disp_op_name(op));
  if (st != DISP_OK) return st;
  if (tensor) disp_tensor_retain(tensor); /* outlives the arguments it came from */
  disp_stack_drop(stack, nargs);
  for (size_t i = 0; st == DISP_OK && i < disp_schema_num_returns(s); i++)
    st = push_return(stack, disp_schema_return_type(s, i), tensor);
  disp_tensor_release(tensor);
  return st;
}

static disp_status sim_kernel(const disp_op *op, disp_keyset ks, disp_stack *stack, void *ud) {
  const sim_kernel_info *info = ud;
  char set[1024];
  disp_keyset_format(ks, set, sizeof set);
  const char *slot = disp_key_name(disp_keyset_highest_key(ks));
  if (g_log) {
    if (info->reg < 0)
      fprintf(g_log, "  fallback [boxed] for %s at %s  ks=%s\n", disp_op_name(op), slot, set);
    else
      fprintf(g_log, "  kernel reg#%d [%s] at %s  ks=%s\n", info->reg, disp_key_name(info->key), slot, set);
  }
  if (info->passes_on) return disp_redispatch_boxed(op, disp_keyset_below(ks), stack);
  return sim_push_returns(op, stack);
}

static disp_kernel test_kernel(int reg, disp_key key, sim_kernel_info **info_out) {
  sim_kernel_info *info = malloc(sizeof *info);
  *info_out = info;
  if (!info) return disp_kernel_fallthrough();
  info->reg = reg;
  info->key = key;
  info->passes_on = reg >= 0 && !is_backend_or_composite(key);
  return disp_kernel_boxed(sim_kernel, info, free);
}

static int push_lib(sim_script *s, disp_library *lib) {
  if (s->nlibs == s->caplibs) {
    int cap = s->caplibs ? 2 * s->caplibs : 16;
    disp_library **p = realloc(s->libs, (size_t)cap * sizeof *p);
    if (!p) return 0;
    s->libs = p;
    s->caplibs = cap;
  }
  s->libs[s->nlibs++] = lib;
  return 1;
}

static char *trim(char *p) {
  while (isspace((unsigned char)*p)) p++;
  char *e = p + strlen(p);
  while (e > p && isspace((unsigned char)e[-1])) *--e = '\0';
  return p;
}

static disp_status line_error(int lineno, disp_status st, const char *what) {
  char *msg = strdup(disp_last_error());
  disp_set_error(st, "line %d: %s%s%s", lineno, what, msg && msg[0] ? ": " : "", msg ? msg : "");
  free(msg);
  return st;
}

static disp_status parse_key(const char *name, int lineno, disp_key *k) {
  if (disp_key_parse(name, k) != DISP_OK) return line_error(lineno, DISP_ERR_INVALID_ARG, "unknown key");
  return DISP_OK;
}

static disp_status do_def(sim_script *s, const char *schema_text, int lineno) {
  /* The namespace is the schema's own; parse it to open a fragment there. */
  disp_schema *schema = NULL;
  disp_status st = disp_schema_parse(schema_text, &schema);
  if (st != DISP_OK) return line_error(lineno, st, "bad schema");
  const char *ns = disp_schema_namespace(schema);
  char *ns_copy = strdup(ns ? ns : "");
  disp_schema_free(schema);
  if (!ns_copy || !ns_copy[0]) {
    free(ns_copy);
    return line_error(lineno, DISP_ERR_SCHEMA, "def needs a namespaced schema");
  }
  disp_library *lib = NULL;
  st = disp_library_new(DISP_LIBRARY_FRAGMENT, ns_copy, DISP_KEY_UNDEFINED, "simulate", lineno, &lib);
  if (st == DISP_OK && !push_lib(s, lib)) {
    disp_library_free(lib);
    st = disp_set_error(DISP_ERR_NO_MEMORY, "out of memory");
  }
  if (st != DISP_OK) {
    free(ns_copy);
    return line_error(lineno, st, "def failed");
  }
  disp_registration *reg = NULL;
  if ((st = disp_library_def(lib, schema_text, &reg)) != DISP_OK) {
    free(ns_copy);
    return line_error(lineno, st, "def failed");
  }
  if (s->nops == s->capops) {
    int cap = s->capops ? 2 * s->capops : 8;
    sim_opinfo *p = realloc(s->ops, (size_t)cap * sizeof *p);
    if (!p) {
      free(ns_copy);
      return disp_set_error(DISP_ERR_NO_MEMORY, "out of memory");
    }
    s->ops = p;
    s->capops = cap;
  }
  sim_opinfo *o = &s->ops[s->nops++];
  memset(o, 0, sizeof *o);
  o->ns = ns_copy;
  disp_schema *parsed = NULL;
  disp_schema_parse_ns(schema_text, ns_copy, &parsed);
  st = disp_op_find(disp_schema_qualified_name(parsed), &o->op);
  disp_schema_free(parsed);
  return st == DISP_OK ? DISP_OK : line_error(lineno, st, "def lookup failed");
}

static disp_status do_impl(sim_script *s, char *args, const char *line, int lineno) {
  if (s->nops == 0) return line_error(lineno, DISP_ERR_INVALID_ARG, "impl before any def");
  sim_opinfo *o = &s->ops[s->nops - 1];
  if (o->nimpls == MAX_IMPLS) return line_error(lineno, DISP_ERR_INVALID_ARG, "too many impls");
  char *key_name = strtok(args, " \t");
  char *mode = strtok(NULL, " \t");
  if (!key_name || (mode && strcmp(mode, "fallthrough") != 0) || strtok(NULL, " \t"))
    return line_error(lineno, DISP_ERR_INVALID_ARG, "expected 'impl KEY [fallthrough]'");
  disp_key key;
  disp_status st = parse_key(key_name, lineno, &key);
  if (st != DISP_OK) return st;
  char dbg[256];
  snprintf(dbg, sizeof dbg, "reg#%d: %s", o->nimpls, line);
  sim_kernel_info *info = NULL;
  disp_kernel k = mode ? disp_kernel_fallthrough() : test_kernel(o->nimpls, key, &info);
  if (!mode && !info) return disp_set_error(DISP_ERR_NO_MEMORY, "out of memory");
  k.debug = dbg;
  disp_library *lib = NULL;
  st = disp_library_new(DISP_LIBRARY_IMPL, o->ns, key, "simulate", lineno, &lib);
  if (st == DISP_OK && !push_lib(s, lib)) {
    disp_library_free(lib);
    st = disp_set_error(DISP_ERR_NO_MEMORY, "out of memory");
  }
  if (st == DISP_OK) st = disp_library_impl(lib, disp_op_name(o->op), k, NULL);
  if (st != DISP_OK) {
    free(info); /* a failed registration leaves user_data with us */
    return line_error(lineno, st, "impl failed");
  }
  if (!(o->impl_debug[o->nimpls] = strdup(dbg))) return disp_set_error(DISP_ERR_NO_MEMORY, "out of memory");
  o->nimpls++;
  return DISP_OK;
}

static disp_status do_fallback(sim_script *s, char *args, const char *line, int lineno) {
  char *key_name = strtok(args, " \t");
  char *mode = strtok(NULL, " \t");
  if (!key_name || !mode || (strcmp(mode, "boxed") && strcmp(mode, "fallthrough")) || strtok(NULL, " \t"))
    return line_error(lineno, DISP_ERR_INVALID_ARG, "expected 'fallback KEY boxed|fallthrough'");
  disp_key key;
  disp_status st = parse_key(key_name, lineno, &key);
  if (st != DISP_OK) return st;
  sim_kernel_info *info = NULL;
  int fallthrough = strcmp(mode, "fallthrough") == 0;
  disp_kernel k = fallthrough ? disp_kernel_fallthrough() : test_kernel(-1, key, &info);
  if (!fallthrough && !info) return disp_set_error(DISP_ERR_NO_MEMORY, "out of memory");
  k.debug = line;
  disp_library *lib = NULL;
  st = disp_library_new(DISP_LIBRARY_IMPL, "_", key, "simulate", lineno, &lib);
  if (st == DISP_OK && !push_lib(s, lib)) {
    disp_library_free(lib);
    st = disp_set_error(DISP_ERR_NO_MEMORY, "out of memory");
  }
  if (st == DISP_OK) st = disp_library_fallback(lib, k, NULL);
  if (st != DISP_OK) free(info);
  return st == DISP_OK ? DISP_OK : line_error(lineno, st, "fallback failed");
}

disp_status sim_run(const char *text, sim_script **out) {
  sim_script *s = calloc(1, sizeof *s);
  char *copy = strdup(text);
  if (!s || !copy) {
    free(s);
    free(copy);
    return disp_set_error(DISP_ERR_NO_MEMORY, "out of memory");
  }
  disp_status st = DISP_OK;
  int lineno = 0;
  char *save = NULL;
  for (char *raw = copy, *next; raw && st == DISP_OK; raw = next) {
    next = strchr(raw, '\n');
    if (next) *next++ = '\0';
    lineno++;
    char *line = trim(raw);
    if (!*line || line[0] == '#') continue;
    if (strcmp(line, "---") == 0) break;
    char *line_copy = strdup(line);
    if (!line_copy) {
      st = disp_set_error(DISP_ERR_NO_MEMORY, "out of memory");
      break;
    }
    if (strncmp(line, "def ", 4) == 0) {
      st = do_def(s, trim(line + 4), lineno);
    } else if (strncmp(line, "impl ", 5) == 0) {
      st = do_impl(s, line + 5, line_copy, lineno);
    } else if (strncmp(line, "fallback ", 9) == 0) {
      st = do_fallback(s, line + 9, line_copy, lineno);
    } else {
      st = disp_set_error(DISP_ERR_INVALID_ARG,
                          "line %d: expected 'def', 'impl', 'fallback', '#' or '---', found '%s'",
                          lineno, line);
    }
    free(line_copy);
  }
  (void)save;
  free(copy);
  if (st != DISP_OK) {
    char *msg = strdup(disp_last_error());
    sim_free(s);
    disp_set_error(st, "%s", msg ? msg : "simulate failed");
    free(msg);
    return st;
  }
  *out = s;
  return DISP_OK;
}

int sim_num_ops(const sim_script *s) { return s->nops; }
const disp_op *sim_op(const sim_script *s, int i) { return s->ops[i].op; }
const char *sim_impl_debug(const sim_script *s, int op_index, int reg) {
  const sim_opinfo *o = &s->ops[op_index];
  return reg >= 0 && reg < o->nimpls ? o->impl_debug[reg] : NULL;
}

disp_status sim_print_tables(const sim_script *s, FILE *out) {
  for (int i = 0; i < s->nops; i++) {
    char *table = disp_op_dump_table(s->ops[i].op);
    if (!table) return disp_set_error(DISP_ERR_NO_MEMORY, "out of memory");
    fprintf(out, "== %s\n%s", disp_op_name(s->ops[i].op), table);
    free(table);
  }
  return DISP_OK;
}

void sim_free(sim_script *s) {
  if (!s) return;
  for (int i = s->nlibs - 1; i >= 0; i--) disp_library_free(s->libs[i]);
  for (int i = 0; i < s->nops; i++) {
    free(s->ops[i].ns);
    for (int j = 0; j < s->ops[i].nimpls; j++) free(s->ops[i].impl_debug[j]);
  }
  free(s->ops);
  free(s->libs);
  free(s);
}

/* Reads all of f into a new buffer with a NUL after the data. */
static char *read_stream(FILE *f, size_t *len_out) {
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  while (buf) {
    len += fread(buf + len, 1, cap - len - 1, f);
    if (len + 1 < cap) break;
    char *p = realloc(buf, cap * 2);
    if (!p) {
      free(buf);
      errno = ENOMEM;
      return NULL;
    }
    buf = p;
    cap *= 2;
  }
  if (!buf) {
    errno = ENOMEM;
    return NULL;
  }
  if (ferror(f)) { /* fread keeps errno: EISDIR, EIO, ... */
    int e = errno ? errno : EIO;
    free(buf);
    errno = e;
    return NULL;
  }
  buf[len] = '\0';
  *len_out = len;
  return buf;
}

char *sim_read_file(const char *path, size_t *len) {
  int use_stdin = strcmp(path, "-") == 0;
  FILE *f = use_stdin ? stdin : fopen(path, "rb");
  if (!f) return NULL;
  /* fopen opens a directory for reading on Linux and fread may just see
   * nothing: refuse it by its type rather than print nothing and succeed. */
  struct stat sb;
  char *text = NULL;
  if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
    errno = EISDIR;
  } else {
    errno = 0;
    text = read_stream(f, len);
  }
  int e = errno;
  if (!use_stdin) fclose(f);
  errno = e;
  return text;
}

int sim_nul_line(const char *text, size_t len, int *col) {
  const char *nul = memchr(text, '\0', len);
  if (!nul) return 0;
  int line = 1;
  const char *start = text;
  for (const char *p = text; p < nul; p++)
    if (*p == '\n') line++, start = p + 1;
  if (col) *col = (int)(nul - start) + 1;
  return line;
}
