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
    if (auto p = s->plan(f, sizes, inputs, opts, kernel_name, &not_this)) return p;
    why.push_back(fmt::format("{}: {}", s->name(), not_this));
  }
  if (why_not) *why_not = std::move(why);
  return std::nullopt;
}

}  // namespace loom::schedule
