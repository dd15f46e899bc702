// CPU-only: the expression DAG utilities the schedulers share (compiler/lower/strided_expr.h):
// merging equal nodes, mapping leaves over several roots, comparing trees by structure.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "compiler/lower/strided_expr.h"

using namespace loom;
using namespace loom::lower;

namespace {

EPtr load(int input, std::vector<int64_t> strides) {
  ENode n{ENode::Kind::Load, DType::F32};
  n.leaf = Leaf{input, 0, std::move(strides)};
  return std::make_shared<const ENode>(std::move(n));
}
EPtr constant(double v) {
  ENode n{ENode::Kind::Const, DType::F32};
  n.value = v;
  return std::make_shared<const ENode>(std::move(n));
}
EPtr op(ir::OpKind k, std::vector<EPtr> args) {
  ENode n{ENode::Kind::Op, DType::F32};
  n.op = k;
  n.args = std::move(args);
  return std::make_shared<const ENode>(std::move(n));
}

}  // namespace

TEST_CASE("hashCons merges equal nodes across roots, constants by their bits", "[lower]") {
  const EPtr a = op(ir::OpKind::Mul, {load(0, {4, 1}), constant(2.0)});
  const EPtr b = op(ir::OpKind::Mul, {load(0, {4, 1}), constant(2.0)});  // built apart, equal
  const EPtr c = op(ir::OpKind::Mul, {load(0, {4, 1}), constant(-0.0)});
  const EPtr d = op(ir::OpKind::Mul, {load(0, {4, 1}), constant(0.0)});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const EPtr e = op(ir::OpKind::Add, {load(1, {1}), constant(nan)});
  const EPtr g = op(ir::OpKind::Add, {load(1, {1}), constant(1.0)});
  const auto out = hashCons({a, b, c, d, e, g});
  CHECK(out[0] == out[1]);
  CHECK(out[0]->args[0] == out[2]->args[0]);  // the one load
  CHECK(out[2] != out[3]);                    // x * -0 is not x * 0
  CHECK(out[4] != out[5]);                    // a NaN constant merges with no other
  CHECK(std::isnan(out[4]->args[1]->value));
  CHECK(out[5]->args[1]->value == 1.0);
}

TEST_CASE("mapLeaves over several roots maps each shared node once", "[lower]") {
  const EPtr x = load(0, {8, 1});
  const EPtr shared = op(ir::OpKind::Exp, {x});
  const EPtr r1 = op(ir::OpKind::Add, {shared, load(1, {0, 1})});
  const EPtr r2 = op(ir::OpKind::Mul, {shared, shared});
  int calls = 0;
  const auto out = mapLeaves({r1, r2}, [&](const Leaf& l) {
    ++calls;
    return Leaf{l.input, l.offset + 1, l.strides};
  });
  CHECK(calls == 2);  // x and the second load
  CHECK(out[0]->args[0] == out[1]->args[0]);
  CHECK(out[1]->args[0] == out[1]->args[1]);
  CHECK(out[0]->args[0]->args[0]->leaf.offset == 1);
  CHECK(out[0]->args[1]->leaf.offset == 1);
}

TEST_CASE("expressions compare by structure: sameExpr and ExprRef", "[lower]") {
  auto tree = [](int64_t stride, double c) {
    const EPtr l = load(0, {stride, 1});
    return op(ir::OpKind::Add, {op(ir::OpKind::Mul, {l, l}), constant(c)});
  };
  CHECK(sameExpr(tree(16, 1.0), tree(16, 1.0)));
  CHECK_FALSE(sameExpr(tree(16, 1.0), tree(32, 1.0)));  // another stride
  CHECK_FALSE(sameExpr(tree(16, 1.0), tree(16, 2.0)));  // another constant
  CHECK_FALSE(sameExpr(tree(16, 1.0), nullptr));
  CHECK_FALSE(sameExpr(tree(16, 0.0), tree(16, -0.0)));  // constants by their bits
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(sameExpr(tree(16, nan), tree(16, nan)));
  struct Holder {
    ExprRef value;
    bool operator==(const Holder&) const = default;
  };
  CHECK(Holder{tree(16, 1.0)} == Holder{tree(16, 1.0)});
  CHECK_FALSE(Holder{tree(16, 1.0)} == Holder{tree(8, 1.0)});
}
