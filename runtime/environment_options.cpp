#include "runtime/environment_options.h"

#include <cstdlib>

namespace loom {

codegen::PtxasTool ptxasFromEnvironment() {
  codegen::PtxasTool tool;
  if (const char* p = std::getenv("LOOM_PTXAS"); p && *p) tool.path = p;
  if (const char* d = std::getenv("TMPDIR"); d && *d) tool.temp_dir = d;
  return tool;
}

}  // namespace loom
