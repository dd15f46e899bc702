// NormEmitter's grid tier: partials in a global workspace and grid-wide barriers (see
// norm_emitter.h).
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include "compiler/codegen/norm_emitter.h"
#include "compiler/codegen/op_emit.h"
#include "ir/error.h"

namespace loom::codegen::norm_detail {

llvm::Value* NormEmitter::wsSlot(int region, llvm::Value* rank, llvm::Value* r, int field) {
  const int64_t P = k_.split, L = k_.rows_per_block;
  llvm::Value* plane = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(c(int64_t{region} * 2), parity_), c(3)), c(field));
  llvm::Value* entry = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(plane, c(L)), b_.CreateZExtOrTrunc(r, idx_ty_)), c(P)),
                                    rank);
  llvm::Value* byte = b_.CreateAdd(c(128), b_.CreateMul(entry, c(8)));
  return b_.CreateInBoundsGEP(b_.getInt8Ty(), group_ws_, b_.CreateZExtOrTrunc(byte, b_.getInt64Ty()));
}

void NormEmitter::checkRegion(int region) {
  const int64_t per = 2 * int64_t{k_.split} * k_.rows_per_block * 24;
  LOOM_ASSERT((128 + (region + 1) * per) * k_.grid_groups <= k_.workspace_bytes,
              "grid reduction {} beyond the {}-byte workspace of {} groups", region, k_.workspace_bytes, k_.grid_groups);
}

llvm::Value* NormEmitter::loadWs(llvm::Type* ty, llvm::Value* addr) {
  llvm::Type* ptr = addr->getType();
  auto relaxed = [&](llvm::Type* ret, const char* text, const char* constraints) {
    auto* fn = llvm::InlineAsm::get(llvm::FunctionType::get(ret, {ptr}, false), text, constraints, true);
    return b_.CreateCall(fn, {addr});
  };
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(ty)) {
    LOOM_ASSERT(vt->getNumElements() == 2 && vt->getElementType()->isFloatTy(), "workspace load of a vector");
    llvm::Type* f32 = b_.getFloatTy();
    llvm::Value* pair = relaxed(llvm::StructType::get(b_.getContext(), {f32, f32}),
                                "ld.relaxed.gpu.global.v2.f32 {$0, $1}, [$2];", "=f,=f,l,~{memory}");
    llvm::Value* v = b_.CreateInsertElement(llvm::PoisonValue::get(vt), b_.CreateExtractValue(pair, 0), uint64_t{0});
    return b_.CreateInsertElement(v, b_.CreateExtractValue(pair, 1), uint64_t{1});
  }
  if (ty->isFloatTy()) return relaxed(ty, "ld.relaxed.gpu.global.f32 $0, [$1];", "=f,l,~{memory}");
  if (ty->isDoubleTy()) return relaxed(ty, "ld.relaxed.gpu.global.f64 $0, [$1];", "=d,l,~{memory}");
  if (ty->isIntegerTy(32)) return relaxed(ty, "ld.relaxed.gpu.global.u32 $0, [$1];", "=r,l,~{memory}");
  LOOM_ASSERT(ty->isIntegerTy(64), "workspace load of an unexpected type");
  return relaxed(ty, "ld.relaxed.gpu.global.u64 $0, [$1];", "=l,l,~{memory}");
}

void NormEmitter::gridBarrier() {
  barrier();
  // Barrier j of set s is the kernel's (s * barriers_per_set + j)-th.
  LOOM_ASSERT(barriers_done_ < barriers_per_set_, "grid barrier {} of a set counted as {}", barriers_done_, barriers_per_set_);
  llvm::Value* e = b_.CreateAdd(b_.CreateMul(set_, c(barriers_per_set_)), c(++barriers_done_));
  llvm::Value* target = b_.CreateTrunc(b_.CreateMul(e, c(k_.split)), b_.getInt32Ty());
  llvm::Function* fn = km_.function();
  auto* lead = llvm::BasicBlock::Create(b_.getContext(), "gb_lead", fn);
  auto* spin = llvm::BasicBlock::Create(b_.getContext(), "gb_spin", fn);
  auto* done = llvm::BasicBlock::Create(b_.getContext(), "gb_done", fn);
  b_.CreateCondBr(b_.CreateICmpEQ(tid_, b_.getInt32(0)), lead, done);
  b_.SetInsertPoint(lead);
  llvm::Type* i32 = b_.getInt32Ty();
  llvm::Type* ptr = workspace_->getType();
  auto* arrive = llvm::InlineAsm::get(llvm::FunctionType::get(i32, {ptr}, false),
                                      "atom.add.release.gpu.global.u32 $0, [$1], 1;", "=r,l,~{memory}", true);
  b_.CreateCall(arrive, {group_ws_});
  b_.CreateBr(spin);
  b_.SetInsertPoint(spin);
  auto* poll = llvm::InlineAsm::get(llvm::FunctionType::get(i32, {ptr}, false),
                                    "ld.relaxed.gpu.global.u32 $0, [$1];", "=r,l,~{memory}", true);
  llvm::Value* seen = b_.CreateCall(poll, {group_ws_});
  auto* wait = llvm::BasicBlock::Create(b_.getContext(), "gb_wait", fn);
  auto* acquire = llvm::BasicBlock::Create(b_.getContext(), "gb_acquire", fn);
  b_.CreateCondBr(b_.CreateICmpUGE(seen, target), acquire, wait);
  b_.SetInsertPoint(acquire);
  auto* fence = llvm::InlineAsm::get(llvm::FunctionType::get(b_.getVoidTy(), {}, false), "fence.acq_rel.gpu;", "~{memory}", true);
  b_.CreateCall(fence, {});
  b_.CreateBr(done);
  b_.SetInsertPoint(wait);
  auto* nap = llvm::InlineAsm::get(llvm::FunctionType::get(b_.getVoidTy(), {}, false), "nanosleep.u32 64;", "~{memory}", true);
  b_.CreateCall(nap, {});
  b_.CreateBr(spin);
  b_.SetInsertPoint(done);
  barrier();
}

void NormEmitter::leaveCountersZero() {
  ifThen(b_.CreateICmpEQ(tid_, b_.getInt32(0)), "gexit", [&] {
    llvm::Type* ptr = workspace_->getType();
    llvm::Value* exits = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), group_ws_, 64);
    auto* count_out = llvm::InlineAsm::get(llvm::FunctionType::get(b_.getInt32Ty(), {ptr}, false),
                                           "atom.add.acq_rel.gpu.global.u32 $0, [$1], 1;", "=r,l,~{memory}", true);
    llvm::Value* before = b_.CreateCall(count_out, {exits});
    ifThen(b_.CreateICmpEQ(before, b_.getInt32(static_cast<uint32_t>(k_.split - 1))), "greset", [&] {
      auto* zero = llvm::InlineAsm::get(llvm::FunctionType::get(b_.getVoidTy(), {ptr}, false),
                                        "st.relaxed.gpu.global.u32 [$0], 0;", "l,~{memory}", true);
      b_.CreateCall(zero, {group_ws_});
      b_.CreateCall(zero, {exits});
    });
  });
}

llvm::Value* NormEmitter::acrossGrid(Combine cb, DType acc, llvm::Value* v) {
  const int region = next_region_++;
  checkRegion(region);
  llvm::Type* ty = v->getType();
  ifThen(b_.CreateICmpEQ(t_in_row_, c(0)), "gpublish", [&] {
    storeWs(v, wsSlot(region, rank_, row_in_block_, 0));
  });
  gridBarrier();
  return byFirstWarp(ty, 1, [&] {
    llvm::Value* total = identity(cb, acc);
    forEachLaneBlock([&](llvm::Value* r, llvm::Value* ok) {
      llvm::Value* x = loadWs(ty, wsSlot(region, r, row_in_block_, 0));
      total = combine(cb, acc, total, b_.CreateSelect(ok, x, identity(cb, acc)));
    });
    for (int off = laneBlockWidth() / 2; off >= 1; off /= 2) total = combine(cb, acc, total, shuffleXor(total, off));
    return std::vector<llvm::Value*>{total};
  })[0];
}

void NormEmitter::forEachLaneBlock(const std::function<void(llvm::Value*, llvm::Value*)>& fn) {
  const int W = laneBlockWidth();
  llvm::Value* lane = W == 32 ? b_.CreateZExtOrTrunc(lane_, idx_ty_) : t_in_row_;
  for (int64_t r0 = 0; r0 < k_.split; r0 += W) {
    llvm::Value* r = b_.CreateAdd(lane, c(r0));
    llvm::Value* ok = b_.CreateICmpULT(r, c(k_.split));
    fn(b_.CreateSelect(ok, r, c(0)), ok);
  }
}

NormEmitter::Stats NormEmitter::acrossGridStats(DType acc, const Stats& st) {
  const int region = next_region_++;
  checkRegion(region);
  // f32 statistics: mean and M2 share one 8-byte slot and every block's count is known
  // here, so a partial is one load (a third of the L2 traffic of three).
  const bool packed = st.n->getType()->isFloatTy();
  llvm::Type* ty = st.n->getType();
  auto* pair = llvm::FixedVectorType::get(ty, 2);
  ifThen(b_.CreateICmpEQ(t_in_row_, c(0)), "gspublish", [&] {
    if (packed) {
      llvm::Value* v = b_.CreateInsertElement(llvm::PoisonValue::get(pair), st.mean, uint64_t{0});
      storeWs(b_.CreateInsertElement(v, st.m2, uint64_t{1}), wsSlot(region, rank_, row_in_block_, 0));
    } else {
      storeWs(st.n, wsSlot(region, rank_, row_in_block_, 0));
      storeWs(st.mean, wsSlot(region, rank_, row_in_block_, 1));
      storeWs(st.m2, wsSlot(region, rank_, row_in_block_, 2));
    }
  });
  gridBarrier();
  auto merged = byFirstWarp(ty, 3, [&] {
    llvm::Value* zero = emitConst(b_, acc, 0);
    Stats total{zero, zero, zero};
    forEachLaneBlock([&](llvm::Value* r, llvm::Value* ok) {
      Stats x;
      if (packed) {
        llvm::Value* v = loadWs(pair, wsSlot(region, r, row_in_block_, 0));
        x = Stats{blockCount(r, acc), b_.CreateExtractElement(v, uint64_t{0}), b_.CreateExtractElement(v, uint64_t{1})};
      } else {
        x = Stats{loadWs(ty, wsSlot(region, r, row_in_block_, 0)), loadWs(ty, wsSlot(region, r, row_in_block_, 1)),
                  loadWs(ty, wsSlot(region, r, row_in_block_, 2))};
      }
      x.n = b_.CreateSelect(ok, x.n, zero);
      x.mean = b_.CreateSelect(ok, x.mean, zero);
      x.m2 = b_.CreateSelect(ok, x.m2, zero);
      total = chan(acc, total, x);
    });
    for (int off = laneBlockWidth() / 2; off >= 1; off /= 2)
      total = chan(acc, total, Stats{shuffleXor(total.n, off), shuffleXor(total.mean, off), shuffleXor(total.m2, off)});
    return std::vector<llvm::Value*>{total.n, total.mean, total.m2};
  });
  return Stats{merged[0], merged[1], merged[2]};
}

}  // namespace loom::codegen::norm_detail
