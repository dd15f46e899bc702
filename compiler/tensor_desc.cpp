#include "compiler/tensor_desc.h"

#include <fmt/format.h>

namespace loom {

std::string TensorDesc::str() const {
  return fmt::format("{}[{}] strides [{}] align {}", dtypeName(dtype), fmt::join(shape, ", "),
                     fmt::join(strides, ", "), align_bytes);
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> order(shape.size());
  std::vector<int> o;
  for (size_t i = 0; i < shape.size(); ++i) o.push_back(static_cast<int>(i));
  return stridesForOrder(shape, o);
}

std::vector<int64_t> stridesForOrder(const std::vector<int64_t>& shape, const std::vector<int>& order) {
  std::vector<int64_t> s(shape.size(), 0);
  int64_t acc = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    s[static_cast<size_t>(*it)] = acc;
    acc *= std::max<int64_t>(shape[static_cast<size_t>(*it)], 1);
  }
  return s;
}

int alignmentOf(uintptr_t address) {
  int a = 16;
  while (a > 1 && address % static_cast<uintptr_t>(a) != 0) a /= 2;
  return a;
}

}  // namespace loom
