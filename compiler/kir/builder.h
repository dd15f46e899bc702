#pragma once
// Builds kernel IR statement by statement, the way an IRBuilder builds LLVM IR: each operation
// that computes something is bound to a fresh name in the body being built (so the kernel says
// where each value is computed), operations on constants fold, and `ifThen` nests a body.
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/kir/kir.h"

namespace loom::kir {

class Builder {
 public:
  explicit Builder(std::string prefix = "t") : prefix_(std::move(prefix)) { stack_.emplace_back(); }

  // `e` bound to a fresh name (`hint` and a number), or `e` itself where it is a constant or a
  // name already.
  ExprP bind(ExprP e, const std::string& hint = "");
  ExprP bindAs(const std::string& name, ExprP e);  // bound to exactly `name`

  // Folds two constants and identities (x + 0, x * 1, ...); an operation of names and constants
  // already bound in this body or one around it is that binding (no second name).
  ExprP op(IndexOp o, ExprP a, ExprP b);
  ExprP add(ExprP a, ExprP b) { return op(IndexOp::Add, std::move(a), std::move(b)); }
  ExprP mul(ExprP a, ExprP b) { return op(IndexOp::Mul, std::move(a), std::move(b)); }
  ExprP udiv(ExprP a, ExprP b) { return op(IndexOp::Div, std::move(a), std::move(b)); }
  ExprP urem(ExprP a, ExprP b) { return op(IndexOp::Rem, std::move(a), std::move(b)); }
  ExprP select(ExprP c, ExprP a, ExprP b);
  // The coordinates of flat index `i` over `shape` (row-major, outer to inner), the innermost
  // axis counted in vectors of `vec` elements: its coordinate is a multiple of `vec`.
  std::vector<ExprP> unravel(const ExprP& i, const std::vector<int64_t>& shape, int vec = 1);
  ExprP convert(ExprP x, Type to);
  ExprP math(ir::OpKind o, DType result, std::vector<ExprP> args);

  void emit(StmtP s) { stack_.back().push_back(std::move(s)); }
  void ifThen(ExprP cond, const std::string& label, const std::function<void()>& body);
  void uniformIf(ExprP cond, const std::string& label, const std::function<void()>& body);
  // for `var` in [0, extent) over threads or blocks (kir::spread); `body` gets the variable.
  void spread(const std::string& var, Mapping m, int64_t extent, const std::function<void(const ExprP&)>& body);
  // for `var` in [0, count) (at least one trip), carrying values that start at `init`; `body`
  // gets the variable and the carried values and gives their next ones. Returns the last.
  using RepeatBody = std::function<std::vector<ExprP>(const ExprP& var, const std::vector<ExprP>& carried)>;
  std::vector<ExprP> repeat(const std::string& var, int64_t count, const std::vector<ExprP>& init,
                            const RepeatBody& body, int unroll = 1, ExprP trips = nullptr);
  // A name not used yet, from `hint`.
  std::string fresh(const std::string& hint);
  Body take();

 private:
  // The statements `build` emits, as a body of their own.
  Body nested(const std::function<void()>& build);

  std::string prefix_;
  std::vector<Body> stack_;
  // Per open body: index operations of names and constants bound in it, by operation.
  std::vector<std::unordered_map<std::string, ExprP>> bound_ops_ = std::vector<std::unordered_map<std::string, ExprP>>(1);
  int next_ = 0;
};

}  // namespace loom::kir
