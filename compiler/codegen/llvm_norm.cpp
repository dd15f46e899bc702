#include "compiler/codegen/llvm_norm.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

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

// Where one chunk of a row lives: its coordinates, and whether it is inside the row.
struct Chunk {
  std::vector<llvm::Value*> idx;  // outer coords ++ reduced coords (innermost * vec)
  llvm::Value* valid = nullptr;   // i1
  llvm::Value* ci = nullptr;      // the chunk's index in its row (clamped into the row)
  llvm::Value* slot = nullptr;    // its place in the block's shared-memory copy of the row
  bool global = false;            // read from global memory even where the row is on chip
  llvm::Value* r_sub = nullptr;   // another row of the block (coalesced stores): i32
  bool row_lanes = false;         // lanes are `row_vec` neighbouring rows from r_sub on
  std::map<const ENode*, Lanes> memo;
};

class NormEmitter {
 public:
  NormEmitter(const ir::Fusion& f, const schedule::NormKernel& k, KernelModule& km)
      : f_(f), k_(k), km_(km), b_(km.builder()) {
    idx_ty_ = k.index64 ? b_.getInt64Ty() : b_.getInt32Ty();
  }

  void emit() {
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
    // for rows in shared memory or streamed, it spills at 1024 threads (measured on an H100:
    // layer norm 32768 x 65536 bf16 fell from 1.7 to 1.2 TB/s), so those passes loop.
    unrolled_ = registers_;
    // Where one block holds whole rows in shared memory (not vectors of rows: unmeasured),
    // those loops are unrolled (llvm.loop.unroll.count) so that a thread has several chunks'
    // loads in flight: by 4, and wholly (up to 8 chunks) where two loads or more stream from
    // global memory per element each pass (layer norm's weight and bias; rms_norm's weight
    // alone measured the same by 4 and by 8, and wholly unrolled its bf16 rows of 50008 spill 8
    // bytes at 64 registers). Measured on an H100, plain loop -> this rule, GB/s, two runs
    // each: layer_norm bf16 32768 x 65536 2890-2893 -> 3013 (wholly; by 4 it was 2914);
    // instance_norm f16 8x64x256x256 NCHW 2352-2359 -> 2372-2402; batch_norm f32 64x256x28x28
    // 2197-2198 -> 2210-2233; group_norm f16 16x512x64x64 NCHW 2335-2363 -> 2354-2371; softmax
    // and rms_norm bf16 32768 x 65536 level. Elsewhere the loops stay loops, as unrolled they
    // measured slower: rows split over a cluster (group_norm 32x128x256x256 NCHW 2695 -> 2678)
    // or the grid (channels-last instance_norm 1437 -> 1360; fully unrolled, those kernels
    // spill), and short rows each thread copies itself (thread_fill: layer_norm bf16 32768 x
    // 256 2052-2153 -> 1814-1863; its registers 32 -> 56 halve the blocks per SM).
    // LOOM_TUNE_CHUNK_UNROLL=N sets the count for sweeps (1: plain loops).
    chunk_unroll_ = 1;
    if (!k_.grid_sync && k_.cluster == 1 && !k_.thread_fill && k_.row_vec == 1 && !k_.smem_leaves.empty()) {
      chunk_unroll_ = 4;
      const auto& held = k_.smem_leaves;
      int streamed = 0;
      for (const auto& [leaf, access] : k_.load_access)
        streamed += access == Access::Vector && std::find(held.begin(), held.end(), leaf) == held.end();
      if (streamed >= 2 && k_.chunks <= 8) chunk_unroll_ = k_.chunks;
    }
    if (const char* u = std::getenv("LOOM_TUNE_CHUNK_UNROLL")) chunk_unroll_ = std::max(1, std::atoi(u));
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
        int64_t elems = k_.row_vec > 1 ? int64_t{k_.chunks} * k_.threads_per_row * k_.row_pitch
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

  // Everything for the block's rows from `first_row` on: fill, reductions, stores.
  void rowsAt(llvm::Value* first_row) {
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

 private:
  llvm::Value* c(int64_t v) { return llvm::ConstantInt::get(idx_ty_, static_cast<uint64_t>(v), true); }

  std::vector<llvm::Value*> unravel(llvm::Value* i, const std::vector<int64_t>& shape, int vec) {
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

  // Chunk k of the row's thread `t` of this block: chunk rank * T + t + k * T * split of the
  // row (the row's blocks take turns by runs of T), clamped into the row, at outer coords
  // `outer`.
  Chunk chunkOf(std::vector<llvm::Value*> outer, llvm::Value* t, llvm::Value* k) {
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

  Chunk chunkAt(llvm::Value* k) {
    Chunk ch = chunkOf(outer_idx_, t_in_row_, k);
    // Filled with cp.async: the block's chunks in its own order (room for every thread's
    // `chunks`); filled by the first pass: the whole row, chunk by chunk (clamped into it).
    ch.slot = k_.async_fill ? b_.CreateAdd(t_in_row_, b_.CreateMul(k, c(k_.threads_per_row))) : ch.ci;
    return ch;
  }

  Chunk rowChunk() {  // for values constant along the row: reduced coords are 0
    Chunk ch;
    ch.valid = b_.getTrue();
    ch.ci = c(0);
    ch.slot = c(0);
    ch.global = true;
    ch.idx = outer_idx_;
    for (size_t i = 0; i < k_.red_shape.size(); ++i) ch.idx.push_back(c(0));
    return ch;
  }

  llvm::Value* offset(int64_t base, const std::vector<int64_t>& strides, const std::vector<llvm::Value*>& idx) {
    llvm::Value* o = c(base);
    for (size_t d = 0; d < strides.size(); ++d)
      if (strides[d] != 0) o = b_.CreateAdd(o, b_.CreateMul(idx[d], c(strides[d])));
    return o;
  }

  // The row's copy of a load in shared memory: chunk `slot` of the row's part of the leaf's
  // region (a block's rows one after another).
  llvm::Value* smemAddr(const Leaf& l, DType t, const Chunk& ch) {
    return smemAddr(l, t, ch.slot, ch.r_sub ? ch.r_sub : row_in_block_);
  }
  llvm::Value* smemAddr(const Leaf& l, DType t, llvm::Value* slot, llvm::Value* row_in_block) {
    const int64_t piece = int64_t{k_.vec} * dtypeBytes(t);
    const int L = k_.rows_per_block;
    if (k_.row_vec > 1) {  // element `slot` of the block's rows, row after row at a pitch
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

  // The grid tier's two fill buffers (see emit()): the next set is copied ahead.
  bool prefetch() const { return k_.fill_buffers == 2; }

  // A byte offset into the fill buffer in use (the grid tier's two buffers: see emit()).
  llvm::Value* withBuffer(llvm::Value* byte) {
    return buf_base_ ? b_.CreateAdd(byte, buf_base_) : byte;
  }

  // Copies the block's chunks of every held load into shared memory, all in flight at once,
  // and waits for them. With one row per block each thread copies the chunks it later reads
  // (no barrier needed). With several neighbouring rows, consecutive threads copy the
  // neighbouring pieces of all rows at one position (whole lines), then a barrier.
  void asyncFill() {
    if (prefetch()) {  // issued one iteration earlier (or before the loop)
      b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {b_.getInt32(1)});
    } else {
      issueFill(first_row_);
      b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_all, {}, {});
    }
    if (k_.rows_per_block > 1 && !k_.thread_fill) barrier();
  }

  // The cp.async copies of the block's chunks of the rows from `first_row` on.
  void issueFill(llvm::Value* first_row) {
    for (const auto& l : k_.smem_leaves) {
      const DType t = f_.inputs()[static_cast<size_t>(l.input)]->dtype();
      const int piece = std::max(k_.vec, k_.row_vec) * dtypeBytes(t);
      const auto id = piece == 16 ? llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16
                      : piece == 8 ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8
                                   : llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4;
      LOOM_ASSERT(piece == 4 || piece == 8 || piece == 16, "cp.async of {} bytes", piece);
      loop(unitTrips(), {}, [&](llvm::Value* m, const std::vector<llvm::Value*>& carried) {
        Chunk ch = k_.row_vec > 1 ? rowUnitChunk(m, first_row) : unitChunk(m, first_row);
        auto copy = [&] {
          llvm::Value* g = b_.CreateInBoundsGEP(memType(b_.getContext(), t), km_.param(l.input),
                                                offset(l.offset, l.strides, ch.idx));
          b_.CreateIntrinsic(id, {}, {smemAddr(l, t, ch), g});
        };
        // Row vectors past the row's last element have no slot.
        if (k_.row_vec > 1) ifThen(ch.valid, "fill", copy);
        else copy();
        return carried;
      });
      filled_.insert(l);
    }
  }

  // The m-th of the thread's units of the block's part of its rows, for whole-line accesses:
  // unit u = tid + m * block is chunk c_in of row r_sub at position `rest`, whose slot in that
  // row is rest * q + c_in (q: a row's chunks at one outer position), which is chunk k of the
  // row's thread tr. With one row per block this is the thread's own chunk m.
  Chunk unitChunk(llvm::Value* m, llvm::Value* first_row = nullptr) {
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

  // The row-vector tier's units: piece p = tid + m * block is element e = p / V of rows
  // r_sub .. r_sub + row_vec - 1 (r_sub = (p % V) * row_vec), V pieces per element. The block
  // is a multiple of V: a thread's units share their rows.
  // Split over `split` blocks (the grid tier), slot s of the block's rows holds element
  // (s % T) + rank * T + (s / T) * T * split: the thread's chunks (see chunkOf).
  Chunk rowUnitChunk(llvm::Value* m, llvm::Value* first_row = nullptr) {
    return rowPiece(b_.CreateAdd(b_.CreateZExtOrTrunc(tid_, idx_ty_), b_.CreateMul(m, c(k_.block))), first_row);
  }

  // Piece p of the block's rows (see rowUnitChunk): element p / V of the p % V-th vector of rows.
  Chunk rowPiece(llvm::Value* p, llvm::Value* first_row = nullptr) {
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

  // Trips of the fill's and the whole-line stores' loop over the thread's units.
  int64_t unitTrips() const {
    return k_.row_vec > 1 ? (k_.rowVectorUnits() + k_.block - 1) / k_.block : k_.chunks;
  }

  int lanesOf(const Chunk& ch) const { return ch.row_lanes ? k_.row_vec : k_.vec; }

  // Several rows per block storing by whole lines: each thread writes chunks of other rows,
  // so every row's reductions go to shared memory for the block.
  bool coalescedStores() const { return k_.async_fill && k_.rows_per_block > 1 && !k_.thread_fill; }

  void publishReductions(const std::vector<const ENode*>& reductions) {
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

  llvm::Value* reducedSlot(const ENode* r, llvm::Value* row_in_block) {
    llvm::Value* i = b_.CreateAdd(b_.CreateMul(b_.CreateZExtOrTrunc(row_in_block, idx_ty_), c(static_cast<int64_t>(reduced_index_.size()))),
                                  c(reduced_index_.at(r)));
    return b_.CreateInBoundsGEP(reduced_smem_->getValueType(), reduced_smem_, {c(0), i});
  }

  Lanes load(const Leaf& l, DType t, const Chunk& ch) {
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

  Lanes loadGlobal(const Leaf& l, DType t, const Chunk& ch) {
    if (ch.row_lanes)
      return loadLanes(km_, km_.param(l.input), t, offset(l.offset, l.strides, ch.idx), k_.row_load_access.at(l),
                       k_.row_vec, l.strides[k_.outer_shape.size() - 1]);
    return loadLanes(km_, km_.param(l.input), t, offset(l.offset, l.strides, ch.idx),
                     k_.load_access.at(l), k_.vec, l.strides.back());
  }

  const Lanes& eval(const ENode& n, Chunk& ch) {
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

  // Whether `n` has one value per row: built from reductions and constants only.
  static bool perRow(const ENode& n) {
    if (n.kind != ENode::Kind::Op) return n.kind != ENode::Kind::Load;  // a Reduce's args are its operand
    return std::all_of(n.args.begin(), n.args.end(), [](const EPtr& a) { return perRow(*a); });
  }

  // Every output is stored in 16 bits (f16, bf16): f32 math inside then needs no more than
  // the outputs keep.
  bool halfOutputs() const {
    return std::all_of(k_.stores.begin(), k_.stores.end(),
                       [](const auto& s) { return s.dtype == DType::F16 || s.dtype == DType::BF16; });
  }

  // exp(x) as 2^(x log2 e) with the hardware's ex2.approx: two instructions where libdevice's
  // expf takes about twelve, for kernels whose outputs are f16 or bf16. Its error (a few
  // 1e-6 relative at |x| near 88, from rounding x log2 e; 2^-22 from ex2 itself; results
  // below 2^-126 flushed to 0) is far below their half-ulp (2^-11, 2^-8). Softmax 32768 x
  // 65536 bf16 on an H100 issued an instruction every 1.4 cycles per scheduler with expf.
  llvm::Value* fastExp(llvm::Value* x) {
    llvm::Value* y = b_.CreateFMul(x, llvm::ConstantFP::get(x->getType(), M_LOG2E));
    return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {}, {y});
  }

  // --- reductions ---
  enum class Combine { Sum, Max, Min };
  struct Stats {  // (count, mean, M2) of part of a row
    llvm::Value *n, *mean, *m2;
  };

  llvm::Value* identity(Combine cb, DType acc) {
    llvm::Type* ty = regType(b_.getContext(), acc);
    if (cb == Combine::Sum) return isFloat(acc) ? llvm::ConstantFP::get(ty, 0.0) : llvm::ConstantInt::get(ty, 0);
    if (isFloat(acc)) return llvm::ConstantFP::get(ty, cb == Combine::Max ? -INFINITY : INFINITY);
    auto* it = llvm::cast<llvm::IntegerType>(ty);
    return cb == Combine::Max ? llvm::ConstantInt::get(it, llvm::APInt::getSignedMinValue(it->getBitWidth()))
                              : llvm::ConstantInt::get(it, llvm::APInt::getSignedMaxValue(it->getBitWidth()));
  }

  llvm::Value* combine(Combine cb, DType acc, llvm::Value* a, llvm::Value* b) {
    if (cb == Combine::Sum) return isFloat(acc) ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b);
    if (isFloat(acc))
      return b_.CreateIntrinsic(cb == Combine::Max ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum, {a->getType()}, {a, b});
    return b_.CreateIntrinsic(cb == Combine::Max ? llvm::Intrinsic::smax : llvm::Intrinsic::smin, {a->getType()}, {a, b});
  }

  // A full-warp shuffle `id` (butterfly, index) of a 32- or 64-bit value with lane argument
  // `lane_arg`: 64-bit values travel as two 32-bit halves.
  llvm::Value* shuffle(llvm::Intrinsic::ID id, llvm::Value* v, llvm::Value* lane_arg) {
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

  llvm::Value* shuffleXor(llvm::Value* v, int offset) {
    return shuffle(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, v, b_.getInt32(static_cast<uint32_t>(offset)));
  }

  // Every thread of the row ends with the row's total.
  llvm::Value* blockReduce(Combine cb, DType acc, llvm::Value* v) {
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

  llvm::Value* acrossBlocks(Combine cb, DType acc, llvm::Value* v) {
    if (k_.grid_sync) return acrossGrid(cb, acc, v);
    return acrossCluster(cb, acc, v);
  }

  // --- the grid tier: partials through the global workspace ---
  // Slot `field` (of 3: count, mean, M2; 8 bytes each) of block `rank`'s partial for the
  // block's row `r`, in the group's part of the workspace: the region of the kernel's
  // `region`-th grid reduction and this iteration's parity. Blocks innermost: a warp reading 32 blocks' partials reads 256
  // contiguous bytes (row-innermost entries cost a sector per lane: measured on an H100, the
  // L2 then carried more partials than tensor data).
  llvm::Value* wsSlot(int region, llvm::Value* rank, llvm::Value* r, int field) {
    const int64_t P = k_.split, L = k_.rows_per_block;
    llvm::Value* plane = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(c(int64_t{region} * 2), parity_), c(3)), c(field));
    llvm::Value* entry = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(plane, c(L)), b_.CreateZExtOrTrunc(r, idx_ty_)), c(P)),
                                      rank);
    llvm::Value* byte = b_.CreateAdd(c(128), b_.CreateMul(entry, c(8)));
    return b_.CreateInBoundsGEP(b_.getInt8Ty(), group_ws_, b_.CreateZExtOrTrunc(byte, b_.getInt64Ty()));
  }

  void checkRegion(int region) {
    const int64_t per = 2 * int64_t{k_.split} * k_.rows_per_block * 24;
    LOOM_ASSERT((128 + (region + 1) * per) * k_.grid_groups <= k_.workspace_bytes,
                "grid reduction {} beyond the {}-byte workspace of {} groups", region, k_.workspace_bytes, k_.grid_groups);
  }

  // Partials are written plainly (the barrier's release, after a block barrier, publishes
  // them) and read with ld.relaxed.gpu: from the L2, never a stale L1 line or the read-only
  // path, and at GPU scope (volatile loads are system-scope; on an H100 the two measured
  // the same).
  void storeWs(llvm::Value* v, llvm::Value* addr) { b_.CreateAlignedStore(v, addr, llvm::Align(8)); }
  llvm::Value* loadWs(llvm::Type* ty, llvm::Value* addr) {
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

  // Every block of the group arrives, then waits until all have: a counter in the group's part
  // of the workspace (zero when the launch starts) that only grows, so the group's e-th barrier
  // (from 1) waits for e * blocks arrivals. The leader arrives with a release, polls relaxed,
  // and acquires with one fence once the count is reached (an acquiring poll would invalidate
  // the SM's L1 on every iteration).
  void gridBarrier() {
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

  // Past its group's last barrier, each block's leader counts itself out (at byte 64 of the
  // group's counter region); the last one out zeroes both counters, as every other block has
  // stopped polling by then. The next launch, after this one in stream order, so finds them as
  // the first found them (zeroed once, when the workspace is allocated): no memset per launch.
  void leaveCountersZero() {
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

  // The thread's row's total over every block: each block's leader publishes its partial;
  // after the barrier the row's first warp reads them, lane l every 32nd block's from l, and
  // combines them in a butterfly (sums and extrema commute exactly, so every block gets the
  // same bits).
  llvm::Value* acrossGrid(Combine cb, DType acc, llvm::Value* v) {
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

  // The lanes that read a row's partials: its first warp's 32, or its T < 32 threads (rows
  // of fewer threads share a warp, T dividing 32).
  int laneBlockWidth() const { return std::min(k_.threads_per_row, 32); }

  // Lane l of the row's W = laneBlockWidth() visits blocks l, l + W, ... in order: fn(block,
  // in range) with the block clamped to 0 past the last one.
  template <typename Fn>
  void forEachLaneBlock(Fn fn) {
    const int W = laneBlockWidth();
    llvm::Value* lane = W == 32 ? b_.CreateZExtOrTrunc(lane_, idx_ty_) : t_in_row_;
    for (int64_t r0 = 0; r0 < k_.split; r0 += W) {
      llvm::Value* r = b_.CreateAdd(lane, c(r0));
      llvm::Value* ok = b_.CreateICmpULT(r, c(k_.split));
      fn(b_.CreateSelect(ok, r, c(0)), ok);
    }
  }

  // Chan's combination of every block's (count, mean, M2) for the thread's row.
  Stats acrossGridStats(DType acc, const Stats& st) {
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

  // compute() by the first warp of each row only (its lanes reading the L2 or shared memory
  // for the whole row), and its lane 0's results for every thread of the row: one thread's
  // bits, so that every thread normalizes with the same statistics. `n` values of type `ty`.
  template <typename Fn>
  std::vector<llvm::Value*> byFirstWarp(llvm::Type* ty, int n, Fn compute) {
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

  // The value of the row's first thread (rows of at most 32 threads, whole within a warp).
  llvm::Value* shuffleFromRowStart(llvm::Value* v) {
    const uint32_t T = static_cast<uint32_t>(k_.threads_per_row);
    llvm::Value* src = b_.CreateMul(b_.CreateUDiv(lane_, b_.getInt32(T)), b_.getInt32(T));
    return shuffle(llvm::Intrinsic::nvvm_shfl_sync_idx_i32, v, src);
  }

  // Elements of a row that block `rank` holds: vec per chunk ci = rank * T + t + k * T * P
  // inside the row, over t < T and k < chunks.
  llvm::Value* blockCount(llvm::Value* rank, DType acc) {
    const int64_t T = k_.threads_per_row, P = k_.split;
    llvm::Value* n = c(0);
    for (int64_t k = 0; k < k_.chunks; ++k) {
      llvm::Value* left = b_.CreateSub(c(row_chunks_), b_.CreateAdd(b_.CreateMul(rank, c(T)), c(k * T * P)));
      left = b_.CreateSelect(b_.CreateICmpSLT(left, c(0)), c(0), left);
      n = b_.CreateAdd(n, b_.CreateSelect(b_.CreateICmpSGT(left, c(T)), c(T), left));
    }
    return emitCast(b_, b_.CreateMul(n, c(k_.vec)), k_.index64 ? DType::I64 : DType::I32, acc);
  }

  // Every block of the row's cluster holds its total: thread 0 publishes it in its shared
  // memory, and after a cluster barrier every thread combines all blocks' totals in rank
  // order (so every block gets the same bits). Each reduction has its own slot, so no slot is
  // rewritten while another block may still read it.
  llvm::Value* acrossCluster(Combine cb, DType acc, llvm::Value* v) {
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

  void barrier() { b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }

  // if (cond) body(); the publishes by one thread of a warp, row or block, and the stores.
  template <typename Body>
  void ifThen(llvm::Value* cond, const char* name, Body body) {
    llvm::Function* fn = km_.function();
    auto* then = llvm::BasicBlock::Create(b_.getContext(), name, fn);
    auto* cont = llvm::BasicBlock::Create(b_.getContext(), std::string(name) + "_done", fn);
    b_.CreateCondBr(cond, then, cont);
    b_.SetInsertPoint(then);
    body();
    b_.CreateBr(cont);
    b_.SetInsertPoint(cont);
  }

  // Without the row in registers, each pass evaluates its chunks afresh (loads from shared
  // memory once a pass has filled it, else from global memory).
  void beginPass() {
    if (!registers_)
      for (auto& ch : chunks_) ch.memo.clear();
  }

  // Loads a streaming pass copied to shared memory are read from there from now on (each
  // thread reads back only the chunks it wrote, so no barrier is needed).
  void endPass() {
    filled_.insert(pass_loaded_.begin(), pass_loaded_.end());
    pass_loaded_.clear();
  }

  // Sums (or maxes...) f(x) over the row: every valid lane of every chunk, then the block.
  template <typename Fn>
  llvm::Value* rowReduce(Combine cb, DType acc, Fn f) {
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

  // The mean of a row summed around its first element, so that 1e4 + U(0,1) data keeps
  // its digits: mean = x0 + sum(x - x0) / n.
  template <typename Fn>
  llvm::Value* shiftedMean(const ENode& x, DType acc, Fn values, double n) {
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

  // Chan et al.'s combination of two (count, mean, M2) partial statistics.
  Stats chan(DType acc, const Stats& a, const Stats& b) {
    llvm::Value* n = b_.CreateFAdd(a.n, b.n);
    llvm::Value* safe = b_.CreateSelect(b_.CreateFCmpOGT(n, emitConst(b_, acc, 0)), n, emitConst(b_, acc, 1));
    llvm::Value* delta = b_.CreateFSub(b.mean, a.mean);
    // One division: b's share of the merged count; a's share is its complement. In f32 the
    // hardware's approximate division (2 ulp, on whole counts): a weight, not a result, and
    // the merges sit on the grid tier's critical path (layer_norm 16 x (2^20 + 8) f32 on an
    // H100: 1603 -> 1660 GB/s; group norm channels-last 1900 -> 1920).
    llvm::Value* fb = acc == DType::F32 ? b_.CreateIntrinsic(llvm::Intrinsic::nvvm_div_approx_f, {}, {b.n, safe})
                                        : b_.CreateFDiv(b.n, safe);
    llvm::Value* mean = b_.CreateFAdd(a.mean, b_.CreateFMul(delta, fb));
    llvm::Value* m2 = b_.CreateFAdd(b_.CreateFAdd(a.m2, b.m2),
                                    b_.CreateFMul(b_.CreateFMul(b_.CreateFMul(delta, delta), a.n), fb));
    return {n, mean, m2};
  }

  // The row's (mean, M2) in one reduction across its threads (and blocks): each thread's
  // statistics, then Chan's merge. Streamed rows: one pass, per chunk an exact two-pass over
  // its lanes merged into the thread's running statistics.
  template <typename Fn>
  std::pair<llvm::Value*, llvm::Value*> welford(DType acc, Fn values) {
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

  // The row-vector tier over the grid reads its statistics by whole vectors of rows, the
  // 16-byte pieces the fill copied, where a thread of a row alone reads one element at a time
  // (a load and a conversion each). Measured on an H100, GB/s, channels-last: batch_norm f16
  // 32x64x56x56 (one set over every SM) 1036-1041 -> 1109-1139, f32 1501-1506 -> 1615-1617,
  // f32 64x256x28x28 1706-1724 -> 1756-1776, instance_norm f16 8x64x256x256 1558-1563 ->
  // 1660-1668. Where the rows' exchange stays small: W = T * row_vec threads per vector of
  // rows, at most 32 loads of the warps' totals, 2 KiB of shared memory.
  // LOOM_TUNE_ROWVEC_STATS=0 keeps the thread-per-row passes (for measurements).
  bool statsByRowVectors() const {
    // Rows a thread keeps in registers between passes read shared memory once: they keep
    // the thread-per-row passes (batch_norm bf16 16x96x40x40 channels-last, 19 elements a
    // thread, measured 601 GB/s by vectors against 639-647).
    if (k_.row_vec < 2 || k_.split < 2 || registers_) return false;
    if (const char* e = std::getenv("LOOM_TUNE_ROWVEC_STATS"); e && std::atoi(e) == 0) return false;
    const int W = k_.threads_per_row * k_.row_vec, S = std::min(W, 32);
    return k_.row_vec * (W / S) <= 32 && int64_t{k_.block} / S * k_.row_vec * 8 <= 2048;
  }

  // A block's (count, mean, M2) for each of its rows, read by vectors of rows. The W threads
  // of the rows r .. r + row_vec - 1 (those rows' threads) take the vector's slots q, q + W,
  // ... (q: the thread among them), each summing row_vec lanes. A warp then reduce-scatters:
  // at each bit of the row index that stays within the warp, a lane keeps half its rows and
  // adds its partner's; a butterfly over the row's threads follows. Each warp's totals go to
  // shared memory, where every thread of the vector reads all its rows' totals, warps in
  // order. Two exact passes: the sums, then squared deviations from the block's own means.
  // Every thread of a row ends with the same bits.
  template <typename Fn>
  Stats rowVectorStats(DType acc, Fn values) {
    const int V = k_.row_vec, T = k_.threads_per_row, W = T * V, S = std::min(W, 32);
    const int64_t groups = k_.rows_per_block / V, slots = int64_t{k_.chunks} * T;
    const int64_t trips = (slots + W - 1) / W;
    // Unrolled by 4, or by 2 where blocks share an SM (64 registers a thread: by 4,
    // instance_norm f16 8x64x256x256 channels-last spilled and measured 1527-1536 GB/s on an
    // H100, by 2 1672-1686). LOOM_TUNE_CHUNK_UNROLL overrides it.
    int unroll = static_cast<int>(std::min<int64_t>(trips, k_.min_blocks_per_sm > 1 ? 2 : 4));
    if (std::getenv("LOOM_TUNE_CHUNK_UNROLL")) unroll = chunk_unroll_;
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

  void reduce(const ENode& r) {
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

  // --- stores ---
  void storeChunk(const schedule::NormKernel::Store& s, const Lanes& lanes, const Chunk& ch, llvm::Value* pred) {
    llvm::Value* off = offset(s.offset, s.strides, ch.idx);
    ifThen(pred, "store", [&] {
      if (ch.row_lanes)
        storeLanes(km_, km_.param(k_.num_inputs + s.output), s.dtype, off, s.row_access, lanes,
                   s.strides[k_.outer_shape.size() - 1]);
      else
        storeLanes(km_, km_.param(k_.num_inputs + s.output), s.dtype, off, s.access, lanes, s.strides.back());
    });
  }

  void storeAll() {
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
      auto unit = [&](llvm::Value* m) { return k_.row_vec > 1 ? rowUnitChunk(m) : unitChunk(m); };
      Chunk first = unit(c(0));
      for (const auto& s : k_.stores)
        if (!s.row_only) hoistInvariant(*s.value, first);
      // Unrolled by 4, so that a thread has several units' shared-memory loads in flight
      // (measured on an H200, GB/s: group_norm f16 32x128x256x256 channels-last 2380-2386 ->
      // 2462-2463, LayerNorm2d NCHW 2726-2810 -> 2872-2879; on an H100 2070-2078 -> 2118-2121
      // and 2342-2363 -> 2418-2458). Not for vectors of rows over the grid, whose rows'
      // statistics and weights held for the loop then spill (instance_norm f16 8x64x256x256
      // channels-last 1951 -> 1637 on the H200), nor over a cluster (group_norm f16
      // 16x512x64x64 channels-last 2032-2049 -> 2023-2030 on the H100).
      // LOOM_TUNE_STORE_UNROLL overrides it.
      int unroll = (k_.row_vec > 1 && k_.grid_sync) || k_.cluster > 1 ? 1 : 4;
      if (const char* u = std::getenv("LOOM_TUNE_STORE_UNROLL")) unroll = std::max(1, std::atoi(u));
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

  // Evaluates in `ch` the parts of `n` that are the same for every unit of the thread
  // (see unitChunk): constants, reductions, and loads that vary along no reduced axis but the
  // innermost. Returns whether `n` itself is such a part.
  bool hoistInvariant(const ENode& n, Chunk& ch) {
    auto it = invariant_.find(&n);
    if (it != invariant_.end()) return it->second;
    bool inv = true;
    switch (n.kind) {
      case ENode::Kind::Const:
      case ENode::Kind::Reduce:
        break;
      case ENode::Kind::Load:
        for (size_t d = k_.outer_shape.size(); d + (k_.row_vec > 1 ? 0 : 1) < n.leaf.strides.size(); ++d)
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

  // One pass over the thread's chunks of its row: unrolled over the chunks held in registers,
  // else a loop that derives each chunk afresh. `step` folds a chunk into the carried values
  // (accumulators); returns their final values.
  template <typename Step>
  std::vector<llvm::Value*> forEachChunk(std::vector<llvm::Value*> carried, Step step) {
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

  // for (k = 0; k < n; ++k) carried = body(k, carried); at least one trip.
  template <typename Body>
  std::vector<llvm::Value*> loop(int64_t n, std::vector<llvm::Value*> carried, Body body, int unroll = 0) {
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

  const ir::Fusion& f_;
  const schedule::NormKernel& k_;
  KernelModule& km_;
  llvm::IRBuilder<>& b_;
  llvm::Type* idx_ty_;
  llvm::Value *t_in_row_ = nullptr, *row_in_block_ = nullptr, *lane_ = nullptr, *row_valid_ = nullptr;
  llvm::Value *tid_ = nullptr, *vt_ = nullptr;  // thread in block; thread's place in its row
  llvm::Value *rank_ = nullptr, *first_row_ = nullptr;  // block among the row's blocks; its first row
  llvm::Value *workspace_ = nullptr, *set_ = nullptr, *parity_ = nullptr;  // the grid tier
  llvm::Value *group_ = nullptr, *group_ws_ = nullptr;  // the grid group; its part of the workspace
  int next_region_ = 0, barriers_per_set_ = 0, barriers_done_ = 0;
  llvm::GlobalVariable* reduced_smem_ = nullptr;  // every row's reductions (coalesced stores)
  std::map<const ENode*, int64_t> reduced_index_;
  std::vector<const ENode*> reductions_;  // the kernel's, in evaluation order
  std::vector<llvm::Value*> outer_idx_;
  int64_t row_chunks_ = 0;
  bool registers_ = true;
  bool unrolled_ = true;
  int chunk_unroll_ = 1;  // where not unrolled_: the chunk loops' unroll count
  std::vector<Chunk> chunks_;
  std::map<const ENode*, llvm::Value*> reduced_;
  std::map<std::pair<const ENode*, double>, std::pair<llvm::Value*, llvm::Value*>> stats_;
  llvm::GlobalVariable* row_smem_ = nullptr;
  int64_t buffer_bytes_ = 0;          // one fill buffer's bytes
  llvm::Value* buf_base_ = nullptr;   // byte offset of the buffer smemAddr addresses
  std::map<Leaf, int64_t> smem_offset_;
  std::set<Leaf> filled_, pass_loaded_;
  std::map<const ENode*, bool> invariant_;
};

}  // namespace

std::unique_ptr<llvm::Module> emitNormKernel(const ir::Fusion& f, const schedule::NormKernel& k,
                                             llvm::LLVMContext& ctx) {
  KernelModule km(ctx, k.name, f, k.output_alias, k.block, k.grid_sync ? 1 : 0);
  // E.g. each grid group's block beside the others' on every SM: registers for all of them.
  if (k.min_blocks_per_sm > 0) km.minBlocksPerSM(k.min_blocks_per_sm);
  NormEmitter(f, k, km).emit();
  return km.finish();
}

}  // namespace loom::codegen
