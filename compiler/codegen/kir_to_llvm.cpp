#include "compiler/codegen/kir_to_llvm.h"

#include <map>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "compiler/codegen/kernel_module.h"
#include "compiler/codegen/lane_access.h"
#include "compiler/codegen/op_emit.h"
#include "compiler/codegen/ptx_backend.h"
#include "ir/error.h"

namespace loom::codegen {

namespace {

using kir::Expr;
using kir::Stmt;

class Translator {
 public:
  Translator(const kir::Kernel& k, KernelModule& km) : k_(k), km_(km), b_(km.builder()) {
    idx_ty_ = k.index_bits == 64 ? b_.getInt64Ty() : b_.getInt32Ty();
  }

  void run() {
    body(k_.body);
    b_.CreateRetVoid();
  }

 private:
  llvm::Value* c(int64_t v) { return llvm::ConstantInt::get(idx_ty_, static_cast<uint64_t>(v), true); }

  llvm::Value* special(kir::Special s) {
    switch (s) {
      case kir::Special::TidX: return b_.CreateZExtOrTrunc(km_.threadIdx(), idx_ty_);
      case kir::Special::CtaidX: return b_.CreateZExtOrTrunc(km_.blockIdx(), idx_ty_);
      case kir::Special::NctaidX: return b_.CreateZExtOrTrunc(km_.gridDim(), idx_ty_);
    }
    return nullptr;
  }

  llvm::Value* indexOp(kir::IndexOp op, llvm::Value* a, llvm::Value* b) {
    switch (op) {
      case kir::IndexOp::Add: return b_.CreateAdd(a, b);
      case kir::IndexOp::Mul: return b_.CreateMul(a, b);
      case kir::IndexOp::Div: return b_.CreateUDiv(a, b);
      case kir::IndexOp::Rem: return b_.CreateURem(a, b);
      case kir::IndexOp::Lt: return b_.CreateICmpSLT(a, b);
    }
    return nullptr;
  }

  // An index expression's one value.
  llvm::Value* scalar(const Expr& e) {
    Lanes l = expr(e);
    LOOM_ASSERT(l.size() == 1, "kir -> LLVM: an index of {} lanes", l.size());
    return l[0];
  }

  Lanes expr(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::Int: return {c(e.ivalue)};
      case Expr::Kind::Var: {
        auto it = env_.find(e.name);
        LOOM_ASSERT(it != env_.end(), "kir -> LLVM: `{}` is not bound", e.name);
        return it->second;
      }
      case Expr::Kind::Special: return {special(e.special)};
      case Expr::Kind::Index: {
        llvm::Value* a = scalar(*e.args[0]);
        llvm::Value* b = scalar(*e.args[1]);
        return {indexOp(e.iop, a, b)};
      }
      case Expr::Kind::Const: {
        Lanes out;
        for (int j = 0; j < e.type.lanes; ++j) out.push_back(emitConst(b_, e.type.dtype, e.fvalue));
        return out;
      }
      case Expr::Kind::Math: return math(e);
      case Expr::Kind::Load: {
        LOOM_ASSERT((e.cache == kir::Cache::Invariant) == k_.noalias,
                    "kir -> LLVM: invariant loads are those of a kernel without aliased outputs");
        llvm::Value* off = scalar(*e.args[0]);
        return loadLanes(km_, km_.param(e.param), e.type.dtype, off, e.access, e.type.lanes, e.inner_stride);
      }
    }
    return {};
  }

  Lanes math(const Expr& e) {
    std::vector<Lanes> args;
    for (const auto& a : e.args) args.push_back(expr(*a));
    Lanes out;
    for (size_t j = 0; j < static_cast<size_t>(e.type.lanes); ++j) {
      std::vector<llvm::Value*> lane;
      for (const auto& a : args) lane.push_back(a[j]);
      if (e.op == ir::OpKind::Cast) {
        out.push_back(emitCast(b_, lane[0], e.args[0]->type.dtype, e.type.dtype));
      } else {
        DType in = e.args[e.op == ir::OpKind::Where ? 1 : 0]->type.dtype;
        out.push_back(emitPointwise(b_, e.op, in, lane));
      }
    }
    return out;
  }

  // for (v = init; cond; v += step) body; the variable's value once `cond` fails is bound to
  // the loop's `exit` name.
  void loop(const Stmt& s) {
    llvm::Value* init = scalar(*s.init);
    llvm::Function* fun = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(b_.getContext(), "loop", fun);
    auto* bodyb = llvm::BasicBlock::Create(b_.getContext(), "body", fun);
    auto* exit = llvm::BasicBlock::Create(b_.getContext(), "exit", fun);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* i = b_.CreatePHI(idx_ty_, 2);
    i->addIncoming(init, pre);
    env_[s.name] = {i};
    b_.CreateCondBr(scalar(*s.cond), bodyb, exit);
    b_.SetInsertPoint(bodyb);
    body(s.body);
    llvm::Value* next = b_.CreateAdd(i, scalar(*s.step));
    i->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
    if (!s.exit.empty()) env_[s.exit] = {i};
  }

  void stmt(const Stmt& s) {
    switch (s.kind) {
      case Stmt::Kind::Let: env_[s.name] = expr(*s.value); break;
      case Stmt::Kind::Loop:
        LOOM_ASSERT(s.unroll == 1, "kir -> LLVM: loop `{}` still unrolled {} times (the unroll pass "
                    "writes the trips out)", s.name, s.unroll);
        loop(s);
        break;
      case Stmt::Kind::Store: {
        llvm::Value* off = scalar(*s.offset);
        Lanes v = expr(*s.value);
        storeLanes(km_, km_.param(s.param), s.value->type.dtype, off, s.access, v, s.inner_stride);
        break;
      }
    }
  }

  void body(const kir::Body& b) {
    for (const auto& s : b) stmt(*s);
  }

  const kir::Kernel& k_;
  KernelModule& km_;
  llvm::IRBuilder<>& b_;
  llvm::Type* idx_ty_;
  std::map<std::string, Lanes> env_;
};

}  // namespace

std::unique_ptr<llvm::Module> translateKernel(const kir::Kernel& k, llvm::LLVMContext& ctx) {
  int inputs = 0;
  for (const auto& p : k.params) inputs += p.output ? 0 : 1;
  KernelModule km(ctx, k.name, static_cast<int>(k.params.size()), inputs, k.noalias, k.launch.block);
  Translator(k, km).run();
  return km.finish();
}

std::string translateToPtx(const kir::Kernel& k, int sm) {
  llvm::LLVMContext ctx;
  return compileToPtx(translateKernel(k, ctx), ctx, PtxOptions{sm, 2});
}

}  // namespace loom::codegen
