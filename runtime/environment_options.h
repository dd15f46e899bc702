#pragma once
// The boundary where the environment becomes options: the CLI, the Executor and the tests read
// ptxas's whereabouts here, once, and pass the values on.
#include "compiler/codegen/ptxas_check.h"

namespace loom {

// $LOOM_PTXAS (else the CUDA toolkit's ptxas found at build time) and $TMPDIR (else /tmp).
codegen::PtxasTool ptxasFromEnvironment();

}  // namespace loom
