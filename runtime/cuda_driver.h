// The CUDA driver API, loaded with dlopen("libcuda.so.1") at first use, so libloom builds and
// runs (compiling to PTX, CPU reference) on machines with no GPU and no CUDA toolkit.
//
// This header has two parts and deliberately no `#pragma once`:
//  - the public part below needs no cuda.h: gpuAvailable(), checkCu(), the LOOM_CU macro;
//  - the table of typed entry points (DriverApi) is defined only where <cuda.h> was included
//    first (runtime .cpp files), so public headers stay free of cuda.h. Each part has its own
//    guard, so including this header before and again after <cuda.h> still defines the table.
#ifndef LOOM_RUNTIME_CUDA_DRIVER_H
#define LOOM_RUNTIME_CUDA_DRIVER_H

#include <string>

namespace loom::runtime {

// True when libcuda.so.1 loads, cuInit succeeds and there is at least one device. Never
// throws; on false, `why` (if given) receives the reason that driver() would throw with.
bool gpuAvailable(std::string* why = nullptr) noexcept;

// The loaded driver, initialized (cuInit) on first use, thread-safely. Throws loom::Error
// "no NVIDIA GPU found: ..." when the library, cuInit or a device is missing, and says which
// entry point is missing when the driver is too old.
struct DriverApi;
const DriverApi& driver();

// "CUDA_ERROR_INVALID_VALUE (invalid argument)" for a CUresult.
std::string cuErrorText(int result);

// Throws loom::Error "CUDA driver call <call> failed: <NAME> (<string>)" when result != 0.
void checkCu(int result, const char* call);

}  // namespace loom::runtime

// Calls a driver entry point and checks its result: LOOM_CU(cuMemAlloc_v2, &p, bytes).
#define LOOM_CU(fn, ...) \
  ::loom::runtime::checkCu(static_cast<int>(::loom::runtime::driver().fn(__VA_ARGS__)), #fn)

#endif  // LOOM_RUNTIME_CUDA_DRIVER_H

#if defined(__cuda_cuda_h__) && !defined(LOOM_RUNTIME_CUDA_DRIVER_API)
#define LOOM_RUNTIME_CUDA_DRIVER_API

// Every entry point loom uses, by its exported symbol name. Where cuda.h maps a plain name to a
// versioned one by macro (cuMemAlloc -> cuMemAlloc_v2), the versioned name is listed, because
// dlsym sees symbols, not macros.
#define LOOM_CUDA_DRIVER_FUNCTIONS(X)                                                        \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)                     \
  X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceGetAttribute)             \
  X(cuDeviceTotalMem_v2) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2)            \
  X(cuCtxSetCurrent) X(cuCtxSynchronize)                                                    \
  X(cuCtxGetCurrent) X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent_v2)                            \
  X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemGetInfo_v2) X(cuMemcpyHtoD_v2) X(cuMemcpyDtoH_v2) \
  X(cuMemcpyDtoD_v2) X(cuMemsetD8_v2) X(cuMemsetD32_v2) X(cuMemsetD8Async)                 \
  X(cuMemAllocHost_v2) X(cuMemFreeHost)                                                     \
  X(cuPointerGetAttribute)                                                                  \
  X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction)                            \
  X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuStreamCreate) X(cuStreamDestroy_v2)              \
  X(cuStreamSynchronize) X(cuStreamGetId)                                                   \
  X(cuThreadExchangeStreamCaptureMode)                                                      \
  X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime_v2)          \
  X(cuEventDestroy_v2)

namespace loom::runtime {

struct DriverApi {
#define LOOM_CUDA_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  LOOM_CUDA_DRIVER_FUNCTIONS(LOOM_CUDA_DRIVER_MEMBER)
#undef LOOM_CUDA_DRIVER_MEMBER
  // Exported as "cuStreamGetCaptureInfo" by every driver since CUDA 10.1 with this signature;
  // cuda.h maps the name to a later version by macro and declares this one only internally.
  CUresult (*cuStreamGetCaptureInfo_v1)(CUstream, CUstreamCaptureStatus*, cuuint64_t*) = nullptr;
};

}  // namespace loom::runtime

#endif  // LOOM_RUNTIME_CUDA_DRIVER_API
