#pragma once
// Ops: one class, a kind from ir/ops.def, and the attributes of its family. Ops are created
// only through Fusion::addOp, which checks and types them; they never change afterwards.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/dtype.h"
#include "ir/extent.h"

namespace loom::ir {

enum class OpKind : uint8_t {
#define LOOM_OP(E, name, family) E,
#include "ir/ops.def"
#undef LOOM_OP
};

enum class OpFamily : uint8_t {
  Unary, UnaryAny, Predicate, LogicalNot, Binary, BinaryFloat, Compare, Logical, Where, Cast, Bitcast,
  Reduce, VarMean, ArgReduce, Broadcast, Reshape, Permute, Squeeze, Unsqueeze, Slice, Concat, Gather, Constant, Full,
  Iota, Random
};

std::string_view opName(OpKind k);
OpFamily opFamily(OpKind k);
bool parseOpKind(std::string_view name, OpKind* out);
// All kinds in list order (for tests that cover every op).
const std::vector<OpKind>& allOpKinds();
bool isPointwise(OpKind k);  // elementwise families: unary, binary, where, cast, bitcast
bool isReduction(OpKind k);  // Reduce, VarMean and ArgReduce families
bool isView(OpKind k);       // broadcast, reshape, permute, squeeze, unsqueeze, slice
// Ops that make a tensor of their own shape attribute: full, iota, rand_uniform, rand_normal.
bool isCreation(OpKind k);

struct NoAttrs {
  bool operator==(const NoAttrs&) const = default;
};
struct CastAttrs {  // Cast and Bitcast
  DType to;
  bool operator==(const CastAttrs&) const = default;
};
struct ReduceAttrs {  // Reduce, VarMean and ArgReduce (one dim)
  std::vector<int> dims;  // sorted, unique, non-negative
  bool keepdim = false;
  double correction = 0;  // VarMean only
  bool operator==(const ReduceAttrs&) const = default;
};
struct BroadcastAttrs {
  std::vector<bool> is_new;  // one per output axis: true where a broadcast axis is inserted
  bool operator==(const BroadcastAttrs&) const = default;
};
struct ShapeAttrs {  // Reshape target; Full shape
  std::vector<Extent> shape;
  bool operator==(const ShapeAttrs&) const = default;
};
struct DimsAttrs {  // Permute order; Squeeze dims; Unsqueeze {dim}; Concat and Gather {dim}
  std::vector<int> dims;
  bool operator==(const DimsAttrs&) const = default;
};
struct SliceAttrs {
  std::vector<Extent> starts, stops;  // one per axis, stop exclusive
  bool operator==(const SliceAttrs&) const = default;
};
struct ScalarAttrs {  // Constant; Full, Iota and Random also have a `shape`
  double value = 0;           // Constant and Full
  DType dtype = DType::F32;
  std::vector<Extent> shape;  // Full, Iota, Random
  int dim = 0;                // Iota: the dim whose index each element holds
  // NaN equals NaN and -0 differs from 0, so equal attributes mean the same constant.
  bool operator==(const ScalarAttrs& o) const {
    bool same = std::isnan(value) ? std::isnan(o.value)
                                  : value == o.value && std::signbit(value) == std::signbit(o.value);
    return same && dtype == o.dtype && shape == o.shape && dim == o.dim;
  }
};

using Attrs = std::variant<NoAttrs, CastAttrs, ReduceAttrs, BroadcastAttrs, ShapeAttrs, DimsAttrs,
                           SliceAttrs, ScalarAttrs>;

class Value;
class Fusion;

class Op {
 public:
  OpKind kind() const { return kind_; }
  OpFamily family() const { return opFamily(kind_); }
  std::string_view name() const { return opName(kind_); }
  const std::vector<const Value*>& inputs() const { return inputs_; }
  const std::vector<const Value*>& outputs() const { return outputs_; }
  const Value* input(size_t i) const { return inputs_.at(i); }
  const Value* output(size_t i = 0) const { return outputs_.at(i); }
  const Attrs& attrs() const { return attrs_; }
  template <typename T>
  const T& attr() const { return std::get<T>(attrs_); }
  int id() const { return id_; }

 private:
  friend class Fusion;
  Op(int id, OpKind k, std::vector<const Value*> in, Attrs a)
      : id_(id), kind_(k), inputs_(std::move(in)), attrs_(std::move(a)) {}
  int id_;
  OpKind kind_;
  std::vector<const Value*> inputs_;
  std::vector<const Value*> outputs_;
  Attrs attrs_;
};

}  // namespace loom::ir
