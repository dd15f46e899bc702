// Loads libcuda.so.1 once and turns every failure into a clear loom::Error.
#include <cuda.h>
#include <dlfcn.h>

#include <fmt/format.h>

#include "ir/error.h"
#include "runtime/cuda_driver.h"

namespace loom::runtime {
namespace {

// Older names to try when a newer one is missing, so drivers before CUDA 12.8 still work
// (cuEventElapsedTime_v2 appeared there, with the same signature).
const char* fallbackName(const char* name) {
  return std::string_view(name) == "cuEventElapsedTime_v2" ? "cuEventElapsedTime" : nullptr;
}

std::string errorText(const DriverApi& api, int result) {
  const char* name = nullptr;
  const char* text = nullptr;
  auto r = static_cast<CUresult>(result);
  if (api.cuGetErrorName) api.cuGetErrorName(r, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(r, &text);
  return fmt::format("{} ({})", name ? name : fmt::format("CUDA error {}", result),
                     text ? text : "no description");
}

struct Loaded {
  DriverApi api;
  std::string error;  // empty when the driver is usable
};

std::string loadError(Loaded& l) {
  // RTLD_LOCAL: nothing else in the process should bind to our handle's symbols.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    return fmt::format(
        "no NVIDIA GPU found: libcuda.so.1 could not be loaded ({}); loom needs the NVIDIA "
        "driver to run kernels (compiling to PTX works without it)",
        e ? e : "unknown reason");
  }
  // The handle is never closed: kernels and buffers may be released during process exit.
  std::string missing;
#define LOOM_LOAD(name)                                                        \
  {                                                                            \
    void* sym = dlsym(lib, #name);                                             \
    if (!sym && fallbackName(#name)) sym = dlsym(lib, fallbackName(#name));    \
    if (!sym) missing += missing.empty() ? #name : ", " #name;                 \
    l.api.name = reinterpret_cast<decltype(l.api.name)>(sym);                  \
  }
  LOOM_CUDA_DRIVER_FUNCTIONS(LOOM_LOAD)
#undef LOOM_LOAD
  l.api.cuStreamGetCaptureInfo_v1 =
      reinterpret_cast<decltype(l.api.cuStreamGetCaptureInfo_v1)>(dlsym(lib, "cuStreamGetCaptureInfo"));
  if (!l.api.cuStreamGetCaptureInfo_v1) missing += missing.empty() ? "cuStreamGetCaptureInfo" : ", cuStreamGetCaptureInfo";
  if (!missing.empty()) {
    int version = 0;
    if (l.api.cuDriverGetVersion) l.api.cuDriverGetVersion(&version);
    return fmt::format(
        "the NVIDIA driver is too old for loom: libcuda.so.1 (CUDA {}.{}) lacks {}; "
        "install a driver for CUDA 12.0 or newer",
        version / 1000, version % 1000 / 10, missing);
  }
  if (CUresult r = l.api.cuInit(0); r != CUDA_SUCCESS)
    return fmt::format("no NVIDIA GPU found: cuInit failed: {}", errorText(l.api, r));
  int count = 0;
  if (CUresult r = l.api.cuDeviceGetCount(&count); r != CUDA_SUCCESS)
    return fmt::format("no NVIDIA GPU found: cuDeviceGetCount failed: {}", errorText(l.api, r));
  if (count == 0) return "no NVIDIA GPU found: the NVIDIA driver reports 0 devices";
  return "";
}

// Loaded once; a failure is remembered (retrying dlopen/cuInit would not change the answer).
Loaded& loaded() {
  static Loaded* l = [] {
    auto* p = new Loaded();  // never freed: the table must outlive every static destructor
    p->error = loadError(*p);
    return p;
  }();
  return *l;
}

}  // namespace

bool gpuAvailable(std::string* why) noexcept {
  try {
    const std::string& e = loaded().error;
    if (why) *why = e;
    return e.empty();
  } catch (...) {  // only allocation failure can get here
    return false;
  }
}

const DriverApi& driver() {
  Loaded& l = loaded();
  if (!l.error.empty()) throw Error(l.error);
  return l.api;
}

std::string cuErrorText(int result) { return errorText(loaded().api, result); }

void checkCu(int result, const char* call) {
  if (result != CUDA_SUCCESS)
    throw Error(fmt::format("CUDA driver call {} failed: {}", call, cuErrorText(result)));
}

}  // namespace loom::runtime
