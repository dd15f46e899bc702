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
  bool named = false;
  for (const ir::Value* v : f.inputs()) {
    if (!schedule::names(v, *differs)) continue;
    if (!(v->shape().front() == Extent::symbol(*differs))) return false;
    named = true;
  }
  return named;
}

}  // namespace loom::runtime
