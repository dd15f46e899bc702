#pragma once
// The executor (public: include/loom/executor.h) and what loom's own code adds to it.
#include <loom/executor.h>

#include "compiler/compile.h"
#include "ir/fusion.h"
#include "runtime/device_tensor.h"
#include "runtime/environment_options.h"

namespace loom {

// The current GPU (its PTX target and SM count); throws loom::Error with no GPU.
DeviceInfo currentDevice();

}  // namespace loom
