// variants.cpp - variants of a seed case, of the kinds the reference covers:
// new values, other dtypes (all tensors, or one of them: dtype mixes), other
// layouts with the same logical values (transposed storage, step slice,
// storage offset, channels_last), expanded (stride 0) inputs, zero-size and
// 0-dim versions, other scalar kinds and values, other forms of the plain
// arguments (negative dims, keepdim, dtype=, memory_format=, shapes, ...).
//
// Values stay exact: floats are multiples of 1/8 in [-3, 3] (1/4 and all
// distinct for max-like ops, whose indices ties would make ambiguous), ints
// small, index tensors (`target`, `indices`) permuted rather than redrawn so
// they stay in range. Elements keep the sign of the seed's element, so a
// log/sqrt case stays in its domain. Every choice comes from a generator
// seeded with the seed case's name: the output is the same on every run.
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include <ATen/core/function_schema.h>

#include "refgen.h"

namespace refgen {

namespace {

using Rng = std::mt19937_64;

const at::ScalarType kDtypes[] = {at::kFloat, at::kDouble, at::kLong,  at::kInt,  at::kShort,
                                  at::kChar,  at::kByte,   at::kBool,  at::kHalf, at::kBFloat16};

uint64_t fnv(const std::string &s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

// Uniform in [lo, hi]; modulo bias is irrelevant here, stability across
// standard libraries is not (std::uniform_int_distribution may differ).
int64_t rnd(Rng &r, int64_t lo, int64_t hi) { return lo + (int64_t)(r() % (uint64_t)(hi - lo + 1)); }

template <class T> void shuffle(std::vector<T> &v, Rng &r) {
  for (size_t k = v.size(); k > 1; k--) std::swap(v[k - 1], v[(size_t)rnd(r, 0, (int64_t)k - 1)]);
}

bool distinct_op(const std::string &op) {
  return op == "aten::max.dim" || op == "aten::argmax" || op == "aten::amax" ||
         op == "aten::max_pool2d" || op == "aten::max_pool2d_with_indices";
}

bool index_like(const std::string &name, const at::Tensor &t) {
  return (name == "target" || name == "indices") && !is_float(t.scalar_type()) &&
         t.scalar_type() != at::kBool;
}

// One element of dtype dt with the sign of `hint` (any sign when 0).
double gen_elem(Rng &r, at::ScalarType dt, double hint) {
  if (dt == at::kBool) return (double)rnd(r, 0, 1);
  if (is_float(dt) && (std::isnan(hint) || std::isinf(hint))) return hint;
  if (std::isnan(hint)) hint = 0;
  int sign = hint > 0 ? 1 : hint < 0 ? -1 : (rnd(r, 0, 1) ? 1 : -1);
  if (is_float(dt)) return sign * (double)(hint == 0 ? rnd(r, 0, 24) : rnd(r, 1, 24)) / 8.0;
  if (dt == at::kByte) return (double)rnd(r, hint == 0 ? 0 : 1, 9);
  return sign * (double)(hint == 0 ? rnd(r, 0, 5) : rnd(r, 1, 5));
}

std::vector<double> flat_values(const at::Tensor &t) {
  at::Tensor f = storage_flat(t).to(at::kDouble).contiguous();
  return std::vector<double>(f.data_ptr<double>(), f.data_ptr<double>() + f.numel());
}

// A tensor of dtype dt over a new storage holding `vals`, with like's geometry.
at::Tensor with_values(const std::vector<double> &vals, at::ScalarType dt, const at::Tensor &like) {
  at::Tensor flat = at::tensor(at::ArrayRef<double>(vals), at::kDouble).to(dt).clone();
  return flat.as_strided(like.sizes(), like.strides(), like.storage_offset());
}

// The storage positions t reaches (each once).
std::vector<int64_t> reached(const at::Tensor &t) {
  std::set<int64_t> pos;
  std::vector<int64_t> idx((size_t)t.dim(), 0);
  for (int64_t e = 0; e < t.numel(); e++) {
    int64_t off = t.storage_offset();
    for (int64_t d = 0; d < t.dim(); d++) off += idx[(size_t)d] * t.stride(d);
    pos.insert(off);
    for (int64_t d = t.dim() - 1; d >= 0; d--) {
      if (++idx[(size_t)d] < t.size(d)) break;
      idx[(size_t)d] = 0;
    }
  }
  return std::vector<int64_t>(pos.begin(), pos.end());
}

at::Tensor fresh_values(Rng &r, const std::string &name, const at::Tensor &t, bool distinct) {
  std::vector<double> v = flat_values(t);
  at::ScalarType dt = t.scalar_type();
  if (index_like(name, t)) {  // a permutation keeps every index in range
    std::vector<int64_t> pos = reached(t);
    std::vector<double> picked;
    for (int64_t p : pos) picked.push_back(v[(size_t)p]);
    shuffle(picked, r);
    for (size_t k = 0; k < pos.size(); k++) v[(size_t)pos[k]] = picked[k];
  } else if (distinct && dt != at::kBool) {
    int64_t n = (int64_t)v.size() + 8;
    std::vector<double> pool;
    for (int64_t k = -n; k <= n; k++)
      if (dt != at::kByte || k >= 0) pool.push_back(is_float(dt) ? (double)k / 4.0 : (double)k);
    shuffle(pool, r);
    for (size_t k = 0; k < v.size(); k++) v[k] = pool[k];
  } else {
    for (double &x : v) x = gen_elem(r, dt, x);
  }
  return with_values(v, dt, t);
}

at::Tensor convert(Rng &r, const std::string &name, const at::Tensor &t, at::ScalarType to) {
  std::vector<double> v = flat_values(t);
  at::ScalarType from = t.scalar_type();
  for (double &x : v) {
    if (to == at::kBool) x = from == at::kBool ? x : (double)rnd(r, 0, 1);
    else if (is_float(to) || index_like(name, t)) continue;  // exact in every float dtype
    else if (is_float(from) || from == at::kBool) x = gen_elem(r, to, x);
    else if (to == at::kByte) x = std::fabs(x);
  }
  return with_values(v, to, t);
}

// Random elements (junk a tensor does not reach is random too).
at::Tensor junk(Rng &r, at::IntArrayRef sizes, at::ScalarType dt) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v((size_t)n);
  for (double &x : v) x = gen_elem(r, dt, 0);
  return at::tensor(at::ArrayRef<double>(v), at::kDouble).to(dt).clone().view(sizes);
}

std::vector<int64_t> dense_strides(at::IntArrayRef sizes) {
  std::vector<int64_t> st(sizes.size());
  int64_t s = 1;
  for (size_t d = sizes.size(); d-- > 0;) { st[d] = s; s *= std::max<int64_t>(sizes[d], 1); }
  return st;
}

// Same logical values, another storage layout; undefined when not applicable.
at::Tensor relayout(Rng &r, const at::Tensor &t, const std::string &kind) {
  if (kind == "transposed storage") {
    if (t.dim() < 2) return {};
    std::vector<int64_t> rev;
    for (int64_t d = t.dim() - 1; d >= 0; d--) rev.push_back(d);
    at::Tensor base = at::empty(t.permute(rev).sizes(), t.options());
    base.copy_(t.permute(rev));
    return base.permute(rev);
  }
  if (kind == "step slice") {
    if (t.dim() < 1) return {};
    int64_t d = rnd(r, 0, t.dim() - 1);
    if (t.size(d) == 0) return {};
    std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
    sizes[(size_t)d] *= 2;
    at::Tensor view = junk(r, sizes, t.scalar_type()).slice(d, 0, sizes[(size_t)d], 2);
    view.copy_(t);
    return view;
  }
  if (kind == "storage offset") {
    int64_t k = rnd(r, 1, 3), tail = rnd(r, 0, 2);
    at::Tensor flat = junk(r, {k + t.numel() + tail}, t.scalar_type());
    at::Tensor view = flat.as_strided(t.sizes(), dense_strides(t.sizes()), k);
    view.copy_(t);
    return view;
  }
  if (kind == "channels_last") {
    if (t.dim() != 4) return {};
    at::Tensor out = at::empty_like(t, at::MemoryFormat::ChannelsLast);
    out.copy_(t);
    return out;
  }
  return {};
}

const char *const kLayouts[] = {"transposed storage", "step slice", "storage offset", "channels_last"};

// The tensors of a case's arguments: plain tensors and list elements.
struct Slot {
  size_t arg;
  long elem;  // -1: the argument itself
  std::string label;
  bool written;
};

std::vector<Slot> slots(const std::vector<Arg> &args, const c10::FunctionSchema &schema) {
  std::vector<Slot> s;
  for (size_t a = 0; a < args.size(); a++) {
    bool w = schema.arguments()[a].alias_info() && schema.arguments()[a].alias_info()->isWrite();
    if (args[a].v.kind == Kind::Tensor) s.push_back({a, -1, args[a].name, w});
    if (args[a].v.kind == Kind::Tensors)
      for (size_t e = 0; e < args[a].v.elems.size(); e++)
        if (args[a].v.elems[e].kind == Kind::Tensor)
          s.push_back({a, (long)e, args[a].name + "." + std::to_string(e), w});
  }
  return s;
}

Value &slot_value(std::vector<Arg> &args, const Slot &s) {
  return s.elem < 0 ? args[s.arg].v : args[s.arg].v.elems[(size_t)s.elem];
}

const at::Tensor &slot_tensor(const std::vector<Arg> &args, const Slot &s) {
  return s.elem < 0 ? args[s.arg].v.t : args[s.arg].v.elems[(size_t)s.elem].t;
}

int64_t storage_elems(const std::vector<Arg> &args) {
  int64_t n = 0;
  auto add = [&](const Value &v) {
    if (v.kind == Kind::Tensor || v.kind == Kind::Storage) n += (int64_t)(v.t.storage().nbytes() / v.t.element_size());
  };
  for (const auto &a : args) {
    add(a.v);
    for (const auto &e : a.v.elems) add(e);
  }
  return n;
}

std::string key_of(const std::vector<Arg> &args) {
  std::string k;
  for (const auto &a : args) k += a.name + " " + format_value(a.v) + (a.defaulted ? " d" : "") + "\n";
  return k;
}

// A candidate: makes one variant (false when it does not apply).
using Maker = std::function<bool(Rng &, std::vector<Arg> &, std::string &)>;

class Generator {
 public:
  Generator(const Case &seed, const std::string &salt)
      : seed_(seed), salt_(salt), schema_(op_schema(seed.op)), slots_(slots(seed.args, schema_)) {}

  std::vector<Variant> run(size_t max_variants) {
    std::vector<std::vector<Maker>> cats(10);
    Rng order(fnv(salt_ + seed_.name));
    values(cats[0]);
    dtypes(cats[1], cats[5], order);
    layouts(cats[2]);
    plain_args(cats[3]);
    shapes(cats[4]);
    expands(cats[6]);
    broadcasts(cats[6]);
    combos(cats[7], order);
    specials(cats[8]);
    outs(cats[9]);
    for (auto &c : cats) shuffle(c, order);
    std::vector<Variant> out;
    std::set<std::string> seen{key_of(seed_.args)};
    int64_t limit = std::max<int64_t>(100, storage_elems(seed_.args) * 5 / 2);
    // Round robin over the categories: the first variants cover every kind.
    for (size_t round = 0; out.size() < max_variants; round++) {
      bool any = false;
      for (size_t c = 0; c < cats.size() && out.size() < max_variants; c++) {
        if (round >= cats[c].size()) continue;
        any = true;
        Rng r(fnv(salt_ + seed_.name + "/" + std::to_string(c) + "/" + std::to_string(round)));
        Variant v{seed_.args, ""};
        try {
          if (!cats[c][round](r, v.args, v.what)) continue;
        } catch (const c10::Error &) {
          continue;  // a geometry the maker cannot build from this seed
        }
        if (storage_elems(v.args) > limit || unsafe(v.args) || !seen.insert(key_of(v.args)).second) continue;
        out.push_back(std::move(v));
      }
      if (!any) break;
    }
    return out;
  }

 private:
  const Case &seed_;
  std::string salt_;
  const c10::FunctionSchema &schema_;
  std::vector<Slot> slots_;

  // Variants not worth recording (1.13 itself misbehaves): its _local_scalar_dense reads an
  // element of a zero-size tensor (a crash or garbage); a bfloat16
  // transposed convolution goes through mkldnn on an AVX-512 machine, which
  // computes a regular convolution instead (a machine-dependent 1.13 bug).
  bool unsafe(const std::vector<Arg> &args) const {
    if (seed_.op == "aten::_local_scalar_dense")
      return args[0].v.kind == Kind::Tensor && args[0].v.t.numel() == 0;
    // nll_loss_backward does not bound-check its targets in 1.13 and writes
    // past its result for one out of range.
    if (seed_.op == "aten::nll_loss_backward") {
      const Value &self = args[1].v, &target = args[2].v, &ignore = args[5].v;
      if (self.kind != Kind::Tensor || target.kind != Kind::Tensor || self.t.dim() < 1) return false;
      int64_t classes = self.t.size(-1);
      at::Tensor tv = target.t.to(at::kLong).reshape(-1);
      for (int64_t k = 0; k < tv.numel(); k++) {
        int64_t c = tv[k].item<int64_t>();
        if (c != ignore.i && (c < 0 || c >= classes)) return true;
      }
      return false;
    }
    if (seed_.op == "aten::convolution" || seed_.op == "aten::convolution_backward") {
      bool bf16 = false, transposed = false;
      for (const auto &a : args) {
        if (a.v.kind == Kind::Tensor && a.v.t.scalar_type() == at::kBFloat16) bf16 = true;
        if (a.name == "transposed" && a.v.kind == Kind::Bool) transposed = a.v.i != 0;
      }
      return bf16 && transposed;
    }
    return false;
  }

  bool optional_arg(size_t a) const { return schema_.arguments()[a].type()->kind() == c10::TypeKind::OptionalType; }

  // The tensors of the dtype group that dtype variants convert together:
  // those sharing the first non-index tensor's dtype (a bool condition or an
  // int64 target keeps its own).
  std::vector<Slot> main_group() const {
    std::vector<Slot> g;
    const at::Tensor *first = nullptr;
    for (const auto &s : slots_) {
      const at::Tensor &t = slot_tensor(seed_.args, s);
      if (!first && !index_like(seed_.args[s.arg].name, t)) first = &t;
      if (first && t.scalar_type() == first->scalar_type() && !index_like(seed_.args[s.arg].name, t)) g.push_back(s);
    }
    return g;
  }

  void values(std::vector<Maker> &out) {
    if (slots_.empty() && !has_storage()) return;
    bool distinct = distinct_op(seed_.op);
    out.push_back([this, distinct](Rng &r, std::vector<Arg> &args, std::string &what) {
      for (const auto &s : slots_) {
        Value &v = slot_value(args, s);
        v.t = fresh_values(r, args[s.arg].name, v.t, distinct);
      }
      for (auto &a : args)
        if (a.v.kind == Kind::Storage) a.v.t = fresh_values(r, a.name, a.v.t, false);
      what = "new values";
      return true;
    });
  }

  bool has_storage() const {
    for (const auto &a : seed_.args)
      if (a.v.kind == Kind::Storage) return true;
    return false;
  }

  void dtypes(std::vector<Maker> &all, std::vector<Maker> &mix, Rng &order) {
    std::vector<Slot> group = main_group();
    if (group.empty()) return;
    at::ScalarType cur = slot_tensor(seed_.args, group[0]).scalar_type();
    std::vector<at::ScalarType> others;
    for (auto d : kDtypes)
      if (d != cur) others.push_back(d);
    shuffle(others, order);
    for (size_t k = 0; k < 4 && k < others.size(); k++) {
      at::ScalarType to = others[k];
      all.push_back([group, to](Rng &r, std::vector<Arg> &args, std::string &what) {
        std::string names;
        for (const auto &s : group) {
          Value &v = slot_value(args, s);
          v.t = convert(r, args[s.arg].name, v.t, to);
          names += (names.empty() ? "" : ", ") + s.label;
        }
        for (auto &a : args)  // a Storage holds self's elements: same dtype
          if (a.v.kind == Kind::Storage) a.v.t = convert(r, a.name, a.v.t, to);
        what = std::string(dtype_name(to)) + " " + names;
        return true;
      });
    }
    // set_ reinterprets a source of another dtype without a check in 1.13 (a
    // Python-level TypedStorage would refuse it): no mixes there.
    if (has_storage() || slots_.size() < 2 || seed_.op.rfind("aten::set_", 0) == 0) return;
    for (size_t k = 0; k < 4; k++) {
      Slot s = slots_[(size_t)rnd(order, 0, (int64_t)slots_.size() - 1)];
      at::ScalarType to = others[(size_t)rnd(order, 0, (int64_t)others.size() - 1)];
      mix.push_back([s, to](Rng &r, std::vector<Arg> &args, std::string &what) {
        Value &v = slot_value(args, s);
        v.t = convert(r, args[s.arg].name, v.t, to);
        what = "dtype mix: " + s.label + " " + dtype_name(to);
        return true;
      });
    }
  }

  void layouts(std::vector<Maker> &out) {
    for (const auto &s : slots_)
      for (const char *kind : kLayouts)
        out.push_back([s, kind](Rng &r, std::vector<Arg> &args, std::string &what) {
          Value &v = slot_value(args, s);
          at::Tensor t = relayout(r, v.t, kind);
          if (!t.defined()) return false;
          v.t = t;
          what = s.label + " " + kind;
          return true;
        });
  }

  void expands(std::vector<Maker> &out) {
    for (const auto &s : slots_) {
      if (s.written) continue;  // an overlapping destination is its own error
      out.push_back([s](Rng &r, std::vector<Arg> &args, std::string &what) {
        Value &v = slot_value(args, s);
        std::vector<int64_t> dims;
        for (int64_t d = 0; d < v.t.dim(); d++)
          if (v.t.size(d) > 1) dims.push_back(d);
        if (dims.empty()) return false;
        int64_t d = dims[(size_t)rnd(r, 0, (int64_t)dims.size() - 1)];
        v.t = v.t.narrow(d, 0, 1).clone().expand(v.t.sizes());
        what = s.label + " expanded (stride 0) along dim " + std::to_string(d);
        return true;
      });
    }
  }

  void shapes(std::vector<Maker> &out) {
    if (slots_.empty()) return;
    // zero-size: the first tensor's dim d set to 0 in every tensor of the same
    // rank and size there (size-1 dims broadcast to it).
    for (int which = 0; which < 2; which++)
      out.push_back([this, which](Rng &, std::vector<Arg> &args, std::string &what) {
        const at::Tensor &first = slot_value(args, slots_[0]).t;
        if (first.dim() == 0) return false;
        int64_t d = which ? first.dim() - 1 : 0, size = first.size(d), rank = first.dim();
        if (size == 0 || (which && first.dim() == 1)) return false;
        for (const auto &s : slots_) {
          Value &v = slot_value(args, s);
          if (v.t.dim() != rank || v.t.size(d) != size) continue;
          std::vector<int64_t> sizes(v.t.sizes().begin(), v.t.sizes().end());
          sizes[(size_t)d] = 0;
          v.t = at::empty(sizes, v.t.options());
        }
        what = "zero-size dim " + std::to_string(d);
        return true;
      });
    // 0-dim: every tensor, or one of them, becomes 0-dim (its first element).
    auto zero_dim = [](Rng &r, Value &v) {
      if (v.t.numel() > 0) v.t = v.t.reshape(-1)[0].clone();
      else v.t = junk(r, {1}, v.t.scalar_type()).reshape({});
    };
    out.push_back([this, zero_dim](Rng &r, std::vector<Arg> &args, std::string &what) {
      bool changed = false;
      for (const auto &s : slots_) {
        Value &v = slot_value(args, s);
        if (v.t.dim() == 0) continue;
        zero_dim(r, v);
        changed = true;
      }
      what = "0-dim tensors";
      return changed;
    });
    if (slots_.size() > 1)
      for (const auto &s : slots_)
        out.push_back([s, zero_dim](Rng &r, std::vector<Arg> &args, std::string &what) {
          Value &v = slot_value(args, s);
          if (v.t.dim() == 0) return false;
          zero_dim(r, v);
          what = "0-dim " + s.label;
          return true;
        });
  }

  void combos(std::vector<Maker> &out, Rng &order) {
    if (slots_.empty()) return;
    std::vector<Slot> group = main_group();
    for (int k = 0; k < 3; k++) {
      at::ScalarType to = kDtypes[(size_t)rnd(order, 0, 9)];
      Slot s = slots_[(size_t)rnd(order, 0, (int64_t)slots_.size() - 1)];
      const char *kind = kLayouts[rnd(order, 0, 3)];
      bool distinct = distinct_op(seed_.op);
      out.push_back([group, to, s, kind, distinct](Rng &r, std::vector<Arg> &args, std::string &what) {
        for (const auto &g : group) {
          Value &v = slot_value(args, g);
          v.t = convert(r, args[g.arg].name, v.t, to);
          v.t = fresh_values(r, args[g.arg].name, v.t, distinct);
        }
        Value &v = slot_value(args, s);
        at::Tensor t = relayout(r, v.t, kind);
        if (!t.defined()) return false;
        v.t = t;
        for (auto &a : args)
          if (a.v.kind == Kind::Storage) a.v.t = convert(r, a.name, a.v.t, to);
        what = std::string("new ") + dtype_name(to) + " values, " + s.label + " " + kind;
        return true;
      });
    }
  }

  // Broadcasting: one tensor narrowed to size 1 along a dim, or without its
  // leading dim (its first slice).
  void broadcasts(std::vector<Maker> &out) {
    if (slots_.size() < 2) return;
    for (const auto &s : slots_) {
      if (s.written) continue;
      out.push_back([s](Rng &r, std::vector<Arg> &args, std::string &what) {
        Value &v = slot_value(args, s);
        std::vector<int64_t> dims;
        for (int64_t d = 0; d < v.t.dim(); d++)
          if (v.t.size(d) > 1) dims.push_back(d);
        if (dims.empty()) return false;
        if (rnd(r, 0, 1) && v.t.dim() > 1 && v.t.size(0) > 0) {
          v.t = v.t.select(0, 0).clone();
          what = s.label + " without its leading dim (broadcast)";
        } else {
          int64_t d = dims[(size_t)rnd(r, 0, (int64_t)dims.size() - 1)];
          v.t = v.t.narrow(d, 0, 1).clone();
          what = s.label + " of size 1 along dim " + std::to_string(d) + " (broadcast)";
        }
        return true;
      });
    }
  }

  // Non-finite and signed-zero elements in the floating inputs.
  void specials(std::vector<Maker> &out) {
    // mkldnn (float32 and bfloat16 convolutions) combines infinities in its
    // own order: not something to pin down.
    if (seed_.op.find("conv") != std::string::npos) return;
    bool any = false;
    for (const auto &s : slots_) any |= is_float(slot_tensor(seed_.args, s).scalar_type()) && slot_tensor(seed_.args, s).numel() > 0;
    if (!any) return;
    out.push_back([this](Rng &r, std::vector<Arg> &args, std::string &what) {
      static const double kSpecial[] = {INFINITY, -INFINITY, NAN, -0.0};
      for (const auto &s : slots_) {
        Value &v = slot_value(args, s);
        if (!is_float(v.t.scalar_type()) || v.t.numel() == 0) continue;
        std::vector<double> vals = flat_values(v.t);
        std::vector<int64_t> pos = reached(v.t);
        for (int64_t k = rnd(r, 1, 2); k > 0; k--)
          vals[(size_t)pos[(size_t)rnd(r, 0, (int64_t)pos.size() - 1)]] = kSpecial[rnd(r, 0, 3)];
        v.t = with_values(vals, v.t.scalar_type(), v.t);
      }
      what = "inf/nan/-0.0 elements";
      return true;
    });
  }

  // out= arguments of another size (resized by the op) or of no elements.
  void outs(std::vector<Maker> &out) {
    for (const auto &s : slots_) {
      if (!s.written || seed_.args[s.arg].name != "out") continue;
      out.push_back([s](Rng &r, std::vector<Arg> &args, std::string &what) {
        Value &v = slot_value(args, s);
        int64_t n = rnd(r, 0, 1) ? 0 : rnd(r, 1, 5);
        v.t = junk(r, {n}, v.t.scalar_type());
        what = s.label + " of size " + std::to_string(n) + " (resized)";
        return true;
      });
    }
  }

  void plain_args(std::vector<Maker> &out);
};

// ---- the plain (non-tensor) arguments ------------------------------------------

int64_t rank_of(const std::vector<Arg> &args, const std::string &op) {
  for (const auto &a : args) {
    if (a.v.kind == Kind::Tensor) return a.v.t.dim();
    if (a.v.kind == Kind::Tensors && !a.v.elems.empty() && a.v.elems[0].kind == Kind::Tensor)
      return a.v.elems[0].t.dim() + (op == "aten::stack" ? 1 : 0);
  }
  return -1;
}

// A random shape whose element count is n (one entry may be -1).
std::vector<int64_t> factor_shape(Rng &r, int64_t n, bool allow_infer) {
  std::vector<int64_t> shape;
  int64_t rest = n;
  int64_t nd = rnd(r, 1, 3);
  for (int64_t d = 0; d + 1 < nd && rest > 1; d++) {
    std::vector<int64_t> divs;
    for (int64_t k = 1; k <= rest; k++)
      if (rest % k == 0) divs.push_back(k);
    int64_t f = divs[(size_t)rnd(r, 0, (int64_t)divs.size() - 1)];
    shape.push_back(f);
    rest /= f;
  }
  shape.push_back(n == 0 ? 0 : rest);
  shuffle(shape, r);
  if (allow_infer && n > 0 && rnd(r, 0, 1)) shape[(size_t)rnd(r, 0, (int64_t)shape.size() - 1)] = -1;
  return shape;
}

void Generator::plain_args(std::vector<Maker> &out) {
  const std::string op = seed_.op;
  bool factory = slots_.empty() && !has_storage();
  for (size_t a = 0; a < seed_.args.size(); a++) {
    const Arg &arg = seed_.args[a];
    const std::string &name = arg.name;
    const Value &v = arg.v;
    bool optional = optional_arg(a);
    auto add = [&](std::function<bool(Rng &, Value &, std::string &)> f) {
      out.push_back([a, f](Rng &r, std::vector<Arg> &args, std::string &what) {
        args[a].defaulted = false;
        return f(r, args[a].v, what);
      });
    };
    auto set_none = [name](Rng &, Value &x, std::string &what) {
      x = Value();
      what = name + "=None";
      return true;
    };
    // Scalars: the other kinds of the same number, another value, None.
    if (v.kind == Kind::ScalarInt || v.kind == Kind::ScalarFloat || v.kind == Kind::ScalarBool) {
      double num = v.kind == Kind::ScalarFloat ? v.d : (double)v.i;
      for (Kind k : {Kind::ScalarInt, Kind::ScalarFloat, Kind::ScalarBool}) {
        if (k == v.kind || std::isnan(num) || std::isinf(num)) continue;
        add([k, num, name](Rng &, Value &x, std::string &what) {
          x.kind = k;
          x.i = k == Kind::ScalarBool ? num != 0 : (int64_t)std::llround(num);
          x.d = num;
          what = name + (k == Kind::ScalarInt ? " as an int" : k == Kind::ScalarFloat ? " as a float" : " as a bool");
          return true;
        });
      }
      add([name](Rng &r, Value &x, std::string &what) {
        x.kind = rnd(r, 0, 1) ? Kind::ScalarInt : Kind::ScalarFloat;
        x.i = rnd(r, -3, 3);
        x.d = (double)rnd(r, -24, 24) / 8.0;
        what = "another " + name;
        return true;
      });
      if (optional) add(set_none);
    } else if (v.kind == Kind::None && optional && schema_.arguments()[a].type()->str() == "Scalar?") {
      add([name](Rng &r, Value &x, std::string &what) {
        x.kind = rnd(r, 0, 1) ? Kind::ScalarInt : Kind::ScalarFloat;
        x.i = rnd(r, -2, 2);
        x.d = (double)rnd(r, -16, 16) / 8.0;
        what = name + " given";
        return true;
      });
    }
    // dtype= and friends.
    if (v.kind == Kind::Dtype || (v.kind == Kind::None && (name == "dtype" || name == "input_dtype"))) {
      for (int k = 0; k < 2; k++)
        add([name](Rng &r, Value &x, std::string &what) {
          x.kind = Kind::Dtype;
          x.dtype = kDtypes[rnd(r, 0, 9)];
          what = name + "=" + dtype_name(x.dtype);
          return true;
        });
      if (v.kind == Kind::Dtype && optional) add(set_none);
    }
    if (v.kind == Kind::MemoryFormat || (v.kind == Kind::None && name == "memory_format")) {
      for (int64_t m = 0; m < 3; m++)
        if (v.kind != Kind::MemoryFormat || v.i != m)
          add([name, m](Rng &, Value &x, std::string &what) {
            x.kind = Kind::MemoryFormat;
            x.i = m;
            what = name + " " + (m == 0 ? "contiguous_format" : m == 1 ? "preserve_format" : "channels_last");
            return true;
          });
      if (v.kind == Kind::MemoryFormat && optional) add(set_none);
    }
    // dims: the equivalent of the other sign, and one out of range.
    bool dim_name = name == "dim" || name == "dim0" || name == "dim1" || name == "start_dim" || name == "end_dim";
    int64_t rank = rank_of(seed_.args, op);
    if (dim_name && v.kind == Kind::Int && rank >= 0) {
      int64_t wrap = std::max<int64_t>(rank, 1);
      if (v.i >= -wrap && v.i < wrap)
        add([name, wrap](Rng &, Value &x, std::string &what) {
          x.i = x.i < 0 ? x.i + wrap : x.i - wrap;
          what = name + "=" + std::to_string(x.i);
          return true;
        });
      add([name, wrap](Rng &r, Value &x, std::string &what) {
        x.i = rnd(r, 0, 1) ? wrap : -wrap - 1;
        what = name + " out of range";
        return true;
      });
    }
    if (name == "dim" && v.kind == Kind::Ints && rank > 1)
      add([name, rank](Rng &r, Value &x, std::string &what) {
        std::vector<int64_t> all;
        for (int64_t d = 0; d < rank; d++) all.push_back(rnd(r, 0, 1) ? d : d - rank);
        shuffle(all, r);
        all.resize((size_t)rnd(r, 1, rank));
        x.kind = Kind::Ints;
        x.ints = all;
        what = name + " over several dims";
        return true;
      });
    if ((name == "dim" || name == "dims") && v.kind == Kind::Ints && !v.ints.empty() && rank > 0) {
      add([name, rank](Rng &r, Value &x, std::string &what) {
        size_t k = (size_t)rnd(r, 0, (int64_t)x.ints.size() - 1);
        int64_t &d = x.ints[k];
        if (d < -rank || d >= rank) return false;
        d = d < 0 ? d + rank : d - rank;
        what = name + " with the other sign";
        return true;
      });
      if (optional) add(set_none);
    }
    if (v.kind == Kind::Bool && name != "pin_memory" && name != "non_blocking") {
      add([name](Rng &, Value &x, std::string &what) {
        x.i = !x.i;
        what = name + "=" + (x.i ? "True" : "False");
        return true;
      });
      if (optional) add(set_none);
    }
    if (v.kind == Kind::Float)
      add([name](Rng &r, Value &x, std::string &what) {
        double was = x.d;
        x.d = (double)rnd(r, 0, 4) / 4.0;
        what = name + "=" + repr(x.d);
        return x.d != was;
      });
    if (name == "reduction" && v.kind == Kind::Int)
      add([name](Rng &r, Value &x, std::string &what) {
        x.i = (x.i + rnd(r, 1, 2)) % 3;
        what = "reduction=" + std::to_string(x.i);
        return true;
      });
    if (name == "ignore_index" && v.kind == Kind::Int)
      add([this](Rng &r, Value &x, std::string &what) {
        for (const auto &s : slots_) {
          const at::Tensor &t = slot_tensor(seed_.args, s);
          if (seed_.args[s.arg].name != "target" || !index_like("target", t) || t.numel() == 0) continue;
          x.i = t.reshape(-1)[rnd(r, 0, t.numel() - 1)].item<int64_t>();
          what = "ignore_index=" + std::to_string(x.i) + " (a target class)";
          return true;
        }
        return false;
      });
    if (name == "index" && v.kind == Kind::Int && op == "aten::select.int")
      add([](Rng &r, Value &x, std::string &what) {
        x.i = rnd(r, -3, 3);
        what = "index=" + std::to_string(x.i);
        return true;
      });
    if ((name == "start" || name == "end") && op == "aten::slice.Tensor")
      add([name](Rng &r, Value &x, std::string &what) {
        if (rnd(r, 0, 3) == 0) { x = Value(); what = name + "=None"; return true; }
        x.kind = Kind::Int;
        x.i = rnd(r, -5, 5);
        what = name + "=" + std::to_string(x.i);
        return true;
      });
    if (name == "step" && v.kind == Kind::Int && op == "aten::slice.Tensor")
      add([](Rng &r, Value &x, std::string &what) {
        x.i = rnd(r, 1, 3);
        what = "step=" + std::to_string(x.i);
        return true;
      });
    // Shapes: factories and resize_ any small shape; view/reshape another
    // factorization of the element count; expand a broadcast of self.
    if ((name == "size" || name == "shape") && v.kind == Kind::Ints) {
      bool reshape = op == "aten::view" || op == "aten::reshape";
      if (factory && op != "aten::empty_strided") {
        for (int k = 0; k < 2; k++)
          add([](Rng &r, Value &x, std::string &what) {
            x.ints.clear();
            for (int64_t d = rnd(r, 0, 3); d > 0; d--) x.ints.push_back(rnd(r, 0, 4));
            what = "another size";
            return true;
          });
      } else if (op == "aten::resize_") {
        for (int k = 0; k < 2; k++)
          add([](Rng &r, Value &x, std::string &what) {
            x.ints.clear();
            for (int64_t d = rnd(r, 0, 3); d > 0; d--) x.ints.push_back(rnd(r, 0, 5));
            what = "another size";
            return true;
          });
      } else if (reshape && !slots_.empty()) {
        int64_t n = slot_tensor(seed_.args, slots_[0]).numel();
        for (int k = 0; k < 2; k++)
          add([n, name](Rng &r, Value &x, std::string &what) {
            x.ints = factor_shape(r, n, true);
            what = "another " + name;
            return true;
          });
      } else if (op == "aten::expand" && !slots_.empty()) {
        std::vector<int64_t> self(seed_.args[0].v.t.sizes().begin(), seed_.args[0].v.t.sizes().end());
        add([self](Rng &r, Value &x, std::string &what) {
          x.ints.clear();
          for (int64_t d = rnd(r, 0, 2); d > 0; d--) x.ints.push_back(rnd(r, 1, 3));
          for (int64_t s : self) x.ints.push_back(s == 1 ? rnd(r, 1, 3) : rnd(r, 0, 1) ? -1 : s);
          what = "another expanded size";
          return true;
        });
      }
    }
    // An optional tensor left out.
    if (v.kind == Kind::Tensor && optional) add(set_none);
  }
}

}  // namespace

std::vector<Variant> make_variants(const Case &seed, size_t max_variants, const std::string &salt) {
  return Generator(seed, salt).run(max_variants);
}

}  // namespace refgen
