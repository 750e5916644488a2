/*
 * fuzz_schema.c - libFuzzer target for the schema parser and printer.
 *
 * Any input must parse or fail cleanly (the sanitizers catch crashes and
 * leaks). When it parses, its printed form must parse again to an equal
 * schema (defaults, list sizes and alias sets included) that prints
 * identically, its copy must equal it, and it must be compatible with
 * itself; otherwise the target aborts. Names go through
 * disp_schema_parse_name as well.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disp/schema.h"
#include "schema_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void mismatch(const char *what, const char *a, const char *b) {
  fprintf(stderr, "fuzz_schema: %s\n  first:  %s\n  second: %s\n", what, a ? a : "(null)",
          b ? b : "(null)");
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';

  char *name = NULL;
  if (disp_schema_parse_name(text, "fuzz", &name) == DISP_OK) free(name);

  disp_schema *s = NULL;
  if (disp_schema_parse(text, &s) == DISP_OK) {
    char *printed = disp_schema_to_string(s);
    if (!printed) abort(); /* no OOM expected under the fuzzer's limits */
    disp_schema *again = NULL;
    if (disp_schema_parse(printed, &again) != DISP_OK) {
      mismatch("printed schema does not parse", printed, disp_last_error());
    }
    char *reprinted = disp_schema_to_string(again);
    if (!reprinted || strcmp(printed, reprinted) != 0) {
      mismatch("printed schema prints differently", printed, reprinted);
    }
    if (strcmp(disp_schema_qualified_name(s), disp_schema_qualified_name(again)) != 0) {
      mismatch("names differ", disp_schema_qualified_name(s), disp_schema_qualified_name(again));
    }
    disp_strbuf why;
    disp__strbuf_init(&why);
    if (!disp__schema_equal(s, again, &why)) {
      mismatch("schema differs from its reprint", printed, disp__strbuf_cstr(&why));
    }
    disp__strbuf_free(&why);
    char *reason = NULL;
    if (disp__schema_check_compatible(s, again, &reason) != DISP_OK) {
      mismatch("schema differs from its reprint", printed, reason);
    }
    disp_schema *copy = disp_schema_copy(s);
    char *copied = copy ? disp_schema_to_string(copy) : NULL;
    if (!copied || strcmp(printed, copied) != 0) mismatch("copy prints differently", printed, copied);
    if (!disp__schema_equal(s, copy, NULL)) mismatch("copy differs", printed, copied);

    /* Touch every accessor. */
    for (size_t i = 0; i < disp_schema_num_arguments(s); i++) {
      (void)disp_schema_argument_type_str(s, i);
      (void)disp_schema_argument_default_str(s, i);
      (void)disp_schema_argument_alias_set(s, i);
      char *ts = disp_schema_type_str(disp_schema_argument_type(s, i));
      free(ts);
    }
    for (size_t i = 0; i < disp_schema_num_returns(s); i++) {
      (void)disp_schema_return_alias_set(s, i);
    }

    free(copied);
    disp_schema_free(copy);
    free(reprinted);
    disp_schema_free(again);
    free(printed);
    disp_schema_free(s);
  }
  free(text);
  return 0;
}
