#pragma once
// Internals of the CPU reference (runtime/reference*.cpp): dense float64 arrays and the
// evaluation of each op family over them.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "ir/fusion.h"
#include "runtime/index_walk.h"
#include "runtime/parallel.h"

namespace loom::reference {

// An allocator whose value-less construction leaves the element uninitialized: the evaluator
// writes every element of a result, and zeroing (and faulting in) hundreds of megabytes on one
// thread first cost more than the ops themselves.
template <typename T>
struct NoInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  NoInitAllocator() = default;
  template <typename U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0) ::new (static_cast<void*>(p)) U;
    else ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using Values = std::vector<double, NoInitAllocator<double>>;

// A dense row-major array of doubles over a logical shape.
struct Dense {
  std::vector<int64_t> shape;
  Values data;
};

int64_t numelOf(const std::vector<int64_t>& shape);

// Elements per range where the evaluator spreads an op over threads.
constexpr int64_t kParallelRange = int64_t{1} << 16;

using runtime::forEachIndex;
using runtime::forEachIndexIn;

// forEachIndexIn over ranges of the indices on several threads: for f that only writes what
// belongs to index i (an element-wise result), so the results do not depend on the order.
template <typename F>
void parallelForEachIndex(const std::vector<int64_t>& shape, const std::vector<std::vector<int64_t>>& strides, F&& f) {
  runtime::parallelForRanges(numelOf(shape), kParallelRange, [&](int64_t, int64_t begin, int64_t end) {
    forEachIndexIn(shape, strides, begin, end, f);
  });
}

// Row-major strides over `shape`, with 0 for dims of size 1 that `out` stretches (a broadcast
// operand); a rank-0 operand stretches to every dim of `out`.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& shape,
                                      const std::vector<int64_t>& out);

// Rounds every element to `t` where `t` is f16, bf16, an int or bool; f32/f64 stay in double.
void roundResult(Dense& d, DType t);

// Elementwise families (unary, binary, where, cast); `out_shape` is the output's shape.
Dense evalPointwise(const ir::Op& op, const std::vector<const Dense*>& in,
                    const std::vector<int64_t>& out_shape);
// Reduce and VarMean families: one Dense per op output.
std::vector<Dense> evalReduction(const ir::Op& op, const Dense& in,
                                 const std::vector<int64_t>& out_shape);
// Broadcast, reshape, permute, squeeze, unsqueeze, slice.
Dense evalView(const ir::Op& op, const Dense& in, const std::vector<int64_t>& out_shape,
               const Bindings& b);

}  // namespace loom::reference
