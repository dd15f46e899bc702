#include "runtime/environment_options.h"

#include <cstdlib>
#include <mutex>

#include "ir/dump.h"
#include "ir/error.h"

namespace loom {

const std::vector<EnvironmentVariable>& environmentVariables() {
  static const std::vector<EnvironmentVariable> all = {
#define LOOM_ENV(name, meaning) {#name, meaning},
#include "runtime/environment.def"
#undef LOOM_ENV
#define LOOM_KNOB(name, field, lo, hi, meaning) {#name, meaning},
#define LOOM_SWITCH(name, field, meaning) {#name, meaning},
#include <loom/tuning.def>
#undef LOOM_KNOB
#undef LOOM_SWITCH
  };
  return all;
}

std::optional<std::string> environmentValue(std::string_view name) {
  bool known = name == "HOME" || name == "TMPDIR" || name == "XDG_CACHE_HOME";
  for (const auto& v : environmentVariables()) known = known || v.name == name;
  LOOM_ASSERT(known, "environment variable {} is read but not listed in runtime/environment.def", name);
  const char* v = std::getenv(std::string(name).c_str());
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

Tuning tuningFromEnvironment() {
  return tuningFrom([](std::string_view name) -> std::optional<std::string> {
    if (const char* v = std::getenv(std::string(name).c_str())) return std::string(v);  // (set but empty: the knob's own error)
    return std::nullopt;
  });
}

void dumpsFromEnvironment() {
  static std::once_flag once;
  std::call_once(once, [] { setDumpStages(environmentValue("LOOM_DUMP").value_or("")); });
}

codegen::PtxasTool ptxasFromEnvironment() {
  codegen::PtxasTool tool;
  if (auto p = environmentValue("LOOM_PTXAS")) tool.path = *p;
  if (auto d = environmentValue("TMPDIR")) tool.temp_dir = *d;
  return tool;
}

}  // namespace loom
