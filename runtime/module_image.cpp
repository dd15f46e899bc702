#include "runtime/module_image.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ir/error.h"
#include "runtime/environment_options.h"
#include "runtime/ptx_compiler.h"

namespace loom::runtime {
namespace {
// One note per process and reason: every kernel would say the same.
void noteOnce(std::atomic<bool>& said, std::string line) {
  // One line, whatever the log it quotes.
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  if (!said.exchange(true)) std::fprintf(stderr, "loom: note: %s\n", line.c_str());
}
std::atomic<bool> g_no_compiler{false}, g_refused{false}, g_load_refused{false};
}  // namespace

bool cubinsEnabled() {
  static const bool on = [] {
    return environmentValue("LOOM_CUBIN") != "0";
  }();
  return on;
}

void refuseCubin(CompiledKernel& k, int sm) {
  k.cubin.clear();
  k.cubin_sm = -sm;
}

bool cubinSettled(const CompiledKernel& k, int sm) {
  return (k.cubin_sm == sm && !k.cubin.empty()) || k.cubin_sm == -sm;
}

bool attachCubin(CompiledKernel& k, int sm, JitProfile jit) {
  if (!cubinsEnabled() || cubinSettled(k, sm)) return false;
  std::string why;
  if (!ptxCompilerAvailable(&why)) {
    noteOnce(g_no_compiler, why + "; kernels load as PTX through the driver's JIT");
    return false;
  }
  auto c = compileCubin(k.ptx, sm, k.name, &why, jit.registers);
  if (!c) {
    noteOnce(g_refused, why + "; loading the PTX through the driver's JIT instead");
    return false;
  }
  // Worse code than the JIT's (a stack for softmax's reciprocal, spills under the cap): the
  // PTX through the JIT stays the faster kernel, if not the faster load. No note: a choice of
  // speed, not a failure.
  if (jit.registers > 0 && (c->registers == 0 || c->registers > jit.registers ||
                            c->stack_bytes > jit.local_bytes || c->spill_bytes > jit.local_bytes)) {
    refuseCubin(k, sm);
    return true;  // stored as refused: later processes neither load nor make it
  }
  k.cubin = std::move(c->image);
  k.cubin_sm = sm;
  return true;
}

Module loadModule(const CompiledKernel& k) {
  if (cubinsEnabled() && !k.cubin.empty() && k.cubin_sm == Device::get().smVersion()) {
    try {
      return Module(k.cubin, k.name, Module::Image::Cubin);
    } catch (const Error& e) {
      // A cubin from an nvJitLink newer than this driver: the PTX still loads.
      std::string what = e.what();
      noteOnce(g_load_refused, what.substr(0, what.find('\n')) + "; loading the PTX instead");
    }
  }
  return Module(k.ptx, k.name, Module::Image::Ptx);
}

}  // namespace loom::runtime
