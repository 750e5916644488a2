/*
 * disp - inspect libdispatch from the shell.
 *
 *   disp schema [FILE|-]          canonical form of each schema line
 *   disp simulate [--calls] FILE  run a conformance registration script
 *   disp keys                     every dispatch key, its kind and priority
 *   disp keyset KEY...            the set those keys make
 *   disp table OP | state OP      an operator's computed table / registrations
 *   disp fallbacks                the backend fallbacks in force
 *   disp ops                      every registered operator's schema
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <disp.h>

#include "check_ops.h"
#include "disp_safetensors.h"
#include "simulate.h"
#include "tool_plugin.h"

static const char *const usage =
    "usage: disp COMMAND [ARGS]\n"
    "\n"
    "Inspect libdispatch, PyTorch's operator dispatcher in C.\n"
    "\n"
    "commands:\n"
    "  schema [FILE|-]          print each schema line in PyTorch's canonical form;\n"
    "                           errors go to stderr as LINE:COL: error: ...; exit 1 if any failed\n"
    "  simulate [--calls] FILE  run a registration script (conformance format) on a registry\n"
    "                           holding only the built-in fallbacks; print '== OP' and the\n"
    "                           computed table of every operator it defines\n"
    "  keys                     every dispatch key with its kind and priority\n"
    "  keyset KEY...            the key set the keys make, its highest key and table slot\n"
    "  table OP                 OP's computed dispatch table (PyTorch's dumpComputedTable)\n"
    "  state OP                 OP's registrations (PyTorch's dumpState)\n"
    "  fallbacks                the backend fallback of every key that has one\n"
    "  ops                      the schema of every registered operator, sorted\n"
    "  ops [--plugin X.so] [--backend KEY] --required|--missing\n"
    "                           the operators a backend on KEY must implement (still lacks)\n"
    "  check-ops [--plugin X.so] [--device cpu|meta|NAME] [--grad] FILE...\n"
    "                           run reference cases (conformance/ops format) and compare\n"
    "  test [--plugin X.so]... [--device DEVICE]...\n"
    "                           device-generic tests on cpu, meta and each plugin's device,\n"
    "                           and every reference case on each plugin's device\n"
    "  check                    report failed static registrations and impls without a def\n"
    "  safetensors FILE         a safetensors file's metadata and tensors (name, dtype, shape);\n"
    "                           exit 1 with the cause if the file is malformed\n"
    "\n"
    "Every command takes --plugin X.so (any number): backend plugins loaded first\n"
    "(disp_plugin_load), so their operators, kernels and devices are seen.\n"
    "\n"
    "options:\n"
    "  -h, --help               this text (also COMMAND --help)\n"
    "  --version                the library's version, the CPU capability and thread count in use\n";

static int want_help(int argc, char **argv) {
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
  return 0;
}

static int fail(const char *what) {
  fprintf(stderr, "disp: %s%s%s\n", what, disp_last_error()[0] ? ": " : "", disp_last_error());
  return 1;
}

/* ---- schema ------------------------------------------------------------- */

/*
 * Reads a subcommand's input file whole. On failure prints
 * "disp CMD: cannot read PATH: <reason>" and returns NULL.
 */
static char *read_input(const char *cmd, const char *path, size_t *len) {
  char *text = sim_read_file(path, len);
  if (!text) fprintf(stderr, "disp %s: cannot read %s: %s\n", cmd, path, strerror(errno));
  return text;
}

/* Prints one schema line's canonical form, or its located error; 1 on error. */
static int print_schema_line(const char *line, int lineno) {
  disp_schema *s = NULL;
  if (disp_schema_parse(line, &s) != DISP_OK) {
    /* The parser numbers lines within the text it was given (one line);
     * replace its "1:" with the line number in the file. */
    const char *msg = disp_last_error();
    if (!strncmp(msg, "1:", 2)) msg += 2, fprintf(stderr, "%d:", lineno);
    fprintf(stderr, "%s\n", msg);
    return 1;
  }
  char *out = disp_schema_to_string(s);
  disp_schema_free(s);
  if (!out) {
    fprintf(stderr, "%d: error: out of memory printing the schema\n", lineno);
    return 1;
  }
  puts(out);
  free(out);
  return 0;
}

static int cmd_schema(int argc, char **argv) {
  if (want_help(argc, argv)) {
    puts("usage: disp schema [FILE|-]\n\nReads one schema per line (default: stdin) and prints each in\n"
         "PyTorch's canonical form. Empty lines and lines starting with '#' are skipped.\n"
         "A line that does not parse prints its error to stderr, prefixed with the input line\n"
         "number (LINE:COL: error: expected ..., found ...), as does a line holding a NUL\n"
         "byte; the exit status is then 1. An unreadable FILE or a directory is exit 1.");
    return 0;
  }
  if (argc > 1) {
    fprintf(stderr, "disp schema: expected at most one FILE\n");
    return 2;
  }
  const char *path = argc == 1 ? argv[0] : "-";
  size_t len = 0;
  char *text = read_input("schema", path, &len);
  if (!text) return 1;
  int bad = 0, lineno = 0;
  /* By length, not by C string: a NUL byte must not end the file early. */
  for (char *line = text, *end = text + len, *next; line < end; line = next) {
    char *nl = memchr(line, '\n', (size_t)(end - line));
    next = nl ? nl + 1 : end;
    size_t n = (size_t)((nl ? nl : end) - line);
    line[n] = '\0'; /* the newline, or the NUL after the text */
    lineno++;
    int col = 0;
    if (sim_nul_line(line, n, &col)) {
      fprintf(stderr, "%d:%d: error: line %d contains a NUL byte\n", lineno, col, lineno);
      bad = 1;
      continue;
    }
    if (!*line || line[0] == '#') continue;
    bad |= print_schema_line(line, lineno);
  }
  free(text);
  return bad;
}

/* ---- simulate ----------------------------------------------------------- */

int disp_tool_simulate_calls(const sim_script *s, FILE *out); /* simulate_calls.c */

static int cmd_simulate(int argc, char **argv) {
  if (want_help(argc, argv)) {
    puts("usage: disp simulate [--calls] FILE\n\n"
         "Runs a registration script (def SCHEMA / impl KEY [fallthrough] / fallback KEY\n"
         "boxed|fallthrough; '#' comments; stops at '---') and prints, for each operator it\n"
         "defines, '== ns::op.overload' followed by its computed dispatch table.\n"
         "With --calls, calls each operator in the ten conformance scenarios instead and\n"
         "prints which test kernels ran. Arguments come from the schema: the scenario's\n"
         "tensor for Tensor (and Tensor[]), None for optionals, trailing defaults, simple\n"
         "values for numbers, strings, dtypes and devices; an operator with another\n"
         "argument or return type is refused by name (exit 1).");
    return 0;
  }
  int calls = 0;
  if (argc > 0 && !strcmp(argv[0], "--calls")) calls = 1, argc--, argv++;
  if (argc != 1) {
    fprintf(stderr, "disp simulate: expected one FILE\n");
    return 2;
  }
  size_t len = 0;
  char *text = read_input("simulate", argv[0], &len);
  if (!text) return 1;
  int col, nul_line = sim_nul_line(text, len, &col);
  if (nul_line) {
    fprintf(stderr, "disp: %s: line %d: contains a NUL byte\n", argv[0], nul_line);
    free(text);
    return 1;
  }
  sim_script *s = NULL;
  disp_status st = sim_run(text, &s);
  free(text);
  if (st != DISP_OK) return fail(argv[0]);
  int rc = 0;
  if (calls)
    rc = disp_tool_simulate_calls(s, stdout);
  else if (sim_print_tables(s, stdout) != DISP_OK)
    rc = fail("simulate");
  sim_free(s);
  return rc;
}

/* ---- keys --------------------------------------------------------------- */

static int cmd_keys(int argc, char **argv) {
  if (want_help(argc, argv) || argc) {
    puts("usage: disp keys\n\nLists every dispatch key, lowest priority first within each kind:\n"
         "backend components (bit in a key set), functionality keys (bit above the backends),\n"
         "per-backend runtime keys and single functionalities (slot in the dispatch table:\n"
         "a higher slot wins), and alias keys (the runtime keys they cover).");
    return want_help(argc, argv) ? 0 : 2;
  }
  printf("%-40s %-14s %s\n", "KEY", "KIND", "PRIORITY");
  for (int b = 0; b < DISP_NUM_BACKENDS; b++)
    printf("%-40s %-14s bit %d\n", disp_backend_name((disp_backend)b), "backend", b);
  for (int f = 1; f <= DISP_NUM_FUNCTIONALITIES; f++) {
    int slot = disp_key_table_index((disp_key)f);
    char pri[64];
    if (slot > 0)
      snprintf(pri, sizeof pri, "bit %d, table slot %d", DISP_NUM_BACKENDS + f - 1, slot);
    else
      snprintf(pri, sizeof pri, "bit %d, per-backend", DISP_NUM_BACKENDS + f - 1);
    printf("%-40s %-14s %s\n", disp_key_name((disp_key)f), "functionality", pri);
  }
  printf("%-40s %-14s table slot 0\n", "Undefined", "runtime");
  for (int i = 1; i < DISP_NUM_RUNTIME_ENTRIES; i++) {
    disp_key k = disp_key_for_table_index(i);
    if (disp_key_kind_of(k) != DISP_KEY_KIND_PER_BACKEND) continue;
    printf("%-40s %-14s table slot %d (%s x %s)\n", disp_key_name(k), "runtime", i,
           disp_key_name(disp_key_functionality(k)), disp_backend_name((disp_backend)disp_key_backend(k)));
  }
  for (int k = DISP_KEY_END_OF_RUNTIME_KEYS + 1; k < DISP_KEY_COUNT; k++) {
    char buf[2048];
    disp_keyset_format(disp_key_runtime_keyset((disp_key)k), buf, sizeof buf);
    printf("%-40s %-14s covers %s\n", disp_key_name((disp_key)k), "alias", buf);
  }
  return 0;
}

static int cmd_keyset(int argc, char **argv) {
  if (want_help(argc, argv) || argc == 0) {
    puts("usage: disp keyset KEY...\n\nPrints the key set the keys make (an alias key adds every\n"
         "runtime key it covers), the key a call with that set dispatches to, and its table slot.\n"
         "Example: disp keyset AutogradCPU PrivateUse1  ->  highest key AutogradPrivateUse1");
    return want_help(argc, argv) ? 0 : 2;
  }
  disp_keyset ks = disp_keyset_empty();
  for (int i = 0; i < argc; i++) {
    disp_key k;
    if (disp_key_parse(argv[i], &k) != DISP_OK) return fail(argv[i]);
    ks = disp_keyset_or(ks, disp_key_runtime_keyset(k));
  }
  char buf[2048];
  disp_keyset_format(ks, buf, sizeof buf);
  printf("%s\n", buf);
  printf("highest key: %s\n", disp_key_name(disp_keyset_highest_key(ks)));
  printf("table slot: %d\n", disp_keyset_table_index(ks));
  printf("repr: 0x%016llx\n", (unsigned long long)ks.repr);
  return 0;
}

/* ---- operators ---------------------------------------------------------- */

static int cmd_op_dump(int argc, char **argv, int state) {
  if (want_help(argc, argv) || argc != 1) {
    printf("usage: disp %s OP\n\nPrints %s for an operator the library registers, named\n"
           "ns::name.overload (e.g. aten::add.Tensor).\n",
           state ? "state" : "table",
           state ? "its registration state in PyTorch's dumpState() format"
                 : "its computed dispatch table in PyTorch's dumpComputedTable() format");
    return want_help(argc, argv) ? 0 : 2;
  }
  const disp_op *op = NULL;
  if (disp_op_find(argv[0], &op) != DISP_OK) return fail(argv[0]);
  char *text = state ? disp_op_dump_state(op) : disp_op_dump_table(op);
  if (!text) return fail("out of memory");
  fputs(text, stdout);
  free(text);
  return 0;
}

static int cmd_fallbacks(int argc, char **argv) {
  if (want_help(argc, argv) || argc) {
    puts("usage: disp fallbacks\n\nPrints the backend fallback of every runtime key that has one.");
    return want_help(argc, argv) ? 0 : 2;
  }
  char *text = disp_fallback_dump();
  if (!text) return fail("out of memory");
  fputs(text, stdout);
  free(text);
  return 0;
}

static int cmd_ops(int argc, char **argv) {
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "--backend") || !strcmp(argv[i], "--plugin") || !strcmp(argv[i], "--missing") ||
        !strcmp(argv[i], "--required"))
      return disp_tool_ops_report(argc, argv);
  if (want_help(argc, argv) || argc) {
    puts("usage: disp ops\n\nPrints the schema of every registered operator, one per line, sorted.");
    return want_help(argc, argv) ? 0 : 2;
  }
  const char **names = NULL;
  size_t n = 0;
  if (disp_op_list(&names, &n) != DISP_OK) return fail("ops");
  for (size_t i = 0; i < n; i++) {
    const disp_op *op = NULL;
    if (disp_op_find(names[i], &op) != DISP_OK) continue;
    char *text = disp_schema_to_string(disp_op_schema(op));
    puts(text ? text : names[i]);
    free(text);
  }
  free(names);
  return 0;
}

static int cmd_check(int argc, char **argv) {
  if (want_help(argc, argv) || argc) {
    puts("usage: disp check\n\nReports static registration blocks that failed and impls whose\n"
         "operator was never defined. Exit 1 if there are any.");
    return want_help(argc, argv) ? 0 : 2;
  }
  if (disp_registry_check() != DISP_OK) {
    fprintf(stderr, "%s\n", disp_last_error());
    return 1;
  }
  puts("ok");
  return 0;
}

/* `--plugin X.so` (any command, any number): loaded before the command
 * runs, and taken out of its arguments. */
static int load_plugins(int *argc, char **argv) {
  int out = 2;
  for (int i = 2; i < *argc; i++) {
    if (!strcmp(argv[i], "--plugin") && i + 1 < *argc) {
      if (disp_tool_load_plugin(argv[1], argv[++i])) return 1;
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("disp (libdispatch) %s\nCPU capability: %s; threads: %d; BLAS: %s\n", disp_version_string(),
           disp_cpu_capability(), disp_get_num_threads(), disp_cpu_blas());
    return 0;
  }
  const char *cmd = argv[1];
  int rc;
  if (load_plugins(&argc, argv)) {
    disp_shutdown();
    return 2;
  }
  if (!strcmp(cmd, "schema")) rc = cmd_schema(argc - 2, argv + 2);
  else if (!strcmp(cmd, "simulate")) rc = cmd_simulate(argc - 2, argv + 2);
  else if (!strcmp(cmd, "keys")) rc = cmd_keys(argc - 2, argv + 2);
  else if (!strcmp(cmd, "keyset")) rc = cmd_keyset(argc - 2, argv + 2);
  else if (!strcmp(cmd, "table")) rc = cmd_op_dump(argc - 2, argv + 2, 0);
  else if (!strcmp(cmd, "state")) rc = cmd_op_dump(argc - 2, argv + 2, 1);
  else if (!strcmp(cmd, "fallbacks")) rc = cmd_fallbacks(argc - 2, argv + 2);
  else if (!strcmp(cmd, "ops")) rc = cmd_ops(argc - 2, argv + 2);
  else if (!strcmp(cmd, "check-ops")) rc = disp_tool_check_ops(argc - 2, argv + 2);
  else if (!strcmp(cmd, "test")) rc = disp_tool_test(argc - 2, argv + 2);
  else if (!strcmp(cmd, "check")) rc = cmd_check(argc - 2, argv + 2);
  else if (!strcmp(cmd, "safetensors")) rc = disp_tool_safetensors(argc - 2, argv + 2);
  else {
    fprintf(stderr, "disp: unknown command '%s'\n\n%s", cmd, usage);
    rc = 2;
  }
  disp_shutdown();
  return rc;
}
