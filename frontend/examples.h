#pragma once
// Built-in example fusions, available by name to the CLI and tests. Each names its main input
// `x` and comes with default sizes so every command works without `--dim`.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/fusion.h"

namespace loom {

struct Example {
  std::string name;
  std::string summary;  // one line
  std::function<std::unique_ptr<ir::Fusion>()> build;
  Bindings default_sizes;
};

const std::vector<Example>& builtinExamples();
const Example* findExample(const std::string& name);  // null if none

// A built-in example name or a path to a text-format file; throws loom::Error naming both
// possibilities when neither fits.
std::unique_ptr<ir::Fusion> loadFusion(const std::string& name_or_path, Bindings* defaults = nullptr);

}  // namespace loom
