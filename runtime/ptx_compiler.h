#pragma once
// PTX -> cubin in this process, through nvJitLink (libnvJitLink.so, opened at run time like
// libcuda), so the driver loads machine code instead of JIT-compiling PTX at every cold load.
// Needs no GPU: the cubin is made for the SM version given. Where no nvJitLink is found,
// or it refuses a PTX, callers load the PTX through the driver's JIT instead.
//
// Where it is looked for: $LOOM_NVJITLINK (a file), then libnvJitLink.so.13 and .so.12 on the
// loader's path (a process that loaded PyTorch's nvidia-nvjitlink has it), then the CUDA
// toolkit's lib64 (the one loom was built against, then /usr/local/cuda).
#include <optional>
#include <string>

namespace loom::runtime {

// True when nvJitLink loaded; `why` says why not, or which library was found.
bool ptxCompilerAvailable(std::string* why = nullptr);

// "nvJitLink 13.0", or "" where none loaded.
std::string ptxCompilerVersion();

struct Cubin {
  std::string image;  // an ELF cubin for sm_`sm`
  int sm = 0;
  double ms = 0;      // wall time of the compile
  // From nvJitLink's info log, a thread's: registers (0: the log did not say), stack frame and
  // spill stores in bytes.
  int registers = 0;
  int stack_bytes = 0;
  int spill_bytes = 0;
};

// The same numbers from an nvJitLink or ptxas info log ("Used 92 registers", "24 bytes stack
// frame", "used 79 registers, ..., 72 stack", "68 bytes spill stores"): the largest of each.
void readResourceLog(const std::string& log, Cubin& c);

// Compiles `ptx` for sm_`sm` (90 for sm_90). nullopt with `why` when no nvJitLink is found
// or it refuses the PTX (its error log, shortened); `label` names the kernel there.
//
// nvJitLink compiles PTX as relocatable code (ptxas -c), whose register allocation is not the
// driver JIT's (whole-program): layer_norm bf16 32768 x 16384 took 128 registers a thread
// against the JIT's 92, 167 against 91 with its rows a kernel parameter, and ran 35% slower.
// `max_registers` > 0 caps each entry at that many (`.maxnreg`, the count the driver's JIT
// gave the same PTX), so the cubin allocates as the JIT did; where it cannot without a stack
// (softmax's IEEE reciprocal is a call in relocatable code), the caller keeps the PTX.
std::optional<Cubin> compileCubin(const std::string& ptx, int sm, const std::string& label,
                                  std::string* why, int max_registers = 0);

// `ptx` with `.maxnreg n` on every entry that has none (before its body's opening brace).
std::string withMaxRegisters(const std::string& ptx, int n);

}  // namespace loom::runtime
