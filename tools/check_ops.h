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
int disp_tool_test(int argc, char **argv); /* devtest_cmd.c */

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
  CHK_STORAGE,     /* storage DTYPE V... (uses .t with ndim 1, offset 0) */
  CHK_STR          /* str TEXT (one token; .s borrows the file text) */
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
  const char *s;       /* str */
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
/* `grad_output <i> <tensor>` (label NULL, ret i) or `grad <label> <tensor>`. */
typedef struct chk_grad { int ret; const char *label; chk_value v; } chk_grad;

typedef struct chk_case {
  const char *name;    /* "add.Tensor#1" */
  const char *op;      /* "aten::add.Tensor" */
  char *note;          /* the note lines joined by "; " (owned), or NULL */
  const char *error;   /* the expected error text, or NULL */
  chk_arg *args; size_t nargs;
  chk_value *outs; size_t nouts;   /* indexed by return number */
  chk_alias *aliases; size_t naliases;
  chk_mutated *muts; size_t nmuts;
  const char **requires_grad; size_t nrequires_grad; /* input labels, gradient cases only */
  chk_grad *grad_outputs; size_t ngrad_outputs;
  chk_grad *grads; size_t ngrads;     /* inputs absent here got None */
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
 * storage holding every listed value, on `dev`: CPU (values written), Meta
 * (no data), or another device (values written on the host, then copied
 * into device memory through the device's hooks: the harness never touches
 * device memory). New reference in *out; DISP_OK or an error with a message.
 */
disp_status chk_build_tensor(const chk_tensor *t, disp_device dev, disp_tensor **out);

/* chk_build_storage - a storage of t->nvals elements of t->dtype on `dev`
 * (values written, except on Meta). New reference. */
disp_status chk_build_storage(const chk_tensor *t, disp_device dev, disp_storage **out);

/*
 * chk_host_mirror - t itself (retained) on CPU or Meta; for a tensor of
 * another device a CPU tensor with t's geometry over a host copy of t's
 * whole storage, made through the device's copy hook. New reference.
 */
disp_status chk_host_mirror(const disp_tensor *t, disp_tensor **out);

/* ---- running a case (check_ops.c, shared with check_ops_grad.c) ---------- */

/* Failure classes: what part of a case went wrong (the usage text). */
enum {
  CL_KERNEL = 1u << 0,
  CL_ERROR = 1u << 1,
  CL_VALUE = 1u << 2,
  CL_STRIDE = 1u << 3,
  CL_ALIAS = 1u << 4,
  CL_MUTATED = 1u << 5,
  CL_HARNESS = 1u << 6,
  CL_CRASH = 1u << 7,
  CL_GRAD = 1u << 8, /* --grad: a gradient differs, is missing, or backward failed */
  CL_COUNT = 9
};

typedef struct chk_opts {
  int meta;
  /* the device inputs are built on: CPU, Meta (meta set) or a plugin's
   * (--device NAME: results are read back through its copy hooks) */
  disp_device device;
  int verbose;
  int fill_defaults;
  int per_op;
  int isolate;
  int grad; /* --grad: only gradient cases, their gradients checked too */
  int gradcheck; /* --gradcheck: only gradient cases, gradcheck and gradgradcheck on each */
  int failures_only; /* print FAIL lines (and --per-op summaries) only */
  /* per case, on a Meta run: fresh returns belong on Meta (the case has a
   * tensor or device argument; a factory left to device=None makes CPU) */
  int fresh_on_meta;
} chk_opts;

/* Counts over a run of case files. */
typedef struct chk_totals {
  long passed, failed, skipped;
  long by_class[16];
} chk_totals;

/*
 * chk_run_files - runs every case of files[0..n) with options o, printing a
 * line per case (only FAIL lines with o->failures_only), a summary per file
 * with o->per_op and the failures by class; adds the counts to *t.
 */
void chk_run_files(const chk_opts *o, char *const *files, int n, chk_totals *t);

/* What happened to one case. */
typedef struct chk_report {
  char msg[2048];
  size_t len;
  unsigned classes;
  int nmsgs;
  int skip;
  char info[1024]; /* --verbose: the error a case expected and got */
} chk_report;

/* chk_addf - records a failure of class `cls` (one CL_ bit); the first few
 * messages are kept in r->msg. */
void chk_addf(chk_report *r, unsigned cls, const char *fmt, ...) DISP_PRINTF(3, 4);

/* The objects built for one argument of a call (owned). */
typedef struct chk_built {
  disp_tensor *t;         /* Tensor, Tensor? (NULL: None) */
  disp_tensor **list;     /* Tensor[] elements (NULL: None element) */
  size_t nlist;
  disp_storage *st;       /* Storage */
} chk_built;

/* chk_build_arg - builds what argument value v needs into *b (zeroed);
 * chk_push_arg pushes it on s; chk_built_free releases n of them and the
 * array. */
disp_status chk_build_arg(const chk_value *v, const chk_opts *o, chk_built *b);
disp_status chk_push_arg(disp_stack *s, const chk_value *v, const chk_built *b, const chk_opts *o);
void chk_built_free(chk_built *b, size_t n);

/* chk_label_slot - where the tensor an input label names lives among the
 * built arguments ("self", or "tensors.1" for an element of a Tensor[]),
 * with the index of the label's argument in *arg (c->nargs when none);
 * NULL when the label names no tensor. */
disp_tensor **chk_label_slot(const chk_case *c, chk_built *b, const char *label, size_t *arg);

/*
 * chk_flat_return / chk_flat_out - the i-th tensor of a call's returns
 * (borrowed from the stack) and of a case's recorded returns, counting the
 * elements of a Tensor[] return one by one (split's pieces), as the
 * `grad_output i` lines do; NULL when there is no such tensor.
 */
disp_tensor *chk_flat_return(disp_stack *stack, size_t i);
const chk_value *chk_flat_out(const chk_case *c, size_t i);

/*
 * chk_compare_tensor - compares `got` with the recorded `want`: dtype and
 * sizes, then strides and offset (a mismatch of class geom_class; 0 skips
 * the geometry: compare by value), device, and the values with the
 * tolerances of the README (float64: rtol 1e-7, atol 1e-7). Other
 * mismatches are of class vcls.
 */
void chk_compare_tensor(chk_report *r, const char *what, const disp_tensor *got, const chk_value *want,
                        unsigned geom_class, unsigned vcls, const chk_opts *o);

/*
 * chk_check_grad - the gradient part of a case with `requires_grad` lines
 * (check_ops_grad.c): runs op again on fresh leaves and compares
 * disp_autograd_grad's results with the `grad` lines. Failures go to r.
 */
void chk_check_grad(const chk_case *c, const disp_op *op, const chk_opts *o, chk_report *r);

/*
 * chk_gradcheck - disp_gradcheck and disp_gradgradcheck of op on the
 * case's inputs (check_ops_gradcheck.c), instead of the forward checks.
 * Failures go to r; a case noted "kink" is skipped.
 */
void chk_gradcheck(const chk_case *c, const disp_op *op, const chk_opts *o, chk_report *r);

#endif
