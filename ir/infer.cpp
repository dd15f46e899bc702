// Typing and checking of every op family: the verifier that runs as each op is built.
#include <algorithm>
#include <set>

#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/reshape_groups.h"

namespace loom::ir {

namespace {

std::string where(OpKind k) { return fmt::format("`{}`", opName(k)); }

// The result of an op that makes a tensor of its own attributes: full, iota, random numbers.
TypedOutput created(const ScalarAttrs& a) {
  std::vector<Axis> axes;
  for (const auto& e : a.shape) axes.push_back(Axis::iter(e));
  return {a.dtype, axes};
}

void expectArity(OpKind k, const std::vector<const Value*>& in, size_t n) {
  LOOM_USER_CHECK(in.size() == n, "{} takes {} operand{}, got {}", where(k), n, n == 1 ? "" : "s",
                  in.size());
}

template <typename T>
const T& expectAttrs(OpKind k, const Attrs& a) {
  const T* p = std::get_if<T>(&a);
  LOOM_ASSERT(p != nullptr, "{} built with attributes of the wrong family", where(k));
  return *p;
}

// Pointwise broadcasting: equal ranks (rank 0 stretches to anything); per axis equal extents,
// or one side a broadcast axis.
std::vector<Axis> broadcastAxes(OpKind k, const std::vector<const Value*>& in) {
  std::vector<Axis> out;
  const Value* shaped = nullptr;
  for (const Value* v : in) {
    if (v->rank() == 0) continue;
    if (!shaped) {
      shaped = v;
      out = v->axes();
      continue;
    }
    LOOM_USER_CHECK(v->rank() == shaped->rank(),
                    "{}: rank mismatch between `{}` {} and `{}` {}; broadcast or reshape one of "
                    "them first", where(k), shaped->name(), shaped->typeString(), v->name(),
                    v->typeString());
    for (int d = 0; d < v->rank(); ++d) {
      const Axis& a = v->axis(d);
      if (a.broadcast) continue;
      if (out[d].broadcast) {
        out[d] = a;
        continue;
      }
      LOOM_USER_CHECK(out[d].extent == a.extent,
                      "{}: dim {} of `{}` {} has extent {} but `{}` {} has {}; extents must "
                      "match or one must be a broadcast dim", where(k), d, shaped->name(),
                      shaped->typeString(), out[d].extent.str(), v->name(), v->typeString(),
                      a.extent.str());
    }
  }
  return out;
}

DType sameDType(OpKind k, const std::vector<const Value*>& in) {
  for (const Value* v : in)
    LOOM_USER_CHECK(v->dtype() == in[0]->dtype(),
                    "{}: dtype mismatch, `{}` is {} but `{}` is {}; insert a cast", where(k),
                    in[0]->name(), dtypeName(in[0]->dtype()), v->name(), dtypeName(v->dtype()));
  return in[0]->dtype();
}

void expectFloat(OpKind k, const Value* v) {
  LOOM_USER_CHECK(isFloat(v->dtype()), "{} needs a floating-point operand, `{}` is {}; cast it "
                  "to f32 first", where(k), v->name(), dtypeName(v->dtype()));
}
void expectNumeric(OpKind k, const Value* v) {
  LOOM_USER_CHECK(v->dtype() != DType::Bool, "{} needs a numeric operand, `{}` is bool",
                  where(k), v->name());
}

int checkDim(OpKind k, const Value* v, int d, int rank_plus = 0) {
  LOOM_USER_CHECK(d >= 0 && d < v->rank() + rank_plus,
                  "{}: dim {} does not exist in `{}` {} (valid dims are 0..{})", where(k), d,
                  v->name(), v->typeString(), v->rank() + rank_plus - 1);
  return d;
}

void checkDimsSortedUnique(OpKind k, const Value* v, const std::vector<int>& dims) {
  for (size_t i = 0; i < dims.size(); ++i) {
    checkDim(k, v, dims[i]);
    LOOM_USER_CHECK(i == 0 || dims[i] > dims[i - 1],
                    "{}: dims must be listed once each in increasing order", where(k));
  }
}

std::vector<TypedOutput> inferReduce(OpKind k, const Value* x, const ReduceAttrs& a) {
  LOOM_USER_CHECK(!a.dims.empty(), "{} of `{}`: give at least one dim to reduce", where(k),
                  x->name());
  checkDimsSortedUnique(k, x, a.dims);
  std::vector<Axis> axes;
  for (int d = 0; d < x->rank(); ++d) {
    bool reduced = std::find(a.dims.begin(), a.dims.end(), d) != a.dims.end();
    if (!reduced) axes.push_back(x->axis(d));
    else if (a.keepdim) axes.push_back(Axis::bcast());
  }
  return {{x->dtype(), axes}};
}

// The views' types: the operand's axes rearranged.
std::vector<TypedOutput> inferBroadcast(OpKind k, const std::vector<const Value*>& in, const Attrs& attrs) {
  expectArity(k, in, 1);
  const auto& a = expectAttrs<BroadcastAttrs>(k, attrs);
  int kept = static_cast<int>(std::count(a.is_new.begin(), a.is_new.end(), false));
  LOOM_USER_CHECK(kept == in[0]->rank(),
                  "{} of `{}` {}: the flags keep {} dims but the operand has rank {}; give "
                  "one flag per output dim, false for each existing dim", where(k),
                  in[0]->name(), in[0]->typeString(), kept, in[0]->rank());
  std::vector<Axis> axes;
  int src = 0;
  for (bool b : a.is_new) axes.push_back(b ? Axis::bcast() : in[0]->axis(src++));
  return {{in[0]->dtype(), axes}};
}

std::vector<TypedOutput> inferReshape(OpKind k, const std::vector<const Value*>& in, const Attrs& attrs) {
  expectArity(k, in, 1);
  const auto& a = expectAttrs<ShapeAttrs>(k, attrs);
  auto groups = reshapeGroups(in[0]->shape(), a.shape);
  std::vector<Axis> axes;
  for (const auto& e : a.shape) axes.push_back(Axis::iter(e));
  for (const auto& g : groups) {
    bool all_b = g.in_end > g.in_begin;
    for (int d = g.in_begin; d < g.in_end; ++d) all_b = all_b && in[0]->axis(d).broadcast;
    if (all_b)
      for (int d = g.out_begin; d < g.out_end; ++d) axes[d].broadcast = true;
  }
  return {{in[0]->dtype(), axes}};
}

std::vector<TypedOutput> inferPermute(OpKind k, const std::vector<const Value*>& in, const Attrs& attrs) {
  expectArity(k, in, 1);
  const auto& p = expectAttrs<DimsAttrs>(k, attrs).dims;
  std::vector<int> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  bool ok = static_cast<int>(p.size()) == in[0]->rank();
  for (int i = 0; ok && i < static_cast<int>(sorted.size()); ++i) ok = sorted[i] == i;
  LOOM_USER_CHECK(ok, "{} of `{}` {}: the order must list each of dims 0..{} once",
                  where(k), in[0]->name(), in[0]->typeString(), in[0]->rank() - 1);
  std::vector<Axis> axes;
  for (int d : p) axes.push_back(in[0]->axis(d));
  return {{in[0]->dtype(), axes}};
}

std::vector<TypedOutput> inferSqueeze(OpKind k, const std::vector<const Value*>& in, const Attrs& attrs) {
  expectArity(k, in, 1);
  const auto& dims = expectAttrs<DimsAttrs>(k, attrs).dims;
  checkDimsSortedUnique(k, in[0], dims);
  std::vector<Axis> axes;
  for (int d = 0; d < in[0]->rank(); ++d) {
    bool sq = std::find(dims.begin(), dims.end(), d) != dims.end();
    LOOM_USER_CHECK(!sq || in[0]->axis(d).extent.isOne(),
                    "{}: dim {} of `{}` {} has extent {}, only size-1 dims can be squeezed",
                    where(k), d, in[0]->name(), in[0]->typeString(),
                    in[0]->axis(d).extent.str());
    if (!sq) axes.push_back(in[0]->axis(d));
  }
  return {{in[0]->dtype(), axes}};
}

// Pieces of one dtype and rank, equal but along `dim`, whose extents there sum to one size.
// gather(x, index, dim): index of x's rank, agreeing with x (or broadcast) in every other dim,
// the result index's shape; index_select(x, index, dim): a 1-d index, x's shape with dim's
// extent the index's.
std::vector<TypedOutput> inferGather(OpKind k, const std::vector<const Value*>& in, const Attrs& attrs) {
  expectArity(k, in, 2);
  const Value *x = in[0], *index = in[1];
  const auto& dims = expectAttrs<DimsAttrs>(k, attrs).dims;
  LOOM_USER_CHECK(dims.size() == 1, "{} takes one dim", where(k));
  const int dim = dims[0];
  checkDim(k, x, dim, 0);
  LOOM_USER_CHECK(isInt(index->dtype()), "{}: the index `{}` is {}; indices are i32 or i64", where(k), index->name(),
                  dtypeName(index->dtype()));
  std::vector<Axis> axes = x->axes();
  if (k == OpKind::IndexSelect) {
    LOOM_USER_CHECK(index->rank() == 1, "{}: the index `{}` {} has {} dims; index_select takes a 1-d index (gather "
                    "takes one of x's rank)", where(k), index->name(), index->typeString(), index->rank());
    axes[static_cast<size_t>(dim)] = index->axis(0);
    return {{x->dtype(), axes}};
  }
  LOOM_USER_CHECK(index->rank() == x->rank(), "{}: the index `{}` {} has {} dims but `{}` {} has {}; gather takes an "
                  "index of x's rank (index_select a 1-d one)", where(k), index->name(), index->typeString(),
                  index->rank(), x->name(), x->typeString(), x->rank());
  // Outside dim a broadcast dim of either stretches to the other's extent, as in pointwise ops.
  for (int d = 0; d < x->rank(); ++d) {
    const Axis& a = index->axis(d);
    if (d == dim || axes[static_cast<size_t>(d)].broadcast) {
      axes[static_cast<size_t>(d)] = a;
      continue;
    }
    if (a.broadcast) continue;
    LOOM_USER_CHECK(axes[static_cast<size_t>(d)].extent == a.extent,
                    "{}: dim {} of the index `{}` {} has extent {} but `{}` {} has {}; outside dim {} they must "
                    "match or one be a broadcast dim (slice x first)", where(k), d, index->name(),
                    index->typeString(), a.extent.str(), x->name(), x->typeString(),
                    x->axis(d).extent.str(), dim);
  }
  return {{x->dtype(), axes}};
}

std::vector<TypedOutput> inferConcat(OpKind k, const std::vector<const Value*>& in, const Attrs& attrs) {
  LOOM_USER_CHECK(!in.empty(), "{} takes one operand or more", where(k));
  const auto& dims = expectAttrs<DimsAttrs>(k, attrs).dims;
  LOOM_USER_CHECK(dims.size() == 1, "{} takes one dim", where(k));
  const Value* x = in[0];
  const int dim = dims[0];
  LOOM_USER_CHECK(dim >= 0 && dim < x->rank(), "{}: dim {} is not a dim of `{}` {} (0 to {})", where(k), dim,
                  x->name(), x->typeString(), x->rank() - 1);
  std::vector<Axis> axes = x->axes();
  LOOM_USER_CHECK(!axes[static_cast<size_t>(dim)].broadcast, "{}: dim {} of `{}` {} is a broadcast dim; "
                  "concatenate along a dim of extent", where(k), dim, x->name(), x->typeString());
  for (size_t i = 1; i < in.size(); ++i) {
    const Value* v = in[i];
    LOOM_USER_CHECK(v->dtype() == x->dtype() && v->rank() == x->rank(),
                    "{}: `{}` {} and `{}` {} differ in dtype or rank; cast or reshape one of them", where(k),
                    x->name(), x->typeString(), v->name(), v->typeString());
    for (int d = 0; d < x->rank(); ++d) {
      if (d == dim) continue;
      LOOM_USER_CHECK(v->axis(static_cast<size_t>(d)) == x->axis(static_cast<size_t>(d)),
                      "{}: `{}` {} and `{}` {} differ in dim {}; only dim {} may differ", where(k), x->name(),
                      x->typeString(), v->name(), v->typeString(), d, dim);
    }
    const Axis& a = v->axis(static_cast<size_t>(dim));
    LOOM_USER_CHECK(!a.broadcast, "{}: dim {} of `{}` {} is a broadcast dim; concatenate along a dim of extent",
                    where(k), dim, v->name(), v->typeString());
    auto sum = axes[static_cast<size_t>(dim)].extent.plus(a.extent);
    LOOM_USER_CHECK(sum.has_value(), "{}: extents {} and {} along dim {} do not add up to one size (extents are "
                    "multiples of one size: concatenate pieces like H and 2*H)", where(k),
                    axes[static_cast<size_t>(dim)].extent.str(), a.extent.str(), dim);
    axes[static_cast<size_t>(dim)].extent = *sum;
  }
  return {{x->dtype(), axes}};
}

std::vector<TypedOutput> inferSlice(OpKind k, const std::vector<const Value*>& in, const Attrs& attrs) {
  expectArity(k, in, 1);
  const auto& a = expectAttrs<SliceAttrs>(k, attrs);
  const Value* x = in[0];
  LOOM_USER_CHECK(static_cast<int>(a.starts.size()) == x->rank() &&
                      a.stops.size() == a.starts.size(),
                  "{} of `{}` {}: give one [start, stop) per dim", where(k), x->name(),
                  x->typeString());
  std::vector<Axis> axes;
  for (int d = 0; d < x->rank(); ++d) {
    const Extent& e = x->axis(d).extent;
    auto len = a.stops[d].minus(a.starts[d]);
    LOOM_USER_CHECK(len.has_value() && !(len->isConstant() && len->constant() == 0),
                    "{}: bounds [{}, {}) of dim {} of `{}` {} must be constants or multiples "
                    "of one size, with start < stop", where(k), a.starts[d].str(),
                    a.stops[d].str(), d, x->name(), x->typeString());
    auto in_range = a.stops[d].lessEqual(e);
    LOOM_USER_CHECK(in_range.value_or(false),
                    "{}: stop {} of dim {} is past its extent {} in `{}` {}", where(k),
                    a.stops[d].str(), d, e.str(), x->name(), x->typeString());
    bool whole = a.starts[d].isConstant() && a.starts[d].constant() == 0 && a.stops[d] == e;
    axes.push_back(whole ? x->axis(d) : Axis::iter(*len));
  }
  return {{x->dtype(), axes}};
}

}  // namespace

std::vector<TypedOutput> inferOutputs(OpKind k, const std::vector<const Value*>& in,
                                      const Attrs& attrs) {
  switch (opFamily(k)) {
    case OpFamily::Unary:
      expectArity(k, in, 1);
      expectFloat(k, in[0]);
      return {{in[0]->dtype(), in[0]->axes()}};
    case OpFamily::UnaryAny:
      expectArity(k, in, 1);
      expectNumeric(k, in[0]);
      return {{in[0]->dtype(), in[0]->axes()}};
    case OpFamily::Predicate:
      expectArity(k, in, 1);
      expectFloat(k, in[0]);
      return {{DType::Bool, in[0]->axes()}};
    case OpFamily::LogicalNot:
      expectArity(k, in, 1);
      LOOM_USER_CHECK(in[0]->dtype() == DType::Bool, "{} needs a bool operand, `{}` is {}",
                      where(k), in[0]->name(), dtypeName(in[0]->dtype()));
      return {{DType::Bool, in[0]->axes()}};
    case OpFamily::Binary:
    case OpFamily::BinaryFloat:
    case OpFamily::Compare:
    case OpFamily::Logical: {
      expectArity(k, in, 2);
      DType t = sameDType(k, in);
      if (opFamily(k) == OpFamily::BinaryFloat) expectFloat(k, in[0]);
      if (opFamily(k) == OpFamily::Binary) expectNumeric(k, in[0]);
      if (opFamily(k) == OpFamily::Logical)
        LOOM_USER_CHECK(!isFloat(t), "{} needs bool or integer operands, `{}` is {}", where(k),
                        in[0]->name(), dtypeName(t));
      DType out = opFamily(k) == OpFamily::Compare ? DType::Bool : t;
      return {{out, broadcastAxes(k, in)}};
    }
    case OpFamily::Where: {
      expectArity(k, in, 3);
      LOOM_USER_CHECK(in[0]->dtype() == DType::Bool, "{}: the condition `{}` must be bool, not {}",
                      where(k), in[0]->name(), dtypeName(in[0]->dtype()));
      DType t = sameDType(k, {in[1], in[2]});
      return {{t, broadcastAxes(k, in)}};
    }
    case OpFamily::Cast:
      expectArity(k, in, 1);
      return {{expectAttrs<CastAttrs>(k, attrs).to, in[0]->axes()}};
    case OpFamily::Bitcast: {
      expectArity(k, in, 1);
      const DType from = in[0]->dtype(), to = expectAttrs<CastAttrs>(k, attrs).to;
      // The reference holds every value as a double, which keeps 32-bit patterns exactly.
      LOOM_USER_CHECK((from == DType::F32 && to == DType::I32) || (from == DType::I32 && to == DType::F32),
                      "{}: `{}` is {} and `to` is {}; bitcast reads the bits of f32 as i32 or of i32 as f32 "
                      "(cast to f32 or i32 first)", where(k), in[0]->name(), dtypeName(from), dtypeName(to));
      return {{to, in[0]->axes()}};
    }
    case OpFamily::Reduce: {
      expectArity(k, in, 1);
      if (k == OpKind::Mean) expectFloat(k, in[0]);
      else expectNumeric(k, in[0]);
      return inferReduce(k, in[0], expectAttrs<ReduceAttrs>(k, attrs));
    }
    case OpFamily::VarMean: {
      expectArity(k, in, 1);
      expectFloat(k, in[0]);
      const auto& a = expectAttrs<ReduceAttrs>(k, attrs);
      LOOM_USER_CHECK(a.correction >= 0, "{}: correction {} is negative; use 0 (population) or 1 "
                      "(unbiased)", where(k), a.correction);
      auto r = inferReduce(k, in[0], a);
      return {r[0], r[0], {DType::I64, r[0].axes}};  // var, mean, count
    }
    case OpFamily::ArgReduce: {
      expectArity(k, in, 1);
      expectNumeric(k, in[0]);
      const auto& a = expectAttrs<ReduceAttrs>(k, attrs);
      LOOM_USER_CHECK(a.dims.size() == 1, "{} of `{}` takes one dim, got {}; reshape the dims into one "
                      "first", where(k), in[0]->name(), a.dims.size());
      return {{DType::I64, inferReduce(k, in[0], a)[0].axes}};
    }
    case OpFamily::Broadcast:
      return inferBroadcast(k, in, attrs);
    case OpFamily::Reshape:
      return inferReshape(k, in, attrs);
    case OpFamily::Permute:
      return inferPermute(k, in, attrs);
    case OpFamily::Squeeze:
      return inferSqueeze(k, in, attrs);
    case OpFamily::Unsqueeze: {
      expectArity(k, in, 1);
      const auto& dims = expectAttrs<DimsAttrs>(k, attrs).dims;
      LOOM_USER_CHECK(dims.size() == 1, "{} takes one dim", where(k));
      checkDim(k, in[0], dims[0], 1);
      auto axes = in[0]->axes();
      axes.insert(axes.begin() + dims[0], Axis::bcast());
      return {{in[0]->dtype(), axes}};
    }
    case OpFamily::Slice:
      return inferSlice(k, in, attrs);
    case OpFamily::Concat:
      return inferConcat(k, in, attrs);
    case OpFamily::Gather:
      return inferGather(k, in, attrs);
    case OpFamily::Constant: {
      expectArity(k, in, 0);
      const auto& a = expectAttrs<ScalarAttrs>(k, attrs);
      return {{a.dtype, {}}};
    }
    case OpFamily::Full: {
      expectArity(k, in, 0);
      const auto& a = expectAttrs<ScalarAttrs>(k, attrs);
      return {created(a)};
    }
    case OpFamily::Iota: {
      expectArity(k, in, 0);
      const auto& a = expectAttrs<ScalarAttrs>(k, attrs);
      LOOM_USER_CHECK(a.dtype != DType::Bool, "{} counts in a numeric dtype, not bool", where(k));
      const int rank = static_cast<int>(a.shape.size());
      LOOM_USER_CHECK(a.dim >= 0 && a.dim < rank, "{} counts along dim {}, but its shape has {} dims (0 to {})",
                      where(k), a.dim, rank, rank - 1);
      return {created(a)};
    }
    case OpFamily::Random: {
      expectArity(k, in, 2);
      const auto& a = expectAttrs<ScalarAttrs>(k, attrs);
      LOOM_USER_CHECK(isFloat(a.dtype), "{} makes floating-point numbers; dtype {} is not one", where(k),
                      dtypeName(a.dtype));
      const char* names[] = {"seed", "offset"};
      for (size_t i = 0; i < 2; ++i)
        LOOM_USER_CHECK(in[i]->rank() == 0 && in[i]->dtype() == DType::I64,
                        "{}'s {} (operand {}) must be an i64 scalar; `{}` is {} of rank {}", where(k), names[i], i,
                        in[i]->name(), dtypeName(in[i]->dtype()), in[i]->rank());
      return {created(a)};
    }
  }
  LOOM_ASSERT(false, "unhandled op family for {}", where(k));
}

}  // namespace loom::ir
