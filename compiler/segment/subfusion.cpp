#include "compiler/segment/subfusion.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "ir/error.h"

namespace loom::segment {

SubFusion extractSegment(const ir::Fusion& f, const std::vector<const ir::Op*>& ops,
                         const std::string& name, const std::set<const ir::Op*>& pending,
                         const std::set<const ir::Op*>& recomputed, const std::set<const ir::Op*>* live) {
  SubFusion s;
  s.fusion = std::make_shared<ir::Fusion>(name);
  std::set<const ir::Op*> in_seg(ops.begin(), ops.end());
  std::map<const ir::Value*, const ir::Value*> map;  // original -> copy
  std::function<const ir::Value*(const ir::Value*)> get = [&](const ir::Value* v) -> const ir::Value* {
    auto it = map.find(v);
    if (it != map.end()) return it->second;
    const ir::Op* def = v->definition();
    if (def && def->inputs().empty() && !in_seg.count(def)) {  // a constant: copy it here
      const ir::Op* c = s.fusion->addOp(def->kind(), {}, def->attrs(), {v->name()});
      return map[v] = c->output();
    }
    const ir::Value* in = s.fusion->addInput(v->name(), v->dtype(), v->axes());
    s.inputs.push_back(v);
    return map[v] = in;
  };
  for (const ir::Op* op : ops) {
    std::vector<const ir::Value*> args;
    for (const ir::Value* v : op->inputs()) args.push_back(get(v));
    std::vector<std::string> names;
    for (const ir::Value* o : op->outputs()) names.push_back(o->name());
    const ir::Op* c = s.fusion->addOp(op->kind(), args, op->attrs(), names);
    for (size_t i = 0; i < op->outputs().size(); ++i) map[op->output(i)] = c->output(i);
  }
  // Outputs: values used by ops outside the segment, or outputs of the fusion.
  std::set<const ir::Value*> added;
  for (const ir::Op* op : ops) {
    if (recomputed.count(op)) continue;  // computed again wherever else it is read or output
    for (const ir::Value* v : op->outputs()) {
      bool used_outside = false;
      // A value only the unplaced ops read is kept as an output unless it is broadcast-shaped
      // (a cheap view its readers would recompute if they join this segment).
      bool bcast = std::any_of(v->axes().begin(), v->axes().end(), [](const auto& a) { return a.broadcast; });
      for (const ir::Op* u : f.uses(v))
        if (!live || live->count(u))
          used_outside = used_outside || (!in_seg.count(u) && (!pending.count(u) || !bcast));
      std::string out_name = v->name();
      bool is_output = false;
      for (const auto& o : f.outputs())
        if (o.value == v) {
          is_output = true;
          if (added.insert(v).second) {
            // Written back in place: keep the alias when the segment reads that input.
            auto alias = o.alias ? map.find(o.alias) : map.end();
            s.fusion->addOutput(o.name, map.at(v), alias == map.end() ? nullptr : alias->second);
            s.outputs.push_back(v);
          }
        }
      if (used_outside && !is_output && added.insert(v).second) {
        s.fusion->addOutput(out_name, map.at(v));
        s.outputs.push_back(v);
      }
    }
  }
  // Every segment shows at least its last result.
  if (s.outputs.empty() && !ops.empty()) {
    const ir::Value* v = ops.back()->output();
    s.fusion->addOutput(v->name(), map.at(v));
    s.outputs.push_back(v);
  }
  s.fusion->markFinished();  // (never changed from here: its derived facts are kept with it)
  return s;
}

}  // namespace loom::segment
