/*
 * disp/schema.h - operator schemas: parse, inspect and print PyTorch's
 * FunctionSchema text, e.g.
 *
 *   aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
 *
 * The grammar and the canonical printed form are those of PyTorch 1.13
 * (torch/csrc/jit/frontend/function_schema_parser.cpp and the FunctionSchema
 * printer): parsing a schema PyTorch printed and printing the result gives the
 * same bytes back.
 *
 * A disp_schema is immutable once parsed, so any number of threads may read
 * one concurrently. Strings returned by accessors are borrowed from the schema
 * and live as long as it does. NULL arguments follow status.h's Note [NULL
 * arguments]: a NULL schema or type gives NULL with the message from the
 * accessors returning pointers, and 0 (or -1, as documented) from the others.
 */
#ifndef DISP_SCHEMA_H
#define DISP_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An operator schema: name, overload, arguments and returns. Opaque. */
typedef struct disp_schema disp_schema;

/* One type inside a schema (e.g. the `int[]?` of an argument). Opaque,
 * always borrowed from the schema that contains it. */
typedef struct disp_type disp_type;

/*
 * disp_type_kind - what a type is. The "real" type as written in the schema:
 * `ScalarType`, `Layout`, `MemoryFormat` and `SymInt` keep their own kinds
 * (PyTorch treats them as `int` when comparing schemas). `Dimname` parses as
 * DISP_TYPE_STR and `ConstQuantizerPtr` as DISP_TYPE_INT, as in PyTorch.
 */
typedef enum disp_type_kind {
  DISP_TYPE_TENSOR = 0,
  DISP_TYPE_INT,
  DISP_TYPE_SYMINT,
  DISP_TYPE_FLOAT,
  DISP_TYPE_COMPLEX,
  DISP_TYPE_BOOL,
  DISP_TYPE_STR,
  DISP_TYPE_SCALAR,        /* `Scalar` (PyTorch's NumberType) */
  DISP_TYPE_SCALAR_TYPE,
  DISP_TYPE_LAYOUT,
  DISP_TYPE_MEMORY_FORMAT,
  DISP_TYPE_DEVICE,
  DISP_TYPE_GENERATOR,
  DISP_TYPE_STORAGE,
  DISP_TYPE_STREAM,
  DISP_TYPE_QSCHEME,
  DISP_TYPE_QUANTIZER,
  DISP_TYPE_CAPSULE,
  DISP_TYPE_NONE,          /* `None` / `NoneType` */
  DISP_TYPE_ANY,
  DISP_TYPE_ANY_CLASS,     /* `AnyClassType` */
  DISP_TYPE_ANY_ENUM,      /* `AnyEnumType` */
  DISP_TYPE_LIST,          /* `T[]`: one element type */
  DISP_TYPE_OPTIONAL,      /* `T?`: one element type */
  DISP_TYPE_TUPLE,         /* `(A, B)`: any number of element types */
  DISP_TYPE_DICT,          /* `Dict(K, V)`: key, value */
  DISP_TYPE_FUTURE,        /* `Future(T)`: one element type */
  DISP_TYPE_RREF,          /* `RRef(T)`: one element type */
  DISP_TYPE_CLASS,         /* `__torch__.torch.classes.ns.Name` */
  DISP_TYPE_VAR            /* a type variable: a lower-case unknown name (`t`) */
} disp_type_kind;

/* ---- parsing ------------------------------------------------------------ */

/*
 * disp_schema_parse - parse a full schema `[ns::]name[.overload](args) -> rets`.
 * On success *out is a new schema the caller frees with disp_schema_free.
 * Errors: DISP_ERR_SCHEMA with a message whose first line is
 * `LINE:COL: error: expected X, found Y` (or another `LINE:COL: error:` text
 * for semantic errors), followed by the source line and a caret line;
 * DISP_ERR_INVALID_ARG when text or out is NULL ("disp_schema_parse: text
 * is NULL"); DISP_ERR_NO_MEMORY. *out is NULL on failure. Thread-safe.
 */
DISP_API disp_status disp_schema_parse(const char *text, disp_schema **out);

/*
 * disp_schema_parse_ns - as disp_schema_parse, for a schema declared in a
 * library block of namespace `default_ns` (PyTorch's TORCH_LIBRARY): a name
 * without a namespace gets `default_ns::` prepended; a name with a different
 * explicit namespace fails with DISP_ERR_SCHEMA ("Explicitly provided
 * namespace (X) in schema string does not match namespace of enclosing
 * TORCH_LIBRARY block (Y). ..."). default_ns NULL behaves as
 * disp_schema_parse. New object in *out; thread-safe.
 */
DISP_API disp_status disp_schema_parse_ns(const char *text, const char *default_ns,
                                          disp_schema **out);

/*
 * disp_schema_parse_name - parse an operator name `ns::name.overload`,
 * `name.overload` or `name` (a full schema is accepted too, and its name is
 * used: PyTorch's parseSchemaOrName). *qualified_name_out receives a new
 * malloc'd string, the registry key: `ns::name.overload`, or `ns::name` when
 * there is no overload. default_ns (may be NULL) is prepended when the text
 * has no namespace; a different explicit namespace fails with DISP_ERR_SCHEMA
 * ("Explicitly provided namespace (X) in operator name does not match
 * namespace of enclosing TORCH_LIBRARY_IMPL block (Y). ...").
 * Errors as disp_schema_parse; *qualified_name_out is NULL on failure.
 * Thread-safe.
 */
DISP_API disp_status disp_schema_parse_name(const char *text, const char *default_ns,
                                            char **qualified_name_out);

/*
 * disp_schema_free - release a schema and everything borrowed from it.
 * NULL is ignored. Not safe while another thread still reads the schema.
 */
DISP_API void disp_schema_free(disp_schema *s);

/*
 * disp_schema_copy - a new, independent copy of `s` (free with
 * disp_schema_free). Returns NULL on OOM or when s is NULL, with the
 * message. Thread-safe.
 */
DISP_API disp_schema *disp_schema_copy(const disp_schema *s);

/* ---- printing ----------------------------------------------------------- */

/*
 * disp_schema_to_string - the canonical text, byte for byte as PyTorch 1.13
 * prints the schema. New malloc'd string (caller frees); NULL on OOM or when
 * s is NULL (with the message). Thread-safe.
 */
DISP_API char *disp_schema_to_string(const disp_schema *s);

/* ---- names -------------------------------------------------------------- */

/*
 * disp_schema_name - the operator name with its namespace, e.g. "aten::add"
 * (just "add" when parsed without any namespace). Borrowed; never NULL for a
 * valid schema (NULL when s is NULL). Thread-safe.
 */
DISP_API const char *disp_schema_name(const disp_schema *s);

/*
 * disp_schema_base_name - the operator name without namespace, e.g. "add".
 * Borrowed; NULL when s is NULL. Thread-safe.
 */
DISP_API const char *disp_schema_base_name(const disp_schema *s);

/*
 * disp_schema_namespace - the namespace, e.g. "aten"; "" when the name has
 * none. Borrowed; NULL when s is NULL. Thread-safe.
 */
DISP_API const char *disp_schema_namespace(const disp_schema *s);

/*
 * disp_schema_overload - the overload name, e.g. "Tensor"; "" when there is
 * none. Borrowed; NULL when s is NULL. Thread-safe.
 */
DISP_API const char *disp_schema_overload(const disp_schema *s);

/*
 * disp_schema_qualified_name - the registry key: "aten::add.Tensor", or
 * "aten::add" when there is no overload. Borrowed; NULL when s is NULL.
 * Thread-safe.
 */
DISP_API const char *disp_schema_qualified_name(const disp_schema *s);

/* ---- shape -------------------------------------------------------------- */

/* disp_schema_num_arguments - number of arguments (the `*` and `...` markers
 * are not arguments). 0 when s is NULL. Thread-safe. */
DISP_API size_t disp_schema_num_arguments(const disp_schema *s);

/* disp_schema_num_returns - number of returns (`...` is not one). 0 when s is
 * NULL. Thread-safe. */
DISP_API size_t disp_schema_num_returns(const disp_schema *s);

/* disp_schema_is_vararg - 1 when the argument list ends with `...`, else 0.
 * Thread-safe. */
DISP_API int disp_schema_is_vararg(const disp_schema *s);

/* disp_schema_is_varret - 1 when the return list ends with `...`, else 0.
 * Thread-safe. */
DISP_API int disp_schema_is_varret(const disp_schema *s);

/* ---- arguments and returns ---------------------------------------------
 * Indices are 0-based. Out-of-range indices give NULL, 0 or -1 as
 * documented; the functions returning pointers then also set the message
 * ("disp_schema_argument_name: index 9 is out of range for 3 arguments"),
 * the others leave the last error alone. A NULL schema gives the same values
 * and messages (Note [NULL arguments]). All are thread-safe.
 */

/* disp_schema_argument_name - the argument's name. Borrowed; NULL when out of
 * range. */
DISP_API const char *disp_schema_argument_name(const disp_schema *s, size_t i);

/* disp_schema_argument_type - the argument's type (with `[N]` lists as plain
 * lists; see disp_schema_argument_list_size). Borrowed; NULL when out of
 * range. */
DISP_API const disp_type *disp_schema_argument_type(const disp_schema *s, size_t i);

/* disp_schema_argument_type_str - the type as printed in the schema,
 * including alias annotations and a fixed list size, e.g. "Tensor(a!)",
 * "int[2]", "Tensor(a)[]". Borrowed; NULL when out of range. */
DISP_API const char *disp_schema_argument_type_str(const disp_schema *s, size_t i);

/* disp_schema_argument_list_size - N of a fixed-size list `T[N]` (also
 * `T[N]?`); -1 when the argument has no fixed size or i is out of range. */
DISP_API int64_t disp_schema_argument_list_size(const disp_schema *s, size_t i);

/* disp_schema_argument_kwarg_only - 1 when the argument follows `*`, else 0. */
DISP_API int disp_schema_argument_kwarg_only(const disp_schema *s, size_t i);

/* disp_schema_argument_has_default - 1 when the argument has a default. */
DISP_API int disp_schema_argument_has_default(const disp_schema *s, size_t i);

/* disp_schema_argument_default_str - the default as printed in the schema
 * (e.g. "None", "1.", "[0, 1]", "\"mean\""); NULL when there is none.
 * Borrowed. */
DISP_API const char *disp_schema_argument_default_str(const disp_schema *s, size_t i);

/* disp_schema_argument_is_write - 1 when the argument's alias annotation
 * marks it as written (`Tensor(a!)`, `Tensor(a!)[]`), else 0. */
DISP_API int disp_schema_argument_is_write(const disp_schema *s, size_t i);

/* disp_schema_argument_alias_set - the first alias set of the argument's
 * annotation ("a" for `Tensor(a!)`, "*" for `(*)`), for a list the one of its
 * elements when the list itself has none; NULL when unannotated. Borrowed. */
DISP_API const char *disp_schema_argument_alias_set(const disp_schema *s, size_t i);

/* The same for returns. A return's name is "" when it has none. */
DISP_API const char *disp_schema_return_name(const disp_schema *s, size_t i);
DISP_API const disp_type *disp_schema_return_type(const disp_schema *s, size_t i);
DISP_API const char *disp_schema_return_type_str(const disp_schema *s, size_t i);
DISP_API int64_t disp_schema_return_list_size(const disp_schema *s, size_t i);
DISP_API int disp_schema_return_is_write(const disp_schema *s, size_t i);
DISP_API const char *disp_schema_return_alias_set(const disp_schema *s, size_t i);

/* ---- types -------------------------------------------------------------- */

/* disp_schema_type_kind - the kind of a type. t must not be NULL (a NULL
 * type reads as DISP_TYPE_NONE). */
DISP_API disp_type_kind disp_schema_type_kind(const disp_type *t);

/* disp_schema_type_num_elements - number of contained types: 1 for list,
 * optional, future and rref; 2 for dict (key, value); the arity of a tuple;
 * 0 otherwise. */
DISP_API size_t disp_schema_type_num_elements(const disp_type *t);

/* disp_schema_type_element - contained type i (see above). Borrowed from the
 * schema; NULL with a message when out of range. */
DISP_API const disp_type *disp_schema_type_element(const disp_type *t, size_t i);

/* disp_schema_type_name - the qualified name of a class type
 * ("__torch__.torch.classes.quantized.Conv2dPackedParamsBase") or the name
 * of a type variable ("t"); for other kinds the printed base name ("int",
 * "Tensor", ...; NULL for list, optional, tuple, dict, future, rref).
 * Borrowed (static or from the schema). */
DISP_API const char *disp_schema_type_name(const disp_type *t);

/* disp_schema_type_str - the type as PyTorch prints it (`int[]?`,
 * `Dict(str, Tensor)`, `(str, t)`), without alias annotations. New malloc'd
 * string; NULL on OOM. */
DISP_API char *disp_schema_type_str(const disp_type *t);

#ifdef __cplusplus
}
#endif

#endif /* DISP_SCHEMA_H */
