#include "compiler/lower/strided_expr.h"

#include <cstring>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "ir/reshape_groups.h"

namespace loom::lower {

namespace {

using ir::OpFamily;

EPtr node(ENode n) { return std::make_shared<const ENode>(std::move(n)); }

// Reshape of a strided leaf: each group of input axes must collapse to one strided run (as in
// torch's view rules); it is then split into the group's output axes.
Leaf reshapeLeaf(const Leaf& l, const std::vector<int64_t>& in_shape,
                 const std::vector<int64_t>& out_shape, const std::vector<ir::ReshapeGroup>& groups,
                 const ir::Op* op) {
  Leaf r{l.input, l.offset, std::vector<int64_t>(out_shape.size(), 0)};
  for (const auto& g : groups) {
    if (g.out_begin == g.out_end) continue;  // a dropped size-1 axis
    if (g.in_begin == g.in_end) continue;    // an inserted size-1 axis: stride 0
    // Collapse the input run, innermost first.
    int64_t stride = 0, extent = 1;
    bool first = true;
    for (int d = g.in_end - 1; d >= g.in_begin; --d) {
      int64_t e = in_shape[static_cast<size_t>(d)], s = l.strides[static_cast<size_t>(d)];
      if (e == 1) continue;
      if (first) {
        stride = s;
        first = false;
      } else if (s != stride * extent) {
        throw NotPointwise{fmt::format(
            "reshape `{}` merges dims {}..{} whose elements are not evenly spaced in memory "
            "(strides {}); only views can be fused", op->output()->name(), g.in_begin,
            g.in_end - 1, fmt::join(l.strides, ", "))};
      }
      extent *= e;
    }
    int64_t acc = stride;
    for (int d = g.out_end - 1; d >= g.out_begin; --d) {
      r.strides[static_cast<size_t>(d)] = acc;
      acc *= out_shape[static_cast<size_t>(d)];
    }
  }
  return r;
}

}  // namespace

std::vector<int64_t> reshapeStrides(const std::vector<int64_t>& strides, const std::vector<int64_t>& in_shape,
                                    const std::vector<int64_t>& out_shape, const ir::Op* op) {
  std::vector<Extent> ie, oe;
  for (auto s : in_shape) ie.push_back(Extent(s));
  for (auto s : out_shape) oe.push_back(Extent(s));
  return reshapeLeaf(Leaf{-1, 0, strides}, in_shape, out_shape, ir::reshapeGroups(ie, oe), op).strides;
}

std::vector<EPtr> mapLeaves(const std::vector<EPtr>& roots, const std::function<Leaf(const Leaf&)>& fn) {
  std::unordered_map<const ENode*, EPtr> memo;
  std::function<EPtr(const EPtr&)> go = [&](const EPtr& n) -> EPtr {
    auto it = memo.find(n.get());
    if (it != memo.end()) return it->second;
    EPtr out = n;
    if (n->kind == ENode::Kind::Load || n->kind == ENode::Kind::Index) {
      ENode c = *n;
      c.leaf = fn(n->leaf);
      out = node(std::move(c));
    } else if (n->kind == ENode::Kind::Op || n->kind == ENode::Kind::Reduce) {
      ENode c = *n;
      for (auto& a : c.args) a = go(a);
      out = node(std::move(c));
    }
    memo.emplace(n.get(), out);
    return out;
  };
  std::vector<EPtr> out;
  out.reserve(roots.size());
  for (const auto& r : roots) out.push_back(go(r));
  return out;
}

EPtr mapLeaves(const EPtr& e, const std::function<Leaf(const Leaf&)>& fn) { return mapLeaves(std::vector<EPtr>{e}, fn)[0]; }

std::vector<int64_t> indexStrides(const ir::Op& op, const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 0);
  if (op.family() == OpFamily::Iota) {
    const auto d = static_cast<size_t>(op.attr<ir::ScalarAttrs>().dim);
    s[d] = shape[d] == 1 ? 0 : 1;
    return s;
  }
  int64_t run = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = shape[d] == 1 ? 0 : run;
    run *= shape[d];
  }
  return s;
}

EPtr indexOpExpr(const ir::Op& op, EPtr idx, EPtr seed, EPtr offset) {
  const DType t = op.output()->dtype();
  if (op.family() == OpFamily::Iota && t == DType::I64) return idx;
  ENode n{.kind = ENode::Kind::Op, .dtype = t, .op = op.family() == OpFamily::Iota ? ir::OpKind::Cast : op.kind()};
  n.origin = &op;
  if (op.family() == OpFamily::Random) n.args = {std::move(seed), std::move(offset)};
  n.args.push_back(std::move(idx));
  return node(std::move(n));
}

namespace {
struct PostOrder {
  const std::function<void(const ENode&)>& fn;
  std::unordered_set<const ENode*> seen;
  void go(const ENode* n) {
    if (!seen.insert(n).second) return;
    for (const auto& a : n->args) go(a.get());
    fn(*n);
  }
};
}  // namespace

void visitPostOrder(const std::vector<EPtr>& roots, const std::function<void(const ENode&)>& fn) {
  PostOrder v{fn, {}};
  for (const auto& r : roots) v.go(r.get());
}

namespace {
bool sameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
}  // namespace

bool sameExpr(const EPtr& a, const EPtr& b) {
  std::set<std::pair<const ENode*, const ENode*>> same;  // pairs found equal (shared operands)
  std::function<bool(const ENode*, const ENode*)> eq = [&](const ENode* x, const ENode* y) {
    if (x == y) return true;
    if (!x || !y) return false;
    if (same.count({x, y})) return true;
    if (x->kind != y->kind || x->dtype != y->dtype || x->op != y->op || x->args.size() != y->args.size() ||
        !(x->leaf == y->leaf) || !sameBits(x->value, y->value) || x->origin != y->origin ||
        x->out_index != y->out_index || x->over_rows != y->over_rows || x->sub_atoms != y->sub_atoms ||
        !sameBits(x->correction, y->correction))
      return false;
    for (size_t i = 0; i < x->args.size(); ++i)
      if (!eq(x->args[i].get(), y->args[i].get())) return false;
    same.insert({x, y});
    return true;
  };
  return eq(a.get(), b.get());
}

namespace {
// A node as hashCons merges it: every field but `origin` (constants by their bits: -0 is not 0,
// and a NaN is itself).
struct ConsKey {
  int kind, dtype, op;
  std::vector<const ENode*> args;
  Leaf leaf;
  std::uint64_t value, correction;
  int out_index;
  bool over_rows;
  std::vector<int> sub_atoms;
  bool operator==(const ConsKey&) const = default;
};
std::uint64_t bitsOf(double d) {
  std::uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}
struct ConsHash {
  size_t operator()(const ConsKey& k) const {
    size_t h = static_cast<size_t>(k.kind) * 0x9e3779b97f4a7c15ULL;
    auto mix = [&h](std::uint64_t x) { h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    mix(static_cast<std::uint64_t>(k.dtype));
    mix(static_cast<std::uint64_t>(k.op));
    for (const ENode* a : k.args) mix(reinterpret_cast<std::uintptr_t>(a));
    mix(static_cast<std::uint64_t>(k.leaf.input));
    mix(static_cast<std::uint64_t>(k.leaf.offset));
    for (int64_t s : k.leaf.strides) mix(static_cast<std::uint64_t>(s));
    mix(k.value);
    mix(k.correction);
    mix(static_cast<std::uint64_t>(k.out_index) * 2 + k.over_rows);
    for (int a : k.sub_atoms) mix(static_cast<std::uint64_t>(a));
    return h;
  }
};
}  // namespace

std::vector<EPtr> hashCons(const std::vector<EPtr>& roots) {
  std::unordered_map<ConsKey, EPtr, ConsHash> table;
  std::unordered_map<const ENode*, EPtr> done;
  std::function<EPtr(const EPtr&)> go = [&](const EPtr& n) -> EPtr {
    auto it = done.find(n.get());
    if (it != done.end()) return it->second;
    ENode c = *n;
    std::vector<const ENode*> args;
    for (auto& a : c.args) {
      a = go(a);
      args.push_back(a.get());
    }
    ConsKey k{static_cast<int>(c.kind), static_cast<int>(c.dtype), static_cast<int>(c.op), std::move(args),
              c.leaf, bitsOf(c.value), bitsOf(c.correction), c.out_index, c.over_rows, c.sub_atoms};
    auto t = table.find(k);
    EPtr out = t != table.end() ? t->second : table.emplace(std::move(k), node(std::move(c))).first->second;
    done.emplace(n.get(), out);
    return out;
  };
  std::vector<EPtr> out;
  for (const auto& r : roots) out.push_back(go(r));
  return out;
}

StridedExprBuilder::StridedExprBuilder(const ir::Fusion& f, const Bindings& sizes,
                                       const std::vector<TensorDesc>& inputs)
    : f_(f), sizes_(sizes), inputs_(inputs) {
  LOOM_ASSERT(inputs.size() == f.inputs().size(), "{} descs for {} inputs", inputs.size(),
              f.inputs().size());
}

const std::vector<int64_t>& StridedExprBuilder::shapeOf(const ir::Value* v) {
  auto it = shapes_.find(v);
  if (it != shapes_.end()) return it->second;
  std::vector<int64_t> s;
  for (const auto& a : v->axes()) s.push_back(a.extent.evaluate(sizes_));
  return shapes_[v] = s;
}

EPtr StridedExprBuilder::exprOf(const ir::Value* v) {
  auto it = memo_.find(v);
  if (it != memo_.end()) return it->second;
  EPtr e = build(v);
  memo_[v] = e;
  return e;
}

EPtr StridedExprBuilder::build(const ir::Value* v) {
  const int rank = v->rank();
  if (v->isInput()) {
    int idx = 0;
    while (f_.inputs()[static_cast<size_t>(idx)] != v) ++idx;
    const TensorDesc& d = inputs_[static_cast<size_t>(idx)];
    Leaf l{idx, 0, d.strides};
    for (int a = 0; a < rank; ++a)
      if (v->axis(static_cast<size_t>(a)).broadcast || d.shape[static_cast<size_t>(a)] == 1)
        l.strides[static_cast<size_t>(a)] = 0;
    ENode n{.kind = ENode::Kind::Load, .dtype = v->dtype()};
    n.leaf = l;
    return node(std::move(n));
  }
  const ir::Op* op = v->definition();
  auto family = op->family();
  auto operand = [&](size_t i) { return exprOf(op->input(i)); };
  if (ir::isPointwise(op->kind())) {
    ENode n{.kind = ENode::Kind::Op, .dtype = v->dtype(), .op = op->kind()};
    n.origin = op;
    for (size_t i = 0; i < op->inputs().size(); ++i) {
      EPtr a = operand(i);
      if (op->input(i)->rank() == 0 && rank > 0)  // a scalar stretched to every element
        a = mapLeaves(a, [&](const Leaf& l) {
          return Leaf{l.input, l.offset, std::vector<int64_t>(static_cast<size_t>(rank), 0)};
        });
      n.args.push_back(a);
    }
    return node(std::move(n));
  }
  switch (family) {
    case OpFamily::Constant:
    case OpFamily::Full: {
      const auto& a = op->attr<ir::ScalarAttrs>();
      ENode n{.kind = ENode::Kind::Const, .dtype = a.dtype};
      n.value = roundTo(a.dtype, a.value);
      return node(std::move(n));
    }
    case OpFamily::Iota:
    case OpFamily::Random: {
      ENode idx{.kind = ENode::Kind::Index, .dtype = DType::I64};
      idx.leaf = Leaf{-1, 0, indexStrides(*op, shapeOf(v))};
      if (family == OpFamily::Iota) return indexOpExpr(*op, node(std::move(idx)), nullptr, nullptr);
      auto every = [&](size_t i) {  // the seed or offset, every element's
        return mapLeaves(operand(i), [&](const Leaf& l) {
          return Leaf{l.input, l.offset, std::vector<int64_t>(static_cast<size_t>(rank), 0)};
        });
      };
      return indexOpExpr(*op, node(std::move(idx)), every(0), every(1));
    }
    case OpFamily::Broadcast: {
      const auto& is_new = op->attr<ir::BroadcastAttrs>().is_new;
      return mapLeaves(operand(0), [&](const Leaf& l) {
        Leaf r{l.input, l.offset, {}};
        size_t src = 0;
        for (bool b : is_new) r.strides.push_back(b ? 0 : l.strides[src++]);
        return r;
      });
    }
    case OpFamily::Permute: {
      const auto& p = op->attr<ir::DimsAttrs>().dims;
      return mapLeaves(operand(0), [&](const Leaf& l) {
        Leaf r{l.input, l.offset, {}};
        for (int d : p) r.strides.push_back(l.strides[static_cast<size_t>(d)]);
        return r;
      });
    }
    case OpFamily::Squeeze: {
      const auto& dims = op->attr<ir::DimsAttrs>().dims;
      return mapLeaves(operand(0), [&](const Leaf& l) {
        Leaf r{l.input, l.offset, {}};
        for (size_t d = 0; d < l.strides.size(); ++d)
          if (std::find(dims.begin(), dims.end(), static_cast<int>(d)) == dims.end())
            r.strides.push_back(l.strides[d]);
        return r;
      });
    }
    case OpFamily::Unsqueeze: {
      int dim = op->attr<ir::DimsAttrs>().dims[0];
      return mapLeaves(operand(0), [&](const Leaf& l) {
        Leaf r = l;
        r.strides.insert(r.strides.begin() + dim, 0);
        return r;
      });
    }
    case OpFamily::Slice: {
      const auto& a = op->attr<ir::SliceAttrs>();
      std::vector<int64_t> starts;
      for (const auto& s : a.starts) starts.push_back(s.evaluate(sizes_));
      return mapLeaves(operand(0), [&](const Leaf& l) {
        Leaf r = l;
        for (size_t d = 0; d < starts.size(); ++d) r.offset += starts[d] * l.strides[d];
        return r;
      });
    }
    case OpFamily::Reshape: {
      const auto& in_shape = shapeOf(op->input(0));
      const auto& out_shape = shapeOf(v);
      std::vector<Extent> ie, oe;
      for (auto s : in_shape) ie.push_back(Extent(s));
      for (auto s : out_shape) oe.push_back(Extent(s));
      auto groups = ir::reshapeGroups(ie, oe);
      return mapLeaves(operand(0), [&](const Leaf& l) {
        return reshapeLeaf(l, in_shape, out_shape, groups, op);
      });
    }
    case OpFamily::Concat:
      throw NotPointwise{fmt::format("`{}` ({}) is read by another op of the kernel: a concat is written as "
                                     "an output, and its readers take it from memory", op->name(), v->name())};
    default:
      throw NotPointwise{fmt::format("`{}` ({} = {}(...)) is a reduction", op->name(),
                                     v->name(), op->name())};
  }
}

}  // namespace loom::lower
