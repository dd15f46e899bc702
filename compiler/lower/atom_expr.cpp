#include "compiler/lower/atom_expr.h"

#include <algorithm>

#include "ir/error.h"

namespace loom::lower {

namespace {
EPtr node(ENode n) { return std::make_shared<const ENode>(std::move(n)); }
}  // namespace

AtomExprBuilder::AtomExprBuilder(const ir::Fusion& f, const Bindings& sizes,
                                 const std::vector<TensorDesc>& inputs,
                                 const analysis::DomainAnalysis& da)
    : f_(f), sizes_(sizes), inputs_(inputs), da_(da) {
  for (const auto& a : da.atoms()) extents_.push_back(a.extent.evaluate(sizes));
}

EPtr AtomExprBuilder::exprOf(const ir::Value* v) {
  auto it = memo_.find(v);
  if (it != memo_.end()) return it->second;
  EPtr e = build(v);
  memo_[v] = e;
  return e;
}

EPtr AtomExprBuilder::build(const ir::Value* v) {
  if (v->isInput()) {
    int idx = 0;
    while (f_.inputs()[static_cast<size_t>(idx)] != v) ++idx;
    const TensorDesc& d = inputs_[static_cast<size_t>(idx)];
    ENode n{.kind = ENode::Kind::Load, .dtype = v->dtype()};
    n.leaf = Leaf{idx, 0, da_.atomStrides(v, d.strides, sizes_)};
    for (size_t a = 0; a < n.leaf.strides.size(); ++a)
      if (extents_[a] == 1) n.leaf.strides[a] = 0;
    return node(std::move(n));
  }
  const ir::Op* op = v->definition();
  auto operand = [&](size_t i) { return exprOf(op->input(i)); };
  if (ir::isPointwise(op->kind())) {
    ENode n{.kind = ENode::Kind::Op, .dtype = v->dtype(), .op = op->kind()};
    n.origin = op;
    for (size_t i = 0; i < op->inputs().size(); ++i) n.args.push_back(operand(i));
    return node(std::move(n));
  }
  switch (op->family()) {
    case ir::OpFamily::Constant:
    case ir::OpFamily::Full: {
      const auto& a = op->attr<ir::ScalarAttrs>();
      ENode n{.kind = ENode::Kind::Const, .dtype = a.dtype};
      n.value = roundTo(a.dtype, a.value);
      return node(std::move(n));
    }
    case ir::OpFamily::Broadcast:
    case ir::OpFamily::Permute:
    case ir::OpFamily::Squeeze:
    case ir::OpFamily::Unsqueeze:
    case ir::OpFamily::Reshape:
      return operand(0);  // the same atoms, grouped differently
    case ir::OpFamily::Slice: {
      const auto& a = op->attr<ir::SliceAttrs>();
      const ir::Value* in = op->input(0);
      std::vector<std::pair<int, int>> moves;  // (source atom, sliced atom)
      std::vector<int64_t> starts;
      for (int d = 0; d < in->rank(); ++d) {
        const auto& src = da_.axisAtoms(in, d);
        const auto& dst = da_.axisAtoms(v, d);
        if (src == dst) continue;
        if (src.size() != 1 || dst.size() != 1)
          throw NotPointwise{fmt::format("slice `{}` cuts dim {}, which is split into several "
                                         "atoms elsewhere in the fusion", v->name(), d)};
        moves.push_back({src[0], dst[0]});
        starts.push_back(a.starts[static_cast<size_t>(d)].evaluate(sizes_));
      }
      return mapLeaves(operand(0), [&](const Leaf& l) {
        Leaf r = l;
        for (size_t i = 0; i < moves.size(); ++i) {
          auto [s, t] = moves[i];
          r.offset += starts[i] * l.strides[static_cast<size_t>(s)];
          r.strides[static_cast<size_t>(t)] = l.strides[static_cast<size_t>(s)];
          r.strides[static_cast<size_t>(s)] = 0;
        }
        return r;
      });
    }
    case ir::OpFamily::Reduce:
    case ir::OpFamily::VarMean: {
      const auto& a = op->attr<ir::ReduceAttrs>();
      if (op->family() == ir::OpFamily::VarMean && v == op->output(2)) {
        int64_t n = 1;  // the count: the number of reduced elements
        for (int atom : da_.reducedAtoms(op)) n *= extents_[static_cast<size_t>(atom)];
        ENode c{ENode::Kind::Const, DType::I64};
        c.value = static_cast<double>(n);
        return node(std::move(c));
      }
      ENode n{.kind = ENode::Kind::Reduce, .dtype = v->dtype(), .op = op->kind()};
      n.origin = op;
      n.args.push_back(operand(0));
      n.out_index = v == op->output(0) ? 0 : 1;
      n.correction = a.correction;
      const std::vector<int> red = da_.reducedAtoms(op);
      if (!row_atoms_.empty() && red != row_atoms_) {
        const bool part = std::all_of(red.begin(), red.end(), [&](int a) {
          return std::find(row_atoms_.begin(), row_atoms_.end(), a) != row_atoms_.end();
        });
        if (part) n.sub_atoms = red;
        n.over_rows = !part;
      }
      return node(std::move(n));
    }
    case ir::OpFamily::Concat:
      throw NotPointwise{fmt::format("`{}` ({}) is read by another op of the kernel: a concat is written as "
                                     "an output, and its readers take it from memory", op->name(), v->name())};
    case ir::OpFamily::Iota:
    case ir::OpFamily::Random: {
      // The element's index as strides over the value's dims, then over its atoms.
      std::vector<int64_t> shape;
      for (int d = 0; d < v->rank(); ++d) shape.push_back(v->axis(static_cast<size_t>(d)).extent.evaluate(sizes_));
      ENode idx{.kind = ENode::Kind::Index, .dtype = DType::I64};
      idx.leaf = Leaf{-1, 0, da_.atomStrides(v, indexStrides(*op, shape), sizes_)};
      for (size_t a = 0; a < idx.leaf.strides.size(); ++a)
        if (extents_[a] == 1) idx.leaf.strides[a] = 0;
      const bool random = op->family() == ir::OpFamily::Random;
      return indexOpExpr(*op, node(std::move(idx)), random ? operand(0) : nullptr, random ? operand(1) : nullptr);
    }
    default:
      break;
  }
  LOOM_ASSERT(false, "atom lowering of `{}`", op->name());
}

}  // namespace loom::lower
