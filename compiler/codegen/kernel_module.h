#pragma once
// The scaffolding every loom kernel shares: an NVPTX module with one kernel taking global
// pointers, marked as a kernel with its block size, plus thread/block id intrinsics.
#include <memory>
#include <string>
#include <vector>

#include "ir/fusion.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

namespace loom::codegen {

class KernelModule {
 public:
  // `num_params` global pointers, the first `num_readonly` only read; `noalias` when no
  // output aliases an input.
  // `num_sizes` 64-bit integers follow the pointers (kir::Kernel::sizes).
  KernelModule(llvm::LLVMContext& ctx, const std::string& name, int num_params, int num_readonly,
               bool noalias, int block_size, int num_sizes = 0);
  // A fusion's kernel: its inputs, then its outputs (`output_alias[i] >= 0` when output i is
  // written into an input in place, which rules out noalias).
  KernelModule(llvm::LLVMContext& ctx, const std::string& name, const ir::Fusion& f,
               const std::vector<int>& output_alias, int block_size, int extra_params = 0);
  // Asks the backend for registers that let `n` blocks share an SM (nvvm `minctasm`).
  void minBlocksPerSM(int n);
  llvm::IRBuilder<>& builder() { return b_; }
  llvm::Function* function() { return fn_; }
  llvm::Value* param(int i) { return fn_->getArg(static_cast<unsigned>(i)); }
  llvm::Value* threadIdx();  // i32
  llvm::Value* blockIdx();
  llvm::Value* gridDim();
  // Loads from inputs that no output aliases are invariant for the kernel (ld.global.nc).
  void markInvariant(llvm::Instruction* load);
  std::unique_ptr<llvm::Module> finish();  // verifies

 private:
  llvm::Value* sreg(unsigned id);
  std::unique_ptr<llvm::Module> m_;
  llvm::IRBuilder<> b_;
  llvm::Function* fn_;
  bool noalias_;
};

}  // namespace loom::codegen
