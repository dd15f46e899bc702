// The normalization scheduler in the registry: schedule/row_kernel.h's parameters, lowered
// by pass `norm-rows` (schedule/normalization/lower.h).
#include <fmt/format.h>

#include "compiler/schedule/normalization/lower.h"
#include "compiler/schedule/normalization/normalization.h"
#include "compiler/schedule/row_kernel.h"
#include "compiler/schedule/same_lowering.h"
#include "compiler/schedule/scheduler.h"

namespace loom::schedule {

namespace {

class NormalizationScheduler final : public Scheduler {
 public:
  std::string_view name() const override { return "normalization"; }

  std::optional<Planned> plan(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                              const CompileOptions& opts, const std::string& kernel_name,
                              std::string* why_not) const override {
    auto k = scheduleNormalization(f, sizes, inputs, opts, why_not);
    if (!k) return std::nullopt;
    k->name = kernel_name;
    Planned p;
    p.scheduler = std::string(name());
    p.reason = k->reason;
    p.summary = fmt::format("normalization: {}\n  vector width {}\n", k->reason, k->vec);
    p.launch = {k->grid, k->block, k->smem_bytes, k->cluster, k->grid_sync || k->columns, k->workspace_bytes};
    p.outputs = k->outputs;
    p.output_alias = k->output_alias;
    p.first_pass = "norm-rows";
    p.two_pass_faster = k->two_pass_faster;
    if (k->symbolic()) p.size_args.push_back({k->size_symbol, k->size_value});
    auto kernel = std::make_shared<const RowKernel>(std::move(*k));
    setLowering(p, f, kernel, inputs, opts.tuning, [](const LoweringInput<RowKernel>& in) {
      return lowerNormalization(*in.f, *in.kernel, in.inputs, in.tune);
    });
    p.detail = [&f, kernel]() { return printRowKernel(f, *kernel); };
    return p;
  }
};

}  // namespace

const Scheduler& normalizationScheduler() {
  static const NormalizationScheduler s;
  return s;
}

}  // namespace loom::schedule
