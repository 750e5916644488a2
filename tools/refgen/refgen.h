// refgen.h - shared types of tools/refgen, the generator of more PyTorch
// reference cases for `disp check-ops` (format: tests/data/ops/README.md).
//
// A developer tool, built only when Debian's libtorch-dev is installed:
// libdispatch never links libtorch and no test needs this program. It reads
// the seed cases, makes variants of the same kinds (values, dtypes, layouts,
// shapes, scalar kinds, argument forms), runs each through libtorch 1.13's
// boxed dispatcher and writes what libtorch returned in the same format.
//
// Files: case_io.cpp (reading and writing the format), run.cpp (one case
// through c10::Dispatcher), variants.cpp (making variants), refgen.cpp (the
// command). Single-threaded throughout, like the reference (one at:: thread).
#ifndef DISP_TOOLS_REFGEN_H
#define DISP_TOOLS_REFGEN_H

#include <ATen/ATen.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace refgen {

// The kinds of value an `arg` line holds (README, "Values").
enum class Kind {
  None, Tensor, Tensors, Int, Ints, Bools, Float, Bool, ScalarInt, ScalarFloat, ScalarBool,
  Dtype, Layout, Device, MemoryFormat, Storage, Str
};

// One argument value. Tensors own their storage (each input its own, as the
// format requires); a Storage is held as a 1-D tensor over it.
struct Value {
  Kind kind = Kind::None;
  int64_t i = 0;              // int, bool, scalar int/bool, memory_format index
  double d = 0;               // float, scalar float
  at::ScalarType dtype = at::kFloat;  // dtype
  std::vector<int64_t> ints;  // ints, bools
  at::Tensor t;               // tensor; storage
  std::vector<Value> elems;   // tensors: each Tensor or None
  std::string text;           // layout and device names, str values, verbatim
};

struct Arg {
  std::string name;
  Value v;
  bool defaulted = false;
};

// A `grad_output I TENSOR` line of a seed (what --record backpropagates).
struct GradOutput {
  int ret = 0;
  Value v;
};

// One case block. `results` holds a seed's recorded out/aliases/mutated/error
// lines; a variant's are filled in by run_case. The gradient lines are kept
// apart: `requires_grad` labels and the `grad_output` tensors (--record
// computes the `grad` lines from them; variants have none).
struct Case {
  std::string name;                // "add.Tensor#3"
  std::string op;                  // "aten::add.Tensor"
  std::vector<std::string> notes;
  std::vector<Arg> args;
  std::vector<std::string> results;
  std::vector<std::string> requires_grad;
  std::vector<GradOutput> grad_outputs;
  std::vector<std::string> grad_lines;  // the seed's gradient lines as written (--verify compares)
};

// A seed file: its header comment lines and its cases.
struct File {
  std::string path, stem;          // stem: "add.Tensor"
  std::vector<std::string> header; // the leading '#' lines
  std::vector<Case> cases;
};

// ---- case_io.cpp ----------------------------------------------------------

// Reads a case file; throws std::runtime_error naming the line on bad input.
File read_file(const std::string &path);

// Python's repr of a double: the shortest decimal that reads back to the
// same double, `1.0`, `-0.0`, `1e-05`, `3.3e+38`, `inf`, `-inf`, `nan`.
std::string repr(double x);

// The format's dtype names (`float32` ...); parse throws on an unknown name.
const char *dtype_name(at::ScalarType t);
at::ScalarType parse_dtype(const std::string &name);
bool is_float(at::ScalarType t);

// A 1-D tensor over the whole storage of t (all nbytes/itemsize elements).
at::Tensor storage_flat(const at::Tensor &t);
// A tensor with t's geometry over a fresh copy of its whole storage.
at::Tensor clone_exact(const at::Tensor &t);

// `tensor DTYPE SIZES STRIDES OFFSET V...`: the whole storage (inputs,
// aliasing returns, mutated inputs) or, for a fresh return, the elements up
// to the last one it reaches with unreached ones written 0.
std::string format_tensor(const at::Tensor &t, bool whole_storage);
std::string format_tensormeta(const at::Tensor &t);
// The text after `arg NAME ` (several lines for `tensors K`).
std::string format_value(const Value &v);
// The whole block, `case` to `end`.
std::string format_case(const Case &c);

// ---- run.cpp --------------------------------------------------------------

struct RunResult {
  std::vector<std::string> lines;  // out/aliases/mutated lines, or one error line
  bool error = false;
  bool missing_dtype_kernel = false;  // "... not implemented for 'Half'"
  bool unwritable = false;  // a view reaching past its storage (1.13 checks no bounds there)
};

// Calls c.op with c.args (deep copies: c is not changed) through
// c10::Dispatcher::callBoxed and records the outcome in the format. Throws
// std::runtime_error when the case does not fit the operator's schema.
RunResult run_case(const Case &c);

// The operator named as in an `op` line ("aten::add.Tensor"); throws when
// libtorch has none.
c10::OperatorHandle find_operator(const std::string &op);

// The schema of an operator named as in an `op` line.
const c10::FunctionSchema &op_schema(const std::string &op);

// ---- record.cpp -----------------------------------------------------------

// An argument value as the boxed dispatcher takes it (a tensor: a fresh copy
// with the same geometry over guarded memory; run.cpp).
c10::IValue arg_ivalue(const Value &v);

// The gradient lines of seed case c (requires_grad, grad_output, grad): the
// labelled inputs made leaves that require grad, c.op called through the
// boxed dispatcher with autograd, torch::autograd::grad of the returns that
// have a grad_output line (allow_unused: an input no gradient reached gets
// no `grad` line, as 1.13's None). *node is the grad_fn's name() of the
// first such return ("" when none). Empty when c has no requires_grad.
std::vector<std::string> record_grads(const Case &c, std::string *node);

// ---- variants.cpp ---------------------------------------------------------

// A variant of a seed case: its arguments and a description for the note.
struct Variant {
  std::vector<Arg> args;
  std::string what;
};

// Up to `max_variants` distinct variants of `seed` (none equal to the seed),
// the same every run for the same seed case and salt (the committed files
// use the empty salt; others give fresh batches for exploring).
std::vector<Variant> make_variants(const Case &seed, size_t max_variants, const std::string &salt);

}  // namespace refgen

#endif
