#pragma once
// The GPU a kernel is compiled for: what the schedulers size blocks and grids by.

namespace loom {

struct DeviceInfo {
  int sm = 90;          // compute capability: the PTX target
  int sm_count = 132;   // multiprocessors, for grid sizing
  bool operator==(const DeviceInfo&) const = default;
};

}  // namespace loom
