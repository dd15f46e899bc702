// LOOM_TUNE_SYMBOLIC for the reduction scheduler: the reduced count becomes a kernel parameter
// where the outermost reduced atom is a size symbol that every tensor names as a whole dim,
// outermost in memory (a backward pass's weight gradients summed over the batch N, an LSTM
// cell's bias gradient over B, batch statistics over {N, H, W}). Each thread's loop over its
// share of the elements runs to the count read at run time; the grid, the split and the
// threads stay the class's, chosen from the count's power of two (schedule/reduction/reduction.cpp), so
// every count of that class shares the kernel (its key is its kernel IR: compile.cpp
// symbolicClass).
#include <fmt/format.h>

#include "compiler/schedule/reduction/reduction.h"
#include "compiler/schedule/symbolic.h"

namespace loom::schedule {

namespace {

using Wide = __int128;

// Why a kernel reading `loads` (strides over its rows' then its reduced axes) may not take `s`,
// its first reduced axis's atom, at run time: an input that moves along that axis without naming
// `s` (its extent would not follow), or a tensor where `s` is not outermost in memory.
std::string reducedSizeBlocker(const ir::Fusion& f, const std::vector<TensorDesc>& inputs, const ReductionKernel& r,
                               const std::string& s) {
  if (std::string why = indexBlocker(f); !why.empty()) return why;
  const size_t axis = r.k.outer_shape.size();
  for (const auto& [leaf, access] : r.k.load_access) {
    const ir::Value* in = f.inputs()[static_cast<size_t>(leaf.input)];
    if (axis < leaf.strides.size() && leaf.strides[axis] != 0 && !names(in, s))
      return fmt::format("input `{}` moves along {} but does not name it", in->name(), s);
  }
  if (!outermostInMemory(f.inputs(), inputs, s) || !outermostInMemory(outputValues(f), r.k.outputs, s))
    return fmt::format("{} is not outermost in every tensor's memory", s);
  return "";
}

}  // namespace

std::string reducedSizeCandidate(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                                 const ReductionKernel& r, std::string* why_not) {
  const RowKernel& k = r.k;
  const std::string s = firstAtom(k.red_atoms);
  auto it = sizes.find(s);
  if (s.empty() || it == sizes.end() || it->second < 2 || k.red_shape.empty() || k.red_shape[0] % it->second != 0 ||
      !symbolOnlyWhole(f, s)) {
    *why_not = "the outermost reduced atom is no size symbol every tensor names whole";
    return "";
  }
  if (std::string why = reducedSizeBlocker(f, inputs, r, s); !why.empty()) {
    *why_not = std::move(why);
    return "";
  }
  // The inner layout counts vectors: every count of the class must be a whole number of them.
  if (r.layout == ReductionKernel::Layout::Inner && k.red_shape[0] / it->second * r.reducedInner() % k.vec != 0) {
    *why_not = fmt::format("one {} is not a whole number of vectors of {}", s, k.vec);
    return "";
  }
  return s;
}

int64_t ReductionKernel::reducedInner() const {
  int64_t rest = 1;
  for (size_t d = 1; d < k.red_shape.size(); ++d) rest *= k.red_shape[d];
  return rest;
}

void makeReductionSymbolic(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                           ReductionKernel& r) {
  std::string why;
  const std::string s = reducedSizeCandidate(f, sizes, inputs, r, &why);
  if (s.empty()) {
    r.reason += "; every size known (" + why + ")";
    return;
  }
  const int64_t n = sizes.at(s);
  r.size_factor = r.k.red_shape[0] / n;
  // Half the index range: a thread's element index runs up to a trip of `unroll` units past the
  // count, and every access of the largest size stays within it.
  const Wide lim = r.k.index64 ? (Wide{1} << 61) : (Wide{1} << 30);
  const int64_t step = r.layout == ReductionKernel::Layout::Outer ? int64_t{r.by} * r.split : int64_t{r.block} * r.split;
  auto fits = [&](int64_t m) {
    std::vector<int64_t> shape = r.k.outer_shape;
    shape.insert(shape.end(), r.k.red_shape.begin(), r.k.red_shape.end());
    shape[r.k.outer_shape.size()] = m * r.size_factor;
    const Wide count = Wide{m} * r.reducedCount(1);
    return count + Wide{step} * (r.unroll + 1) < lim && furthestReach(shape, r.k.vec, r.k.load_access, r.k.stores) < lim;
  };
  if (!fits(n)) {
    r.size_factor = 1;
    r.reason += fmt::format("; every size known ({} = {} reaches past half the index range)", s, n);
    return;
  }
  r.size_symbol = s;
  r.size_value = n;
  r.size_max = largestFitting(n, fits);
  r.reason += fmt::format("; {} = {} a kernel parameter (symbolic): this kernel serves {} from 1 to {}", s, n, s,
                          r.size_max);
}

ReductionKernel sizeBlanked(const ir::Fusion& f, const ReductionKernel& r) {
  ReductionKernel b = r;
  if (!b.k.red_shape.empty()) b.k.red_shape[0] = 0;  // (the lowering reads the count from the parameter)
  b.size_value = 0;
  b.reason.clear();
  b.k.reason.clear();
  b.k.two_pass_faster.clear();
  b.k.outputs = descsForAnySize(outputValues(f), r.k.outputs, r.size_symbol);
  return b;
}

}  // namespace loom::schedule
