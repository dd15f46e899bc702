#pragma once
// What the schedulers share for LOOM_TUNE_SYMBOLIC (a size a kernel takes at run time; see
// kir::Kernel::sizes and compile.h's symbolicClass).
#include <algorithm>
#include <cstdint>
#include <map>
#include <functional>
#include <string>
#include <vector>

#include "compiler/kir/kir.h"
#include "compiler/lower/strided_expr.h"
#include "compiler/tensor_desc.h"
#include "ir/fusion.h"

namespace loom::schedule {

// The kernel-IR name of size symbol `s` as a kernel parameter: `size.N`, a name no lowering binds
// (a fusion's size may be called `b` or `row`, which kernels bind for themselves).
inline std::string sizeVar(const std::string& s) { return "size." + s; }

// The first atom of a kernel's atoms as the schedulers print them: `N` of `{N, 32}`.
std::string firstAtom(const std::string& atoms);

// Whether every tensor of `f` names symbol `s` only as a whole dim (never inside a compound
// extent such as N*C), so the size can change with no other extent changing.
bool symbolOnlyWhole(const ir::Fusion& f, const std::string& s);

// Whether in every tensor (`descs` of `values`) the dims named `s` are outermost in memory: each
// has stride 0, or a stride past everything the other dims reach, so no other stride grows with
// the size (a permuted output [H, N, W] has N inside H's stride, and keeps every size known).
bool outermostInMemory(const std::vector<const ir::Value*>& values, const std::vector<TensorDesc>& descs,
                       const std::string& s);

// Whether value `v` names symbol `s` in some dim.
bool names(const ir::Value* v, const std::string& s);

// Why a kernel of `f` may take no size at run time whatever its loads: an iota or random op, whose
// index values are strides of the sizes it was compiled at; "" where none.
std::string indexBlocker(const ir::Fusion& f);

// Why a kernel whose loads are `loads` (strides over its axes, the size's axis first) may not
// take `s` at run time, for the schedulers' reasons: an input that moves along it without
// naming it (its extent would not follow), or a tensor where it is not outermost in memory
// (outermostInMemory); "" where nothing stands in the way.
std::string sizeBlocker(const ir::Fusion& f, const std::vector<TensorDesc>& inputs,
                        const std::vector<TensorDesc>& outputs, const std::map<lower::Leaf, kir::Access>& loads,
                        const std::string& s);

// `f`'s output values, in order (the values of a kernel's output descs).
std::vector<const ir::Value*> outputValues(const ir::Fusion& f);

// `descs` (of `values`) with every dim named `s` at `value`: the tensors a kernel serving sizes
// up to `value` may reach, which the verifier bounds its accesses by.
std::vector<TensorDesc> descsWithSize(const std::vector<const ir::Value*>& values, std::vector<TensorDesc> descs,
                                      const std::string& s, int64_t value);

// `descs` (of `values`) as a kernel serving every value of `s` sees them: the dims named `s` at 0,
// and the strides of dims of one element (never stepped along) at 0.
std::vector<TensorDesc> descsForAnySize(const std::vector<const ir::Value*>& values, std::vector<TensorDesc> descs,
                                        const std::string& s);

// A symbolic kernel's parameters: `f`'s tensors as `kir::fusionParams` makes them, every dim named
// `s` at `max` (the largest size it serves, which the verifier bounds its accesses by).
std::vector<kir::Param> paramsAtLargest(const ir::Fusion& f, const std::vector<TensorDesc>& inputs,
                                        const std::vector<TensorDesc>& outputs, const std::string& s, int64_t max);

// The furthest element (plus a vector) any load of `loads` or store of `stores` reaches over a
// kernel's axes of extents `shape`: each an offset and strides over those axes.
template <typename Stores>
__int128 furthestReach(const std::vector<int64_t>& shape, int vec, const std::map<lower::Leaf, kir::Access>& loads,
                       const Stores& stores) {
  auto reach = [&](int64_t offset, const std::vector<int64_t>& strides) {
    __int128 m = offset;
    for (size_t i = 0; i < strides.size() && i < shape.size(); ++i)
      m += static_cast<__int128>(shape[i] - 1) * (strides[i] < 0 ? -strides[i] : strides[i]);
    return m + vec;
  };
  __int128 most = 0;
  for (const auto& [leaf, access] : loads) most = std::max(most, reach(leaf.offset, leaf.strides));
  for (const auto& st : stores) most = std::max(most, reach(st.offset, st.strides));
  return most;
}

// The largest size from `n` on for which `fits` holds (`fits(n)` is taken to hold; `fits` only
// turns false once), at most 2^50.
int64_t largestFitting(int64_t n, const std::function<bool(int64_t)>& fits);

}  // namespace loom::schedule
