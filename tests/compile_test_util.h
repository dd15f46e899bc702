#pragma once
// Shared by the CPU-only compiler tests: input descriptions a run with these sizes and memory
// orders would see (16-byte aligned, contiguous unless a layout is given).
#include <map>
#include <string>
#include <vector>

#include "compiler/tensor_desc.h"
#include "include/loom/loom.h"

namespace loom::test {

inline std::vector<TensorDesc> descsFor(const ir::Fusion& f, const Bindings& sizes,
                                        const std::map<std::string, std::vector<int>>& layouts = {}) {
  std::vector<TensorDesc> d;
  for (const ir::Value* v : f.inputs()) {
    TensorDesc t{v->dtype(), evalShape(v, sizes), {}, 16};
    auto it = layouts.find(v->name());
    t.strides = it == layouts.end() ? contiguousStrides(t.shape) : stridesForOrder(t.shape, it->second);
    d.push_back(t);
  }
  return d;
}

}  // namespace loom::test
