#include "compiler/kir/kir.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace loom::kir {

std::string_view mappingName(Mapping m) {
  switch (m) {
#define LOOM_KIR_MAPPING(e, text) case Mapping::e: return text;
#include "compiler/kir/kir.def"
#undef LOOM_KIR_MAPPING
  }
  return "?";
}
std::string_view specialName(Special s) {
  switch (s) {
#define LOOM_KIR_SPECIAL(e, text) case Special::e: return text;
#include "compiler/kir/kir.def"
#undef LOOM_KIR_SPECIAL
  }
  return "?";
}
std::string_view indexOpName(IndexOp o) {
  switch (o) {
#define LOOM_KIR_INDEX_OP(e, text, cmp) case IndexOp::e: return text;
#include "compiler/kir/kir.def"
#undef LOOM_KIR_INDEX_OP
  }
  return "?";
}
bool isComparison(IndexOp o) {
  switch (o) {
#define LOOM_KIR_INDEX_OP(e, text, cmp) case IndexOp::e: return cmp;
#include "compiler/kir/kir.def"
#undef LOOM_KIR_INDEX_OP
  }
  return false;
}
std::string_view accessName(Access a) {
  switch (a) {
#define LOOM_KIR_ACCESS(e, text) case Access::e: return text;
#include "compiler/kir/kir.def"
#undef LOOM_KIR_ACCESS
  }
  return "?";
}
std::string_view cacheName(Cache c) {
  switch (c) {
#define LOOM_KIR_CACHE(e, text) case Cache::e: return text;
#include "compiler/kir/kir.def"
#undef LOOM_KIR_CACHE
  }
  return "?";
}

std::string Type::str() const {
  if (index) return "index";
  return lanes == 1 ? std::string(dtypeName(dtype)) : fmt::format("{}x{}", dtypeName(dtype), lanes);
}

namespace {
ExprP make(Expr e) { return std::make_shared<const Expr>(std::move(e)); }
void checkIndex(const ExprP& e, std::string_view what) {
  LOOM_ASSERT(e && e->type.index, "kernel IR: {} must be an index expression", what);
}
}  // namespace

ExprP intConst(int64_t v) {
  Expr e{Expr::Kind::Int, Type::idx()};
  e.ivalue = v;
  return make(std::move(e));
}

ExprP var(std::string name, Type t) {
  LOOM_ASSERT(!name.empty(), "kernel IR: a variable needs a name");
  Expr e{Expr::Kind::Var, t};
  e.name = std::move(name);
  return make(std::move(e));
}

ExprP special(Special s) {
  Expr e{Expr::Kind::Special, Type::idx()};
  e.special = s;
  return make(std::move(e));
}

ExprP index(IndexOp op, ExprP a, ExprP b) {
  checkIndex(a, indexOpName(op));
  checkIndex(b, indexOpName(op));
  Expr e{Expr::Kind::Index, Type::idx()};
  e.iop = op;
  e.args = {std::move(a), std::move(b)};
  return make(std::move(e));
}
ExprP add(ExprP a, ExprP b) { return index(IndexOp::Add, std::move(a), std::move(b)); }
ExprP mul(ExprP a, ExprP b) { return index(IndexOp::Mul, std::move(a), std::move(b)); }

ExprP dataConst(DType t, double v, int lanes) {
  LOOM_ASSERT(lanes >= 1, "kernel IR: a constant of {} lanes", lanes);
  Expr e{Expr::Kind::Const, Type::data(t, lanes)};
  e.fvalue = v;
  return make(std::move(e));
}

ExprP math(ir::OpKind op, DType result, std::vector<ExprP> args) {
  LOOM_ASSERT(ir::isPointwise(op), "kernel IR: `{}` is not a pointwise op", ir::opName(op));
  LOOM_ASSERT(!args.empty(), "kernel IR: `{}` without operands", ir::opName(op));
  int lanes = 1;
  for (const auto& a : args) {
    LOOM_ASSERT(a && !a->type.index, "kernel IR: `{}` takes data, not indices", ir::opName(op));
    LOOM_ASSERT(a->type.lanes == args[0]->type.lanes, "kernel IR: `{}` of {} and {} lanes",
                ir::opName(op), args[0]->type.lanes, a->type.lanes);
    lanes = a->type.lanes;
  }
  Expr e{Expr::Kind::Math, Type::data(result, lanes)};
  e.op = op;
  e.args = std::move(args);
  return make(std::move(e));
}

ExprP load(int param, DType t, ExprP offset, int lanes, Access a, int64_t inner_stride,
           Cache cache) {
  LOOM_ASSERT(param >= 0 && lanes >= 1, "kernel IR: load of parameter {} x{}", param, lanes);
  checkIndex(offset, "a load's offset");
  Expr e{Expr::Kind::Load, Type::data(t, lanes)};
  e.param = param;
  e.args = {std::move(offset)};
  e.access = a;
  e.inner_stride = inner_stride;
  e.cache = cache;
  e.align = a == Access::Vector ? static_cast<int>(std::min<int64_t>(16, int64_t{lanes} * dtypeBytes(t)))
                                : dtypeBytes(t);
  return make(std::move(e));
}

StmtP let(std::string name, ExprP value) {
  LOOM_ASSERT(!name.empty() && value, "kernel IR: `let` needs a name and a value");
  Stmt s{Stmt::Kind::Let};
  s.name = std::move(name);
  s.value = std::move(value);
  return std::make_shared<const Stmt>(std::move(s));
}

StmtP loop(std::string var, ExprP init, ExprP cond, ExprP step, Mapping m, Body body, int unroll,
           std::string exit) {
  LOOM_ASSERT(!var.empty(), "kernel IR: a loop needs a variable");
  checkIndex(init, "a loop's start");
  checkIndex(step, "a loop's step");
  LOOM_ASSERT(cond && cond->kind == Expr::Kind::Index && isComparison(cond->iop),
              "kernel IR: loop `{}` needs a comparison as its condition", var);
  LOOM_ASSERT(unroll >= 1, "kernel IR: loop `{}` unrolled {} times", var, unroll);
  Stmt s{Stmt::Kind::Loop};
  s.name = std::move(var);
  s.init = std::move(init);
  s.cond = std::move(cond);
  s.step = std::move(step);
  s.mapping = m;
  s.body = std::move(body);
  s.unroll = unroll;
  s.exit = std::move(exit);
  return std::make_shared<const Stmt>(std::move(s));
}

StmtP store(int param, ExprP offset, ExprP value, Access a, int64_t inner_stride) {
  LOOM_ASSERT(param >= 0 && value && !value->type.index, "kernel IR: a store needs a parameter "
              "and data to write");
  checkIndex(offset, "a store's offset");
  Stmt s{Stmt::Kind::Store};
  s.param = param;
  s.offset = std::move(offset);
  s.value = std::move(value);
  LOOM_ASSERT(a != Access::Splat, "kernel IR: a store cannot write every lane to one element");
  s.access = a;
  s.inner_stride = inner_stride;
  const DType t = s.value->type.dtype;
  const int lanes = s.value->type.lanes;
  s.align = s.access == Access::Vector && lanes > 1
                ? static_cast<int>(std::min<int64_t>(16, int64_t{lanes} * dtypeBytes(t)))
                : dtypeBytes(t);
  return std::make_shared<const Stmt>(std::move(s));
}

}  // namespace loom::kir
