#include "compiler/kir/kir.h"

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <set>

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

std::string_view intrinsicName(Intrinsic i) {
  switch (i) {
#define LOOM_KIR_INTRINSIC(e, text, n) case Intrinsic::e: return text;
#include "compiler/kir/kir.def"
#undef LOOM_KIR_INTRINSIC
  }
  return "?";
}
int intrinsicOperands(Intrinsic i) {
  switch (i) {
#define LOOM_KIR_INTRINSIC(e, text, n) case Intrinsic::e: return n;
#include "compiler/kir/kir.def"
#undef LOOM_KIR_INTRINSIC
  }
  return 0;
}
std::string_view placeName(Place p) {
  switch (p) {
#define LOOM_KIR_PLACE(e, text) case Place::e: return text;
#include "compiler/kir/kir.def"
#undef LOOM_KIR_PLACE
  }
  return "?";
}
std::string_view barrierName(Barrier b) {
  switch (b) {
#define LOOM_KIR_BARRIER(e, text) case Barrier::e: return text;
#include "compiler/kir/kir.def"
#undef LOOM_KIR_BARRIER
  }
  return "?";
}
std::string_view combineName(Combine c) {
  switch (c) {
#define LOOM_KIR_COMBINE(e, text) case Combine::e: return text;
#include "compiler/kir/kir.def"
#undef LOOM_KIR_COMBINE
  }
  return "?";
}

ir::OpKind combineOp(Combine c) {
  switch (c) {
    case Combine::Sum: return ir::OpKind::Add;
    case Combine::Max: return ir::OpKind::Max;
    case Combine::Min: return ir::OpKind::Min;
  }
  return ir::OpKind::Add;
}

Combine combineOf(ir::OpKind reduction) {
  switch (reduction) {
    case ir::OpKind::ReduceMax: return Combine::Max;
    case ir::OpKind::ReduceMin: return Combine::Min;
    default: return Combine::Sum;  // Sum, Mean
  }
}

ExprP combineIdentity(Combine c, DType acc, int lanes) {
  if (c == Combine::Sum) return dataConst(acc, 0, lanes);
  if (isFloat(acc)) return dataConst(acc, c == Combine::Max ? -INFINITY : INFINITY, lanes);
  const double big = acc == DType::I64 ? 9223372036854775807.0 : 2147483647.0;
  return dataConst(acc, c == Combine::Max ? -big - 1 : big, lanes);
}

Intrinsic foldOf(Combine c) {
  return c == Combine::Sum ? Intrinsic::FoldSum : c == Combine::Max ? Intrinsic::FoldMax : Intrinsic::FoldMin;
}

namespace {
// Elements [0, extent) a tensor's strides reach from its base.
int64_t extentOf(const TensorDesc& d) {
  int64_t e = 1;
  for (size_t i = 0; i < d.shape.size(); ++i) {
    if (d.shape[i] == 0) return 0;
    e += (d.shape[i] - 1) * std::abs(d.strides[i]);
  }
  return e;
}
}  // namespace

std::vector<Param> fusionParams(const ir::Fusion& f, const std::vector<TensorDesc>& inputs,
                                const std::vector<TensorDesc>& outputs) {
  std::vector<Param> out;
  for (size_t i = 0; i < inputs.size(); ++i) out.push_back({f.inputs()[i]->name(), inputs[i].dtype, false, extentOf(inputs[i])});
  for (size_t i = 0; i < outputs.size(); ++i) out.push_back({f.outputs()[i].name, outputs[i].dtype, true, extentOf(outputs[i])});
  return out;
}

bool noAlias(const std::vector<int>& output_alias) {
  return std::none_of(output_alias.begin(), output_alias.end(), [](int a) { return a >= 0; });
}

std::string Type::str() const {
  if (address) return "addr";
  if (packed) return fmt::format("{}x{}.packed", dtypeName(dtype), lanes);
  if (index) return dtype == DType::I32 ? "i32" : dtype == DType::Bool ? "pred" : "index";
  return lanes == 1 ? std::string(dtypeName(dtype)) : fmt::format("{}x{}", dtypeName(dtype), lanes);
}

namespace {
// A new node, built in place (a Stmt is large: no copy of it is made).
std::shared_ptr<Expr> blank(Expr::Kind k, Type t) {
  auto e = std::make_shared<Expr>();
  e->kind = k;
  e->type = t;
  return e;
}
std::shared_ptr<Stmt> blank(Stmt::Kind k) {
  auto s = std::make_shared<Stmt>();
  s->kind = k;
  return s;
}
void checkIndex(const ExprP& e, std::string_view what) {
  LOOM_ASSERT(e && e->type.index, "kernel IR: {} must be an index expression", what);
}
}  // namespace

ExprP intConst(int64_t v, Type t) {
  LOOM_ASSERT(t.index, "kernel IR: an integer constant of {}", t.str());
  auto e = blank(Expr::Kind::Int, t);
  e->ivalue = v;
  return e;
}
ExprP i32Const(int64_t v) { return intConst(v, Type::i32()); }
ExprP predConst(bool v) { return intConst(v ? 1 : 0, Type::pred()); }

ExprP var(std::string name, Type t) {
  LOOM_ASSERT(!name.empty(), "kernel IR: a variable needs a name");
  auto e = blank(Expr::Kind::Var, t);
  e->name = std::move(name);
  return e;
}

ExprP special(Special s) {
  auto e = blank(Expr::Kind::Special, Type::i32());
  e->special = s;
  return e;
}

ExprP index(IndexOp op, ExprP a, ExprP b) {
  checkIndex(a, indexOpName(op));
  checkIndex(b, indexOpName(op));
  LOOM_ASSERT(a->type == b->type, "kernel IR: `{}` of {} and {}", indexOpName(op), a->type.str(), b->type.str());
  const bool logic = op == IndexOp::And || op == IndexOp::Or || op == IndexOp::Xor;
  LOOM_ASSERT(!a->type.isPred() || logic, "kernel IR: `{}` of predicates", indexOpName(op));
  auto e = blank(Expr::Kind::Index, isComparison(op) ? Type::pred() : a->type);
  e->iop = op;
  e->args = {std::move(a), std::move(b)};
  return e;
}
ExprP add(ExprP a, ExprP b) { return index(IndexOp::Add, std::move(a), std::move(b)); }
ExprP mul(ExprP a, ExprP b) { return index(IndexOp::Mul, std::move(a), std::move(b)); }

ExprP stridedOffset(int64_t base, const std::vector<int64_t>& strides, const std::vector<ExprP>& idx) {
  ExprP o = intConst(base);
  for (size_t d = 0; d < strides.size(); ++d)
    if (strides[d] != 0) o = add(o, mul(idx[d], intConst(strides[d])));
  return o;
}

ExprP dataConst(DType t, double v, int lanes) {
  LOOM_ASSERT(lanes >= 1, "kernel IR: a constant of {} lanes", lanes);
  auto e = blank(Expr::Kind::Const, Type::data(t, lanes));
  e->fvalue = v;
  return e;
}

ExprP indexLanes(ExprP base, int lanes, int64_t stride) {
  checkIndex(base, "an index value's base");
  ExprP v = convert(std::move(base), Type::data(DType::I64, 1));
  if (lanes == 1) return v;
  std::vector<ExprP> steps;
  for (int j = 0; j < lanes; ++j) steps.push_back(dataConst(DType::I64, static_cast<double>(j * stride), 1));
  return math(ir::OpKind::Add, DType::I64, {v, intrinsic(Intrinsic::Concat, Type::data(DType::I64, lanes), steps)});
}

ExprP math(ir::OpKind op, DType result, std::vector<ExprP> args, int result_lanes) {
  LOOM_ASSERT(ir::isPointwise(op) || ir::opFamily(op) == ir::OpFamily::Random,
              "kernel IR: `{}` is not a pointwise op", ir::opName(op));
  LOOM_ASSERT(!args.empty(), "kernel IR: `{}` without operands", ir::opName(op));
  // Operands of one lane stand for every lane (a row's statistic beside a chunk's elements).
  int lanes = 1;
  for (const auto& a : args) {
    LOOM_ASSERT(a && (!a->type.index || (op == ir::OpKind::Where && a == args[0] && a->type.isPred())),
                "kernel IR: `{}` takes data, not indices", ir::opName(op));
    LOOM_ASSERT(a->type.lanes == 1 || lanes == 1 || a->type.lanes == lanes, "kernel IR: `{}` of {} and {} lanes",
                ir::opName(op), lanes, a->type.lanes);
    lanes = std::max(lanes, a->type.lanes);
  }
  LOOM_ASSERT(result_lanes == 0 || lanes == 1 || result_lanes == lanes, "kernel IR: `{}` of {} lanes as {}",
              ir::opName(op), lanes, result_lanes);
  auto e = blank(Expr::Kind::Math, Type::data(result, result_lanes ? result_lanes : lanes));
  e->op = op;
  e->args = std::move(args);
  return e;
}

ExprP load(int param, DType t, ExprP offset, int lanes, Access a, int64_t inner_stride,
           Cache cache) {
  LOOM_ASSERT(param >= 0 && lanes >= 1, "kernel IR: load of parameter {} x{}", param, lanes);
  checkIndex(offset, "a load's offset");
  auto e = blank(Expr::Kind::Load, Type::data(t, lanes));
  e->param = param;
  e->args = {std::move(offset)};
  e->access = a;
  e->inner_stride = inner_stride;
  e->cache = cache;
  e->align = a == Access::Vector ? static_cast<int>(std::min<int64_t>(16, int64_t{lanes} * dtypeBytes(t)))
                                : dtypeBytes(t);
  return e;
}

ExprP select(ExprP cond, ExprP a, ExprP b) {
  LOOM_ASSERT(cond && (cond->type.isPred() || cond->type == Type::data(DType::Bool, 1)),
              "kernel IR: a select needs a predicate");
  LOOM_ASSERT(a && b && a->type == b->type, "kernel IR: a select of {} and {}", a ? a->type.str() : "?",
              b ? b->type.str() : "?");
  auto e = blank(Expr::Kind::Select, a->type);
  e->args = {std::move(cond), std::move(a), std::move(b)};
  return e;
}

ExprP convert(ExprP x, Type to) {
  // An integer to another integer or to data; or a one-lane data bool to a predicate.
  const bool to_pred = x && x->type == Type::data(DType::Bool, 1) && to.isPred();
  LOOM_ASSERT(x && (to_pred || (x->type.index && !x->type.isPred() && !to.isPred())) && to.lanes == 1,
              "kernel IR: convert {} to {}", x ? x->type.str() : "?", to.str());
  auto e = blank(Expr::Kind::Convert, to);
  e->args = {std::move(x)};
  return e;
}

ExprP intrinsic(Intrinsic i, Type result, std::vector<ExprP> args) {
  LOOM_ASSERT(intrinsicOperands(i) < 0 || static_cast<int>(args.size()) == intrinsicOperands(i), "kernel IR: `{}` takes {} operands, "
              "got {}", intrinsicName(i), intrinsicOperands(i), args.size());
  for (const auto& a : args) LOOM_ASSERT(a != nullptr, "kernel IR: `{}` of nothing", intrinsicName(i));
  auto e = blank(Expr::Kind::Intrinsic, result);
  e->intrinsic = i;
  e->args = std::move(args);
  return e;
}

ExprP bufLoad(std::string buffer, DType elem, ExprP index) {
  checkIndex(index, "a buffer's element");
  auto e = blank(Expr::Kind::BufLoad, Type::data(elem, 1));
  e->buffer = std::move(buffer);
  e->args = {std::move(index)};
  return e;
}

ExprP bytesLoad(std::string buffer, DType t, int lanes, ExprP byte, int align) {
  checkIndex(byte, "a byte offset");
  auto e = blank(Expr::Kind::BytesLoad, Type::data(t, lanes));
  e->buffer = std::move(buffer);
  e->args = {std::move(byte)};
  e->align = align;
  return e;
}

ExprP bufAddr(std::string buffer, ExprP index) {
  checkIndex(index, "a buffer's element");
  LOOM_ASSERT(!index->type.address, "kernel IR: the address of an address");
  auto e = blank(Expr::Kind::BufAddr, Type::addr());
  e->buffer = std::move(buffer);
  e->args = {std::move(index)};
  return e;
}

StmtP let(std::string name, ExprP value) {
  LOOM_ASSERT(!name.empty() && value, "kernel IR: `let` needs a name and a value");
  auto s = blank(Stmt::Kind::Let);
  s->name = std::move(name);
  s->value = std::move(value);
  return s;
}

StmtP loop(std::string var, ExprP init, ExprP cond, ExprP step, Mapping m, Body body, int unroll,
           std::string exit) {
  LOOM_ASSERT(!var.empty(), "kernel IR: a loop needs a variable");
  checkIndex(init, "a loop's start");
  checkIndex(step, "a loop's step");
  LOOM_ASSERT(cond && cond->kind == Expr::Kind::Index && isComparison(cond->iop),
              "kernel IR: loop `{}` needs a comparison as its condition", var);
  LOOM_ASSERT(unroll >= 1, "kernel IR: loop `{}` unrolled {} times", var, unroll);
  auto s = blank(Stmt::Kind::Loop);
  s->name = std::move(var);
  s->init = std::move(init);
  s->cond = std::move(cond);
  s->step = std::move(step);
  s->mapping = m;
  s->body = std::move(body);
  s->unroll = unroll;
  s->exit = std::move(exit);
  return s;
}

StmtP store(int param, ExprP offset, ExprP value, Access a, int64_t inner_stride) {
  LOOM_ASSERT(param >= 0 && value && !value->type.index, "kernel IR: a store needs a parameter "
              "and data to write");
  checkIndex(offset, "a store's offset");
  auto s = blank(Stmt::Kind::Store);
  s->param = param;
  s->offset = std::move(offset);
  s->value = std::move(value);
  LOOM_ASSERT(a != Access::Splat, "kernel IR: a store cannot write every lane to one element");
  s->access = a;
  s->inner_stride = inner_stride;
  const DType t = s->value->type.dtype;
  const int lanes = s->value->type.lanes;
  s->align = s->access == Access::Vector && lanes > 1
                ? static_cast<int>(std::min<int64_t>(16, int64_t{lanes} * dtypeBytes(t)))
                : dtypeBytes(t);
  return s;
}

StmtP ifThen(ExprP cond, std::string label, Body body) {
  LOOM_ASSERT(cond && cond->type.isPred(), "kernel IR: `if {}` needs a predicate", label);
  auto s = blank(Stmt::Kind::If);
  s->cond = std::move(cond);
  s->name = std::move(label);
  s->body = std::move(body);
  return s;
}

StmtP barrier(Barrier b) {
  auto s = blank(Stmt::Kind::Barrier);
  s->barrier = b;
  return s;
}

StmtP bufStore(std::string buffer, ExprP index, ExprP value) {
  checkIndex(index, "a buffer's element");
  LOOM_ASSERT(value && !value->type.index && value->type.lanes == 1, "kernel IR: a buffer holds one "
              "element a slot");
  auto s = blank(Stmt::Kind::BufStore);
  s->name = std::move(buffer);
  s->offset = std::move(index);
  s->value = std::move(value);
  return s;
}

StmtP combine(std::string result, ExprP value, const CombineSpec& spec) {
  return combineAll({std::move(result)}, {std::move(value)}, spec);
}

namespace {
// A combine's or Welford merge's rows: the domain, threads and rows, the thread's place, the grid level.
void placeRows(Stmt& s, const CombineSpec& spec) {
  s.domain = spec.domain;
  s.threads = spec.threads;
  s.rows = spec.rows;
  s.thread_in_row = spec.thread_in_row;
  s.row_in_block = spec.row_in_block;
  s.lane = spec.lane;
  s.grid = spec.grid;
}
}  // namespace

StmtP combineAll(std::vector<std::string> results, std::vector<ExprP> values, const CombineSpec& spec) {
  LOOM_ASSERT(!values.empty() && results.size() == values.size(), "kernel IR: combine of {} values into {} results",
              values.size(), results.size());
  for (size_t i = 0; i < values.size(); ++i)
    LOOM_ASSERT(values[i] && !values[i]->type.index && values[i]->type.lanes == 1 && values[i]->type == values[0]->type,
                "kernel IR: combine `{}` of one value a thread, of one type", results[i]);
  LOOM_ASSERT(spec.threads >= 1 && (spec.threads & (spec.threads - 1)) == 0 && spec.rows >= 1,
              "kernel IR: combine `{}` over {} threads a row", results[0], spec.threads);
  LOOM_ASSERT(spec.threads <= 32 || spec.threads % 32 == 0, "kernel IR: combine over rows of whole warps");
  auto s = blank(Stmt::Kind::Combine);
  s->name = results[0];
  s->value = values[0];
  s->results = std::move(results);
  s->yields = std::move(values);
  s->combine = spec.op;
  placeRows(*s, spec);
  s->cluster = spec.cluster;
  return s;
}

StmtP welford(std::vector<std::string> results, std::vector<ExprP> stats, const CombineSpec& spec) {
  LOOM_ASSERT(results.size() == 3 && stats.size() == 3, "kernel IR: Welford statistics are (count, mean, M2)");
  for (const auto& x : stats)
    LOOM_ASSERT(x && !x->type.index && x->type == stats[0]->type && x->type.lanes == 1,
                "kernel IR: Welford statistics of one type and lane");
  auto s = blank(Stmt::Kind::Welford);
  s->name = results[1];
  s->results = std::move(results);
  s->yields = std::move(stats);
  placeRows(*s, spec);
  s->threads_merged = spec.threads_merged;
  return s;
}

StmtP repeat(std::string var, int64_t count, std::vector<std::pair<std::string, ExprP>> carried, Body body,
             std::vector<ExprP> yields, std::vector<std::string> results, int unroll, ExprP trips) {
  LOOM_ASSERT(count >= 1, "kernel IR: repeat `{}` of {} trips (at least one)", var, count);
  LOOM_ASSERT(!trips || trips->type == Type::idx(), "kernel IR: repeat `{}` counts its trips in {}, not the index type",
              var, trips ? trips->type.str() : "");
  LOOM_ASSERT(carried.size() == yields.size() && yields.size() == results.size(),
              "kernel IR: repeat `{}` carries {} values, yields {}, gives {}", var, carried.size(), yields.size(),
              results.size());
  for (size_t i = 0; i < carried.size(); ++i)
    LOOM_ASSERT(carried[i].second && yields[i] && carried[i].second->type == yields[i]->type,
                "kernel IR: repeat `{}` carries `{}` of another type than it yields", var, carried[i].first);
  auto s = blank(Stmt::Kind::Repeat);
  s->name = std::move(var);
  s->count = count;
  s->trips = std::move(trips);
  s->carried = std::move(carried);
  s->body = std::move(body);
  s->yields = std::move(yields);
  s->results = std::move(results);
  s->unroll = std::max(1, unroll);
  return s;
}

StmtP bytesStore(std::string buffer, ExprP byte, ExprP value, int align, bool scalar) {
  checkIndex(byte, "a byte offset");
  LOOM_ASSERT(value && !value->type.index, "kernel IR: a store of data to shared memory");
  LOOM_ASSERT(!scalar || value->type.lanes == 1, "kernel IR: a scalar store of {} lanes", value->type.lanes);
  auto s = blank(Stmt::Kind::BytesStore);
  s->access = scalar ? Access::Gather : Access::Vector;
  s->name = std::move(buffer);
  s->offset = std::move(byte);
  s->value = std::move(value);
  s->align = align;
  return s;
}

StmtP asyncCopy(std::string buffer, ExprP byte, int param, DType t, ExprP src, int bytes) {
  checkIndex(byte, "a byte offset");
  LOOM_ASSERT(src && src->type.index, "kernel IR: a copy's source is an element or an address");
  LOOM_ASSERT(bytes == 4 || bytes == 8 || bytes == 16, "kernel IR: cp.async of {} bytes", bytes);
  auto s = blank(Stmt::Kind::AsyncCopy);
  s->name = std::move(buffer);
  s->offset = std::move(byte);
  s->param = param;
  s->copy_dtype = t;
  s->src = std::move(src);
  s->bytes = bytes;
  return s;
}

StmtP spread(std::string var, Mapping m, int64_t extent, Body body) {
  LOOM_ASSERT(m == Mapping::Threads || m == Mapping::Blocks, "kernel IR: `{}` spread over {}", var, mappingName(m));
  auto s = blank(Stmt::Kind::Spread);
  s->name = std::move(var);
  s->mapping = m;
  s->count = extent;
  s->body = std::move(body);
  return s;
}

StmtP uniformIf(ExprP cond, std::string label, Body body) {
  auto s = std::make_shared<Stmt>(*ifThen(std::move(cond), std::move(label), std::move(body)));
  s->uniform = true;
  return s;
}

StmtP globalStore(ExprP addr, ExprP value, int align) {
  LOOM_ASSERT(addr && addr->type.address && value && !value->type.index, "kernel IR: a global store of data "
              "through an address");
  auto s = blank(Stmt::Kind::GlobalStore);
  s->offset = std::move(addr);
  s->value = std::move(value);
  s->align = align;
  return s;
}

StmtP gridSync(std::string tid, ExprP counter, ExprP target) {
  LOOM_ASSERT(counter && counter->type.address && target && target->type == Type::i32(),
              "kernel IR: a grid barrier on a counter's address up to an i32 target");
  auto s = blank(Stmt::Kind::GridSync);
  s->name = std::move(tid);
  s->offset = std::move(counter);
  s->src = std::move(target);
  return s;
}

StmtP relaxedZero(ExprP addr) {
  LOOM_ASSERT(addr && addr->type.address, "kernel IR: a relaxed store through an address");
  auto s = blank(Stmt::Kind::RelaxedZero);
  s->offset = std::move(addr);
  return s;
}

StmtP asyncWaitAll() {
  auto s = blank(Stmt::Kind::AsyncWait);
  s->count = -1;
  return s;
}
StmtP asyncWaitGroup(int pending) {
  auto s = blank(Stmt::Kind::AsyncWait);
  s->count = pending;
  return s;
}
StmtP asyncCommit() { return blank(Stmt::Kind::AsyncCommit); }

namespace {
// Replays LLVM's naming of module symbols: taken names, and one counter for every clash.
std::string uniqueName(std::set<std::string>& taken, int& last, const std::string& base) {
  if (taken.insert(base).second) return base;
  while (true) {
    std::string n = base + std::to_string(++last);
    if (taken.insert(n).second) return n;
  }
}
}  // namespace

std::string bufferName(const Kernel& k, const std::string& symbol) {
  std::set<std::string> taken{k.name};
  int last = 0;
  for (const auto& b : k.buffers) uniqueName(taken, last, b.symbol);
  return uniqueName(taken, last, symbol);
}


}  // namespace loom::kir
