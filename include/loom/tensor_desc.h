#pragma once
// What the compiler knows of a concrete tensor at compile time: dtype, sizes, strides (in
// elements) and the alignment of its base address. Everything here is part of the kernel-cache
// key: kernels are specialized on exact sizes and strides.
#include <cstdint>
#include <string>
#include <vector>

#include <loom/dtype.h>

#pragma GCC visibility push(default)
namespace loom {

struct TensorDesc {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int align_bytes = 16;  // largest power of two <= 16 dividing the base address

  int64_t numel() const {
    int64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
  }
  // Bytes of its elements, each once (what a kernel moves reading or writing it).
  uint64_t bytes() const { return static_cast<uint64_t>(numel()) * static_cast<uint64_t>(dtypeBytes(dtype)); }
  bool operator==(const TensorDesc&) const = default;
  std::string str() const;
};

// Row-major strides for `shape`, or strides for the memory order `order` (outer to inner).
std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& shape);
std::vector<int64_t> stridesForOrder(const std::vector<int64_t>& shape, const std::vector<int>& order);
int alignmentOf(uintptr_t address);

}  // namespace loom
#pragma GCC visibility pop
