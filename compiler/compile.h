#pragma once
// Compiles one fusion for concrete input tensors: schedule, lower, LLVM IR, PTX. Knows nothing
// of the driver; the runtime loads and launches what this returns.
#include <map>
#include <string>
#include <vector>

#include "compiler/schedule/pointwise.h"
#include "compiler/tensor_desc.h"
#include "ir/dump.h"
#include "ir/fusion.h"

namespace loom {

struct CompileOptions {
  int sm = 90;          // PTX target
  int sm_count = 132;   // multiprocessors, for grid sizing
};

struct CompiledKernel {
  std::string name;
  std::string ptx;
  unsigned block = 1;
  unsigned grid = 1;
  std::vector<TensorDesc> outputs;  // to allocate (or the aliased input's)
  std::vector<int> output_alias;    // input index per output, or -1
  double llvm_ptx_ms = 0;           // LLVM IR -> PTX
};

// The text of each stage, filled when asked (loom dump, LOOM_DUMP).
using StageText = std::map<DumpStage, std::string>;

// Throws loom::Error when no scheduler accepts the fusion (with the reason).
CompiledKernel compileFusion(const ir::Fusion& f, const Bindings& sizes,
                             const std::vector<TensorDesc>& inputs, const CompileOptions& opts,
                             StageText* stages = nullptr);

// A stable text key of everything that changes the generated code.
std::string compileKey(const ir::Fusion& f, const std::vector<TensorDesc>& inputs,
                       const CompileOptions& opts);

}  // namespace loom
