#pragma once
// Normalization kernel IR -> an LLVM module with one NVPTX kernel (see schedule/normalization.h).
#include <memory>

#include "compiler/schedule/normalization.h"

namespace llvm {
class Module;
class LLVMContext;
}  // namespace llvm

namespace loom::codegen {

// Parameters: one global pointer per fusion input, then one per fusion output. `tune`: the
// emitter's knobs (unroll counts, batches) of compiler/tuning.def.
std::unique_ptr<llvm::Module> emitNormKernel(const ir::Fusion& f, const schedule::NormKernel& k,
                                             const Tuning& tune, llvm::LLVMContext& ctx);

}  // namespace loom::codegen
