#pragma once
// Which image of a compiled kernel the driver loads: its cubin (made in-process by nvJitLink,
// runtime/ptx_compiler.h, and kept in the disk cache) where one can be made for this device,
// else its PTX through the driver's JIT, with a one-line note once per process saying why.
// LOOM_CUBIN=0 always loads PTX.
#include "compiler/compile.h"
#include "runtime/device.h"

namespace loom::runtime {

bool cubinsEnabled();

// Gives `k` a cubin for sm_`sm` unless it has one already; true when it made one (the caller
// stores the entry again), adding its compile time to `*ms`.
bool attachCubin(CompiledKernel& k, int sm, double* ms);

// Loads `k`'s cubin, or its PTX where it has none or the driver refuses the cubin.
Module loadModule(const CompiledKernel& k);

}  // namespace loom::runtime
