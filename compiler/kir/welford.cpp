#include "compiler/kir/welford.h"

#include <cmath>

namespace loom::kir {

ExprP isFinite(Builder& b, DType acc, const ExprP& v) {
  return b.math(ir::OpKind::Lt, DType::Bool, {b.math(ir::OpKind::Abs, acc, {v}), dataConst(acc, INFINITY, 1)});
}

Stats chanMerge(Builder& b, DType acc, const Stats& x, const Stats& y) {
  using ir::OpKind;
  ExprP n = b.math(OpKind::Add, acc, {x.n, y.n});
  ExprP pos = b.math(OpKind::Gt, DType::Bool, {n, dataConst(acc, 0, 1)});
  ExprP safe = b.select(pos, n, dataConst(acc, 1, 1));
  ExprP delta = b.math(OpKind::Sub, acc, {y.mean, x.mean});
  ExprP fb = acc == DType::F32 ? b.bind(intrinsic(Intrinsic::DivApprox, Type::data(acc, 1), {y.n, safe}))
                               : b.math(OpKind::Div, acc, {y.n, safe});
  ExprP mean = b.math(OpKind::Add, acc, {x.mean, b.math(OpKind::Mul, acc, {delta, fb})});
  // An infinite mean on either side makes delta inf - inf, or inf * 0 against an empty side:
  // there the sum of the two means is the answer the reference gives (a side of no elements
  // has mean 0; inf + finite is inf, inf - inf NaN). Three instructions, none of them a
  // division. Finite means whose difference overflows (magnitudes past 1.7e38, opposite signs)
  // take the sum too, which is not their mean: wrong there, as inf was before.
  // (Means of several lanes, a row a lane, beside one count: a lane-wise choice.)
  ExprP both = b.math(OpKind::Add, acc, {x.mean, y.mean});
  mean = delta->type.lanes == 1 ? b.select(isFinite(b, acc, delta), mean, both)
                                : b.math(OpKind::Where, acc, {isFinite(b, acc, delta), mean, both});
  // (x.m2 + y.m2) + delta^2 * x.n * fb, the product first.
  ExprP prod = b.math(OpKind::Mul, acc, {b.math(OpKind::Mul, acc, {b.math(OpKind::Mul, acc, {delta, delta}), x.n}), fb});
  ExprP m2 = b.math(OpKind::Add, acc, {b.math(OpKind::Add, acc, {x.m2, y.m2}), prod});
  return {n, mean, m2};
}

ExprP blockCount(Builder& b, const ExprP& rank, int64_t threads, int64_t blocks, int chunks, int64_t row_chunks,
                 int vec, DType acc) {
  const int64_t T = threads, P = blocks;
  ExprP n = intConst(0);
  for (int64_t k = 0; k < chunks; ++k) {
    ExprP left = b.op(IndexOp::Sub, intConst(row_chunks), b.add(b.mul(rank, intConst(T)), intConst(k * T * P)));
    left = b.select(b.op(IndexOp::Lt, left, intConst(0)), intConst(0), left);
    n = b.add(n, b.select(b.op(IndexOp::Gt, left, intConst(T)), intConst(T), left));
  }
  return b.convert(b.mul(n, intConst(vec)), Type::data(acc, 1));
}

}  // namespace loom::kir
