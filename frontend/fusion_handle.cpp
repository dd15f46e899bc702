// The public fusion handle (include/loom/fusion.h) over loom's IR.
#include <loom/fusion.h>

#include <ostream>

#include "frontend/examples.h"
#include "frontend/framework_ops.h"
#include "frontend/parser.h"
#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/printer.h"

namespace loom {

Fusion::Fusion(std::unique_ptr<ir::Fusion> f) : f_(std::move(f)) {
  LOOM_ASSERT(f_ != nullptr, "a fusion handle over no fusion");
}
Fusion::Fusion(Fusion&&) noexcept = default;
Fusion& Fusion::operator=(Fusion&&) noexcept = default;
Fusion::~Fusion() = default;
Fusion::operator std::unique_ptr<ir::Fusion>() && { return std::move(f_); }

Fusion Fusion::parse(std::string_view text, std::string_view source_name) {
  return Fusion(parseFusion(text, source_name));
}

Fusion Fusion::parseFile(const std::string& path) { return Fusion(parseFusionFile(path)); }

static const Example& builtinNamed(const std::string& name) {
  const Example* e = findExample(name);
  if (!e) {
    std::string names;
    for (const auto& x : builtinExamples()) names += (names.empty() ? "" : ", ") + x.name;
    fail("`{}` is not a built-in fusion; the built-ins are {}", name, names);
  }
  return *e;
}

Fusion Fusion::builtin(const std::string& name, std::optional<DType> dtype) {
  const Example& e = builtinNamed(name);
  return Fusion(loadFusion(e.name, nullptr, dtype));
}

Fusion Fusion::frameworkOp(const std::string& op, const std::string& params) {
  return Fusion(buildFrameworkOp(op, parseOpParams(params)));
}

Bindings Fusion::builtinSizes(const std::string& name) { return builtinNamed(name).default_sizes; }

std::vector<std::string> Fusion::builtinNames() {
  std::vector<std::string> names;
  for (const auto& e : builtinExamples()) names.push_back(e.name);
  return names;
}

// A moved-from handle holds nothing: using it is the caller's error, said as such.
const ir::Fusion& Fusion::held() const {
  LOOM_USER_CHECK(f_ != nullptr, "this loom::Fusion was moved from and holds no fusion");
  return *f_;
}

const std::string& Fusion::name() const { return held().name(); }

std::vector<std::string> Fusion::inputNames() const {
  std::vector<std::string> names;
  for (const ir::Value* v : held().inputs()) names.push_back(v->name());
  return names;
}

std::vector<std::string> Fusion::outputNames() const {
  std::vector<std::string> names;
  for (const auto& o : held().outputs()) names.push_back(o.name);
  return names;
}

std::vector<int> Fusion::outputAliases() const {
  const ir::Fusion& f = held();
  std::vector<int> out;
  for (const auto& o : f.outputs()) out.push_back(f.inputIndex(o.alias));
  return out;
}

std::string Fusion::str() const { return ir::printFusion(held()); }

std::ostream& operator<<(std::ostream& os, const Fusion& f) { return os << f.str(); }

}  // namespace loom
