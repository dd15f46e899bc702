#include "compiler/segment/split_reductions.h"

#include <algorithm>
#include <map>
#include <set>

#include "compiler/analysis/domains.h"

namespace loom::segment {

namespace {

// The dims of sum `op` to reduce first, those whose atoms all lie in one of `row_sets` (another
// reduction's atoms) where the others lie outside it; empty where none splits this way.
std::vector<int> innerDims(const ir::Op* op, const analysis::DomainAnalysis& da,
                           const std::vector<std::vector<int>>& row_sets) {
  const auto& a = op->attr<ir::ReduceAttrs>();
  const std::vector<int> mine = da.reducedAtoms(op);
  for (const auto& s : row_sets) {
    if (s == mine) continue;
    std::vector<int> inner;
    bool whole = true;
    size_t outer = 0;
    for (int d : a.dims) {
      const auto& atoms = da.axisAtoms(op->input(0), d);
      const auto in = std::count_if(atoms.begin(), atoms.end(),
                                    [&](int x) { return std::find(s.begin(), s.end(), x) != s.end(); });
      if (atoms.empty()) continue;  // a broadcast dim: reduced by either step
      if (in == static_cast<long>(atoms.size())) inner.push_back(d);
      else if (in == 0) ++outer;
      else whole = false;
    }
    if (whole && !inner.empty() && outer > 0) return inner;
  }
  return {};
}

}  // namespace

std::unique_ptr<ir::Fusion> splitReductions(const ir::Fusion& f) {
  const std::shared_ptr<const analysis::DomainAnalysis> kept = analysis::domainsOf(f);
  const analysis::DomainAnalysis& da = *kept;
  if (!da.conflicts().empty()) return nullptr;
  std::vector<std::vector<int>> sets;
  for (const ir::Op* op : f.ops())
    if (ir::isReduction(op->kind())) {
      auto r = da.reducedAtoms(op);
      if (std::find(sets.begin(), sets.end(), r) == sets.end()) sets.push_back(r);
    }
  std::map<const ir::Op*, std::vector<int>> split;
  // (Sums kept in f16 or bf16 would round their first step's partials: not split.)
  for (const ir::Op* op : f.ops())
    if (op->kind() == ir::OpKind::Sum && (op->output()->dtype() == DType::F32 || op->output()->dtype() == DType::F64))
      if (auto inner = innerDims(op, da, sets); !inner.empty()) split[op] = inner;
  if (split.empty()) return nullptr;
  auto g = std::make_unique<ir::Fusion>(f.name());
  std::map<const ir::Value*, const ir::Value*> map;
  for (const ir::Value* v : f.inputs()) map[v] = g->addInput(v->name(), v->dtype(), v->axes());
  std::set<std::string> names;
  for (const ir::Value* v : f.values()) names.insert(v->name());
  // The first steps in place, the second ones (and what reads them) after every other op: the
  // segmenter grows kernels along this order, and the first steps join the rows' kernel.
  std::set<const ir::Value*> later_values;
  std::vector<const ir::Op*> later;
  auto copy = [&](const ir::Op* op, const std::vector<const ir::Value*>& args) {
    std::vector<std::string> outs;
    for (const ir::Value* o : op->outputs()) outs.push_back(o->name());
    const ir::Op* c = g->addOp(op->kind(), args, op->attrs(), outs);
    for (size_t i = 0; i < op->outputs().size(); ++i) map[op->output(i)] = c->output(i);
  };
  std::map<const ir::Op*, const ir::Value*> parts;
  for (const ir::Op* op : f.ops()) {
    const bool reads_later = std::any_of(op->inputs().begin(), op->inputs().end(),
                                         [&](const ir::Value* v) { return later_values.count(v) > 0; });
    auto it = split.find(op);
    if (it != split.end() && !reads_later) {
      std::string part = op->output()->name() + "_part";
      while (names.count(part)) part += "_";
      names.insert(part);
      ir::ReduceAttrs first{it->second, true, 0};
      parts[op] = g->addOp(ir::OpKind::Sum, {map.at(op->input(0))}, first, {part})->output();
    }
    if (it != split.end() || reads_later) {
      later.push_back(op);
      for (const ir::Value* o : op->outputs()) later_values.insert(o);
      continue;
    }
    std::vector<const ir::Value*> args;
    for (const ir::Value* v : op->inputs()) args.push_back(map.at(v));
    copy(op, args);
  }
  for (const ir::Op* op : later) {
    std::vector<const ir::Value*> args;
    auto p = parts.find(op);
    if (p != parts.end()) args = {p->second};
    else
      for (const ir::Value* v : op->inputs()) args.push_back(map.at(v));
    copy(op, args);
  }
  for (const auto& o : f.outputs()) g->addOutput(o.name, map.at(o.value), o.alias ? map.at(o.alias) : nullptr);
  g->markFinished();
  return g;
}

}  // namespace loom::segment
