#pragma once
// Which image of a compiled kernel the driver loads: its cubin for this GPU where the entry has
// one (made in-process by nvJitLink, runtime/ptx_compiler.h, off the first call's path by
// runtime/cubin_worker.h, and kept in the disk cache), else its PTX through the driver's JIT.
// Where no cubin can be made, a one-line note says why, once per process. LOOM_CUBIN=0 always
// loads PTX.
#include "compiler/compile.h"
#include "runtime/device.h"

namespace loom::runtime {

bool cubinsEnabled();

// Gives `k` a cubin for sm_`sm` unless it has one already; true when it made one (the caller
// stores the entry again). `max_registers` (> 0): the driver JIT's register count for the same
// PTX, which the cubin is held to (compileCubin); a cubin that then spills is not kept.
bool attachCubin(CompiledKernel& k, int sm, int max_registers = 0);

// Loads `k`'s cubin, or its PTX where it has none or the driver refuses the cubin.
Module loadModule(const CompiledKernel& k);

}  // namespace loom::runtime
