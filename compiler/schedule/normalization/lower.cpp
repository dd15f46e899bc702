#include "compiler/schedule/normalization/lower.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "compiler/kir/welford.h"
#include "compiler/schedule/symbolic.h"
#include "ir/error.h"

namespace loom::schedule {

namespace norm_lower_detail {

ExprP NormLowering::rows() const {
  if (!k_.symbolic()) return c(k_.rows());
  return kir::mul(kir::var(sizeVar(k_.size_symbol), Type::idx()), c(k_.rows_factor));
}

ExprP NormLowering::lastRow(int64_t back) const {
  if (!k_.symbolic()) return c(k_.rows() - back);
  return kir::index(kir::IndexOp::Sub, rows(), c(back));
}

void NormLowering::run() {
  b_.spread("tid", kir::Mapping::Threads, k_.block, [&](const ExprP& tid) { threads(tid); });
  out_.body = b_.take();
}

void NormLowering::threads(const ExprP& tid) {
  const int T = k_.threads_per_row;
  tid_ = tid;
  t_in_row_ = b_.bindAs("t_in_row", kir::convert(b_.urem(tid, kir::i32Const(T)), Type::idx()));
  row_in_block_ = b_.bindAs("row_in_block", kir::index(kir::IndexOp::Div, tid, kir::i32Const(T)));
  lane_ = b_.bindAs("lane", kir::index(kir::IndexOp::Rem, tid, kir::i32Const(32)));
  b_.spread("blk", kir::Mapping::Blocks, k_.symbolic() ? k_.grid_max : k_.grid, [&](const ExprP& blk) { blocks(blk); });
}

void NormLowering::blocks(const ExprP& blk) {
  const int T = k_.threads_per_row;
  ExprP block = b_.bindAs("block", kir::convert(blk, Type::idx()));
  vt_ = t_in_row_;
  if (k_.split > 1) {
    // A row split over `split` blocks (a cluster's consecutive blocks along x): block `rank`
    // takes every split-th run of T chunks.
    rank_ = b_.bindAs("rank", kir::index(kir::IndexOp::Rem, block, c(k_.split)));
    block = b_.bindAs("block_set", kir::index(kir::IndexOp::Div, block, c(k_.split)));
    vt_ = b_.bindAs("t_in_split", kir::add(kir::mul(rank_, c(T)), t_in_row_));
  }
  row_chunks_ = k_.rowElems() / k_.vec;
  registers_ = k_.registers && k_.chunks * k_.vec <= 128;
  // Every chunk unrolled (all loads up front) only while the row stays in registers; rows
  // held in shared memory loop, unrolled by 4, or wholly (up to 8 chunks) where two loads or
  // more stream from global memory per element each pass.
  unrolled_ = registers_;
  chunk_unroll_ = 1;
  if (!k_.grid_sync && k_.cluster == 1 && !k_.thread_fill && !k_.rowTier() && !k_.smem_leaves.empty()) {
    chunk_unroll_ = 4;
    int streamed = 0;
    for (const auto& [leaf, access] : k_.load_access)
      streamed += access == kir::Access::Vector &&
                  std::find(k_.smem_leaves.begin(), k_.smem_leaves.end(), leaf) == k_.smem_leaves.end();
    if (streamed >= 2 && k_.chunks <= 8) chunk_unroll_ = k_.chunks;
  }
  // A streamed row beside column partials in shared memory: every chunk's loads of a pass in flight.
  if (k_.col_smem) chunk_unroll_ = k_.chunk_unroll > 0 ? k_.chunk_unroll : k_.chunks;
  if (tune_.chunk_unroll) chunk_unroll_ = *tune_.chunk_unroll;
  if (k_.smem_bytes > 0) {
    out_.buffers.push_back({"loom_row_smem", "loom_row_smem", kir::Place::SmemDyn, DType::F32, k_.smem_bytes, 16});
    int64_t off = 0;
    for (const auto& l : k_.smem_leaves) {
      smem_offset_[l] = off;
      const int64_t elems = k_.rowTier()     ? int64_t{k_.chunks} * k_.threads_per_row * k_.row_pitch
                            : k_.async_fill ? int64_t{k_.rows_per_block} * k_.chunks * k_.threads_per_row * k_.vec
                                            : k_.rowElems();
      const int64_t bytes = elems * dtypeBytes(f_.inputs()[static_cast<size_t>(l.input)]->dtype());
      off += (bytes + 15) / 16 * 16;
    }
    LOOM_ASSERT(!k_.async_fill || off * k_.fill_buffers == k_.smem_bytes,
                "shared memory: {} bytes x {} buffers, the schedule says {}", off, k_.fill_buffers, k_.smem_bytes);
    buffer_bytes_ = off;
  }
  for (const auto& st : k_.stores) roots_.push_back(st.value);
  lower::visitPostOrder(roots_, [&](const ENode& n) {
    if (n.kind == ENode::Kind::Reduce) (n.over_rows ? columns_ : reductions_).push_back(&n);
  });
  LOOM_ASSERT(!k_.peel || (!k_.grid_sync && k_.split == k_.cluster && !k_.columns && !k_.sub_rows && !coalescedStores() &&
                            k_.red_shape.size() == 1 && k_.threads_per_row >= 2 * k_.vec),
              "a peeled row in a kernel that cannot take its edge");
  if (k_.columns) {
    columnRows(block);
    return;
  }
  if (k_.grid_sync) {
    gridSets(block);
    return;
  }
  LOOM_ASSERT(k_.split == k_.cluster, "rows split over {} blocks outside a cluster", k_.split);
  // A grid of exactly the row sets (every size's, for a kernel serving many) whose sets are whole:
  // every block's rows are the tensor's, and their guard goes (it was the one difference between
  // a kernel taking its row count at run time and the specialized one, which ptxas then
  // allocated differently: bench/results/2026-11-26-h200-symbolic-sizes.md).
  const int64_t rows_unit = k_.symbolic() ? k_.rows_factor : k_.rows();
  every_row_ = !tune_.no_unguarded_rows && !k_.rowTier() && rows_unit % k_.rows_per_block == 0;
  rowsAt(b_.bindAs("first_row", kir::mul(block, c(k_.rows_per_block))));
}

// The grid tier: group g of `grid_groups` (the block's number among the sets' blocks) walks sets
// g, g + G, ... of neighbouring rows, each iteration the set's rows; the group's part of the
// workspace holds its barrier counters and the partials. A block barrier opens each iteration:
// the last set's stores may still read shared memory the next fill overwrites.
void NormLowering::gridSets(const ExprP& group) {
  const int64_t G = k_.grid_groups;
  barriers_per_set_ = gridBarriersPerSet();
  const int ws = static_cast<int>(out_.params.size()) - 1;
  ExprP base = b_.bindAs("workspace", kir::intrinsic(kir::Intrinsic::ParamAddr, Type::addr(), {kir::intConst(ws)}));
  group_ws_ = b_.bindAs("group_ws", kir::intrinsic(kir::Intrinsic::ByteAddr, Type::addr(),
                                                   {base, kir::mul(group, c(k_.workspace_bytes / G))}));
  // The sets the groups walk: of the row count, a constant or of the size parameter (then the
  // loop's bound, `trips` its largest, and every set tested against the count).
  const int64_t most_sets = k_.symbolic() ? (k_.size_max * k_.rows_factor + k_.rows_per_block - 1) / k_.rows_per_block
                                          : k_.row_sets;
  const int64_t trips = (most_sets + G - 1) / G;
  const ExprP row_sets = k_.symbolic() ? kir::index(kir::IndexOp::Div, kir::add(rows(), c(k_.rows_per_block - 1)),
                                                    c(k_.rows_per_block))
                                       : c(k_.row_sets);
  ExprP trips_at_run;
  if (k_.symbolic()) trips_at_run = kir::index(kir::IndexOp::Div, kir::add(row_sets, c(G - 1)), c(G));
  // Two fill buffers: the group's first set is copied before the loop, and each iteration
  // copies the next one (into the other buffer) before it waits for its own. Every iteration
  // commits one cp.async group (empty past the group's last set), so waiting for all but the
  // newest is waiting for the current set.
  LOOM_ASSERT(!prefetch() || !k_.thread_fill, "two fill buffers with thread fill");
  if (prefetch()) {
    buf_base_ = c(0);
    issueFill(b_.mul(group, c(k_.rows_per_block)));
    b_.emit(kir::asyncCommit());
  }
  b_.repeat("i", trips, {}, [&](const ExprP& i, const std::vector<ExprP>& carried) {
    parity_ = b_.bindAs("parity", kir::index(kir::IndexOp::And, i, c(1)));
    set_ = i;
    barriers_done_ = 0;
    ExprP set = b_.add(b_.mul(i, c(G)), group);
    auto body = [&] {
      b_.emit(kir::barrier(kir::Barrier::Block));
      if (prefetch()) {
        ExprP next = b_.add(set, c(G));
        b_.ifThen(b_.op(kir::IndexOp::Ult, next, row_sets), "prefetch", [&] {
          buf_base_ = b_.mul(b_.op(kir::IndexOp::Xor, parity_, c(1)), c(buffer_bytes_));
          issueFill(b_.mul(next, c(k_.rows_per_block)));
        });
        b_.emit(kir::asyncCommit());
        buf_base_ = b_.mul(parity_, c(buffer_bytes_));
      }
      rowsAt(b_.mul(set, c(k_.rows_per_block)));
      // Every block waits at each counted barrier: one short would hang the grid.
      LOOM_ASSERT(barriers_done_ == barriers_per_set_, "{} grid barriers a set emitted, {} counted", barriers_done_,
                  barriers_per_set_);
    };
    // The same for every block of a group: its barriers stay matched.
    // (A symbolic count may leave any group a set short: unless one group walks them all.)
    if (k_.symbolic() ? G > 1 : k_.row_sets % G != 0) b_.uniformIf(b_.op(kir::IndexOp::Lt, set, row_sets), "set", body);
    else body();
    return carried;
  }, 1, trips_at_run);
  exitGrid(group_ws_, k_.split);
}

// The last block out zeroes both counters (every other block has stopped polling), so the
// next launch finds them as the first did: no memset per launch.
void NormLowering::exitGrid(const ExprP& counter, int64_t blocks) {
  b_.ifThen(b_.op(kir::IndexOp::Eq, tid_, kir::i32Const(0)), "gexit", [&] {
    ExprP exits = b_.bind(kir::intrinsic(kir::Intrinsic::ByteAddr, Type::addr(), {counter, c(64)}));
    ExprP before = b_.bind(kir::intrinsic(kir::Intrinsic::AtomAddAcqRel, Type::i32(), {exits}));
    b_.ifThen(b_.op(kir::IndexOp::Eq, before, kir::i32Const(blocks - 1)), "greset", [&] {
      b_.emit(kir::relaxedZero(counter));
      b_.emit(kir::relaxedZero(exits));
    });
  });
}

// The grid level of the next reduction of `values` values (none outside the grid tier): its
// workspace regions, its barrier within the set, and how the row is dealt to the blocks.
kir::GridLevel NormLowering::gridLevel(int values) {
  kir::GridLevel g;
  if (!k_.grid_sync) return g;
  g.region = next_region_;
  next_region_ += (values + 2) / 3;  // three 8-byte slots a region
  const int64_t per = 2 * int64_t{k_.split} * k_.rows_per_block * 24;
  LOOM_ASSERT((128 + next_region_ * per) * k_.grid_groups <= k_.workspace_bytes,
              "grid reduction {} beyond the {}-byte workspace of {} groups", g.region, k_.workspace_bytes, k_.grid_groups);
  g.blocks = k_.split;
  g.barrier = ++barriers_done_;
  LOOM_ASSERT(g.barrier <= barriers_per_set_, "grid barrier {} of a set counted as {}", g.barrier, barriers_per_set_);
  g.barriers_per_set = barriers_per_set_;
  g.rank = "rank";
  g.parity = "parity";
  g.set = set_->name;
  g.group_ws = "group_ws";
  g.tid = "tid";
  g.row_chunks = row_chunks_;
  g.chunks = k_.chunks;
  g.vec = k_.vec;
  return g;
}

void NormLowering::rowsAt(const ExprP& first_row, const std::vector<ExprP>& ahead) {
  first_row_ = first_row;
  ExprP row = b_.add(first_row, b_.convert(row_in_block_, Type::idx()));
  if (every_row_) {
    row_valid_ = kir::predConst(true);
    row = b_.bindAs("row", row);
  } else {
    row_valid_ = b_.bindAs("row_valid", kir::index(kir::IndexOp::Ult, row, rows()));
    row = b_.bindAs("row", kir::select(row_valid_, row, lastRow()));
  }
  outer_idx_ = b_.unravel(row, k_.outer_shape, 1);
  if (unrolled_) {
    for (int i = 0; i < k_.chunks; ++i) chunks_.push_back(chunkAt(c(i)));
    if (k_.peel) edge_ = edgeChunk();
  }
  if (!ahead.empty()) {  // the row data loaded one iteration early (columnRows)
    LOOM_ASSERT(unrolled_ && ahead.size() == chunks_.size() * ahead_loads_.size(),
                "{} values loaded ahead for {} chunks of {} loads", ahead.size(), chunks_.size(), ahead_loads_.size());
    lower::visitPostOrder(roots_, [&](const ENode& n) {
      if (n.kind != ENode::Kind::Load) return;
      for (size_t j = 0; j < ahead_loads_.size(); ++j)
        if (ahead_loads_[j].first == n.leaf && ahead_loads_[j].second == n.dtype)
          for (size_t q = 0; q < chunks_.size(); ++q) chunks_[q].memo[&n] = ahead[q * ahead_loads_.size() + j];
    });
  }
  if (k_.async_fill) asyncFill();
  reduceAll();
  publishReductions();
  // No block of a cluster may leave while another still reads its shared memory: arrive
  // after the last reduction, wait before returning (the stores run in between). Relaxed
  // only where the remote reads it guards are complete (read after a block barrier).
  if (k_.cluster > 1)
    b_.emit(kir::barrier(coalescedStores() ? kir::Barrier::ClusterArriveRelaxed : kir::Barrier::ClusterArrive));
  storeAll();
  if (k_.cluster > 1) b_.emit(kir::barrier(kir::Barrier::ClusterWait));
}

ExprP NormLowering::peelHead(const std::vector<ExprP>& outer) {
  const int64_t V = k_.vec;
  ExprP first = c(k_.peel_offset);
  for (size_t i = 0; i < k_.peel_strides.size(); ++i) first = b_.add(first, b_.mul(outer[i], c(k_.peel_strides[i])));
  return b_.op(kir::IndexOp::And, b_.op(kir::IndexOp::Sub, c(V), b_.op(kir::IndexOp::And, first, c(V - 1))), c(V - 1));
}

Chunk NormLowering::edgeChunk() {
  ExprP head = peelHead(outer_idx_);
  ExprP whole = b_.udiv(b_.op(kir::IndexOp::Sub, c(k_.rowElems()), head), c(k_.vec));
  // Thread t's element: t in the head, else t past the last whole vector's end; the element
  // is in the row where it is before its end (a bound the IR verifier sees).
  ExprP at = b_.select(b_.op(kir::IndexOp::Ult, vt_, head), vt_, b_.add(vt_, b_.mul(whole, c(k_.vec))));
  Chunk ch;
  ch.lanes = 1;
  ch.global = true;
  ch.valid = b_.op(kir::IndexOp::Ult, at, c(k_.rowElems()));
  ch.slot = c(0);
  ch.idx = outer_idx_;
  ch.idx.push_back(b_.select(ch.valid, at, c(0)));
  return ch;
}

Chunk NormLowering::chunkOf(std::vector<ExprP> outer, const ExprP& t, const ExprP& k) {
  Chunk ch;
  ExprP vt = k_.split > 1 ? b_.add(b_.mul(rank_, c(k_.threads_per_row)), t) : t;
  ExprP ci = b_.add(vt, b_.mul(k, c(int64_t{k_.threads_per_row} * k_.split)));
  if (k_.peel) {
    // Chunk ci of the row's whole vectors from its head on: in the row where it ends by the
    // row's end (ci < whole; the verifier sees this bound), else the first one again.
    ExprP head = peelHead(outer);
    ExprP at = b_.add(head, b_.mul(ci, c(k_.vec)));
    ch.valid = b_.op(kir::IndexOp::Ult, at, c(k_.rowElems() - k_.vec + 1));
    ch.slot = b_.select(b_.op(kir::IndexOp::Ult, ci, c(row_chunks_)), ci, c(0));
    ch.idx = std::move(outer);
    ch.idx.push_back(b_.select(ch.valid, at, head));
    return ch;
  }
  ch.valid = b_.op(kir::IndexOp::Ult, ci, c(row_chunks_));
  ci = b_.select(ch.valid, ci, c(row_chunks_ - 1));
  ch.slot = ci;
  ch.idx = std::move(outer);
  auto red = b_.unravel(ci, k_.red_shape, k_.vec);
  ch.idx.insert(ch.idx.end(), red.begin(), red.end());
  return ch;
}

Chunk NormLowering::chunkAt(const ExprP& k) {
  Chunk ch = chunkOf(outer_idx_, t_in_row_, k);
  if (k_.async_fill) ch.slot = b_.add(t_in_row_, b_.mul(k, c(k_.threads_per_row)));
  return ch;
}

Chunk NormLowering::unitChunk(const ExprP& m, const ExprP& first_row) {
  if (k_.thread_fill) return chunkAt(m);
  const int L = k_.rows_per_block, T = k_.threads_per_row;
  const int64_t q = k_.red_shape.back() / k_.vec;
  ExprP t = b_.convert(tid_, Type::idx());
  ExprP slot = b_.add(t, b_.mul(m, c(int64_t{L} * T)));
  ExprP r_sub = c(0);
  // A thread keeps its row and its chunk of a position from trip to trip (what the stores
  // hoist depends on them): T / q whole positions of each row a trip, the threads past them
  // idle where q does not divide T (split rows: it does).
  const bool ragged = raggedUnits();
  if (L > 1) {
    LOOM_ASSERT(!ragged || k_.split == 1, "{} threads per row, {} chunks per position, rows split", T, q);
    ExprP c_in = b_.urem(t, c(q));
    r_sub = b_.urem(b_.udiv(t, c(q)), c(L));
    slot = b_.add(b_.mul(b_.add(b_.udiv(t, c(q * L)), b_.mul(m, c(T / q))), c(q)), c_in);
  }
  ExprP row = b_.add(first_row, r_sub);
  ExprP row_ok = b_.op(kir::IndexOp::Ult, row, rows());
  if (ragged) row_ok = b_.op(kir::IndexOp::And, row_ok, b_.op(kir::IndexOp::Ult, t, c(T / q * q * L)));
  // (The chunk's arguments in the order the emitter computed them.)
  ExprP k = b_.udiv(slot, c(T));
  ExprP tr = b_.urem(slot, c(T));
  std::vector<ExprP> outer = b_.unravel(b_.select(row_ok, row, lastRow()), k_.outer_shape, 1);
  Chunk ch = chunkOf(std::move(outer), tr, k);
  ch.valid = b_.op(kir::IndexOp::And, row_ok, ch.valid);
  // (Ragged trips reach past the row's slots: their invalid chunks copy the last one again.)
  if (!ragged) ch.slot = slot;
  ch.r_sub = b_.convert(r_sub, Type::i32());
  return ch;
}

bool NormLowering::raggedUnits() const {
  return k_.rows_per_block > 1 && !k_.thread_fill && !k_.rowTier() &&
         k_.threads_per_row % (k_.red_shape.back() / k_.vec) != 0;
}

int64_t NormLowering::unitTrips() const {
  if (k_.rowTier()) return (k_.rowVectorUnits() + k_.block - 1) / k_.block;
  if (!raggedUnits()) return k_.chunks;
  const int64_t q = k_.red_shape.back() / k_.vec, per_trip = k_.threads_per_row / q;
  return (row_chunks_ / q + per_trip - 1) / per_trip;
}

Chunk NormLowering::rowChunk() {
  Chunk ch;
  if (k_.peel) ch.lanes = 1;  // (a vector at the row's start: unaligned)
  ch.valid = kir::predConst(true);
  ch.slot = c(0);
  ch.global = true;
  ch.idx = outer_idx_;
  for (size_t i = 0; i < k_.red_shape.size(); ++i) ch.idx.push_back(c(0));
  return ch;
}

kir::Cache NormLowering::cache() const {
  return out_.noalias ? kir::Cache::Invariant : kir::Cache::Default;
}

ExprP NormLowering::loadGlobal(const Leaf& l, DType t, const Chunk& ch) {
  if (ch.row_lanes)
    return b_.bind(kir::load(l.input, t, kir::stridedOffset(l.offset, l.strides, ch.idx), k_.row_vec, k_.row_load_access.at(l),
                             laneStride(l.strides, ch), cache()), "x");
  kir::Access a = k_.load_access.at(l);
  if (ch.lanes == 1 && a == kir::Access::Vector) a = kir::Access::Gather;
  return b_.bind(kir::load(l.input, t, kir::stridedOffset(l.offset, l.strides, ch.idx), lanesOf(ch), a,
                           laneStride(l.strides, ch), cache()), "x");
}

ExprP NormLowering::smemByte(const Leaf& l, DType t, const Chunk& ch) {
  const int64_t piece = int64_t{k_.vec} * dtypeBytes(t);
  const int L = k_.rows_per_block;
  const ExprP rib = ch.r_sub ? ch.r_sub : row_in_block_;
  ExprP slot = ch.slot;
  if (k_.rowTier()) {  // element `slot` of the block's rows, row after row at a pitch
    ExprP r = b_.convert(rib, Type::idx());
    ExprP at = kir::add(kir::mul(slot, c(k_.row_pitch)), r);
    ExprP byte = kir::add(c(smem_offset_.at(l)), kir::mul(at, c(dtypeBytes(t))));
    return buf_base_ ? kir::add(byte, buf_base_) : byte;
  }
  if (k_.async_fill && L > 1 && !k_.thread_fill) {
    // Swizzled: a warp of the whole-line fill and stores touches 32 / L neighbouring slots of
    // each of L rows, whose regions start on the same bank; XOR-ing the slot with
    // row * 32 / L (within its aligned 32) spreads them over every bank.
    ExprP r = kir::convert(rib, Type::idx());
    slot = kir::index(kir::IndexOp::Xor, slot,
                      kir::index(kir::IndexOp::And, kir::mul(r, c(32 / std::min(L, 32))), c(31)));
  }
  ExprP byte = kir::add(c(smem_offset_.at(l)), kir::mul(slot, c(piece)));
  if (L > 1)
    byte = kir::add(byte, kir::mul(kir::convert(rib, Type::idx()), c(int64_t{k_.chunks} * k_.threads_per_row * piece)));
  return buf_base_ ? kir::add(byte, buf_base_) : byte;
}

// Copies the block's chunks of every held load into shared memory, all in flight at once, and
// waits for them (two fill buffers: issued one set earlier); several rows a block: whole lines,
// then a barrier.
void NormLowering::asyncFill() {
  if (prefetch()) b_.emit(kir::asyncWaitGroup(1));
  else if (issueFill(first_row_)) b_.emit(kir::asyncWaitAll());
  if (k_.rows_per_block > 1 && !k_.thread_fill) b_.emit(kir::barrier(kir::Barrier::Block));
}

bool NormLowering::issueFill(const ExprP& first_row) {
  bool copied = false;
  for (const auto& l : k_.smem_leaves) {
    const DType t = f_.inputs()[static_cast<size_t>(l.input)]->dtype();
    const int piece = k_.fillPieceBytes(t);
    if (piece < 4) {  // one row's 2-byte (or 1-byte) element: below cp.async's 4 bytes
      copyFill(l, t, first_row);
      filled_.insert(l);
      continue;
    }
    LOOM_ASSERT(piece == 4 || piece == 8 || piece == 16, "cp.async of {} bytes", piece);
    b_.repeat("m", unitTrips(), {}, [&](const ExprP& m, const std::vector<ExprP>& carried) {
      if (!k_.rowTier()) {
        Chunk ch = unitChunk(m, first_row);
        // (Ragged units' idle threads would write another row's slots: only valid ones copy.)
        auto copy = [&] {
          b_.emit(kir::asyncCopy("loom_row_smem", smemByte(l, t, ch), l.input, t,
                                 kir::stridedOffset(l.offset, l.strides, ch.idx), piece));
        };
        if (raggedUnits()) b_.ifThen(ch.valid, "fill", copy);
        else copy();
        return carried;
      }
      // Row vectors past the row's last element have no slot.
      Chunk ch = rowUnitChunk(m, first_row);
      b_.ifThen(ch.valid, "fill", [&] {
        ExprP g = b_.bind(kir::intrinsic(kir::Intrinsic::ElemAddr, Type{true, t, 1, true},
                                         {kir::intConst(l.input), kir::stridedOffset(l.offset, l.strides, ch.idx)}));
        b_.emit(kir::asyncCopy("loom_row_smem", smemByte(l, t, ch), l.input, t, g, piece));
      });
      return carried;
    });
    filled_.insert(l);
    copied = true;
  }
  return copied;
}

bool NormLowering::coalescedStores() const { return k_.async_fill && k_.rows_per_block > 1 && !k_.thread_fill; }

ExprP NormLowering::reducedSlot(const ENode* r, const ExprP& rib) {
  return kir::add(kir::mul(kir::convert(rib, Type::idx()), c(static_cast<int64_t>(reduced_index_.size()))),
                  c(reduced_index_.at(r)));
}

// The row's reductions for the whole-line stores, which take other rows' units: in shared
// memory. (Sub-row values are stored by the row's own first thread: not published.)
void NormLowering::publishReductions() {
  std::vector<const ENode*> published;
  for (const ENode* r : reductions_)
    if (r->sub_atoms.empty()) published.push_back(r);
  if (!coalescedStores() || published.empty()) return;
  const int64_t R = static_cast<int64_t>(published.size());
  out_.buffers.push_back({kir::bufferName(out_, "reduced_smem"), "reduced_smem", kir::Place::Smem, DType::I64,
                          R * k_.rows_per_block, 8, true});
  reduced_buf_ = out_.buffers.back().name;
  for (int64_t j = 0; j < R; ++j) reduced_index_[published[static_cast<size_t>(j)]] = j;
  b_.ifThen(b_.op(kir::IndexOp::Eq, t_in_row_, c(0)), "rpublish", [&] {
    for (const ENode* r : published) b_.emit(kir::bufStore(reduced_buf_, reducedSlot(r, row_in_block_), reduced_.at(r)));
  });
  b_.emit(kir::barrier(kir::Barrier::Block));
}

ExprP NormLowering::load(const Leaf& l, DType t, const Chunk& ch) {
  if (!smem_offset_.count(l) || ch.global) return loadGlobal(l, t, ch);
  const int lanes = lanesOf(ch);
  const int align = std::min(16, lanes * dtypeBytes(t));
  if (filled_.count(l)) {
    ExprP byte = smemByte(l, t, ch);
    return b_.bind(kir::bytesLoad("loom_row_smem", t, lanes, byte, align), "s");
  }
  ExprP v = loadGlobal(l, t, ch);
  b_.emit(kir::bytesStore("loom_row_smem", smemByte(l, t, ch), v, align));
  pass_loaded_.insert(l);
  return v;
}

// Evaluates in `ch` the parts of `n` that are the same for every unit of the thread: constants,
// reductions, and loads along no reduced axis but the innermost. Whether `n` is such a part.
bool NormLowering::hoistInvariant(const ENode& n, Chunk& ch) {
  auto it = invariant_.find(&n);
  if (it != invariant_.end()) return it->second;
  bool inv = true;
  switch (n.kind) {
    case ENode::Kind::Const:
    case ENode::Kind::Reduce: break;
    case ENode::Kind::Index: inv = false; break;  // computed where it is used: cheaper than held
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

void NormLowering::storeChunk(const RowKernel::Store& s, const ExprP& value, const Chunk& ch, const ExprP& pred) {
  ExprP off = b_.bind(kir::stridedOffset(s.offset, s.strides, ch.idx), "off");
  const kir::Access access = ch.row_lanes ? s.row_access : s.access;
  const kir::Access a = access == kir::Access::Splat || ch.lanes == 1 ? kir::Access::Gather : access;
  b_.ifThen(pred, "store", [&] { b_.emit(kir::store(k_.num_inputs + s.output, off, value, a, laneStride(s.strides, ch))); });
}

// A store of sub-row values: each of them by the row's first thread, at the row's coordinates
// and the value's along the axes its reduction keeps (0 along the others).
void NormLowering::storeSubRows(const RowKernel::Store& s) {
  const ENode* r = nullptr;
  lower::visitPostOrder({s.value}, [&](const ENode& n) {
    if (!n.sub_atoms.empty()) r = &n;
  });
  LOOM_ASSERT(r && sub_values_.count(r), "a sub-row store without its reduction");
  const std::vector<size_t> kept = k_.keptAxes(r->sub_atoms);
  const size_t nout = k_.outer_shape.size();
  const std::vector<ExprP>& vals = sub_values_.at(r);
  ExprP first = b_.op(kir::IndexOp::And, row_valid_, b_.op(kir::IndexOp::Eq, vt_, c(0)));
  for (size_t k = 0; k < vals.size(); ++k) {
    Chunk at = rowChunk();
    int64_t rest = static_cast<int64_t>(k);
    for (size_t j = kept.size(); j-- > 0;) {
      at.idx[nout + kept[j]] = c(rest % k_.red_shape[kept[j]]);
      rest /= k_.red_shape[kept[j]];
    }
    reduced_[r] = vals[k];
    ExprP one = b_.bind(kir::intrinsic(kir::Intrinsic::First, Type::data(s.dtype, 1), {eval(*s.value, at)}));
    storeChunk(s, one, at, first);
  }
  reduced_.erase(r);
}

void NormLowering::storeAll() {
  Chunk row = rowChunk();
  for (const auto& s : k_.stores)
    if (s.sub_row) storeSubRows(s);
  for (const auto& s : k_.stores) {
    if (!s.row_only || s.column || s.sub_row) continue;
    // One thread of the row writes: an in-place update (batch norm's running statistics)
    // must not be read by one thread after another has written it.
    ExprP one = b_.bind(kir::intrinsic(kir::Intrinsic::First, Type::data(s.dtype, 1), {eval(*s.value, row)}));
    ExprP first = b_.op(kir::IndexOp::Eq, vt_, c(0));
    storeChunk(s, one, row, b_.op(kir::IndexOp::And, row_valid_, first));
  }
  if (coalescedStores()) {
    // Whole lines: the units of the fill, each with its own row's reductions. What depends on
    // nothing but the thread's place (the row's statistics, a per-channel weight) is evaluated
    // once, before the loop, unrolled by 4 so that a thread has several units' loads in flight.
    // (The row-vector tiers' units share their rows and nothing else.)
    auto unit = [&](const ExprP& m) { return k_.rowTier() ? rowUnitChunk(m, first_row_) : unitChunk(m, first_row_); };
    Chunk first = unit(c(0));
    for (const auto& s : k_.stores)
      if (!s.row_only && !s.column && !s.sub_row) hoistInvariant(*s.value, first);
    const int unroll = tune_.store_unroll ? *tune_.store_unroll : (k_.rowTier() && k_.grid_sync) || k_.cluster > 1 ? 1 : 4;
    b_.repeat("m", unitTrips(), {}, [&](const ExprP& m, const std::vector<ExprP>& carried) {
      Chunk ch = unit(m);
      ch.memo = first.memo;
      for (const auto& s : k_.stores) {
        if (s.row_only || s.column || s.sub_row) continue;
        ExprP v = eval(*s.value, ch);
        const int lanes = lanesOf(ch);
        if (v->type.lanes != lanes) v = b_.bind(kir::intrinsic(kir::Intrinsic::Splat, Type::data(s.dtype, lanes), {v}));
        storeChunk(s, v, ch, ch.valid);
      }
      return carried;
    }, unroll);
    return;
  }
  // Rows past the count (blocks whose rows may pass it) store nothing: one test around the
  // loop, not one a chunk inside it (a branch in every trip of a kernel taking its rows at run
  // time). Not in column kernels, whose partials folded here test the row themselves and whose
  // values bound in the loop are read after it.
  const bool around = !every_row_ && !k_.columns;
  auto elements = [&] {
    forEachChunk({}, [&](Chunk& ch, const std::vector<ExprP>& carried) {
      for (const auto& s : k_.stores) {
        if (s.row_only || s.column || s.sub_row) continue;
        ExprP v = eval(*s.value, ch);
        const int lanes = lanesOf(ch);
        if (v->type.lanes != lanes) v = b_.bind(kir::intrinsic(kir::Intrinsic::Splat, Type::data(s.dtype, lanes), {v}));
        storeChunk(s, v, ch, around ? ch.valid : b_.op(kir::IndexOp::And, row_valid_, ch.valid));
      }
      if (k_.col_smem) foldSmemColumns(ch);
      return carried;
    });
  };
  if (around) b_.ifThen(row_valid_, "row_stores", elements);
  else elements();
}

}  // namespace norm_lower_detail

using norm_lower_detail::NormLowering;


kir::Kernel lowerNormalization(const ir::Fusion& f, const RowKernel& k,
                                              const std::vector<TensorDesc>& inputs, const Tuning& tune) {
  kir::Kernel out;
  out.name = k.name;
  out.scheduler = "normalization";
  if (k.symbolic()) {
    out.params = paramsAtLargest(f, inputs, k.outputs, k.size_symbol, k.size_max);
    out.sizes.push_back({sizeVar(k.size_symbol), k.size_max});
  } else {
    out.params = kir::fusionParams(f, inputs, k.outputs);
  }
  if (k.grid_sync || k.columns) out.params.push_back({"workspace", DType::I64, false, k.workspace_bytes, true});
  out.noalias = kir::noAlias(k.output_alias);
  out.index_bits = k.index64 ? 64 : 32;
  out.launch = {k.symbolic() ? k.grid_max : k.grid, k.block};
  out.min_blocks_per_sm = k.min_blocks_per_sm;
  NormLowering(f, k, tune, out).run();
  return out;
}

}  // namespace loom::schedule
