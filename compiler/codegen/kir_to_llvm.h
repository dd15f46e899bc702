#pragma once
// Kernel IR -> an LLVM module with one NVPTX kernel. A translator: every loop, load, store and
// op it emits is written in the kernel IR; it decides nothing.
#include <memory>
#include <string>

#include "compiler/kir/kir.h"

namespace llvm {
class Module;
class LLVMContext;
}  // namespace llvm

namespace loom::codegen {

// Parameters: one global pointer per kernel IR parameter, in order.
std::unique_ptr<llvm::Module> translateKernel(const kir::Kernel& k, llvm::LLVMContext& ctx);
// The same, through LLVM's NVPTX backend to PTX for sm_`sm` (tests, tools).
std::string translateToPtx(const kir::Kernel& k, int sm);

}  // namespace loom::codegen
