#include "compiler/segment/arg_reductions.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace loom::segment {

namespace {

class Expander {
 public:
  explicit Expander(const ir::Fusion& f) : f_(f), g_(std::make_unique<ir::Fusion>(f.name())) {
    for (const ir::Value* v : f.values()) names_.insert(v->name());
  }

  std::unique_ptr<ir::Fusion> run() {
    for (const ir::Value* v : f_.inputs()) map_[v] = g_->addInput(v->name(), v->dtype(), v->axes());
    for (const ir::Op* op : f_.ops()) {
      std::vector<const ir::Value*> args;
      for (const ir::Value* v : op->inputs()) args.push_back(map_.at(v));
      if (op->family() == ir::OpFamily::ArgReduce) {
        map_[op->output()] = expand(op, args[0]);
        continue;
      }
      std::vector<std::string> outs;
      for (const ir::Value* o : op->outputs()) outs.push_back(o->name());
      const ir::Op* c = g_->addOp(op->kind(), args, op->attrs(), outs);
      for (size_t i = 0; i < op->outputs().size(); ++i) map_[op->output(i)] = c->output(i);
    }
    for (const auto& o : f_.outputs())
      g_->addOutput(o.name, map_.at(o.value), o.alias ? map_.at(o.alias) : nullptr);
    g_->markFinished();
    return std::move(g_);
  }

 private:
  // A name no value of the fusion has, after `base`.
  std::string fresh(const std::string& base) {
    std::string n = base;
    while (names_.count(n)) n += "_";
    names_.insert(n);
    return n;
  }
  const ir::Value* add(ir::OpKind k, std::vector<const ir::Value*> in, ir::Attrs a, const std::string& name) {
    return g_->addOp(k, std::move(in), std::move(a), {name})->output();
  }

  const ir::Value* expand(const ir::Op* op, const ir::Value* x) {
    const auto& a = op->attr<ir::ReduceAttrs>();
    const int d = a.dims.at(0);
    const std::string base = op->output()->name();
    const bool largest = op->kind() == ir::OpKind::ArgMax;
    const ir::Value* m = add(largest ? ir::OpKind::ReduceMax : ir::OpKind::ReduceMin, {x},
                             ir::ReduceAttrs{{d}, true, 0}, fresh(base + "_extreme"));
    const ir::Value* take = add(ir::OpKind::Eq, {x, m}, ir::NoAttrs{}, fresh(base + "_hit"));
    if (isFloat(x->dtype())) {
      const ir::Value* nan = add(ir::OpKind::IsNan, {x}, ir::NoAttrs{}, fresh(base + "_nan"));
      take = add(ir::OpKind::Or, {take, nan}, ir::NoAttrs{}, fresh(base + "_take"));
    }
    std::vector<Extent> shape;
    for (int i = 0; i < x->rank(); ++i) shape.push_back(x->axis(i).broadcast ? Extent(1) : x->axis(i).extent);
    const ir::Value* at = add(ir::OpKind::Iota, {}, ir::ScalarAttrs{0, DType::I64, shape, d}, fresh(base + "_index"));
    // Past every index a tensor can have, and exact in the double a constant is held in.
    const ir::Value* never = add(ir::OpKind::Constant, {}, ir::ScalarAttrs{std::ldexp(1.0, 62), DType::I64, {}},
                                 fresh(base + "_none"));
    const ir::Value* cand = add(ir::OpKind::Where, {take, at, never}, ir::NoAttrs{}, fresh(base + "_candidate"));
    names_.insert(base);
    return add(ir::OpKind::ReduceMin, {cand}, ir::ReduceAttrs{{d}, a.keepdim, 0}, base);
  }

  const ir::Fusion& f_;
  std::unique_ptr<ir::Fusion> g_;
  std::set<std::string> names_;
  std::map<const ir::Value*, const ir::Value*> map_;
};

}  // namespace

std::unique_ptr<ir::Fusion> expandArgReductions(const ir::Fusion& f) {
  const auto& ops = f.ops();
  if (std::none_of(ops.begin(), ops.end(), [](const ir::Op* op) { return op->family() == ir::OpFamily::ArgReduce; }))
    return nullptr;
  return Expander(f).run();
}

}  // namespace loom::segment
