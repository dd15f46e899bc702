#include "compiler/schedule/reduction/accumulators.h"

#include "compiler/kir/welford.h"
#include "compiler/schedule/row_kernel.h"
#include "ir/error.h"

namespace loom::schedule::red_detail {

using kir::ExprP;
using kir::Type;
using lower::ENode;

DType Accumulator::acc() const { return computeDType(r->dtype); }

bool Accumulators::anyWelford() const {
  for (const auto& a : list)
    if (a.welford) return true;
  return false;
}

int64_t Accumulators::partialBytes() const {
  int64_t bytes = 0;
  for (const auto& a : list) bytes += int64_t{a.width()} * dtypeBytes(a.acc());
  return bytes;
}

Accumulators accumulatorsOf(const std::vector<lower::EPtr>& roots) {
  Accumulators out;
  std::map<std::pair<const void*, double>, size_t> triples;  // (var_mean op or operand, correction)
  lower::visitPostOrder(roots, [&](const ENode& n) {
    if (n.kind != ENode::Kind::Reduce || out.of.count(&n)) return;
    out.reductions.push_back(&n);
    if (n.op == ir::OpKind::VarMean) {
      const void* key = n.origin ? static_cast<const void*>(n.origin) : static_cast<const void*>(n.args[0].get());
      auto [it, fresh] = triples.emplace(std::make_pair(key, n.correction), out.list.size());
      if (!fresh) {
        out.of[&n] = it->second;
        return;
      }
    }
    Accumulator a;
    a.r = &n;
    a.welford = n.op == ir::OpKind::VarMean;
    a.slot = out.values;
    out.values += a.width();
    out.of[&n] = out.list.size();
    out.list.push_back(a);
  });
  return out;
}

std::vector<ExprP> identityOf(const Accumulator& a, int lanes) {
  if (!a.welford) return {kir::combineIdentity(kir::combineOf(a.r->op), a.acc(), lanes)};
  return {kir::dataConst(a.acc(), 0, 1), kir::dataConst(a.acc(), 0, lanes), kir::dataConst(a.acc(), 0, lanes)};
}

std::vector<ExprP> foldTripStats(kir::Builder& b, const Accumulator& a, std::vector<ExprP> state,
                            const std::vector<ExprP>& units, const std::vector<ExprP>& valid, bool fold_lanes) {
  const DType acc = a.acc();
  LOOM_ASSERT(a.welford, "reduction lowering: a trip of `{}` folded as statistics", ir::opName(a.r->op));
  // The trip's exact statistics (its sum and count, then squared deviations from its own mean),
  // merged into the running ones: one merge a trip, not one an element.
  const int lanes = fold_lanes ? 1 : units[0]->type.lanes;
  const ExprP zero = kir::dataConst(acc, 0, 1), zeros = kir::dataConst(acc, 0, lanes);
  const ExprP per_unit = kir::dataConst(acc, fold_lanes ? units[0]->type.lanes : 1, 1);
  ExprP n = zero, sum = zeros;
  for (size_t u = 0; u < units.size(); ++u) {
    ExprP v = fold_lanes ? b.bind(kir::intrinsic(kir::Intrinsic::FoldSum, Type::data(acc, 1), {units[u], zero}))
                         : units[u];
    n = b.math(ir::OpKind::Add, acc, {n, b.select(valid[u], per_unit, zero)});
    sum = b.bind(kir::math(ir::OpKind::Add, acc, {sum, b.select(valid[u], v, zeros)}, lanes));
  }
  ExprP safe = b.select(b.math(ir::OpKind::Gt, DType::Bool, {n, zero}), n, kir::dataConst(acc, 1, 1));
  ExprP inv = b.math(ir::OpKind::Div, acc, {kir::dataConst(acc, 1, 1), safe});
  ExprP mean = b.bind(kir::math(ir::OpKind::Mul, acc, {sum, inv}, lanes));
  ExprP m2 = zeros;
  for (size_t u = 0; u < units.size(); ++u) {
    ExprP d = fold_lanes ? b.bind(kir::intrinsic(kir::Intrinsic::FoldSqDiff, Type::data(acc, 1), {units[u], mean, zero}))
                         : b.bind(kir::intrinsic(kir::Intrinsic::SqDiff, Type::data(acc, lanes), {units[u], mean}));
    m2 = b.bind(kir::math(ir::OpKind::Add, acc, {m2, b.select(valid[u], d, zeros)}, lanes));
  }
  return mergeInto(b, a, state, {n, mean, m2});
}

std::vector<ExprP> mergeInto(kir::Builder& b, const Accumulator& a, const std::vector<ExprP>& state,
                             const std::vector<ExprP>& part) {
  if (!a.welford) {
    const ir::OpKind op = kir::combineOp(kir::combineOf(a.r->op));
    return {b.bind(kir::math(op, a.acc(), {state[0], part[0]}, state[0]->type.lanes))};
  }
  const kir::Stats s = kir::chanMerge(b, a.acc(), {state[0], state[1], state[2]}, {part[0], part[1], part[2]});
  return {s.n, s.mean, s.m2};
}

ExprP resultOf(kir::Builder& b, const ENode& r, const Accumulator& a, const std::vector<ExprP>& values,
               const ExprP& count) {
  const DType acc = a.acc();
  ExprP t = values[0];
  if (r.op == ir::OpKind::Mean) t = b.math(ir::OpKind::Div, acc, {t, count});
  if (r.op == ir::OpKind::VarMean) {
    t = r.out_index == 1 ? values[1]
                         : b.math(ir::OpKind::Div, acc,
                                  {values[2], b.math(ir::OpKind::Sub, acc, {count, kir::dataConst(acc, r.correction, 1)})});
  }
  return r.dtype == acc ? t : b.bind(kir::math(ir::OpKind::Cast, r.dtype, {t}));
}

}  // namespace loom::schedule::red_detail
