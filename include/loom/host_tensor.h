#pragma once
// A tensor in host memory: dtype, shape, strides in elements (any strides: row-major,
// channels-last, permuted or sliced views) over shared storage. A plain value type: copies
// share the storage, like torch.Tensor. f16/bf16 are stored as their 16-bit patterns, bool as
// one byte 0/1. get/set speak double; set rounds to the dtype (roundTo, ir/dtype.h).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <loom/dtype.h>
#include <loom/export.h>

#pragma GCC visibility push(default)
namespace loom {

class HostTensor {
 public:
  HostTensor() = default;  // a null tensor: no storage, numel() == 0

  // Contiguous row-major, zero-filled.
  static HostTensor empty(DType dtype, std::vector<int64_t> shape);
  // Zero-filled with the given memory order, listing dims from outermost to innermost:
  // {0, 2, 3, 1} is NHWC (channels-last) storage of an NCHW-indexed 4-d tensor.
  static HostTensor emptyWithOrder(DType dtype, std::vector<int64_t> shape,
                                   const std::vector<int>& dim_order_outer_to_inner);
  // Deterministic uniform values in [lo, hi), drawn in row-major logical order (so the same
  // seed gives the same logical values whatever the layout later chosen; splitmix64, the same on
  // every platform). Floats are rounded to the dtype (which may round up to hi); ints are whole
  // numbers in [ceil(lo), floor(hi)]; bool is random bits. `order` (optional) is the memory
  // order, as emptyWithOrder's. Large tensors are drawn on several threads, same values.
  static HostTensor random(DType dtype, std::vector<int64_t> shape, uint64_t seed,
                           double lo = -1.0, double hi = 1.0,
                           const std::vector<int>& dim_order_outer_to_inner = {});
  // Contiguous, values in row-major order (rounded to the dtype).
  static HostTensor fromValues(DType dtype, std::vector<int64_t> shape,
                               const std::vector<double>& values);
  static HostTensor fromValues(DType dtype, std::vector<int64_t> shape, const double* values, int64_t count);

  DType dtype() const { return dtype_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t offset() const { return offset_; }  // in elements, into the storage
  int64_t numel() const;

  double get(const std::vector<int64_t>& idx) const;
  void set(const std::vector<int64_t>& idx, double v);
  // Element i in row-major logical order, whatever the strides.
  double getLinear(int64_t i) const;
  void setLinear(int64_t i, double v);
  // All values in row-major logical order.
  std::vector<double> toVector() const;
  // Elements [begin, end) in row-major logical order into out[0, end - begin).
  void readLinear(int64_t begin, int64_t end, double* out) const;

  // The first element (index 0, ..., 0); the storage itself; the storage's size in bytes.
  void* data();
  const void* data() const;
  void* storageData();
  const void* storageData() const;
  size_t nbytes() const;
  const std::shared_ptr<std::vector<std::byte>>& storage() const { return storage_; }

  // Row-major with no gaps (size-1 dims may have any stride).
  bool isContiguous() const;
  // *this when already contiguous, else a contiguous copy.
  HostTensor contiguous() const;
  // A copy with the given memory order (see emptyWithOrder).
  HostTensor withOrder(const std::vector<int>& dim_order_outer_to_inner) const;
  // Views sharing the storage: dims reordered (output dim i is input dim order[i]), and
  // [start, stop) of one dim.
  HostTensor permutedView(const std::vector<int>& order) const;
  HostTensor sliceView(int dim, int64_t start, int64_t stop) const;

  // `f16[4, 1024] strides [1024, 1]` (and ` offset 8` when nonzero).
  std::string describe() const;

 private:
  LOOM_HIDDEN HostTensor(DType dtype, std::vector<int64_t> shape, std::vector<int64_t> strides);
  LOOM_HIDDEN int64_t offsetOf(const std::vector<int64_t>& idx) const;
  LOOM_HIDDEN int64_t offsetOfLinear(int64_t i) const;
  LOOM_HIDDEN double load(int64_t elem) const;
  LOOM_HIDDEN void store(int64_t elem, double v);

  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_, strides_;
  std::shared_ptr<std::vector<std::byte>> storage_;
  int64_t offset_ = 0;
};

// The memory order of channels-last for a tensor of `rank` dims: {0, 2, 3, ..., rank-1, 1}.
std::vector<int> channelsLastOrder(int rank);
// Row-major strides of a shape.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t>& shape);

}  // namespace loom
#pragma GCC visibility pop
