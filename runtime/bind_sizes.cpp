#include "runtime/bind_sizes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>
#include <map>
#include <set>

#include "ir/error.h"

namespace loom {

namespace {

std::string givenType(DType t, const std::vector<int64_t>& shape) {
  return fmt::format("{}[{}]", dtypeName(t), fmt::join(shape, ", "));
}

// The one symbol `e` is a coefficient times (S, S/k, k*S), if any.
std::optional<std::string> soleSymbol(const Extent& e) {
  if (e.powers().size() != 1 || e.powers()[0].second != 1 || e.num() == 0) return std::nullopt;
  return e.powers()[0].first;
}

// Evaluates `e`, adding `where()` to the error when it is not a whole number (made only then:
// every new input signature binds every extent of the fusion).
template <class Where>
int64_t evaluateAt(const Extent& e, const Bindings& b, const Where& where) {
  try {
    return e.evaluate(b);
  } catch (const Error& err) {
    fail("{}: {}", where(), err.what());
  }
}

// Every tensor's element count and bytes, computed without overflow: a count past 2^63 - 1, or
// bytes past kMaxTensorBytes (the address space a process has), is a user error naming it.
void checkSize(const ir::Value* v, const Bindings& b) {
  __int128 count = 1;
  for (const auto& a : v->axes()) {
    count *= a.broadcast ? 1 : a.extent.evaluate(b);
    if (count > std::numeric_limits<int64_t>::max()) count = static_cast<__int128>(std::numeric_limits<int64_t>::max()) + 1;
  }
  const auto shown = [&] { return fmt::format("`{}` {} = {}[{}]", v->name(), v->typeString(), dtypeName(v->dtype()),
                                              fmt::join(evalShape(v, b), ", ")); };
  LOOM_USER_CHECK(count <= std::numeric_limits<int64_t>::max(), "{} has more than 2^63 - 1 elements, which no "
                  "size in loom (or on a GPU) can count; give smaller sizes", shown());
  const __int128 bytes = count * dtypeBytes(v->dtype());
  LOOM_USER_CHECK(bytes <= kMaxTensorBytes, "{} would take {} bytes, past the {} bytes (2^47, 128 TiB) a process can "
                  "address; give smaller sizes", shown(), static_cast<unsigned long long>(bytes), kMaxTensorBytes);
}

}  // namespace

std::vector<int64_t> evalShape(const ir::Value* v, const Bindings& b) {
  std::vector<int64_t> shape;
  for (const auto& a : v->axes()) shape.push_back(a.broadcast ? 1 : a.extent.evaluate(b));
  return shape;
}

std::vector<TensorDesc> describeInputs(const ir::Fusion& f, const Bindings& sizes,
                                       const std::map<std::string, std::vector<int>>& orders) {
  std::vector<TensorDesc> descs;
  for (const ir::Value* v : f.inputs()) {
    TensorDesc d{v->dtype(), evalShape(v, sizes), {}, 16};
    auto it = orders.find(v->name());
    d.strides = it == orders.end() ? contiguousStrides(d.shape) : stridesForOrder(d.shape, it->second);
    descs.push_back(d);
  }
  return descs;
}

Bindings bindSizes(const ir::Fusion& f, const std::vector<HostTensor>& inputs,
                   const Bindings& given) {
  std::vector<DType> dtypes;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    LOOM_USER_CHECK(inputs[i].storage() != nullptr, "input {} of fusion `{}` is a null tensor", i,
                    f.name());
    dtypes.push_back(inputs[i].dtype());
    shapes.push_back(inputs[i].shape());
  }
  return bindShapes(f, dtypes, shapes, given);
}

Bindings bindShapes(const ir::Fusion& f, const std::vector<DType>& dtypes,
                    const std::vector<std::vector<int64_t>>& shapes, const Bindings& given) {
  const auto& fin = f.inputs();
  if (shapes.size() != fin.size()) {
    std::string want;
    for (const ir::Value* v : fin) want += fmt::format("{}`{}` {}", want.empty() ? "" : ", ", v->name(), v->typeString());
    fail("fusion `{}` takes {} input{} ({}) but {} were given", f.name(), fin.size(),
         fin.size() == 1 ? "" : "s", want, shapes.size());
  }
  for (size_t i = 0; i < fin.size(); ++i) {
    const ir::Value* v = fin[i];
    const int rank = static_cast<int>(shapes[i].size());
    LOOM_USER_CHECK(dtypes[i] == v->dtype() && rank == v->rank(),
                    "input `{}` of fusion `{}` must be {} but a {} tensor was given{}", v->name(),
                    f.name(), v->typeString(), givenType(dtypes[i], shapes[i]),
                    dtypes[i] != v->dtype() ? fmt::format(" (cast it to {})", dtypeName(v->dtype()))
                                            : fmt::format(" (rank {}, not {})", rank, v->rank()));
  }

  Bindings b = given;
  std::map<std::string, std::string> source;  // symbol -> where its value came from
  for (const auto& [k, val] : given) {
    LOOM_USER_CHECK(val >= 0, "size {}={} is negative", k, val);
    source[k] = "given";
  }
  // Bind: one-symbol extents determine their symbol.
  for (size_t i = 0; i < fin.size(); ++i) {
    const ir::Value* v = fin[i];
    for (int d = 0; d < v->rank(); ++d) {
      const ir::Axis& a = v->axis(static_cast<size_t>(d));
      auto sym = soleSymbol(a.extent);
      if (a.broadcast || !sym || b.count(*sym)) continue;
      const int64_t size = shapes[i][static_cast<size_t>(d)];
      // size = num/den * S  =>  S = size * den / num.
      __int128 s = static_cast<__int128>(size) * a.extent.den();
      LOOM_USER_CHECK(s % a.extent.num() == 0,
                      "input `{}` dim {} is {} but the fusion needs {}, which is never {} for a "
                      "whole {}", v->name(), d, size, a.extent.str(), size, *sym);
      b[*sym] = static_cast<int64_t>(s / a.extent.num());
      source[*sym] = fmt::format("from input `{}` dim {}", v->name(), d);
    }
  }
  // Check every input extent against the sizes given.
  for (size_t i = 0; i < fin.size(); ++i) {
    const ir::Value* v = fin[i];
    for (int d = 0; d < v->rank(); ++d) {
      const ir::Axis& a = v->axis(static_cast<size_t>(d));
      const int64_t size = shapes[i][static_cast<size_t>(d)];
      if (a.broadcast) {
        LOOM_USER_CHECK(size == 1, "input `{}` dim {} is {} but it is a broadcast dim of {}, "
                        "which must have size 1", v->name(), d, size, v->typeString());
        continue;
      }
      for (const auto& sym : a.extent.symbols())
        LOOM_USER_CHECK(b.count(sym), "size `{}` is not known: input `{}` dim {} has extent {}, "
                        "which does not determine it alone; give {} (e.g. {}=64) or add an input "
                        "dim of extent {}", sym, v->name(), d, a.extent.str(), sym, sym, sym);
      const int64_t want = evaluateAt(a.extent, b, [&] { return fmt::format("input `{}` dim {}", v->name(), d); });
      if (want == size) continue;
      std::string why;
      for (const auto& sym : a.extent.symbols())
        why += fmt::format("{}{}={} ({})", why.empty() ? "" : ", ", sym, b.at(sym), source[sym]);
      if (a.extent.isConstant())
        fail("input `{}` dim {} is {} but the fusion needs {} ({} is {})", v->name(), d, size,
             want, v->name(), v->typeString());
      else if (soleSymbol(a.extent) && a.extent.num() == 1 && a.extent.den() == 1)
        fail("input `{}` dim {} is {} but the fusion needs {}", v->name(), d, size, why);
      else
        fail("input `{}` dim {} is {} but the fusion needs {} = {} with {}", v->name(), d, size,
             a.extent.str(), want, why);
    }
  }
  // Every symbol used anywhere must be known now (reshape targets, slices, `full`).
  auto need = [&](const Extent& e, const auto& where) {
    for (const auto& [sym, power] : e.powers())
      LOOM_USER_CHECK(b.count(sym), "size `{}` is not known: {} uses it but no input determines "
                      "it; give it (e.g. {}=64)", sym, where(), sym);
    (void)evaluateAt(e, b, where);  // whole numbers only (C/32 with C=100 fails)
  };
  const std::vector<const ir::Value*> values = f.values();
  for (const ir::Value* v : values)
    for (const auto& a : v->axes()) need(a.extent, [&] { return fmt::format("`{}` {}", v->name(), v->typeString()); });
  for (const ir::Value* v : values) checkSize(v, b);
  for (const ir::Op* op : f.ops())
    if (const auto* s = std::get_if<ir::SliceAttrs>(&op->attrs())) {
      auto where = [&] { return fmt::format("the slice producing `{}`", op->output()->name()); };
      for (const auto& e : s->starts) need(e, where);
      for (const auto& e : s->stops) need(e, where);
    }
  return b;
}

}  // namespace loom
