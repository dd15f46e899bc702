// The pointwise scheduler in the registry: schedule/pointwise/pointwise.h's parameters, lowered by pass
// `pointwise-loop` (schedule/pointwise/lower.h).
#include <fmt/format.h>

#include "compiler/schedule/pointwise/lower.h"
#include "compiler/schedule/pointwise/pointwise.h"
#include "compiler/schedule/same_lowering.h"
#include "compiler/schedule/scheduler.h"

namespace loom::schedule {

namespace {

class PointwiseScheduler final : public Scheduler {
 public:
  std::string_view name() const override { return "pointwise"; }

  std::optional<Planned> plan(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                              const CompileOptions& opts, const std::string& kernel_name,
                              std::string* why_not) const override {
    auto k = schedulePointwise(f, sizes, inputs, opts, why_not);
    if (!k) return std::nullopt;
    k->name = kernel_name;
    Planned p;
    p.scheduler = std::string(name());
    p.reason = k->reason;
    p.summary = fmt::format("pointwise: {}\n  vector width {}, block {}, grid {}\n", k->reason, k->vec, k->block, k->grid);
    p.launch.grid = k->grid;
    p.launch.block = k->block;
    p.outputs = k->outputs;
    p.output_alias = k->output_alias;
    p.first_pass = "pointwise-loop";
    if (!k->size_symbol.empty()) p.size_args.push_back({k->size_symbol, k->size_value});
    auto kernel = std::make_shared<const PointwiseKernel>(std::move(*k));
    setLowering(p, f, kernel, inputs, opts.tuning, [](const LoweringInput<PointwiseKernel>& in) {
      return lowerPointwise(*in.f, *in.kernel, in.inputs);
    });
    p.detail = [&f, kernel]() { return printKernel(f, *kernel); };
    return p;
  }
};

}  // namespace

const Scheduler& pointwiseScheduler() {
  static const PointwiseScheduler s;
  return s;
}

}  // namespace loom::schedule
