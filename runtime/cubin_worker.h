#pragma once
// Cubins made off the first call's path. A kernel compiled now (or found in the disk cache
// without a cubin for this GPU) is loaded as PTX through the driver's JIT at once, as fast as a
// cold load can be; one background thread then makes its cubin with nvJitLink
// (runtime/module_image.h) and stores the entry again, so that the next process loads machine
// code from the disk cache. The thread finishes what is queued before the process exits.
#include <string>

#include "compiler/compile.h"
#include "runtime/module_image.h"

namespace loom::runtime {

// Queues `k` (under disk-cache key `key`) for a cubin for sm_`sm`. Nothing happens where cubins
// are off (LOOM_CUBIN=0), the disk cache is (LOOM_DISK_CACHE=0; a cubin is only worth its
// compile when the next process can load it) or no nvJitLink is found.
// `jit`: what the driver's JIT made of the loaded PTX, which the cubin must match (attachCubin).
void makeCubinLater(const std::string& key, const CompiledKernel& k, int sm, JitProfile jit = {});

// Waits until every queued cubin is made and stored; the number of entries stored so far in
// this process (cubins made, or refused as worse than the JIT's).
int finishCubins();

}  // namespace loom::runtime
