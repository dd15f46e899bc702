#include "compiler/codegen/llvm_pointwise.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include "compiler/codegen/kernel_module.h"
#include "compiler/codegen/lane_access.h"
#include "compiler/codegen/op_emit.h"
#include "ir/error.h"

namespace loom::codegen {

namespace {

using lower::ENode;
using lower::EPtr;
using lower::Leaf;
using schedule::Access;

class PointwiseEmitter {
 public:
  PointwiseEmitter(const ir::Fusion& f, const schedule::PointwiseKernel& k, KernelModule& km)
      : f_(f), k_(k), km_(km), b_(km.builder()) {
    idx_ty_ = k.index64 ? b_.getInt64Ty() : b_.getInt32Ty();
  }

  void emit() {
    llvm::Value* tid = b_.CreateZExtOrTrunc(km_.threadIdx(), idx_ty_);
    llvm::Value* bid = b_.CreateZExtOrTrunc(km_.blockIdx(), idx_ty_);
    llvm::Value* nblk = b_.CreateZExtOrTrunc(km_.gridDim(), idx_ty_);
    llvm::Value* block = c(k_.block);
    llvm::Value* start = b_.CreateAdd(b_.CreateMul(bid, block), tid);
    llvm::Value* stride = b_.CreateMul(nblk, block);
    const int64_t chunks = k_.numel() / k_.vec;
    const int u = k_.unroll;
    llvm::Value* c_end = c(chunks);
    // Main loop: `u` chunks per trip, all in bounds, loads issued before any math.
    llvm::Value* after_main = start;
    if (u > 1) {
      llvm::Value* span = b_.CreateMul(stride, c(u - 1));
      after_main = loop(start, b_.CreateMul(stride, c(u)), [&](llvm::Value* i) {
        return b_.CreateICmpSLT(b_.CreateAdd(i, span), c_end);
      }, [&](llvm::Value* i) {
        std::vector<llvm::Value*> cs;
        for (int j = 0; j < u; ++j) cs.push_back(b_.CreateAdd(i, b_.CreateMul(stride, c(j))));
        body(cs);
      });
    }
    loop(after_main, stride, [&](llvm::Value* i) { return b_.CreateICmpSLT(i, c_end); },
         [&](llvm::Value* i) { body({i}); });
    b_.CreateRetVoid();
  }

 private:
  llvm::Value* c(int64_t v) { return llvm::ConstantInt::get(idx_ty_, static_cast<uint64_t>(v), true); }

  // for (i = init; cond(i); i += step) fn(i); returns the final i.
  template <typename Cond, typename Fn>
  llvm::Value* loop(llvm::Value* init, llvm::Value* step, Cond cond, Fn fn) {
    llvm::Function* fun = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(b_.getContext(), "loop", fun);
    auto* bodyb = llvm::BasicBlock::Create(b_.getContext(), "body", fun);
    auto* exit = llvm::BasicBlock::Create(b_.getContext(), "exit", fun);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* i = b_.CreatePHI(idx_ty_, 2);
    i->addIncoming(init, pre);
    b_.CreateCondBr(cond(i), bodyb, exit);
    b_.SetInsertPoint(bodyb);
    fn(i);
    llvm::Value* next = b_.CreateAdd(i, step);
    i->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
    return i;
  }

  // Iteration coordinates of chunk `ci` (innermost already multiplied by vec).
  std::vector<llvm::Value*> coords(llvm::Value* ci) {
    const auto& s = k_.iter_shape;
    std::vector<llvm::Value*> idx(s.size());
    int64_t inner_chunks = s.back() / k_.vec;
    llvm::Value* q = ci;
    if (s.size() == 1) {
      idx[0] = b_.CreateMul(q, c(k_.vec));
      return idx;
    }
    idx.back() = b_.CreateMul(b_.CreateURem(q, c(inner_chunks)), c(k_.vec));
    q = b_.CreateUDiv(q, c(inner_chunks));
    for (size_t d = s.size() - 1; d-- > 1;) {
      idx[d] = b_.CreateURem(q, c(s[d]));
      q = b_.CreateUDiv(q, c(s[d]));
    }
    idx[0] = q;
    return idx;
  }

  llvm::Value* offset(int64_t base, const std::vector<int64_t>& strides,
                      const std::vector<llvm::Value*>& idx) {
    llvm::Value* o = c(base);
    for (size_t d = 0; d < strides.size(); ++d)
      if (strides[d] != 0) o = b_.CreateAdd(o, b_.CreateMul(idx[d], c(strides[d])));
    return o;
  }

  Lanes load(const Leaf& l, DType t, const std::vector<llvm::Value*>& idx) {
    return loadLanes(km_, km_.param(l.input), t, offset(l.offset, l.strides, idx),
                     k_.load_access.at(l), k_.vec, l.strides.back());
  }

  void store(const schedule::PointwiseKernel::Store& s, const Lanes& lanes,
             const std::vector<llvm::Value*>& idx) {
    storeLanes(km_, km_.param(k_.num_inputs + s.output), s.dtype, offset(s.offset, s.strides, idx),
               s.access, lanes, s.strides.back());
  }

  // One trip: every chunk's loads first (memory-level parallelism), then math and stores.
  void body(const std::vector<llvm::Value*>& chunk_ids) {
    std::vector<EPtr> roots;
    for (const auto& s : k_.stores) roots.push_back(s.value);
    std::vector<std::vector<llvm::Value*>> idx;
    std::vector<std::map<const ENode*, Lanes>> vals(chunk_ids.size());
    for (size_t u = 0; u < chunk_ids.size(); ++u) {
      idx.push_back(coords(chunk_ids[u]));
      std::map<Leaf, Lanes> loaded;
      lower::visitPostOrder(roots, [&](const ENode& n) {
        if (n.kind != ENode::Kind::Load) return;
        auto it = loaded.find(n.leaf);
        if (it == loaded.end()) it = loaded.emplace(n.leaf, load(n.leaf, n.dtype, idx[u])).first;
        vals[u][&n] = it->second;
      });
    }
    for (size_t u = 0; u < chunk_ids.size(); ++u) {
      lower::visitPostOrder(roots, [&](const ENode& n) {
        if (n.kind == ENode::Kind::Load) return;
        Lanes out;
        for (int j = 0; j < k_.vec; ++j) {
          if (n.kind == ENode::Kind::Const) {
            out.push_back(emitConst(b_, n.dtype, n.value));
            continue;
          }
          std::vector<llvm::Value*> args;
          for (const auto& a : n.args) args.push_back(vals[u].at(a.get())[static_cast<size_t>(j)]);
          if (n.op == ir::OpKind::Cast) {
            out.push_back(emitCast(b_, args[0], n.args[0]->dtype, n.dtype));
          } else {
            DType in = n.args[n.op == ir::OpKind::Where ? 1 : 0]->dtype;
            out.push_back(emitPointwise(b_, n.op, in, args));
          }
        }
        vals[u][&n] = std::move(out);
      });
      for (const auto& s : k_.stores) store(s, vals[u].at(s.value.get()), idx[u]);
    }
  }

  const ir::Fusion& f_;
  const schedule::PointwiseKernel& k_;
  KernelModule& km_;
  llvm::IRBuilder<>& b_;
  llvm::Type* idx_ty_;
};

}  // namespace

std::unique_ptr<llvm::Module> emitPointwiseKernel(const ir::Fusion& f,
                                                  const schedule::PointwiseKernel& k,
                                                  llvm::LLVMContext& ctx) {
  KernelModule km(ctx, k.name, f, k.output_alias, k.block);
  PointwiseEmitter(f, k, km).emit();
  return km.finish();
}

}  // namespace loom::codegen
