#pragma once
// What the schedulers share for LOOM_TUNE_SYMBOLIC (a size a kernel takes at run time; see
// kir::Kernel::sizes and compile.h's symbolicClass).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/tensor_desc.h"
#include "ir/fusion.h"

namespace loom::schedule {

// The kernel-IR name of size symbol `s` as a kernel parameter: `size.N`, a name no lowering binds
// (a fusion's size may be called `b` or `row`, which kernels bind for themselves).
inline std::string sizeVar(const std::string& s) { return "size." + s; }

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

// `descs` (of `values`) with every dim named `s` at `value`: the tensors a kernel serving sizes
// up to `value` may reach, which the verifier bounds its accesses by.
std::vector<TensorDesc> descsWithSize(const std::vector<const ir::Value*>& values, std::vector<TensorDesc> descs,
                                      const std::string& s, int64_t value);

// The largest size from `n` on for which `fits` holds (`fits(n)` is taken to hold; `fits` only
// turns false once), at most 2^50.
int64_t largestFitting(int64_t n, const std::function<bool(int64_t)>& fits);

}  // namespace loom::schedule
