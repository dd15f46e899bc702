#pragma once
// Shared by the CPU-only compiler tests: the inputs a run with these sizes and memory orders
// would see (runtime/bind_sizes.h describeInputs).
#include <map>
#include <string>
#include <vector>

#include "compiler/tensor_desc.h"
#include "include/loom/loom.h"

namespace loom::test {

inline std::vector<TensorDesc> descsFor(const ir::Fusion& f, const Bindings& sizes,
                                        const std::map<std::string, std::vector<int>>& layouts = {}) {
  return describeInputs(f, sizes, layouts);
}

}  // namespace loom::test
