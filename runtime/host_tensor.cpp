#include "runtime/host_tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "ir/error.h"
#include "ir/half.h"
#include "runtime/index_walk.h"
#include "runtime/parallel.h"

namespace loom {

namespace {

void checkShape(const std::vector<int64_t>& shape) {
  for (size_t d = 0; d < shape.size(); ++d)
    LOOM_USER_CHECK(shape[d] >= 0, "host tensor: dim {} has negative size {}", d, shape[d]);
}

void checkOrder(const std::vector<int>& order, size_t rank) {
  std::vector<int> s = order;
  std::sort(s.begin(), s.end());
  bool ok = s.size() == rank;
  for (size_t i = 0; ok && i < s.size(); ++i) ok = s[i] == static_cast<int>(i);
  LOOM_USER_CHECK(ok, "dim order [{}] is not a permutation of 0..{}", fmt::join(order, ", "),
                  static_cast<int64_t>(rank) - 1);
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// splitmix64: small, fast, and the same on every platform (std distributions are not). Its
// i-th draw depends on i alone (a counter), so ranges of a tensor are drawn independently.
struct SplitMix {
  uint64_t s;
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t at(int64_t i) const { return mix(s + (static_cast<uint64_t>(i) + 1) * 0x9e3779b97f4a7c15ull); }
  static double unit(uint64_t x) { return static_cast<double>(x >> 11) * 0x1.0p-53; }  // [0, 1)
};

// fn(begin, end) over [0, n) in ranges of 1M elements, on up to the machine's cores.
template <typename Fn>
void parallelRanges(int64_t n, Fn fn) {
  runtime::parallelForRanges(n, int64_t{1} << 20, [&](int64_t, int64_t begin, int64_t end) { fn(begin, end); });
}

// fn(i, offset) for logical (row-major) indices i in [begin, end) of a strided tensor whose
// first element is at `base` (runtime/index_walk.h: no division per element).
template <typename Fn>
void walkOffsets(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, int64_t base,
                 int64_t begin, int64_t end, Fn fn) {
  runtime::forEachIndexIn(shape, {strides}, begin, end, [&](int64_t i, const int64_t* off) { fn(i, base + off[0]); });
}

}  // namespace

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d)
    s[static_cast<size_t>(d)] = s[static_cast<size_t>(d) + 1] * std::max<int64_t>(shape[static_cast<size_t>(d) + 1], 1);
  return s;
}

std::vector<int> channelsLastOrder(int rank) {
  std::vector<int> o;
  if (rank <= 0) return o;
  o.push_back(0);
  for (int d = 2; d < rank; ++d) o.push_back(d);
  if (rank >= 2) o.push_back(1);
  return o;
}

HostTensor::HostTensor(DType dtype, std::vector<int64_t> shape, std::vector<int64_t> strides)
    : dtype_(dtype), shape_(std::move(shape)), strides_(std::move(strides)) {
  checkShape(shape_);
  int64_t span = 1;  // elements the strides reach, + 1
  for (size_t d = 0; d < shape_.size(); ++d)
    if (shape_[d] > 0) span += (shape_[d] - 1) * strides_[d];
  if (product(shape_) == 0) span = 0;
  storage_ = std::make_shared<std::vector<std::byte>>(
      static_cast<size_t>(span) * static_cast<size_t>(dtypeBytes(dtype_)));
}

HostTensor HostTensor::empty(DType dtype, std::vector<int64_t> shape) {
  auto strides = rowMajorStrides(shape);
  return HostTensor(dtype, std::move(shape), std::move(strides));
}

HostTensor HostTensor::emptyWithOrder(DType dtype, std::vector<int64_t> shape,
                                      const std::vector<int>& order) {
  checkShape(shape);
  checkOrder(order, shape.size());
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t s = 1;
  for (int i = static_cast<int>(order.size()) - 1; i >= 0; --i) {
    size_t d = static_cast<size_t>(order[static_cast<size_t>(i)]);
    strides[d] = s;
    s *= std::max<int64_t>(shape[d], 1);
  }
  return HostTensor(dtype, std::move(shape), std::move(strides));
}

HostTensor HostTensor::random(DType dtype, std::vector<int64_t> shape, uint64_t seed, double lo,
                              double hi, const std::vector<int>& order) {
  LOOM_USER_CHECK(lo <= hi, "HostTensor::random: lo {} is above hi {}", lo, hi);
  HostTensor t = order.empty() ? empty(dtype, std::move(shape)) : emptyWithOrder(dtype, std::move(shape), order);
  const SplitMix rng{seed * 0x2545f4914f6cdd1dull + 0x1234567ull};
  std::function<double(int64_t)> draw;
  if (isInt(dtype)) {
    double a = std::ceil(lo), b = std::floor(hi);
    LOOM_USER_CHECK(a <= b, "HostTensor::random: no whole number in [{}, {}] for {}", lo, hi,
                    dtypeName(dtype));
    uint64_t span = static_cast<uint64_t>(b - a) + 1;
    draw = [=](int64_t i) { return a + static_cast<double>(rng.at(i) % span); };
  } else if (dtype == DType::Bool) {
    draw = [=](int64_t i) { return static_cast<double>(rng.at(i) >> 63); };
  } else {
    draw = [=](int64_t i) { return lo + (hi - lo) * SplitMix::unit(rng.at(i)); };
  }
  if (t.numel() == 0) return t;
  parallelRanges(t.numel(), [&](int64_t begin, int64_t end) {
    walkOffsets(t.shape_, t.strides_, t.offset_, begin, end, [&](int64_t i, int64_t off) { t.store(off, draw(i)); });
  });
  return t;
}

HostTensor HostTensor::fromValues(DType dtype, std::vector<int64_t> shape,
                                  const std::vector<double>& values) {
  return fromValues(dtype, std::move(shape), values.data(), static_cast<int64_t>(values.size()));
}

HostTensor HostTensor::fromValues(DType dtype, std::vector<int64_t> shape, const double* values, int64_t count) {
  HostTensor t = empty(dtype, std::move(shape));
  LOOM_USER_CHECK(count == t.numel(), "HostTensor::fromValues: {} values given for shape [{}] ({} elements)",
                  count, fmt::join(t.shape_, ", "), t.numel());
  parallelRanges(t.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) t.store(i, values[i]);
  });
  return t;
}

int64_t HostTensor::numel() const { return storage_ ? product(shape_) : 0; }

int64_t HostTensor::offsetOf(const std::vector<int64_t>& idx) const {
  LOOM_USER_CHECK(idx.size() == shape_.size(), "index of {} dims into {}", idx.size(),
                  describe());
  int64_t off = offset_;
  for (size_t d = 0; d < idx.size(); ++d) {
    LOOM_USER_CHECK(idx[d] >= 0 && idx[d] < shape_[d], "index {} of dim {} is out of range in {}",
                    idx[d], d, describe());
    off += idx[d] * strides_[d];
  }
  return off;
}

int64_t HostTensor::offsetOfLinear(int64_t i) const {
  LOOM_USER_CHECK(i >= 0 && i < numel(), "linear index {} is out of range in {}", i, describe());
  int64_t off = offset_;
  for (int d = rank() - 1; d >= 0; --d) {
    int64_t n = shape_[static_cast<size_t>(d)];
    off += (i % n) * strides_[static_cast<size_t>(d)];
    i /= n;
  }
  return off;
}

double HostTensor::load(int64_t elem) const {
  const std::byte* p = storage_->data() + elem * dtypeBytes(dtype_);
  switch (dtype_) {
    case DType::Bool: return static_cast<uint8_t>(*p) != 0 ? 1.0 : 0.0;
    case DType::I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::I64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case DType::F16: { uint16_t v; std::memcpy(&v, p, 2); return halfToFloat(v); }
    case DType::BF16: { uint16_t v; std::memcpy(&v, p, 2); return bf16ToFloat(v); }
    case DType::F32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::F64: { double v; std::memcpy(&v, p, 8); return v; }
  }
  LOOM_ASSERT(false, "unknown dtype");
}

void HostTensor::store(int64_t elem, double v) {
  std::byte* p = storage_->data() + elem * dtypeBytes(dtype_);
  v = roundTo(dtype_, v);
  switch (dtype_) {
    case DType::Bool: *p = static_cast<std::byte>(v != 0.0 ? 1 : 0); return;
    case DType::I32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); return; }
    case DType::I64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); return; }
    case DType::F16: { uint16_t x = floatToHalf(static_cast<float>(v)); std::memcpy(p, &x, 2); return; }
    case DType::BF16: { uint16_t x = floatToBf16(static_cast<float>(v)); std::memcpy(p, &x, 2); return; }
    case DType::F32: { float x = static_cast<float>(v); std::memcpy(p, &x, 4); return; }
    case DType::F64: std::memcpy(p, &v, 8); return;
  }
  LOOM_ASSERT(false, "unknown dtype");
}

double HostTensor::get(const std::vector<int64_t>& idx) const { return load(offsetOf(idx)); }
void HostTensor::set(const std::vector<int64_t>& idx, double v) { store(offsetOf(idx), v); }
double HostTensor::getLinear(int64_t i) const { return load(offsetOfLinear(i)); }
void HostTensor::setLinear(int64_t i, double v) { store(offsetOfLinear(i), v); }

void HostTensor::readLinear(int64_t begin, int64_t end, double* out) const {
  LOOM_ASSERT(0 <= begin && begin <= end && end <= numel(), "readLinear [{}, {}) of {} elements", begin, end, numel());
  if (begin == end) return;
  walkOffsets(shape_, strides_, offset_, begin, end, [&](int64_t i, int64_t off) { out[i - begin] = load(off); });
}

std::vector<double> HostTensor::toVector() const {
  const int64_t n = numel();
  std::vector<double> out(static_cast<size_t>(n));
  if (n == 0) return out;
  walkOffsets(shape_, strides_, offset_, 0, n, [&](int64_t i, int64_t off) { out[static_cast<size_t>(i)] = load(off); });
  return out;
}

void* HostTensor::data() {
  return storage_ ? storage_->data() + offset_ * dtypeBytes(dtype_) : nullptr;
}
const void* HostTensor::data() const {
  return storage_ ? storage_->data() + offset_ * dtypeBytes(dtype_) : nullptr;
}
void* HostTensor::storageData() { return storage_ ? storage_->data() : nullptr; }
const void* HostTensor::storageData() const { return storage_ ? storage_->data() : nullptr; }
size_t HostTensor::nbytes() const { return storage_ ? storage_->size() : 0; }

bool HostTensor::isContiguous() const {
  int64_t expect = 1;
  for (int d = rank() - 1; d >= 0; --d) {
    int64_t n = shape_[static_cast<size_t>(d)];
    if (n == 1) continue;
    if (strides_[static_cast<size_t>(d)] != expect) return false;
    expect *= n;
  }
  return true;
}

HostTensor HostTensor::contiguous() const {
  if (isContiguous()) return *this;
  std::vector<int> order;
  for (int d = 0; d < rank(); ++d) order.push_back(d);
  return withOrder(order);
}

HostTensor HostTensor::withOrder(const std::vector<int>& order) const {
  HostTensor t = emptyWithOrder(dtype_, shape_, order);
  if (numel() == 0) return t;
  // Element by element, as bytes (both walks in logical order).
  const size_t eb = static_cast<size_t>(dtypeBytes(dtype_));
  const std::byte* src = storage_->data();
  std::byte* dst = t.storage_->data();
  parallelRanges(numel(), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> to(static_cast<size_t>(end - begin));
    walkOffsets(t.shape_, t.strides_, t.offset_, begin, end, [&](int64_t i, int64_t off) { to[static_cast<size_t>(i - begin)] = off; });
    walkOffsets(shape_, strides_, offset_, begin, end, [&](int64_t i, int64_t off) {
      std::memcpy(dst + static_cast<size_t>(to[static_cast<size_t>(i - begin)]) * eb, src + static_cast<size_t>(off) * eb, eb);
    });
  });
  return t;
}

HostTensor HostTensor::permutedView(const std::vector<int>& order) const {
  checkOrder(order, shape_.size());
  HostTensor t = *this;
  for (size_t i = 0; i < order.size(); ++i) {
    t.shape_[i] = shape_[static_cast<size_t>(order[i])];
    t.strides_[i] = strides_[static_cast<size_t>(order[i])];
  }
  return t;
}

HostTensor HostTensor::sliceView(int dim, int64_t start, int64_t stop) const {
  LOOM_USER_CHECK(dim >= 0 && dim < rank(), "sliceView: dim {} does not exist in {}", dim,
                  describe());
  size_t d = static_cast<size_t>(dim);
  LOOM_USER_CHECK(0 <= start && start <= stop && stop <= shape_[d],
                  "sliceView: [{}, {}) is not within dim {} of size {} in {}", start, stop, dim,
                  shape_[d], describe());
  HostTensor t = *this;
  t.shape_[d] = stop - start;
  t.offset_ += start * strides_[d];
  return t;
}

std::string HostTensor::describe() const {
  std::string s = fmt::format("{}[{}] strides [{}]", dtypeName(dtype_), fmt::join(shape_, ", "),
                              fmt::join(strides_, ", "));
  if (offset_ != 0) s += fmt::format(" offset {}", offset_);
  return s;
}

}  // namespace loom
