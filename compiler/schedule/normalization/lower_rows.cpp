// The normalization lowering's row-vector tiers (see schedule/normalization/lower.h): rows strided along their
// reduction but side by side in memory, held in shared memory by vectors of `row_vec` rows.
#include <algorithm>

#include "compiler/schedule/normalization/lower.h"
#include "ir/error.h"

namespace loom::schedule::norm_lower_detail {

// The m-th of the thread's pieces of the block's rows: piece tid + m * block.
Chunk NormLowering::rowUnitChunk(const ExprP& m, const ExprP& first_row) {
  ExprP step = b_.mul(m, c(k_.block));  // (in the order the emitter computed them)
  ExprP t = b_.convert(tid_, Type::idx());
  return rowPiece(b_.add(t, step), first_row);
}

// Piece p of the block's rows: element p / V of the p % V-th vector of rows (V vectors of
// `row_vec` rows a block). Split over the grid, slot s of the block's rows holds element
// (s % T) + rank * T + (s / T) * T * split: the thread's chunks.
Chunk NormLowering::rowPiece(const ExprP& p, const ExprP& first_row) {
  const int64_t V = k_.rows_per_block / k_.row_vec, n = k_.rowElems();
  ExprP r_sub = b_.mul(b_.urem(p, c(V)), c(k_.row_vec));
  ExprP e = b_.udiv(p, c(V));
  ExprP slot;
  ExprP slot_ok = kir::predConst(true);
  if (k_.split > 1) {
    const int64_t T = k_.threads_per_row, slots = int64_t{k_.chunks} * T;
    slot_ok = b_.op(kir::IndexOp::Ult, e, c(slots));
    slot = b_.select(slot_ok, e, c(slots - 1));
    ExprP hi = b_.mul(b_.udiv(slot, c(T)), c(T * k_.split));
    ExprP mine = b_.mul(rank_, c(T));
    ExprP lo = b_.urem(slot, c(T));
    e = b_.add(b_.add(lo, mine), hi);
  }
  ExprP row = b_.add(first_row, r_sub);
  ExprP row_ok = b_.op(kir::IndexOp::Ult, row, rows());
  ExprP e_ok = b_.op(kir::IndexOp::And, slot_ok, b_.op(kir::IndexOp::Ult, e, c(n)));
  Chunk ch;
  ch.valid = b_.op(kir::IndexOp::And, row_ok, e_ok);
  ExprP ci = b_.select(e_ok, e, c(n - 1));
  ch.slot = slot ? slot : ci;
  // Rows come in whole vectors (the row axis divides by row_vec): the last one stands in.
  ch.idx = b_.unravel(b_.select(row_ok, row, lastRow(k_.row_vec)), k_.outer_shape, 1);
  auto red = b_.unravel(ci, k_.red_shape, 1);
  ch.idx.insert(ch.idx.end(), red.begin(), red.end());
  ch.r_sub = b_.convert(r_sub, Type::i32());
  ch.row_lanes = true;
  return ch;
}

// The fill of `l` where a piece (one row's 2- or 1-byte element) is below cp.async's 4 bytes:
// loads into registers in batches (all issued before the first store waits), stores into
// shared memory. Units past the block's last are invalid; every unit's element and row are
// clamped into the tensor, so the loads need no guard.
void NormLowering::copyFill(const Leaf& l, DType t, const ExprP& first_row) {
  LOOM_ASSERT(k_.rowTier(), "a fill by loads and stores outside the row-vector tier");
  // Batches of 32 loads; over the grid (64 registers a thread) 16, which spill nothing.
  // Measurements: bench/results/2026-11-25-h100-scheduler-rules.md#copy-fill-batch
  int64_t U = k_.grid_sync ? 16 : 32;
  if (tune_.fill_batch) U = *tune_.fill_batch;
  U = std::min<int64_t>(U, unitTrips());
  const int bytes = dtypeBytes(t);
  b_.repeat("f", (unitTrips() + U - 1) / U, {}, [&](const ExprP& i, const std::vector<ExprP>& carried) {
    std::vector<Chunk> units;
    std::vector<ExprP> vals;
    for (int64_t j = 0; j < U; ++j) {
      units.push_back(rowUnitChunk(b_.add(b_.mul(i, c(U)), c(j)), first_row));
      vals.push_back(b_.bind(kir::load(l.input, t, kir::stridedOffset(l.offset, l.strides, units.back().idx), 1, kir::Access::Gather,
                                       1, cache()), "x"));
    }
    for (int64_t j = 0; j < U; ++j)
      b_.ifThen(units[static_cast<size_t>(j)].valid, "fill", [&] {
        ExprP byte = smemByte(l, t, units[static_cast<size_t>(j)]);
        b_.emit(kir::bytesStore("loom_row_smem", byte, vals[static_cast<size_t>(j)], bytes, /*scalar=*/true));
      });
    return carried;
  });
}

// Rows a thread keeps in registers between passes read shared memory once: they keep the
// thread-per-row passes. Else the grid's row vectors take their statistics by vectors of rows
// where the rows' exchange stays small.
bool NormLowering::statsByRowVectors() const {
  if (!k_.rowTier() || k_.split < 2 || registers_) return false;
  if (tune_.rowvec_stats && *tune_.rowvec_stats == 0) return false;
  const int W = k_.threads_per_row * k_.row_vec, S = std::min(W, 32);
  return k_.row_vec * (W / S) <= 32 && int64_t{k_.block} / S * k_.row_vec * 8 <= 2048;
}

// A block's (count, mean, M2) for each of its rows, read by vectors of rows: the W threads of
// rows r .. r + row_vec - 1 take the vector's slots q, q + W, ..., each summing row_vec lanes; a
// warp then reduce-scatters the rows, a butterfly over the row's threads follows, and each
// warp's totals meet in shared memory, warps in order. Two exact passes: the sums, then squared
// deviations from the block's own means. Every thread of a row ends with the same bits.
kir::Stats NormLowering::rowVectorStats(const ENode& x, DType acc) {
  const int V = k_.row_vec, T = k_.threads_per_row, W = T * V, S = std::min(W, 32);
  const int64_t groups = k_.rows_per_block / V, slots = int64_t{k_.chunks} * T;
  const int64_t trips = (slots + W - 1) / W;
  // Unrolled by 4, or by 2 where blocks share an SM (64 registers a thread).
  int unroll = static_cast<int>(std::min<int64_t>(trips, k_.min_blocks_per_sm > 1 ? 2 : 4));
  if (tune_.chunk_unroll) unroll = chunk_unroll_;
  const ExprP zero = kir::dataConst(acc, 0, 1);
  ExprP tid = b_.convert(tid_, Type::idx());
  ExprP g = b_.udiv(tid, c(W));
  ExprP q = b_.urem(tid, c(W));
  ExprP j = b_.urem(b_.udiv(tid_, kir::i32Const(T)), kir::i32Const(V));
  const std::string buf = kir::bufferName(out_, "rowvec_stats");
  out_.buffers.push_back({buf, "rowvec_stats", kir::Place::Smem, acc, int64_t{k_.block} / S * V, 8});
  auto lane = [&](const ExprP& v, int l) {
    return b_.bind(kir::intrinsic(kir::Intrinsic::Lane, Type::data(acc, 1), {v, kir::i32Const(l)}));
  };
  auto shfl = [&](const ExprP& v, int off) {
    return b_.bind(kir::intrinsic(kir::Intrinsic::ShflXor, v->type, {v, kir::i32Const(off)}));
  };
  // Every row's total over the vector's threads, for a sum of f(lanes) per row.
  auto pass = [&](const std::function<ExprP(Chunk&)>& f) {
    auto sums = b_.repeat("rv", trips, std::vector<ExprP>(static_cast<size_t>(V), zero),
                          [&](const ExprP& i, const std::vector<ExprP>& in) {
      Chunk ch = rowPiece(b_.add(b_.mul(b_.add(q, b_.mul(i, c(W))), c(groups)), g), first_row_);
      ExprP v = f(ch);
      std::vector<ExprP> out;
      for (int l = 0; l < V; ++l)
        out.push_back(b_.math(ir::OpKind::Add, acc, {in[static_cast<size_t>(l)], b_.select(ch.valid, lane(v, l), zero)}));
      return out;
    }, unroll);
    // vals[i] is row (j's low `bits` bits) | i << bits.
    std::vector<ExprP> vals = sums;
    int bits = 0;
    for (; (1 << bits) < V && (T << bits) < 32; ++bits) {
      ExprP bit = b_.op(kir::IndexOp::And, b_.op(kir::IndexOp::Shr, j, kir::i32Const(bits)), kir::i32Const(1));
      ExprP hi = b_.op(kir::IndexOp::Ne, bit, kir::i32Const(0));
      std::vector<ExprP> next;
      for (size_t i = 0; i + 1 < vals.size(); i += 2) {
        ExprP keep = b_.select(hi, vals[i + 1], vals[i]);
        ExprP send = b_.select(hi, vals[i], vals[i + 1]);
        next.push_back(b_.math(ir::OpKind::Add, acc, {keep, shfl(send, T << bits)}));
      }
      vals = std::move(next);
    }
    for (int off = 1; off < std::min(T, 32); off *= 2)
      for (auto& v : vals) v = b_.math(ir::OpKind::Add, acc, {v, shfl(v, off)});
    ExprP seg = b_.udiv(tid_, kir::i32Const(S));
    ExprP first = b_.op(kir::IndexOp::Eq, b_.urem(tid_, kir::i32Const(std::min(T, 32))), kir::i32Const(0));
    b_.ifThen(first, "rvpublish", [&] {
      ExprP low = b_.op(kir::IndexOp::And, j, kir::i32Const((1 << bits) - 1));
      for (size_t i = 0; i < vals.size(); ++i) {
        ExprP row = b_.op(kir::IndexOp::Or, low, kir::i32Const(static_cast<int64_t>(i) << bits));
        b_.emit(kir::bufStore(buf, b_.add(b_.mul(seg, kir::i32Const(V)), row), vals[i]));
      }
    });
    b_.emit(kir::barrier(kir::Barrier::Block));
    ExprP seg0 = b_.mul(b_.udiv(tid_, kir::i32Const(W)), kir::i32Const(W / S));
    std::vector<ExprP> tot;
    for (int r = 0; r < V; ++r) {
      ExprP t;
      for (int w = 0; w < W / S; ++w) {
        ExprP at = b_.add(b_.mul(b_.add(seg0, kir::i32Const(w)), kir::i32Const(V)), kir::i32Const(r));
        ExprP xv = b_.bind(kir::bufLoad(buf, acc, at));
        t = t ? b_.math(ir::OpKind::Add, acc, {t, xv}) : xv;
      }
      tot.push_back(t);
    }
    b_.emit(kir::barrier(kir::Barrier::Block));  // before the next pass writes its totals
    return tot;
  };
  auto sums = pass([&](Chunk& ch) { return values(x, acc, ch); });
  ExprP n = kir::blockCount(b_, rank_, T, k_.split, k_.chunks, row_chunks_, k_.vec, acc);
  ExprP safe = b_.select(b_.math(ir::OpKind::Gt, DType::Bool, {n, zero}), n, kir::dataConst(acc, 1, 1));
  std::vector<ExprP> mean;
  for (const auto& s : sums) mean.push_back(b_.math(ir::OpKind::Div, acc, {s, safe}));
  ExprP means = b_.bind(kir::intrinsic(kir::Intrinsic::Concat, Type::data(acc, V), mean));
  auto m2 = pass([&](Chunk& ch) {
    return b_.bind(kir::intrinsic(kir::Intrinsic::SqDiff, Type::data(acc, V), {values(x, acc, ch), means}));
  });
  auto own = [&](const std::vector<ExprP>& per_row) {
    ExprP v = per_row[0];
    for (int r = 1; r < V; ++r)
      v = b_.select(b_.op(kir::IndexOp::Eq, j, kir::i32Const(r)), per_row[static_cast<size_t>(r)], v);
    return v;
  };
  ExprP own_mean = own(mean);
  ExprP own_m2 = own(m2);
  return {n, own_mean, own_m2};
}

}  // namespace loom::schedule::norm_lower_detail
