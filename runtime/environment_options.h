#pragma once
// The boundary where the environment becomes options: the CLI, the Executor and the tests read
// the compiler's tuning knobs (include/loom/tuning.def) and ptxas's whereabouts here, once, and
// pass the values on. The compiler itself reads no environment.
#include "compiler/codegen/ptxas_check.h"
#include "compiler/tuning.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

// tuningFromEnvironment (include/loom/tuning.h): every tuning.def variable that is set. A bad
// value (not a whole number, out of its range, a switch set to anything but 1) is a loom::Error
// naming the variable, the value and what it takes.

// $LOOM_PTXAS (else the CUDA toolkit's ptxas found at build time) and $TMPDIR (else /tmp).
codegen::PtxasTool ptxasFromEnvironment();

// The value of environment variable `name`, nullopt where unset or empty: the runtime's one
// read of the environment. `name` must be listed in runtime/environment.def or tuning.def, or
// be one of the system's (HOME, TMPDIR, XDG_CACHE_HOME).
std::optional<std::string> environmentValue(std::string_view name);

// LOOM_DUMP's stages given to the dump registry (ir/dump.h), once a process: by the Executor
// and the CLI before they compile.
void dumpsFromEnvironment();

// Every variable loom reads: environment.def's, then tuning.def's; each with what it sets.
struct EnvironmentVariable {
  std::string_view name, meaning;
};
const std::vector<EnvironmentVariable>& environmentVariables();

}  // namespace loom
