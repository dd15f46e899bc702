#include "runtime/environment_options.h"

#include <cstdlib>

namespace loom {

Tuning tuningFromEnvironment() {
  return tuningFrom([](std::string_view name) -> std::optional<std::string> {
    if (const char* v = std::getenv(std::string(name).c_str())) return std::string(v);
    return std::nullopt;
  });
}

codegen::PtxasTool ptxasFromEnvironment() {
  codegen::PtxasTool tool;
  if (const char* p = std::getenv("LOOM_PTXAS"); p && *p) tool.path = p;
  if (const char* d = std::getenv("TMPDIR"); d && *d) tool.temp_dir = d;
  return tool;
}

}  // namespace loom
