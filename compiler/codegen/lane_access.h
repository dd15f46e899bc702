#pragma once
// Reading and writing `vec` neighbouring elements (lanes) of a tensor, as the scheduler chose:
// one aligned vector access, one element shared by all lanes (splat), or one access per lane
// at `inner_stride` apart. Shared by every kernel emitter.
#include <vector>

#include "compiler/codegen/kernel_module.h"
#include "compiler/kir/kir.h"

namespace loom::codegen {

using Lanes = std::vector<llvm::Value*>;

// `off` is the element offset of lane 0 from `base`, of the kernel's index type.
Lanes loadLanes(KernelModule& km, llvm::Value* base, DType t, llvm::Value* off,
                kir::Access a, int vec, int64_t inner_stride);
void storeLanes(KernelModule& km, llvm::Value* base, DType t, llvm::Value* off,
                kir::Access a, const Lanes& lanes, int64_t inner_stride);

}  // namespace loom::codegen
