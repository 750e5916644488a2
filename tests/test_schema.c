/*
 * test_schema.c - the schema parser and printer against PyTorch 1.13.
 *
 * The main check is the conformance file tests/data/schemas.txt: every line
 * is a schema as libtorch 1.13.1 printed it, and parsing then printing it
 * must give the line back byte for byte. The rest covers accessors, names
 * and namespaces, error messages (exact first lines) and schema comparison.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disp/schema.h"
#include "schema_internal.h"
#include "test.h"

#ifndef DISP_TEST_DATA_DIR
#define DISP_TEST_DATA_DIR "tests/data"
#endif

/* Parse `text`, print it, and return the printed text (malloc'd), or NULL
 * when parsing failed. */
static char *reprint(const char *text) {
  disp_schema *s = NULL;
  if (disp_schema_parse(text, &s) != DISP_OK) return NULL;
  char *out = disp_schema_to_string(s);
  disp_schema_free(s);
  return out;
}

/* The first line of the last error message (static buffer). */
static const char *first_error_line(void) {
  static char buf[512];
  const char *m = disp_last_error();
  size_t n = strcspn(m, "\n");
  if (n >= sizeof buf) n = sizeof buf - 1;
  memcpy(buf, m, n);
  buf[n] = '\0';
  return buf;
}

/* ---- conformance ---------------------------------------------------------- */

TEST(round_trip_pytorch_schemas) {
  const char *dir = getenv("DISP_TEST_DATA_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/schemas.txt", dir ? dir : DISP_TEST_DATA_DIR);
  FILE *f = fopen(path, "r");
  if (!f) TEST_FAIL_("cannot open %s", path);
  static char line[16384];
  int lines = 0, bad = 0;
  while (fgets(line, sizeof line, f)) {
    size_t n = strlen(line);
    ASSERT_TRUE(n + 1 < sizeof line); /* the line fit */
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
    if (n == 0 || line[0] == '#') continue;
    lines++;
    disp_schema *s = NULL;
    if (disp_schema_parse(line, &s) != DISP_OK) {
      if (bad++ < 5) fprintf(stderr, "does not parse: %s\n%s\n", line, disp_last_error());
      continue;
    }
    char *out = disp_schema_to_string(s);
    if (!out || strcmp(out, line) != 0) {
      if (bad++ < 5) fprintf(stderr, "prints differently:\n  %s\n  %s\n", line, out);
    } else {
      /* A copy prints the same, and so does the text read back. */
      disp_schema *c = disp_schema_copy(s);
      char *again = c ? disp_schema_to_string(c) : NULL;
      if (!again || strcmp(again, line) != 0) bad++;
      free(again);
      disp_schema_free(c);
      /* The printed text parses to an equal schema, defaults included. */
      disp_schema *back = NULL;
      if (disp_schema_parse(out, &back) != DISP_OK || !disp__schema_equal(s, back, NULL)) {
        if (bad++ < 5) fprintf(stderr, "reads back differently: %s\n", line);
      }
      disp_schema_free(back);
    }
    free(out);
    disp_schema_free(s);
  }
  fclose(f);
  printf("     %d schemas round-tripped, %d bad\n", lines, bad);
  ASSERT_TRUE(lines >= 2072);
  ASSERT_EQ_INT(bad, 0);
  return 0;
}

/* ---- accessors ------------------------------------------------------------ */

TEST(accessors_add_tensor) {
  disp_schema *s = NULL;
  ASSERT_OK(disp_schema_parse(
      "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", &s));
  ASSERT_EQ_STR(disp_schema_name(s), "aten::add");
  ASSERT_EQ_STR(disp_schema_base_name(s), "add");
  ASSERT_EQ_STR(disp_schema_namespace(s), "aten");
  ASSERT_EQ_STR(disp_schema_overload(s), "Tensor");
  ASSERT_EQ_STR(disp_schema_qualified_name(s), "aten::add.Tensor");
  ASSERT_EQ_INT(disp_schema_num_arguments(s), 3);
  ASSERT_EQ_INT(disp_schema_num_returns(s), 1);
  ASSERT_FALSE(disp_schema_is_vararg(s));
  ASSERT_FALSE(disp_schema_is_varret(s));
  ASSERT_EQ_STR(disp_schema_argument_name(s, 0), "self");
  ASSERT_EQ_INT(disp_schema_type_kind(disp_schema_argument_type(s, 0)), DISP_TYPE_TENSOR);
  ASSERT_FALSE(disp_schema_argument_kwarg_only(s, 1));
  ASSERT_TRUE(disp_schema_argument_kwarg_only(s, 2));
  ASSERT_EQ_INT(disp_schema_type_kind(disp_schema_argument_type(s, 2)), DISP_TYPE_SCALAR);
  ASSERT_EQ_STR(disp_schema_argument_type_str(s, 2), "Scalar");
  ASSERT_TRUE(disp_schema_argument_has_default(s, 2));
  ASSERT_EQ_STR(disp_schema_argument_default_str(s, 2), "1");
  ASSERT_FALSE(disp_schema_argument_has_default(s, 0));
  ASSERT_EQ_STR(disp_schema_argument_default_str(s, 0), NULL);
  ASSERT_EQ_INT(disp_schema_argument_list_size(s, 0), -1);
  ASSERT_FALSE(disp_schema_argument_is_write(s, 0));
  ASSERT_EQ_STR(disp_schema_argument_alias_set(s, 0), NULL);
  ASSERT_EQ_STR(disp_schema_return_name(s, 0), "");
  ASSERT_EQ_STR(disp_schema_return_type_str(s, 0), "Tensor");
  /* Out of range. */
  ASSERT_EQ_STR(disp_schema_argument_name(s, 3), NULL);
  ASSERT_TRUE(disp_schema_argument_type(s, 3) == NULL);
  ASSERT_EQ_INT(disp_schema_argument_list_size(s, 3), -1);
  ASSERT_EQ_STR(disp_schema_return_name(s, 1), NULL);
  disp_schema_free(s);
  return 0;
}

TEST(accessors_out_variant) {
  disp_schema *s = NULL;
  ASSERT_OK(disp_schema_parse("aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, "
                              "Tensor(a!) out) -> Tensor(a!)",
                              &s));
  ASSERT_EQ_STR(disp_schema_qualified_name(s), "aten::add.out");
  ASSERT_EQ_STR(disp_schema_argument_name(s, 3), "out");
  ASSERT_TRUE(disp_schema_argument_kwarg_only(s, 3));
  ASSERT_TRUE(disp_schema_argument_is_write(s, 3));
  ASSERT_EQ_STR(disp_schema_argument_alias_set(s, 3), "a");
  ASSERT_EQ_STR(disp_schema_argument_type_str(s, 3), "Tensor(a!)");
  ASSERT_TRUE(disp_schema_return_is_write(s, 0));
  ASSERT_EQ_STR(disp_schema_return_alias_set(s, 0), "a");
  disp_schema_free(s);

  /* A list of written tensors: the annotation is on the elements. */
  ASSERT_OK(disp_schema_parse(
      "aten::_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()",
      &s));
  ASSERT_TRUE(disp_schema_argument_is_write(s, 0));
  ASSERT_EQ_STR(disp_schema_argument_alias_set(s, 0), "a");
  ASSERT_EQ_STR(disp_schema_argument_type_str(s, 0), "Tensor(a!)[]");
  ASSERT_FALSE(disp_schema_argument_is_write(s, 1));
  ASSERT_EQ_INT(disp_schema_num_returns(s), 0);
  disp_schema_free(s);
  return 0;
}

TEST(accessors_custom_class_and_optional) {
  disp_schema *s = NULL;
  ASSERT_OK(disp_schema_parse(
      "_quantized::linear_prepack(Tensor W, Tensor? B=None) -> "
      "__torch__.torch.classes.quantized.LinearPackedParamsBase W_prepack",
      &s));
  ASSERT_EQ_STR(disp_schema_namespace(s), "_quantized");
  ASSERT_EQ_STR(disp_schema_overload(s), "");
  ASSERT_EQ_STR(disp_schema_qualified_name(s), "_quantized::linear_prepack");
  const disp_type *b = disp_schema_argument_type(s, 1);
  ASSERT_EQ_INT(disp_schema_type_kind(b), DISP_TYPE_OPTIONAL);
  ASSERT_EQ_INT(disp_schema_type_num_elements(b), 1);
  ASSERT_EQ_INT(disp_schema_type_kind(disp_schema_type_element(b, 0)), DISP_TYPE_TENSOR);
  ASSERT_TRUE(disp_schema_type_element(b, 1) == NULL);
  ASSERT_EQ_STR(disp_schema_argument_default_str(s, 1), "None");
  const disp_type *r = disp_schema_return_type(s, 0);
  ASSERT_EQ_INT(disp_schema_type_kind(r), DISP_TYPE_CLASS);
  ASSERT_EQ_STR(disp_schema_type_name(r),
                "__torch__.torch.classes.quantized.LinearPackedParamsBase");
  ASSERT_EQ_STR(disp_schema_return_name(s, 0), "W_prepack");
  disp_schema_free(s);
  return 0;
}

TEST(accessors_fixed_size_lists) {
  disp_schema *s = NULL;
  ASSERT_OK(disp_schema_parse("aten::max_pool2d(Tensor self, int[2] kernel_size, "
                              "int[2] stride=[], int[2] padding=0, int[2] dilation=1, "
                              "bool ceil_mode=False, int[1]? dim=None, SymInt[] size=[1, 1]) "
                              "-> Tensor",
                              &s));
  const disp_type *k = disp_schema_argument_type(s, 1);
  ASSERT_EQ_INT(disp_schema_type_kind(k), DISP_TYPE_LIST);
  ASSERT_EQ_INT(disp_schema_type_kind(disp_schema_type_element(k, 0)), DISP_TYPE_INT);
  ASSERT_EQ_INT(disp_schema_argument_list_size(s, 1), 2);
  ASSERT_EQ_STR(disp_schema_argument_type_str(s, 1), "int[2]");
  ASSERT_EQ_STR(disp_schema_argument_default_str(s, 2), "[]");
  /* `padding=0` is the list [0, 0], printed as one number again. */
  ASSERT_EQ_STR(disp_schema_argument_default_str(s, 3), "0");
  const disp_schema *cs = s;
  ASSERT_EQ_INT(cs->args[3].default_value->num_items, 2);
  ASSERT_EQ_STR(disp_schema_argument_default_str(s, 5), "False");
  const disp_type *d = disp_schema_argument_type(s, 6);
  ASSERT_EQ_INT(disp_schema_type_kind(d), DISP_TYPE_OPTIONAL);
  ASSERT_EQ_INT(disp_schema_type_kind(disp_schema_type_element(d, 0)), DISP_TYPE_LIST);
  ASSERT_EQ_INT(disp_schema_argument_list_size(s, 6), 1);
  ASSERT_EQ_STR(disp_schema_argument_type_str(s, 6), "int[1]?");
  /* Only `int` lists collapse; SymInt lists print in full. */
  ASSERT_EQ_INT(disp_schema_type_kind(disp_schema_type_element(disp_schema_argument_type(s, 7), 0)),
                DISP_TYPE_SYMINT);
  ASSERT_EQ_STR(disp_schema_argument_default_str(s, 7), "[1, 1]");
  disp_schema_free(s);
  return 0;
}

TEST(accessors_varargs) {
  disp_schema *s = NULL;
  ASSERT_OK(disp_schema_parse("static_runtime::VarTupleUnpack(...) -> ...", &s));
  ASSERT_TRUE(disp_schema_is_vararg(s));
  ASSERT_TRUE(disp_schema_is_varret(s));
  ASSERT_EQ_INT(disp_schema_num_arguments(s), 0);
  ASSERT_EQ_INT(disp_schema_num_returns(s), 0);
  disp_schema_free(s);
  char *t = reprint("ns::f(Tensor a, ...) -> (Tensor, ...)");
  ASSERT_EQ_STR(t, "ns::f(Tensor a, ...) -> (Tensor, ...)");
  free(t);
  t = reprint("ns::f(...) -> (...)");
  ASSERT_EQ_STR(t, "ns::f(...) -> ...");
  free(t);
  return 0;
}

TEST(container_types) {
  disp_schema *s = NULL;
  ASSERT_OK(disp_schema_parse("aten::items.str(Dict(str, t) self) -> ((str, t)[])", &s));
  const disp_type *d = disp_schema_argument_type(s, 0);
  ASSERT_EQ_INT(disp_schema_type_kind(d), DISP_TYPE_DICT);
  ASSERT_EQ_INT(disp_schema_type_num_elements(d), 2);
  ASSERT_EQ_INT(disp_schema_type_kind(disp_schema_type_element(d, 0)), DISP_TYPE_STR);
  ASSERT_EQ_INT(disp_schema_type_kind(disp_schema_type_element(d, 1)), DISP_TYPE_VAR);
  ASSERT_EQ_STR(disp_schema_type_name(disp_schema_type_element(d, 1)), "t");
  const disp_type *r = disp_schema_return_type(s, 0);
  ASSERT_EQ_INT(disp_schema_type_kind(r), DISP_TYPE_LIST);
  ASSERT_EQ_INT(disp_schema_type_kind(disp_schema_type_element(r, 0)), DISP_TYPE_TUPLE);
  char *str = disp_schema_type_str(r);
  ASSERT_EQ_STR(str, "(str, t)[]");
  free(str);
  str = disp_schema_to_string(s);
  /* A single return that starts with '(' keeps its parentheses. */
  ASSERT_EQ_STR(str, "aten::items.str(Dict(str, t) self) -> ((str, t)[])");
  free(str);
  disp_schema_free(s);

  static const char *const same[][2] = {
      {"ns::f(Future(t) x) -> (Tensor)", "ns::f(Future(t) x) -> Tensor"},
      {"ns::f() -> ()", "ns::f() -> ()"},
      {"ns::f() -> ((int, float))", "ns::f() -> ((int, float))"},
      {"ns::f() -> (int, float)", "ns::f() -> (int, float)"},
      /* Tuples hold PyTorch's "fake" types. */
      {"ns::f((SymInt, ScalarType) x) -> RRef(Layout)", "ns::f((int, int) x) -> RRef(int)"},
      {"ns::f(Dimname d, ConstQuantizerPtr q, None n) -> Any",
       "ns::f(str d, int q, NoneType n) -> Any"},
      {"ns::f(Tensor(a) x, Tensor(b!) y) -> Tensor(a|b)", "ns::f(Tensor(a) x, Tensor(b!) y) -> Tensor(a|b)"},
      {"ns::f(Tensor(a -> a) x) -> Tensor(* -> b)", "ns::f(Tensor(a) x) -> Tensor(* -> b)"},
      {"ns::f(Tensor! x, Tensor! y) -> Tensor", "ns::f(Tensor($0!) x, Tensor($1!) y) -> Tensor"},
      {"ns::f(Tensor(a)?[] x) -> Tensor", "ns::f(Tensor(a)?[] x) -> Tensor"},
      {"ns::f(Tensor(a)[][] x) -> Tensor", "ns::f(Tensor(a)[][] x) -> Tensor"},
      {"ns::f(Tensor[](b) x) -> Tensor", "ns::f(Tensor[](b) x) -> Tensor"},
      {"  ns :: f ( Tensor  x , # comment\n *, int y ) -> Tensor", "ns::f(Tensor x, *, int y) -> Tensor"},
  };
  for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
    char *out = reprint(same[i][0]);
    if (!out) TEST_FAIL_("%s: %s", same[i][0], disp_last_error());
    ASSERT_EQ_STR(out, same[i][1]);
    free(out);
  }
  return 0;
}

TEST(default_values_print_like_pytorch) {
  static const char *const cases[][2] = {
      {"float x=1.0", "float x=1."},
      {"float x=1", "float x=1."},
      {"float x=1e-5", "float x=1.0000000000000001e-05"},
      {"float x=0.01", "float x=0.01"},
      {"float x=.5", "float x=0.5"},
      {"float x=-0.0", "float x=-0."},
      {"float x=1e10", "float x=10000000000"},
      {"float x=-2.5e20", "float x=-2.5e+20"},
      /* 1.13 prints these without the '.', which reads back as an int. */
      {"Scalar x=1e10", "Scalar x=10000000000."},
      {"float? x=-2e10", "float? x=-20000000000."},
      {"float[] x=[1e10]", "float[] x=[10000000000]"},
      {"float? x=1", "float? x=1"},
      {"Scalar x=1", "Scalar x=1"},
      {"Scalar x=1.5", "Scalar x=1.5"},
      {"Scalar x=-3", "Scalar x=-3"},
      {"int x=-9223372036854775808", "int x=-9223372036854775808"},
      {"str x='mean'", "str x=\"mean\""},
      {"str? x=\"a'b\\\"c\\n\\001\"", "str? x=\"a\\'b\\\"c\\n\\001\""},
      {"ScalarType? dtype=long", "ScalarType? dtype=4"},
      {"ScalarType dtype=float", "ScalarType dtype=6"},
      {"Layout layout=strided", "Layout layout=0"},
      {"MemoryFormat m=contiguous_format", "MemoryFormat m=0"},
      {"int reduction=Mean", "int reduction=1"},
      {"bool[3] m=True", "bool[3] m=[True, True, True]"},
      {"bool b=False", "bool b=False"},
      {"int[2] x=[1, 1]", "int[2] x=1"},
      {"int[2] x=[1, 2]", "int[2] x=[1, 2]"},
      /* 1.13 prints these as one number, which reads back as another list
       * (`int[3] x=7` is [7, 7, 7]) or not at all (`int[] x=3`): in full. */
      {"int[] x=[3, 3]", "int[] x=[3, 3]"},
      {"int[3] x=[7, 7]", "int[3] x=[7, 7]"},
      {"int[3] x=[7, 7, 7]", "int[3] x=7"},
      {"int[2] x=[]", "int[2] x=[]"},
      {"int[1] x=3", "int[1] x=[3]"},
      {"int[0] x=3", "int[0] x=[]"},
      {"float[] x=[1, 2.5]", "float[] x=[1., 2.5]"},
      {"Device d='cpu'", "Device d=\"cpu\""},
      {"Device? d=None", "Device? d=None"},
      {"Generator? g=None", "Generator? g=None"},
      {"int x=\"s\"", "int x=\"s\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char in[256], want[256];
    snprintf(in, sizeof in, "ns::f(%s) -> Tensor", cases[i][0]);
    snprintf(want, sizeof want, "ns::f(%s) -> Tensor", cases[i][1]);
    char *out = reprint(in);
    if (!out) TEST_FAIL_("%s: %s", in, disp_last_error());
    ASSERT_EQ_STR(out, want);
    free(out);
    /* What was printed reads back to the same text. */
    out = reprint(want);
    if (!out) TEST_FAIL_("%s: %s", want, disp_last_error());
    ASSERT_EQ_STR(out, want);
    free(out);
  }
  return 0;
}

/* ---- names and namespaces ------------------------------------------------- */

TEST(parse_name_forms) {
  char *q = NULL;
  ASSERT_OK(disp_schema_parse_name("aten::add.Tensor", NULL, &q));
  ASSERT_EQ_STR(q, "aten::add.Tensor");
  free(q);
  ASSERT_OK(disp_schema_parse_name("aten::add", "aten", &q));
  ASSERT_EQ_STR(q, "aten::add");
  free(q);
  ASSERT_OK(disp_schema_parse_name("add.out", "myns", &q));
  ASSERT_EQ_STR(q, "myns::add.out");
  free(q);
  ASSERT_OK(disp_schema_parse_name("relu", "myns", &q));
  ASSERT_EQ_STR(q, "myns::relu");
  free(q);
  ASSERT_OK(disp_schema_parse_name("relu", NULL, &q));
  ASSERT_EQ_STR(q, "relu");
  free(q);
  /* A full schema gives its name (parseSchemaOrName). */
  ASSERT_OK(disp_schema_parse_name("mul.Scalar(Tensor self, Scalar other) -> Tensor", "aten", &q));
  ASSERT_EQ_STR(q, "aten::mul.Scalar");
  free(q);

  ASSERT_STATUS(disp_schema_parse_name("other::add", "aten", &q), DISP_ERR_SCHEMA);
  ASSERT_TRUE(q == NULL);
  ASSERT_STARTS_WITH(disp_last_error(),
                     "Explicitly provided namespace (other) in operator name does not match "
                     "namespace of enclosing TORCH_LIBRARY_IMPL block (aten)");
  ASSERT_STATUS(disp_schema_parse_name("aten::add.Tensor x", NULL, &q), DISP_ERR_SCHEMA);
  ASSERT_EQ_STR(first_error_line(), "1:18: error: expected '(' or end of input, found 'x'");
  ASSERT_STATUS(disp_schema_parse_name("aten::", NULL, &q), DISP_ERR_SCHEMA);
  ASSERT_EQ_STR(first_error_line(), "1:7: error: expected an identifier, found end of input");
  ASSERT_STATUS(disp_schema_parse_name("add", "not a namespace", &q), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_schema_parse_name(NULL, NULL, &q), DISP_ERR_INVALID_ARG);
  return 0;
}

TEST(parse_ns_prepends_or_rejects_namespace) {
  disp_schema *s = NULL;
  ASSERT_OK(disp_schema_parse_ns("myop(Tensor self) -> Tensor", "myns", &s));
  ASSERT_EQ_STR(disp_schema_name(s), "myns::myop");
  ASSERT_EQ_STR(disp_schema_qualified_name(s), "myns::myop");
  char *t = disp_schema_to_string(s);
  ASSERT_EQ_STR(t, "myns::myop(Tensor self) -> Tensor");
  free(t);
  disp_schema_free(s);

  ASSERT_OK(disp_schema_parse_ns("myns::myop.x(Tensor self) -> Tensor", "myns", &s));
  ASSERT_EQ_STR(disp_schema_qualified_name(s), "myns::myop.x");
  disp_schema_free(s);

  /* Without a default the name stays bare. */
  ASSERT_OK(disp_schema_parse("myop(Tensor self) -> Tensor", &s));
  ASSERT_EQ_STR(disp_schema_name(s), "myop");
  ASSERT_EQ_STR(disp_schema_namespace(s), "");
  disp_schema_free(s);

  s = (disp_schema *)&s; /* must be reset on failure */
  ASSERT_STATUS(disp_schema_parse_ns("aten::myop(Tensor self) -> Tensor", "myns", &s),
                DISP_ERR_SCHEMA);
  ASSERT_TRUE(s == NULL);
  ASSERT_EQ_STR(disp_last_error(),
                "Explicitly provided namespace (aten) in schema string does not match namespace "
                "of enclosing TORCH_LIBRARY block (myns).  Move this definition to the (unique) "
                "TORCH_LIBRARY block corresponding to this namespace (and consider deleting the "
                "namespace from your schema string.)");
  ASSERT_STATUS(disp_schema_parse("aten::myop", &s), DISP_ERR_SCHEMA);
  ASSERT_EQ_STR(first_error_line(), "1:11: error: expected '(', found end of input");
  ASSERT_STATUS(disp_schema_parse(NULL, &s), DISP_ERR_INVALID_ARG);
  ASSERT_STATUS(disp_schema_parse("a::b() -> ()", NULL), DISP_ERR_INVALID_ARG);
  return 0;
}

/* parse -> print -> parse keeps every default, list lengths included. */
TEST(print_then_parse_keeps_defaults) {
  static const struct {
    const char *text;
    long long items; /* of argument 0's default list; -1: not a list */
  } cases[] = {
      {"f(Scalar x=1e10) -> ()", -1},
      {"f(int? x=01333333333333333333301e-05) -> ()", -1},
      {"f(int x=2e10) -> ()", -1},
      {"f(int[] x=[1, 1]) -> ()", 2},
      {"g(int[3] x=[7,7]) -> ()", 2},
      {"g(int[3] x=7) -> ()", 3},
      {"g(int[2] x=[]) -> ()", 0},
      {"g(int[1] x=[-2, -1]) -> ()", 2},
      {"g(bool[2] x=True) -> ()", 2},
      {"g(float[] x=[1, 1]) -> ()", 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    disp_schema *s = NULL, *back = NULL;
    ASSERT_OK(disp_schema_parse(cases[i].text, &s));
    if (cases[i].items >= 0)
      ASSERT_EQ_INT((long long)s->args[0].default_value->num_items, cases[i].items);
    char *out = disp_schema_to_string(s);
    ASSERT_TRUE(out != NULL);
    if (disp_schema_parse(out, &back) != DISP_OK) TEST_FAIL_("%s does not parse: %s", out, disp_last_error());
    disp_strbuf why;
    disp__strbuf_init(&why);
    int equal = disp__schema_equal(s, back, &why);
    if (!equal) TEST_FAIL_("%s -> %s: %s", cases[i].text, out, disp__strbuf_cstr(&why));
    disp__strbuf_free(&why);
    free(out);
    disp_schema_free(back);
    disp_schema_free(s);
  }
  return 0;
}

/* disp__schema_equal tells defaults apart, which compatibility ignores. */
TEST(schema_equality_compares_defaults) {
  static const char *const differ[][2] = {
      {"f(int[] x=[1, 1]) -> ()", "f(int[] x=[1]) -> ()"},
      {"f(float x=0.) -> ()", "f(float x=-0.) -> ()"},
      {"f(str x=\"a\") -> ()", "f(str x=\"b\") -> ()"},
      {"f(int x=1) -> ()", "f(int x) -> ()"},
      {"f(int[2] x) -> ()", "f(int[3] x) -> ()"},
      {"f(SymInt x) -> ()", "f(int x) -> ()"},
      {"f(Tensor(a) x) -> ()", "f(Tensor(b) x) -> ()"},
      {"f(int x, *, int y) -> ()", "f(int x, int y) -> ()"},
  };
  for (size_t i = 0; i < sizeof differ / sizeof differ[0]; i++) {
    disp_schema *a = NULL, *b = NULL;
    ASSERT_OK(disp_schema_parse(differ[i][0], &a));
    ASSERT_OK(disp_schema_parse(differ[i][1], &b));
    ASSERT_TRUE(disp__schema_equal(a, a, NULL));
    if (disp__schema_equal(a, b, NULL)) TEST_FAIL_("%s == %s", differ[i][0], differ[i][1]);
    disp_schema_free(a);
    disp_schema_free(b);
  }
  return 0;
}

/* ---- errors --------------------------------------------------------------- */

TEST(malformed_schemas_report_line_and_column) {
  static const char *const cases[][2] = {
      {"", "1:1: error: expected an identifier, found end of input"},
      {"   ", "1:4: error: expected an identifier, found end of input"},
      {"aten::add(Tensor self -> Tensor", "1:23: error: expected ')', found '->'"},
      {"aten::add(Tensor self) Tensor", "1:24: error: expected '->', found 'Tensor'"},
      {"aten::add(Tensor self)", "1:23: error: expected '->', found end of input"},
      {"aten::add(Tensor self) ->", "1:26: error: expected a type, found end of input"},
      {"aten::add(Tensr self) -> Tensor", "1:11: error: expected a type, found 'Tensr'"},
      {"aten::add(Tensor self, , int x) -> Tensor", "1:24: error: expected a type, found ','"},
      {"aten:add(Tensor self) -> Tensor", "1:6: error: expected ':', found 'add'"},
      {"aten::add(Tensor) -> Tensor", "1:17: error: expected an identifier, found ')'"},
      {"aten::f(str s=\"abc) -> Tensor",
       "1:30: error: expected '\"' to end the string started at 1:15, found end of input"},
      {"aten::f(str s='abc\n) -> Tensor",
       "1:19: error: expected ''' to end the string started at 1:15, found end of line"},
      {"aten::f(Tensor(a self) -> Tensor", "1:18: error: expected ')', found 'self'"},
      {"aten::f(Tensor(a! -> ) self) -> Tensor",
       "1:22: error: expected an alias set name, found ')'"},
      {"aten::f(Tensor(*|a) x) -> Tensor", "1:18: error: expected ')', found 'a'"},
      {"aten::f(Tensor self) -> Tensor out garbage",
       "1:36: error: expected end of input, found 'garbage'"},
      {"aten::f(Tensor self) -> Tensor @", "1:32: error: expected end of input, found '@'"},
      {"aten::f(Tensor x=1) -> Tensor", "1:18: error: expected 'None', found '1'"},
      {"aten::f(int x=abc) -> Tensor", "1:15: error: expected a default value, found 'abc'"},
      {"aten::f(int x=) -> Tensor", "1:15: error: expected a default value, found ')'"},
      {"aten::f(int x=-) -> Tensor", "1:16: error: expected a number, found ')'"},
      {"aten::f(int[2] x=[1, 2.5]) -> Tensor", "1:22: error: expected an integer, found '2.5'"},
      {"aten::f(bool[2] x=[1]) -> Tensor", "1:20: error: expected True or False, found '1'"},
      {"aten::f(int x=99999999999999999999) -> Tensor",
       "1:15: error: expected a 64-bit integer, found '99999999999999999999'"},
      {"aten::f(float x=1e999) -> Tensor",
       "1:17: error: expected a finite float within range, found '1e999'"},
      {"aten::f(int[2.5] x) -> Tensor", "1:13: error: expected an integer, found '2.5'"},
      {"aten::f(int[99999999999] x) -> Tensor", "1:13: error: list size out of range"},
      /* 1.13's parseConstantList: an unsized list default must be a list. */
      {"aten::f(int[] x=None) -> Tensor", "1:17: error: expected '[', found 'None'"},
      {"aten::f(int[] x=1) -> Tensor", "1:17: error: expected '[', found '1'"},
      {"aten::f(float[] x=1.5) -> Tensor", "1:19: error: expected '[', found '1.5'"},
      {"aten::f(Tensor[] x=[]) -> Tensor",
       "1:20: error: list default values are only supported for int, float and bool lists"},
      {"aten::f(t x=1) -> Tensor", "1:13: error: default values are not supported for type 't'"},
      {"aten::f(complex x=1) -> Tensor", "1:19: error: complex default values are not supported"},
      {"aten::f(str s=\"\\q\") -> Tensor", "1:15: error: invalid escape sequence in string literal"},
      {"aten::f(Device d=cpu) -> Tensor", "1:18: error: expected a string literal, found 'cpu'"},
      {"aten::f(..., Tensor x) -> Tensor",
       "1:14: error: ... must be the last element of the argument list"},
      {"aten::f(Tensor x, int y=1, ...) -> Tensor",
       "1:25: error: schemas with vararg (...) can't have default value args"},
      {"aten::f(Tensor x) -> (Tensor, ..., Tensor)",
       "1:36: error: ... must be the last element of the return list"},
      {"aten::f.default(Tensor x) -> Tensor",
       "1:9: error: default is not a legal overload name for aten operators"},
      {"aten::f.__x(Tensor x) -> Tensor",
       "1:9: error: __x is not a legal overload name for aten operators"},
      {"aten::f(__torch__.foo.classes.a.B x) -> Tensor", "1:19: error: expected 'torch', found 'foo'"},
      {"aten::f(Dict(str) x) -> Tensor", "1:17: error: expected ',', found ')'"},
      {"aten::f(Tensor x)\n -> Tensor\n\t@", "3:2: error: expected end of input, found '@'"},
      {"aten::f(Tensor x) -> Tensor \x01", "1:29: error: expected end of input, found '\\x01'"},
      {"aten::f(Tensor x) -> Tensor out xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
       "1:33: error: expected end of input, found 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    disp_schema *s = NULL;
    disp_status st = disp_schema_parse(cases[i][0], &s);
    if (st != DISP_ERR_SCHEMA) TEST_FAIL_("%s: status %s", cases[i][0], disp_status_name(st));
    ASSERT_TRUE(s == NULL);
    ASSERT_EQ_STR(first_error_line(), cases[i][1]);
  }
  return 0;
}

TEST(error_message_quotes_the_line_with_a_caret) {
  disp_schema *s = NULL;
  ASSERT_STATUS(disp_schema_parse("aten::f(Tensor x,\n\tTenso y) -> Tensor", &s), DISP_ERR_SCHEMA);
  ASSERT_EQ_STR(disp_last_error(),
                "2:2: error: expected a type, found 'Tenso'\n"
                "\tTenso y) -> Tensor\n"
                "\t^");
  ASSERT_STATUS(disp_schema_parse("aten::add(Tensor self -> Tensor", &s), DISP_ERR_SCHEMA);
  ASSERT_EQ_STR(disp_last_error(),
                "1:23: error: expected ')', found '->'\n"
                "aten::add(Tensor self -> Tensor\n"
                "                      ^");
  return 0;
}

TEST(deep_nesting_is_rejected_not_recursed) {
  /* 10000 levels would overflow the stack if the parser just recursed. */
  size_t depth = 10000;
  char *text = malloc(depth * 2 + 64);
  ASSERT_TRUE(text != NULL);
  strcpy(text, "ns::f(");
  size_t n = strlen(text);
  for (size_t i = 0; i < depth; i++) text[n++] = '(';
  strcpy(text + n, "int x) -> Tensor");
  disp_schema *s = NULL;
  disp_status st = disp_schema_parse(text, &s);
  ASSERT_EQ_INT(st, DISP_ERR_SCHEMA);
  ASSERT_EQ_STR(first_error_line(), "1:71: error: types nested deeper than 64 levels");

  strcpy(text, "ns::f(Tensor");
  n = strlen(text);
  for (size_t i = 0; i < depth; i++) {
    text[n++] = i % 2 ? ']' : '[';
  }
  strcpy(text + n, " x) -> Tensor");
  st = disp_schema_parse(text, &s);
  ASSERT_EQ_INT(st, DISP_ERR_SCHEMA);
  ASSERT_EQ_STR(first_error_line(), "1:139: error: types nested deeper than 64 levels");
  free(text);

  /* The limit itself is fine. */
  char ok[256] = "ns::f(int";
  for (int i = 0; i < DISP_SCHEMA_MAX_DEPTH - 1; i++) strcat(ok, "?");
  strcat(ok, " x) -> Tensor");
  char *out = reprint(ok);
  ASSERT_EQ_STR(out, ok);
  free(out);
  return 0;
}

/* ---- comparison ----------------------------------------------------------- */

/* The reason two schemas differ ("" when compatible), in a static buffer. */
static const char *difference(const char *a, const char *b) {
  static char buf[512];
  disp_schema *x = NULL, *y = NULL;
  if (disp_schema_parse(a, &x) != DISP_OK || disp_schema_parse(b, &y) != DISP_OK) {
    snprintf(buf, sizeof buf, "parse error: %s", disp_last_error());
  } else {
    char *reason = NULL;
    disp_status st = disp__schema_check_compatible(x, y, &reason);
    if (st == DISP_OK) {
      snprintf(buf, sizeof buf, "%s", reason ? "(reason set on success)" : "");
    } else if (st == DISP_ERR_MISMATCH) {
      snprintf(buf, sizeof buf, "%s", reason ? reason : "(no reason)");
    } else {
      snprintf(buf, sizeof buf, "status %s", disp_status_name(st));
    }
    free(reason);
  }
  disp_schema_free(x);
  disp_schema_free(y);
  return buf;
}

TEST(compatibility_messages_match_pytorch) {
  ASSERT_EQ_STR(difference("_test::m(Tensor arg) -> int", "_test::m(Tensor arg) -> int"), "");
  ASSERT_EQ_STR(difference("_test::m(Tensor arg) -> ()", "_test::m(Tensor arg) -> int"),
                "The number of returns is different. 0 vs 1");
  ASSERT_EQ_STR(difference("_test::m(Tensor arg) -> (int, int)", "_test::m(Tensor arg) -> int"),
                "The number of returns is different. 2 vs 1");
  ASSERT_EQ_STR(difference("_test::m(Tensor a, int b) -> int", "_test::m(Tensor a) -> int"),
                "The number of arguments is different. 2 vs 1.");
  ASSERT_EQ_STR(difference("_test::m(int a, int b) -> int", "_test::m(Tensor a, int b) -> int"),
                "Type mismatch in argument 1: int vs Tensor");
  ASSERT_EQ_STR(difference("_test::m(Tensor a, float b) -> int", "_test::m(Tensor a, int b) -> int"),
                "Type mismatch in argument 2: float vs int");
  ASSERT_EQ_STR(difference("_test::m(Tensor a) -> Tensor", "_test::m(Tensor a) -> int"),
                "Type mismatch in return 1: Tensor vs int");
  /* Argument counts are checked before return counts. */
  ASSERT_EQ_STR(difference("_test::m(Tensor a) -> ()", "_test::m() -> int"),
                "The number of arguments is different. 1 vs 0.");
  /* Names, defaults, alias annotations, sizes and overloads do not matter. */
  ASSERT_EQ_STR(difference("a::m.x(Tensor(a!) self, int[2] k=1, *, Scalar s=2) -> Tensor(a!) out",
                           "a::m(Tensor other, int[] j, Scalar t) -> Tensor"),
                "");
  /* SymInt, ScalarType, Layout, MemoryFormat compare (and print) as int. */
  ASSERT_EQ_STR(difference("a::m(SymInt[] s, ScalarType? d, Layout l) -> Tensor",
                           "a::m(int[] s, int? d, int l) -> Tensor"),
                "");
  ASSERT_EQ_STR(difference("a::m(ScalarType? d) -> Tensor", "a::m(Tensor? d) -> Tensor"),
                "Type mismatch in argument 1: int? vs Tensor?");
  ASSERT_EQ_STR(difference("a::m(__torch__.torch.classes.q.A x) -> Tensor",
                           "a::m(__torch__.torch.classes.q.B x) -> Tensor"),
                "Type mismatch in argument 1: __torch__.torch.classes.q.A vs "
                "__torch__.torch.classes.q.B");
  ASSERT_EQ_STR(difference("a::m(Dict(str, t) x) -> (str, t)", "a::m(Dict(str, t) x) -> (str, t)"), "");
  ASSERT_EQ_STR(difference("a::m((int, str) x) -> Tensor", "a::m((int, int) x) -> Tensor"),
                "Type mismatch in argument 1: (int, str) vs (int, int)");
  char *reason = (char *)"x";
  ASSERT_STATUS(disp__schema_check_compatible(NULL, NULL, &reason), DISP_ERR_INVALID_ARG);
  ASSERT_TRUE(reason == NULL);
  return 0;
}

TEST(copy_is_independent) {
  disp_schema *s = NULL;
  ASSERT_OK(disp_schema_parse_ns("f.out(Tensor self, *, Tensor(a!) out, str s='x') -> Tensor(a!)",
                                 "ns", &s));
  disp_schema *c = disp_schema_copy(s);
  ASSERT_TRUE(c != NULL);
  disp_schema_free(s);
  char *t = disp_schema_to_string(c);
  ASSERT_EQ_STR(t, "ns::f.out(Tensor self, *, Tensor(a!) out, str s=\"x\") -> Tensor(a!)");
  free(t);
  ASSERT_EQ_STR(disp_schema_qualified_name(c), "ns::f.out");
  disp_schema_free(c);
  ASSERT_TRUE(disp_schema_copy(NULL) == NULL);
  disp_schema_free(NULL);
  ASSERT_TRUE(disp_schema_to_string(NULL) == NULL);
  return 0;
}

TEST_LIST = {
    TEST_ENTRY(round_trip_pytorch_schemas),
    TEST_ENTRY(print_then_parse_keeps_defaults),
    TEST_ENTRY(schema_equality_compares_defaults),
    TEST_ENTRY(accessors_add_tensor),
    TEST_ENTRY(accessors_out_variant),
    TEST_ENTRY(accessors_custom_class_and_optional),
    TEST_ENTRY(accessors_fixed_size_lists),
    TEST_ENTRY(accessors_varargs),
    TEST_ENTRY(container_types),
    TEST_ENTRY(default_values_print_like_pytorch),
    TEST_ENTRY(parse_name_forms),
    TEST_ENTRY(parse_ns_prepends_or_rejects_namespace),
    TEST_ENTRY(malformed_schemas_report_line_and_column),
    TEST_ENTRY(error_message_quotes_the_line_with_a_caret),
    TEST_ENTRY(deep_nesting_is_rejected_not_recursed),
    TEST_ENTRY(compatibility_messages_match_pytorch),
    TEST_ENTRY(copy_is_independent),
    TEST_END};

TEST_MAIN()
