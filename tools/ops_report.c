/*
 * ops_report.c - `disp ops --backend KEY --required|--missing`: what a
 * backend on KEY has to implement itself, from the live registry.
 *
 * PyTorch's rule (torchgen's compute_registration_declarations, the
 * RegistrationDeclarations.h a backend author reads): an operator must be
 * implemented by a backend when its entry says "dispatch: True" and
 * "default: False", where
 *   dispatch = the set of keys with a kernel is not exactly
 *              {CompositeImplicitAutograd}  (an operator with no kernel at
 *              all, like _copy_from, counts as dispatch True: backends
 *              provide it);
 *   default  = it has a CompositeImplicitAutograd, CompositeExplicitAutograd
 *              or CompositeExplicitAutogradNonFunctional kernel (the last
 *              includes the ones torchgen generates for the functional and
 *              in-place variants of structured ops).
 * An operator with only a CIA kernel is dispatch False and default True, so
 * the rule comes down to "no composite kernel covers it".
 *
 * We apply that rule to what is registered now, and ask whether each
 * composite kernel really covers KEY, through the alias key's runtime key
 * set: CIA and CEA cover every backend key (dense, quantized, sparse);
 * CompositeExplicitAutogradNonFunctional does not cover the Sparse keys
 * (PyTorch's non_functional_backend_dispatch_keyset leaves them out), so on
 * SparseCPU an op whose only composite is CEANF is required, while
 * torchgen's per-op flag would call it "default". For every dense key
 * (CPU, Meta, PrivateUse1, ...) the answer is exactly RegistrationDeclarations'.
 *
 * --missing: the required ones with no kernel registered directly on KEY
 * (disp_op_has_kernel: fallbacks and alias-derived entries do not count).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_ops.h"

static const char *const report_usage =
    "usage: disp ops [--plugin X.so]... [--backend KEY] --required|--missing\n\n"
    "Lists, one schema per line, sorted, the operators a backend on the runtime key KEY\n"
    "(e.g. PrivateUse1, CPU, Meta) must implement itself: PyTorch's RegistrationDeclarations\n"
    "rule, no CompositeImplicitAutograd / CompositeExplicitAutograd(NonFunctional) kernel\n"
    "covers KEY. --missing lists those of them that have no kernel on KEY yet, and after\n"
    "them a '# ' line saying whether KEY's backend fallback (e.g. the CPU fallback) would run\n"
    "them. KEY defaults to PrivateUse1; --plugin loads a backend plugin first.\n";

static int covered_by_composite(const disp_op *op, disp_key key) {
  static const disp_key composites[] = {DISP_KEY_COMPOSITE_IMPLICIT_AUTOGRAD,
                                        DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD,
                                        DISP_KEY_COMPOSITE_EXPLICIT_AUTOGRAD_NON_FUNCTIONAL};
  for (size_t k = 0; k < sizeof composites / sizeof *composites; k++)
    if (disp_op_has_kernel(op, composites[k]) && disp_key_is_included_in_alias(key, composites[k]))
      return 1;
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* After --missing: whether KEY's backend fallback would take those ops. */
static void report_fallback(disp_key key, size_t nmissing) {
  char *dump = disp_fallback_dump();
  const char *name = disp_key_name(key), *line = dump ? strstr(dump, name) : NULL;
  while (line && !(line == dump || line[-1] == '\n')) line = strstr(line + 1, name);
  if (line && line[strlen(name)] == ':') {
    const char *end = strchr(line, '\n');
    printf("# %zu missing on %s: its backend fallback runs them (%.*s)\n", nmissing, name,
           (int)(end ? end - line : (long)strlen(line)), line);
  } else {
    printf("# %zu missing on %s: no backend fallback, calling them fails\n", nmissing, name);
  }
  free(dump);
}

int disp_tool_ops_report(int argc, char **argv) {
  const char *keyname = NULL;
  int missing = -1;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { fputs(report_usage, stdout); return 0; }
    if (!strcmp(argv[i], "--backend") && i + 1 < argc) keyname = argv[++i];

    else if (!strcmp(argv[i], "--required")) missing = 0;
    else if (!strcmp(argv[i], "--missing")) missing = 1;
    else { fprintf(stderr, "disp ops: unexpected '%s'\n\n%s", argv[i], report_usage); return 2; }
  }
  if (missing < 0) { fputs(report_usage, stderr); return 2; }
  if (!keyname) keyname = "PrivateUse1";
  disp_key key;
  if (disp_key_parse(keyname, &key) != DISP_OK) {
    fprintf(stderr, "disp ops: %s\n", disp_last_error());
    return 2;
  }
  if (disp_key_kind_of(key) != DISP_KEY_KIND_PER_BACKEND) {
    fprintf(stderr, "disp ops: %s is not a backend's runtime key (e.g. CPU, Meta, PrivateUse1, SparseCPU)\n",
            keyname);
    return 2;
  }
  const char **names = NULL;
  size_t n = 0;
  if (disp_op_list(&names, &n) != DISP_OK) {
    fprintf(stderr, "disp ops: %s\n", disp_last_error());
    return 1;
  }
  /* Sorted by schema text, byte order (as `sort` with LC_ALL=C). */
  char **lines = calloc(n ? n : 1, sizeof *lines);
  size_t nl = 0;
  int rc = lines ? 0 : 1;
  for (size_t i = 0; i < n && !rc; i++) {
    const disp_op *op = NULL;
    if (disp_op_find(names[i], &op) != DISP_OK || !disp_op_schema(op)) continue;
    if (covered_by_composite(op, key)) continue;
    if (missing && disp_op_has_kernel(op, key)) continue;
    lines[nl] = disp_schema_to_string(disp_op_schema(op));
    if (!lines[nl]) rc = 1;
    else nl++;
  }
  if (nl) qsort(lines, nl, sizeof *lines, cmp_str);
  for (size_t i = 0; i < nl; i++) {
    puts(lines[i]);
    free(lines[i]);
  }
  free(lines);
  free(names);
  if (rc) fprintf(stderr, "disp ops: out of memory\n");
  if (!rc && missing) report_fallback(key, nl);
  return rc;
}
