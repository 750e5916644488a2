/*
 * check_ops.h - the reference-vector harness (`disp check-ops`) and the
 * backend report (`disp ops --backend`).
 *
 * The harness reads the format of shared/conformance/ops/README.md: a file
 * is a sequence of case blocks (`case` ... `end`), each calling one operator
 * with every argument of its schema and recording what PyTorch 1.13 returned.
 * check_ops_parse.c turns the text into chk_case structs and builds the
 * argument objects; check_ops.c runs a case through disp_call_boxed and
 * compares.
 */
#ifndef DISP_TOOLS_CHECK_OPS_H
#define DISP_TOOLS_CHECK_OPS_H

#include <stddef.h>
#include <stdint.h>

#include <disp.h>

/* Entry points for tools/disp.c: argv holds what follows the subcommand. */
int disp_tool_check_ops(int argc, char **argv);
int disp_tool_ops_report(int argc, char **argv);

/* PyTorch's MemoryFormat enum order (c10/core/MemoryFormat.h), which is also
 * what the schema lexer gives `contiguous_format` as a default (0). */
/* The library's memory formats (disp/tensor.h), under the harness's names. */
enum {
  CHK_MF_CONTIGUOUS = DISP_MEMORY_FORMAT_CONTIGUOUS,
  CHK_MF_PRESERVE = DISP_MEMORY_FORMAT_PRESERVE,
  CHK_MF_CHANNELS_LAST = DISP_MEMORY_FORMAT_CHANNELS_LAST,
  CHK_MF_CHANNELS_LAST_3D = DISP_MEMORY_FORMAT_CHANNELS_LAST_3D
};

/* The kinds of value a line may hold (README, "Values"). */
typedef enum chk_kind {
  CHK_NONE,
  CHK_TENSOR,      /* tensor DTYPE SIZES STRIDES OFFSET V... */
  CHK_TENSORMETA,  /* tensormeta DTYPE SIZES STRIDES OFFSET */
  CHK_TENSORS,     /* tensors K, then K element lines */
  CHK_INT,
  CHK_INTS,
  CHK_BOOLS,
  CHK_FLOAT,
  CHK_BOOL,
  CHK_SCALAR_INT,
  CHK_SCALAR_FLOAT,
  CHK_SCALAR_BOOL,
  CHK_DTYPE,
  CHK_LAYOUT,
  CHK_DEVICE,
  CHK_MEMORY_FORMAT,
  CHK_STORAGE      /* storage DTYPE V... (uses .t with ndim 1, offset 0) */
} chk_kind;

/* A tensor as written: geometry plus the tokens of the whole storage
 * (borrowed from the file text). */
typedef struct chk_tensor {
  disp_dtype dtype;
  int ndim;
  int64_t sizes[DISP_TENSOR_MAX_DIMS];
  int64_t strides[DISP_TENSOR_MAX_DIMS];
  int64_t offset;
  size_t nvals;
  char **vals;
} chk_tensor;

typedef struct chk_value {
  chk_kind kind;
  int64_t i;           /* int, bool, scalar int/bool, dtype, layout, memory_format */
  double d;            /* float, scalar float */
  int64_t *ints;       /* ints, bools */
  size_t nints;
  chk_tensor t;        /* tensor, tensormeta, storage */
  struct chk_value *elems; /* tensors: each CHK_TENSOR or CHK_NONE */
  size_t nelems;
} chk_value;

typedef struct chk_arg {
  const char *name;
  chk_value v;
  int defaulted;
} chk_arg;

typedef struct chk_alias { int ret; const char *label; } chk_alias;
typedef struct chk_mutated { const char *label; chk_value v; } chk_mutated;

typedef struct chk_case {
  const char *name;    /* "add.Tensor#1" */
  const char *op;      /* "aten::add.Tensor" */
  char *note;          /* the note lines joined by "; " (owned), or NULL */
  const char *error;   /* the expected error text, or NULL */
  chk_arg *args; size_t nargs;
  chk_value *outs; size_t nouts;   /* indexed by return number */
  chk_alias *aliases; size_t naliases;
  chk_mutated *muts; size_t nmuts;
  int lineno;          /* of the `case` line, for messages */
} chk_case;

/*
 * chk_parse_file - splits `text` (modified in place, must outlive the cases)
 * into cases. On a malformed block it stops and returns -1 with a message
 * "LINE: what" in err; the cases parsed so far stay in *cases.
 */
int chk_parse_file(char *text, chk_case **cases, size_t *ncases, char *err, size_t errlen);

/* chk_case_free - frees what a case owns (not the text it borrows). */
void chk_case_free(chk_case *c);

/* ---- elements ------------------------------------------------------------ */

/* chk_store - writes the number `tok` as one element of `dt` at p. 0 when the
 * token is not a number of that kind. float16/bfloat16 round to nearest even
 * (exact for the values the files hold). */
int chk_store(void *p, disp_dtype dt, const char *tok);

/* chk_load_double / chk_load_int - one element of `dt` at p. */
double chk_load_double(const void *p, disp_dtype dt);
int64_t chk_load_int(const void *p, disp_dtype dt);

/*
 * chk_build_tensor - a tensor with the exact geometry of `t` over its own
 * storage holding every listed value, on CPU (values written) or Meta (no
 * data). New reference in *out; DISP_OK or an error with a message.
 */
disp_status chk_build_tensor(const chk_tensor *t, int meta, disp_tensor **out);

/* chk_build_storage - a storage of t->nvals elements of t->dtype (values
 * written on CPU). New reference. */
disp_status chk_build_storage(const chk_tensor *t, int meta, disp_storage **out);

#endif
