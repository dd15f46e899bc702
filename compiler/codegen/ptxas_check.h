#pragma once
// Runs NVIDIA's ptxas over PTX text, so machines with no GPU (CI, tests) can still check that
// the PTX loom emits is accepted by the assembler the driver's JIT is built from. Reads no
// environment: runtime/environment_options.h makes a PtxasTool from $LOOM_PTXAS and $TMPDIR.
#include <string>

namespace loom::codegen {

// The ptxas of the CUDA toolkit found at build time.
std::string defaultPtxasPath();

// Which ptxas to run, and where its input and log files go.
struct PtxasTool {
  std::string path = defaultPtxasPath();
  std::string temp_dir = "/tmp";
};

// True when `tool.path` names an executable file.
bool ptxasAvailable(const PtxasTool& tool);

// Assembles `ptx` for sm_XX (`ptxas -arch=sm_XX -o /dev/null`). Returns "" when ptxas accepts
// it, else ptxas's messages (or why ptxas could not be run). Never throws for bad PTX. With
// `spill_bytes`, ptxas runs verbose and that gets the most bytes any kernel spills (0: none).
std::string ptxasCheck(const std::string& ptx, int sm, const PtxasTool& tool, int* spill_bytes = nullptr);

}  // namespace loom::codegen
