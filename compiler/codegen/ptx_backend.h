#pragma once
// LLVM IR -> PTX text with LLVM's NVPTX backend: link libdevice, internalize all but the
// kernels, run the O3 pipeline (with NVPTX's own passes such as NVVMReflect), emit PTX.
// This header is included outside codegen, so it names LLVM types only by forward declaration.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace llvm {
class Module;
class LLVMContext;
}  // namespace llvm

namespace loom::codegen {

struct PtxOptions {
  int sm = 90;         // target sm_XX; one of supportedSms()
  int opt_level = 3;   // 0..3, for both the IR pipeline and instruction selection
};

// The sm_XX targets loom emits PTX for: 80, 86, 89, 90.
std::vector<int> supportedSms();

// The PTX target to use on a device of compute capability major.minor: the highest supported
// sm not above it (PTX is forward compatible, so sm_90 PTX also runs on newer GPUs).
// Throws loom::Error for devices older than sm_80.
int ptxTargetFor(int cc_major, int cc_minor);

// Compiles a module whose kernels are marked by the ptx_kernel calling convention or by
// `!nvvm.annotations = !{!{ptr @fn, !"kernel", i32 1}}`. The module must live in `ctx` and is
// consumed (libdevice is linked into it). Unknown sm or opt level -> loom::Error; a broken
// module or a module with no kernel -> loom::InternalError (whoever built it has a bug).
// `ms_out`, when given, receives the wall time of the whole LLVM -> PTX step in milliseconds.
std::string compileToPtx(std::unique_ptr<llvm::Module> m, llvm::LLVMContext& ctx,
                         const PtxOptions& opts, double* ms_out = nullptr);

// The same from LLVM IR text (.ll), in a fresh context: for tests, tools and bug reports,
// which need no LLVM headers of their own (libloom keeps LLVM's symbols private). IR that
// does not parse or verify, or has no kernel -> loom::Error with LLVM's message.
std::string compileLlvmIrToPtx(std::string_view ir_text, const PtxOptions& opts,
                               double* ms_out = nullptr);

}  // namespace loom::codegen
