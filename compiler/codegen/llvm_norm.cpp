// The normalization kernel: NormEmitter's structure (each tier's walk over its rows, sets or
// tiles), indexing, fills, loads, stores and loops (see norm_emitter.h), and emitNormKernel.
#include "compiler/codegen/llvm_norm.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <set>

#include "compiler/codegen/lane_access.h"
#include "compiler/codegen/norm_emitter.h"
#include "compiler/codegen/op_emit.h"
#include "ir/error.h"

namespace loom::codegen::norm_detail {

void NormEmitter::emit() {
  const int T = k_.threads_per_row;
  const int split = k_.split;
  llvm::Value* tid = km_.threadIdx();
  t_in_row_ = b_.CreateZExtOrTrunc(b_.CreateURem(tid, b_.getInt32(static_cast<uint32_t>(T))), idx_ty_);
  row_in_block_ = b_.CreateUDiv(tid, b_.getInt32(static_cast<uint32_t>(T)));
  lane_ = b_.CreateURem(tid, b_.getInt32(32));
  tid_ = tid;
  // A row split over `split` blocks (a cluster's, or the whole grid's): block `rank` takes
  // every split-th run of T chunks (a cluster is `split` consecutive blocks along x).
  llvm::Value* block = b_.CreateZExtOrTrunc(km_.blockIdx(), idx_ty_);
  vt_ = t_in_row_;
  if (split > 1) {
    // The grid tier's groups: `split` consecutive blocks each.
    rank_ = b_.CreateURem(block, c(split));
    block = b_.CreateUDiv(block, c(split));
    vt_ = b_.CreateAdd(b_.CreateMul(rank_, c(T)), t_in_row_);
  }
  row_chunks_ = k_.rowElems() / k_.vec;
  registers_ = k_.registers && k_.chunks * k_.vec <= 128;
  // Unrolling every chunk (all loads up front) pays only while the row stays in registers:
  // for rows in shared memory or streamed, it spills at 1024 threads and runs slower, so those
  // passes loop.
  // Measurements: bench/results/2026-11-25-code-comment-measurements.md#emit-unroll-registers
  unrolled_ = registers_;
  // Where one block holds whole rows in shared memory (not vectors of rows: unmeasured),
  // those loops are unrolled (llvm.loop.unroll.count) so that a thread has several chunks'
  // loads in flight: by 4, and wholly (up to 8 chunks) where two loads or more stream from
  // global memory per element each pass (layer norm's weight and bias; rms_norm's weight
  // alone measured the same by 4 and by 8, and wholly unrolled its long bf16 rows spill).
  // Elsewhere the loops stay loops, as unrolled they measured slower: rows split over a
  // cluster or the grid (fully unrolled, those kernels spill), and short rows each thread
  // copies itself (thread_fill: the extra registers halve the blocks per SM).
  // LOOM_TUNE_CHUNK_UNROLL=N sets the count for sweeps (1: plain loops).
  // Measurements: bench/results/2026-11-25-code-comment-measurements.md#emit-chunk-unroll
  chunk_unroll_ = 1;
  if (!k_.grid_sync && k_.cluster == 1 && !k_.thread_fill && !k_.rowTier() && !k_.smem_leaves.empty()) {
    chunk_unroll_ = 4;
    const auto& held = k_.smem_leaves;
    int streamed = 0;
    for (const auto& [leaf, access] : k_.load_access)
      streamed += access == Access::Vector && std::find(held.begin(), held.end(), leaf) == held.end();
    if (streamed >= 2 && k_.chunks <= 8) chunk_unroll_ = k_.chunks;
  }
  if (tune_.chunk_unroll) chunk_unroll_ = *tune_.chunk_unroll;
  if (k_.smem_bytes > 0) {
    auto* arr = llvm::ArrayType::get(b_.getInt8Ty(), 0);
    row_smem_ = new llvm::GlobalVariable(*km_.function()->getParent(), arr, false,
                                         llvm::GlobalValue::ExternalLinkage, nullptr, "loom_row_smem",
                                         nullptr, llvm::GlobalValue::NotThreadLocal, 3);
    row_smem_->setAlignment(llvm::Align(16));
    int64_t off = 0;
    for (const auto& l : k_.smem_leaves) {
      smem_offset_[l] = off;
      // The whole row, or (filled with cp.async) the block's chunks of each of its rows
      // (the row-vector tier: each chunk's rows at a padded pitch).
      int64_t elems = k_.rowTier() ? int64_t{k_.chunks} * k_.threads_per_row * k_.row_pitch
                      : k_.async_fill ? int64_t{k_.rows_per_block} * k_.chunks * k_.threads_per_row * k_.vec
                                      : k_.rowElems();
      int64_t bytes = elems * dtypeBytes(f_.inputs()[static_cast<size_t>(l.input)]->dtype());
      off += (bytes + 15) / 16 * 16;
    }
    LOOM_ASSERT(!k_.async_fill || off * k_.fill_buffers == k_.smem_bytes,
                "shared memory: {} bytes x {} buffers, the schedule says {}", off, k_.fill_buffers, k_.smem_bytes);
    buffer_bytes_ = off;
  }
  std::vector<EPtr> roots;
  for (const auto& st : k_.stores) roots.push_back(st.value);
  lower::visitPostOrder(roots, [&](const ENode& n) {
    if (n.kind == ENode::Kind::Reduce) reductions_.push_back(&n);
  });
  if (k_.grid_sync) {
    workspace_ = km_.param(k_.num_inputs + static_cast<int>(k_.stores.size()));
    // Grid-wide barriers per set: one per reduction, one per distinct variance.
    std::set<std::pair<const ENode*, double>> stats;
    for (const ENode* r : reductions_)
      if (r->op != ir::OpKind::VarMean || stats.insert({r->args[0].get(), r->correction}).second)
        ++barriers_per_set_;
    // Group g (the block's `block` now) has its own counter and partial slots, and walks
    // sets g, g + G, ...; its i-th is its barriers' (and slots' parity's) iteration.
    const int64_t G = k_.grid_groups;
    group_ = block;
    const int64_t per_group = k_.workspace_bytes / G;
    group_ws_ = b_.CreateInBoundsGEP(b_.getInt8Ty(), workspace_, b_.CreateZExtOrTrunc(b_.CreateMul(group_, c(per_group)), b_.getInt64Ty()));
    const int64_t trips = (k_.row_sets + G - 1) / G;
    // Two fill buffers: the group's first set is copied before the loop, and each iteration
    // copies the next one (into the other buffer) before it waits for its own. Every
    // iteration commits one cp.async group (empty past the group's last set), so waiting
    // for all but the newest is waiting for the current set.
    LOOM_ASSERT(k_.fill_buffers == 1 || prefetch(), "{} fill buffers", k_.fill_buffers);
    // The early fills address their rows from `first_row` alone, which thread fill's chunks
    // (the current row's) do not.
    LOOM_ASSERT(!prefetch() || !k_.thread_fill, "two fill buffers with thread fill");
    if (prefetch()) {
      buf_base_ = c(0);
      issueFill(b_.CreateMul(group_, c(k_.rows_per_block)));
      b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {});
    }
    // Each iteration: a set of neighbouring rows; the barrier first, as the last set's
    // stores may still read shared memory the next fill overwrites.
    loop(trips, {}, [&](llvm::Value* i, const std::vector<llvm::Value*>& carried) {
      parity_ = b_.CreateAnd(i, c(1));
      set_ = i;
      barriers_done_ = 0;
      llvm::Value* set = b_.CreateAdd(b_.CreateMul(i, c(G)), group_);
      auto body = [&] {
        barrier();
        if (prefetch()) {
          llvm::Value* next = b_.CreateAdd(set, c(G));
          ifThen(b_.CreateICmpULT(next, c(k_.row_sets)), "prefetch", [&] {
            buf_base_ = b_.CreateMul(b_.CreateXor(parity_, c(1)), c(buffer_bytes_));
            issueFill(b_.CreateMul(next, c(k_.rows_per_block)));
          });
          b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {});
          buf_base_ = b_.CreateMul(parity_, c(buffer_bytes_));
        }
        rowsAt(b_.CreateMul(set, c(k_.rows_per_block)));
      };
      // The same for every block of a group: its barriers stay matched.
      if (k_.row_sets % G != 0) ifThen(b_.CreateICmpSLT(set, c(k_.row_sets)), "set", body);
      else body();
      return carried;
    });
    leaveCountersZero();
  } else {
    rowsAt(b_.CreateMul(block, c(k_.rows_per_block)));
  }
  b_.CreateRetVoid();
}

void NormEmitter::rowsAt(llvm::Value* first_row) {
  first_row_ = first_row;
  llvm::Value* row = b_.CreateAdd(first_row_, b_.CreateZExtOrTrunc(row_in_block_, idx_ty_));
  row_valid_ = b_.CreateICmpULT(row, c(k_.rows()));
  // Rows past the end compute the last row again (warps stay whole for the shuffles) and
  // store nothing.
  row = b_.CreateSelect(row_valid_, row, c(k_.rows() - 1));
  outer_idx_ = unravel(row, k_.outer_shape, 1);
  if (unrolled_)
    for (int i = 0; i < k_.chunks; ++i) chunks_.push_back(chunkAt(c(i)));
  if (k_.async_fill) asyncFill();
  for (const ENode* r : reductions_) reduce(*r);
  publishReductions(reductions_);
  // No block of a cluster may leave while another still reads its shared memory: arrive
  // after the last reduction, wait before returning (the stores run in between). Every
  // thread reaches it: `.aligned`. Relaxed only where the remote reads it guards are
  // complete: their values were stored to shared memory before a block barrier
  // (publishReductions). Otherwise a read still in flight must be ordered before it.
  if (k_.cluster > 1)
    b_.CreateIntrinsic(coalescedStores() ? llvm::Intrinsic::nvvm_barrier_cluster_arrive_relaxed_aligned
                                         : llvm::Intrinsic::nvvm_barrier_cluster_arrive_aligned, {}, {});
  storeAll();
  if (k_.cluster > 1) b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned, {}, {});
}

std::vector<llvm::Value*> NormEmitter::unravel(llvm::Value* i, const std::vector<int64_t>& shape, int vec) {
  std::vector<llvm::Value*> idx(shape.size());
  if (shape.empty()) return idx;
  llvm::Value* q = i;
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t e = d + 1 == shape.size() ? shape[d] / vec : shape[d];
    idx[d] = d == 0 ? q : b_.CreateURem(q, c(e));
    if (d + 1 == shape.size() && vec > 1) idx[d] = b_.CreateMul(idx[d], c(vec));
    if (d > 0) q = b_.CreateUDiv(q, c(e));
  }
  return idx;
}

Chunk NormEmitter::chunkOf(std::vector<llvm::Value*> outer, llvm::Value* t, llvm::Value* k) {
  const int64_t T = k_.threads_per_row;
  Chunk ch;
  llvm::Value* vt = k_.split > 1 ? b_.CreateAdd(b_.CreateMul(rank_, c(T)), t) : t;
  llvm::Value* ci = b_.CreateAdd(vt, b_.CreateMul(k, c(T * k_.split)));
  ch.valid = b_.CreateICmpULT(ci, c(row_chunks_));
  ch.ci = b_.CreateSelect(ch.valid, ci, c(row_chunks_ - 1));
  ch.idx = std::move(outer);
  auto red = unravel(ch.ci, k_.red_shape, k_.vec);
  ch.idx.insert(ch.idx.end(), red.begin(), red.end());
  return ch;
}

Chunk NormEmitter::chunkAt(llvm::Value* k) {
  Chunk ch = chunkOf(outer_idx_, t_in_row_, k);
  // Filled with cp.async: the block's chunks in its own order (room for every thread's
  // `chunks`); filled by the first pass: the whole row, chunk by chunk (clamped into it).
  ch.slot = k_.async_fill ? b_.CreateAdd(t_in_row_, b_.CreateMul(k, c(k_.threads_per_row))) : ch.ci;
  return ch;
}

Chunk NormEmitter::rowChunk() {
  Chunk ch;
  ch.valid = b_.getTrue();
  ch.ci = c(0);
  ch.slot = c(0);
  ch.global = true;
  ch.idx = outer_idx_;
  for (size_t i = 0; i < k_.red_shape.size(); ++i) ch.idx.push_back(c(0));
  return ch;
}

llvm::Value* NormEmitter::offset(int64_t base, const std::vector<int64_t>& strides, const std::vector<llvm::Value*>& idx) {
  llvm::Value* o = c(base);
  for (size_t d = 0; d < strides.size(); ++d)
    if (strides[d] != 0) o = b_.CreateAdd(o, b_.CreateMul(idx[d], c(strides[d])));
  return o;
}

llvm::Value* NormEmitter::smemAddr(const Leaf& l, DType t, const Chunk& ch) {
  return smemAddr(l, t, ch.slot, ch.r_sub ? ch.r_sub : row_in_block_);
}

llvm::Value* NormEmitter::smemAddr(const Leaf& l, DType t, llvm::Value* slot, llvm::Value* row_in_block) {
  const int64_t piece = int64_t{k_.vec} * dtypeBytes(t);
  const int L = k_.rows_per_block;
  if (k_.rowTier()) {  // element `slot` of the block's rows, row after row at a pitch
    llvm::Value* at = b_.CreateAdd(b_.CreateMul(slot, c(k_.row_pitch)), b_.CreateZExtOrTrunc(row_in_block, idx_ty_));
    return b_.CreateInBoundsGEP(b_.getInt8Ty(), row_smem_,
                                withBuffer(b_.CreateAdd(c(smem_offset_.at(l)), b_.CreateMul(at, c(dtypeBytes(t))))));
  }
  if (k_.async_fill && L > 1 && !k_.thread_fill) {
    // Swizzled: a warp of the whole-line fill and stores touches 32 / L neighbouring slots
    // of each of L rows, whose regions start on the same bank; XOR-ing the slot with
    // row * 32 / L (within its aligned 32) spreads them over every bank, and keeps a row's
    // 32 neighbouring slots (the compute passes) a permutation of themselves.
    llvm::Value* r = b_.CreateZExtOrTrunc(row_in_block, idx_ty_);
    slot = b_.CreateXor(slot, b_.CreateAnd(b_.CreateMul(r, c(32 / std::min(L, 32))), c(31)));
  }
  llvm::Value* byte = b_.CreateAdd(c(smem_offset_.at(l)), b_.CreateMul(slot, c(piece)));
  if (k_.rows_per_block > 1)
    byte = b_.CreateAdd(byte, b_.CreateMul(b_.CreateZExtOrTrunc(row_in_block, idx_ty_),
                                           c(int64_t{k_.chunks} * k_.threads_per_row * piece)));
  return b_.CreateInBoundsGEP(b_.getInt8Ty(), row_smem_, withBuffer(byte));
}

llvm::Value* NormEmitter::withBuffer(llvm::Value* byte) {
  return buf_base_ ? b_.CreateAdd(byte, buf_base_) : byte;
}

void NormEmitter::asyncFill() {
  if (prefetch()) {  // issued one iteration earlier (or before the loop)
    b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {b_.getInt32(1)});
  } else {
    // (Pieces below 4 bytes are loaded and stored: no copy to wait for.)
    if (issueFill(first_row_)) b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_all, {}, {});
  }
  if (k_.rows_per_block > 1 && !k_.thread_fill) barrier();
}

bool NormEmitter::issueFill(llvm::Value* first_row) {
  bool copied = false;
  for (const auto& l : k_.smem_leaves) {
    const DType t = f_.inputs()[static_cast<size_t>(l.input)]->dtype();
    const int piece = fillPieceBytes(l);
    if (piece < 4) {  // one row's 2-byte (or 1-byte) element: below cp.async's 4 bytes
      copyFill(l, t, first_row);
      filled_.insert(l);
      continue;
    }
    const auto id = piece == 16 ? llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16
                    : piece == 8 ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8
                                 : llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4;
    LOOM_ASSERT(piece == 4 || piece == 8 || piece == 16, "cp.async of {} bytes", piece);
    loop(unitTrips(), {}, [&](llvm::Value* m, const std::vector<llvm::Value*>& carried) {
      Chunk ch = k_.rowTier() ? rowUnitChunk(m, first_row) : unitChunk(m, first_row);
      auto copy = [&] {
        llvm::Value* g = b_.CreateInBoundsGEP(memType(b_.getContext(), t), km_.param(l.input),
                                              offset(l.offset, l.strides, ch.idx));
        b_.CreateIntrinsic(id, {}, {smemAddr(l, t, ch), g});
      };
      // Row vectors past the row's last element have no slot.
      if (k_.rowTier()) ifThen(ch.valid, "fill", copy);
      else copy();
      return carried;
    });
    filled_.insert(l);
    copied = true;
  }
  return copied;
}

int NormEmitter::fillPieceBytes(const Leaf& l) const {
  return k_.fillPieceBytes(f_.inputs()[static_cast<size_t>(l.input)]->dtype());
}

void NormEmitter::copyFill(const Leaf& l, DType t, llvm::Value* first_row) {
  LOOM_ASSERT(k_.rowTier(), "a fill by loads and stores outside the row-vector tier");
  llvm::Type* ety = memType(b_.getContext(), t);
  const auto align = llvm::Align(static_cast<uint64_t>(dtypeBytes(t)));
  // Batches of 32 units: all 32 loads are issued before the first store waits for its own
  // (measured faster than batches of 8 or 16 on most shapes). Over the grid (two blocks an SM:
  // 64 registers a thread) batches of 16, which spill nothing where 32 spilled (measured
  // level).
  // Measurements: bench/results/2026-11-25-code-comment-measurements.md#copy-fill-batch
  // Units past the block's last are invalid (the pieces past its rows), and every unit's
  // element and row are clamped into the tensor, so the loads need no guard.
  int64_t U = k_.grid_sync ? 16 : 32;
  if (tune_.fill_batch) U = *tune_.fill_batch;
  U = std::min<int64_t>(U, unitTrips());
  loop((unitTrips() + U - 1) / U, {}, [&](llvm::Value* i, const std::vector<llvm::Value*>& carried) {
    std::vector<Chunk> units;
    std::vector<llvm::Value*> vals;
    for (int64_t j = 0; j < U; ++j) {
      units.push_back(rowUnitChunk(b_.CreateAdd(b_.CreateMul(i, c(U)), c(j)), first_row));
      llvm::Value* g = b_.CreateInBoundsGEP(ety, km_.param(l.input), offset(l.offset, l.strides, units.back().idx));
      auto* ld = b_.CreateAlignedLoad(ety, g, align);
      km_.markInvariant(ld);
      vals.push_back(ld);
    }
    for (int64_t j = 0; j < U; ++j)
      ifThen(units[static_cast<size_t>(j)].valid, "fill", [&] {
        b_.CreateAlignedStore(vals[static_cast<size_t>(j)], smemAddr(l, t, units[static_cast<size_t>(j)]), align);
      });
    return carried;
  });
}

Chunk NormEmitter::unitChunk(llvm::Value* m, llvm::Value* first_row) {
  if (k_.thread_fill) return chunkAt(m);  // the thread's own chunk of its own row
  const int L = k_.rows_per_block, T = k_.threads_per_row;
  const int64_t q = k_.red_shape.back() / k_.vec;
  llvm::Value* t = b_.CreateZExtOrTrunc(tid_, idx_ty_);
  llvm::Value* slot = b_.CreateAdd(t, b_.CreateMul(m, c(int64_t{L} * T)));
  llvm::Value* r_sub = c(0);
  if (L > 1) {
    // T is a multiple of q (the schedule sees to it), so the unit's chunk within its line
    // and its row depend on the thread alone: u % q = tid % q, (u / q) % L = (tid / q) % L.
    LOOM_ASSERT(T % q == 0, "{} threads per row, {} chunks per position", T, q);
    llvm::Value* c_in = b_.CreateURem(t, c(q));
    r_sub = b_.CreateURem(b_.CreateUDiv(t, c(q)), c(L));
    slot = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateUDiv(t, c(q * L)), b_.CreateMul(m, c(T / q))), c(q)), c_in);
  }
  llvm::Value* row = b_.CreateAdd(first_row ? first_row : first_row_, r_sub);
  llvm::Value* row_ok = b_.CreateICmpULT(row, c(k_.rows()));
  Chunk ch = chunkOf(unravel(b_.CreateSelect(row_ok, row, c(k_.rows() - 1)), k_.outer_shape, 1),
                     b_.CreateURem(slot, c(T)), b_.CreateUDiv(slot, c(T)));
  ch.valid = b_.CreateAnd(row_ok, ch.valid);
  ch.slot = slot;
  ch.r_sub = b_.CreateTrunc(r_sub, b_.getInt32Ty());
  return ch;
}

Chunk NormEmitter::rowUnitChunk(llvm::Value* m, llvm::Value* first_row) {
  return rowPiece(b_.CreateAdd(b_.CreateZExtOrTrunc(tid_, idx_ty_), b_.CreateMul(m, c(k_.block))), first_row);
}

Chunk NormEmitter::rowPiece(llvm::Value* p, llvm::Value* first_row) {
  const int64_t V = k_.rows_per_block / k_.row_vec, n = k_.rowElems();
  llvm::Value* r_sub = b_.CreateMul(b_.CreateURem(p, c(V)), c(k_.row_vec));
  llvm::Value* e = b_.CreateUDiv(p, c(V));
  llvm::Value* slot = nullptr;
  llvm::Value* slot_ok = b_.getTrue();
  if (k_.split > 1) {
    const int64_t T = k_.threads_per_row, slots = int64_t{k_.chunks} * T;
    slot_ok = b_.CreateICmpULT(e, c(slots));
    slot = b_.CreateSelect(slot_ok, e, c(slots - 1));
    e = b_.CreateAdd(b_.CreateAdd(b_.CreateURem(slot, c(T)), b_.CreateMul(rank_, c(T))),
                     b_.CreateMul(b_.CreateUDiv(slot, c(T)), c(T * k_.split)));
  }
  llvm::Value* row = b_.CreateAdd(first_row ? first_row : first_row_, r_sub);
  llvm::Value* row_ok = b_.CreateICmpULT(row, c(k_.rows()));
  llvm::Value* e_ok = b_.CreateAnd(slot_ok, b_.CreateICmpULT(e, c(n)));
  Chunk ch;
  ch.valid = b_.CreateAnd(row_ok, e_ok);
  ch.ci = b_.CreateSelect(e_ok, e, c(n - 1));
  ch.slot = slot ? slot : ch.ci;
  // Rows come in whole vectors (the row axis divides by row_vec): the last one stands in.
  ch.idx = unravel(b_.CreateSelect(row_ok, row, c(k_.rows() - k_.row_vec)), k_.outer_shape, 1);
  auto red = unravel(ch.ci, k_.red_shape, 1);
  ch.idx.insert(ch.idx.end(), red.begin(), red.end());
  ch.r_sub = b_.CreateTrunc(r_sub, b_.getInt32Ty());
  ch.row_lanes = true;
  return ch;
}

int64_t NormEmitter::unitTrips() const {
  return k_.rowTier() ? (k_.rowVectorUnits() + k_.block - 1) / k_.block : k_.chunks;
}

Lanes NormEmitter::load(const Leaf& l, DType t, const Chunk& ch) {
  const int v = lanesOf(ch);
  if (smem_offset_.count(l) && !ch.global) {
    llvm::Type* ety = memType(b_.getContext(), t);
    auto* vt = llvm::FixedVectorType::get(ety, static_cast<unsigned>(v));
    auto align = llvm::Align(static_cast<uint64_t>(std::min(16, v * dtypeBytes(t))));
    if (filled_.count(l)) {  // a later pass: the row is on chip
      llvm::Value* ld = b_.CreateAlignedLoad(vt, smemAddr(l, t, ch), align);
      Lanes lanes;
      for (int j = 0; j < v; ++j) lanes.push_back(fromMemory(b_, b_.CreateExtractElement(ld, static_cast<uint64_t>(j)), t));
      return lanes;
    }
    Lanes lanes = loadGlobal(l, t, ch);  // the first pass keeps what it reads
    llvm::Value* vec = llvm::PoisonValue::get(vt);
    for (int j = 0; j < v; ++j) vec = b_.CreateInsertElement(vec, toMemory(b_, lanes[static_cast<size_t>(j)], t), static_cast<uint64_t>(j));
    b_.CreateAlignedStore(vec, smemAddr(l, t, ch), align);
    pass_loaded_.insert(l);
    return lanes;
  }
  return loadGlobal(l, t, ch);
}

Lanes NormEmitter::loadGlobal(const Leaf& l, DType t, const Chunk& ch) {
  if (ch.row_lanes)
    return loadLanes(km_, km_.param(l.input), t, offset(l.offset, l.strides, ch.idx), k_.row_load_access.at(l),
                     k_.row_vec, l.strides[k_.outer_shape.size() - 1]);
  return loadLanes(km_, km_.param(l.input), t, offset(l.offset, l.strides, ch.idx),
                   k_.load_access.at(l), k_.vec, l.strides.back());
}

const Lanes& NormEmitter::eval(const ENode& n, Chunk& ch) {
  auto it = ch.memo.find(&n);
  if (it != ch.memo.end()) return it->second;
  Lanes out;
  const size_t v = static_cast<size_t>(lanesOf(ch));
  switch (n.kind) {
    case ENode::Kind::Load:
      out = load(n.leaf, n.dtype, ch);
      break;
    case ENode::Kind::Const:
      out.assign(v, emitConst(b_, n.dtype, n.value));
      break;
    case ENode::Kind::Reduce: {
      llvm::Value* x = reduced_.at(&n);
      if (ch.row_lanes) {  // lane j: row r_sub + j's
        for (size_t j = 0; j < v; ++j)
          out.push_back(b_.CreateLoad(x->getType(), reducedSlot(&n, b_.CreateAdd(ch.r_sub, b_.getInt32(static_cast<uint32_t>(j))))));
        break;
      }
      if (ch.r_sub) x = b_.CreateLoad(x->getType(), reducedSlot(&n, ch.r_sub));  // another row's
      out.assign(v, x);
      break;
    }
    case ENode::Kind::Op: {
      std::vector<const Lanes*> args;
      for (const auto& a : n.args) args.push_back(&eval(*a, ch));
      for (size_t j = 0; j < v; ++j) {
        std::vector<llvm::Value*> a;
        for (const auto* l : args) a.push_back((*l)[j]);
        if (n.op == ir::OpKind::Cast) out.push_back(emitCast(b_, a[0], n.args[0]->dtype, n.dtype));
        else if (n.op == ir::OpKind::Exp && n.dtype == DType::F32 && halfOutputs()) out.push_back(fastExp(a[0]));
        else if (n.op == ir::OpKind::Div && n.dtype == DType::F32 && !ch.row_lanes && perRow(*n.args[1]))
          // By a value of the row (softmax's sum): one reciprocal per row (CSE'd across the
          // lanes, hoisted out of the chunk loop), a multiply per element; within 1.5 ulp
          // where division rounds to 0.5, and without division's ~8-instruction sequence.
          // Zeros, infinities and NaNs divide as before; a divisor below 2^-128, whose
          // reciprocal overflows, gives infinities where division could stay finite.
          out.push_back(b_.CreateFMul(a[0], b_.CreateFDiv(llvm::ConstantFP::get(a[1]->getType(), 1.0), a[1])));
        else out.push_back(emitPointwise(b_, n.op, n.args[n.op == ir::OpKind::Where ? 1 : 0]->dtype, a));
      }
      break;
    }
  }
  return ch.memo[&n] = std::move(out);
}

bool NormEmitter::perRow(const ENode& n) {
  if (n.kind != ENode::Kind::Op) return n.kind != ENode::Kind::Load;  // a Reduce's args are its operand
  return std::all_of(n.args.begin(), n.args.end(), [](const EPtr& a) { return perRow(*a); });
}

bool NormEmitter::halfOutputs() const {
  return std::all_of(k_.stores.begin(), k_.stores.end(),
                     [](const auto& s) { return s.dtype == DType::F16 || s.dtype == DType::BF16; });
}

llvm::Value* NormEmitter::fastExp(llvm::Value* x) {
  llvm::Value* y = b_.CreateFMul(x, llvm::ConstantFP::get(x->getType(), M_LOG2E));
  return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {}, {y});
}

void NormEmitter::ifThen(llvm::Value* cond, const char* name, const std::function<void()>& body) {
  llvm::Function* fn = km_.function();
  auto* then = llvm::BasicBlock::Create(b_.getContext(), name, fn);
  auto* cont = llvm::BasicBlock::Create(b_.getContext(), std::string(name) + "_done", fn);
  b_.CreateCondBr(cond, then, cont);
  b_.SetInsertPoint(then);
  body();
  b_.CreateBr(cont);
  b_.SetInsertPoint(cont);
}

void NormEmitter::beginPass() {
  if (!registers_)
    for (auto& ch : chunks_) ch.memo.clear();
}

void NormEmitter::endPass() {
  filled_.insert(pass_loaded_.begin(), pass_loaded_.end());
  pass_loaded_.clear();
}

void NormEmitter::storeChunk(const schedule::NormKernel::Store& s, const Lanes& lanes, const Chunk& ch, llvm::Value* pred) {
  llvm::Value* off = offset(s.offset, s.strides, ch.idx);
  ifThen(pred, "store", [&] {
    if (ch.row_lanes)
      storeLanes(km_, km_.param(k_.num_inputs + s.output), s.dtype, off, s.row_access, lanes,
                 s.strides[k_.outer_shape.size() - 1]);
    else
      storeLanes(km_, km_.param(k_.num_inputs + s.output), s.dtype, off, s.access, lanes, s.strides.back());
  });
}

void NormEmitter::storeAll() {
  Chunk row = rowChunk();
  for (const auto& s : k_.stores) {
    if (!s.row_only) continue;
    Lanes one = {eval(*s.value, row)[0]};
    // One thread of the row (of its whole cluster) writes: an in-place update (batch norm's
    // running statistics) must not be read by one block after another has written it.
    storeChunk(s, one, row, b_.CreateAnd(row_valid_, b_.CreateICmpEQ(vt_, c(0))));
  }
  auto storeFull = [&](Chunk& ch) {
    for (const auto& s : k_.stores) {
      if (s.row_only) continue;
      Lanes vals = eval(*s.value, ch);
      storeChunk(s, vals, ch, b_.CreateAnd(row_valid_, ch.valid));
    }
  };
  if (coalescedStores()) {
    // Whole lines: the units of the fill, each with its own row's reductions. A thread's
    // units share their row and their place along the innermost reduced axis, so what
    // depends on nothing else (the row's statistics, a per-channel weight) is evaluated
    // once, before the loop: a unit past the row's end at m = 0 stays past it.
    // (The row-vector tier's units share their rows and nothing else.)
    auto unit = [&](llvm::Value* m) { return k_.rowTier() ? rowUnitChunk(m) : unitChunk(m); };
    Chunk first = unit(c(0));
    for (const auto& s : k_.stores)
      if (!s.row_only) hoistInvariant(*s.value, first);
    // Unrolled by 4, so that a thread has several units' shared-memory loads in flight
    // (measured faster on an H100 and an H200). Not for vectors of rows over the grid, whose
    // rows' statistics and weights held for the loop then spill (slower), nor over a cluster
    // (level).
    // Measurements: bench/results/2026-11-25-code-comment-measurements.md#store-all-unroll
    // LOOM_TUNE_STORE_UNROLL overrides it.
    int unroll = (k_.rowTier() && k_.grid_sync) || k_.cluster > 1 ? 1 : 4;
    if (tune_.store_unroll) unroll = *tune_.store_unroll;
    loop(unitTrips(), {}, [&](llvm::Value* m, const std::vector<llvm::Value*>& carried) {
      Chunk ch = unit(m);
      ch.memo = first.memo;
      for (const auto& s : k_.stores)
        if (!s.row_only) storeChunk(s, eval(*s.value, ch), ch, ch.valid);
      return carried;
    }, unroll);
    return;
  }
  forEachChunk({}, [&](Chunk& ch, const std::vector<llvm::Value*>& carried) {
    storeFull(ch);
    return carried;
  });
}

bool NormEmitter::hoistInvariant(const ENode& n, Chunk& ch) {
  auto it = invariant_.find(&n);
  if (it != invariant_.end()) return it->second;
  bool inv = true;
  switch (n.kind) {
    case ENode::Kind::Const:
    case ENode::Kind::Reduce:
      break;
    case ENode::Kind::Load:
      for (size_t d = k_.outer_shape.size(); d + (k_.rowTier() ? 0 : 1) < n.leaf.strides.size(); ++d)
        inv = inv && n.leaf.strides[d] == 0;
      inv = inv && !smem_offset_.count(n.leaf);
      break;
    case ENode::Kind::Op:
      for (const auto& a : n.args) inv = hoistInvariant(*a, ch) && inv;
      break;
  }
  if (inv) eval(n, ch);
  return invariant_[&n] = inv;
}

std::vector<llvm::Value*> NormEmitter::forEachChunk(std::vector<llvm::Value*> carried, const StepFn& step) {
  beginPass();
  if (unrolled_) {
    for (auto& ch : chunks_) carried = step(ch, carried);
  } else {
    carried = loop(k_.chunks, carried, [&](llvm::Value* k, const std::vector<llvm::Value*>& in) {
      Chunk ch = chunkAt(k);
      return step(ch, in);
    }, chunk_unroll_);
  }
  endPass();
  return carried;
}

std::vector<llvm::Value*> NormEmitter::loop(int64_t n, std::vector<llvm::Value*> carried, const LoopBody& body, int unroll) {
  llvm::Function* fn = km_.function();
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(b_.getContext(), "loop", fn);
  auto* exit = llvm::BasicBlock::Create(b_.getContext(), "loop_done", fn);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* k = b_.CreatePHI(idx_ty_, 2);
  k->addIncoming(c(0), pre);
  std::vector<llvm::PHINode*> phis;
  std::vector<llvm::Value*> in;
  for (llvm::Value* v : carried) {
    phis.push_back(b_.CreatePHI(v->getType(), 2));
    phis.back()->addIncoming(v, pre);
    in.push_back(phis.back());
  }
  carried = body(k, in);
  llvm::Value* kn = b_.CreateAdd(k, c(1));
  llvm::BasicBlock* latch = b_.GetInsertBlock();
  k->addIncoming(kn, latch);
  for (size_t i = 0; i < phis.size(); ++i) phis[i]->addIncoming(carried[i], latch);
  llvm::BranchInst* back = b_.CreateCondBr(b_.CreateICmpSLT(kn, c(n)), head, exit);
  if (unroll > 1) {
    llvm::LLVMContext& cx = b_.getContext();
    llvm::MDNode* count = llvm::MDNode::get(cx, {llvm::MDString::get(cx, "llvm.loop.unroll.count"),
                                                 llvm::ConstantAsMetadata::get(b_.getInt32(static_cast<uint32_t>(unroll)))});
    llvm::MDNode* self = llvm::MDNode::getDistinct(cx, {nullptr, count});
    self->replaceOperandWith(0, self);
    back->setMetadata(llvm::LLVMContext::MD_loop, self);
  }
  b_.SetInsertPoint(exit);
  return carried;
}

}  // namespace loom::codegen::norm_detail

namespace loom::codegen {

std::unique_ptr<llvm::Module> emitNormKernel(const ir::Fusion& f, const schedule::NormKernel& k,
                                             const Tuning& tune, llvm::LLVMContext& ctx) {
  KernelModule km(ctx, k.name, f, k.output_alias, k.block, k.grid_sync ? 1 : 0);
  // E.g. each grid group's block beside the others' on every SM: registers for all of them.
  if (k.min_blocks_per_sm > 0) km.minBlocksPerSM(k.min_blocks_per_sm);
  norm_detail::NormEmitter(f, k, tune, km).emit();
  return km.finish();
}

}  // namespace loom::codegen
