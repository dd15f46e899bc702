#include "runtime/dynamic_sizes.h"

#include "compiler/schedule/symbolic.h"

namespace loom::runtime {

namespace {
// Whether size `s` is only ever a whole dim, some input names it, and every tensor naming it has
// it as its first dim and no other (x[N, N] is no batch of rows).
bool leadingSize(const ir::Fusion& f, const std::string& s) {
  if (!schedule::symbolOnlyWhole(f, s)) return false;
  auto leads = [&](const ir::Value* v) {
    const auto shape = v->shape();
    for (size_t d = 0; d < shape.size(); ++d)
      if ((shape[d] == Extent::symbol(s)) != (d == 0)) return false;
    return true;
  };
  bool named = false;
  for (const ir::Value* v : f.inputs()) {
    if (!schedule::names(v, s)) continue;
    if (!leads(v)) return false;
    named = true;
  }
  for (const auto& o : f.outputs())
    if (schedule::names(o.value, s) && !leads(o.value)) return false;
  return named;
}
}  // namespace

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
  if (!differs) return false;
  // Whether that size may lead: the fusion's alone (kept with a finished fusion, asked for each
  // earlier signature of every new one).
  const std::string s = *differs;
  return *std::static_pointer_cast<const bool>(f.derived("leading size " + s, [&] {
    return std::make_shared<const bool>(leadingSize(f, s));
  }));
}

}  // namespace loom::runtime
