#include "compiler/codegen/kernel_module.h"

#include <algorithm>

#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "ir/error.h"

namespace loom::codegen {

KernelModule::KernelModule(llvm::LLVMContext& ctx, const std::string& name, int num_params,
                           int num_readonly, bool noalias, int block_size, int num_sizes)
    : m_(std::make_unique<llvm::Module>(name, ctx)), b_(ctx), noalias_(noalias) {
  m_->setTargetTriple("nvptx64-nvidia-cuda");
  llvm::Type* gptr = llvm::PointerType::get(ctx, 1);
  std::vector<llvm::Type*> params(static_cast<size_t>(num_params), gptr);
  params.insert(params.end(), static_cast<size_t>(num_sizes), b_.getInt64Ty());
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
  fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_.get());
  for (int i = 0; i < num_params; ++i) {
    auto* a = fn_->getArg(static_cast<unsigned>(i));
    if (noalias) a->addAttr(llvm::Attribute::NoAlias);
    if (i < num_readonly) a->addAttr(llvm::Attribute::ReadOnly);
    // No alignment attribute: a tensor may start anywhere (a slice, a user's pointer); each
    // access states the alignment the schedule proved for it.
  }
  auto* md = m_->getOrInsertNamedMetadata("nvvm.annotations");
  auto i32 = [&](int v) { return llvm::ConstantAsMetadata::get(b_.getInt32(v)); };
  md->addOperand(llvm::MDNode::get(ctx, {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx, "kernel"), i32(1)}));
  md->addOperand(llvm::MDNode::get(ctx, {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx, "maxntidx"), i32(block_size)}));
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", fn_));
}

KernelModule::KernelModule(llvm::LLVMContext& ctx, const std::string& name, const ir::Fusion& f,
                           const std::vector<int>& output_alias, int block_size, int extra_params)
    : KernelModule(ctx, name, static_cast<int>(f.inputs().size() + f.outputs().size()) + extra_params,
                   static_cast<int>(f.inputs().size()),
                   std::none_of(output_alias.begin(), output_alias.end(), [](int a) { return a >= 0; }),
                   block_size) {}

void KernelModule::minBlocksPerSM(int n) {
  auto* md = m_->getOrInsertNamedMetadata("nvvm.annotations");
  md->addOperand(llvm::MDNode::get(b_.getContext(), {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(b_.getContext(), "minctasm"),
                                                     llvm::ConstantAsMetadata::get(b_.getInt32(n))}));
}

llvm::Value* KernelModule::sreg(unsigned id) {
  return b_.CreateIntrinsic(static_cast<llvm::Intrinsic::ID>(id), {}, {});
}
llvm::Value* KernelModule::threadIdx() { return sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x); }
llvm::Value* KernelModule::blockIdx() { return sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x); }
llvm::Value* KernelModule::gridDim() { return sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x); }

void KernelModule::markInvariant(llvm::Instruction* load) {
  if (!noalias_) return;
  load->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(b_.getContext(), {}));
}

std::unique_ptr<llvm::Module> KernelModule::finish() {
  std::string err;
  llvm::raw_string_ostream os(err);
  LOOM_ASSERT(!llvm::verifyModule(*m_, &os), "generated LLVM IR does not verify: {}", os.str());
  return std::move(m_);
}

}  // namespace loom::codegen
