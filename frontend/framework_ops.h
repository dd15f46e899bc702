#pragma once
// Fusions for one framework op each, built from the composites with the op's own parameters
// (eps, groups, momentum, which of weight and bias are given and their dtypes): what a
// framework integration (the C ABI's loom_fusion_op, python/loom/torch) runs for a module's
// forward, with the statistics its backward reads, and for that backward.
//
// Shapes: x is [N, D] for layer_norm and rms_norm (the caller flattens leading dims), and
// [N, C, S] for the others (spatial dims flattened into S, which keeps channels-last a view).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/fusion.h"

namespace loom {

// Parameters by name, as text ("x" -> "f16", "eps" -> "1e-06", "w" -> "none").
using OpParams = std::map<std::string, std::string>;

// `op` with `params`: see frameworkOps() for each op's inputs, outputs and parameters. Throws
// loom::Error naming the op and the parameter for an unknown op or parameter, a missing one, or
// a value that does not parse.
std::unique_ptr<ir::Fusion> buildFrameworkOp(const std::string& op, const OpParams& params);

// "k=v,k=v" as OpParams (keys and values trimmed); a loom::Error says which piece is malformed.
OpParams parseOpParams(const std::string& text);

// Each op: its name and a one-line description of inputs, outputs and parameters.
struct FrameworkOpInfo {
  std::string name, summary;
};
const std::vector<FrameworkOpInfo>& frameworkOps();

}  // namespace loom
