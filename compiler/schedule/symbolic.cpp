#include "compiler/schedule/symbolic.h"

#include <algorithm>

#include <fmt/format.h>

namespace loom::schedule {

std::string firstAtom(const std::string& atoms) {
  const size_t b = atoms.find('{');
  const size_t e = atoms.find_first_of(",}", b == std::string::npos ? 0 : b + 1);
  if (b == std::string::npos || e == std::string::npos) return "";
  return atoms.substr(b + 1, e - b - 1);
}

bool symbolOnlyWhole(const ir::Fusion& f, const std::string& s) {
  auto clean = [&](const ir::Value* v) {
    for (const Extent& e : v->shape()) {
      const auto es = e.symbols();
      if (std::find(es.begin(), es.end(), s) != es.end() && !(e == Extent::symbol(s))) return false;
    }
    return true;
  };
  for (const ir::Value* v : f.inputs())
    if (!clean(v)) return false;
  for (const auto& o : f.outputs())
    if (!clean(o.value)) return false;
  return true;
}

bool outermostInMemory(const std::vector<const ir::Value*>& values, const std::vector<TensorDesc>& descs,
                       const std::string& s) {
  for (size_t i = 0; i < descs.size() && i < values.size(); ++i) {
    const auto shape = values[i]->shape();
    const TensorDesc& d = descs[i];
    int64_t span = 0;  // what the other dims reach
    for (size_t j = 0; j < shape.size() && j < d.shape.size(); ++j)
      if (!(shape[j] == Extent::symbol(s))) span += (d.shape[j] - 1) * std::abs(d.strides[j]);
    for (size_t j = 0; j < shape.size() && j < d.shape.size(); ++j)
      if (shape[j] == Extent::symbol(s) && d.strides[j] != 0 && std::abs(d.strides[j]) <= span) return false;
  }
  return true;
}

bool names(const ir::Value* v, const std::string& s) {
  for (const Extent& e : v->shape())
    if (e == Extent::symbol(s)) return true;
  return false;
}

std::string indexBlocker(const ir::Fusion& f) {
  for (const ir::Op* op : f.ops())
    if (op->family() == ir::OpFamily::Iota || op->family() == ir::OpFamily::Random)
      return fmt::format("`{}` ({}) counts its elements with the sizes compiled in", op->name(),
                         op->output()->name());
  return "";
}

std::string sizeBlocker(const ir::Fusion& f, const std::vector<TensorDesc>& inputs,
                        const std::vector<TensorDesc>& outputs, const std::map<lower::Leaf, kir::Access>& loads,
                        const std::string& s) {
  if (std::string why = indexBlocker(f); !why.empty()) return why;
  for (const auto& [leaf, access] : loads) {
    const ir::Value* in = f.inputs()[static_cast<size_t>(leaf.input)];
    if (!leaf.strides.empty() && leaf.strides[0] != 0 && !names(in, s))
      return fmt::format("input `{}` moves along {} but does not name it", in->name(), s);
  }
  if (!outermostInMemory(f.inputs(), inputs, s) || !outermostInMemory(outputValues(f), outputs, s))
    return fmt::format("{} is not outermost in every tensor's memory", s);
  return "";
}

std::vector<const ir::Value*> outputValues(const ir::Fusion& f) {
  std::vector<const ir::Value*> outs;
  for (const auto& o : f.outputs()) outs.push_back(o.value);
  return outs;
}

std::vector<TensorDesc> descsWithSize(const std::vector<const ir::Value*>& values, std::vector<TensorDesc> descs,
                                      const std::string& s, int64_t value) {
  for (size_t i = 0; i < descs.size() && i < values.size(); ++i) {
    const auto shape = values[i]->shape();
    for (size_t d = 0; d < shape.size() && d < descs[i].shape.size(); ++d)
      if (shape[d] == Extent::symbol(s)) descs[i].shape[d] = value;
  }
  return descs;
}

std::vector<TensorDesc> descsForAnySize(const std::vector<const ir::Value*>& values, std::vector<TensorDesc> descs,
                                        const std::string& s) {
  descs = descsWithSize(values, std::move(descs), s, 0);
  for (TensorDesc& d : descs)
    for (size_t i = 0; i < d.shape.size() && i < d.strides.size(); ++i)
      if (d.shape[i] == 1) d.strides[i] = 0;
  return descs;
}

std::vector<kir::Param> paramsAtLargest(const ir::Fusion& f, const std::vector<TensorDesc>& inputs,
                                        const std::vector<TensorDesc>& outputs, const std::string& s, int64_t max) {
  return kir::fusionParams(f, descsWithSize(f.inputs(), inputs, s, max), descsWithSize(outputValues(f), outputs, s, max));
}

int64_t largestFitting(int64_t n, const std::function<bool(int64_t)>& fits) {
  constexpr int64_t kMost = int64_t{1} << 50;
  int64_t hi = n;
  while (hi < kMost / 2 && fits(hi * 2)) hi *= 2;
  for (int64_t step = hi; step > 0; step /= 2)
    while (hi + step <= kMost && fits(hi + step)) hi += step;
  return hi;
}

}  // namespace loom::schedule
