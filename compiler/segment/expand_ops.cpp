#include "compiler/segment/expand_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace loom::segment {

namespace {

class Expander {
 public:
  Expander(const ir::Fusion& f, const Bindings& sizes)
      : f_(f), sizes_(sizes), g_(std::make_unique<ir::Fusion>(f.name())) {
    for (const ir::Value* v : f.values()) names_.insert(v->name());
  }

  std::unique_ptr<ir::Fusion> run() {
    for (const ir::Value* v : f_.inputs()) map_[v] = g_->addInput(v->name(), v->dtype(), v->axes());
    for (const ir::Op* op : f_.ops()) {
      std::vector<const ir::Value*> args;
      for (const ir::Value* v : op->inputs()) args.push_back(map_.at(v));
      if (op->family() == ir::OpFamily::ArgReduce) {
        map_[op->output()] = argReduction(op, args[0]);
        continue;
      }
      if (op->family() == ir::OpFamily::Gather) {
        map_[op->output()] = gather(op, args[0], args[1]);
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

  const ir::Value* argReduction(const ir::Op* op, const ir::Value* x) {
    const int d = op->attr<ir::ReduceAttrs>().dims.at(0);
    const ir::Axis& along = x->axis(d);
    const int64_t extent = along.broadcast ? 1 : along.extent.evaluate(sizes_);
    const DType t = x->dtype();
    const bool narrow = t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::I32;
    return narrow && extent <= kLowWord + 1 ? packed(op, x) : twoReductions(op, x);
  }

  // One reduction of i64 keys: the element's order as a 32-bit integer above its index (reversed
  // for argmax, so that the first of equal values is the largest key). It needs no row on chip.
  const ir::Value* packed(const ir::Op* op, const ir::Value* x) {
    using ir::OpKind;
    const auto& a = op->attr<ir::ReduceAttrs>();
    const int d = a.dims.at(0);
    const std::string base = op->output()->name();
    const bool largest = op->kind() == OpKind::ArgMax;
    const ir::Value* order = nullptr;
    if (x->dtype() == DType::I32) {
      order = cast(x, DType::I64, base + "_order");
    } else {
      // In 32-bit integers, which cost the GPU one instruction each where i64 costs two
      // (docs/performance.md#arg-keys).
      const ir::Value* f = x->dtype() == DType::F32 ? x : cast(x, DType::F32, base + "_f32");
      const ir::Value* bits = add(OpKind::Bitcast, {f}, ir::CastAttrs{DType::I32}, fresh(base + "_bits"));
      // A negative float's bits grow with its magnitude: INT32_MIN - bits orders them as it does,
      // and gives -0 the 0 of 0, its equal.
      const ir::Value* neg = add(OpKind::Lt, {bits, constant(0, DType::I32, base + "_i32_zero")}, ir::NoAttrs{},
                                 fresh(base + "_negative"));
      const ir::Value* mirrored = add(OpKind::Sub, {constant(-2147483648.0, DType::I32, base + "_mirror"), bits},
                                      ir::NoAttrs{}, fresh(base + "_mirrored"));
      const ir::Value* ordered = add(OpKind::Where, {neg, mirrored, bits}, ir::NoAttrs{}, fresh(base + "_ordered"));
      // A NaN is the extreme either way (torch.argmax), past every number's order.
      const ir::Value* nan = add(OpKind::IsNan, {f}, ir::NoAttrs{}, fresh(base + "_nan"));
      const ir::Value* top = constant(largest ? 2147483647.0 : -2147483648.0, DType::I32, base + "_nan_order");
      order = cast(add(OpKind::Where, {nan, top, ordered}, ir::NoAttrs{}, fresh(base + "_order32")), DType::I64,
                   base + "_order");
    }
    const ir::Value* at = iota(x, d, base);
    const ir::Value* low_word = constant(static_cast<double>(kLowWord), DType::I64, base + "_low_word");
    const ir::Value* low = largest ? add(OpKind::Sub, {low_word, at}, ir::NoAttrs{}, fresh(base + "_reversed")) : at;
    const ir::Value* high = add(OpKind::Mul, {order, constant(static_cast<double>(kLowWord) + 1, DType::I64, base + "_shift")},
                                ir::NoAttrs{}, fresh(base + "_high"));
    // The low word of `high` is 0: an or joins them without a carry.
    const ir::Value* key = add(OpKind::Or, {high, low}, ir::NoAttrs{}, fresh(base + "_key"));
    const ir::Value* best = add(largest ? OpKind::ReduceMax : OpKind::ReduceMin, {key}, ir::ReduceAttrs{{d}, a.keepdim, 0},
                                fresh(base + "_best"));
    names_.insert(base);
    if (!largest) return add(OpKind::And, {best, low_word}, ir::NoAttrs{}, base);
    const ir::Value* back = add(OpKind::And, {best, low_word}, ir::NoAttrs{}, fresh(base + "_low"));
    return add(OpKind::Sub, {low_word, back}, ir::NoAttrs{}, base);
  }

  // The extreme, then the smallest index that holds it: where keys do not fit (f64, i64 and rows
  // past the low word), a row the normalization scheduler keeps on chip between the two.
  const ir::Value* twoReductions(const ir::Op* op, const ir::Value* x) {
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
    const ir::Value* at = iota(x, d, base);
    // Past every index a tensor can have, and exact in the double a constant is held in.
    const ir::Value* never = constant(std::ldexp(1.0, 62), DType::I64, base + "_none");
    const ir::Value* cand = add(ir::OpKind::Where, {take, at, never}, ir::NoAttrs{}, fresh(base + "_candidate"));
    names_.insert(base);
    return add(ir::OpKind::ReduceMin, {cand}, ir::ReduceAttrs{{d}, a.keepdim, 0}, base);
  }

  // x's element at each index: the largest of x where an iota along d equals the index and the
  // dtype's lowest value elsewhere, over d (a masked reduction over [.., x's d, index's d, ..]).
  // Exact, -0 and NaN included; an index outside the dim meets nothing and gives that lowest value.
  const ir::Value* gather(const ir::Op* op, const ir::Value* x, const ir::Value* index) {
    using ir::OpKind;
    const int d = op->attr<ir::DimsAttrs>().dims.at(0);
    const int r = x->rank();
    const std::string base = op->output()->name();
    const bool truth = x->dtype() == DType::Bool;
    const ir::Value* xv = truth ? cast(x, DType::I32, base + "_i32") : x;
    const ir::Value* spread = add(OpKind::Unsqueeze, {xv}, ir::DimsAttrs{{d + 1}}, fresh(base + "_source"));
    const ir::Value* i64 = index->dtype() == DType::I64 ? index : cast(index, DType::I64, base + "_index64");
    const ir::Value* picks = nullptr;
    if (op->kind() == OpKind::Gather) {
      picks = add(OpKind::Unsqueeze, {i64}, ir::DimsAttrs{{d}}, fresh(base + "_picks"));
    } else {
      picks = alongOnly(i64, r + 1, d + 1, base + "_picks");
    }
    const ir::Axis& along = x->axis(d);
    const ir::Value* at = add(OpKind::Iota, {}, ir::ScalarAttrs{0, DType::I64, {along.broadcast ? Extent(1) : along.extent}, 0},
                              fresh(base + "_positions"));
    at = alongOnly(at, r + 1, d, base + "_position");
    const ir::Value* hit = add(OpKind::Eq, {at, picks}, ir::NoAttrs{}, fresh(base + "_hit"));
    const DType t = xv->dtype();
    const double lowest = truth ? 0.0
                          : isFloat(t) ? -std::numeric_limits<double>::infinity()
                          : t == DType::I32 ? -2147483648.0 : -9223372036854775808.0;
    const ir::Value* none = constant(lowest, t, base + "_lowest");
    const ir::Value* cand = add(OpKind::Where, {hit, spread, none}, ir::NoAttrs{}, fresh(base + "_candidate"));
    names_.insert(base);
    if (!truth) return add(OpKind::ReduceMax, {cand}, ir::ReduceAttrs{{d}, false, 0}, base);
    const ir::Value* picked = add(OpKind::ReduceMax, {cand}, ir::ReduceAttrs{{d}, false, 0}, fresh(base + "_picked"));
    return add(OpKind::Cast, {picked}, ir::CastAttrs{DType::Bool}, base);
  }

  // A 1-d value as the axis `at` of `rank`, every other axis a broadcast one.
  const ir::Value* alongOnly(const ir::Value* v, int rank, int at, const std::string& name) {
    std::vector<bool> is_new(static_cast<size_t>(rank), true);
    is_new[static_cast<size_t>(at)] = false;
    return add(ir::OpKind::Broadcast, {v}, ir::BroadcastAttrs{is_new}, fresh(name));
  }

  // Each element's index along d, in x's shape.
  const ir::Value* iota(const ir::Value* x, int d, const std::string& base) {
    std::vector<Extent> shape;
    for (int i = 0; i < x->rank(); ++i) shape.push_back(x->axis(i).broadcast ? Extent(1) : x->axis(i).extent);
    return add(ir::OpKind::Iota, {}, ir::ScalarAttrs{0, DType::I64, shape, d}, fresh(base + "_index"));
  }
  const ir::Value* constant(double v, DType t, const std::string& name) {
    return add(ir::OpKind::Constant, {}, ir::ScalarAttrs{v, t, {}}, fresh(name));
  }
  const ir::Value* cast(const ir::Value* x, DType to, const std::string& name) {
    return add(ir::OpKind::Cast, {x}, ir::CastAttrs{to}, fresh(name));
  }

  // An index in the key's low 32 bits.
  static constexpr int64_t kLowWord = 4294967295;

  const ir::Fusion& f_;
  const Bindings& sizes_;
  std::unique_ptr<ir::Fusion> g_;
  std::set<std::string> names_;
  std::map<const ir::Value*, const ir::Value*> map_;
};

}  // namespace

std::unique_ptr<ir::Fusion> expandOps(const ir::Fusion& f, const Bindings& sizes) {
  const auto ops = f.ops();
  if (std::none_of(ops.begin(), ops.end(), [](const ir::Op* op) {
        return op->family() == ir::OpFamily::ArgReduce || op->family() == ir::OpFamily::Gather;
      }))
    return nullptr;
  return Expander(f, sizes).run();
}

}  // namespace loom::segment
