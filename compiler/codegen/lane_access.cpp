#include "compiler/codegen/lane_access.h"

#include <algorithm>

#include "compiler/codegen/op_emit.h"

namespace loom::codegen {

namespace {
llvm::Value* gep(llvm::IRBuilder<>& b, llvm::Value* base, DType t, llvm::Value* off) {
  return b.CreateInBoundsGEP(memType(b.getContext(), t), base, off);
}
llvm::Value* laneOffset(llvm::IRBuilder<>& b, llvm::Value* off, int lane, int64_t stride) {
  if (lane == 0) return off;
  return b.CreateAdd(off, llvm::ConstantInt::get(off->getType(), static_cast<uint64_t>(lane * stride), true));
}
llvm::Align align(int64_t bytes) { return llvm::Align(static_cast<uint64_t>(bytes)); }
}  // namespace

Lanes loadLanes(KernelModule& km, llvm::Value* base, DType t, llvm::Value* off,
                kir::Access a, int vec, int64_t inner_stride) {
  llvm::IRBuilder<>& b = km.builder();
  llvm::Type* ty = memType(b.getContext(), t);
  Lanes lanes;
  if (a == kir::Access::Vector) {
    auto* vt = llvm::FixedVectorType::get(ty, static_cast<unsigned>(vec));
    // Wider than 16 bytes (f32 weights beside f16 rows): 16-byte aligned, split by LLVM.
    auto* ld = b.CreateAlignedLoad(vt, gep(b, base, t, off), align(std::min<int64_t>(16, int64_t{vec} * dtypeBytes(t))));
    km.markInvariant(ld);
    for (int j = 0; j < vec; ++j)
      lanes.push_back(fromMemory(b, b.CreateExtractElement(ld, static_cast<uint64_t>(j)), t));
  } else if (a == kir::Access::Splat) {
    auto* ld = b.CreateAlignedLoad(ty, gep(b, base, t, off), align(dtypeBytes(t)));
    km.markInvariant(ld);
    lanes.assign(static_cast<size_t>(vec), fromMemory(b, ld, t));
  } else {
    for (int j = 0; j < vec; ++j) {
      auto* ld = b.CreateAlignedLoad(ty, gep(b, base, t, laneOffset(b, off, j, inner_stride)), align(dtypeBytes(t)));
      km.markInvariant(ld);
      lanes.push_back(fromMemory(b, ld, t));
    }
  }
  return lanes;
}

void storeLanes(KernelModule& km, llvm::Value* base, DType t, llvm::Value* off,
                kir::Access a, const Lanes& lanes, int64_t inner_stride) {
  llvm::IRBuilder<>& b = km.builder();
  llvm::Type* ty = memType(b.getContext(), t);
  const int v = static_cast<int>(lanes.size());
  if (a == kir::Access::Vector && v > 1) {
    llvm::Value* vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(ty, static_cast<unsigned>(v)));
    for (int j = 0; j < v; ++j)
      vec = b.CreateInsertElement(vec, toMemory(b, lanes[static_cast<size_t>(j)], t), static_cast<uint64_t>(j));
    b.CreateAlignedStore(vec, gep(b, base, t, off), align(std::min<int64_t>(16, int64_t{v} * dtypeBytes(t))));
    return;
  }
  for (int j = 0; j < v; ++j)
    b.CreateAlignedStore(toMemory(b, lanes[static_cast<size_t>(j)], t),
                         gep(b, base, t, laneOffset(b, off, j, inner_stride)), align(dtypeBytes(t)));
}

}  // namespace loom::codegen
