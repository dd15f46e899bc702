#include "compiler/schedule/scheduler.h"

#include <fmt/format.h>

namespace loom::schedule {

const std::vector<const Scheduler*>& schedulers() {
  static const std::vector<const Scheduler*> all = {
#define LOOM_SCHEDULER(name) &name##Scheduler(),
#include "compiler/schedule/schedulers.def"
#undef LOOM_SCHEDULER
  };
  return all;
}

std::optional<Planned> planSegment(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                                   const CompileOptions& opts, const std::string& kernel_name,
                                   std::vector<std::string>* why_not) {
  std::vector<std::string> why;
  for (const Scheduler* s : schedulers()) {
    std::string not_this;
    if (auto p = s->plan(f, sizes, inputs, opts, kernel_name, &not_this)) {
      // Pointwise kernels stride over the grid past the launch limit. The others give each block
      // its rows, and past 2^31 - 1 blocks (data far past what any GPU holds) are refused here
      // rather than launched out of range.
      constexpr int64_t kMaxGrid = (int64_t{1} << 31) - 1;
      if (p->launch.grid <= kMaxGrid) return p;
      not_this = fmt::format("its kernel would launch {} blocks at these sizes, past the {} (2^31 - 1) a launch "
                             "takes (data this large no GPU holds); give smaller sizes",
                             p->launch.grid, kMaxGrid);
    }
    why.push_back(fmt::format("{}: {}", s->name(), not_this));
  }
  if (why_not) *why_not = std::move(why);
  return std::nullopt;
}

}  // namespace loom::schedule
