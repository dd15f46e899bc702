#include "compiler/kir/builder.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace loom::kir {

namespace {
bool isConst(const ExprP& e) { return e->kind == Expr::Kind::Int || e->kind == Expr::Kind::Const; }

int64_t fold(IndexOp o, int64_t a, int64_t b) {
  switch (o) {
    case IndexOp::Add: return a + b;
    case IndexOp::Sub: return a - b;
    case IndexOp::Mul: return a * b;
    case IndexOp::Div: return static_cast<int64_t>(static_cast<uint64_t>(a) / static_cast<uint64_t>(b));
    case IndexOp::Rem: return static_cast<int64_t>(static_cast<uint64_t>(a) % static_cast<uint64_t>(b));
    case IndexOp::And: return a & b;
    case IndexOp::Or: return a | b;
    case IndexOp::Xor: return a ^ b;
    case IndexOp::Shr: return static_cast<int64_t>(static_cast<uint64_t>(a) >> b);
    case IndexOp::Lt: return a < b;
    case IndexOp::Gt: return a > b;
    case IndexOp::Ult: return static_cast<uint64_t>(a) < static_cast<uint64_t>(b);
    case IndexOp::Eq: return a == b;
    case IndexOp::Ne: return a != b;
  }
  return 0;
}
}  // namespace

ExprP Builder::bind(ExprP e, const std::string& hint) {
  if (isConst(e) || e->kind == Expr::Kind::Var) return e;
  return bindAs(fmt::format("{}{}", hint.empty() ? prefix_ : hint, next_++), std::move(e));
}

ExprP Builder::bindAs(const std::string& name, ExprP e) {
  Type t = e->type;
  emit(let(name, std::move(e)));
  return var(name, t);
}

ExprP Builder::op(IndexOp o, ExprP a, ExprP b) {
  if (a->kind == Expr::Kind::Int && b->kind == Expr::Kind::Int &&
      !((o == IndexOp::Div || o == IndexOp::Rem) && b->ivalue == 0)) {
    const Type t = isComparison(o) ? Type::pred() : a->type;
    return intConst(fold(o, a->ivalue, b->ivalue), t);
  }
  // Identities (an operand of 0 or 1) give the other operand itself: no node, no name.
  auto is = [](const ExprP& e, int64_t v) { return e->kind == Expr::Kind::Int && e->ivalue == v; };
  if (a->type == b->type && !a->type.isPred()) {
    switch (o) {
      case IndexOp::Add:
        if (is(b, 0)) return a;
        if (is(a, 0)) return b;
        break;
      case IndexOp::Sub:
        if (is(b, 0)) return a;
        break;
      case IndexOp::Mul:
        if (is(b, 1)) return a;
        if (is(a, 1)) return b;
        break;
      case IndexOp::Div:
        if (is(b, 1)) return a;
        break;
      default: break;
    }
  }
  // The same operation of the same names or constants, bound in a body still open: its name.
  // (Key: each operand's name, or '#' and its value's bytes, then its whole type as bytes.)
  auto operand = [](const ExprP& e, std::string& key) {
    if (e->kind == Expr::Kind::Var) {
      key += e->name;
    } else if (e->kind == Expr::Kind::Int) {
      key += '#';
      key.append(reinterpret_cast<const char*>(&e->ivalue), sizeof e->ivalue);
    } else {
      return false;
    }
    const Type& t = e->type;
    const char type[] = {'|', static_cast<char>(t.index), static_cast<char>(t.dtype), static_cast<char>(t.lanes),
                         static_cast<char>(t.lanes >> 8), static_cast<char>(t.address), static_cast<char>(t.packed)};
    key.append(type, sizeof type);
    return true;
  };
  std::string key(1, static_cast<char>('A' + static_cast<int>(o)));
  if (!operand(a, key) || !operand(b, key)) return bind(index(o, std::move(a), std::move(b)));
  for (auto it = bound_ops_.rbegin(); it != bound_ops_.rend(); ++it)
    if (auto found = it->find(key); found != it->end()) return found->second;
  ExprP v = bind(index(o, std::move(a), std::move(b)));
  bound_ops_.back().emplace(std::move(key), v);
  return v;
}

ExprP Builder::select(ExprP c, ExprP a, ExprP b) {
  if (c->kind == Expr::Kind::Int && isConst(a) && isConst(b)) return c->ivalue ? a : b;
  return bind(kir::select(std::move(c), std::move(a), std::move(b)));
}

std::vector<ExprP> Builder::unravel(const ExprP& i, const std::vector<int64_t>& shape, int vec) {
  std::vector<ExprP> idx(shape.size());
  ExprP q = i;
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t e = d + 1 == shape.size() ? shape[d] / vec : shape[d];
    idx[d] = d == 0 ? q : urem(q, intConst(e));
    if (d + 1 == shape.size() && vec > 1) idx[d] = mul(idx[d], intConst(vec));
    if (d > 0) q = udiv(q, intConst(e));
  }
  return idx;
}

ExprP Builder::convert(ExprP x, Type to) {
  if (x->type == to) return x;
  return bind(kir::convert(std::move(x), to));
}

ExprP Builder::math(ir::OpKind o, DType result, std::vector<ExprP> args) {
  return bind(kir::math(o, result, std::move(args)));
}

Body Builder::nested(const std::function<void()>& build) {
  stack_.emplace_back();
  bound_ops_.emplace_back();
  build();
  Body inner = std::move(stack_.back());
  stack_.pop_back();
  bound_ops_.pop_back();
  return inner;
}

void Builder::ifThen(ExprP cond, const std::string& label, const std::function<void()>& body) {
  emit(kir::ifThen(std::move(cond), label, nested(body)));
}

std::string Builder::fresh(const std::string& hint) { return fmt::format("{}{}", hint, next_++); }

std::vector<ExprP> Builder::repeat(const std::string& var, int64_t count, const std::vector<ExprP>& init,
                                   const RepeatBody& body, int unroll, ExprP trips) {
  const std::string v = fresh(var);
  std::vector<std::pair<std::string, ExprP>> carried;
  std::vector<ExprP> in;
  for (size_t i = 0; i < init.size(); ++i) {
    carried.push_back({fmt::format("{}_in{}", v, i), init[i]});
    in.push_back(kir::var(carried.back().first, init[i]->type));
  }
  std::vector<ExprP> next;
  Body inner = nested([&] { next = body(kir::var(v, Type::idx()), in); });
  std::vector<std::string> results;
  std::vector<ExprP> out;
  for (size_t i = 0; i < next.size(); ++i) {
    results.push_back(fmt::format("{}_out{}", v, i));
    out.push_back(kir::var(results.back(), next[i]->type));
  }
  emit(kir::repeat(v, count, std::move(carried), std::move(inner), std::move(next), std::move(results), unroll,
                   std::move(trips)));
  return out;
}

void Builder::spread(const std::string& var, Mapping m, int64_t extent, const std::function<void(const ExprP&)>& body) {
  emit(kir::spread(var, m, extent, nested([&] { body(kir::var(var, Type::i32())); })));
}

void Builder::uniformIf(ExprP cond, const std::string& label, const std::function<void()>& body) {
  emit(kir::uniformIf(std::move(cond), label, nested(body)));
}

Body Builder::take() {
  LOOM_ASSERT(stack_.size() == 1, "kernel IR builder: {} bodies still open", stack_.size() - 1);
  Body b = std::move(stack_.back());
  stack_.back().clear();
  bound_ops_.back().clear();
  return b;
}

}  // namespace loom::kir
