// The reduction scheduler in the registry: schedule/reduction/reduction.h's parameters, lowered by pass
// `reduction-blocks` (schedule/reduction/lower.h).
#include <fmt/format.h>

#include "compiler/schedule/reduction/lower.h"
#include "compiler/schedule/reduction/reduction.h"
#include "compiler/schedule/same_lowering.h"
#include "compiler/schedule/scheduler.h"

namespace loom::schedule {

namespace {

class ReductionScheduler final : public Scheduler {
 public:
  std::string_view name() const override { return "reduction"; }

  std::optional<Planned> plan(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                              const CompileOptions& opts, const std::string& kernel_name,
                              std::string* why_not) const override {
    auto r = scheduleReduction(f, sizes, inputs, opts, why_not);
    if (!r) return std::nullopt;
    r->k.name = kernel_name;
    Planned p;
    p.scheduler = std::string(name());
    p.reason = r->reason;
    p.summary = fmt::format("reduction: {}\n  vector width {}\n", r->reason, r->k.vec);
    p.launch = {r->grid, r->block, 0, 1, false, r->workspace_bytes};
    if (r->symbolic()) p.size_args.push_back({r->size_symbol, r->size_value});
    p.outputs = r->k.outputs;
    p.output_alias = r->k.output_alias;
    p.first_pass = "reduction-blocks";
    auto kernel = std::make_shared<const ReductionKernel>(std::move(*r));
    setLowering(p, f, kernel, inputs, opts.tuning, [](const LoweringInput<ReductionKernel>& in) {
      return lowerReduction(*in.f, *in.kernel, in.inputs);
    });
    p.detail = [&f, kernel]() { return printRowKernel(f, kernel->k); };
    return p;
  }
};

}  // namespace

const Scheduler& reductionScheduler() {
  static const ReductionScheduler s;
  return s;
}

}  // namespace loom::schedule
