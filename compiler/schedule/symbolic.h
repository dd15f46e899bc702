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

// Whether every tensor of `f` names symbol `s` only as a whole dim (never inside a compound
// extent such as N*C), so the size can change with no other extent changing.
bool symbolOnlyWhole(const ir::Fusion& f, const std::string& s);

// `descs` (of `values`) with every dim named `s` at `value`: the tensors a kernel serving sizes
// up to `value` may reach, which the verifier bounds its accesses by.
std::vector<TensorDesc> descsWithSize(const std::vector<const ir::Value*>& values, std::vector<TensorDesc> descs,
                                      const std::string& s, int64_t value);

// The largest size from `n` on for which `fits` holds (`fits(n)` is taken to hold; `fits` only
// turns false once), at most 2^50.
int64_t largestFitting(int64_t n, const std::function<bool(int64_t)>& fits);

}  // namespace loom::schedule
