#include "runtime/dynamic_sizes.h"

#include "compiler/schedule/symbolic.h"

namespace loom::runtime {

bool secondValueOfLeadingSize(const ir::Fusion& f, const Bindings& earlier, const Bindings& now) {
  if (earlier.size() != now.size()) return false;
  const std::string* differs = nullptr;
  for (const auto& [name, value] : now) {
    auto it = earlier.find(name);
    if (it == earlier.end()) return false;
    if (it->second == value) continue;
    if (differs) return false;  // two sizes changed: not a batch of another size
    differs = &name;
  }
  if (!differs || !schedule::symbolOnlyWhole(f, *differs)) return false;
  // Its first dim and no other, in every tensor naming it (x[N, N] is no batch of rows).
  auto leads = [&](const ir::Value* v) {
    const auto shape = v->shape();
    for (size_t d = 0; d < shape.size(); ++d)
      if ((shape[d] == Extent::symbol(*differs)) != (d == 0)) return false;
    return true;
  };
  bool named = false;
  for (const ir::Value* v : f.inputs()) {
    if (!schedule::names(v, *differs)) continue;
    if (!leads(v)) return false;
    named = true;
  }
  for (const auto& o : f.outputs())
    if (schedule::names(o.value, *differs) && !leads(o.value)) return false;
  return named;
}

}  // namespace loom::runtime
