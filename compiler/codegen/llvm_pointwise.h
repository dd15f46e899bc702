#pragma once
// Pointwise kernel IR -> an LLVM module with one NVPTX kernel.
#include <memory>

#include "compiler/schedule/pointwise.h"

namespace llvm {
class Module;
class LLVMContext;
}  // namespace llvm

namespace loom::codegen {

// Kernel parameters: one global pointer per fusion input, then one per fusion output.
std::unique_ptr<llvm::Module> emitPointwiseKernel(const ir::Fusion& f,
                                                  const schedule::PointwiseKernel& k,
                                                  llvm::LLVMContext& ctx);

}  // namespace loom::codegen
