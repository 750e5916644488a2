// case_io.cpp - reading and writing reference-case files (format:
// tests/data/ops/README.md). Tensors are read straight into at::Tensor over
// a storage of their own, so variants and runs work on libtorch objects.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "refgen.h"

namespace refgen {

namespace {

const struct { const char *name; at::ScalarType type; } kDtypes[] = {
    {"float32", at::kFloat}, {"float64", at::kDouble}, {"float16", at::kHalf},
    {"bfloat16", at::kBFloat16}, {"int64", at::kLong}, {"int32", at::kInt},
    {"int16", at::kShort}, {"int8", at::kChar}, {"uint8", at::kByte}, {"bool", at::kBool}};

const char *const kMemoryFormats[] = {"contiguous_format", "preserve_format", "channels_last",
                                      "channels_last_3d"};

std::vector<std::string> split(const std::string &line) {
  std::vector<std::string> tok;
  std::istringstream in(line);
  std::string t;
  while (in >> t) tok.push_back(t);
  return tok;
}

[[noreturn]] void fail(const std::string &path, size_t line, const std::string &what) {
  throw std::runtime_error(path + ":" + std::to_string(line + 1) + ": " + what);
}

std::vector<int64_t> parse_list(const std::string &tok) {
  std::vector<int64_t> v;
  if (tok == "-") return v;
  std::stringstream in(tok);
  std::string item;
  while (std::getline(in, item, ',')) v.push_back(std::stoll(item));
  return v;
}

std::string format_list(at::IntArrayRef v) {
  if (v.empty()) return "-";
  std::string s;
  for (size_t k = 0; k < v.size(); k++) s += (k ? "," : "") + std::to_string(v[k]);
  return s;
}

// A 1-D tensor of dtype dt holding the tokens' values (own storage).
at::Tensor flat_from_tokens(at::ScalarType dt, const std::vector<std::string> &vals) {
  if (is_float(dt)) {
    std::vector<double> v;
    for (const auto &s : vals) v.push_back(std::strtod(s.c_str(), nullptr));
    return at::tensor(at::ArrayRef<double>(v), at::kDouble).to(dt).clone();
  }
  std::vector<int64_t> v;
  for (const auto &s : vals) v.push_back(std::stoll(s));
  return at::tensor(at::ArrayRef<int64_t>(v), at::kLong).to(dt).clone();
}

std::string element_text(const at::Tensor &flat_double_or_long, int64_t k) {
  if (flat_double_or_long.scalar_type() == at::kDouble)
    return repr(flat_double_or_long.data_ptr<double>()[k]);
  return std::to_string(flat_double_or_long.data_ptr<int64_t>()[k]);
}

// The flat storage converted to double (floating dtypes) or int64 (others).
at::Tensor readable_flat(const at::Tensor &t) {
  return storage_flat(t).to(is_float(t.scalar_type()) ? at::kDouble : at::kLong).contiguous();
}

// tok[k..]: "tensor DTYPE SIZES STRIDES OFFSET V..." (k at "tensor").
Value parse_tensor(const std::vector<std::string> &tok, size_t k) {
  if (tok.size() < k + 5) throw std::runtime_error("tensor needs DTYPE SIZES STRIDES OFFSET");
  Value v;
  v.kind = Kind::Tensor;
  at::ScalarType dt = parse_dtype(tok[k + 1]);
  std::vector<int64_t> sizes = parse_list(tok[k + 2]), strides = parse_list(tok[k + 3]);
  int64_t offset = std::stoll(tok[k + 4]);
  std::vector<std::string> vals(tok.begin() + (long)k + 5, tok.end());
  v.t = flat_from_tokens(dt, vals).as_strided(sizes, strides, offset);
  return v;
}

Value parse_value(const std::vector<std::string> &tok, size_t k) {
  Value v;
  const std::string &kind = tok.at(k);
  auto need = [&](size_t n) {
    if (tok.size() != k + n) throw std::runtime_error("bad '" + kind + "' value");
  };
  if (kind == "none") { need(1); v.kind = Kind::None; }
  else if (kind == "tensor") v = parse_tensor(tok, k);
  else if (kind == "int") { need(2); v.kind = Kind::Int; v.i = std::stoll(tok[k + 1]); }
  else if (kind == "ints" || kind == "bools") {
    need(2);
    v.kind = kind == "ints" ? Kind::Ints : Kind::Bools;
    v.ints = parse_list(tok[k + 1]);
  } else if (kind == "float") { need(2); v.kind = Kind::Float; v.d = std::strtod(tok[k + 1].c_str(), nullptr); }
  else if (kind == "bool") { need(2); v.kind = Kind::Bool; v.i = tok[k + 1] == "1"; }
  else if (kind == "scalar") {
    need(3);
    const std::string &sk = tok[k + 1], &x = tok[k + 2];
    if (sk == "int") { v.kind = Kind::ScalarInt; v.i = std::stoll(x); }
    else if (sk == "float") { v.kind = Kind::ScalarFloat; v.d = std::strtod(x.c_str(), nullptr); }
    else if (sk == "bool") { v.kind = Kind::ScalarBool; v.i = x == "1"; }
    else throw std::runtime_error("bad scalar kind " + sk);
  } else if (kind == "dtype") { need(2); v.kind = Kind::Dtype; v.dtype = parse_dtype(tok[k + 1]); }
  else if (kind == "layout") { need(2); v.kind = Kind::Layout; v.text = tok[k + 1]; }
  else if (kind == "device") { need(2); v.kind = Kind::Device; v.text = tok[k + 1]; }
  else if (kind == "str") { need(2); v.kind = Kind::Str; v.text = tok[k + 1]; }
  else if (kind == "memory_format") {
    need(2);
    v.kind = Kind::MemoryFormat;
    v.i = -1;
    for (int m = 0; m < 4; m++)
      if (tok[k + 1] == kMemoryFormats[m]) v.i = m;
    if (v.i < 0) throw std::runtime_error("bad memory_format " + tok[k + 1]);
  } else if (kind == "storage") {
    if (tok.size() < k + 2) throw std::runtime_error("storage needs a dtype");
    v.kind = Kind::Storage;
    v.t = flat_from_tokens(parse_dtype(tok[k + 1]),
                           std::vector<std::string>(tok.begin() + (long)k + 2, tok.end()));
  } else {
    throw std::runtime_error("unknown value kind '" + kind + "'");
  }
  return v;
}

}  // namespace

// ---- numbers and names ------------------------------------------------------

std::string repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  if (x == 0) return std::signbit(x) ? "-0.0" : "0.0";
  char buf[64];
  for (int prec = 1; prec <= 17; prec++) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  // buf is [-]D[.DDD]e(+|-)XX: collect the digits and the decimal exponent.
  std::string s(buf), digits;
  bool neg = s[0] == '-';
  size_t e = s.find('e');
  for (size_t k = neg; k < e; k++)
    if (s[k] != '.') digits += s[k];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int exp10 = std::atoi(s.c_str() + e + 1);
  int decpt = exp10 + 1;  // x = 0.DIGITS * 10^decpt, as Python's float_repr counts
  std::string out = neg ? "-" : "";
  if (decpt > 16 || decpt <= -4) {  // Python's repr switches to exponent form here
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    std::snprintf(buf, sizeof buf, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    return out + buf;
  }
  int nd = (int)digits.size();
  if (decpt <= 0) return out + "0." + std::string((size_t)-decpt, '0') + digits;
  if (decpt >= nd) return out + digits + std::string((size_t)(decpt - nd), '0') + ".0";
  return out + digits.substr(0, (size_t)decpt) + "." + digits.substr((size_t)decpt);
}

const char *dtype_name(at::ScalarType t) {
  for (const auto &d : kDtypes)
    if (d.type == t) return d.name;
  throw std::runtime_error(std::string("no format name for dtype ") + c10::toString(t));
}

at::ScalarType parse_dtype(const std::string &name) {
  for (const auto &d : kDtypes)
    if (name == d.name) return d.type;
  throw std::runtime_error("unknown dtype '" + name + "'");
}

bool is_float(at::ScalarType t) { return at::isFloatingType(t); }

// ---- tensors ---------------------------------------------------------------

at::Tensor storage_flat(const at::Tensor &t) {
  int64_t n = (int64_t)(t.storage().nbytes() / t.element_size());
  return at::empty({0}, t.options()).set_(t.storage(), 0, {n}, {1});
}

at::Tensor clone_exact(const at::Tensor &t) {
  return storage_flat(t).clone().as_strided(t.sizes(), t.strides(), t.storage_offset());
}

std::string format_tensormeta(const at::Tensor &t) {
  return std::string("tensormeta ") + dtype_name(t.scalar_type()) + " " + format_list(t.sizes()) +
         " " + format_list(t.strides()) + " " + std::to_string(t.storage_offset());
}

std::string format_tensor(const at::Tensor &t, bool whole_storage) {
  std::string s = std::string("tensor ") + dtype_name(t.scalar_type()) + " " +
                  format_list(t.sizes()) + " " + format_list(t.strides()) + " " +
                  std::to_string(t.storage_offset());
  at::Tensor flat = readable_flat(t);
  int64_t n = flat.numel();
  std::vector<char> reached;
  if (!whole_storage) {
    // A fresh return lists what it reaches; the rest is written 0.
    int64_t last = t.storage_offset();
    if (t.numel() == 0) n = 0;
    else {
      for (int64_t d = 0; d < t.dim(); d++) last += (t.size(d) - 1) * t.stride(d);
      n = std::min(n, last + 1);
    }
    reached.assign((size_t)n, 0);
    std::vector<int64_t> idx((size_t)t.dim(), 0);
    for (int64_t e = 0; e < t.numel(); e++) {
      int64_t off = t.storage_offset();
      for (int64_t d = 0; d < t.dim(); d++) off += idx[(size_t)d] * t.stride(d);
      if (off < n) reached[(size_t)off] = 1;
      for (int64_t d = t.dim() - 1; d >= 0; d--) {
        if (++idx[(size_t)d] < t.size(d)) break;
        idx[(size_t)d] = 0;
      }
    }
  }
  for (int64_t k = 0; k < n; k++)
    s += " " + (whole_storage || reached[(size_t)k] ? element_text(flat, k) : std::string("0"));
  return s;
}

std::string format_value(const Value &v) {
  switch (v.kind) {
    case Kind::None: return "none";
    case Kind::Tensor: return format_tensor(v.t, true);
    case Kind::Tensors: {
      std::string s = "tensors " + std::to_string(v.elems.size());
      for (const auto &e : v.elems) s += "\n" + format_value(e);
      return s;
    }
    case Kind::Int: return "int " + std::to_string(v.i);
    case Kind::Ints: return "ints " + format_list(v.ints);
    case Kind::Bools: return "bools " + format_list(v.ints);
    case Kind::Float: return "float " + repr(v.d);
    case Kind::Bool: return std::string("bool ") + (v.i ? "1" : "0");
    case Kind::ScalarInt: return "scalar int " + std::to_string(v.i);
    case Kind::ScalarFloat: return "scalar float " + repr(v.d);
    case Kind::ScalarBool: return std::string("scalar bool ") + (v.i ? "1" : "0");
    case Kind::Dtype: return std::string("dtype ") + dtype_name(v.dtype);
    case Kind::Layout: return "layout " + v.text;
    case Kind::Device: return "device " + v.text;
    case Kind::MemoryFormat: return std::string("memory_format ") + kMemoryFormats[v.i];
    case Kind::Str: return "str " + v.text;
    case Kind::Storage: {
      at::Tensor flat = readable_flat(v.t);
      std::string s = std::string("storage ") + dtype_name(v.t.scalar_type());
      for (int64_t k = 0; k < flat.numel(); k++) s += " " + element_text(flat, k);
      return s;
    }
  }
  return "none";
}

std::string format_case(const Case &c) {
  std::string s = "case " + c.name + "\nop " + c.op + "\n";
  for (const auto &n : c.notes) s += "note " + n + "\n";
  std::string defaulted;
  for (const auto &a : c.args) {
    s += "arg " + a.name + " " + format_value(a.v) + "\n";
    if (a.defaulted) defaulted += " " + a.name;
  }
  if (!defaulted.empty()) s += "defaulted" + defaulted + "\n";
  for (const auto &r : c.results) s += r + "\n";
  return s + "end\n";
}

// ---- files -----------------------------------------------------------------

File read_file(const std::string &path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  File f;
  f.path = path;
  size_t slash = path.find_last_of('/');
  f.stem = path.substr(slash == std::string::npos ? 0 : slash + 1);
  if (f.stem.size() > 4 && f.stem.compare(f.stem.size() - 4, 4, ".txt") == 0)
    f.stem.resize(f.stem.size() - 4);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  size_t k = 0;
  for (; k < lines.size() && (lines[k].empty() || lines[k][0] == '#'); k++)
    if (!lines[k].empty()) f.header.push_back(lines[k]);
  Case *c = nullptr;
  for (; k < lines.size(); k++) {
    const std::string &l = lines[k];
    if (l.empty() || l[0] == '#') continue;
    std::vector<std::string> tok = split(l);
    const std::string &key = tok[0];
    try {
      if (key == "case") {
        if (c) fail(path, k, "case inside a case");
        f.cases.emplace_back();
        c = &f.cases.back();
        c->name = tok.at(1);
        continue;
      }
      if (!c) fail(path, k, "line outside a case");
      if (key == "end") c = nullptr;
      else if (key == "op") c->op = tok.at(1);
      else if (key == "note") c->notes.push_back(l.substr(5));
      else if (key == "arg") {
        Arg a;
        a.name = tok.at(1);
        if (tok.at(2) == "tensors") {
          a.v.kind = Kind::Tensors;
          size_t n = std::stoul(tok.at(3));
          for (size_t e = 0; e < n; e++) {
            std::vector<std::string> et = split(lines.at(++k));
            a.v.elems.push_back(parse_value(et, 0));
          }
        } else {
          a.v = parse_value(tok, 2);
        }
        c->args.push_back(std::move(a));
      } else if (key == "defaulted") {
        for (size_t t = 1; t < tok.size(); t++)
          for (auto &a : c->args)
            if (a.name == tok[t]) a.defaulted = true;
      } else if (key == "out" || key == "aliases" || key == "mutated" || key == "error") {
        c->results.push_back(l);
        if (key == "out" && tok.size() == 4 && tok[2] == "tensors")
          for (size_t n = std::stoul(tok[3]); n > 0; n--) c->results.push_back(lines.at(++k));
      } else if (key == "requires_grad") {
        c->requires_grad.assign(tok.begin() + 1, tok.end());
        c->grad_lines.push_back(l);
      } else if (key == "grad_output") {
        GradOutput g;
        g.ret = std::stoi(tok.at(1));
        g.v = parse_value(tok, 2);
        c->grad_outputs.push_back(std::move(g));
        c->grad_lines.push_back(l);
      } else if (key == "grad") {
        c->grad_lines.push_back(l);
      } else {
        fail(path, k, "unexpected line '" + key + "'");
      }
    } catch (const std::runtime_error &e) {
      if (std::strchr(e.what(), ':') && std::string(e.what()).rfind(path, 0) == 0) throw;
      fail(path, k, e.what());
    } catch (const std::exception &e) {
      fail(path, k, e.what());
    }
  }
  if (c) fail(path, lines.size(), "case " + c->name + " has no end");
  return f;
}

}  // namespace refgen
