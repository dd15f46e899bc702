#pragma once
// Everything a compile depends on beyond the fusion and its inputs: the target GPU. Every field
// is part of the cache key (compileKey).
#include "compiler/device_info.h"

namespace loom {

struct CompileOptions {
  DeviceInfo device;

  CompileOptions() = default;
  CompileOptions(DeviceInfo d) : device(d) {}
};

}  // namespace loom
