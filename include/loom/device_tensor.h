#pragma once
// A tensor in GPU memory: a device pointer with dtype, sizes and strides (in elements). It
// either owns its memory or wraps memory the caller owns (their own device pointer).
#include <cstdint>
#include <memory>
#include <vector>

#include <loom/export.h>
#include <loom/extent.h>
#include <loom/host_tensor.h>
#include <loom/tensor_desc.h>

// Declared outside the exported region: these types stay hidden.
namespace loom {
namespace runtime {
class DeviceBuffer;  // opaque outside loom
}
}  // namespace loom

#pragma GCC visibility push(default)
namespace loom {

class DeviceTensor {
 public:
  DeviceTensor() = default;
  // Fresh memory; strides default to row-major. Throws loom::Error when no GPU is found.
  static DeviceTensor allocate(DType dtype, std::vector<int64_t> shape,
                               std::vector<int64_t> strides = {});
  // Caller-owned memory: loom never frees it. Strides are checked for sanity (non-negative,
  // and the tensor's span fits `bytes` when given).
  static DeviceTensor wrap(uintptr_t ptr, DType dtype, std::vector<int64_t> shape,
                           std::vector<int64_t> strides, size_t bytes = 0);
  // Uploads a host tensor, keeping its strides (NCHW, channels-last, a slice...).
  static DeviceTensor fromHost(const HostTensor& h);
  // Downloads into a host tensor with the same sizes and strides.
  HostTensor toHost() const;

  uintptr_t ptr() const { return ptr_; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t numel() const;
  TensorDesc desc() const;
  // Bytes from the first to one past the last element reachable.
  size_t spanBytes() const;
  // Fills the tensor's span with a byte pattern (0xff: NaN for floats), to catch unwritten output.
  void poison(uint8_t byte = 0xff);
  // The same wrapped tensor at another caller-owned address (a repeated signature: the C ABI's
  // and the PyTorch extension's calls), checked as wrap checks a pointer.
  void rebind(uintptr_t ptr);

 private:
  std::shared_ptr<runtime::DeviceBuffer> buf_;
  uintptr_t ptr_ = 0;
  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_, strides_;
};

// Each tensor's description (dtype, sizes, strides, alignment): what a kernel compiles for.
std::vector<TensorDesc> descsOf(const std::vector<DeviceTensor>& ts);

}  // namespace loom
#pragma GCC visibility pop
