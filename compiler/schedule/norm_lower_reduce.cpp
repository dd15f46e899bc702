// The normalization lowering's reductions and statistics (see norm_lowering.h).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "compiler/kir/welford.h"
#include "compiler/schedule/norm_lowering.h"
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
  } else {
    carried = b_.repeat("k", k_.chunks, carried, [&](const ExprP& k, const std::vector<ExprP>& in) {
      Chunk ch = chunkAt(k);
      return step(ch, in);
    }, chunk_unroll_);
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
  const std::string name = fmt::format("row_{}{}", kir::combineName(cb), next_combine_++);
  b_.emit(kir::combine(name, partial, {cb, k_.red_atoms, k_.threads_per_row, k_.rows_per_block, "t_in_row",
                                       "row_in_block", "lane", k_.cluster, gridLevel()}));
  return kir::var(name, Type::data(acc, 1));
}

ExprP NormLowering::shiftedMean(const ENode& x, DType acc, double n) {
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
  x0 = b_.select(kir::isFinite(b_, acc, x0), x0, kir::dataConst(acc, 0, 1));
  ExprP sum = rowReduce(kir::Combine::Sum, acc, [&](Chunk& ch) {
    return b_.bind(kir::math(ir::OpKind::Sub, acc, {values(x, acc, ch), x0}, k_.vec));
  });
  ExprP q = b_.math(ir::OpKind::Div, acc, {sum, kir::dataConst(acc, n, 1)});
  return b_.bindAs(fmt::format("mean{}", next_mean_++), kir::math(ir::OpKind::Add, acc, {x0, q}));
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
      ExprP n = b_.math(ir::OpKind::Add, acc, {carried[0], b_.select(ch.valid, kir::dataConst(acc, k_.vec, 1), zero)});
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
    ExprP cnt = kir::dataConst(acc, k_.vec, 1);
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
          return b_.bind(kir::intrinsic(kir::Intrinsic::SqDiff, Type::data(acc, k_.vec), {vals(ch), mean}));
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
