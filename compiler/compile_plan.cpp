// Segmentation + compilation of every segment: the fusion as the kernels it runs as.
#include <future>
#include <map>
#include <thread>

#include "compiler/compile.h"
#include "compiler/schedule/scheduler.h"
#include "compiler/segment/segmenter.h"
#include "ir/error.h"

namespace loom {

std::vector<std::string> symbolicClassKeys(const ir::Fusion& f, const Bindings& sizes,
                                           const std::vector<TensorDesc>& inputs, const CompileOptions& opts) {
  LOOM_ASSERT(opts.tuning.symbolic, "symbolicClassKeys without LOOM_TUNE_SYMBOLIC");
  std::vector<std::string> keys;
  for (const auto& seg : segment::segmentFusion(f, sizes, inputs, opts).segments) {
    auto c = symbolicClass(*seg.sub.fusion, sizes, seg.input_descs, opts, seg.planned.get());
    keys.push_back(c ? c->key : std::string());
  }
  return keys;
}

namespace {

using Lookup = std::function<std::optional<CompiledKernel>(const std::string&)>;

// The plan of segmentation `shared` at these sizes: each segment's kernel from `lookup` or
// compiled. With `cached_only`, nullopt (nothing compiled) where a kernel is not in `lookup`'s
// caches or knows every size. `known`: earlier sizes' plans, whose kernels' classes each
// segment may be found in without lowering it (symbolicClass).
std::optional<CompiledPlan> planSegments(const ir::Fusion& given, std::shared_ptr<const segment::SegmentPlan> shared,
                                         const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                                         const CompileOptions& opts, StageText* stages, const Lookup& lookup,
                                         bool cached_only, const std::vector<const CompiledPlan*>& known = {}) {
  const segment::SegmentPlan& sp = *shared;
  // The segments' fusion: the given one, or its rewrite (same inputs and outputs, in order).
  const ir::Fusion& f = sp.fusion(given);
  CompiledPlan plan;
  plan.segment_plan = shared;
  plan.segments = sp.str(f);
  dumpIfEnabled(DumpStage::Segments, f.name(), plan.segments);
  if (stages) (*stages)[DumpStage::Segments] = plan.segments;

  std::map<const ir::Value*, TensorRef> where;
  for (size_t i = 0; i < f.inputs().size(); ++i)
    where[f.inputs()[i]] = {TensorRef::Kind::Input, static_cast<int>(i)};
  plan.outputs.resize(f.outputs().size());
  // (segmentFusion refused outputs that are inputs themselves.)
  for (const auto& o : f.outputs()) plan.output_alias.push_back(f.inputIndex(o.alias));
  // Each segment's key and cached kernel first; the kernels no cache holds are compiled at once,
  // one thread each (each compile has its own LLVM context and target machine), unless stage
  // texts are being collected or dumped, whose order must stay the segments'.
  const size_t n = sp.segments.size();
  std::vector<std::optional<SymbolicClass>> classes(n);
  std::vector<std::string> keys(n);
  std::vector<std::optional<CompiledKernel>> kernels(n);
  // A segment whose kernel would know every size anyway compiles as without LOOM_TUNE_SYMBOLIC:
  // the same kernel and key as an exact compile's (the schedulers' rules that a kernel serving
  // many sizes forgoes, such as the column kernels' tail rule, apply to it).
  CompileOptions exact = opts;
  exact.tuning.symbolic = false;
  auto optsOf = [&](size_t s) -> const CompileOptions& { return classes[s] ? opts : exact; };
  for (size_t s = 0; s < n; ++s) {
    const auto& seg = sp.segments[s];
    std::vector<KnownClass> earlier;
    for (const CompiledPlan* q : known)
      if (q && q->segment_plan && s < q->segment_plan->segments.size() && s < q->kernels.size() &&
          !q->kernels[s].ir_hash.empty())
        earlier.push_back({q->segment_plan->segments[s].planned.get(), q->kernels[s].ir_hash});
    classes[s] = symbolicClass(*seg.sub.fusion, sizes, seg.input_descs, opts, seg.planned.get(), earlier);
    keys[s] = classes[s] ? classes[s]->key : compileKey(*seg.sub.fusion, seg.input_descs, sizes, exact);
    if (lookup) kernels[s] = lookup(keys[s]);
    if (cached_only && (!classes[s] || !kernels[s])) return std::nullopt;
  }
  std::vector<size_t> misses;
  for (size_t s = 0; s < n; ++s)
    if (!kernels[s]) misses.push_back(s);
  bool dumping = stages != nullptr;
  for (DumpStage d : allDumpStages()) dumping = dumping || dumpEnabled(d);
  auto compileOne = [&](size_t s) {
    const auto& seg = sp.segments[s];
    CompiledKernel k = compileFusion(*seg.sub.fusion, sizes, seg.input_descs, optsOf(s), stages);
    if (dumping && opts.tuning.symbolic && !classes[s]) {
      // The schedule dump says why the knob's kernel would have taken no size at run time.
      std::vector<std::string> why;
      auto p = schedule::planSegment(*seg.sub.fusion, sizes, seg.input_descs, opts, "loom_" + seg.sub.fusion->name(), &why);
      const size_t at = p ? p->summary.find("every size known (") : std::string::npos;
      const std::string reason = at == std::string::npos ? std::string("its scheduler takes no size at run time")
                                                          : p->summary.substr(at, p->summary.find(')', at) + 1 - at);
      const std::string text = fmt::format("  sizes under LOOM_TUNE_SYMBOLIC: {}; compiled as an exact kernel\n", reason);
      dumpIfEnabled(DumpStage::Schedule, seg.sub.fusion->name(), text);
      if (stages) (*stages)[DumpStage::Schedule] += text;
    }
    return k;
  };
  if (misses.size() > 1 && !dumping && std::thread::hardware_concurrency() > 1) {
    std::vector<std::future<CompiledKernel>> running;
    for (size_t s : misses) running.push_back(std::async(std::launch::async, compileOne, s));
    for (size_t i = 0; i < misses.size(); ++i) kernels[misses[i]] = running[i].get();  // rethrows a refusal
  } else {
    for (size_t s : misses) kernels[s] = compileOne(s);
  }
  for (size_t s = 0; s < n; ++s) {
    const auto& seg = sp.segments[s];
    const auto& cls = classes[s];
    PlannedKernel pk;
    pk.key = keys[s];
    pk.kernel = std::move(*kernels[s]);
    if (cls) {  // one kernel for the class: these sizes' grid, outputs and values
      pk.kernel.grid = cls->grid;
      pk.kernel.outputs = cls->outputs;
      pk.size_values = cls->size_values;
      pk.ir_hash = cls->ir_hash;
      LOOM_ASSERT(pk.size_values.size() == pk.kernel.size_args.size(), "kernel {} takes {} sizes, {} given",
                  pk.kernel.name, pk.kernel.size_args.size(), pk.size_values.size());
    }
    for (const ir::Value* v : seg.sub.inputs) pk.args.push_back(where.at(v));
    for (size_t j = 0; j < seg.sub.outputs.size(); ++j) {
      const ir::Value* v = seg.sub.outputs[j];
      const TensorDesc& d = pk.kernel.outputs[j];
      TensorRef ref{TensorRef::Kind::Temp, -1};
      for (size_t i = 0; i < f.outputs().size(); ++i)
        if (f.outputs()[i].value == v && ref.index < 0) {
          ref = {TensorRef::Kind::Output, static_cast<int>(i)};
          plan.outputs[i] = d;
        }
      if (ref.index < 0) {
        ref.index = static_cast<int>(plan.temps.size());
        plan.temps.push_back(d);
      }
      // Further outputs naming the same value read the same buffer.
      for (size_t i = 0; i < f.outputs().size(); ++i)
        if (f.outputs()[i].value == v && static_cast<int>(i) != ref.index && ref.kind == TensorRef::Kind::Output)
          LOOM_USER_CHECK(false, "outputs `{}` and `{}` are the same value; name it once",
                          f.outputs()[static_cast<size_t>(ref.index)].name, f.outputs()[i].name);
      where[v] = ref;
      pk.args.push_back(ref);
    }
    plan.kernels.push_back(std::move(pk));
  }
  // An aliased output must be written in place by the kernel that computes it.
  for (size_t i = 0; i < f.outputs().size(); ++i) {
    if (plan.output_alias[i] < 0) continue;
    bool in_place = false;
    for (const auto& pk : plan.kernels)
      for (size_t j = 0; j < pk.kernel.output_alias.size(); ++j) {
        size_t arg = pk.args.size() - pk.kernel.output_alias.size() + j;
        if (pk.args[arg] == TensorRef{TensorRef::Kind::Output, static_cast<int>(i)} && pk.kernel.output_alias[j] >= 0)
          in_place = true;
      }
    LOOM_USER_CHECK(in_place, "output `{}` aliases input `{}` but is computed in a kernel that does "
                    "not read it, so it cannot be written in place", f.outputs()[i].name,
                    f.outputs()[i].alias->name());
    plan.outputs[i] = inputs[static_cast<size_t>(plan.output_alias[i])];
  }
  return plan;
}

}  // namespace

bool hasEmptySize(const Bindings& sizes, const std::vector<TensorDesc>& inputs) {
  return !segment::emptySizeReason(sizes, inputs).empty();
}

CompiledPlan emptyPlan(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs) {
  CompiledPlan plan;
  plan.outputs.resize(f.outputs().size());
  for (size_t i = 0; i < f.outputs().size(); ++i) {
    const auto& o = f.outputs()[i];
    plan.output_alias.push_back(f.inputIndex(o.alias));
    if (plan.output_alias[i] >= 0) {
      plan.outputs[i] = inputs[static_cast<size_t>(plan.output_alias[i])];
    } else {
      TensorDesc& d = plan.outputs[i];
      d.dtype = o.value->dtype();
      for (const Extent& e : o.value->shape()) d.shape.push_back(e.evaluate(sizes));
      d.strides = contiguousStrides(d.shape);
    }
    plan.host_reference = plan.host_reference || plan.outputs[i].numel() > 0;
  }
  plan.segments = fmt::format("fusion {}: 0 kernels ({}); {}\n", f.name(), segment::emptySizeReason(sizes, inputs),
                              plan.host_reference ? "the outputs with elements (reductions over an empty dim) are "
                                                    "computed on the host by the reference evaluator"
                                                  : "every output is empty");
  return plan;
}

CompiledPlan compilePlan(const ir::Fusion& given, const Bindings& sizes,
                         const std::vector<TensorDesc>& inputs, const CompileOptions& opts,
                         StageText* stages, const Lookup& lookup) {
  if (hasEmptySize(sizes, inputs)) {
    given.verify();
    CompiledPlan plan = emptyPlan(given, sizes, inputs);
    if (stages) (*stages)[DumpStage::Segments] = plan.segments;
    return plan;
  }
  auto sp = std::make_shared<const segment::SegmentPlan>(segment::segmentFusion(given, sizes, inputs, opts));  // verifies it first
  return *planSegments(given, std::move(sp), sizes, inputs, opts, stages, lookup, false);
}

std::optional<CompiledPlan> replanLike(const CompiledPlan& earlier, const ir::Fusion& given, const Bindings& sizes,
                                       const std::vector<TensorDesc>& inputs, const CompileOptions& opts,
                                       const Lookup& lookup, const std::vector<const CompiledPlan*>& others) {
  if (!earlier.segment_plan || !opts.tuning.symbolic || !lookup) return std::nullopt;
  for (const auto& pk : earlier.kernels)
    if (pk.kernel.size_args.empty()) return std::nullopt;  // a kernel of exact sizes: not a class of sizes
  auto sp = segment::rescheduleSegments(*earlier.segment_plan, given, sizes, inputs, opts);
  if (!sp) return std::nullopt;
  std::vector<const CompiledPlan*> known{&earlier};
  known.insert(known.end(), others.begin(), others.end());
  return planSegments(given, std::make_shared<const segment::SegmentPlan>(std::move(*sp)), sizes, inputs, opts,
                      nullptr, lookup, true, known);
}

}  // namespace loom
