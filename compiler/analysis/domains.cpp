#include "compiler/analysis/domains.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "ir/error.h"
#include "ir/reshape_groups.h"

namespace loom::analysis {

namespace {

class UnionFind {
 public:
  int add() {
    parent_.push_back(static_cast<int>(parent_.size()));
    return parent_.back();
  }
  int find(int x) {
    while (parent_[static_cast<size_t>(x)] != x) x = parent_[static_cast<size_t>(x)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
    return x;
  }
  void unite(int a, int b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
  }

 private:
  std::vector<int> parent_;
};

// Unites the domains that op `op` says are the same (its operands' and outputs' axes that line
// up), records reshapes' splits and merges as definitions, and the domains a reduction reduces.
struct DomainState {
  UnionFind& uf;
  std::vector<std::vector<int>>& dom;
  std::vector<std::pair<int, std::vector<int>>>& defs;
  std::vector<std::string>& conflicts;
  std::vector<int>& reduced;
};

void uniteOp(const ir::Op* op, DomainState st) {
  UnionFind& uf = st.uf;
  auto& defs = st.defs;
  auto& conflicts_ = st.conflicts;
  auto d = [&](const ir::Value* v, int axis) { return st.dom[static_cast<size_t>(v->id())][static_cast<size_t>(axis)]; };
  auto same = [&](const ir::Value* a, int ia, const ir::Value* b, int ib) {
    if (d(a, ia) >= 0 && d(b, ib) >= 0) uf.unite(d(a, ia), d(b, ib));
  };
  const ir::Value* out = op->outputs().empty() ? nullptr : op->output();
  switch (op->family()) {
    case ir::OpFamily::Broadcast: {
      int src = 0;
      const auto& is_new = op->attr<ir::BroadcastAttrs>().is_new;
      for (size_t i = 0; i < is_new.size(); ++i)
        if (!is_new[i]) same(out, static_cast<int>(i), op->input(0), src++);
      break;
    }
    case ir::OpFamily::Permute: {
      const auto& p = op->attr<ir::DimsAttrs>().dims;
      for (size_t i = 0; i < p.size(); ++i) same(out, static_cast<int>(i), op->input(0), p[i]);
      break;
    }
    case ir::OpFamily::Squeeze: {
      const auto& dims = op->attr<ir::DimsAttrs>().dims;
      int o = 0;
      for (int i = 0; i < op->input(0)->rank(); ++i)
        if (std::find(dims.begin(), dims.end(), i) == dims.end()) same(out, o++, op->input(0), i);
      break;
    }
    case ir::OpFamily::Unsqueeze: {
      int dim = op->attr<ir::DimsAttrs>().dims[0];
      for (int i = 0; i < op->input(0)->rank(); ++i) same(out, i < dim ? i : i + 1, op->input(0), i);
      break;
    }
    case ir::OpFamily::Concat: {  // every dim but the joined one is each piece's
      const int dim = op->attr<ir::DimsAttrs>().dims.at(0);
      for (const ir::Value* in : op->inputs())
        for (int i = 0; i < out->rank(); ++i)
          if (i != dim) same(out, i, in, i);
      break;
    }
    case ir::OpFamily::Slice:
      for (int i = 0; i < out->rank(); ++i)
        if (out->axis(static_cast<size_t>(i)) == op->input(0)->axis(static_cast<size_t>(i))) same(out, i, op->input(0), i);
      break;
    case ir::OpFamily::Reshape: {
      auto groups = ir::reshapeGroups(op->input(0)->shape(), out->shape());
      for (const auto& g : groups) {
        std::vector<int> ins, outs;
        for (int i = g.in_begin; i < g.in_end; ++i)
          if (!op->input(0)->axis(static_cast<size_t>(i)).extent.isOne()) ins.push_back(d(op->input(0), i));
        for (int o = g.out_begin; o < g.out_end; ++o)
          if (!out->axis(static_cast<size_t>(o)).extent.isOne()) outs.push_back(d(out, o));
        if (std::count(ins.begin(), ins.end(), -1) || std::count(outs.begin(), outs.end(), -1)) continue;
        if (ins.size() == 1 && outs.size() == 1) uf.unite(ins[0], outs[0]);
        else if (ins.size() == 1 && outs.size() > 1) defs.push_back({ins[0], outs});
        else if (outs.size() == 1 && ins.size() > 1) defs.push_back({outs[0], ins});
        else if (!ins.empty())
          conflicts_.push_back(fmt::format("reshape `{}` splits and merges dims {}..{} at once",
                                           out->name(), g.in_begin, g.in_end - 1));
      }
      break;
    }
    case ir::OpFamily::Reduce:
    case ir::OpFamily::VarMean: {
      const auto& a = op->attr<ir::ReduceAttrs>();
      const ir::Value* in = op->input(0);
      for (const ir::Value* o : op->outputs()) {
        int oi = 0;
        for (int i = 0; i < in->rank(); ++i) {
          bool red = std::find(a.dims.begin(), a.dims.end(), i) != a.dims.end();
          if (!red) same(o, oi, in, i);
          if (!red || a.keepdim) ++oi;
        }
      }
      for (int i : a.dims)
        if (d(in, i) >= 0) st.reduced.push_back(d(in, i));
      break;
    }
    case ir::OpFamily::Constant:
    case ir::OpFamily::Full:
      break;
    default:  // pointwise: operands of full rank line up with the output
      for (const ir::Value* in : op->inputs())
        if (in->rank() == out->rank())
          for (int i = 0; i < out->rank(); ++i) same(out, i, in, i);
  }
}

// What no op says is the same but lines up iterates one space: inputs of one type (an LSTM cell's
// cx and cy, where no op joins them) and, in parts of the fusion that share no value, reductions
// of one shape and reduced dims (the dw and db sums of two split partials; column sums of two
// inputs) have their axes united position by position. Returns whether any were.
bool alignIndependentParts(const ir::Fusion& f, UnionFind& uf, const std::vector<std::vector<int>>& dom) {
  UnionFind parts;  // over value ids: valueParts, then the parts aligned here
  const std::vector<int> part = valueParts(f);
  for (size_t i = 0; i < part.size(); ++i) parts.add();
  for (size_t i = 0; i < part.size(); ++i) parts.unite(static_cast<int>(i), part[i]);
  bool united = false;
  auto align = [&](const ir::Value* a, const ir::Value* b) {
    const auto& da = dom[static_cast<size_t>(a->id())];
    const auto& db = dom[static_cast<size_t>(b->id())];
    for (size_t i = 0; i < da.size(); ++i)
      if (da[i] >= 0 && db[i] >= 0 && uf.find(da[i]) != uf.find(db[i])) {
        uf.unite(da[i], db[i]);
        united = true;
      }
    parts.unite(a->id(), b->id());
  };
  // Inputs: also within one part, where ops joined only some of their dims (cx and cy reach the
  // gates' slices of one workspace, whose sliced dim no op unites).
  const auto& ins = f.inputs();
  for (size_t i = 0; i < ins.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (ins[i]->rank() > 0 && ins[j]->axes() == ins[i]->axes()) align(ins[j], ins[i]);
  std::vector<const ir::Op*> seen;
  for (const ir::Op* op : f.ops()) {
    if (op->family() != ir::OpFamily::Reduce && op->family() != ir::OpFamily::VarMean) continue;
    for (const ir::Op* o : seen)
      if (o->attr<ir::ReduceAttrs>().dims == op->attr<ir::ReduceAttrs>().dims && o->input(0)->axes() == op->input(0)->axes() &&
          parts.find(o->input(0)->id()) != parts.find(op->input(0)->id()))
        align(o->input(0), op->input(0));
    seen.push_back(op);
  }
  return united;
}

}  // namespace

std::vector<int> valueParts(const ir::Fusion& f) {
  UnionFind parts;
  for (size_t i = 0; i < f.values().size(); ++i) parts.add();
  for (const ir::Op* op : f.ops()) {
    std::vector<const ir::Value*> vs(op->inputs().begin(), op->inputs().end());
    vs.insert(vs.end(), op->outputs().begin(), op->outputs().end());
    for (size_t i = 1; i < vs.size(); ++i) parts.unite(vs[0]->id(), vs[i]->id());
  }
  std::vector<int> out;
  for (size_t i = 0; i < f.values().size(); ++i) out.push_back(parts.find(static_cast<int>(i)));
  return out;
}

std::shared_ptr<const DomainAnalysis> domainsOf(const ir::Fusion& f) {
  return std::static_pointer_cast<const DomainAnalysis>(
      f.derived("domains", [&] { return std::make_shared<const DomainAnalysis>(f); }));
}

DomainAnalysis::DomainAnalysis(const ir::Fusion& f) {
  // Parts aligned only where that leaves every tensor on the atoms (no new conflict).
  if (build(f, /*align=*/true) && !conflicts_.empty()) {
    atoms_.clear();
    axis_atoms_.clear();
    reduced_.clear();
    conflicts_.clear();
    build(f, /*align=*/false);
  }
}

bool DomainAnalysis::build(const ir::Fusion& f, bool align) {
  UnionFind uf;
  std::vector<Extent> extent;                  // per domain
  std::vector<std::vector<int>> dom;           // [value id][axis] -> domain, -1 for broadcast
  std::vector<std::pair<int, std::vector<int>>> defs;  // domain == product of parts (outer->inner)
  auto values = f.values();
  dom.resize(values.size());
  for (const ir::Value* v : values) {
    for (const auto& a : v->axes()) {
      if (a.broadcast) {
        dom[static_cast<size_t>(v->id())].push_back(-1);
        continue;
      }
      dom[static_cast<size_t>(v->id())].push_back(uf.add());
      extent.push_back(a.extent);
    }
  }
  auto d = [&](const ir::Value* v, int axis) { return dom[static_cast<size_t>(v->id())][static_cast<size_t>(axis)]; };
  reduced_.resize(f.ops().size());
  std::vector<std::vector<int>> reduced_domains(f.ops().size());
  for (const ir::Op* op : f.ops())
    uniteOp(op, {uf, dom, defs, conflicts_, reduced_domains[static_cast<size_t>(op->id())]});
  const bool aligned = align && alignIndependentParts(f, uf, dom);

  // Atoms: a class with a definition expands into its parts' atoms; every definition of a
  // class must expand to the same atoms.
  std::map<int, std::vector<std::vector<int>>> class_defs;
  for (auto& [whole, parts] : defs) class_defs[uf.find(whole)].push_back(parts);
  std::map<int, std::vector<int>> expanded;  // class -> atom classes
  std::set<int> active;
  std::function<std::vector<int>(int)> expand = [&](int c) -> std::vector<int> {
    c = uf.find(c);
    if (auto it = expanded.find(c); it != expanded.end()) return it->second;
    if (active.count(c)) {
      conflicts_.push_back(fmt::format("a domain of extent {} is defined through itself", extent[static_cast<size_t>(c)].str()));
      return {c};
    }
    active.insert(c);
    std::vector<int> result = {c};
    auto it = class_defs.find(c);
    if (it != class_defs.end()) {
      bool first = true;
      for (const auto& parts : it->second) {
        std::vector<int> e;
        for (int p : parts)
          for (int a : expand(p)) e.push_back(a);
        if (first) result = e;
        else if (e != result)
          conflicts_.push_back(fmt::format("the domain of extent {} is split two incompatible ways",
                                           extent[static_cast<size_t>(c)].str()));
        first = false;
      }
    }
    active.erase(c);
    return expanded[c] = result;
  };
  std::map<int, int> atom_index;  // atom class -> index in atoms_
  std::map<std::string, int> name_count;
  auto atomIndex = [&](int cls) {
    auto it = atom_index.find(cls);
    if (it != atom_index.end()) return it->second;
    Atom a{extent[static_cast<size_t>(cls)], extent[static_cast<size_t>(cls)].str()};
    if (int n = name_count[a.name]++; n > 0) a.name += fmt::format("#{}", n + 1);
    atoms_.push_back(a);
    return atom_index[cls] = static_cast<int>(atoms_.size()) - 1;
  };
  axis_atoms_.resize(values.size());
  for (const ir::Value* v : values) {
    for (int i = 0; i < v->rank(); ++i) {
      std::vector<int> as;
      if (d(v, i) >= 0)
        for (int c : expand(d(v, i))) as.push_back(atomIndex(uf.find(c)));
      axis_atoms_[static_cast<size_t>(v->id())].push_back(as);
    }
  }
  // A value with one atom on two of its axes (x + x^T unites x's dims): strides over atoms
  // cannot say where its elements are, so no kernel of one iteration space reads it.
  for (const ir::Value* v : values) {
    std::map<int, int> axis_of;
    for (int i = 0; i < v->rank(); ++i)
      for (int a : axis_atoms_[static_cast<size_t>(v->id())][static_cast<size_t>(i)])
        if (auto [it, fresh] = axis_of.emplace(a, i); !fresh && it->second != i) {
          conflicts_.push_back(fmt::format("`{}` has the same domain (extent {}) on dims {} and {} (a value "
                                           "combined with its own permute): its elements are not one point each "
                                           "of an iteration space", v->name(), atoms_[static_cast<size_t>(a)].name,
                                           it->second, i));
          break;
        }
  }
  for (const ir::Op* op : f.ops()) {
    std::set<int> s;
    for (int dm : reduced_domains[static_cast<size_t>(op->id())])
      for (int c : expand(dm)) s.insert(atomIndex(uf.find(c)));
    reduced_[static_cast<size_t>(op->id())] = {s.begin(), s.end()};
  }
  return aligned;
}

const std::vector<int>& DomainAnalysis::axisAtoms(const ir::Value* v, int axis) const {
  return axis_atoms_.at(static_cast<size_t>(v->id())).at(static_cast<size_t>(axis));
}

std::vector<int> DomainAnalysis::valueAtoms(const ir::Value* v) const {
  std::vector<int> out;
  for (const auto& as : axis_atoms_.at(static_cast<size_t>(v->id())))
    out.insert(out.end(), as.begin(), as.end());
  return out;
}

std::vector<int> DomainAnalysis::reducedAtoms(const ir::Op* op) const {
  return reduced_.at(static_cast<size_t>(op->id()));
}

std::string DomainAnalysis::atomSetStr(const std::vector<int>& atoms) const {
  std::vector<std::string> n;
  for (int a : atoms) n.push_back(atoms_[static_cast<size_t>(a)].name);
  return fmt::format("{{{}}}", fmt::join(n, ", "));
}

std::vector<int64_t> DomainAnalysis::atomStrides(const ir::Value* v, const std::vector<int64_t>& strides,
                                                 const Bindings& sizes) const {
  std::vector<int64_t> out(atoms_.size(), 0);
  for (int i = 0; i < v->rank(); ++i) {
    const auto& as = axisAtoms(v, i);
    int64_t acc = strides[static_cast<size_t>(i)];
    for (size_t k = as.size(); k-- > 0;) {
      out[static_cast<size_t>(as[k])] = acc;
      acc *= atoms_[static_cast<size_t>(as[k])].extent.evaluate(sizes);
    }
  }
  return out;
}

std::vector<int> DomainAnalysis::memoryOrder(const ir::Value* input,
                                             const std::vector<int64_t>& strides,
                                             const Bindings& sizes) const {
  auto st = atomStrides(input, strides, sizes);
  std::vector<std::pair<int64_t, int>> s;
  for (int a : valueAtoms(input)) s.push_back({st[static_cast<size_t>(a)], a});
  std::stable_sort(s.begin(), s.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<int> out;
  for (auto& p : s) out.push_back(p.second);
  return out;
}

std::string DomainAnalysis::str(const ir::Fusion& f) const {
  std::string s = "atoms:";
  for (const auto& a : atoms_) s += fmt::format(" {}", a.name);
  s += "\n";
  for (const auto& c : conflicts_) s += "conflict: " + c + "\n";
  for (const ir::Op* op : f.ops())
    if (ir::isReduction(op->kind()))
      s += fmt::format("reduction `{}` ({}) reduces {}\n", op->name(), op->output()->name(),
                       atomSetStr(reducedAtoms(op)));
  for (const ir::Value* v : f.values()) {
    std::vector<std::string> axes;
    for (int i = 0; i < v->rank(); ++i) {
      const auto& as = axisAtoms(v, i);
      if (as.empty()) {
        axes.push_back("1b");
        continue;
      }
      std::vector<std::string> n;
      for (int a : as) n.push_back(atoms_[static_cast<size_t>(a)].name);
      axes.push_back(as.size() == 1 ? n[0] : fmt::format("({})", fmt::join(n, " ")));
    }
    s += fmt::format("  {:<10} {:<28} [{}]\n", v->name(), v->typeString(), fmt::join(axes, ", "));
  }
  return s;
}

}  // namespace loom::analysis
