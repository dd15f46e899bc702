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

// What the driver's JIT made of a kernel's PTX (Kernel::numRegs, localBytes); registers 0 where
// nothing was loaded (a CPU-only caller).
struct JitProfile {
  int registers = 0;
  int local_bytes = 0;
};

// Gives `k` a cubin for sm_`sm` unless it has one (or one was refused) already; the caller
// stores the entry again when this returns true. With the JIT's profile of the same PTX, the cubin is held to its
// registers (compileCubin says why) and kept only where it is no worse: registers, stack frame
// and spills within the JIT's, as nvJitLink's log reports them (no report: not kept).
// Whether `k` needs no cubin made for sm_`sm`: it has one, or the one made was refused.
bool cubinSettled(const CompiledKernel& k, int sm);

// True when it changed `k`: a cubin attached, or one refused as worse (refuseCubin).
bool attachCubin(CompiledKernel& k, int sm, JitProfile jit = {});

// Marks `k`'s cubin for sm_`sm` as refused (cubin_sm = -sm, no bytes): kept in the disk cache so
// that no later process makes it again.
void refuseCubin(CompiledKernel& k, int sm);

// Loads `k`'s cubin, or its PTX where it has none or the driver refuses the cubin.
Module loadModule(const CompiledKernel& k);

}  // namespace loom::runtime
