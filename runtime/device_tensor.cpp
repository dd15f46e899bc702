#include "runtime/device_tensor.h"

#include <algorithm>
#include <numeric>

#include "ir/error.h"
#include "runtime/bind_sizes.h"
#include "runtime/device.h"
#include "runtime/memory_raw.h"
#include <cstring>

namespace loom {

namespace {
size_t span(DType t, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  int64_t last = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return 0;
    last += (shape[d] - 1) * strides[d];
  }
  return static_cast<size_t>(last + 1) * static_cast<size_t>(dtypeBytes(t));
}

void checkStrides(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  LOOM_USER_CHECK(shape.size() == strides.size(), "a tensor of rank {} needs {} strides, got {}",
                  shape.size(), shape.size(), strides.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    LOOM_USER_CHECK(shape[d] >= 0, "size {} of dim {} is negative", shape[d], d);
    LOOM_USER_CHECK(strides[d] >= 0, "stride {} of dim {} is negative; loom needs non-negative "
                    "strides", strides[d], d);
  }
}
}  // namespace

int64_t DeviceTensor::numel() const {
  return std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<>());
}

TensorDesc DeviceTensor::desc() const {
  return TensorDesc{dtype_, shape_, strides_, alignmentOf(ptr_)};
}

size_t DeviceTensor::spanBytes() const { return span(dtype_, shape_, strides_); }

DeviceTensor DeviceTensor::allocate(DType dtype, std::vector<int64_t> shape,
                                    std::vector<int64_t> strides) {
  if (strides.empty()) strides = contiguousStrides(shape);
  checkStrides(shape, strides);
  DeviceTensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.buf_ = std::make_shared<runtime::DeviceBuffer>(std::max<size_t>(t.spanBytes(), 16));
  t.ptr_ = t.buf_->ptr();
  return t;
}

DeviceTensor DeviceTensor::wrap(uintptr_t ptr, DType dtype, std::vector<int64_t> shape,
                                std::vector<int64_t> strides, size_t bytes) {
  checkStrides(shape, strides);
  DeviceTensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.rebind(ptr);
  LOOM_USER_CHECK(bytes == 0 || t.spanBytes() <= bytes, "wrap: sizes and strides reach {} bytes "
                  "but the buffer has {}", t.spanBytes(), bytes);
  return t;
}

// Caller-owned memory at `ptr`: not null where the tensor has elements, aligned to one.
void DeviceTensor::rebind(uintptr_t ptr) {
  LOOM_ASSERT(!buf_, "rebind of a tensor that owns its memory");
  LOOM_USER_CHECK(ptr != 0 || spanBytes() == 0, "wrap: null device pointer");
  LOOM_USER_CHECK(ptr % static_cast<uintptr_t>(dtypeBytes(dtype_)) == 0,
                  "wrap: pointer 0x{:x} is not aligned to its {}-byte {} elements", ptr, dtypeBytes(dtype_),
                  dtypeName(dtype_));
  ptr_ = ptr;
}

DeviceTensor DeviceTensor::fromHost(const HostTensor& h) {
  DeviceTensor t;
  t.dtype_ = h.dtype();
  t.shape_ = h.shape();
  t.strides_ = h.strides();
  size_t bytes = h.nbytes();
  t.buf_ = std::make_shared<runtime::DeviceBuffer>(std::max<size_t>(bytes, 16));
  if (bytes) t.buf_->copyFromHost(h.storageData(), bytes);
  t.ptr_ = t.buf_->ptr() + static_cast<uintptr_t>(h.offset()) * static_cast<uintptr_t>(dtypeBytes(h.dtype()));
  return t;
}

HostTensor DeviceTensor::toHost() const {
  // Memory order from the strides (outer to inner), so the host copy has the same layout.
  std::vector<int> order(shape_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return strides_[static_cast<size_t>(a)] > strides_[static_cast<size_t>(b)];
  });
  HostTensor h = HostTensor::emptyWithOrder(dtype_, shape_, order);
  bool same = h.strides() == strides_;
  size_t bytes = spanBytes();
  if (same && bytes) {
    runtime::copyToHostRaw(h.data(), ptr_, bytes);
    return h;
  }
  // Gaps or overlaps: fetch the span, then gather element by element.
  std::vector<std::byte> raw(bytes);
  if (bytes) runtime::copyToHostRaw(raw.data(), ptr_, bytes);
  HostTensor packed = HostTensor::emptyWithOrder(dtype_, shape_, order);
  int eb = dtypeBytes(dtype_);
  std::vector<int64_t> idx(shape_.size(), 0);
  for (int64_t i = 0; i < numel(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides_[d];
    int64_t dst = 0;
    for (size_t d = 0; d < idx.size(); ++d) dst += idx[d] * packed.strides()[d];
    std::memcpy(static_cast<std::byte*>(packed.data()) + dst * eb, raw.data() + off * eb,
                static_cast<size_t>(eb));
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < shape_[d]) break;
      idx[d] = 0;
    }
  }
  return packed;
}

void DeviceTensor::poison(uint8_t byte) {
  size_t bytes = spanBytes();
  if (bytes) runtime::memsetRaw(ptr_, byte, bytes);
}

std::vector<TensorDesc> descsOf(const std::vector<DeviceTensor>& ts) {
  std::vector<TensorDesc> d;
  for (const auto& t : ts) d.push_back(t.desc());
  return d;
}

Bindings bindSizes(const ir::Fusion& f, const std::vector<DeviceTensor>& inputs, const Bindings& given) {
  std::vector<DType> dtypes;
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& t : inputs) {
    dtypes.push_back(t.dtype());
    shapes.push_back(t.shape());
  }
  return bindShapes(f, dtypes, shapes, given);
}

}  // namespace loom
