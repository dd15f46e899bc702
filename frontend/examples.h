#pragma once
// Built-in example fusions, available by name to the CLI and tests. Each names its main input
// `x` and comes with default sizes so every command works without `--dim`.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/fusion.h"

namespace loom {

struct Example {
  std::string name;
  std::string summary;  // one line
  // Builds the example with `dtype` as the dtype of its main tensors (x and what goes with it;
  // f32 parameters such as group norm's affine stay f32).
  std::function<std::unique_ptr<ir::Fusion>(DType)> build;
  DType default_dtype;
  Bindings default_sizes;
  std::unique_ptr<ir::Fusion> buildDefault() const { return build(default_dtype); }
};

const std::vector<Example>& builtinExamples();
const Example* findExample(const std::string& name);  // null if none

// A built-in example name or a path to a text-format file; throws loom::Error naming both
// possibilities when neither fits.
// `dtype` overrides a built-in's default dtype.
std::unique_ptr<ir::Fusion> loadFusion(const std::string& name_or_path, Bindings* defaults = nullptr,
                                       std::optional<DType> dtype = std::nullopt);

}  // namespace loom
