#pragma once
// `loom bench`'s timing, the way triton.testing.do_bench times (GPU only).
#include <cstddef>
#include <functional>

#include "runtime/device.h"

namespace loom::cli {

constexpr size_t kFlushBytes = size_t{256} << 20;  // as triton.testing.do_bench
constexpr size_t kCopyBytes = size_t{512} << 20;   // the copy bandwidth's buffers

struct Timing {
  double median_ms = 0, min_ms = 0, p20_ms = 0, p80_ms = 0;
  int reps = 0;
};

// Estimates from 5 flushed runs, warms up for ~25 ms, then runs `fixed_reps` times (0: ~100 ms
// worth), each run preceded by a memset of `flush` outside its pair of CUDA events; the median,
// min, p20 and p80 of the event times. `fn` only enqueues work (launches) on the launch stream.
Timing timeLikeDoBench(const std::function<void()>& fn, runtime::DeviceBuffer& flush, int fixed_reps);

}  // namespace loom::cli
