// The normalization lowering's column reductions (see schedule/normalization/lower.h, RowKernel::columns):
// the rows' loop carrying each thread's partials, the partials in the workspace, the grid
// barrier, and the fixed-order combine of a tile of columns.
#include <algorithm>

#include <fmt/format.h>

#include "compiler/schedule/normalization/columns.h"
#include "compiler/schedule/normalization/lower.h"
#include "ir/error.h"

namespace loom::schedule::norm_lower_detail {

ExprP NormLowering::foldColumn(const ENode* r, const ExprP& a, const ExprP& b, int lanes) {
  return b_.bind(kir::math(kir::combineOp(kir::combineOf(r->op)), accOf(r), {a, b}, lanes));
}

DType NormLowering::widestColumnAcc() const {
  DType widest = DType::F32;
  for (const ENode* r : columns_)
    if (dtypeBytes(accOf(r)) > dtypeBytes(widest)) widest = accOf(r);
  return widest;
}

// Column reduction `col`'s partial `partial` of the row's chunk `chunk` in the workspace: past
// the counters, each reduction's partials one after another, each partial the row's chunks.
ExprP NormLowering::columnSlot(size_t col, const ExprP& partial, const ExprP& chunk) {
  const int64_t bytes = int64_t{k_.vec} * dtypeBytes(accOf(columns_[col]));
  ExprP entry = b_.add(b_.mul(partial, c(row_chunks_)), chunk);
  ExprP byte = b_.add(c(column_offset_[col]), b_.mul(entry, c(bytes)));
  return b_.bind(kir::intrinsic(kir::Intrinsic::ByteAddr, Type::addr(), {ws_, byte}));
}

// Column reduction `col`'s partial of the row's chunk `ci` (t + q T, of thread t) in shared memory
// (RowKernel::col_smem), in pieces of 16 bytes: piece p of every chunk side by side, so that a
// warp's accesses are one contiguous line each (no bank conflicts). Only the chunk's thread reads
// or writes its slots: no barrier between.
ExprP NormLowering::smemPartialByte(size_t col, const ExprP& ci, int piece) {
  const DType acc = accOf(columns_[col]);
  const int lanes = std::min(k_.vec, 16 / dtypeBytes(acc));
  const int64_t slots = int64_t{k_.chunks} * k_.threads_per_row;
  int64_t base = 0;
  for (size_t j = 0; j < col; ++j) base += slots * k_.vec * dtypeBytes(accOf(columns_[j]));
  const int64_t piece_bytes = int64_t{lanes} * dtypeBytes(acc);
  return b_.add(c(base), b_.mul(b_.add(c(piece * slots), ci), c(piece_bytes)));
}

// The streamed row's last pass: each valid chunk of a valid row adds its values of every column
// reduction to its slots.
void NormLowering::foldSmemColumns(Chunk& ch) {
  b_.ifThen(b_.op(kir::IndexOp::And, row_valid_, ch.valid), "cfold", [&] {
    for (size_t j = 0; j < columns_.size(); ++j) {
      const ENode* r = columns_[j];
      ExprP v = values(*r->args[0], accOf(r), ch);
      if (v->type.lanes != k_.vec) v = b_.bind(kir::intrinsic(kir::Intrinsic::Splat, Type::data(accOf(r), k_.vec), {v}));
      storeSmemPartial(j, ch.slot, foldColumn(r, loadSmemPartial(j, ch.slot), v, k_.vec));
    }
  });
}

ExprP NormLowering::loadSmemPartial(size_t col, const ExprP& ci) {
  const DType acc = accOf(columns_[col]);
  const int V = k_.vec, lanes = std::min(V, 16 / dtypeBytes(acc));
  std::vector<ExprP> all;
  for (int p = 0; p < V / lanes; ++p) {
    ExprP v = b_.bind(kir::bytesLoad("loom_row_smem", acc, lanes, smemPartialByte(col, ci, p), lanes * dtypeBytes(acc)));
    for (int l = 0; l < lanes; ++l)
      all.push_back(lanes == 1 ? v : b_.bind(kir::intrinsic(kir::Intrinsic::Lane, Type::data(acc, 1), {v, kir::i32Const(l)})));
  }
  return V == 1 ? all[0] : b_.bind(kir::intrinsic(kir::Intrinsic::Concat, Type::data(acc, V), all));
}

void NormLowering::storeSmemPartial(size_t col, const ExprP& ci, const ExprP& v) {
  const DType acc = accOf(columns_[col]);
  const int V = k_.vec, lanes = std::min(V, 16 / dtypeBytes(acc));
  for (int p = 0; p < V / lanes; ++p) {
    ExprP piece = v;
    if (lanes < V) {
      std::vector<ExprP> part;
      for (int l = 0; l < lanes; ++l)
        part.push_back(b_.bind(kir::intrinsic(kir::Intrinsic::Lane, Type::data(acc, 1), {v, kir::i32Const(p * lanes + l)})));
      piece = lanes == 1 ? part[0] : b_.bind(kir::intrinsic(kir::Intrinsic::Concat, Type::data(acc, lanes), part));
    }
    b_.emit(kir::bytesStore("loom_row_smem", smemPartialByte(col, ci, p), piece, lanes * dtypeBytes(acc)));
  }
}

// The row's loads taken one row set ahead (norm_detail::loadsAhead).
std::vector<std::pair<Leaf, DType>> NormLowering::prefetchedLoads() const {
  if (!unrolled_) return {};
  return norm_detail::loadsAhead(k_, k_.chunks, !k_.col_smem, tune_);
}

std::vector<ExprP> NormLowering::loadRowSet(const ExprP& first_row) {
  ExprP row = b_.add(first_row, b_.convert(row_in_block_, Type::idx()));
  ExprP ok = b_.bind(kir::index(kir::IndexOp::Ult, row, rows()));
  std::vector<ExprP> outer = b_.unravel(b_.select(ok, row, lastRow()), k_.outer_shape, 1);
  std::vector<ExprP> vals;
  for (int q = 0; q < k_.chunks; ++q) {
    Chunk ch = chunkOf(outer, t_in_row_, c(q));
    for (const auto& [leaf, t] : ahead_loads_) vals.push_back(loadGlobal(leaf, t, ch));
  }
  return vals;
}

// Block `blk` takes row sets blk, blk + G, ... (a set past the last: its rows invalid, stored and
// added nowhere); its threads carry one partial per column reduction and chunk through them,
// and the next row set's data where it is loaded ahead (prefetchedLoads).
void NormLowering::columnRows(const ExprP& blk) {
  LOOM_ASSERT((unrolled_ || k_.col_smem) && k_.split == 1 && !k_.async_fill && !k_.rowTier() && k_.smem_leaves.empty() &&
                  (k_.smem_bytes == 0) != k_.col_smem && (!k_.col_smem || k_.rows_per_block == 1),
              "column reductions beside rows held other than in registers, or streamed, with partials in shared memory");
  const int ws = static_cast<int>(out_.params.size()) - 1;
  ws_ = b_.bindAs("workspace", kir::intrinsic(kir::Intrinsic::ParamAddr, Type::addr(), {kir::intConst(ws)}));
  int64_t bytes = RowKernel::kColumnCounterBytes;
  for (const ENode* r : columns_) {
    column_offset_.push_back(bytes);
    bytes += k_.col_partials * k_.rowElems() * dtypeBytes(accOf(r));
  }
  LOOM_ASSERT(bytes == k_.workspace_bytes, "column partials of {} bytes, the schedule says {}", bytes,
              k_.workspace_bytes);
  const int64_t G = k_.grid, L = k_.rows_per_block, Q = k_.chunks;
  // The sets each block walks: of the row count, a constant or of the size parameter (then the
  // loop's bound, and `trips` its largest).
  const int64_t most_rows = k_.symbolic() ? k_.size_max * k_.rows_factor : k_.rows();
  const int64_t trips = ((most_rows + L - 1) / L + G - 1) / G;
  ExprP trips_at_run;
  if (k_.symbolic()) {
    const ExprP sets = kir::index(kir::IndexOp::Div, kir::add(rows(), c(L - 1)), c(L));
    trips_at_run = kir::index(kir::IndexOp::Div, kir::add(sets, c(G - 1)), c(G));
  }
  std::vector<ExprP> init;
  for (const ENode* r : columns_)
    for (int64_t q = 0; q < Q; ++q) init.push_back(identityOf(r, k_.vec));
  // Partials in shared memory: each thread's slots start at the identity; the loop carries none.
  auto ownChunk = [&](int64_t q) { return b_.add(t_in_row_, c(q * k_.threads_per_row)); };  // the thread's q-th
  if (k_.col_smem)
    for (size_t j = 0; j < columns_.size(); ++j)
      for (int64_t q = 0; q < Q; ++q) storeSmemPartial(j, ownChunk(q), init[j * static_cast<size_t>(Q) + static_cast<size_t>(q)]);
  ahead_loads_ = prefetchedLoads();
  const size_t n_parts = k_.col_smem ? 0 : init.size();
  if (k_.col_smem) init.clear();
  if (!ahead_loads_.empty()) {
    std::vector<ExprP> first = loadRowSet(b_.mul(blk, c(L)));
    init.insert(init.end(), first.begin(), first.end());
  }
  std::vector<ExprP> parts = b_.repeat("i", trips, init, [&](const ExprP& i, const std::vector<ExprP>& carried) {
    std::vector<ExprP> later;
    if (!ahead_loads_.empty()) later = loadRowSet(b_.mul(b_.add(b_.mul(b_.add(i, c(1)), c(G)), blk), c(L)));
    chunks_.clear();
    // (Streamed: its last pass folds the partials.)
    rowsAt(b_.mul(b_.add(b_.mul(i, c(G)), blk), c(L)), {carried.begin() + static_cast<long>(n_parts), carried.end()});
    std::vector<ExprP> next(carried.begin(), carried.begin() + static_cast<long>(n_parts));
    for (size_t j = 0; j < columns_.size() && !k_.col_smem; ++j) {
      const ENode* r = columns_[j];
      for (int64_t q = 0; q < Q; ++q) {
        Chunk& ch = chunks_[static_cast<size_t>(q)];
        ExprP v = values(*r->args[0], accOf(r), ch);
        if (v->type.lanes != k_.vec) v = b_.bind(kir::intrinsic(kir::Intrinsic::Splat, Type::data(accOf(r), k_.vec), {v}));
        ExprP ok = b_.op(kir::IndexOp::And, row_valid_, ch.valid);
        ExprP add = b_.select(ok, v, identityOf(r, k_.vec));
        ExprP& acc = next[j * static_cast<size_t>(Q) + static_cast<size_t>(q)];
        acc = foldColumn(r, acc, add, k_.vec);
      }
    }
    next.insert(next.end(), later.begin(), later.end());
    return next;
  }, 1, trips_at_run);
  parts.resize(n_parts);
  if (k_.col_smem) {
    parts.clear();
    for (size_t j = 0; j < columns_.size(); ++j)
      for (int64_t q = 0; q < Q; ++q) parts.push_back(loadSmemPartial(j, ownChunk(q)));
  }
  publishColumns(blk, parts);
  b_.emit(kir::barrier(kir::Barrier::Block));
  b_.emit(kir::gridSync("tid", ws_, kir::i32Const(G)));
  b_.emit(kir::barrier(kir::Barrier::Block));
  const int64_t tile_trips = (k_.col_tiles + G - 1) / G;
  b_.repeat("j", tile_trips, {}, [&](const ExprP& j, const std::vector<ExprP>& carried) {
    ExprP tile = b_.add(b_.mul(j, c(G)), blk);
    if (tile_trips * G != k_.col_tiles)
      b_.uniformIf(b_.op(kir::IndexOp::Ult, tile, c(k_.col_tiles)), "tile", [&] { columnCombine(tile); });
    else
      columnCombine(tile);
    return carried;
  });
  exitGrid(ws_, G);
}

// The block's partials: with one row a block, each thread's chunks t + q * T as they are;
// with several, the rows' partials meet in shared memory first, added in row order, so that the
// block publishes one partial (the workspace holds a partial per block, not per row).
void NormLowering::publishColumns(const ExprP& blk, const std::vector<ExprP>& parts) {
  const int64_t Q = k_.chunks, L = k_.rows_per_block, T = k_.threads_per_row;
  const int V = k_.vec;
  auto part = [&](size_t j, int64_t q) { return parts[j * static_cast<size_t>(Q) + static_cast<size_t>(q)]; };
  auto align = [&](size_t j) { return std::min(16, V * dtypeBytes(accOf(columns_[j]))); };
  if (L == 1) {
    for (int64_t q = 0; q < Q; ++q) {
      ExprP ci = b_.add(t_in_row_, c(q * T));
      b_.ifThen(b_.op(kir::IndexOp::Ult, ci, c(row_chunks_)), "publish", [&] {
        for (size_t j = 0; j < columns_.size(); ++j) b_.emit(kir::globalStore(columnSlot(j, blk, ci), part(j, q), align(j)));
      });
    }
    return;
  }
  const std::string buf = kir::bufferName(out_, "column_rows");
  out_.buffers.push_back({buf, "column_rows", kir::Place::Smem, widestColumnAcc(), L * row_chunks_ * V, 8, true});
  auto slot = [&](const ExprP& r, const ExprP& ci, int l) {
    return b_.add(b_.mul(b_.add(b_.mul(b_.convert(r, Type::idx()), c(row_chunks_)), ci), c(V)), c(l));
  };
  const int64_t trips = (row_chunks_ + k_.block - 1) / k_.block;
  for (size_t j = 0; j < columns_.size(); ++j) {
    const ENode* r = columns_[j];
    const DType acc = accOf(r);
    for (int64_t q = 0; q < Q; ++q) {
      ExprP ci0 = b_.add(t_in_row_, c(q * T));
      ExprP ok = b_.bind(kir::index(kir::IndexOp::Ult, ci0, c(row_chunks_)));
      ExprP ci = b_.select(ok, ci0, c(row_chunks_ - 1));
      b_.ifThen(ok, "rstage", [&] {
        for (int l = 0; l < V; ++l) {
          ExprP v = V == 1 ? part(j, q) : b_.bind(kir::intrinsic(kir::Intrinsic::Lane, Type::data(acc, 1), {part(j, q), kir::i32Const(l)}));
          b_.emit(kir::bufStore(buf, slot(row_in_block_, ci, l), v));
        }
      });
    }
    b_.emit(kir::barrier(kir::Barrier::Block));
    b_.repeat("u", trips, {}, [&](const ExprP& m, const std::vector<ExprP>& carried) {
      ExprP u0 = b_.add(b_.convert(tid_, Type::idx()), b_.mul(m, c(k_.block)));
      ExprP ok = b_.bind(kir::index(kir::IndexOp::Ult, u0, c(row_chunks_)));
      ExprP u = b_.select(ok, u0, c(row_chunks_ - 1));
      b_.ifThen(ok, "publish", [&] {
        std::vector<ExprP> lanes;
        for (int l = 0; l < V; ++l) {
          ExprP t = b_.bind(kir::bufLoad(buf, acc, slot(kir::i32Const(0), u, l)));
          for (int64_t row = 1; row < L; ++row)
            t = foldColumn(r, t, b_.bind(kir::bufLoad(buf, acc, slot(kir::i32Const(row), u, l))), 1);
          lanes.push_back(t);
        }
        ExprP v = V == 1 ? lanes[0] : b_.bind(kir::intrinsic(kir::Intrinsic::Concat, Type::data(acc, V), lanes));
        b_.emit(kir::globalStore(columnSlot(j, blk, u), v, align(j)));
      });
      return carried;
    });
    b_.emit(kir::barrier(kir::Barrier::Block));  // read before the next reduction's partials
  }
}

// Tile `tile`: thread (ty, tx) folds partials ty, ty + BY, ... of chunk tile * BX + tx of the
// columns, four loaded before any is added; the BY threads of a chunk then meet in a fixed
// order (below); thread (0, tx) finishes the chunk's reductions and stores every output they
// reach.
void NormLowering::columnCombine(const ExprP& tile) {
  const int BX = k_.col_bx, BY = k_.col_by, V = k_.vec;
  const int64_t P = k_.col_partials;
  ExprP tx = b_.bind(kir::index(kir::IndexOp::Rem, tid_, kir::i32Const(BX)));
  ExprP ty = b_.bind(kir::index(kir::IndexOp::Div, tid_, kir::i32Const(BX)));
  ExprP u0 = b_.add(b_.mul(tile, c(BX)), b_.convert(tx, Type::idx()));
  ExprP ok = b_.bind(kir::index(kir::IndexOp::Ult, u0, c(row_chunks_)));
  ExprP u = b_.select(ok, u0, c(0));
  const int U = 4;
  const int64_t per_thread = (P + BY - 1) / BY;
  const int64_t trips = std::max<int64_t>(1, (per_thread + U - 1) / U);
  std::vector<ExprP> init;
  for (const ENode* r : columns_) init.push_back(identityOf(r, V));
  std::vector<ExprP> sums = b_.repeat("p", trips, init, [&](const ExprP& m, const std::vector<ExprP>& carried) {
    std::vector<std::vector<ExprP>> loaded(U);
    for (int uu = 0; uu < U; ++uu) {
      ExprP pi = b_.add(b_.convert(ty, Type::idx()), b_.mul(b_.add(b_.mul(m, c(U)), c(uu)), c(BY)));
      ExprP valid = b_.bind(kir::index(kir::IndexOp::Ult, pi, c(P)));
      ExprP at = b_.select(valid, pi, c(0));
      for (size_t j = 0; j < columns_.size(); ++j) {
        const ENode* r = columns_[j];
        ExprP v = b_.bind(kir::intrinsic(kir::Intrinsic::RelaxedLoad, Type::data(accOf(r), V), {columnSlot(j, at, u)}));
        loaded[static_cast<size_t>(uu)].push_back(b_.select(valid, v, identityOf(r, V)));
      }
    }
    std::vector<ExprP> next = carried;
    for (int uu = 0; uu < U; ++uu)
      for (size_t j = 0; j < columns_.size(); ++j)
        next[j] = foldColumn(columns_[j], next[j], loaded[static_cast<size_t>(uu)][j], V);
    return next;
  });
  // The BY threads of a chunk: a butterfly within each warp (those BX apart), then one slot of
  // V lanes per group (a warp, or BX >= 32 threads of one ty) in shared memory, which thread
  // (0, tx) adds in group order.
  const int span = std::max(32, BX);
  const int groups = k_.block / span;
  const std::string buf = kir::bufferName(out_, "column_partials");
  out_.buffers.push_back({buf, "column_partials", kir::Place::Smem, widestColumnAcc(),
                          int64_t{groups} * BX * V * static_cast<int64_t>(columns_.size()), 8, true});
  ExprP group = b_.bind(kir::index(kir::IndexOp::Div, tid_, kir::i32Const(span)));
  auto slot = [&](size_t j, const ExprP& g, int l) {
    ExprP at = b_.add(b_.mul(b_.add(b_.mul(kir::i32Const(static_cast<int64_t>(j)), kir::i32Const(groups)), g),
                             kir::i32Const(BX)), tx);
    return b_.add(b_.mul(at, kir::i32Const(V)), kir::i32Const(l));
  };
  auto lane = [&](const ExprP& v, DType acc, int l) {
    return V == 1 ? v : b_.bind(kir::intrinsic(kir::Intrinsic::Lane, Type::data(acc, 1), {v, kir::i32Const(l)}));
  };
  for (size_t j = 0; j < columns_.size(); ++j) {
    const ENode* r = columns_[j];
    for (int off = BX; off < 32; off *= 2) {
      ExprP other = b_.bind(kir::intrinsic(kir::Intrinsic::ShflXor, sums[j]->type, {sums[j], kir::i32Const(off)}));
      sums[j] = foldColumn(r, sums[j], other, V);
    }
  }
  ExprP lead = b_.op(kir::IndexOp::Ult, b_.bind(kir::index(kir::IndexOp::Rem, tid_, kir::i32Const(span))),
                     kir::i32Const(BX));
  b_.ifThen(lead, "cpublish", [&] {
    for (size_t j = 0; j < columns_.size(); ++j)
      for (int l = 0; l < V; ++l) b_.emit(kir::bufStore(buf, slot(j, group, l), lane(sums[j], accOf(columns_[j]), l)));
  });
  b_.emit(kir::barrier(kir::Barrier::Block));
  std::vector<ExprP> totals;
  for (size_t j = 0; j < columns_.size(); ++j) {
    const ENode* r = columns_[j];
    const DType acc = accOf(r);
    std::vector<ExprP> lanes;
    for (int l = 0; l < V; ++l) {
      ExprP t = b_.bind(kir::bufLoad(buf, acc, slot(j, kir::i32Const(0), l)));
      for (int g = 1; g < groups; ++g)
        t = foldColumn(r, t, b_.bind(kir::bufLoad(buf, acc, slot(j, kir::i32Const(g), l))), 1);
      lanes.push_back(t);
    }
    ExprP t = V == 1 ? lanes[0] : b_.bind(kir::intrinsic(kir::Intrinsic::Concat, Type::data(acc, V), lanes));
    if (r->op == ir::OpKind::Mean) {
      const ExprP n = k_.symbolic() ? b_.bind(kir::convert(rows(), Type::data(acc, 1)))
                                    : kir::dataConst(acc, static_cast<double>(k_.rows()), V);
      t = b_.bind(kir::math(ir::OpKind::Div, acc, {t, n}, V));
    }
    if (r->dtype != acc) t = b_.bind(kir::math(ir::OpKind::Cast, r->dtype, {t}, V));
    totals.push_back(t);
  }
  b_.ifThen(b_.op(kir::IndexOp::Eq, ty, kir::i32Const(0)), "columns", [&] {
    Chunk ch;
    ch.valid = ok;
    ch.slot = u;
    ch.global = true;
    for (size_t d = 0; d < k_.outer_shape.size(); ++d) ch.idx.push_back(c(0));
    for (const auto& x : b_.unravel(u, k_.red_shape, V)) ch.idx.push_back(x);
    for (size_t j = 0; j < columns_.size(); ++j) ch.memo[columns_[j]] = totals[j];
    for (const auto& s : k_.stores) {
      if (!s.column) continue;
      ExprP v = eval(*s.value, ch);
      if (v->type.lanes != V) v = b_.bind(kir::intrinsic(kir::Intrinsic::Splat, Type::data(s.dtype, V), {v}));
      storeChunk(s, v, ch, ok);
    }
  });
  b_.emit(kir::barrier(kir::Barrier::Block));  // the slots read before the next tile's
}

}  // namespace loom::schedule::norm_lower_detail
