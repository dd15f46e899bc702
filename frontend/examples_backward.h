#pragma once
// The built-in examples of the backward composites (frontend/composites_backward.h), listed by
// builtinExamples() after the forward ones.
#include <vector>

#include "frontend/examples.h"

namespace loom {

std::vector<Example> backwardExamples();

}  // namespace loom
