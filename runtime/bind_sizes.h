#pragma once
// Binding a fusion's symbolic sizes (`N`, `C`, ...) to the concrete tensors it is run on. Used by
// the CPU reference and the GPU runtime alike; knows nothing of either.
#include <cstdint>
#include <vector>

#include <map>
#include <string>

#include "compiler/tensor_desc.h"
#include "ir/fusion.h"
#include "runtime/host_tensor.h"

namespace loom {

// The most bytes one tensor may take: 2^47, the address space of a process on x86-64 (and more
// than any GPU holds); sizes past it are refused when bound.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 47;

// Checks the inputs against the fusion's: their number, and each one's dtype and rank (the
// error names the input, its expected type, e.g. `f16[N, 1024]`, and what was given). Solves
// every symbol from the concrete sizes: an input extent that is one symbol to the first power
// with a coefficient (`N`, `4*H`, `C/32`) determines it, the first such input dim in input order
// wins, and `given` bindings come before all. Then checks that every input extent evaluates to
// the size given ("input `x` dim 1 is 1000 but the fusion needs D=1024 (from input `w` dim 0)"),
// that broadcast axes have size 1, and that every symbol the fusion uses (reshape targets,
// slices, `full` shapes included) is known. Returns the complete bindings (`given` included).
Bindings bindSizes(const ir::Fusion& fusion, const std::vector<HostTensor>& inputs,
                   const Bindings& given = {});

// The same from dtypes and sizes alone (device tensors, compile-only tools).
Bindings bindShapes(const ir::Fusion& fusion, const std::vector<DType>& dtypes,
                    const std::vector<std::vector<int64_t>>& shapes, const Bindings& given = {});

// The inputs a run with these sizes would see, each in the given memory order (dims outer to
// inner) or row-major, 16-byte aligned: what compile-only tools and tests compile for.
std::vector<TensorDesc> describeInputs(const ir::Fusion& f, const Bindings& sizes,
                                       const std::map<std::string, std::vector<int>>& orders = {});

// The concrete shape of a value (broadcast axes have size 1); throws loom::Error naming a
// missing symbol.
std::vector<int64_t> evalShape(const ir::Value* v, const Bindings& b);

}  // namespace loom
