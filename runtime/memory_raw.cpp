#include <cuda.h>

#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/memory_raw.h"

namespace loom::runtime {

void copyToHostRaw(void* dst, std::uintptr_t src, std::size_t bytes) {
  const ContextScope scope;
  LOOM_CU(cuMemcpyDtoH_v2, dst, static_cast<CUdeviceptr>(src), bytes);
}

void copyFromHostRaw(std::uintptr_t dst, const void* src, std::size_t bytes) {
  const ContextScope scope;
  LOOM_CU(cuMemcpyHtoD_v2, static_cast<CUdeviceptr>(dst), src, bytes);
}

void memsetRaw(std::uintptr_t dst, std::uint8_t byte, std::size_t bytes) {
  const ContextScope scope;
  LOOM_CU(cuMemsetD8_v2, static_cast<CUdeviceptr>(dst), byte, bytes);
}

}  // namespace loom::runtime
