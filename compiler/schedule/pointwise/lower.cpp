#include "compiler/schedule/pointwise/lower.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "compiler/schedule/symbolic.h"

namespace loom::schedule {

namespace {

using kir::ExprP;
using kir::Type;
using lower::ENode;
using lower::Leaf;

ExprP iv(const std::string& name) { return kir::var(name, Type::idx()); }

class PointwiseLowering {
 public:
  PointwiseLowering(const ir::Fusion& f, const PointwiseKernel& k, ExprP numel) : f_(f), k_(k), numel_(std::move(numel)) {}

  // Chunk `c`'s body; with a tail, the last whole chunk's, then the tail's under the chunk after.
  kir::Body body(const std::string& c) {
    kir::Body b;
    if (!k_.tail) {
      std::vector<ExprP> idx = coords(c, b);
      lanesAt(idx, k_.vec, b);
      return b;
    }
    // The whole vectors (clamped where the verifier sees it: a whole chunk's lanes stay in the
    // axis), then the chunk after the last whole one: each element left, where there is one.
    const std::string whole = "whole_" + c;
    b.push_back(kir::let(whole, kir::index(kir::IndexOp::Div, numel_, kir::intConst(k_.vec))));
    ExprP full = kir::index(kir::IndexOp::Ult, iv(c), iv(whole));
    b.push_back(kir::let("full_" + c, full));
    kir::Body vec_body;
    vec_body.push_back(kir::let("i0_" + c, kir::mul(kir::select(kir::var("full_" + c, Type::pred()), iv(c), kir::intConst(0)),
                                                    kir::intConst(k_.vec))));
    lanesAt({iv("i0_" + c)}, k_.vec, vec_body);
    b.push_back(kir::ifThen(kir::var("full_" + c, Type::pred()), "whole", std::move(vec_body)));
    kir::Body tail_body;
    for (int j = 0; j + 1 < k_.vec; ++j) {
      const std::string e = fmt::format("e{}_{}", j, c), in = fmt::format("in{}_{}", j, c);
      tail_body.push_back(kir::let(e, kir::add(kir::mul(iv(whole), kir::intConst(k_.vec)), kir::intConst(j))));
      tail_body.push_back(kir::let(in, kir::index(kir::IndexOp::Ult, iv(e), numel_)));
      kir::Body one;
      lanesAt({kir::select(kir::var(in, Type::pred()), iv(e), kir::intConst(0))}, 1, one);
      tail_body.push_back(kir::ifThen(kir::var(in, Type::pred()), "left", std::move(one)));
    }
    b.push_back(kir::ifThen(kir::index(kir::IndexOp::Eq, iv(c), iv(whole)), "tail", std::move(tail_body)));
    return b;
  }

  // The loads, values and stores of `lanes` neighbouring elements from coordinates `idx` (one
  // lane: each access of that element alone).
  void lanesAt(const std::vector<ExprP>& idx, int lanes, kir::Body& b) {
    auto one = [&](kir::Access a) { return lanes == 1 && a == kir::Access::Vector ? kir::Access::Gather : a; };
    std::vector<lower::EPtr> roots;
    for (const auto& s : k_.stores) roots.push_back(s.value);
    std::map<Leaf, std::string> loaded;
    std::map<const ENode*, ExprP> val;
    const kir::Cache cache = noalias() ? kir::Cache::Invariant : kir::Cache::Default;
    lower::visitPostOrder(roots, [&](const ENode& n) {
      if (n.kind != ENode::Kind::Load) return;
      auto it = loaded.find(n.leaf);
      if (it == loaded.end()) {
        std::string name = fmt::format("v{}", next_++);
        b.push_back(kir::let(name, kir::load(n.leaf.input, n.dtype, kir::stridedOffset(n.leaf.offset, n.leaf.strides, idx),
                                             lanes, one(k_.load_access.at(n.leaf)), n.leaf.strides.back(), cache)));
        it = loaded.emplace(n.leaf, name).first;
      }
      val[&n] = kir::var(it->second, Type::data(n.dtype, lanes));
    });
    lower::visitPostOrder(roots, [&](const ENode& n) {
      if (n.kind == ENode::Kind::Load) return;
      ExprP e;
      if (n.kind == ENode::Kind::Const) {
        e = kir::dataConst(n.dtype, n.value, lanes);
      } else if (n.kind == ENode::Kind::Index) {
        e = kir::indexLanes(kir::stridedOffset(n.leaf.offset, n.leaf.strides, idx), lanes, n.leaf.strides.back());
      } else {
        std::vector<ExprP> args;
        for (const auto& a : n.args) args.push_back(val.at(a.get()));
        e = kir::math(n.op, n.dtype, std::move(args));
      }
      std::string name = fmt::format("v{}", next_++);
      b.push_back(kir::let(name, e));
      val[&n] = kir::var(name, e->type);
    });
    for (const auto& s : k_.stores)
      b.push_back(kir::store(k_.num_inputs + s.output, kir::stridedOffset(s.offset, s.strides, idx), val.at(s.value.get()),
                             one(s.access), s.strides.back()));
  }

  bool noalias() const { return kir::noAlias(k_.output_alias); }

 private:
  // The chunk's coordinate along each collapsed axis (the innermost already times `vec`).
  std::vector<ExprP> coords(const std::string& c, kir::Body& b) {
    const auto& s = k_.iter_shape;
    const int64_t vec = k_.vec;
    std::vector<ExprP> idx(s.size());
    auto bind = [&](const std::string& name, ExprP e) {
      b.push_back(kir::let(name, std::move(e)));
      return iv(name);
    };
    const size_t r = s.size();
    if (r == 1) {
      idx[0] = bind(fmt::format("i0_{}", c), kir::mul(iv(c), kir::intConst(vec)));
      return idx;
    }
    idx[r - 1] = bind(fmt::format("i{}_{}", r - 1, c),
                      kir::mul(kir::index(kir::IndexOp::Rem, iv(c), kir::intConst(s.back() / vec)), kir::intConst(vec)));
    ExprP q = bind(fmt::format("q{}_{}", r - 1, c), kir::index(kir::IndexOp::Div, iv(c), kir::intConst(s.back() / vec)));
    for (size_t d = r - 1; d-- > 1;) {
      idx[d] = bind(fmt::format("i{}_{}", d, c), kir::index(kir::IndexOp::Rem, q, kir::intConst(s[d])));
      q = bind(fmt::format("q{}_{}", d, c), kir::index(kir::IndexOp::Div, q, kir::intConst(s[d])));
    }
    idx[0] = q;
    return idx;
  }

  const ir::Fusion& f_;
  const PointwiseKernel& k_;
  ExprP numel_;  // elements of the one axis: a constant, or of the kernel's size parameter
  int next_ = 0;
};

}  // namespace

kir::Kernel lowerPointwise(const ir::Fusion& f, const PointwiseKernel& k,
                           const std::vector<TensorDesc>& inputs) {
  kir::Kernel out;
  out.name = k.name;
  out.scheduler = "pointwise";
  const bool symbolic = !k.size_symbol.empty();
  if (symbolic) {
    out.params = paramsAtLargest(f, inputs, k.outputs, k.size_symbol, k.size_max);
    out.sizes.push_back({sizeVar(k.size_symbol), k.size_max});
  } else {
    out.params = kir::fusionParams(f, inputs, k.outputs);
  }
  // Elements a unit of a symbolic size: from the factor and the inner axes, not the size's own
  // value (which a kernel serving many sizes must not read: same_lowering.h).
  int64_t per = symbolic ? k.size_factor : k.numel();
  for (size_t d = 1; symbolic && d < k.iter_shape.size(); ++d) per *= k.iter_shape[d];
  const ExprP numel = symbolic ? kir::mul(iv(sizeVar(k.size_symbol)), kir::intConst(per)) : kir::intConst(k.numel());
  PointwiseLowering low(f, k, numel);
  out.noalias = low.noalias();
  out.index_bits = k.index64 ? 64 : 32;
  const int64_t grid = symbolic ? k.grid_max : k.grid;
  out.launch = {grid, k.block};
  // Chunk c of `chunks`: thread tid of block bid takes c = bid * block + tid, then every
  // thread of the grid on. A symbolic size: `chunks` from the kernel's parameter.
  const ExprP chunks =
      !symbolic          ? kir::intConst((k.numel() + k.vec - 1) / k.vec)
      : per % k.vec == 0 ? kir::mul(iv(sizeVar(k.size_symbol)), kir::intConst(per / k.vec))
                         : kir::index(kir::IndexOp::Div, kir::add(numel, kir::intConst(k.vec - 1)), kir::intConst(k.vec));
  kir::Body per_block = {
      kir::let("tid", kir::convert(kir::var("t", Type::i32()), Type::idx())),
      kir::let("bid", kir::convert(kir::var("b", Type::i32()), Type::idx())),
      kir::let("nblk", kir::convert(kir::special(kir::Special::NctaidX), Type::idx())),
      kir::let("start", kir::add(kir::mul(iv("bid"), kir::intConst(k.block)), iv("tid"))),
      kir::let("stride", kir::mul(iv("nblk"), kir::intConst(k.block))),
      kir::loop("c", iv("start"), kir::index(kir::IndexOp::Lt, iv("c"), chunks), iv("stride"),
                kir::Mapping::GridStride, low.body("c"), k.unroll)};
  out.body = {kir::spread("t", kir::Mapping::Threads, k.block,
                          {kir::spread("b", kir::Mapping::Blocks, grid, std::move(per_block))})};
  return out;
}

}  // namespace loom::schedule
