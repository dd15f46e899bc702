// NormEmitter's reductions and statistics across a row's threads, warps and cluster (see
// norm_emitter.h).
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include <algorithm>

#include "compiler/codegen/norm_emitter.h"
#include "compiler/codegen/op_emit.h"
#include "ir/error.h"

namespace loom::codegen::norm_detail {

void NormEmitter::publishReductions(const std::vector<const ENode*>& reductions) {
  if (!coalescedStores() || reductions.empty()) return;
  const int64_t R = static_cast<int64_t>(reductions.size());
  auto* arr = llvm::ArrayType::get(b_.getInt64Ty(), static_cast<uint64_t>(R * k_.rows_per_block));
  reduced_smem_ = new llvm::GlobalVariable(*km_.function()->getParent(), arr, false,
                                           llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(arr),
                                           "reduced_smem", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  reduced_smem_->setAlignment(llvm::Align(8));
  for (int64_t j = 0; j < R; ++j) reduced_index_[reductions[static_cast<size_t>(j)]] = j;
  ifThen(b_.CreateICmpEQ(t_in_row_, c(0)), "rpublish", [&] {
    for (const ENode* r : reductions) b_.CreateStore(reduced_.at(r), reducedSlot(r, row_in_block_));
  });
  barrier();
}

llvm::Value* NormEmitter::reducedSlot(const ENode* r, llvm::Value* row_in_block) {
  llvm::Value* i = b_.CreateAdd(b_.CreateMul(b_.CreateZExtOrTrunc(row_in_block, idx_ty_), c(static_cast<int64_t>(reduced_index_.size()))),
                                c(reduced_index_.at(r)));
  return b_.CreateInBoundsGEP(reduced_smem_->getValueType(), reduced_smem_, {c(0), i});
}

llvm::Value* NormEmitter::identity(Combine cb, DType acc) {
  llvm::Type* ty = regType(b_.getContext(), acc);
  if (cb == Combine::Sum) return isFloat(acc) ? llvm::ConstantFP::get(ty, 0.0) : llvm::ConstantInt::get(ty, 0);
  if (isFloat(acc)) return llvm::ConstantFP::get(ty, cb == Combine::Max ? -INFINITY : INFINITY);
  auto* it = llvm::cast<llvm::IntegerType>(ty);
  return cb == Combine::Max ? llvm::ConstantInt::get(it, llvm::APInt::getSignedMinValue(it->getBitWidth()))
                            : llvm::ConstantInt::get(it, llvm::APInt::getSignedMaxValue(it->getBitWidth()));
}

llvm::Value* NormEmitter::combine(Combine cb, DType acc, llvm::Value* a, llvm::Value* b) {
  if (cb == Combine::Sum) return isFloat(acc) ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b);
  if (isFloat(acc))
    return b_.CreateIntrinsic(cb == Combine::Max ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum, {a->getType()}, {a, b});
  return b_.CreateIntrinsic(cb == Combine::Max ? llvm::Intrinsic::smax : llvm::Intrinsic::smin, {a->getType()}, {a, b});
}

llvm::Value* NormEmitter::shuffle(llvm::Intrinsic::ID id, llvm::Value* v, llvm::Value* lane_arg) {
  llvm::Type* ty = v->getType();
  unsigned bits = ty->getPrimitiveSizeInBits();
  auto shfl = [&](llvm::Value* x) {
    return b_.CreateIntrinsic(id, {}, {b_.getInt32(0xffffffffu), x, lane_arg, b_.getInt32(31)});
  };
  if (bits == 32) return b_.CreateBitCast(shfl(b_.CreateBitCast(v, b_.getInt32Ty())), ty);
  LOOM_ASSERT(bits == 64, "shuffle of a {}-bit value", bits);
  auto* v2 = llvm::FixedVectorType::get(b_.getInt32Ty(), 2);
  llvm::Value* p = b_.CreateBitCast(v, v2);
  llvm::Value* lo = shfl(b_.CreateExtractElement(p, uint64_t{0}));
  llvm::Value* hi = shfl(b_.CreateExtractElement(p, uint64_t{1}));
  llvm::Value* r = b_.CreateInsertElement(llvm::PoisonValue::get(v2), lo, uint64_t{0});
  r = b_.CreateInsertElement(r, hi, uint64_t{1});
  return b_.CreateBitCast(r, ty);
}

llvm::Value* NormEmitter::shuffleXor(llvm::Value* v, int offset) {
  return shuffle(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, v, b_.getInt32(static_cast<uint32_t>(offset)));
}

llvm::Value* NormEmitter::blockReduce(Combine cb, DType acc, llvm::Value* v) {
  const int T = k_.threads_per_row;
  for (int off = std::min(T, 32) / 2; off >= 1; off /= 2) v = combine(cb, acc, v, shuffleXor(v, off));
  if (T <= 32) return acrossBlocks(cb, acc, v);
  const int wpr = T / 32;
  llvm::Type* ty = regType(b_.getContext(), acc);
  auto* arr = llvm::ArrayType::get(ty, static_cast<uint64_t>(wpr * k_.rows_per_block));
  auto* smem = new llvm::GlobalVariable(*km_.function()->getParent(), arr, false,
                                        llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(arr),
                                        "red_smem", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  smem->setAlignment(llvm::Align(8));
  llvm::Value* warp = b_.CreateUDiv(b_.CreateTrunc(t_in_row_, b_.getInt32Ty()), b_.getInt32(32));
  llvm::Value* base = b_.CreateMul(row_in_block_, b_.getInt32(static_cast<uint32_t>(wpr)));
  auto slot = [&](llvm::Value* i) { return b_.CreateInBoundsGEP(arr, smem, {b_.getInt32(0), b_.CreateAdd(base, i)}); };
  // lane 0 of each warp publishes its partial
  ifThen(b_.CreateICmpEQ(lane_, b_.getInt32(0)), "publish", [&] {
    b_.CreateStore(v, slot(warp));
  });
  barrier();
  llvm::Value* total = b_.CreateLoad(ty, slot(b_.getInt32(0)));
  for (int w = 1; w < wpr; ++w) total = combine(cb, acc, total, b_.CreateLoad(ty, slot(b_.getInt32(static_cast<uint32_t>(w)))));
  barrier();
  return acrossBlocks(cb, acc, total);
}

llvm::Value* NormEmitter::acrossBlocks(Combine cb, DType acc, llvm::Value* v) {
  if (k_.grid_sync) return acrossGrid(cb, acc, v);
  return acrossCluster(cb, acc, v);
}

std::vector<llvm::Value*> NormEmitter::byFirstWarp(llvm::Type* ty, int n, const std::function<std::vector<llvm::Value*>()>& compute) {
  if (k_.threads_per_row <= 32) {
    std::vector<llvm::Value*> out;
    for (llvm::Value* v : compute()) out.push_back(shuffleFromRowStart(v));
    return out;
  }
  auto* arr = llvm::ArrayType::get(ty, static_cast<uint64_t>(n * k_.rows_per_block));
  auto* smem = new llvm::GlobalVariable(*km_.function()->getParent(), arr, false,
                                        llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(arr),
                                        "row_result", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  smem->setAlignment(llvm::Align(8));
  auto slot = [&](int i) {
    llvm::Value* at = b_.CreateAdd(b_.CreateMul(row_in_block_, b_.getInt32(static_cast<uint32_t>(n))), b_.getInt32(static_cast<uint32_t>(i)));
    return b_.CreateInBoundsGEP(arr, smem, {b_.getInt32(0), at});
  };
  ifThen(b_.CreateICmpULT(t_in_row_, c(32)), "first_warp", [&] {
    std::vector<llvm::Value*> vals = compute();
    ifThen(b_.CreateICmpEQ(t_in_row_, c(0)), "first_lane", [&] {
      for (int i = 0; i < n; ++i) b_.CreateStore(vals[static_cast<size_t>(i)], slot(i));
    });
  });
  barrier();
  std::vector<llvm::Value*> out;
  for (int i = 0; i < n; ++i) out.push_back(b_.CreateLoad(ty, slot(i)));
  return out;
}

llvm::Value* NormEmitter::shuffleFromRowStart(llvm::Value* v) {
  const uint32_t T = static_cast<uint32_t>(k_.threads_per_row);
  llvm::Value* src = b_.CreateMul(b_.CreateUDiv(lane_, b_.getInt32(T)), b_.getInt32(T));
  return shuffle(llvm::Intrinsic::nvvm_shfl_sync_idx_i32, v, src);
}

llvm::Value* NormEmitter::blockCount(llvm::Value* rank, DType acc) {
  const int64_t T = k_.threads_per_row, P = k_.split;
  llvm::Value* n = c(0);
  for (int64_t k = 0; k < k_.chunks; ++k) {
    llvm::Value* left = b_.CreateSub(c(row_chunks_), b_.CreateAdd(b_.CreateMul(rank, c(T)), c(k * T * P)));
    left = b_.CreateSelect(b_.CreateICmpSLT(left, c(0)), c(0), left);
    n = b_.CreateAdd(n, b_.CreateSelect(b_.CreateICmpSGT(left, c(T)), c(T), left));
  }
  return emitCast(b_, b_.CreateMul(n, c(k_.vec)), k_.index64 ? DType::I64 : DType::I32, acc);
}

llvm::Value* NormEmitter::acrossCluster(Combine cb, DType acc, llvm::Value* v) {
  if (k_.cluster == 1) return v;
  llvm::Type* ty = v->getType();
  auto* arr = llvm::ArrayType::get(ty, static_cast<uint64_t>(k_.rows_per_block));
  auto* slots = new llvm::GlobalVariable(*km_.function()->getParent(), arr, false,
                                         llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(arr),
                                         "cluster_red", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
  slots->setAlignment(llvm::Align(8));
  llvm::Value* slot = b_.CreateInBoundsGEP(arr, slots, {b_.getInt32(0), row_in_block_});
  ifThen(b_.CreateICmpEQ(t_in_row_, c(0)), "cpublish", [&] {
    b_.CreateStore(v, slot);
  });
  // Release and acquire (the default): the partials in shared memory are published.
  b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_arrive_aligned, {}, {});
  b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, {}, {});
  llvm::Value* generic = b_.CreateAddrSpaceCast(slot, llvm::PointerType::get(b_.getContext(), 0));
  llvm::Value* total = nullptr;
  for (int r = 0; r < k_.cluster; ++r) {
    llvm::Value* remote = b_.CreateIntrinsic(llvm::Intrinsic::nvvm_mapa, {}, {generic, b_.getInt32(static_cast<uint32_t>(r))});
    llvm::Value* x = b_.CreateLoad(ty, remote);
    total = total ? combine(cb, acc, total, x) : x;
  }
  return total;
}

llvm::Value* NormEmitter::rowReduce(Combine cb, DType acc, const ValuesFn& f) {
  llvm::Value* partial = identity(cb, acc);
  auto accumulate = [&](Chunk& ch) {
    Lanes vals = f(ch);
    llvm::Value* local = identity(cb, acc);
    for (auto* x : vals) local = combine(cb, acc, local, x);
    return b_.CreateSelect(ch.valid, local, identity(cb, acc));
  };
  partial = forEachChunk({partial}, [&](Chunk& ch, const std::vector<llvm::Value*>& carried) {
    return std::vector<llvm::Value*>{combine(cb, acc, carried[0], accumulate(ch))};
  })[0];
  return blockReduce(cb, acc, partial);
}

llvm::Value* NormEmitter::shiftedMean(const ENode& x, DType acc, const ValuesFn& values, double n) {
  // A row whole in the block's shared memory, filled behind a block barrier (several rows a
  // block), has its first element there: no global load (and its latency) before the first
  // pass. (With one row a block there is no barrier: another thread copied it.) With a
  // thread fill, the row's first thread copied it as its own first chunk: a shuffle.
  Chunk first = k_.thread_fill ? chunkAt(c(0)) : rowChunk();
  if (!k_.thread_fill) first.global = !(k_.async_fill && k_.split == 1 && k_.rows_per_block > 1);
  llvm::Value* x0 = emitCast(b_, eval(x, first)[0], x.dtype, acc);
  if (k_.thread_fill) x0 = shuffleFromRowStart(x0);
  llvm::Value* sum = rowReduce(Combine::Sum, acc, [&](Chunk& ch) {
    Lanes out;
    for (auto* v : values(ch)) out.push_back(b_.CreateFSub(v, x0));
    return out;
  });
  return b_.CreateFAdd(x0, b_.CreateFDiv(sum, emitConst(b_, acc, n)));
}

NormEmitter::Stats NormEmitter::chan(DType acc, const Stats& a, const Stats& b) {
  llvm::Value* n = b_.CreateFAdd(a.n, b.n);
  llvm::Value* safe = b_.CreateSelect(b_.CreateFCmpOGT(n, emitConst(b_, acc, 0)), n, emitConst(b_, acc, 1));
  llvm::Value* delta = b_.CreateFSub(b.mean, a.mean);
  // One division: b's share of the merged count; a's share is its complement. In f32 the
  // hardware's approximate division (2 ulp, on whole counts): a weight, not a result, and
  // the merges sit on the grid tier's critical path (measured faster).
  // Measurements: bench/results/2026-11-25-code-comment-measurements.md#chan-approx-division
  llvm::Value* fb = acc == DType::F32 ? b_.CreateIntrinsic(llvm::Intrinsic::nvvm_div_approx_f, {}, {b.n, safe})
                                      : b_.CreateFDiv(b.n, safe);
  llvm::Value* mean = b_.CreateFAdd(a.mean, b_.CreateFMul(delta, fb));
  llvm::Value* m2 = b_.CreateFAdd(b_.CreateFAdd(a.m2, b.m2),
                                  b_.CreateFMul(b_.CreateFMul(b_.CreateFMul(delta, delta), a.n), fb));
  return {n, mean, m2};
}

std::pair<llvm::Value*, llvm::Value*> NormEmitter::welford(DType acc, const ValuesFn& values) {
  auto zero = emitConst(b_, acc, 0);
  auto chunkStats = [&](Chunk& ch) {
    Lanes v = values(ch);
    llvm::Value* s = zero;
    for (auto* x : v) s = b_.CreateFAdd(s, x);
    llvm::Value* cnt = emitConst(b_, acc, static_cast<double>(v.size()));
    llvm::Value* mean = b_.CreateFDiv(s, cnt);
    llvm::Value* m2 = zero;
    for (auto* x : v) {
      llvm::Value* d = b_.CreateFSub(x, mean);
      m2 = b_.CreateFAdd(m2, b_.CreateFMul(d, d));
    }
    return Stats{b_.CreateSelect(ch.valid, cnt, zero), b_.CreateSelect(ch.valid, mean, zero),
                 b_.CreateSelect(ch.valid, m2, zero)};
  };
  LOOM_ASSERT(k_.cluster == 1, "Welford statistics over a cluster");
  LOOM_ASSERT(!k_.grid_sync || k_.threads_per_row >= 32 || 32 % k_.threads_per_row == 0,
              "grid statistics need rows of whole warps or of threads dividing a warp");
  if (k_.async_fill && statsByRowVectors()) {
    // Every thread of a row already holds its block's statistics: no merge across threads.
    Stats st = rowVectorStats(acc, values);
    if (k_.grid_sync) st = acrossGridStats(acc, st);
    return {st.mean, st.m2};
  }
  llvm::Type* ty = zero->getType();
  Stats st;
  if (k_.async_fill) {
    // The thread's chunks are on chip: an exact two-pass over them (its sum and count, then
    // squared deviations from its own mean), no division per chunk; Chan's merge starts
    // across threads.
    auto sums = forEachChunk({zero, zero}, [&](Chunk& ch, const std::vector<llvm::Value*>& carried) {
      llvm::Value* s = zero;
      for (auto* x : values(ch)) s = b_.CreateFAdd(s, x);
      return std::vector<llvm::Value*>{
          b_.CreateFAdd(carried[0], b_.CreateSelect(ch.valid, emitConst(b_, acc, k_.vec), zero)),
          b_.CreateFAdd(carried[1], b_.CreateSelect(ch.valid, s, zero))};
    });
    llvm::Value* n = sums[0];
    llvm::Value* safe = b_.CreateSelect(b_.CreateFCmpOGT(n, zero), n, emitConst(b_, acc, 1));
    llvm::Value* mean = b_.CreateFDiv(sums[1], safe);
    auto m2 = forEachChunk({zero}, [&](Chunk& ch, const std::vector<llvm::Value*>& carried) {
      llvm::Value* s = zero;
      for (auto* x : values(ch)) {
        llvm::Value* d = b_.CreateFSub(x, mean);
        s = b_.CreateFAdd(s, b_.CreateFMul(d, d));
      }
      return std::vector<llvm::Value*>{b_.CreateFAdd(carried[0], b_.CreateSelect(ch.valid, s, zero))};
    });
    st = Stats{n, mean, m2[0]};
  } else {
    auto folded = forEachChunk({zero, zero, zero}, [&](Chunk& ch, const std::vector<llvm::Value*>& carried) {
      Stats next = chan(acc, Stats{carried[0], carried[1], carried[2]}, chunkStats(ch));
      return std::vector<llvm::Value*>{next.n, next.mean, next.m2};
    });
    st = Stats{folded[0], folded[1], folded[2]};
  }
  // Across the row's threads: butterfly within warps, then shared memory across warps.
  const int T = k_.threads_per_row;
  for (int off = std::min(T, 32) / 2; off >= 1; off /= 2)
    st = chan(acc, st, Stats{shuffleXor(st.n, off), shuffleXor(st.mean, off), shuffleXor(st.m2, off)});
  if (T > 32) {
    // Publish each warp's statistics, then every thread merges its row's warps in order.
    const int wpr = T / 32;
    auto* arr = llvm::ArrayType::get(ty, static_cast<uint64_t>(3 * wpr * k_.rows_per_block));
    auto* smem = new llvm::GlobalVariable(*km_.function()->getParent(), arr, false,
                                          llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(arr),
                                          "welford_smem", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
    smem->setAlignment(llvm::Align(8));
    llvm::Value* warp = b_.CreateUDiv(b_.CreateTrunc(t_in_row_, b_.getInt32Ty()), b_.getInt32(32));
    llvm::Value* base = b_.CreateMul(row_in_block_, b_.getInt32(static_cast<uint32_t>(3 * wpr)));
    auto slot = [&](llvm::Value* w, int field) {
      llvm::Value* i = b_.CreateAdd(base, b_.CreateAdd(b_.CreateMul(w, b_.getInt32(3)), b_.getInt32(static_cast<uint32_t>(field))));
      return b_.CreateInBoundsGEP(arr, smem, {b_.getInt32(0), i});
    };
    ifThen(b_.CreateICmpEQ(lane_, b_.getInt32(0)), "wpublish", [&] {
      b_.CreateStore(st.n, slot(warp, 0));
      b_.CreateStore(st.mean, slot(warp, 1));
      b_.CreateStore(st.m2, slot(warp, 2));
    });
    barrier();
    // The row's first warp merges: lane w takes warp w's statistics, then a butterfly.
    auto merged = byFirstWarp(ty, 3, [&] {
      llvm::Value* w = b_.CreateTrunc(t_in_row_, b_.getInt32Ty());
      llvm::Value* ok = b_.CreateICmpULT(w, b_.getInt32(static_cast<uint32_t>(wpr)));
      llvm::Value* wc = b_.CreateSelect(ok, w, b_.getInt32(0));
      Stats m{b_.CreateSelect(ok, b_.CreateLoad(ty, slot(wc, 0)), zero), b_.CreateSelect(ok, b_.CreateLoad(ty, slot(wc, 1)), zero),
              b_.CreateSelect(ok, b_.CreateLoad(ty, slot(wc, 2)), zero)};
      for (int off = std::min(wpr, 32) / 2; off >= 1; off /= 2)
        m = chan(acc, m, Stats{shuffleXor(m.n, off), shuffleXor(m.mean, off), shuffleXor(m.m2, off)});
      return std::vector<llvm::Value*>{m.n, m.mean, m.m2};
    });
    st = Stats{merged[0], merged[1], merged[2]};
  }
  if (k_.grid_sync) st = acrossGridStats(acc, st);
  return {st.mean, st.m2};
}

bool NormEmitter::statsByRowVectors() const {
  // Rows a thread keeps in registers between passes read shared memory once: they keep
  // the thread-per-row passes (by vectors measured slower).
  // Measurements: bench/results/2026-11-25-code-comment-measurements.md#stats-by-row-vectors-registers
  if (!k_.rowTier() || k_.split < 2 || registers_) return false;
  if (tune_.rowvec_stats == 0) return false;
  const int W = k_.threads_per_row * k_.row_vec, S = std::min(W, 32);
  return k_.row_vec * (W / S) <= 32 && int64_t{k_.block} / S * k_.row_vec * 8 <= 2048;
}

NormEmitter::Stats NormEmitter::rowVectorStats(DType acc, const ValuesFn& values) {
  const int V = k_.row_vec, T = k_.threads_per_row, W = T * V, S = std::min(W, 32);
  const int64_t groups = k_.rows_per_block / V, slots = int64_t{k_.chunks} * T;
  const int64_t trips = (slots + W - 1) / W;
  // Unrolled by 4, or by 2 where blocks share an SM (64 registers a thread: by 4 spilled and
  // measured slower). LOOM_TUNE_CHUNK_UNROLL overrides it.
  // Measurements: bench/results/2026-11-25-code-comment-measurements.md#row-vector-stats-unroll
  int unroll = static_cast<int>(std::min<int64_t>(trips, k_.min_blocks_per_sm > 1 ? 2 : 4));
  if (tune_.chunk_unroll) unroll = chunk_unroll_;
  llvm::Value* zero = emitConst(b_, acc, 0);
  llvm::Type* ty = zero->getType();
  llvm::Value* tid = b_.CreateZExtOrTrunc(tid_, idx_ty_);
  llvm::Value* g = b_.CreateUDiv(tid, c(W));
  llvm::Value* q = b_.CreateURem(tid, c(W));
  llvm::Value* j = b_.CreateURem(b_.CreateUDiv(tid_, b_.getInt32(static_cast<uint32_t>(T))), b_.getInt32(static_cast<uint32_t>(V)));
  auto* arr = llvm::ArrayType::get(ty, static_cast<uint64_t>(k_.block / S * V));
  auto* smem = new llvm::GlobalVariable(*km_.function()->getParent(), arr, false, llvm::GlobalValue::InternalLinkage,
                                        llvm::UndefValue::get(arr), "rowvec_stats", nullptr,
                                        llvm::GlobalValue::NotThreadLocal, 3);
  smem->setAlignment(llvm::Align(8));
  auto slot = [&](llvm::Value* i) { return b_.CreateInBoundsGEP(arr, smem, {b_.getInt32(0), i}); };
  // Every row's total over the vector's threads, for a sum of f(lanes) per row.
  auto pass = [&](auto f) {
    auto sums = loop(trips, std::vector<llvm::Value*>(static_cast<size_t>(V), zero),
                     [&](llvm::Value* i, const std::vector<llvm::Value*>& in) {
      Chunk ch = rowPiece(b_.CreateAdd(b_.CreateMul(b_.CreateAdd(q, b_.CreateMul(i, c(W))), c(groups)), g));
      Lanes v = f(ch);
      std::vector<llvm::Value*> out;
      for (int l = 0; l < V; ++l) out.push_back(b_.CreateFAdd(in[static_cast<size_t>(l)], b_.CreateSelect(ch.valid, v[static_cast<size_t>(l)], zero)));
      return out;
    }, unroll);
    // vals[i] is row (j's low `bits` bits) | i << bits.
    std::vector<llvm::Value*> vals = sums;
    int bits = 0;
    for (; (1 << bits) < V && (T << bits) < 32; ++bits) {
      llvm::Value* hi = b_.CreateICmpNE(b_.CreateAnd(b_.CreateLShr(j, b_.getInt32(static_cast<uint32_t>(bits))), b_.getInt32(1)), b_.getInt32(0));
      std::vector<llvm::Value*> next;
      for (size_t i = 0; i + 1 < vals.size(); i += 2) {
        llvm::Value* keep = b_.CreateSelect(hi, vals[i + 1], vals[i]);
        llvm::Value* send = b_.CreateSelect(hi, vals[i], vals[i + 1]);
        next.push_back(b_.CreateFAdd(keep, shuffleXor(send, T << bits)));
      }
      vals = std::move(next);
    }
    for (int off = 1; off < std::min(T, 32); off *= 2)
      for (auto& v : vals) v = b_.CreateFAdd(v, shuffleXor(v, off));
    llvm::Value* seg = b_.CreateUDiv(tid_, b_.getInt32(static_cast<uint32_t>(S)));
    ifThen(b_.CreateICmpEQ(b_.CreateURem(tid_, b_.getInt32(static_cast<uint32_t>(std::min(T, 32)))), b_.getInt32(0)), "rvpublish", [&] {
      llvm::Value* low = b_.CreateAnd(j, b_.getInt32(static_cast<uint32_t>((1 << bits) - 1)));
      for (size_t i = 0; i < vals.size(); ++i) {
        llvm::Value* row = b_.CreateOr(low, b_.getInt32(static_cast<uint32_t>(i << bits)));
        b_.CreateStore(vals[i], slot(b_.CreateAdd(b_.CreateMul(seg, b_.getInt32(static_cast<uint32_t>(V))), row)));
      }
    });
    barrier();
    llvm::Value* seg0 = b_.CreateMul(b_.CreateUDiv(tid_, b_.getInt32(static_cast<uint32_t>(W))), b_.getInt32(static_cast<uint32_t>(W / S)));
    std::vector<llvm::Value*> tot;
    for (int r = 0; r < V; ++r) {
      llvm::Value* t = nullptr;
      for (int w = 0; w < W / S; ++w) {
        llvm::Value* at = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(seg0, b_.getInt32(static_cast<uint32_t>(w))), b_.getInt32(static_cast<uint32_t>(V))),
                                       b_.getInt32(static_cast<uint32_t>(r)));
        llvm::Value* x = b_.CreateLoad(ty, slot(at));
        t = t ? b_.CreateFAdd(t, x) : x;
      }
      tot.push_back(t);
    }
    barrier();  // before the next pass writes its totals
    return tot;
  };
  beginPass();
  auto sums = pass([&](Chunk& ch) { return values(ch); });
  llvm::Value* n = blockCount(rank_, acc);
  llvm::Value* safe = b_.CreateSelect(b_.CreateFCmpOGT(n, zero), n, emitConst(b_, acc, 1));
  std::vector<llvm::Value*> mean;
  for (auto* s : sums) mean.push_back(b_.CreateFDiv(s, safe));
  beginPass();
  auto m2 = pass([&](Chunk& ch) {
    Lanes out;
    Lanes v = values(ch);
    for (size_t l = 0; l < v.size(); ++l) {
      llvm::Value* d = b_.CreateFSub(v[l], mean[l]);
      out.push_back(b_.CreateFMul(d, d));
    }
    return out;
  });
  auto own = [&](const std::vector<llvm::Value*>& per_row) {
    llvm::Value* x = per_row[0];
    for (int r = 1; r < V; ++r) x = b_.CreateSelect(b_.CreateICmpEQ(j, b_.getInt32(static_cast<uint32_t>(r))), per_row[static_cast<size_t>(r)], x);
    return x;
  };
  return Stats{n, own(mean), own(m2)};
}

void NormEmitter::reduce(const ENode& r) {
  if (reduced_.count(&r)) return;
  const ENode& x = *r.args[0];
  DType acc = computeDType(r.dtype);
  auto values = [&](Chunk& ch) {
    Lanes out;
    for (auto* v : eval(x, ch)) out.push_back(emitCast(b_, v, x.dtype, acc));
    return out;
  };
  double n = static_cast<double>(k_.rowElems());
  llvm::Value* result = nullptr;
  switch (r.op) {
    case ir::OpKind::Sum: result = rowReduce(Combine::Sum, acc, values); break;
    case ir::OpKind::ReduceMax: result = rowReduce(Combine::Max, acc, values); break;
    case ir::OpKind::ReduceMin: result = rowReduce(Combine::Min, acc, values); break;
    case ir::OpKind::Mean:
      result = shiftedMean(x, acc, values, n);
      break;
    case ir::OpKind::VarMean: {
      // Two passes over the row on chip: the mean, then the squared deviations from it.
      auto key = std::make_pair(&x, r.correction);
      auto it = stats_.find(key);
      if (it == stats_.end() && ((!registers_ && !k_.async_fill) || k_.grid_sync)) {
        // Streaming rows: one Welford pass instead of two reads for the statistics; the
        // grid tier: one grid-wide barrier for both statistics instead of two.
        auto [mean, m2] = welford(acc, values);
        llvm::Value* var = b_.CreateFDiv(m2, emitConst(b_, acc, n - r.correction));
        it = stats_.emplace(key, std::make_pair(var, mean)).first;
      }
      if (it == stats_.end()) {
        llvm::Value* mean = shiftedMean(x, acc, values, n);
        llvm::Value* m2 = rowReduce(Combine::Sum, acc, [&](Chunk& ch) {
          Lanes out;
          for (auto* v : values(ch)) {
            llvm::Value* d = b_.CreateFSub(v, mean);
            out.push_back(b_.CreateFMul(d, d));
          }
          return out;
        });
        llvm::Value* var = b_.CreateFDiv(m2, emitConst(b_, acc, n - r.correction));
        it = stats_.emplace(key, std::make_pair(var, mean)).first;
      }
      result = r.out_index == 0 ? it->second.first : it->second.second;
      break;
    }
    default:
      LOOM_ASSERT(false, "reduction `{}`", ir::opName(r.op));
  }
  reduced_[&r] = emitCast(b_, result, acc, r.dtype);
}

}  // namespace loom::codegen::norm_detail
