// run.cpp - one case through libtorch's boxed dispatcher, and its outcome in
// the reference format: out/aliases/mutated lines, or an error line.
//
// The call is c10::Dispatcher::singleton().findSchemaOrThrow(name,
// overload).callBoxed(stack), the path torch.ops.aten.<name>.<overload> takes
// from Python (where the seeds came from), with IValues in the boxed forms the
// unboxing wrappers read: ScalarType/Layout/MemoryFormat as ints, a Scalar as
// the Python number's own kind (int, float or bool).
#include <ATen/core/dispatch/Dispatcher.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <regex>
#include <stdexcept>

#include "refgen.h"

namespace refgen {

namespace {

// Note [guarded inputs]: 1.13 leaves some shape mismatches unchecked (the
// softmax backward kernels read grad_output's size from output; set_ takes a
// source of another dtype), and a variant can hit them where no seed did.
// Every input's storage therefore ends at a PROT_NONE page: a read past it
// crashes (refgen runs each variant in a child process and drops it) instead
// of recording whatever the heap held. Storages stay resizable, through this
// allocator, as PyTorch's own are.
struct Mapping {
  void *base;
  size_t len;
};

void unmap(void *ctx) {
  auto *m = static_cast<Mapping *>(ctx);
  munmap(m->base, m->len);
  delete m;
}

struct GuardAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) const override {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), body = (n + 7) / 8 * 8;  // 8-byte aligned
    size_t len = (body + page - 1) / page * page + page;
    void *base = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    char *guard = static_cast<char *>(base) + len - page;
    if (mprotect(guard, page, PROT_NONE) != 0) throw std::runtime_error("mprotect failed");
    return {guard - body, new Mapping{base, len}, &unmap, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
};

GuardAllocator guard_allocator;

c10::Storage guarded_storage(const at::Tensor &t) {
  size_t nbytes = t.storage().nbytes();
  c10::Storage st(c10::Storage::use_byte_size_t(), nbytes, guard_allocator.allocate(nbytes),
                  &guard_allocator, /*resizable=*/true);
  if (nbytes) std::memcpy(st.data(), t.storage().data(), nbytes);
  return st;
}

at::Tensor guarded_clone(const at::Tensor &t) {
  return at::empty({0}, t.options()).set_(guarded_storage(t), t.storage_offset(), t.sizes(), t.strides());
}

// An input that can alias a return: a tensor, a tensor-list element or a
// storage, under its label (`self`, `tensors.1`, `source`).
struct Input {
  std::string label;
  at::Tensor t;  // undefined for a storage
  c10::Storage storage;
};

c10::IValue to_ivalue(const Value &v, std::vector<Input> &inputs, const std::string &label) {
  switch (v.kind) {
    case Kind::None: return c10::IValue();
    case Kind::Tensor: {
      at::Tensor t = guarded_clone(v.t);
      inputs.push_back({label, t, {}});
      return t;
    }
    case Kind::Tensors: {
      c10::List<at::Tensor> list;
      for (size_t e = 0; e < v.elems.size(); e++) {
        if (v.elems[e].kind != Kind::Tensor) throw std::runtime_error("a Tensor[] element is not a tensor");
        at::Tensor t = guarded_clone(v.elems[e].t);
        inputs.push_back({label + "." + std::to_string(e), t, {}});
        list.push_back(t);
      }
      return list;
    }
    case Kind::Int: return v.i;
    case Kind::Ints: return c10::List<int64_t>(v.ints);
    case Kind::Bools: {
      c10::List<bool> list;
      for (int64_t b : v.ints) list.push_back(b != 0);
      return list;
    }
    case Kind::Float: return v.d;
    case Kind::Bool: return v.i != 0;
    case Kind::ScalarInt: return v.i;
    case Kind::ScalarFloat: return v.d;
    // Python's torch.ops hands a bool Scalar over as an int (toIValue: a bool
    // is a Python int), so the seeds record int semantics (full#3: int64).
    case Kind::ScalarBool: return v.i;
    case Kind::Dtype: return static_cast<int64_t>(v.dtype);
    case Kind::Layout: return static_cast<int64_t>(at::kStrided);
    case Kind::Device: return c10::Device(v.text);
    case Kind::MemoryFormat: return v.i;
    case Kind::Str: return v.text;
    case Kind::Storage: {
      c10::Storage st = guarded_storage(v.t);
      inputs.push_back({label, at::Tensor(), st});
      return st;
    }
  }
  return c10::IValue();
}

// The first line of a message, cut after its first sentence when longer than
// 200 characters (what the seed files record).
std::string error_text(std::string msg) {
  size_t nl = msg.find('\n');
  if (nl != std::string::npos) msg.resize(nl);
  if (msg.size() > 200) {
    size_t dot = msg.find(". ");
    if (dot != std::string::npos) msg.resize(dot + 1);
  }
  while (!msg.empty() && (msg.back() == ' ' || msg.back() == '\r')) msg.pop_back();
  // Python prints a tensor type as torch.FloatTensor where C++ has CPUFloatType.
  return std::regex_replace(msg, std::regex("CPU([A-Za-z0-9]+)Type\\{"), "torch.$1Tensor{");
}

const Value *find_arg(const Case &c, const char *name) {
  for (const auto &a : c.args)
    if (a.name == name) return &a.v;
  return nullptr;
}

// Ops whose returned values are uninitialized memory (README: tensormeta,
// whatever the size).
bool values_uninitialized(const Case &c) {
  return c.op == "aten::empty.memory_format" || c.op == "aten::empty_strided" || c.op == "aten::empty_like";
}

// Ops whose returned values are random: tensormeta when they have elements
// (a zero-size result is written in full, as the seeds do).
bool values_random(const Case &c) {
  if (c.op == "aten::rand" || c.op == "aten::randn" || c.op == "aten::multinomial") return true;
  if (c.op != "aten::dropout" && c.op != "aten::native_dropout") return false;
  const Value *p = find_arg(c, "p"), *train = find_arg(c, "train");
  bool training = train && (train->kind == Kind::None || train->i);
  return training && p && p->d > 0 && p->d < 1;
}

std::string format_return(const c10::IValue &v, bool meta, bool whole_storage) {
  if (v.isNone()) return "none";
  if (v.isTensor()) {
    const at::Tensor &t = v.toTensor();
    if (!t.defined()) return "none";
    return meta ? format_tensormeta(t) : format_tensor(t, whole_storage);
  }
  if (v.isTensorList()) {
    // `tensors K` and one line per element; an element that shares an
    // input's storage is written with that whole storage (as a view return)
    std::vector<at::Tensor> ts = v.toTensorVector();
    std::string s = "tensors " + std::to_string(ts.size());
    for (const auto &t : ts) s += "\n" + (meta ? format_tensormeta(t) : format_tensor(t, whole_storage));
    return s;
  }
  if (v.isBool()) return std::string("scalar bool ") + (v.toBool() ? "1" : "0");
  if (v.isInt()) return "scalar int " + std::to_string(v.toInt());
  if (v.isDouble()) return "scalar float " + repr(v.toDouble());
  throw std::runtime_error("cannot write a return of type " + v.tagKind());
}

// Whether every element of t lies inside its storage (_reshape_alias and
// friends make views without checking).
bool within_storage(const at::Tensor &t) {
  if (t.numel() == 0) return true;
  int64_t last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); d++) last += (t.size(d) - 1) * t.stride(d);
  return (size_t)(last + 1) * t.element_size() <= t.storage().nbytes();
}

}  // namespace

c10::IValue arg_ivalue(const Value &v) {
  std::vector<Input> inputs;
  return to_ivalue(v, inputs, "");
}

c10::OperatorHandle find_operator(const std::string &op) {
  std::string name = op, overload;
  size_t dot = op.find('.', op.find("::") + 2);
  if (dot != std::string::npos) {
    name = op.substr(0, dot);
    overload = op.substr(dot + 1);
  }
  return c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), overload.c_str());
}

const c10::FunctionSchema &op_schema(const std::string &op) { return find_operator(op).schema(); }

RunResult run_case(const Case &c) {
  c10::OperatorHandle op = find_operator(c.op);
  const auto &args = op.schema().arguments();
  if (args.size() != c.args.size()) throw std::runtime_error(c.name + ": argument count differs from the schema");
  std::vector<Input> inputs;
  std::vector<c10::IValue> stack;
  std::vector<std::pair<std::string, at::Tensor>> written;  // schema (a!) inputs
  std::vector<size_t> before_nbytes;
  for (size_t a = 0; a < args.size(); a++) {
    if (args[a].name() != c.args[a].name)
      throw std::runtime_error(c.name + ": arg " + c.args[a].name + " is " + args[a].name() + " in the schema");
    size_t first = inputs.size();
    stack.push_back(to_ivalue(c.args[a].v, inputs, c.args[a].name));
    if (args[a].alias_info() && args[a].alias_info()->isWrite() && inputs.size() == first + 1 &&
        inputs[first].t.defined()) {
      written.emplace_back(c.args[a].name, inputs[first].t);
      before_nbytes.push_back(inputs[first].t.storage().nbytes());
    }
  }
  RunResult r;
  try {
    op.callBoxed(&stack);
  } catch (const c10::Error &e) {
    r.error = true;
    r.lines.push_back("error " + error_text(e.what_without_backtrace()));
  } catch (const std::exception &e) {
    r.error = true;
    r.lines.push_back("error " + error_text(e.what()));
  }
  if (r.error) {
    r.missing_dtype_kernel = r.lines[0].find("not implemented for '") != std::string::npos;
    return r;
  }
  // resize_ that grows a storage leaves the new elements uninitialized.
  bool grown = false;
  for (size_t w = 0; w < written.size(); w++)
    grown |= c.op == "aten::resize_" && written[w].second.storage().nbytes() > before_nbytes[w];
  bool uninit = values_uninitialized(c) || grown, random = values_random(c);
  std::vector<std::string> aliases;
  for (size_t i = 0; i < stack.size(); i++) {
    bool aliased = false;
    if (stack[i].isTensorList()) {
      for (const at::Tensor &t : stack[i].toTensorVector())
        for (const auto &in : inputs)
          if (in.t.defined() && t.defined() &&
              t.storage().unsafeGetStorageImpl() == in.t.storage().unsafeGetStorageImpl())
            aliased = true;
    }
    if (stack[i].isTensor() && stack[i].toTensor().defined()) {
      const c10::StorageImpl *mine = stack[i].toTensor().storage().unsafeGetStorageImpl();
      for (const auto &in : inputs) {
        const c10::StorageImpl *theirs = in.t.defined() ? in.t.storage().unsafeGetStorageImpl()
                                                        : in.storage.unsafeGetStorageImpl();
        if (mine == theirs) {
          aliases.push_back("aliases " + std::to_string(i) + " " + in.label);
          aliased = true;
        }
      }
      r.unwritable |= aliased && !within_storage(stack[i].toTensor());
    }
    bool meta = uninit || (random && stack[i].isTensor() && stack[i].toTensor().numel() > 0);
    // a Tensor[] return spans lines: `out i tensors K`, then its elements
    std::string text = "out " + std::to_string(i) + " " + format_return(stack[i], meta, aliased);
    for (size_t from = 0;;) {
      size_t nl = text.find('\n', from);
      r.lines.push_back(text.substr(from, nl == std::string::npos ? std::string::npos : nl - from));
      if (nl == std::string::npos) break;
      from = nl + 1;
    }
  }
  r.lines.insert(r.lines.end(), aliases.begin(), aliases.end());
  for (const auto &w : written)
    r.lines.push_back("mutated " + w.first + " " +
                      (grown ? format_tensormeta(w.second) : format_tensor(w.second, true)));
  return r;
}

}  // namespace refgen
