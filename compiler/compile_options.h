#pragma once
// Everything a compile depends on beyond the fusion and its inputs: the target GPU and the
// tuning knobs. Every field is part of the cache key (compileKey).
#include <utility>

#include "compiler/device_info.h"
#include "compiler/tuning.h"

namespace loom {

struct CompileOptions {
  DeviceInfo device;
  Tuning tuning;  // all unset: loom's own choices

  CompileOptions() = default;
  CompileOptions(DeviceInfo d, Tuning t = {}) : device(d), tuning(std::move(t)) {}
};

}  // namespace loom
