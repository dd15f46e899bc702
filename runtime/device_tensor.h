#pragma once
// Device tensors (public: include/loom/device_tensor.h) and binding a fusion's sizes from them.
#include <loom/device_tensor.h>

#include "ir/fusion.h"

namespace loom {

// The fusion's sizes from device tensors' dtypes and sizes (runtime/bind_sizes.h bindShapes).
Bindings bindSizes(const ir::Fusion& f, const std::vector<DeviceTensor>& inputs, const Bindings& given = {});

}  // namespace loom
