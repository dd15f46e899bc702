#pragma once
// What `loom run` and `loom bench` say about each kernel of a compiled plan: its launch shape
// and the bytes it moves. Needs no GPU (tests build plans with compilePlan on the CPU).
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/compile.h"

namespace loom::cli {

struct KernelInfo {
  std::string name;
  unsigned grid = 1, block = 1, shared_bytes = 0, cluster = 1;
  bool cooperative = false;
  // Every tensor the kernel reads, once (the fusion's inputs it takes, and intermediates or
  // outputs an earlier kernel wrote), and every tensor it writes, once (intermediates too;
  // outputs written in place count as written, as in the fusion's count).
  uint64_t bytes_read = 0, bytes_written = 0;
  uint64_t bytes() const { return bytes_read + bytes_written; }
};

// The bytes of a tensor's elements (its logical size; strides do not count).
uint64_t tensorBytes(const TensorDesc& d);

// The fusion's traffic, the one definition of GB/s for a whole plan: every input read once
// plus every output written once (outputs written in place too).
uint64_t fusionBytes(const std::vector<TensorDesc>& inputs, const std::vector<TensorDesc>& outputs);

// Each kernel of `plan`, in launch order; `inputs` are the fusion's inputs the plan was
// compiled for.
std::vector<KernelInfo> planKernels(const CompiledPlan& plan, const std::vector<TensorDesc>& inputs);

// "NAME grid G block B" and, where they apply, "shared S B", "cluster C", "cooperative".
std::string launchText(const KernelInfo& k);

}  // namespace loom::cli
