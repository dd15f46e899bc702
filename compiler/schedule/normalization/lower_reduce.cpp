// The normalization lowering's reductions and statistics (see schedule/normalization/lower.h).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "compiler/kir/welford.h"
#include "compiler/schedule/normalization/lower.h"
#include "ir/error.h"

namespace loom::schedule::norm_lower_detail {

bool NormLowering::perRow(const ENode& n) {
  if (n.kind != ENode::Kind::Op) return n.kind != ENode::Kind::Load;
  return std::all_of(n.args.begin(), n.args.end(), [](const lower::EPtr& a) { return perRow(*a); });
}

bool NormLowering::halfOutputs() const {
  return std::all_of(k_.stores.begin(), k_.stores.end(),
                     [](const auto& s) { return s.dtype == DType::F16 || s.dtype == DType::BF16; });
}

ExprP NormLowering::eval(const ENode& n, Chunk& ch) {
  auto it = ch.memo.find(&n);
  if (it != ch.memo.end()) return it->second;
  const int v = lanesOf(ch);
  ExprP out;
  switch (n.kind) {
    case ENode::Kind::Load: out = load(n.leaf, n.dtype, ch); break;
    case ENode::Kind::Const: out = kir::dataConst(n.dtype, n.value, v); break;
    case ENode::Kind::Index: {
      const auto& s = n.leaf.strides;
      out = b_.bind(kir::indexLanes(kir::stridedOffset(n.leaf.offset, s, ch.idx), v, laneStride(s, ch)), "ix");
      break;
    }
    case ENode::Kind::Reduce:
      out = reduced_.at(&n);
      if (ch.row_lanes) {  // lane j: row r_sub + j's
        std::vector<ExprP> lanes;
        for (int j = 0; j < v; ++j) {
          ExprP row = b_.add(ch.r_sub, kir::i32Const(j));
          lanes.push_back(b_.bind(kir::bufLoad(reduced_buf_, n.dtype, reducedSlot(&n, row))));
        }
        out = b_.bind(kir::intrinsic(kir::Intrinsic::Concat, Type::data(n.dtype, v), lanes));
      } else if (ch.r_sub) {
        out = b_.bind(kir::bufLoad(reduced_buf_, n.dtype, reducedSlot(&n, ch.r_sub)));  // another row's
      }
      break;
    case ENode::Kind::Op: {
      std::vector<ExprP> args;
      for (const auto& a : n.args) args.push_back(eval(*a, ch));
      if (n.op == ir::OpKind::Exp && n.dtype == DType::F32 && halfOutputs())
        out = b_.bind(kir::intrinsic(kir::Intrinsic::ExpApprox, Type::data(DType::F32, v), args));
      else if (n.op == ir::OpKind::Div && n.dtype == DType::F32 && !ch.row_lanes && perRow(*n.args[1]))
        // By a value of the row (softmax's sum): a reciprocal and a multiply.
        out = b_.bind(kir::intrinsic(kir::Intrinsic::MulRcp, Type::data(DType::F32, v), args));
      else
        out = b_.bind(kir::math(n.op, n.dtype, args, v));
      break;
    }
  }
  return ch.memo[&n] = out;
}

std::vector<ExprP> NormLowering::forEachChunk(std::vector<ExprP> carried, const StepFn& step) {
  if (unrolled_) {
    for (auto& ch : chunks_) carried = step(ch, carried);
    if (k_.peel) carried = step(edge_, carried);
  } else {
    carried = b_.repeat("k", k_.chunks, carried, [&](const ExprP& k, const std::vector<ExprP>& in) {
      Chunk ch = chunkAt(k);
      return step(ch, in);
    }, chunk_unroll_);
    if (k_.peel) {
      Chunk edge = edgeChunk();
      carried = step(edge, carried);
    }
  }
  filled_.insert(pass_loaded_.begin(), pass_loaded_.end());
  pass_loaded_.clear();
  return carried;
}

ExprP NormLowering::values(const ENode& x, DType acc, Chunk& ch) {
  ExprP v = eval(x, ch);
  return x.dtype == acc ? v : b_.bind(kir::math(ir::OpKind::Cast, acc, {v}, lanesOf(ch)));
}

ExprP NormLowering::rowReduce(kir::Combine cb, DType acc, const std::function<ExprP(Chunk&)>& f) {
  const kir::Intrinsic fold = kir::foldOf(cb);
  ExprP partial = forEachChunk({kir::combineIdentity(cb, acc)}, [&](Chunk& ch, const std::vector<ExprP>& carried) {
    ExprP vals = f(ch);
    ExprP local = b_.bind(kir::intrinsic(fold, Type::data(acc, 1), {vals, kir::combineIdentity(cb, acc)}));
    ExprP part = b_.select(ch.valid, local, kir::combineIdentity(cb, acc));
    return std::vector<ExprP>{b_.math(kir::combineOp(cb), acc, {carried[0], part})};
  })[0];
  return combineRow(cb, partial);
}

kir::CombineSpec NormLowering::rowSpec(kir::Combine cb, int values) {
  return {cb, k_.red_atoms, k_.threads_per_row, k_.rows_per_block, "t_in_row", "row_in_block", "lane", k_.cluster,
          gridLevel(values)};
}

ExprP NormLowering::combineRow(kir::Combine cb, const ExprP& partial) {
  const std::string name = fmt::format("row_{}{}", kir::combineName(cb), next_combine_++);
  b_.emit(kir::combine(name, partial, rowSpec(cb)));
  return kir::var(name, partial->type);
}

ExprP NormLowering::keptPosition(const std::vector<size_t>& kept, const Chunk& ch) {
  ExprP at = c(0);
  for (size_t i : kept) at = b_.add(b_.mul(at, c(k_.red_shape[i])), ch.idx[k_.outer_shape.size() + i]);
  return at;
}

int64_t NormLowering::chunksPerSubRow(const std::vector<const ENode*>& batch) const {
  // Every sub-row reduction of the batch keeps the same axes, in whole runs of the chunks.
  std::optional<std::vector<size_t>> kept;
  for (const ENode* r : batch) {
    if (r->sub_atoms.empty()) continue;
    const auto mine = k_.keptAxes(r->sub_atoms);
    if (kept && *kept != mine) return 0;
    kept = mine;
  }
  return kept ? k_.chunksPerPosition(*kept) : 0;
}

std::vector<ExprP> NormLowering::forEachChunkIn(int64_t first, int64_t count, std::vector<ExprP> carried,
                                                const StepFn& step) {
  LOOM_ASSERT(!k_.peel, "sub-row runs of a peeled row");
  if (unrolled_) {
    for (int64_t i = first; i < first + count; ++i) carried = step(chunks_[static_cast<size_t>(i)], carried);
    return carried;
  }
  const int unroll = count % chunk_unroll_ == 0 ? chunk_unroll_ : 1;
  return b_.repeat("k", count, carried, [&](const ExprP& k, const std::vector<ExprP>& in) {
    Chunk ch = chunkAt(b_.add(k, c(first)));
    return step(ch, in);
  }, unroll);
}

bool NormLowering::batchable(const ENode& r) const {
  if (k_.rowTier() || tune_.no_batched_reductions) return false;
  return r.op == ir::OpKind::Sum || r.op == ir::OpKind::Mean;  // (sub-row ones too; max and min: alone)
}

std::vector<std::vector<const ENode*>> NormLowering::reductionBatches() const {
  std::vector<std::vector<const ENode*>> out;
  std::set<const ENode*> done;
  auto isDone = [&](const ENode* n) { return reduced_.count(n) || sub_values_.count(n) || done.count(n); };
  auto ready = [&](const ENode& r) {  // every reduction it reads taken by an earlier batch
    bool ok = true;
    lower::visitPostOrder({r.args[0]}, [&](const ENode& n) { ok = ok && (n.kind != ENode::Kind::Reduce || isDone(&n)); });
    return ok;
  };
  std::vector<const ENode*> batch;
  auto flush = [&] {
    if (batch.empty()) return;
    done.insert(batch.begin(), batch.end());
    out.push_back(std::move(batch));
    batch.clear();
  };
  for (const ENode* r : reductions_) {
    if (isDone(r)) continue;
    if (!batchable(*r)) {
      flush();
      batch.push_back(r);
      flush();
      continue;
    }
    if (!ready(*r) || (!batch.empty() && computeDType(batch[0]->dtype) != computeDType(r->dtype))) flush();
    batch.push_back(r);
  }
  flush();
  return out;
}

int NormLowering::gridBarriersPerSet() const {
  int n = 0;
  std::set<std::pair<const ENode*, double>> stats;
  for (const auto& batch : reductionBatches()) {
    const ENode* r = batch[0];
    if (batch.size() > 1 || r->op != ir::OpKind::VarMean || stats.insert({r->args[0].get(), r->correction}).second) ++n;
  }
  return n;
}

void NormLowering::reduceAll() {
  for (const auto& batch : reductionBatches()) {
    // (In the grid tier a sub-row reduction's values share one barrier even alone.)
    if (batch.size() == 1 && !(k_.grid_sync && !batch[0]->sub_atoms.empty())) reduce(*batch[0]);
    else reduceBatch(batch);
  }
}

// Independent sums, means and sub-row reductions in one pass over the thread's chunks, their
// totals in one combine: means summed around the row's first element (as shiftedMean), each
// sub-row reduction's values per position it keeps (as subRowReduce).
void NormLowering::reduceBatch(const std::vector<const ENode*>& batch) {
  const DType acc = computeDType(batch[0]->dtype);
  for (const ENode* r : batch) LOOM_ASSERT(computeDType(r->dtype) == acc, "a batch of reductions in several dtypes");
  const ExprP id = kir::combineIdentity(kir::Combine::Sum, acc);
  struct Part {
    const ENode* r = nullptr;
    std::vector<size_t> kept;
    int64_t K = 1, n = 1;
    ExprP x0;  // a mean's shift
    size_t first = 0;  // its first accumulator
    bool lanes = false;  // lane k of each chunk in position k (RowKernel::lanesArePositions)
  };
  std::vector<Part> parts;
  size_t total = 0;
  for (const ENode* r : batch) {
    // (A row reduction keeps no axis.)
    Part p;
    p.r = r;
    if (!r->sub_atoms.empty()) p.kept = k_.keptAxes(r->sub_atoms);
    p.K = k_.positions(p.kept);
    p.lanes = k_.lanesArePositions(p.kept);
    p.n = k_.rowElems() / p.K;
    if (r->op == ir::OpKind::Mean && r->sub_atoms.empty()) p.x0 = rowShift(*r->args[0], acc);
    p.first = total;
    total += static_cast<size_t>(p.K);
    parts.push_back(p);
  }
  auto fold = [&](const Part& p, Chunk& ch) {
    LOOM_ASSERT(!p.lanes, "a sub-row reduction's lanes folded");
    ExprP vals = values(*p.r->args[0], acc, ch);
    if (p.x0) vals = b_.bind(kir::math(ir::OpKind::Sub, acc, {vals, p.x0}, lanesOf(ch)));
    ExprP local = b_.bind(kir::intrinsic(kir::Intrinsic::FoldSum, Type::data(acc, 1), {vals, id}));
    return b_.select(ch.valid, local, id);
  };
  std::vector<ExprP> partials;
  if (const int64_t per = chunksPerSubRow(batch); per > 0) {
    // Each run of `per` chunks of the thread lies in one position the sub-row reductions keep
    // (the k-th run in the k-th): a pass per run, no selects.
    std::vector<ExprP> rows(total, id);
    const int64_t K = static_cast<int64_t>(k_.chunks) / per;
    for (int64_t k = 0; k < K; ++k) {
      std::vector<ExprP> carried;
      for (const Part& p : parts) carried.push_back(p.K == 1 ? rows[p.first] : id);
      carried = forEachChunkIn(k * per, per, carried, [&](Chunk& ch, const std::vector<ExprP>& in) {
        std::vector<ExprP> next;
        for (size_t j = 0; j < parts.size(); ++j) next.push_back(b_.math(ir::OpKind::Add, acc, {in[j], fold(parts[j], ch)}));
        return next;
      });
      for (size_t j = 0; j < parts.size(); ++j)
        rows[parts[j].first + (parts[j].K == 1 ? 0 : static_cast<size_t>(k))] = carried[j];
    }
    filled_.insert(pass_loaded_.begin(), pass_loaded_.end());
    pass_loaded_.clear();
    partials = rows;
  } else {
    partials = forEachChunk(std::vector<ExprP>(total, id), [&](Chunk& ch, const std::vector<ExprP>& carried) {
      std::vector<ExprP> next = carried;
      for (const Part& p : parts) {
        if (p.lanes) {
          lanePositions(*p.r->args[0], acc, ch, next.begin() + static_cast<long>(p.first), p.K, kir::Combine::Sum);
          continue;
        }
        ExprP part = fold(p, ch);
        const ExprP at = p.K > 1 ? keptPosition(p.kept, ch) : nullptr;
        for (int64_t k = 0; k < p.K; ++k) {
          ExprP mine = p.K == 1 ? part : b_.select(b_.op(kir::IndexOp::Eq, at, c(k)), part, id);
          ExprP& slot = next[p.first + static_cast<size_t>(k)];
          slot = b_.math(ir::OpKind::Add, acc, {slot, mine});
        }
      }
      return next;
    });
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < total; ++i) names.push_back(fmt::format("row_sum{}", next_combine_++));
  b_.emit(kir::combineAll(names, partials, rowSpec(kir::Combine::Sum, static_cast<int>(total))));
  for (const Part& p : parts) {
    std::vector<ExprP> vals;
    for (int64_t k = 0; k < p.K; ++k) {
      ExprP v = kir::var(names[p.first + static_cast<size_t>(k)], Type::data(acc, 1));
      if (p.r->op == ir::OpKind::Mean) {
        ExprP q = b_.math(ir::OpKind::Div, acc, {v, kir::dataConst(acc, static_cast<double>(p.n), 1)});
        v = p.x0 ? b_.bindAs(fmt::format("mean{}", next_mean_++), kir::math(ir::OpKind::Add, acc, {p.x0, q})) : q;
      }
      vals.push_back(p.r->dtype == acc ? v : b_.bind(kir::math(ir::OpKind::Cast, p.r->dtype, {v})));
    }
    if (p.r->sub_atoms.empty()) reduced_[p.r] = vals[0];
    else sub_values_[p.r] = std::move(vals);
  }
}

// A sub-row reduction: per combination of its kept axes (k = their coordinates, row-major), the
// thread folds each chunk's lanes into accumulator k of that chunk's coordinates; each
// accumulator is then combined across the row as the row's own reductions are.
void NormLowering::subRowReduce(const ENode& r) {
  const ENode& x = *r.args[0];
  const DType acc = computeDType(r.dtype);
  const std::vector<size_t> kept = k_.keptAxes(r.sub_atoms);
  const bool lanes = k_.lanesArePositions(kept);
  LOOM_ASSERT(kept.empty() || kept.back() + 1 < k_.red_shape.size() || k_.vec == 1 || lanes,
              "a sub-row reduction keeping the innermost reduced axis of vectors of {}", k_.vec);
  LOOM_ASSERT(!k_.grid_sync, "a sub-row reduction over the grid outside a batch");
  const int64_t K = k_.positions(kept), n = k_.rowElems() / K;
  kir::Combine cb = kir::Combine::Sum;
  if (r.op == ir::OpKind::ReduceMax) cb = kir::Combine::Max;
  else if (r.op == ir::OpKind::ReduceMin) cb = kir::Combine::Min;
  else LOOM_ASSERT(r.op == ir::OpKind::Sum || r.op == ir::OpKind::Mean, "sub-row reduction `{}`", ir::opName(r.op));
  const ExprP id = kir::combineIdentity(cb, acc);
  const kir::Intrinsic fold = kir::foldOf(cb);
  auto partials = forEachChunk(std::vector<ExprP>(static_cast<size_t>(K), id), [&](Chunk& ch, const std::vector<ExprP>& carried) {
    if (lanes) {
      std::vector<ExprP> next = carried;
      lanePositions(x, acc, ch, next.begin(), K, cb);
      return next;
    }
    ExprP local = b_.bind(kir::intrinsic(fold, Type::data(acc, 1), {values(x, acc, ch), id}));
    ExprP part = b_.select(ch.valid, local, id);
    const ExprP at = K > 1 ? keptPosition(kept, ch) : nullptr;
    std::vector<ExprP> next;
    for (int64_t k = 0; k < K; ++k) {
      ExprP mine = K == 1 ? part : b_.select(b_.op(kir::IndexOp::Eq, at, c(k)), part, id);
      next.push_back(b_.math(kir::combineOp(cb), acc, {carried[static_cast<size_t>(k)], mine}));
    }
    return next;
  });
  std::vector<ExprP>& out = sub_values_[&r];
  for (const ExprP& p : partials) {
    ExprP v = combineRow(cb, p);
    if (r.op == ir::OpKind::Mean) v = b_.math(ir::OpKind::Div, acc, {v, kir::dataConst(acc, static_cast<double>(n), 1)});
    out.push_back(r.dtype == acc ? v : b_.bind(kir::math(ir::OpKind::Cast, r.dtype, {v})));
  }
}

// Lane k of the chunk's values combined into position k's accumulator (lanes past the row's
// end: the identity).
void NormLowering::lanePositions(const ENode& x, DType acc, Chunk& ch, std::vector<ExprP>::iterator slots, int64_t K,
                                 kir::Combine cb) {
  LOOM_ASSERT(K == k_.vec, "{} positions in vectors of {}", K, k_.vec);
  const ExprP id = kir::combineIdentity(cb, acc);
  ExprP vals = values(x, acc, ch);
  for (int64_t k = 0; k < K; ++k) {
    ExprP lane = b_.bind(kir::intrinsic(kir::Intrinsic::Lane, Type::data(acc, 1), {vals, kir::i32Const(static_cast<int>(k))}));
    ExprP& slot = slots[k];
    slot = b_.math(kir::combineOp(cb), acc, {slot, b_.select(ch.valid, lane, id)});
  }
}

ExprP NormLowering::shiftedMean(const ENode& x, DType acc, double n) {
  const ExprP x0 = rowShift(x, acc);
  ExprP sum = rowReduce(kir::Combine::Sum, acc, [&](Chunk& ch) {
    return b_.bind(kir::math(ir::OpKind::Sub, acc, {values(x, acc, ch), x0}, lanesOf(ch)));
  });
  ExprP q = b_.math(ir::OpKind::Div, acc, {sum, kir::dataConst(acc, n, 1)});
  return b_.bindAs(fmt::format("mean{}", next_mean_++), kir::math(ir::OpKind::Add, acc, {x0, q}));
}

ExprP NormLowering::rowShift(const ENode& x, DType acc) {
  // A row whole in the block's shared memory behind a barrier has its first element there;
  // with a thread fill, the row's first thread copied it: a shuffle.
  Chunk first = k_.thread_fill ? chunkAt(c(0)) : rowChunk();
  if (!k_.thread_fill) first.global = !(k_.async_fill && k_.split == 1 && k_.rows_per_block > 1);
  ExprP x0 = b_.bind(kir::intrinsic(kir::Intrinsic::First, Type::data(x.dtype, 1), {eval(x, first)}));
  if (x.dtype != acc) x0 = b_.bind(kir::math(ir::OpKind::Cast, acc, {x0}));
  if (k_.thread_fill) {
    const int T = k_.threads_per_row;
    ExprP src = b_.mul(b_.udiv(lane_, kir::i32Const(T)), kir::i32Const(T));
    x0 = b_.bind(kir::intrinsic(kir::Intrinsic::ShflIdx, x0->type, {x0, src}));
  }
  // The shift only keeps the sum small; an infinite or NaN first element would turn every
  // x - x0 into NaN where the row's mean is inf: such a row is summed as it is.
  return b_.select(kir::isFinite(b_, acc, x0), x0, kir::dataConst(acc, 0, 1));
}

// The row's (mean, M2) in one reduction: each chunk's exact two-pass statistics over its lanes
// merged into the thread's (Chan), then the row's threads merged.
std::pair<ExprP, ExprP> NormLowering::welford(const ENode& x, DType acc) {
  const ExprP zero = kir::dataConst(acc, 0, 1);
  LOOM_ASSERT(k_.cluster == 1, "Welford statistics over a cluster");
  LOOM_ASSERT(!k_.grid_sync || k_.threads_per_row >= 32 || 32 % k_.threads_per_row == 0,
              "grid statistics need rows of whole warps or of threads dividing a warp");
  std::vector<ExprP> folded;
  if (k_.async_fill && statsByRowVectors()) {
    // Every thread of a row already holds its block's statistics: no merge across threads.
    kir::Stats st = rowVectorStats(x, acc);
    if (!k_.grid_sync) return {st.mean, st.m2};
    const std::string id = std::to_string(next_combine_++);
    std::vector<std::string> names = {"row_n" + id, "row_mean" + id, "row_m2" + id};
    kir::CombineSpec spec{kir::Combine::Sum, k_.red_atoms, k_.threads_per_row, k_.rows_per_block, "t_in_row",
                          "row_in_block", "lane", 1, gridLevel()};
    spec.threads_merged = true;
    b_.emit(kir::welford(names, {st.n, st.mean, st.m2}, spec));
    return {kir::var(names[1], Type::data(acc, 1)), kir::var(names[2], Type::data(acc, 1))};
  }
  if (k_.async_fill) {
    // The thread's chunks are on chip: an exact two-pass over them (its sum and count, then
    // squared deviations from its own mean); Chan's merge starts across threads.
    auto sums = forEachChunk({zero, zero}, [&](Chunk& ch, const std::vector<ExprP>& carried) {
      ExprP s = b_.bind(kir::intrinsic(kir::Intrinsic::FoldSum, Type::data(acc, 1), {values(x, acc, ch), zero}));
      ExprP n = b_.math(ir::OpKind::Add, acc, {carried[0], b_.select(ch.valid, kir::dataConst(acc, lanesOf(ch), 1), zero)});
      ExprP t = b_.math(ir::OpKind::Add, acc, {carried[1], b_.select(ch.valid, s, zero)});
      return std::vector<ExprP>{n, t};
    });
    ExprP n = sums[0];
    ExprP safe = b_.select(b_.math(ir::OpKind::Gt, DType::Bool, {n, zero}), n, kir::dataConst(acc, 1, 1));
    ExprP mean = b_.math(ir::OpKind::Div, acc, {sums[1], safe});
    auto m2 = forEachChunk({zero}, [&](Chunk& ch, const std::vector<ExprP>& carried) {
      ExprP s = b_.bind(kir::intrinsic(kir::Intrinsic::FoldSqDiff, Type::data(acc, 1), {values(x, acc, ch), mean, zero}));
      return std::vector<ExprP>{b_.math(ir::OpKind::Add, acc, {carried[0], b_.select(ch.valid, s, zero)})};
    });
    folded = {n, mean, m2[0]};
  } else folded = forEachChunk({zero, zero, zero}, [&](Chunk& ch, const std::vector<ExprP>& carried) {
    ExprP v = values(x, acc, ch);
    ExprP s = b_.bind(kir::intrinsic(kir::Intrinsic::FoldSum, Type::data(acc, 1), {v, zero}));
    ExprP cnt = kir::dataConst(acc, lanesOf(ch), 1);
    ExprP mean = b_.math(ir::OpKind::Div, acc, {s, cnt});
    ExprP m2 = b_.bind(kir::intrinsic(kir::Intrinsic::FoldSqDiff, Type::data(acc, 1), {v, mean, zero}));
    ExprP n = b_.select(ch.valid, cnt, zero);
    ExprP mn = b_.select(ch.valid, mean, zero);
    ExprP m2v = b_.select(ch.valid, m2, zero);
    kir::Stats next = kir::chanMerge(b_, acc, {carried[0], carried[1], carried[2]}, {n, mn, m2v});
    return std::vector<ExprP>{next.n, next.mean, next.m2};
  });
  const std::string id = std::to_string(next_combine_++);
  std::vector<std::string> names = {"row_n" + id, "row_mean" + id, "row_m2" + id};
  b_.emit(kir::welford(names, folded, {kir::Combine::Sum, k_.red_atoms, k_.threads_per_row, k_.rows_per_block,
                                       "t_in_row", "row_in_block", "lane", 1, gridLevel()}));
  return {kir::var(names[1], Type::data(acc, 1)), kir::var(names[2], Type::data(acc, 1))};
}

void NormLowering::reduce(const ENode& r) {
  if (!r.sub_atoms.empty()) {
    if (!sub_values_.count(&r)) subRowReduce(r);
    return;
  }
  if (reduced_.count(&r)) return;
  const ENode& x = *r.args[0];
  const DType acc = computeDType(r.dtype);
  const double n = static_cast<double>(k_.rowElems());
  auto vals = [&](Chunk& ch) { return values(x, acc, ch); };
  ExprP result;
  switch (r.op) {
    case ir::OpKind::Sum: result = rowReduce(kir::Combine::Sum, acc, vals); break;
    case ir::OpKind::ReduceMax: result = rowReduce(kir::Combine::Max, acc, vals); break;
    case ir::OpKind::ReduceMin: result = rowReduce(kir::Combine::Min, acc, vals); break;
    case ir::OpKind::Mean: result = shiftedMean(x, acc, n); break;
    case ir::OpKind::VarMean: {
      // Two passes over the row in registers: the mean, then squared deviations from it.
      auto key = std::make_pair(&x, r.correction);
      auto it = stats_.find(key);
      if (it == stats_.end() && ((!registers_ && !k_.async_fill) || k_.grid_sync)) {
        // Streaming rows: one Welford pass instead of two reads for the statistics.
        auto [mean, m2] = welford(x, acc);
        ExprP var = b_.math(ir::OpKind::Div, acc, {m2, kir::dataConst(acc, n - r.correction, 1)});
        it = stats_.emplace(key, std::make_pair(var, mean)).first;
      }
      if (it == stats_.end()) {
        ExprP mean = shiftedMean(x, acc, n);
        ExprP m2 = rowReduce(kir::Combine::Sum, acc, [&](Chunk& ch) {
          return b_.bind(kir::intrinsic(kir::Intrinsic::SqDiff, Type::data(acc, lanesOf(ch)), {vals(ch), mean}));
        });
        ExprP var = b_.math(ir::OpKind::Div, acc, {m2, kir::dataConst(acc, n - r.correction, 1)});
        it = stats_.emplace(key, std::make_pair(var, mean)).first;
      }
      result = r.out_index == 0 ? it->second.first : it->second.second;
      break;
    }
    default: LOOM_ASSERT(false, "normalization lowering: reduction `{}`", ir::opName(r.op));
  }
  reduced_[&r] = r.dtype == acc ? result : b_.bind(kir::math(ir::OpKind::Cast, r.dtype, {result}));
}

}  // namespace loom::schedule::norm_lower_detail
