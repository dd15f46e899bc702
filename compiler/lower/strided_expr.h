#pragma once
// Pointwise lowering's kernel IR: every value of a fusion without reductions becomes an
// expression DAG over its own concrete shape whose leaves are strided loads of fusion inputs.
// Views (broadcast, permute, slice, squeeze, unsqueeze, reshape) never copy: they rewrite the
// offset and strides of the leaves beneath them, so a slice of an intermediate (an LSTM gate)
// re-reads its inputs at shifted offsets, and a channels-last input is just other strides.
#include <functional>
#include <map>
#include <tuple>
#include <memory>
#include <string>
#include <vector>

#include "compiler/tensor_desc.h"
#include "ir/fusion.h"

namespace loom::lower {

struct Leaf {
  int input = -1;  // index into the fusion's inputs
  int64_t offset = 0;
  std::vector<int64_t> strides;  // one per axis of the value this expression stands for
  bool operator<(const Leaf& o) const {
    return std::tie(input, offset, strides) < std::tie(o.input, o.offset, o.strides);
  }
  bool operator==(const Leaf&) const = default;
};

struct ENode;
using EPtr = std::shared_ptr<const ENode>;

struct ENode {
  // Reduce: `op` is Sum, ReduceMax, ReduceMin, Mean or VarMean (out_index 0 = variance,
  // 1 = mean) over the reduced atoms of the kernel; args[0] is its operand.
  // Index: the i64 value `leaf.offset + sum of coordinate * leaf.strides` (leaf.input -1), an
  // element's index along an iota's dim or its linear index in a random op's shape; views
  // rewrite it as they rewrite loads.
  enum class Kind { Load, Const, Op, Reduce, Index } kind;
  DType dtype;
  ir::OpKind op = ir::OpKind::Add;  // Op
  std::vector<EPtr> args{};         // Op
  Leaf leaf{};                      // Load, Index
  double value = 0;                 // Const
  const ir::Op* origin = nullptr;   // the fusion op it computes (Op), for dumps
  int out_index = 0;                // Reduce of VarMean
  // Reduce: over the kernel's rows (a column reduction: layer norm backward's dw and db beside
  // its row reductions) instead of its reduced atoms.
  bool over_rows = false;
  // Reduce: over these atoms only, a strict part of the kernel's reduced atoms (a sub-row
  // reduction: group norm backward's per-channel sums within a row of a group); its values,
  // one per combination of the reduced atoms it keeps, are stored and read by nothing else.
  // Empty: over the kernel's reduced atoms (or its rows).
  std::vector<int> sub_atoms{};
  double correction = 0;            // Reduce of VarMean
};

// Whether `a` and `b` are the same expression, node for node (two schedules of one fusion build
// equal trees apart; `origin` is compared as the op it points to, constants by their bits).
bool sameExpr(const EPtr& a, const EPtr& b);

// An expression compared by structure, not address: a scheduler's parameters holding one compare
// equal across sizes whose schedules are the same (scheduler.h, Planned::lowers_as).
struct ExprRef : EPtr {
  ExprRef() = default;
  ExprRef(EPtr p) : EPtr(std::move(p)) {}  // NOLINT: an EPtr is one
  bool operator==(const ExprRef& o) const { return sameExpr(*this, o); }
};

// Thrown when a fusion cannot be lowered this way; `what` is a sentence for the user.
struct NotPointwise {
  std::string reason;
};

class StridedExprBuilder {
 public:
  StridedExprBuilder(const ir::Fusion& f, const Bindings& sizes,
                     const std::vector<TensorDesc>& inputs);
  // The expression of `v` over its concrete shape; throws NotPointwise.
  EPtr exprOf(const ir::Value* v);
  const std::vector<int64_t>& shapeOf(const ir::Value* v);

 private:
  EPtr build(const ir::Value* v);
  const ir::Fusion& f_;
  const Bindings& sizes_;
  const std::vector<TensorDesc>& inputs_;
  std::map<const ir::Value*, EPtr> memo_;
  std::map<const ir::Value*, std::vector<int64_t>> shapes_;
};

// The strides of a view `in_shape` -> `out_shape` (a split or merge per reshape group) of memory
// with `strides` over `in_shape`; throws NotPointwise (naming `what`) where a merged run is not
// evenly spaced.
std::vector<int64_t> reshapeStrides(const std::vector<int64_t>& strides, const std::vector<int64_t>& in_shape,
                                    const std::vector<int64_t>& out_shape, const ir::Op* op);

// Applies `fn` to every leaf, loads and index values (sharing unchanged subtrees).
EPtr mapLeaves(const EPtr& e, const std::function<Leaf(const Leaf&)>& fn);

// An iota's or random op's element index as strides over its dims of `shape`: 1 along the
// iota's dim, row-major for a random op; 0 along dims of size 1.
std::vector<int64_t> indexStrides(const ir::Op& op, const std::vector<int64_t>& shape);
// Its expression over the Index node `idx`: the index itself (an i64 iota), cast to the op's
// dtype (another iota), or the random op of `seed`, `offset` and the index.
EPtr indexOpExpr(const ir::Op& op, EPtr idx, EPtr seed, EPtr offset);
// The same over several roots, each shared node mapped once.
std::vector<EPtr> mapLeaves(const std::vector<EPtr>& roots, const std::function<Leaf(const Leaf&)>& fn);
// Merges structurally equal nodes (the same load, constant or op on the same operands), so
// each value is computed once however many outputs and views reach it.
std::vector<EPtr> hashCons(const std::vector<EPtr>& roots);
// Visits every distinct node once, operands before users.
void visitPostOrder(const std::vector<EPtr>& roots, const std::function<void(const ENode&)>& fn);

}  // namespace loom::lower
